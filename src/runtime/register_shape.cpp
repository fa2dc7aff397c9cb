// Kernels of the shape family (ops/shape.h): views (which share storage as PyTorch's do),
// their in-place metadata forms (`squeeze_`, `transpose_`), copies and indexing, factories,
// conversions (`to`, `contiguous`, `clone`), and the tensor metadata scripted code reads
// (`size`, `dim`, `numel`, `Int`, `item`, `prim::dtype` ...).

#include "ops/elementwise.h"
#include "ops/shape.h"
#include "ops/tensor_iterator.h"
#include "runtime/register_utils.h"

#include <cmath>

namespace torchless {
namespace {

using namespace kreg;
using ops::Scalar;

IValue intList(const IntList& v) {
  std::vector<IValue> values(v.begin(), v.end());
  return IValue(ListImpl::create(IntType::get(), std::move(values)));
}

// Gives `self` the metadata of `view` (a view of self's storage): squeeze_, transpose_ ...
Tensor setMetadata(const IValue& selfValue, const Tensor& view) {
  Tensor self = selfValue.toTensor();
  auto& impl = *self.impl();
  impl.sizes = view.sizes();
  impl.strides = view.strides();
  impl.storageOffset = view.storageOffset();
  return self;
}

// Tensor.unfold(dimension, size, step): a view with one more dim of `size` windows.
Tensor unfold(const Tensor& x, int64_t dim, int64_t size, int64_t step) {
  const int64_t nd = x.dim();
  dim = ops::wrapDim(dim, std::max<int64_t>(nd, 1));
  const int64_t len = nd == 0 ? 1 : x.size(dim);
  if (size > len)
    throw Error(fmt::format("maximum size for tensor at dimension {} is {} but size is {}", dim,
                            len, size));
  if (step <= 0) throw Error(fmt::format("step is {} but must be > 0", step));
  IntList sizes = x.sizes(), strides = x.strides();
  if (nd == 0) {
    sizes = {size};
    strides = {1};
    return x.asStrided(sizes, strides, x.storageOffset());
  }
  const int64_t st = strides[static_cast<size_t>(dim)];
  sizes[static_cast<size_t>(dim)] = (len - size) / step + 1;
  strides[static_cast<size_t>(dim)] = st * step;
  sizes.push_back(size);
  strides.push_back(st);
  return x.asStrided(sizes, strides, x.storageOffset());
}

Tensor movedim(const Tensor& x, IntList src, IntList dst) {
  const int64_t nd = x.dim();
  if (src.size() != dst.size())
    throw Error(
        fmt::format("movedim: Invalid source or destination dims: source ({} dims) should "
                    "contain the same number of dims as destination ({} dims)",
                    src.size(), dst.size()));
  IntList perm(static_cast<size_t>(nd), -1);
  std::vector<bool> used(static_cast<size_t>(nd), false);
  for (size_t i = 0; i < src.size(); ++i) {
    int64_t s = ops::wrapDim(src[i], nd), d = ops::wrapDim(dst[i], nd);
    perm[static_cast<size_t>(d)] = s;
    used[static_cast<size_t>(s)] = true;
  }
  int64_t next = 0;
  for (auto& p : perm) {
    if (p != -1) continue;
    while (used[static_cast<size_t>(next)]) ++next;
    p = next++;
  }
  return ops::permute(x, perm);
}

// ---- torch.tensor(list) ----

void listShape(const IValue& v, IntList& shape, size_t depth) {
  if (!v.isList()) return;
  const auto& l = v.toList()->list;
  if (shape.size() <= depth) shape.push_back(static_cast<int64_t>(l.size()));
  if (!l.empty()) listShape(l[0], shape, depth + 1);
}

void listLeaves(const IValue& v, std::vector<IValue>& leaves, const IntList& shape, size_t depth) {
  if (!v.isList()) {
    if (depth != shape.size()) throw Error("Expected a sequence of numbers but found a scalar");
    leaves.push_back(v);
    return;
  }
  const auto& l = v.toList()->list;
  if (depth >= shape.size() || static_cast<int64_t>(l.size()) != shape[depth])
    throw Error(fmt::format("Expected sequence of length {} at dim {} (got {})",
                            depth < shape.size() ? shape[depth] : 0, depth, l.size()));
  for (const auto& e : l) listLeaves(e, leaves, shape, depth + 1);
}

Tensor tensorFromList(const IValue& data, std::optional<ScalarType> dtype) {
  IntList shape;
  listShape(data, shape, 0);
  std::vector<IValue> leaves;
  listLeaves(data, leaves, shape, 0);
  ScalarType inferred = ScalarType::Bool;
  bool any = false;
  for (const auto& l : leaves) {
    any = true;
    if (l.isDouble())
      inferred = ops::kDefaultFloat;
    else if (l.isInt() && inferred == ScalarType::Bool)
      inferred = ScalarType::Long;
    else if (l.isTensor())
      throw Error("torch.tensor of a list of Tensors is not supported; use torch.stack");
  }
  if (!any) {
    // torch.tensor([]) is Float; an empty typed list keeps its element type.
    const auto& et = data.toList()->elementType;
    inferred = et->kind() == TypeKind::IntType    ? ScalarType::Long
               : et->kind() == TypeKind::BoolType ? ScalarType::Bool
                                                  : ops::kDefaultFloat;
  }
  Tensor out = Tensor::empty(shape, dtype.value_or(inferred));
  dispatchDtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    for (size_t i = 0; i < leaves.size(); ++i) {
      const IValue& l = leaves[i];
      if constexpr (std::is_same_v<T, std::complex<float>> ||
                    std::is_same_v<T, std::complex<double>>) {
        p[i] = T(static_cast<typename T::value_type>(l.toScalarDouble()));
      } else if (l.isDouble()) {
        p[i] = ops::castTo<T>(l.toDouble());
      } else if (l.isInt()) {
        p[i] = ops::castTo<T>(l.toInt());
      } else {
        p[i] = ops::castTo<T>(l.toBool());
      }
    }
  });
  return out;
}

Tensor scalarTensor(const IValue& v, std::optional<ScalarType> dtype) {
  Scalar s = toScalar(v);
  ScalarType def = s.isFloatingPoint() ? ops::kDefaultFloat
                   : s.isIntegral()    ? ScalarType::Long
                                       : ScalarType::Bool;
  return ops::full({}, s, dtype.value_or(def));
}

Tensor padMode(const Tensor& x, const IntList& pad, const std::string& mode,
               std::optional<double> value) {
  if (mode == "constant") return ops::constantPadNd(x, pad, Scalar(value.value_or(0.0)));
  if (value && *value != 0.0)
    throw Error(fmt::format("Padding mode \"{}\" doesn't take in value argument", mode));
  if (mode == "reflect") return ops::reflectionPad(x, pad);
  if (mode == "replicate") return ops::replicationPad(x, pad);
  if (mode == "circular") return ops::circularPad(x, pad);
  throw Error(fmt::format("Unrecognised padding mode {}", mode));
}

// ---- views ----
void registerViewKernels(KernelRegistry& r) {
  defFamily(
      r, "aten::view", [](const IValue* a) { return ops::view(a[0].toTensor(), toIntList(a[1])); },
      false);
  defFamily(
      r, "aten::view_as",
      [](const IValue* a) { return ops::view(a[0].toTensor(), a[1].toTensor().sizes()); }, false);
  defFamily(
      r, "aten::reshape",
      [](const IValue* a) { return ops::reshape(a[0].toTensor(), toIntList(a[1])); }, false);
  // _reshape_from_tensor(self, shape): reshape by the values of a 1-d integer tensor.
  defFamily(
      r, "aten::_reshape_from_tensor",
      [](const IValue* a) {
        const Tensor& shape = a[1].toTensor();
        if (shape.dim() != 1 || !isIntegralType(shape.dtype(), false))
          throw Error("_reshape_from_tensor expects a 1-d integer shape tensor");
        IntList sizes;
        for (int64_t i = 0; i < shape.numel(); ++i)
          sizes.push_back(ops::select(shape, 0, i).itemInt());
        return ops::reshape(a[0].toTensor(), sizes);
      },
      false);
  defFamily(
      r, "aten::reshape_as",
      [](const IValue* a) { return ops::reshape(a[0].toTensor(), a[1].toTensor().sizes()); },
      false);
  defFamily(
      r, "aten::flatten.using_ints",
      [](const IValue* a) { return ops::flatten(a[0].toTensor(), a[1].toInt(), a[2].toInt()); },
      false);
  defFamily(
      r, "aten::unflatten.int",
      [](const IValue* a) {
        return ops::unflatten(a[0].toTensor(), a[1].toInt(), toIntList(a[2]));
      },
      false);
  defFamily(
      r, "aten::permute",
      [](const IValue* a) { return ops::permute(a[0].toTensor(), toIntList(a[1])); }, false);
  defFamily(
      r, "aten::transpose.int",
      [](const IValue* a) { return ops::transpose(a[0].toTensor(), a[1].toInt(), a[2].toInt()); },
      false);
  defFamily(
      r, "aten::swapaxes",
      [](const IValue* a) { return ops::transpose(a[0].toTensor(), a[1].toInt(), a[2].toInt()); },
      false);
  defFamily(
      r, "aten::movedim.int",
      [](const IValue* a) { return movedim(a[0].toTensor(), {a[1].toInt()}, {a[2].toInt()}); },
      false);
  defFamily(
      r, "aten::movedim.intlist",
      [](const IValue* a) { return movedim(a[0].toTensor(), toIntList(a[1]), toIntList(a[2])); },
      false);
  defFamily(
      r, "aten::t", [](const IValue* a) { return ops::t(a[0].toTensor()); }, false);
  defFamily(
      r, "aten::expand",
      [](const IValue* a) { return ops::expand(a[0].toTensor(), toIntList(a[1])); }, false);
  defFamily(
      r, "aten::expand_as",
      [](const IValue* a) { return ops::expandAs(a[0].toTensor(), a[1].toTensor()); }, false);
  defFamily(
      r, "aten::squeeze", [](const IValue* a) { return ops::squeeze(a[0].toTensor()); }, false);
  defFamily(
      r, "aten::squeeze.dim",
      [](const IValue* a) { return ops::squeeze(a[0].toTensor(), a[1].toInt()); }, false);
  defFamily(
      r, "aten::unsqueeze",
      [](const IValue* a) { return ops::unsqueeze(a[0].toTensor(), a[1].toInt()); }, false);
  defFamily(
      r, "aten::select.int",
      [](const IValue* a) { return ops::select(a[0].toTensor(), a[1].toInt(), a[2].toInt()); },
      false);
  defFamily(
      r, "aten::slice.Tensor",
      [](const IValue* a) {
        return ops::slice(a[0].toTensor(), a[1].toInt(), toOptInt(a[2]), toOptInt(a[3]),
                          a[4].toInt());
      },
      false);
  defFamily(
      r, "aten::narrow",
      [](const IValue* a) {
        return ops::narrow(a[0].toTensor(), a[1].toInt(), a[2].toInt(), a[3].toInt());
      },
      false);
  defFamily(
      r, "aten::narrow.Tensor",
      [](const IValue* a) {
        return ops::narrow(a[0].toTensor(), a[1].toInt(), a[2].toTensor().itemInt(), a[3].toInt());
      },
      false);
  // as_strided(self, size, stride, storage_offset=None): a view of self's storage, at self's
  // offset unless one is given; one reaching past the storage is an error (fromStorage), as
  // PyTorch's setStorage check.
  defFamily(
      r, "aten::as_strided",
      [](const IValue* a) {
        const Tensor& t = a[0].toTensor();
        return t.asStrided(toIntList(a[1]), toIntList(a[2]),
                           a[3].isNone() ? t.storageOffset() : a[3].toInt());
      },
      false);
  defFamily(
      r, "aten::unfold",
      [](const IValue* a) {
        return unfold(a[0].toTensor(), a[1].toInt(), a[2].toInt(), a[3].toInt());
      },
      false);
  for (const char* name : {"aten::detach", "aten::alias", "aten::lift_fresh", "aten::data"})
    defFamily(
        r, name, [](const IValue* a) { return a[0].toTensor().alias(); }, false);
  defN<1>(r, "prim::data", [](const IValue* a) { return a[0].toTensor().alias(); });
  // numpy_T: every dim reversed (x.permute(n-1, ..., 0)).
  defFamily(
      r, "aten::numpy_T",
      [](const IValue* a) {
        const Tensor& x = a[0].toTensor();
        IntList dims;
        for (int64_t d = x.dim() - 1; d >= 0; --d) dims.push_back(d);
        return ops::permute(x, dims);
      },
      false);
  // Conjugation of real tensors (the only ones torchless computes with): _conj, resolve_conj
  // and resolve_neg give self (PyTorch: a real tensor has no conjugate or negative bit),
  // conj_physical a copy; lift returns self as PyTorch's does for a plain tensor.
  for (const char* name : {"aten::_conj", "aten::resolve_conj", "aten::resolve_neg", "aten::lift"})
    defFamily(
        r, name,
        [](const IValue* a) {
          const Tensor& x = a[0].toTensor();
          if (isComplexType(x.dtype()))
            throw Error("conjugation of complex tensors is not supported");
          return x;
        },
        false);
  defFamily(
      r, "aten::conj_physical",
      [](const IValue* a) {
        const Tensor& x = a[0].toTensor();
        if (isComplexType(x.dtype()))
          throw Error("conjugation of complex tensors is not supported");
        return ops::clone(x);
      },
      false);

  // In-place metadata forms.
  defN<1>(r, "aten::squeeze_",
          [](const IValue* a) { return setMetadata(a[0], ops::squeeze(a[0].toTensor())); });
  defN<2>(r, "aten::squeeze_.dim", [](const IValue* a) {
    return setMetadata(a[0], ops::squeeze(a[0].toTensor(), a[1].toInt()));
  });
  defN<2>(r, "aten::unsqueeze_", [](const IValue* a) {
    return setMetadata(a[0], ops::unsqueeze(a[0].toTensor(), a[1].toInt()));
  });
  defN<3>(r, "aten::transpose_", [](const IValue* a) {
    return setMetadata(a[0], ops::transpose(a[0].toTensor(), a[1].toInt(), a[2].toInt()));
  });
  defN<1>(r, "aten::t_",
          [](const IValue* a) { return setMetadata(a[0], ops::t(a[0].toTensor())); });
  defN<1>(r, "aten::detach_", [](const IValue* a) { return a[0]; });
  defN<2>(r, "aten::requires_grad_", [](const IValue* a) { return a[0]; });
}

// ---- splits (lists of views) ----
// tensor_split's two forms (the kernels below).
std::vector<Tensor> tensorSplitSections(const Tensor& x, int64_t sections, int64_t dim) {
  if (x.dim() == 0)
    throw Error(
        "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 "
        "dims");
  if (sections <= 0)
    throw Error(fmt::format("number of sections must be larger than 0, got {}", sections));
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  if (d < 0 || d >= x.dim())
    throw Error(
        fmt::format("Dimension out of range (expected to be in range of [{}, {}], but "
                    "got {})",
                    -x.dim(), x.dim() - 1, dim));
  const int64_t n = x.size(d), small = n / sections, extra = n % sections;
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t k = 0; k < sections; ++k) {
    const int64_t len = small + (k < extra ? 1 : 0);
    out.push_back(ops::slice(x, d, start, start + len));
    start += len;
  }
  return out;
}

std::vector<Tensor> tensorSplitIndices(const Tensor& x, const IntList& points, int64_t dim) {
  if (x.dim() == 0)
    throw Error(
        "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 "
        "dims");
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t p : points) {
    out.push_back(ops::slice(x, dim, start, p));
    start = p;
  }
  out.push_back(ops::slice(x, dim, start, std::nullopt));
  return out;
}

void registerSplitKernels(KernelRegistry& r) {
  defN<3>(r, "aten::chunk", [](const IValue* a) {
    return tensorList(ops::chunk(a[0].toTensor(), a[1].toInt(), a[2].toInt()));
  });
  defN<3>(r, "aten::unsafe_chunk", [](const IValue* a) {
    return tensorList(ops::chunk(a[0].toTensor(), a[1].toInt(), a[2].toInt()));
  });
  for (const char* name : {"aten::split.Tensor", "aten::unsafe_split.Tensor"})
    defN<3>(r, name, [](const IValue* a) {
      return tensorList(ops::split(a[0].toTensor(), a[1].toInt(), a[2].toInt()));
    });
  for (const char* name : {"aten::split", "aten::split.sizes", "aten::split_with_sizes",
                           "aten::unsafe_split_with_sizes"})
    defN<3>(r, name, [](const IValue* a) {
      return tensorList(ops::splitWithSizes(a[0].toTensor(), toIntList(a[1]), a[2].toInt()));
    });
  defN<2>(r, "aten::unbind.int",
          [](const IValue* a) { return tensorList(ops::unbind(a[0].toTensor(), a[1].toInt())); });
  // tensor_split (PyTorch's TensorShape.cpp): `sections` pieces, the first size % sections one
  // longer; or pieces between split points, each x[start:end] as Python slices it (an end
  // before its start gives an empty piece); a tensor argument: 0-d sections, 1-d points.
  defN<3>(r, "aten::tensor_split.sections", [](const IValue* a) {
    return tensorList(tensorSplitSections(a[0].toTensor(), a[1].toInt(), a[2].toInt()));
  });
  defN<3>(r, "aten::tensor_split.indices", [](const IValue* a) {
    return tensorList(tensorSplitIndices(a[0].toTensor(), toIntList(a[1]), a[2].toInt()));
  });
  defN<3>(r, "aten::tensor_split.tensor_indices_or_sections", [](const IValue* a) {
    const Tensor& t = a[1].toTensor();
    if (t.dtype() != ScalarType::Long)
      throw Error(
          fmt::format("tensor_split expected tensor_indices_or_sections to have dtype of "
                      "long, but got {}",
                      toString(t.dtype())));
    if (t.dim() > 1)
      throw Error(
          fmt::format("tensor_split expected tensor_indices_or_sections to be a "
                      "zero-dimensional or one-dimensional tensor, but got a tensor with "
                      "{} dims",
                      t.dim()));
    if (t.dim() == 0)
      return tensorList(tensorSplitSections(a[0].toTensor(), t.itemInt(), a[2].toInt()));
    IntList points;
    for (int64_t i = 0; i < t.numel(); ++i) points.push_back(ops::select(t, 0, i).itemInt());
    return tensorList(tensorSplitIndices(a[0].toTensor(), points, a[2].toInt()));
  });
  defN<1>(r, "aten::broadcast_tensors", [](const IValue* a) {
    auto ts = a[0].toTensorVector();
    IntList shape;
    for (const auto& t : ts) shape = ops::broadcastShapes(shape, t.sizes());
    std::vector<Tensor> out;
    for (const auto& t : ts) out.push_back(ops::broadcastTo(t, shape));
    return tensorList(std::move(out));
  });
}

// ---- copies and indexing ----
void registerCopyAndIndexKernels(KernelRegistry& r) {
  defFamily(r, "aten::cat",
            [](const IValue* a) { return ops::cat(a[0].toTensorVector(), a[1].toInt()); });
  defFamily(r, "aten::concat",
            [](const IValue* a) { return ops::cat(a[0].toTensorVector(), a[1].toInt()); });
  defFamily(r, "aten::stack",
            [](const IValue* a) { return ops::stack(a[0].toTensorVector(), a[1].toInt()); });
  defFamily(r, "aten::index_select", [](const IValue* a) {
    return ops::indexSelect(a[0].toTensor(), a[1].toInt(), a[2].toTensor());
  });
  defFamily(r, "aten::gather", [](const IValue* a) {
    return ops::gather(a[0].toTensor(), a[1].toInt(), a[2].toTensor());
  });
  defFamily(r, "aten::nonzero", [](const IValue* a) { return ops::nonzero(a[0].toTensor()); });
  defFamily(r, "aten::index.Tensor",
            [](const IValue* a) { return ops::index(a[0].toTensor(), toOptTensorList(a[1])); });
  defFamily(r, "aten::index.Tensor_hacked_twin",
            [](const IValue* a) { return ops::index(a[0].toTensor(), toOptTensorList(a[1])); });
  for (const char* name : {"aten::index_put_", "aten::index_put_.hacked_twin"})
    defN<4>(r, name, [](const IValue* a) {
      Tensor self = a[0].toTensor();
      ops::indexPut_(self, toOptTensorList(a[1]), a[2].toTensor(), a[3].toBool());
      return self;
    });
  for (const char* name : {"aten::index_put", "aten::index_put.hacked_twin"})
    defN<4>(r, name, [](const IValue* a) {
      return ops::indexPut(a[0].toTensor(), toOptTensorList(a[1]), a[2].toTensor(), a[3].toBool());
    });
  // The functional forms of writes through views (passes/remove_mutation.cpp makes them):
  // a copy of self with src written where slice / select would look.
  defN<6>(r, "aten::slice_scatter", [](const IValue* a) {
    Tensor out = ops::clone(a[0].toTensor());
    Tensor view = ops::slice(out, a[2].toInt(), toOptInt(a[3]), toOptInt(a[4]), a[5].toInt());
    ops::copy_(view, a[1].toTensor());
    return out;
  });
  defN<4>(r, "aten::select_scatter", [](const IValue* a) {
    Tensor out = ops::clone(a[0].toTensor());
    Tensor view = ops::select(out, a[2].toInt(), a[3].toInt());
    ops::copy_(view, a[1].toTensor());
    return out;
  });
  defN<2>(r, "aten::fill.Scalar", [](const IValue* a) {
    Tensor out = ops::clone(a[0].toTensor());
    ops::fill_(out, toScalar(a[1]));
    return out;
  });
  defFamily(r, "aten::repeat",
            [](const IValue* a) { return ops::repeat(a[0].toTensor(), toIntList(a[1])); });
  defFamily(r, "aten::flip",
            [](const IValue* a) { return ops::flip(a[0].toTensor(), toIntList(a[1])); });
  defFamily(r, "aten::roll", [](const IValue* a) {
    return ops::roll(a[0].toTensor(), toIntList(a[1]), toIntList(a[2]));
  });
  defFamily(r, "aten::constant_pad_nd", [](const IValue* a) {
    return ops::constantPadNd(a[0].toTensor(), toIntList(a[1]), toScalar(a[2]));
  });
  defFamily(r, "aten::pad", [](const IValue* a) {
    return padMode(a[0].toTensor(), toIntList(a[1]), a[2].toStringRef(), toOptDouble(a[3]));
  });
  // _infer_size(a, b): the broadcast of two shapes (F.binary_cross_entropy's weight).
  defN<2>(r, "aten::_infer_size", [](const IValue* a) {
    return intList(ops::broadcastShapes(toIntList(a[0]), toIntList(a[1])));
  });
  defFamily(r, "aten::_pad_circular",
            [](const IValue* a) { return ops::circularPad(a[0].toTensor(), toIntList(a[1])); });
  for (const char* name :
       {"aten::reflection_pad1d", "aten::reflection_pad2d", "aten::reflection_pad3d"})
    defFamily(r, name,
              [](const IValue* a) { return ops::reflectionPad(a[0].toTensor(), toIntList(a[1])); });
  for (const char* name :
       {"aten::replication_pad1d", "aten::replication_pad2d", "aten::replication_pad3d"})
    defFamily(r, name, [](const IValue* a) {
      return ops::replicationPad(a[0].toTensor(), toIntList(a[1]));
    });
  defFamily(r, "aten::tril",
            [](const IValue* a) { return ops::tril(a[0].toTensor(), a[1].toInt()); });
  defFamily(r, "aten::triu",
            [](const IValue* a) { return ops::triu(a[0].toTensor(), a[1].toInt()); });
  defFamily(r, "aten::pixel_shuffle",
            [](const IValue* a) { return ops::pixelShuffle(a[0].toTensor(), a[1].toInt()); });
  defFamily(r, "aten::pixel_unshuffle",
            [](const IValue* a) { return ops::pixelUnshuffle(a[0].toTensor(), a[1].toInt()); });
  defFamily(r, "aten::one_hot",
            [](const IValue* a) { return ops::oneHot(a[0].toTensor(), a[1].toInt()); });
}

// ---- conversions ----
void registerConversionKernels(KernelRegistry& r) {
  defFamily(r, "aten::clone", [](const IValue* a) { return ops::clone(a[0].toTensor()); });
  defFamily(
      r, "aten::contiguous",
      [](const IValue* a) {
        const int64_t f = a[1].toInt();
        if (f < 0 || f > 3) throw Error(fmt::format("contiguous: unknown memory_format {}", f));
        return ops::contiguous(a[0].toTensor(), static_cast<MemoryFormat>(f));
      },
      false);
  // aten::_cast_Long & co. (legacy archives): self.to(dtype), self itself when it already has it.
  defN<2>(r, "aten::_cast_Byte",
          [](const IValue* a) { return ops::toDtype(a[0].toTensor(), ScalarType::Byte); });
  defN<2>(r, "aten::_cast_Char",
          [](const IValue* a) { return ops::toDtype(a[0].toTensor(), ScalarType::Char); });
  defN<2>(r, "aten::_cast_Double",
          [](const IValue* a) { return ops::toDtype(a[0].toTensor(), ScalarType::Double); });
  defN<2>(r, "aten::_cast_Float",
          [](const IValue* a) { return ops::toDtype(a[0].toTensor(), ScalarType::Float); });
  defN<2>(r, "aten::_cast_Half",
          [](const IValue* a) { return ops::toDtype(a[0].toTensor(), ScalarType::Half); });
  defN<2>(r, "aten::_cast_Int",
          [](const IValue* a) { return ops::toDtype(a[0].toTensor(), ScalarType::Int); });
  defN<2>(r, "aten::_cast_Long",
          [](const IValue* a) { return ops::toDtype(a[0].toTensor(), ScalarType::Long); });
  defN<2>(r, "aten::_cast_Short",
          [](const IValue* a) { return ops::toDtype(a[0].toTensor(), ScalarType::Short); });
  defN<5>(r, "aten::to.dtype", [](const IValue* a) {
    return ops::toDtype(a[0].toTensor(), toDtype(a[1]), a[3].toBool());
  });
  defN<6>(r, "aten::to.device", [](const IValue* a) {
    checkCpu(a[1]);
    return ops::toDtype(a[0].toTensor(), toDtype(a[2]), a[4].toBool());
  });
  defN<8>(r, "aten::to.dtype_layout", [](const IValue* a) {
    checkCpu(a[2]);
    Tensor x = a[0].toTensor();
    return ops::toDtype(x, toOptDtype(a[1]).value_or(x.dtype()), a[6].toBool());
  });
  defN<5>(r, "aten::to.other", [](const IValue* a) {
    return ops::toDtype(a[0].toTensor(), a[1].toTensor().dtype(), a[3].toBool());
  });
  defN<5>(r, "aten::to.prim_Device", [](const IValue* a) {
    checkCpu(a[1]);
    Tensor x = a[0].toTensor();
    return ops::toDtype(x, toOptDtype(a[2]).value_or(x.dtype()), a[4].toBool());
  });
  defN<4>(r, "aten::to.prim_dtype", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    return ops::toDtype(x, toOptDtype(a[1]).value_or(x.dtype()), a[3].toBool());
  });
  defN<3>(r, "aten::to.prim_other", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    return a[2].toBool() ? ops::clone(x) : x;
  });
  defFamily(r, "aten::type_as",
            [](const IValue* a) { return ops::toDtype(a[0].toTensor(), a[1].toTensor().dtype()); });
  defN<3>(r, "aten::copy_", [](const IValue* a) {
    Tensor self = a[0].toTensor();
    ops::copy_(self, a[1].toTensor());
    return self;
  });
  defN<2>(r, "aten::copy_.Tensor", [](const IValue* a) {
    Tensor self = a[0].toTensor();
    ops::copy_(self, a[1].toTensor());
    return self;
  });
  for (const char* name : {"aten::copy_.int", "aten::copy_.float"})
    defN<2>(r, name, [](const IValue* a) {
      Tensor self = a[0].toTensor();
      ops::fill_(self, toScalar(a[1]));
      return self;
    });
  defN<2>(r, "aten::fill_.Scalar", [](const IValue* a) {
    Tensor self = a[0].toTensor();
    ops::fill_(self, toScalar(a[1]));
    return self;
  });
  defN<2>(r, "aten::fill_.Tensor", [](const IValue* a) {
    Tensor self = a[0].toTensor();
    ops::fill_(self, a[1].toTensor());
    return self;
  });
  defN<1>(r, "aten::zero_", [](const IValue* a) {
    Tensor self = a[0].toTensor();
    ops::zero_(self);
    return self;
  });
}

// ---- factories (layout/device/pin_memory accepted; CPU only) ----
Tensor hannWindow(int64_t n, bool periodic, std::optional<ScalarType> dtype) {
  const ScalarType dt = dtype.value_or(ops::kDefaultFloat);
  if (!isFloatingType(dt))
    throw Error(fmt::format("hann_window expects floating point dtypes, got: {}", toString(dt)));
  if (n < 0)
    throw Error(
        fmt::format("hann_window requires non-negative window_length, got "
                    "window_length={}",
                    n));
  if (n == 0) return ops::empty({0}, dt);
  if (n == 1) return ops::ones({1}, dt);
  const int64_t m = periodic ? n + 1 : n;
  Tensor w = ops::arange(Scalar(m), dt);
  w = ops::add(ops::mul(ops::cos(ops::mul(w, Scalar(2.0 * M_PI / static_cast<double>(m - 1)))),
                        Scalar(-0.5)),
               Scalar(0.5));
  return periodic ? ops::narrow(w, 0, 0, n) : w;
}

void registerFactoryKernels(KernelRegistry& r) {
  defFamily(r, "aten::zeros", [](const IValue* a) {
    checkCpu(a[3]);
    return ops::zeros(toIntList(a[0]), toOptDtype(a[1]).value_or(ops::kDefaultFloat));
  });
  defFamily(r, "aten::ones", [](const IValue* a) {
    checkCpu(a[3]);
    return ops::ones(toIntList(a[0]), toOptDtype(a[1]).value_or(ops::kDefaultFloat));
  });
  defFamily(r, "aten::empty.memory_format", [](const IValue* a) {
    checkCpu(a[3]);
    return ops::empty(toIntList(a[0]), toOptDtype(a[1]).value_or(ops::kDefaultFloat));
  });
  defFamily(r, "aten::full", [](const IValue* a) {
    checkCpu(a[4]);
    return ops::full(toIntList(a[0]), toScalar(a[1]), toOptDtype(a[2]));
  });
  // scalar_tensor(s, dtype=None): a 0-d tensor of s in dtype, the default float dtype when
  // none is given (whatever s's type).
  defFamily(r, "aten::scalar_tensor", [](const IValue* a) {
    checkCpu(a[3]);
    return ops::full({}, toScalar(a[0]), toOptDtype(a[1]).value_or(ops::kDefaultFloat));
  });
  // hann_window(N, periodic=True): PyTorch's hamming_window(N, periodic, alpha=0.5,
  // beta=0.5): arange(N') * (2 pi / (N' - 1)), cos, * -0.5, + 0.5, in the window's dtype;
  // periodic computes N + 1 points and drops the last. N = 0: empty; N = 1: [1].
  defFamily(r, "aten::hann_window", [](const IValue* a) {
    checkCpu(a[3]);
    return hannWindow(a[0].toInt(), true, toOptDtype(a[1]));
  });
  defFamily(r, "aten::hann_window.periodic", [](const IValue* a) {
    checkCpu(a[4]);
    return hannWindow(a[0].toInt(), a[1].toBool(), toOptDtype(a[2]));
  });
  defFamily(r, "aten::zeros_like",
            [](const IValue* a) { return ops::zerosLike(a[0].toTensor(), toOptDtype(a[1])); });
  defFamily(r, "aten::ones_like",
            [](const IValue* a) { return ops::onesLike(a[0].toTensor(), toOptDtype(a[1])); });
  defFamily(r, "aten::empty_like",
            [](const IValue* a) { return ops::zerosLike(a[0].toTensor(), toOptDtype(a[1])); });
  defFamily(r, "aten::full_like", [](const IValue* a) {
    return ops::fullLike(a[0].toTensor(), toScalar(a[1]), toOptDtype(a[2]));
  });
  defFamily(r, "aten::new_zeros", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    return ops::zeros(toIntList(a[1]), toOptDtype(a[2]).value_or(x.dtype()));
  });
  defFamily(r, "aten::new_ones", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    return ops::ones(toIntList(a[1]), toOptDtype(a[2]).value_or(x.dtype()));
  });
  defFamily(r, "aten::new_empty", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    return ops::empty(toIntList(a[1]), toOptDtype(a[2]).value_or(x.dtype()));
  });
  defFamily(r, "aten::new_full", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    return ops::full(toIntList(a[1]), toScalar(a[2]), toOptDtype(a[3]).value_or(x.dtype()));
  });
  defFamily(r, "aten::arange", [](const IValue* a) {
    checkCpu(a[3]);
    return ops::arange(toScalar(a[0]), toOptDtype(a[1]));
  });
  defFamily(r, "aten::arange.start", [](const IValue* a) {
    checkCpu(a[4]);
    return ops::arange(toScalar(a[0]), toScalar(a[1]), 1, toOptDtype(a[2]));
  });
  defFamily(r, "aten::arange.start_step", [](const IValue* a) {
    checkCpu(a[5]);
    return ops::arange(toScalar(a[0]), toScalar(a[1]), toScalar(a[2]), toOptDtype(a[3]));
  });
  defFamily(r, "aten::linspace", [](const IValue* a) {
    return ops::linspace(toScalar(a[0]), toScalar(a[1]), a[2].toInt(), toOptDtype(a[3]));
  });
  for (const bool lower : {true, false})
    defFamily(r, lower ? "aten::tril_indices" : "aten::triu_indices", [lower](const IValue* a) {
      checkCpu(a[5]);
      return ops::triangleIndices(a[0].toInt(), a[1].toInt(), a[2].toInt(), lower,
                                  toOptDtype(a[3]));
    });
  defFamily(r, "aten::eye", [](const IValue* a) {
    return ops::eye(a[0].toInt(), -1, toOptDtype(a[1]).value_or(ops::kDefaultFloat));
  });
  defFamily(r, "aten::eye.m", [](const IValue* a) {
    return ops::eye(a[0].toInt(), a[1].toInt(), toOptDtype(a[2]).value_or(ops::kDefaultFloat));
  });
  defN<4>(r, "aten::tensor", [](const IValue* a) {
    checkCpu(a[2]);
    return tensorFromList(a[0], toOptDtype(a[1]));
  });
  for (const char* name : {"aten::tensor.float", "aten::tensor.int", "aten::tensor.bool"})
    defN<4>(r, name, [](const IValue* a) {
      checkCpu(a[2]);
      return scalarTensor(a[0], toOptDtype(a[1]));
    });
  defN<3>(r, "aten::as_tensor.list", [](const IValue* a) {
    checkCpu(a[2]);
    return tensorFromList(a[0], toOptDtype(a[1]));
  });
  for (const char* name : {"aten::as_tensor.float", "aten::as_tensor.int", "aten::as_tensor.bool"})
    defN<3>(r, name, [](const IValue* a) {
      checkCpu(a[2]);
      return scalarTensor(a[0], toOptDtype(a[1]));
    });
  defN<3>(r, "aten::as_tensor", [](const IValue* a) {
    checkCpu(a[2]);
    Tensor x = a[0].toTensor();
    auto dt = toOptDtype(a[1]);
    return dt ? ops::toDtype(x, *dt) : x;
  });
  defN<1>(r, "prim::NumToTensor.Scalar", [](const IValue* a) {
    // Python floats become Double tensors here (not the default dtype), as PyTorch's does.
    if (a[0].isDouble()) return Tensor::scalar(a[0].toDouble(), ScalarType::Double);
    if (a[0].isBool()) return Tensor::scalarBool(a[0].toBool());
    return Tensor::scalar(a[0].toInt(), ScalarType::Long);
  });
  defN<1>(r, "prim::NumToTensor.bool",
          [](const IValue* a) { return Tensor::scalarBool(a[0].toBool()); });
  defN<1>(r, "aten::_shape_as_tensor", [](const IValue* a) {
    return Tensor::fromVector(a[0].toTensor().sizes(), {a[0].toTensor().dim()});
  });
  defN<2>(r, "aten::_dim_arange", [](const IValue* a) {
    return ops::arange(Scalar(a[0].toTensor().size(a[1].toInt())), ScalarType::Long);
  });
}

// ---- metadata ----
void registerMetadataKernels(KernelRegistry& r) {
  defN<1>(r, "aten::size", [](const IValue* a) { return intList(a[0].toTensor().sizes()); });
  defN<2>(r, "aten::size.int",
          [](const IValue* a) { return IValue(a[0].toTensor().size(a[1].toInt())); });
  defN<1>(r, "aten::stride", [](const IValue* a) { return intList(a[0].toTensor().strides()); });
  defN<2>(r, "aten::stride.int",
          [](const IValue* a) { return IValue(a[0].toTensor().stride(a[1].toInt())); });
  defN<1>(r, "aten::dim", [](const IValue* a) { return IValue(a[0].toTensor().dim()); });
  defN<1>(r, "aten::numel", [](const IValue* a) { return IValue(a[0].toTensor().numel()); });
  defN<1>(r, "aten::len.Tensor", [](const IValue* a) {
    Tensor t = a[0].toTensor();
    if (t.dim() == 0) throw Error("len() of a 0-d tensor");
    return IValue(t.size(0));
  });
  defN<1>(r, "aten::is_floating_point",
          [](const IValue* a) { return IValue(isFloatingType(a[0].toTensor().dtype())); });
  defN<1>(r, "aten::is_contiguous",
          [](const IValue* a) { return IValue(a[0].toTensor().isContiguous()); });
  defN<1>(r, "aten::Int.Tensor", [](const IValue* a) { return IValue(a[0].toTensor().itemInt()); });
  defN<1>(r, "aten::Float.Tensor",
          [](const IValue* a) { return IValue(a[0].toTensor().itemDouble()); });
  defN<1>(r, "aten::Bool.Tensor",
          [](const IValue* a) { return IValue(a[0].toTensor().itemBool()); });
  defN<1>(r, "aten::ScalarImplicit", [](const IValue* a) { return itemIValue(a[0].toTensor()); });
  defN<1>(r, "aten::item", [](const IValue* a) { return itemIValue(a[0].toTensor()); });
  defN<1>(r, "prim::dtype",
          [](const IValue* a) { return IValue(static_cast<int64_t>(a[0].toTensor().dtype())); });
  defN<1>(r, "prim::device", [](const IValue* a) { return IValue(a[0].toTensor().device()); });
  defN<1>(r, "prim::layout", [](const IValue*) { return IValue(int64_t{0}); });
  defN<1>(r, "prim::is_cuda", [](const IValue*) { return IValue(false); });
  // is_pinned: CPU tensors here are never in page-locked memory.
  defN<2>(r, "aten::is_pinned", [](const IValue*) { return IValue(false); });
  defN<1>(r, "prim::is_cpu", [](const IValue*) { return IValue(true); });
  defN<1>(r, "prim::is_nested",  // Note [Nested tensors] in core/tensor.h
          [](const IValue* a) { return IValue(a[0].toTensor().isNested()); });
  for (const char* name :
       {"prim::is_sparse", "prim::is_sparse_csr", "prim::is_mkldnn", "prim::is_xpu", "prim::is_mps",
        "prim::is_meta", "prim::is_vulkan", "prim::is_ipu", "prim::is_ort"})
    defN<1>(r, name, [](const IValue*) { return IValue(false); });
  defN<1>(r, "prim::is_quantized",
          [](const IValue* a) { return IValue(a[0].toTensor().isQuantized()); });
  defN<1>(r, "prim::requires_grad",
          [](const IValue* a) { return IValue(a[0].toTensor().requiresGrad()); });
}

}  // namespace

void registerShapeKernels(KernelRegistry& r) {
  registerViewKernels(r);
  registerSplitKernels(r);
  registerCopyAndIndexKernels(r);
  registerConversionKernels(r);
  registerFactoryKernels(r);
  registerMetadataKernels(r);
}

}  // namespace torchless
