#include "ops/shape.h"

#include "ops/elementwise.h"
#include "ops/tensor_iterator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace torchless::ops {

// ---------------------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------------------

IntList inferSize(const IntList& shape, int64_t numel) {
  IntList out = shape;
  int64_t newSize = 1;
  std::optional<size_t> inferDim;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      TL_CHECK(!inferDim, "only one dimension can be inferred");
      inferDim = i;
    } else {
      TL_CHECK(shape[i] >= 0, "invalid shape dimension {}", shape[i]);
      newSize *= shape[i];
    }
  }
  const bool ok = numel == newSize || (inferDim && newSize > 0 && numel % newSize == 0);
  TL_CHECK(ok, "shape '{}' is invalid for input of size {}", sizesToString(shape), numel);
  if (inferDim) {
    TL_CHECK(newSize != 0,
             "cannot reshape tensor of 0 elements into shape {} because the unspecified "
             "dimension size -1 can be any value and is ambiguous",
             sizesToString(shape));
    out[*inferDim] = numel / newSize;
  }
  return out;
}

std::optional<IntList> computeStride(const IntList& oldshape, const IntList& oldstride,
                                     const IntList& newshape) {
  if (oldshape.empty()) return IntList(newshape.size(), 1);
  const int64_t numel =
      std::accumulate(oldshape.begin(), oldshape.end(), int64_t{1}, std::multiplies<>());
  if (numel == 0 && oldshape == newshape) return oldstride;
  IntList newstride(newshape.size());
  if (numel == 0) {
    for (int64_t d = static_cast<int64_t>(newshape.size()) - 1; d >= 0; --d) {
      if (d == static_cast<int64_t>(newshape.size()) - 1)
        newstride[d] = 1;
      else
        newstride[d] = std::max<int64_t>(newshape[d + 1], 1) * newstride[d + 1];
    }
    return newstride;
  }
  int64_t viewD = static_cast<int64_t>(newshape.size()) - 1;
  int64_t chunkBaseStride = oldstride.back();
  int64_t tensorNumel = 1, viewNumel = 1;
  for (int64_t td = static_cast<int64_t>(oldshape.size()) - 1; td >= 0; --td) {
    tensorNumel *= oldshape[td];
    if (td == 0 || (oldshape[td - 1] != 1 && oldstride[td - 1] != tensorNumel * chunkBaseStride)) {
      while (viewD >= 0 && (viewNumel < tensorNumel || newshape[viewD] == 1)) {
        newstride[viewD] = viewNumel * chunkBaseStride;
        viewNumel *= newshape[viewD];
        --viewD;
      }
      if (viewNumel != tensorNumel) return std::nullopt;
      if (td > 0) {
        chunkBaseStride = oldstride[td - 1];
        tensorNumel = 1;
        viewNumel = 1;
      }
    }
  }
  if (viewD != -1) return std::nullopt;
  return newstride;
}

Tensor view(const Tensor& x, const IntList& shape) {
  const IntList s = inferSize(shape, x.numel());
  auto st = computeStride(x.sizes(), x.strides(), s);
  TL_CHECK(st.has_value(),
           "view size is not compatible with input tensor's size and stride (at least one "
           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  return x.asStrided(s, *st, x.storageOffset());
}

Tensor reshape(const Tensor& x, const IntList& shape) {
  const IntList s = inferSize(shape, x.numel());
  if (auto st = computeStride(x.sizes(), x.strides(), s))
    return x.asStrided(s, *st, x.storageOffset());
  Tensor c = x.contiguous();
  return c.asStrided(s, contiguousStrides(s), c.storageOffset());
}

Tensor flatten(const Tensor& x, int64_t startDim, int64_t endDim) {
  if (x.dim() == 0) return reshape(x, {1});
  const int64_t s = wrapDim(startDim, x.dim()), e = wrapDim(endDim, x.dim());
  TL_CHECK(s <= e, "flatten() has invalid args: start_dim cannot come after end_dim");
  if (s == e) return x;
  IntList shape(x.sizes().begin(), x.sizes().begin() + s);
  int64_t n = 1;
  for (int64_t d = s; d <= e; ++d) n *= x.size(d);
  shape.push_back(n);
  shape.insert(shape.end(), x.sizes().begin() + e + 1, x.sizes().end());
  return reshape(x, shape);
}

Tensor unflatten(const Tensor& x, int64_t dim, const IntList& sizes) {
  const int64_t d = wrapDim(dim, x.dim());
  TL_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
  TL_CHECK(std::count(sizes.begin(), sizes.end(), int64_t{-1}) <= 1,
           "unflatten got an unexpected error:\nonly one dimension can be inferred");
  IntList inferred;
  try {
    inferred = inferSize(sizes, x.size(d));
  } catch (const Error&) {
    throw Error(fmt::format(
        "unflatten: Provided sizes {} don't multiply up to the size of dim {} ({}) in the input "
        "tensor",
        sizesToString(sizes), dim, x.size(d)));
  }
  IntList shape(x.sizes().begin(), x.sizes().begin() + d);
  shape.insert(shape.end(), inferred.begin(), inferred.end());
  shape.insert(shape.end(), x.sizes().begin() + d + 1, x.sizes().end());
  return view(x, shape);
}

Tensor permute(const Tensor& x, const IntList& dims) {
  TL_CHECK(static_cast<int64_t>(dims.size()) == x.dim(),
           "permute(sparse_coo): number of dimensions in the tensor input does not match the "
           "length of the desired ordering of dimensions i.e. input.dim() = {} is not equal to "
           "len(dims) = {}",
           x.dim(), dims.size());
  IntList sizes(dims.size()), strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrapDim(dims[i], x.dim());
    TL_CHECK(!seen[d], "permute(): duplicate dims are not allowed.");
    seen[d] = true;
    sizes[i] = x.sizes()[d];
    strides[i] = x.strides()[d];
  }
  return x.asStrided(sizes, strides, x.storageOffset());
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  const int64_t a = wrapDim(dim0, x.dim()), b = wrapDim(dim1, x.dim());
  if (x.dim() == 0) return x.alias();
  IntList sizes = x.sizes(), strides = x.strides();
  std::swap(sizes[a], sizes[b]);
  std::swap(strides[a], strides[b]);
  return x.asStrided(sizes, strides, x.storageOffset());
}

Tensor t(const Tensor& x) {
  TL_CHECK(x.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is {}D", x.dim());
  return x.dim() < 2 ? x.alias() : transpose(x, 0, 1);
}

Tensor expand(const Tensor& x, const IntList& sizes) {
  TL_CHECK(static_cast<int64_t>(sizes.size()) >= x.dim(),
           "expand(torch.FloatTensor{{{}}}, size={}): the number of sizes provided ({}) must be "
           "greater or equal to the number of dimensions in the tensor ({})",
           sizesToString(x.sizes()), sizesToString(sizes), sizes.size(), x.dim());
  const int64_t nd = static_cast<int64_t>(sizes.size());
  IntList outSizes(sizes.size()), outStrides(sizes.size());
  for (int64_t i = nd - 1; i >= 0; --i) {
    const int64_t offset = nd - 1 - i;
    const int64_t dim = x.dim() - 1 - offset;
    const int64_t size = dim >= 0 ? x.sizes()[dim] : 1;
    const int64_t stride = dim >= 0 ? x.strides()[dim] : 0;
    int64_t target = sizes[i];
    if (target == -1) {
      TL_CHECK(dim >= 0,
               "The expanded size of the tensor (-1) isn't allowed in a leading, "
               "non-existing dimension {}",
               i);
      target = size;
    }
    if (size == target) {
      outSizes[i] = size;
      outStrides[i] = stride;
    } else {
      TL_CHECK(size == 1,
               "The expanded size of the tensor ({}) must match the existing size ({}) at "
               "non-singleton dimension {}.  Target sizes: {}.  Tensor sizes: {}",
               target, size, i, sizesToString(sizes), sizesToString(x.sizes()));
      outSizes[i] = target;
      outStrides[i] = 0;
    }
  }
  return x.asStrided(outSizes, outStrides, x.storageOffset());
}

Tensor expandAs(const Tensor& x, const Tensor& other) { return expand(x, other.sizes()); }

Tensor squeeze(const Tensor& x) {
  IntList sizes, strides;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (x.sizes()[d] != 1) {
      sizes.push_back(x.sizes()[d]);
      strides.push_back(x.strides()[d]);
    }
  return x.asStrided(sizes, strides, x.storageOffset());
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  const int64_t d = wrapDim(dim, x.dim());
  if (x.dim() == 0 || x.sizes()[d] != 1) return x.alias();
  IntList sizes = x.sizes(), strides = x.strides();
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return x.asStrided(sizes, strides, x.storageOffset());
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  const int64_t d = wrapDim(dim, x.dim() + 1);
  IntList sizes = x.sizes(), strides = x.strides();
  const int64_t st = d >= x.dim() ? 1 : sizes[d] * strides[d];
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, st);
  return x.asStrided(sizes, strides, x.storageOffset());
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  TL_CHECK(x.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  const int64_t d = wrapDim(dim, x.dim());
  const int64_t size = x.sizes()[d];
  TL_CHECK(index >= -size && index < size,
           "select(): index {} out of range for tensor of size {} at dimension {}", index,
           sizesToString(x.sizes()), dim);
  if (index < 0) index += size;
  IntList sizes = x.sizes(), strides = x.strides();
  const int64_t offset = x.storageOffset() + index * strides[d];
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return x.asStrided(sizes, strides, offset);
}

Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> startOpt,
             std::optional<int64_t> endOpt, int64_t step) {
  TL_CHECK(x.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
  TL_CHECK(step > 0, "slice step must be positive");
  const int64_t d = wrapDim(dim, x.dim());
  const int64_t size = x.sizes()[d];
  int64_t start = startOpt.value_or(0);
  int64_t end = endOpt.value_or(std::numeric_limits<int64_t>::max());
  if (start < 0) start += size;
  if (end < 0) end += size;
  if (start < 0)
    start = 0;
  else if (start >= size)
    start = size;
  if (end < start)
    end = start;
  else if (end >= size)
    end = size;
  IntList sizes = x.sizes(), strides = x.strides();
  const int64_t offset = x.storageOffset() + start * strides[d];
  sizes[d] = (end - start + step - 1) / step;
  strides[d] *= step;
  return x.asStrided(sizes, strides, offset);
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  TL_CHECK(x.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  TL_CHECK(length >= 0, "narrow(): length must be non-negative.");
  const int64_t d = wrapDim(dim, x.dim());
  const int64_t size = x.sizes()[d];
  TL_CHECK(start >= -size && start <= size,
           "start out of range (expected to be in range of [{}, {}], but got {})", -size, size,
           start);
  if (start < 0) start += size;
  TL_CHECK(start <= size - length, "start ({}) + length ({}) exceeds dimension size ({}).", start,
           length, size);
  return slice(x, d, start, start + length, 1);
}

std::vector<Tensor> split(const Tensor& x, int64_t splitSize, int64_t dim) {
  TL_CHECK(x.dim() != 0, "split expects at least a 1-dimensional tensor");
  TL_CHECK(splitSize >= 0, "split expects split_size be non-negative, but got split_size={}",
           splitSize);
  const int64_t d = wrapDim(dim, x.dim());
  const int64_t size = x.sizes()[d];
  TL_CHECK(splitSize > 0 || size == 0,
           "split_size can only be 0 if dimension size is 0, but got dimension size of {}", size);
  int64_t n = 1;
  if (splitSize > 0) n = std::max<int64_t>((size + splitSize - 1) / splitSize, 1);
  std::vector<Tensor> out;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = std::min(splitSize, size - i * splitSize);
    out.push_back(narrow(x, d, i * splitSize, std::max<int64_t>(len, 0)));
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  TL_CHECK(x.dim() > 0, "chunk expects at least a 1-dimensional tensor");
  TL_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: {}", chunks);
  const int64_t size = x.size(dim);
  const int64_t splitSize = (size + chunks - 1) / chunks;
  if (splitSize == 0 && size == 0) {
    std::vector<Tensor> out;
    for (int64_t i = 0; i < chunks; ++i) out.push_back(x.alias());
    return out;
  }
  return split(x, splitSize, dim);
}

std::vector<Tensor> splitWithSizes(const Tensor& x, const IntList& sizes, int64_t dim) {
  TL_CHECK(x.dim() != 0, "split expects at least a 1-dimensional tensor");
  const int64_t d = wrapDim(dim, x.dim());
  const int64_t size = x.sizes()[d];
  int64_t total = 0;
  for (int64_t s : sizes) {
    TL_CHECK(s >= 0,
             "split_with_sizes expects split_sizes have only non-negative entries, but "
             "got split_sizes={}",
             sizesToString(sizes));
    total += s;
  }
  TL_CHECK(total == size,
           "split_with_sizes expects split_sizes to sum exactly to {} (input tensor's size at "
           "dimension {}), but got split_sizes={}",
           size, dim, sizesToString(sizes));
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(x, d, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> unbind(const Tensor& x, int64_t dim) {
  TL_CHECK(x.dim() > 0, "Dimension specified as 0 but tensor has no dimensions");
  const int64_t d = wrapDim(dim, x.dim());
  std::vector<Tensor> out;
  for (int64_t i = 0; i < x.sizes()[d]; ++i) out.push_back(select(x, d, i));
  return out;
}

// ---------------------------------------------------------------------------------------
// Copies
// ---------------------------------------------------------------------------------------
namespace {

// Element offsets of every element of a strided shape, in row-major order.
std::vector<int64_t> offsetsOf(const IntList& sizes, const IntList& strides) {
  const int64_t n = checkedNumel(sizes);
  std::vector<int64_t> out(static_cast<size_t>(n));
  if (n == 0) return out;
  IntList idx(sizes.size(), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)] = off;
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) {
        off += strides[d];
        break;
      }
      off -= (sizes[d] - 1) * strides[d];
      idx[d] = 0;
    }
  }
  return out;
}

// dst rows (contiguous, rowLen elements each) = src elements at srcBase[r] + srcInner[k].
void gatherRows(const Tensor& dst, const Tensor& src, const std::vector<int64_t>& srcBase,
                const std::vector<int64_t>& srcInner) {
  const int64_t rows = static_cast<int64_t>(srcBase.size());
  const int64_t rowLen = static_cast<int64_t>(srcInner.size());
  if (rows == 0 || rowLen == 0) return;
  bool innerContig = true;
  for (int64_t k = 0; k < rowLen && innerContig; ++k) innerContig = srcInner[k] == k;
  const auto* s = static_cast<const std::byte*>(src.storage().data());
  auto* d = static_cast<std::byte*>(dst.rawData());
  const size_t item = src.itemsize();
  dispatchBySize(item, [&](auto tag) {
    using U = decltype(tag);
    const U* sp = reinterpret_cast<const U*>(s);
    U* dp = reinterpret_cast<U*>(d);
    parallelFor(rows, std::max<int64_t>(1, 32768 / rowLen), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        U* out = dp + r * rowLen;
        const U* in = sp + srcBase[r];
        if (innerContig)
          std::memcpy(out, in, static_cast<size_t>(rowLen) * sizeof(U));
        else
          for (int64_t k = 0; k < rowLen; ++k) out[k] = in[srcInner[k]];
      }
    });
  });
}

std::vector<int64_t> indexValues(const Tensor& index, const char* what) {
  TL_CHECK(index.dtype() == ScalarType::Long || index.dtype() == ScalarType::Int,
           "{}(): Expected dtype int32/int64 for index", what);
  Tensor c = index.to(ScalarType::Long);
  const int64_t* p = c.data<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  TL_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  const ScalarType dt = resultType(tensors);
  const Tensor* ref = nullptr;
  for (const auto& t : tensors)
    if (!(t.dim() == 1 && t.numel() == 0)) {
      ref = &t;
      break;
    }
  if (!ref) return Tensor::empty({0}, dt);
  TL_CHECK(ref->dim() > 0, "zero-dimensional tensor (at position 0) cannot be concatenated");
  const int64_t d = wrapDim(dim, ref->dim());
  IntList shape = ref->sizes();
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.dim() == 1 && t.numel() == 0) continue;
    TL_CHECK(t.dim() > 0, "zero-dimensional tensor (at position {}) cannot be concatenated", i);
    TL_CHECK(t.dim() == ref->dim(), "Tensors must have same number of dimensions: got {} and {}",
             ref->dim(), t.dim());
    for (int64_t k = 0; k < t.dim(); ++k)
      TL_CHECK(k == d || t.sizes()[k] == shape[k],
               "Sizes of tensors must match except in dimension {}. Expected size {} but got size "
               "{} for tensor number {} in the list.",
               d, shape[k], t.sizes()[k], i);
    total += t.sizes()[d];
  }
  shape[d] = total;
  Tensor out = Tensor::empty(shape, dt);
  int64_t off = 0;
  for (const auto& t : tensors) {
    if (t.dim() == 1 && t.numel() == 0) continue;
    const int64_t n = t.sizes()[d];
    if (n > 0) copyInto(narrow(out, d, off, n), t);
    off += n;
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  TL_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  const int64_t d = wrapDim(dim, tensors[0].dim() + 1);
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    TL_CHECK(tensors[i].sizes() == tensors[0].sizes(),
             "stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {}",
             sizesToString(tensors[0].sizes()), sizesToString(tensors[i].sizes()), i);
    parts.push_back(unsqueeze(tensors[i], d));
  }
  return cat(parts, d);
}

Tensor indexSelect(const Tensor& x, int64_t dim, const Tensor& index) {
  TL_CHECK(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  const int64_t d = wrapDim(dim, x.dim());
  const std::vector<int64_t> idx = indexValues(index, "index_select");
  const int64_t size = x.dim() == 0 ? 1 : x.sizes()[d];
  for (int64_t v : idx) TL_CHECK(v >= -size && v < size, "index out of range in self");
  IntList outShape = x.sizes();
  if (x.dim() > 0) outShape[d] = static_cast<int64_t>(idx.size());
  Tensor out = Tensor::empty(outShape, x.dtype());
  if (x.dim() == 0) {
    copyInto(out, x);
    return out;
  }
  // rows: outer dims before d times the selected index; inner: dims after d.
  const IntList& st = x.strides();
  IntList outerSizes(x.sizes().begin(), x.sizes().begin() + d),
      outerStrides(st.begin(), st.begin() + d);
  IntList innerSizes(x.sizes().begin() + d + 1, x.sizes().end()),
      innerStrides(st.begin() + d + 1, st.end());
  const auto outer = offsetsOf(outerSizes, outerStrides);
  const auto inner = offsetsOf(innerSizes, innerStrides);
  std::vector<int64_t> base;
  base.reserve(outer.size() * idx.size());
  for (int64_t o : outer)
    for (int64_t v : idx) base.push_back(x.storageOffset() + o + (v < 0 ? v + size : v) * st[d]);
  gatherRows(out, x, base, inner);
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  TL_CHECK(index.dtype() == ScalarType::Long, "gather(): Expected dtype int64 for index");
  const int64_t d = wrapDim(dim, x.dim());
  TL_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(x.dim(), 1),
           "Index tensor must have the same number of dimensions as input tensor");
  for (int64_t k = 0; k < index.dim(); ++k)
    TL_CHECK(k == d || index.sizes()[k] <= x.sizes()[k],
             "Size does not match at dimension {} expected index {} to be smaller than self {} "
             "apart from dimension {}",
             k, sizesToString(index.sizes()), sizesToString(x.sizes()), d);
  const int64_t size = x.dim() == 0 ? 1 : x.sizes()[d];
  Tensor out = Tensor::empty(index.sizes(), x.dtype());
  if (index.numel() == 0) return out;
  for (int64_t v : indexValues(index, "gather"))
    TL_CHECK(v >= -size && v < size, "index {} is out of bounds for dimension {} with size {}", v,
             d, size);
  if (x.dim() == 0) {
    copyInto(out, x);
    return out;
  }
  IntList st = x.strides();
  const int64_t dimStride = st[d] * static_cast<int64_t>(x.itemsize());
  st[d] = 0;
  Tensor src = x.asStrided(index.sizes(), st, x.storageOffset());
  TensorIter it({out, src, index}, index.sizes());
  dispatchBySize(x.itemsize(), [&](auto tag) {
    using U = decltype(tag);
    it.forEach([&](char** data, const int64_t* strides, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t v = *reinterpret_cast<const int64_t*>(data[2] + i * strides[2]);
        if (v < 0) v += size;
        *reinterpret_cast<U*>(data[0] + i * strides[0]) =
            *reinterpret_cast<const U*>(data[1] + i * strides[1] + v * dimStride);
      }
    });
  });
  return out;
}

Tensor nonzero(const Tensor& x) {
  Tensor c = x.contiguous();
  const int64_t n = c.numel(), nd = c.dim();
  std::vector<int64_t> hits;
  dispatchAll(c.dtype(), "nonzero_cpu", [&](auto tag) {
    using T = decltype(tag);
    const T* p = c.data<T>();
    for (int64_t i = 0; i < n; ++i)
      if (castTo<bool>(p[i])) hits.push_back(i);
  });
  Tensor out = Tensor::empty({static_cast<int64_t>(hits.size()), nd}, ScalarType::Long);
  int64_t* o = out.data<int64_t>();
  for (size_t h = 0; h < hits.size(); ++h) {
    int64_t rem = hits[h];
    for (int64_t d = nd - 1; d >= 0; --d) {
      o[static_cast<int64_t>(h) * nd + d] = rem % c.sizes()[d];
      rem /= c.sizes()[d];
    }
  }
  return out;
}

namespace {

// The shared planning of index / index_put_: which dims are indexed, their broadcast index
// shape, the storage offset of every indexed position, and how to lay out the result.
struct IndexPlan {
  IntList bshape;                  // broadcast shape of the index tensors
  std::vector<int64_t> base;       // per broadcast position: storage offset into self
  IntList restSizes, restStrides;  // the non-indexed dims of self, in order
  int64_t insertAt = 0;            // where the index dims go in the result
};

IndexPlan planIndex(const Tensor& self, const std::vector<std::optional<Tensor>>& indicesIn) {
  // Expand masks into Long indices.
  std::vector<std::optional<Tensor>> idx;
  int64_t pos = 0;
  for (const auto& o : indicesIn) {
    if (!o || !o->defined()) {
      idx.push_back(std::nullopt);
      ++pos;
      continue;
    }
    const Tensor& t = *o;
    if (t.dtype() == ScalarType::Bool || t.dtype() == ScalarType::Byte) {
      for (int64_t k = 0; k < t.dim(); ++k) {
        TL_CHECK(pos + k < self.dim(), "too many indices for tensor of dimension {} (got {})",
                 self.dim(), pos + t.dim());
        TL_CHECK(t.sizes()[k] == self.sizes()[pos + k],
                 "The shape of the mask {} at index {} does not match the shape of the indexed "
                 "tensor {} at index {}",
                 sizesToString(t.sizes()), k, sizesToString(self.sizes()), pos + k);
      }
      Tensor nz = nonzero(t);
      for (int64_t k = 0; k < t.dim(); ++k) idx.push_back(select(nz, 1, k));
      pos += t.dim();
    } else {
      TL_CHECK(isIntegralType(t.dtype(), false),
               "tensors used as indices must be long, int, byte or bool tensors");
      idx.push_back(t);
      ++pos;
    }
  }
  TL_CHECK(static_cast<int64_t>(idx.size()) <= self.dim(),
           "too many indices for tensor of dimension {} (got {})", self.dim(), idx.size());
  while (static_cast<int64_t>(idx.size()) < self.dim()) idx.push_back(std::nullopt);

  IndexPlan plan;
  std::vector<int64_t> indexed;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (idx[d]) {
      indexed.push_back(d);
      plan.bshape =
          indexed.size() == 1 ? idx[d]->sizes() : broadcastShapes(plan.bshape, idx[d]->sizes());
    } else {
      plan.restSizes.push_back(self.sizes()[d]);
      plan.restStrides.push_back(self.strides()[d]);
    }
  TL_CHECK(!indexed.empty(), "index: expected at least one index tensor");
  bool adjacent = true;
  for (size_t i = 1; i < indexed.size(); ++i)
    adjacent = adjacent && indexed[i] == indexed[i - 1] + 1;
  plan.insertAt = adjacent ? indexed[0] : 0;

  const int64_t nb = checkedNumel(plan.bshape);
  plan.base.assign(static_cast<size_t>(nb), self.storageOffset());
  for (int64_t d : indexed) {
    Tensor ix = broadcastTo(*idx[d], plan.bshape).to(ScalarType::Long);
    const int64_t* p = ix.data<int64_t>();
    const int64_t size = self.sizes()[d], stride = self.strides()[d];
    for (int64_t b = 0; b < nb; ++b) {
      int64_t v = p[b];
      TL_CHECK(v >= -size && v < size, "index {} is out of bounds for dimension {} with size {}", v,
               d, size);
      if (v < 0) v += size;
      plan.base[static_cast<size_t>(b)] += v * stride;
    }
  }
  return plan;
}

// The permutation taking [B..., rest...] to the result order [rest[:k], B..., rest[k:]].
IntList resultPermutation(const IndexPlan& plan) {
  const int64_t nb = static_cast<int64_t>(plan.bshape.size());
  const int64_t nr = static_cast<int64_t>(plan.restSizes.size());
  IntList perm;
  for (int64_t i = 0; i < plan.insertAt; ++i) perm.push_back(nb + i);
  for (int64_t i = 0; i < nb; ++i) perm.push_back(i);
  for (int64_t i = plan.insertAt; i < nr; ++i) perm.push_back(nb + i);
  return perm;
}

}  // namespace

Tensor index(const Tensor& x, const std::vector<std::optional<Tensor>>& indices) {
  const IndexPlan plan = planIndex(x, indices);
  IntList shape = plan.bshape;
  shape.insert(shape.end(), plan.restSizes.begin(), plan.restSizes.end());
  Tensor out = Tensor::empty(shape, x.dtype());
  gatherRows(out, x, plan.base, offsetsOf(plan.restSizes, plan.restStrides));
  if (plan.insertAt == 0) return out;
  return permute(out, resultPermutation(plan)).contiguous();
}

Tensor& indexPut_(Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                  const Tensor& values, bool accumulate) {
  const IndexPlan plan = planIndex(self, indices);
  // Result order shape, values broadcast to it, then viewed in [B, rest] order.
  IntList bfirst = plan.bshape;
  bfirst.insert(bfirst.end(), plan.restSizes.begin(), plan.restSizes.end());
  const IntList perm = resultPermutation(plan);
  IntList resultShape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) resultShape[i] = bfirst[perm[i]];
  TL_CHECK(values.dim() <= static_cast<int64_t>(resultShape.size()) &&
               broadcastShapes(values.sizes(), resultShape) == resultShape,
           "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of "
           "shape {}",
           sizesToString(values.sizes()), sizesToString(resultShape));
  Tensor v =
      broadcastTo(values.dtype() == self.dtype() ? values : values.to(self.dtype()), resultShape);
  IntList inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  v = permute(v, inv).contiguous();  // [B, rest]
  const auto inner = offsetsOf(plan.restSizes, plan.restStrides);
  const int64_t rowLen = static_cast<int64_t>(inner.size());
  auto* dst = self.storage().data();
  dispatchAll(self.dtype(), "index_put_", [&](auto tag) {
    using T = decltype(tag);
    T* d = reinterpret_cast<T*>(dst);
    const T* s = v.data<T>();
    for (size_t r = 0; r < plan.base.size(); ++r)
      for (int64_t k = 0; k < rowLen; ++k) {
        T& slot = d[plan.base[r] + inner[static_cast<size_t>(k)]];
        const T val = s[static_cast<int64_t>(r) * rowLen + k];
        if (accumulate)
          slot = castTo<T>(static_cast<OpMath<T>>(slot) + static_cast<OpMath<T>>(val));
        else
          slot = val;
      }
  });
  return self;
}

Tensor indexPut(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                const Tensor& values, bool accumulate) {
  Tensor out = self.clone();
  return indexPut_(out, indices, values, accumulate);
}

Tensor repeat(const Tensor& x, const IntList& repeats) {
  TL_CHECK(
      static_cast<int64_t>(repeats.size()) >= x.dim(),
      "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  const size_t nd = repeats.size();
  const size_t pad = nd - static_cast<size_t>(x.dim());
  IntList xs(nd, 1), xst(nd, 0), outShape(nd);
  for (size_t i = 0; i < static_cast<size_t>(x.dim()); ++i) {
    xs[pad + i] = x.sizes()[i];
    xst[pad + i] = x.strides()[i];
  }
  for (size_t i = 0; i < nd; ++i) {
    TL_CHECK(repeats[i] >= 0, "Trying to create tensor with negative dimension {}", repeats[i]);
    outShape[i] = xs[i] * repeats[i];
  }
  Tensor out = Tensor::empty(outShape, x.dtype());
  if (out.numel() == 0) return out;
  const IntList ost = out.strides();
  IntList vSizes, oStrides, iStrides;
  for (size_t i = 0; i < nd; ++i) {
    vSizes.push_back(repeats[i]);
    vSizes.push_back(xs[i]);
    oStrides.push_back(xs[i] * ost[i]);
    oStrides.push_back(ost[i]);
    iStrides.push_back(0);
    iStrides.push_back(xst[i]);
  }
  copyInto(out.asStrided(vSizes, oStrides, 0), x.asStrided(vSizes, iStrides, x.storageOffset()));
  return out;
}

Tensor flip(const Tensor& x, const IntList& dims) {
  Tensor r = x;
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(x.dim(), 1)), false);
  for (int64_t dim : dims) {
    const int64_t d = wrapDim(dim, x.dim());
    TL_CHECK(!seen[d],
             "dims has duplicates, original flip dims size={}, but unique flip dims size={}",
             dims.size(), dims.size() - 1);
    seen[d] = true;
    if (x.dim() == 0) continue;
    const int64_t n = x.sizes()[d];
    Tensor idx = Tensor::empty({n}, ScalarType::Long);
    for (int64_t i = 0; i < n; ++i) idx.data<int64_t>()[i] = n - 1 - i;
    r = indexSelect(r, d, idx);
  }
  return r.is(x) ? x.clone() : r;
}

Tensor roll(const Tensor& x, const IntList& shifts, const IntList& dims) {
  if (dims.empty()) {
    TL_CHECK(shifts.size() == 1, "roll: shifts and dims must align. shifts: {}, dims:0",
             shifts.size());
    return view(roll(flatten(x), shifts, {0}), x.sizes());
  }
  TL_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: {}, dims:{}",
           shifts.size(), dims.size());
  Tensor r = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrapDim(dims[i], x.dim());
    const int64_t n = x.sizes()[d];
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    r = cat({narrow(r, d, n - s, s), narrow(r, d, 0, n - s)}, d);
  }
  return r.is(x) ? x.clone() : r;
}

Tensor constantPadNd(const Tensor& x, const IntList& pad, const Scalar& value) {
  TL_CHECK(pad.size() % 2 == 0, "Length of pad must be even but instead it equals {}", pad.size());
  TL_CHECK(static_cast<int64_t>(pad.size()) / 2 <= x.dim(),
           "Length of pad should be no more than twice the number of dimensions of the input. "
           "Pad length is {} while the input has {} dimensions.",
           pad.size(), x.dim());
  IntList shape = x.sizes();
  const int64_t k = static_cast<int64_t>(pad.size()) / 2;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = x.dim() - 1 - i;
    const int64_t ns = shape[d] + pad[2 * i] + pad[2 * i + 1];
    TL_CHECK(ns >= 0,
             "The input size {}, plus negative padding {} and {} resulted in a negative output "
             "size, which is invalid. Check dimension {} of your input.",
             shape[d], pad[2 * i], pad[2 * i + 1], d);
    shape[d] = ns;
  }
  Tensor out = full(shape, value, x.dtype());
  Tensor src = x, dst = out;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = x.dim() - 1 - i;
    const int64_t lo = pad[2 * i], hi = pad[2 * i + 1];
    // crop negative pads from the source, skip positive pads in the destination
    src = narrow(
        src, d, std::max<int64_t>(-lo, 0),
        std::max<int64_t>(x.sizes()[d] + std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0), 0));
    dst = narrow(dst, d, std::max<int64_t>(lo, 0), src.sizes()[d]);
  }
  if (src.numel() > 0) copyInto(dst, src);
  return out;
}

namespace {
Tensor padByIndex(const Tensor& x, const IntList& pad, bool reflect) {
  TL_CHECK(
      pad.size() % 2 == 0 && !pad.empty() && static_cast<int64_t>(pad.size()) / 2 < x.dim() + 1,
      "padding size should be even and at most twice the number of dims");
  Tensor r = x;
  const int64_t k = static_cast<int64_t>(pad.size()) / 2;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = x.dim() - 1 - i;
    const int64_t n = x.sizes()[d], lo = pad[2 * i], hi = pad[2 * i + 1];
    if (reflect)
      TL_CHECK(lo < n && hi < n,
               "Argument #4: Padding size should be less than the corresponding input dimension, "
               "but got: padding ({}, {}) at dimension {} of input {}",
               lo, hi, d, sizesToString(x.sizes()));
    else
      TL_CHECK(n > 0 || (lo == 0 && hi == 0), "input tensor must be non-empty along padded dims");
    const int64_t m = n + lo + hi;
    TL_CHECK(m > 0, "input (H: {}) is too small. Calculated output H: {}", n, m);
    Tensor idx = Tensor::empty({m}, ScalarType::Long);
    for (int64_t j = 0; j < m; ++j) {
      int64_t s = j - lo;
      if (reflect)
        s = s < 0 ? -s : (s >= n ? 2 * (n - 1) - s : s);
      else
        s = std::clamp<int64_t>(s, 0, n - 1);
      idx.data<int64_t>()[j] = s;
    }
    r = indexSelect(r, d, idx);
  }
  return r;
}
}  // namespace

Tensor reflectionPad(const Tensor& x, const IntList& pad) { return padByIndex(x, pad, true); }
Tensor replicationPad(const Tensor& x, const IntList& pad) { return padByIndex(x, pad, false); }

Tensor circularPad(const Tensor& x, const IntList& pad) {
  TL_CHECK(pad.size() % 2 == 0, "Padding length must be divisible by 2");
  TL_CHECK(x.dim() >= 3 && static_cast<int64_t>(pad.size()) == 2 * (x.dim() - 2),
           "circular padding pads every dim after batch and channel: a {}-D input takes {} "
           "padding values, got {}",
           x.dim(), 2 * std::max<int64_t>(x.dim() - 2, 0), pad.size());
  Tensor r = x;
  const int64_t k = static_cast<int64_t>(pad.size()) / 2;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = x.dim() - 1 - i;
    const int64_t n = x.sizes()[d], lo = pad[2 * i], hi = pad[2 * i + 1];
    // Negative padding crops first; the wrapped values come from what remains.
    const int64_t start = std::max<int64_t>(-lo, 0),
                  kept = n + std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0);
    TL_CHECK(lo <= n && hi <= n, "Padding value causes wrapping around more than once.");
    TL_CHECK(kept >= 0,
             "Negative padding value is resulting in an empty dimension: circular padding ({}, "
             "{}) of dimension {} (size {})",
             lo, hi, d, n);
    TL_CHECK(std::max(lo, hi) <= kept,
             "circular padding ({}, {}) of dimension {} (size {}) wraps past what its negative "
             "padding keeps",
             lo, hi, d, n);
    const int64_t m = kept + std::max<int64_t>(lo, 0) + std::max<int64_t>(hi, 0);
    Tensor idx = Tensor::empty({m}, ScalarType::Long);
    const int64_t left = std::max<int64_t>(lo, 0);
    for (int64_t j = 0; j < m; ++j)
      idx.data<int64_t>()[j] = start + ((j - left) % kept + kept) % kept;
    r = indexSelect(r, d, idx);
  }
  return r;
}

Tensor clone(const Tensor& x) { return x.clone(); }
Tensor contiguous(const Tensor& x) { return x.contiguous(); }

bool isChannelsLastContiguous(const Tensor& x) {
  if (x.dim() != 4 && x.dim() != 5) return false;
  const int64_t nd = x.dim();
  IntList order{1};
  for (int64_t d = nd - 1; d >= 2; --d) order.push_back(d);
  order.push_back(0);
  int64_t expected = 1;
  for (int64_t d : order) {
    const int64_t size = x.sizes()[static_cast<size_t>(d)];
    if (size == 1) continue;
    if (x.strides()[static_cast<size_t>(d)] != expected) return false;
    expected *= size;
  }
  return true;
}

Tensor contiguous(const Tensor& x, MemoryFormat format) {
  if (format == MemoryFormat::Contiguous) return x.contiguous();
  TL_CHECK(format != MemoryFormat::Preserve,
           "preserve memory format is unsupported by the contiguous operator");
  const int64_t rank = format == MemoryFormat::ChannelsLast ? 4 : 5;
  TL_CHECK(x.dim() == rank, "required rank {} tensor to use {} format", rank,
           rank == 4 ? "channels_last" : "channels_last_3d");
  if (isChannelsLastContiguous(x)) return x;
  IntList toLast{0}, back{0, rank - 1};
  for (int64_t d = 2; d < rank; ++d) {
    toLast.push_back(d);
    back.push_back(d - 1);
  }
  toLast.push_back(1);
  Tensor y = permute(permute(x, toLast).contiguous(), back);
  if (x.isQuantized() && !y.isQuantized()) y.setQuantizer(x.quantizer());
  return y;
}

Tensor toDtype(const Tensor& x, ScalarType dtype, bool copy) {
  if (x.dtype() == dtype && !copy) return x;
  Tensor out = Tensor::empty(x.sizes(), dtype);
  copyInto(out, x);
  return out;
}

Tensor& copy_(Tensor& self, const Tensor& src) {
  if (self.numel() == 0) return self;
  copyInto(self, src);
  return self;
}

Tensor& fill_(Tensor& self, const Scalar& value) {
  TensorIter it({self});
  dispatchAll(self.dtype(), "fill_", [&](auto tag) {
    using T = decltype(tag);
    const T v = value.to<T>();
    it.forEach([&](char** data, const int64_t* strides, int64_t n) {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(data[0] + i * strides[0]) = v;
    });
  });
  return self;
}

Tensor& fill_(Tensor& self, const Tensor& value) {
  TL_CHECK(value.dim() == 0,
           "fill_ only supports 0-dimension value tensor but got tensor with {} dimensions.",
           value.dim());
  copyInto(self, value);
  return self;
}

Tensor& zero_(Tensor& self) { return fill_(self, 0); }

namespace {
Tensor triangle(const Tensor& x, int64_t k, bool lower) {
  TL_CHECK(x.dim() >= 2, "{}: input tensor must have at least 2 dimensions",
           lower ? "tril" : "triu");
  Tensor out = x.clone();
  const int64_t rows = x.size(-2), cols = x.size(-1);
  const int64_t batch = rows * cols == 0 ? 0 : out.numel() / (rows * cols);
  dispatchBySize(out.itemsize(), [&](auto tag) {
    using U = decltype(tag);
    U* p = out.data<U>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          const bool keep = lower ? (j - i <= k) : (j - i >= k);
          if (!keep) std::memset(&p[(b * rows + i) * cols + j], 0, sizeof(U));
        }
  });
  return out;
}
}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false); }

Tensor pixelShuffle(const Tensor& x, int64_t r) {
  TL_CHECK(x.dim() >= 3,
           "pixel_shuffle expects input to have at least 3 dimensions, but got input with {} "
           "dimension(s)",
           x.dim());
  TL_CHECK(r > 0, "pixel_shuffle expects a positive upscale_factor, but got {}", r);
  const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
  TL_CHECK(c % (r * r) == 0,
           "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
           "upscale_factor, but input.size(-3)={} is not divisible by {}",
           c, r * r);
  IntList batch(x.sizes().begin(), x.sizes().end() - 3);
  const int64_t nb = static_cast<int64_t>(batch.size());
  IntList s = batch;
  s.insert(s.end(), {c / (r * r), r, r, h, w});
  Tensor v = reshape(x, s);
  IntList perm;
  for (int64_t i = 0; i < nb; ++i) perm.push_back(i);
  perm.insert(perm.end(), {nb, nb + 3, nb + 1, nb + 4, nb + 2});
  IntList o = batch;
  o.insert(o.end(), {c / (r * r), h * r, w * r});
  return reshape(permute(v, perm).contiguous(), o);
}

Tensor pixelUnshuffle(const Tensor& x, int64_t r) {
  TL_CHECK(x.dim() >= 3,
           "pixel_unshuffle expects input to have at least 3 dimensions, but got input with {} "
           "dimension(s)",
           x.dim());
  const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
  TL_CHECK(r > 0 && h % r == 0 && w % r == 0,
           "pixel_unshuffle expects height and width to be divisible by downscale_factor {}", r);
  IntList batch(x.sizes().begin(), x.sizes().end() - 3);
  const int64_t nb = static_cast<int64_t>(batch.size());
  IntList s = batch;
  s.insert(s.end(), {c, h / r, r, w / r, r});
  IntList perm;
  for (int64_t i = 0; i < nb; ++i) perm.push_back(i);
  perm.insert(perm.end(), {nb, nb + 2, nb + 4, nb + 1, nb + 3});
  IntList o = batch;
  o.insert(o.end(), {c * r * r, h / r, w / r});
  return reshape(permute(reshape(x, s), perm).contiguous(), o);
}

Tensor oneHot(const Tensor& x, int64_t numClasses) {
  TL_CHECK(x.dtype() == ScalarType::Long, "one_hot is only applicable to index tensor.");
  Tensor c = x.contiguous();
  const int64_t* p = c.data<int64_t>();
  const int64_t n = c.numel();
  if (numClasses == -1) {
    TL_CHECK(n > 0, "Can not infer total number of classes from empty tensor.");
    numClasses = *std::max_element(p, p + n) + 1;
  }
  for (int64_t i = 0; i < n; ++i) {
    TL_CHECK(p[i] >= 0, "Class values must be non-negative.");
    TL_CHECK(p[i] < numClasses, "Class values must be smaller than num_classes.");
  }
  IntList shape = x.sizes();
  shape.push_back(numClasses);
  Tensor out = zeros(shape, ScalarType::Long);
  int64_t* o = out.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) o[i * numClasses + p[i]] = 1;
  return out;
}

// ---------------------------------------------------------------------------------------
// Factories
// ---------------------------------------------------------------------------------------

Tensor empty(const IntList& sizes, ScalarType dtype) { return Tensor::empty(sizes, dtype); }
Tensor zeros(const IntList& sizes, ScalarType dtype) {
  Tensor out = Tensor::empty(sizes, dtype);  // Tensor::empty does not zero-fill
  if (out.numel() > 0)
    std::memset(out.rawData(), 0, static_cast<size_t>(out.numel()) * out.itemsize());
  return out;
}
Tensor ones(const IntList& sizes, ScalarType dtype) { return full(sizes, 1, dtype); }

Tensor full(const IntList& sizes, const Scalar& value, std::optional<ScalarType> dtype) {
  const ScalarType dt = dtype                ? *dtype
                        : value.isBoolean()  ? ScalarType::Bool
                        : value.isIntegral() ? ScalarType::Long
                                             : kDefaultFloat;
  Tensor out = Tensor::empty(sizes, dt);
  fill_(out, value);
  return out;
}

Tensor zerosLike(const Tensor& x, std::optional<ScalarType> dtype) {
  return zeros(x.sizes(), dtype.value_or(x.dtype()));
}
Tensor onesLike(const Tensor& x, std::optional<ScalarType> dtype) {
  return ones(x.sizes(), dtype.value_or(x.dtype()));
}
Tensor fullLike(const Tensor& x, const Scalar& value, std::optional<ScalarType> dtype) {
  return full(x.sizes(), value, dtype.value_or(x.dtype()));
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
              std::optional<ScalarType> dtype) {
  const bool anyFloat = start.isFloatingPoint() || end.isFloatingPoint() || step.isFloatingPoint();
  const ScalarType dt = dtype ? *dtype : anyFloat ? kDefaultFloat : ScalarType::Long;
  double sizeD;
  const bool integralOut = isIntegralType(dt, true);
  if (integralOut) {
    TL_CHECK(step.toLong() != 0, "step must be nonzero");
    sizeD = std::ceil(static_cast<double>(end.toLong() - start.toLong()) /
                      static_cast<double>(step.toLong()));
  } else {
    sizeD = std::ceil((end.toDouble() - start.toDouble()) / step.toDouble());
  }
  TL_CHECK(step.toDouble() != 0, "step must be nonzero");
  TL_CHECK(std::isfinite(start.toDouble()) && std::isfinite(end.toDouble()),
           "unsupported range: {} -> {}", start.toDouble(), end.toDouble());
  TL_CHECK((step.toDouble() > 0 && end.toDouble() >= start.toDouble()) ||
               (step.toDouble() < 0 && end.toDouble() <= start.toDouble()),
           "upper bound and larger bound inconsistent with step sign");
  TL_CHECK(sizeD >= 0 && sizeD <= static_cast<double>(std::numeric_limits<int64_t>::max()),
           "invalid size, possible overflow?");
  const auto n = static_cast<int64_t>(sizeD);
  Tensor out = Tensor::empty({n}, dt);
  dispatchAll(dt, "arange_cpu", [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    if (integralOut) {
      const int64_t s = start.toLong(), st = step.toLong();
      for (int64_t i = 0; i < n; ++i) p[i] = castTo<T>(s + i * st);
    } else {
      const double s = start.toDouble(), st = step.toDouble();
      for (int64_t i = 0; i < n; ++i) p[i] = castTo<T>(s + static_cast<double>(i) * st);
    }
  });
  return out;
}

Tensor arange(const Scalar& end, std::optional<ScalarType> dtype) {
  return arange(0, end, 1, dtype);
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps,
                std::optional<ScalarType> dtype) {
  TL_CHECK(steps >= 0, "number of steps must be non-negative");
  const ScalarType dt = dtype.value_or(kDefaultFloat);
  Tensor out = Tensor::empty({steps}, dt);
  if (steps == 0) return out;
  dispatchAll(dt, "linspace_cpu", [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    if (steps == 1) {
      p[0] = start.to<T>();
      return;
    }
    if constexpr (std::is_integral_v<T>) {
      const double s = start.toDouble(), e = end.toDouble();
      const double step = (e - s) / static_cast<double>(steps - 1);
      const int64_t half = steps / 2;
      for (int64_t i = 0; i < steps; ++i)
        p[i] = castTo<T>(i < half ? s + step * static_cast<double>(i)
                                  : e - step * static_cast<double>(steps - i - 1));
    } else {
      using A = OpMath<T>;
      const A s = start.to<A>(), e = end.to<A>();
      const A step = (e - s) / static_cast<A>(steps - 1);
      const int64_t half = steps / 2;
      for (int64_t i = 0; i < steps; ++i)
        p[i] = castTo<T>(i < half ? s + step * static_cast<A>(i)
                                  : e - step * static_cast<A>(steps - i - 1));
    }
  });
  return out;
}

Tensor eye(int64_t n, int64_t m, ScalarType dtype) {
  if (m < 0) m = n;
  TL_CHECK(n >= 0, "n must be greater or equal to 0, got {}", n);
  Tensor out = zeros({n, m}, dtype);
  dispatchAll(dtype, "eye", [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = castTo<T>(1);
  });
  return out;
}

Tensor triangleIndices(int64_t row, int64_t col, int64_t offset, bool lower,
                       std::optional<ScalarType> dtype) {
  TL_CHECK(row >= 0, "row must be non-negative, got{}", row);
  TL_CHECK(col >= 0, "col must be non-negative, got{}", col);
  const ScalarType dt = dtype.value_or(ScalarType::Long);
  TL_CHECK(dt == ScalarType::Long || dt == ScalarType::Int,
           "\"tril_indices\" not implemented for '{}'", toString(dt));
  // Counted first (bounded by row * col), so the allocation is sized by what is kept.
  std::vector<int64_t> rows, cols;
  for (int64_t i = 0; i < row; ++i) {
    // lower: j <= i + offset; upper: j >= i + offset
    const int64_t from = lower ? 0 : std::max<int64_t>(0, i + offset);
    const int64_t to = lower ? std::min<int64_t>(col, i + offset + 1) : col;
    for (int64_t j = from; j < to; ++j) {
      rows.push_back(i);
      cols.push_back(j);
    }
  }
  const int64_t n = static_cast<int64_t>(rows.size());
  Tensor out = Tensor::empty({2, n}, ScalarType::Long);
  int64_t* o = out.data<int64_t>();
  std::copy(rows.begin(), rows.end(), o);
  std::copy(cols.begin(), cols.end(), o + n);
  return dt == ScalarType::Long ? out : out.to(dt);
}

}  // namespace torchless::ops
