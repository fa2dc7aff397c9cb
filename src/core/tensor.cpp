#include "core/tensor.h"

#include "core/error.h"
#include "core/ivalue.h"
#include "core/scalar.h"
#include "core/strided_copy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

namespace torchless {

IntList contiguousStrides(const IntList& sizes) {
  IntList strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

int64_t checkedNumel(const IntList& sizes) {
  // Issue #18: the kernels' iterator holds at most 63 dimensions (ops/tensor_iterator.cpp);
  // a tensor with more is refused where it is made (reader, .npy, reshape), not asserted later.
  constexpr size_t kMaxDims = 63;
  if (sizes.size() > kMaxDims)
    throw Error(
        fmt::format("tensors of more than {} dimensions are not supported (this one has "
                    "{})",
                    kMaxDims, sizes.size()));
  int64_t n = 1;
  // The contiguous strides multiply the sizes with zeros read as ones (contiguousStrides), so
  // an empty tensor such as [0, 2^40, 2^40] has elements to spare but strides that overflow.
  int64_t extent = 1;
  for (int64_t s : sizes) {
    if (s < 0) throw Error(fmt::format("negative size in {}", sizesToString(sizes)));
    if (s != 0 && n > std::numeric_limits<int64_t>::max() / s)
      throw Error(fmt::format("number of elements of {} overflows int64", sizesToString(sizes)));
    n *= s;
    if (s > 1 && extent > std::numeric_limits<int64_t>::max() / s)
      throw Error(fmt::format("the strides of {} overflow int64", sizesToString(sizes)));
    extent *= std::max<int64_t>(s, 1);
  }
  return n;
}

std::string sizesToString(const IntList& sizes) {
  return fmt::format("[{}]", fmt::join(sizes, ", "));
}

Tensor Tensor::empty(const IntList& sizes, ScalarType dtype, Device device) {
  int64_t n = checkedNumel(sizes);
  size_t item = elementSize(dtype);
  if (static_cast<uint64_t>(n) > std::numeric_limits<size_t>::max() / item)
    throw Error(fmt::format("tensor of {} elements overflows size_t", n));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate(static_cast<size_t>(n) * item);
  impl->sizes = sizes;
  impl->strides = contiguousStrides(sizes);
  impl->dtype = dtype;
  impl->device = device;
  return Tensor(std::move(impl));
}

Tensor Tensor::fromStorage(Storage storage, int64_t storageOffset, IntList sizes, IntList strides,
                           ScalarType dtype, Device device) {
  if (sizes.size() != strides.size())
    throw Error(fmt::format("sizes {} and strides {} differ in length", sizesToString(sizes),
                            sizesToString(strides)));
  if (storageOffset < 0) throw Error(fmt::format("negative storage offset {}", storageOffset));
  int64_t n = checkedNumel(sizes);
  size_t item = elementSize(dtype);
  if (n > 0) {
    // Highest element index reachable: offset + sum((size-1)*stride); strides must be >= 0.
    int64_t maxIndex = storageOffset;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (strides[i] < 0) throw Error(fmt::format("negative stride in {}", sizesToString(strides)));
      int64_t extent = sizes[i] - 1;
      if (strides[i] != 0 && extent > (std::numeric_limits<int64_t>::max() - maxIndex) / strides[i])
        throw Error("tensor extent overflows int64");
      maxIndex += extent * strides[i];
    }
    uint64_t available = storage.nbytes() / item;
    if (static_cast<uint64_t>(maxIndex) >= available)
      throw Error(fmt::format(
          "tensor of size {} with strides {} at offset {} reaches element {} but its storage "
          "holds {} elements",
          sizesToString(sizes), sizesToString(strides), storageOffset, maxIndex, available));
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->storageOffset = storageOffset;
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->dtype = dtype;
  impl->device = device;
  return Tensor(std::move(impl));
}

Tensor Tensor::scalar(double v, ScalarType dtype) {
  Tensor t = empty({}, ScalarType::Double);
  *t.data<double>() = v;
  return dtype == ScalarType::Double ? t : t.to(dtype);
}

Tensor Tensor::scalar(int64_t v, ScalarType dtype) {
  Tensor t = empty({}, ScalarType::Long);
  *t.data<int64_t>() = v;
  return dtype == ScalarType::Long ? t : t.to(dtype);
}

Tensor Tensor::scalarBool(bool v) {
  Tensor t = empty({}, ScalarType::Bool);
  *t.data<bool>() = v;
  return t;
}

Tensor Tensor::fromVector(const std::vector<float>& values, const IntList& sizes) {
  Tensor t = empty(sizes, ScalarType::Float);
  TL_CHECK(static_cast<int64_t>(values.size()) == t.numel(), "fromVector: {} values for size {}",
           values.size(), sizesToString(sizes));
  if (!values.empty())  // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(t.rawData(), values.data(), values.size() * sizeof(float));
  return t;
}

Tensor Tensor::fromVector(const std::vector<int64_t>& values, const IntList& sizes) {
  Tensor t = empty(sizes, ScalarType::Long);
  TL_CHECK(static_cast<int64_t>(values.size()) == t.numel(), "fromVector: {} values for size {}",
           values.size(), sizesToString(sizes));
  if (!values.empty())  // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(t.rawData(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

static int64_t wrapDim(int64_t dim, int64_t ndim) {
  int64_t d = dim < 0 ? dim + ndim : dim;
  if (d < 0 || d >= ndim)
    throw Error(
        fmt::format("Dimension out of range (expected to be in range of [{}, {}], but got {})",
                    -ndim, ndim - 1, dim));
  return d;
}

int64_t Tensor::size(int64_t dim) const { return impl_->sizes[wrapDim(dim, this->dim())]; }
int64_t Tensor::stride(int64_t dim) const { return impl_->strides[wrapDim(dim, this->dim())]; }

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : impl_->sizes) n *= s;
  return n;
}

bool Tensor::isContiguous() const {
  int64_t expected = 1;
  for (size_t i = impl_->sizes.size(); i-- > 0;) {
    int64_t s = impl_->sizes[i];
    if (s == 0) return true;
    if (s != 1) {
      if (impl_->strides[i] != expected) return false;
      expected *= s;
    }
  }
  return true;
}

void* Tensor::rawData() const {
  return impl_->storage.data() + impl_->storageOffset * static_cast<int64_t>(itemsize());
}

namespace {
// Calls fn(elementPointer) for every element in row-major order.
template <typename Fn>
void forEachElement(const Tensor& t, Fn&& fn) {
  int64_t n = t.numel();
  if (n == 0) return;
  const auto item = static_cast<int64_t>(t.itemsize());
  auto* base = static_cast<std::byte*>(t.rawData());
  if (t.isContiguous()) {
    for (int64_t i = 0; i < n; ++i) fn(base + i * item);
    return;
  }
  const auto& sizes = t.sizes();
  const auto& strides = t.strides();
  IntList idx(sizes.size(), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    fn(base + off * item);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) {
        off += strides[d];
        break;
      }
      off -= (sizes[d] - 1) * strides[d];
      idx[d] = 0;
    }
  }
}
}  // namespace

Tensor Tensor::contiguous() const {
  if (isContiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(sizes(), dtype(), device());
  out.impl_->requiresGrad = false;
  out.impl_->quantizer = impl_->quantizer;
  copyToDense(out.rawData(), rawData(), sizes(), strides(), itemsize());
  return out;
}

Tensor Tensor::asStrided(IntList sizes, IntList strides, int64_t storageOffset) const {
  Tensor t = fromStorage(impl_->storage, storageOffset, std::move(sizes), std::move(strides),
                         impl_->dtype, impl_->device);
  t.impl_->quantizer = impl_->quantizer;
  return t;
}

Tensor Tensor::alias() const {
  return asStrided(impl_->sizes, impl_->strides, impl_->storageOffset);
}

namespace {
// castTo (core/scalar.h) for real types; complex values keep or drop their imaginary part.
template <typename To, typename From>
To castValue(From v) {
  constexpr bool fromComplex =
      std::is_same_v<From, std::complex<float>> || std::is_same_v<From, std::complex<double>>;
  constexpr bool toComplex =
      std::is_same_v<To, std::complex<float>> || std::is_same_v<To, std::complex<double>>;
  if constexpr (toComplex) {
    if constexpr (fromComplex)
      return To(static_cast<typename To::value_type>(v.real()),
                static_cast<typename To::value_type>(v.imag()));
    else
      return To(castTo<typename To::value_type>(v));
  } else if constexpr (fromComplex) {
    if constexpr (std::is_same_v<To, bool>)
      return v != From{};
    else
      return castTo<To>(static_cast<double>(v.real()));
  } else {
    return castTo<To>(v);
  }
}
}  // namespace

Tensor Tensor::to(ScalarType target) const {
  if (target == dtype()) return clone();
  Tensor out = empty(sizes(), target, device());
  dispatchDtype(dtype(), [&](auto fromTag) {
    using From = decltype(fromTag);
    dispatchDtype(target, [&](auto toTag) {
      using To = decltype(toTag);
      To* dst = out.data<To>();
      forEachElement(*this, [&](const std::byte* src) {
        From v;
        std::memcpy(&v, src, sizeof(From));
        *dst++ = castValue<To>(v);
      });
    });
  });
  return out;
}

double Tensor::doubleAt(int64_t flatIndex) const {
  TL_CHECK(flatIndex >= 0 && flatIndex < numel(), "index {} out of range for {} elements",
           flatIndex, numel());
  int64_t off = impl_->storageOffset;
  int64_t rem = flatIndex;
  for (size_t d = impl_->sizes.size(); d-- > 0;) {
    off += (rem % impl_->sizes[d]) * impl_->strides[d];
    rem /= impl_->sizes[d];
  }
  const std::byte* p = impl_->storage.data() + off * static_cast<int64_t>(itemsize());
  return dispatchDtype(dtype(), [&](auto tag) -> double {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, p, sizeof(T));
    return castValue<double>(v);
  });
}

int64_t Tensor::intAt(int64_t flatIndex) const {
  if (isIntegralType(dtype(), true)) {
    int64_t off = impl_->storageOffset;
    int64_t rem = flatIndex;
    TL_CHECK(flatIndex >= 0 && flatIndex < numel(), "index {} out of range for {} elements",
             flatIndex, numel());
    for (size_t d = impl_->sizes.size(); d-- > 0;) {
      off += (rem % impl_->sizes[d]) * impl_->strides[d];
      rem /= impl_->sizes[d];
    }
    const std::byte* p = impl_->storage.data() + off * static_cast<int64_t>(itemsize());
    return dispatchDtype(dtype(), [&](auto tag) -> int64_t {
      using T = decltype(tag);
      T v;
      std::memcpy(&v, p, sizeof(T));
      return castValue<int64_t>(v);
    });
  }
  return static_cast<int64_t>(doubleAt(flatIndex));
}

double Tensor::itemDouble() const {
  TL_CHECK(numel() == 1, "a Tensor with {} elements cannot be converted to Scalar", numel());
  return doubleAt(0);
}
int64_t Tensor::itemInt() const {
  TL_CHECK(numel() == 1, "a Tensor with {} elements cannot be converted to Scalar", numel());
  return intAt(0);
}
bool Tensor::itemBool() const { return itemDouble() != 0.0; }

// ---- printing, following torch/_tensor_str.py (precision 4, linewidth 80, threshold 1000,
// edgeitems 3) ----
namespace {

constexpr int64_t kEdgeItems = 3;

// Formatter of _tensor_str.py: the mode and width come from the nonzero finite values shown.
struct Formatter {
  bool floating = false;
  bool boolean = false;
  bool intMode = true;
  bool sciMode = false;
  size_t width = 1;

  std::string raw(double v) const {
    if (boolean) return v != 0 ? "True" : "False";
    if (!floating) return fmt::format("{}", static_cast<int64_t>(v));
    if (sciMode) {
      if (std::isnan(v)) return "nan";
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      return fmt::format("{:.4e}", v);
    }
    if (intMode) {
      if (std::isnan(v)) return "nan";
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      return fmt::format("{:.0f}.", v);
    }
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return fmt::format("{:.4f}", v);
  }
  std::string format(double v) const {
    std::string s = raw(v);
    return s.size() < width ? std::string(width - s.size(), ' ') + s : s;
  }
};

Formatter makeFormatter(const std::vector<double>& values, ScalarType dtype) {
  Formatter f;
  f.floating = isFloatingType(dtype);
  f.boolean = dtype == ScalarType::Bool;
  if (!f.floating) {
    for (double v : values) f.width = std::max(f.width, f.raw(v).size());
    return f;
  }
  std::vector<double> nz;
  for (double v : values)
    if (std::isfinite(v) && v != 0) nz.push_back(v);
  if (nz.empty()) return f;
  double maxAbs = 0, minAbs = std::numeric_limits<double>::infinity();
  for (double v : nz) {
    if (std::ceil(v) != v) f.intMode = false;
    maxAbs = std::max(maxAbs, std::fabs(v));
    minAbs = std::min(minAbs, std::fabs(v));
  }
  if (maxAbs / minAbs > 1000. || maxAbs > 1e8 || (!f.intMode && minAbs < 1e-4)) f.sciMode = true;
  for (double v : nz) f.width = std::max(f.width, f.raw(v).size());
  return f;
}

// The indices shown along a dim of size n: all, or the edge items around a "...".
std::vector<int64_t> shownIndices(int64_t n, bool summarize) {
  std::vector<int64_t> idx;
  if (summarize && n > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
    idx.push_back(-1);
    for (int64_t i = n - kEdgeItems; i < n; ++i) idx.push_back(i);
  } else {
    for (int64_t i = 0; i < n; ++i) idx.push_back(i);
  }
  return idx;
}

void collectShown(const Tensor& t, size_t dim, int64_t flat, bool summarize,
                  std::vector<double>& out) {
  const auto& sizes = t.sizes();
  int64_t inner = 1;
  for (size_t d = dim + 1; d < sizes.size(); ++d) inner *= sizes[d];
  for (int64_t i : shownIndices(sizes[dim], summarize)) {
    if (i < 0) continue;
    if (dim + 1 == sizes.size())
      out.push_back(t.doubleAt(flat + i));
    else
      collectShown(t, dim + 1, flat + i * inner, summarize, out);
  }
}

void printRec(std::string& out, const Tensor& t, size_t dim, int64_t flat, const Formatter& f,
              size_t indent, bool summarize) {
  const auto& sizes = t.sizes();
  const size_t nd = sizes.size();
  int64_t inner = 1;
  for (size_t d = dim + 1; d < nd; ++d) inner *= sizes[d];
  const auto indices = shownIndices(sizes[dim], summarize);
  out += "[";
  if (dim + 1 == nd) {
    const size_t perLine = std::max<size_t>(1, (80 - std::min<size_t>(indent, 79)) / (f.width + 2));
    for (size_t k = 0; k < indices.size(); ++k) {
      if (k > 0) out += k % perLine == 0 ? ",\n" + std::string(indent + 1, ' ') : ", ";
      out += indices[k] < 0 ? " ..." : f.format(t.doubleAt(flat + indices[k]));
    }
  } else {
    const std::string sep = "," + std::string(nd - dim - 1, '\n') + std::string(indent + 1, ' ');
    for (size_t k = 0; k < indices.size(); ++k) {
      if (k > 0) out += sep;
      if (indices[k] < 0)
        out += "...";
      else
        printRec(out, t, dim + 1, flat + indices[k] * inner, f, indent + 1, summarize);
    }
  }
  out += "]";
}

}  // namespace

namespace {
/// The real values of a quantized tensor ((q - zp) * scale per tensor or per channel), float32.
Tensor dequantizedForPrint(const Tensor& q) {
  const QuantizerInfo& info = *q.quantizer();
  const ScalarType under = q.dtype() == ScalarType::QUInt8  ? ScalarType::Byte
                           : q.dtype() == ScalarType::QInt8 ? ScalarType::Char
                                                            : ScalarType::Int;
  const Tensor ints =
      Tensor::fromStorage(q.storage(), q.storageOffset(), q.sizes(), q.strides(), under);
  Tensor out = Tensor::empty(q.sizes(), ScalarType::Float);
  float* o = out.data<float>();
  const bool perChannel = info.scales != nullptr;
  const int64_t axis = perChannel ? info.axis : 0;
  int64_t inner = 1;
  if (perChannel)
    for (int64_t d = axis + 1; d < q.dim(); ++d) inner *= q.size(d);
  for (int64_t i = 0; i < q.numel(); ++i) {
    double s = info.scale;
    int64_t z = info.zeroPoint;
    if (perChannel) {
      const int64_t c = (i / inner) % q.size(axis);
      s = Tensor(info.scales).doubleAt(c);
      z = Tensor(info.zeroPoints).intAt(c);
    }
    o[i] = static_cast<float>(s) * static_cast<float>(ints.intAt(i) - z);
  }
  return out;
}
}  // namespace

std::string Tensor::toString() const {
  if (!defined()) return "None";
  const ScalarType dt = dtype();
  if (isQuantized() && dt != ScalarType::QUInt4x2 && dt != ScalarType::QUInt2x4) {
    // PyTorch prints the real values, then size, dtype and the quantizer.
    std::string body = dequantizedForPrint(*this).toString();
    body.pop_back();  // ')'
    const QuantizerInfo& info = *quantizer();
    std::string size = dim() == 1 ? fmt::format("({},)", sizes()[0])
                                  : fmt::format("({})", fmt::join(sizes(), ", "));
    std::string q;
    if (info.scales) {
      q = fmt::format(
          ",\n       quantization_scheme=torch.per_channel_affine,\n       scale={},\n"
          "       zero_point={}, axis={}",
          Tensor(info.scales).toString(), Tensor(info.zeroPoints).toString(), info.axis);
    } else {
      q = fmt::format(
          ",\n       quantization_scheme=torch.per_tensor_affine, scale={}, zero_point={}",
          IValue(info.scale).repr(), info.zeroPoint);
    }
    return fmt::format("{}, size={}, dtype=torch.{}{})", body, size, dtypeName(dt), q);
  }
  std::string suffix;
  if (dt != ScalarType::Float && dt != ScalarType::Long && dt != ScalarType::Bool)
    suffix += fmt::format(", dtype=torch.{}", dtypeName(dt));
  if (requiresGrad()) suffix += ", requires_grad=True";
  const int64_t n = numel();
  if (n == 0) {
    std::string sizeSuffix;
    if (dim() != 1) sizeSuffix = fmt::format(", size=({})", fmt::join(sizes(), ", "));
    return "tensor([]" + sizeSuffix + suffix + ")";
  }
  if (isComplexType(dt) || isQuantizedType(dt))
    return fmt::format("tensor(<{} values of dtype {}>, size={})", n, dtypeName(dt),
                       sizesToString(sizes()));
  if (dim() == 0) {
    Formatter f = makeFormatter({doubleAt(0)}, dt);
    return "tensor(" + f.format(doubleAt(0)) + suffix + ")";
  }
  const bool summarize = n > 1000;
  std::vector<double> shown;
  collectShown(*this, 0, 0, summarize, shown);
  Formatter f = makeFormatter(shown, dt);
  std::string body;
  printRec(body, *this, 0, 0, f, 7, summarize);
  return "tensor(" + body + suffix + ")";
}

}  // namespace torchless
