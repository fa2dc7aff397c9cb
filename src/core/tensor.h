#pragma once
// Tensor: a strided view of a Storage (c10::TensorImpl's model). Copying a Tensor shares it;
// views share the Storage with their own sizes, strides and storage offset (in elements).
//
//   Tensor t = Tensor::empty({2, 3}, ScalarType::Float);   // contiguous, uninitialized
//   Tensor v = t.asStrided({3, 2}, {1, 3}, 0);             // transposed view, same bytes
//   Tensor c = v.contiguous();                             // new storage, row-major

#include "core/device.h"
#include "core/error.h"
#include "core/half.h"
#include "core/scalar_type.h"
#include "core/storage.h"

#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace torchless {

using IntList = std::vector<int64_t>;

/// Quantization parameters of a quantized tensor (per-tensor or per-channel affine).
struct QuantizerInfo {
  enum class Scheme : int8_t {
    PerTensorAffine = 0,
    PerChannelAffine = 1,
    PerTensorSymmetric = 2,
    PerChannelSymmetric = 3,
    PerChannelAffineFloatQParams = 4
  };
  Scheme scheme = Scheme::PerTensorAffine;
  double scale = 1.0;
  int64_t zeroPoint = 0;
  std::shared_ptr<struct TensorImpl> scales;      // per-channel: float64 [C]
  std::shared_ptr<struct TensorImpl> zeroPoints;  // per-channel: int64 [C]
  int64_t axis = 0;
};

/// The shared state of a Tensor. Not used directly.
struct TensorImpl {
  Storage storage;
  int64_t storageOffset = 0;
  IntList sizes;
  IntList strides;
  ScalarType dtype = ScalarType::Float;
  Device device;
  bool requiresGrad = false;
  std::shared_ptr<QuantizerInfo> quantizer;  // set for quantized dtypes
  // Set for a nested tensor made from a padding mask: the length of each sequence (Note
  // [Nested tensors]).
  std::shared_ptr<const std::vector<int64_t>> nestedLengths;
};

// Note [Nested tensors]
// nn.TransformerEncoder's fast path packs a padded batch [B, T, E] into a NestedTensor of B
// sequences [len_i, E] (aten::_nested_tensor_from_mask), runs its layers on it
// (aten::_transformer_encoder_layer_fwd) and pads it again (aten::to_padded_tensor). Here a
// nested tensor is the padded batch itself, its padded rows zero, with the lengths beside it;
// those three kernels and prim::is_nested read them, and any other op sees a plain tensor
// (views and copies drop the lengths). Freezing rewrites a traced chain into ops on the padded
// batch (passes/lower_nested.cpp). A scripted encoder packs its batch only when the mask is
// left-aligned, which the mask's values decide call by call: there the nested values stay with
// the interpreter (Note [Values that may be nested] in passes/lower_nested.cpp), and ONNX
// export takes the dense path (convert/onnx/prepare.cpp takeDenseEncoderPath).

/// at::Tensor's value semantics: a handle; copies alias. An undefined Tensor has no impl.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  /// New contiguous tensor with uninitialized elements (as torch.empty; ops::zeros fills). Throws
  /// torchless::Error on negative sizes or a byte count that overflows.
  static Tensor empty(const IntList& sizes, ScalarType dtype, Device device = Device());
  /// A tensor over an existing storage (views, archive records). Checks that every element
  /// it can reach lies inside the storage; throws torchless::Error naming the problem if not.
  static Tensor fromStorage(Storage storage, int64_t storageOffset, IntList sizes, IntList strides,
                            ScalarType dtype, Device device = Device());
  /// 0-dim tensors holding one value (torch.tensor(v)).
  static Tensor scalar(double v, ScalarType dtype = ScalarType::Double);
  static Tensor scalar(int64_t v, ScalarType dtype = ScalarType::Long);
  static Tensor scalarBool(bool v);
  /// A 1-d or n-d float tensor from values (tests and constants).
  static Tensor fromVector(const std::vector<float>& values, const IntList& sizes);
  static Tensor fromVector(const std::vector<int64_t>& values, const IntList& sizes);

  bool defined() const { return impl_ != nullptr; }
  const IntList& sizes() const { return impl_->sizes; }
  const IntList& strides() const { return impl_->strides; }
  int64_t size(int64_t dim) const;    // negative dims wrap; throws on out of range
  int64_t stride(int64_t dim) const;  // negative dims wrap; throws on out of range
  int64_t dim() const { return static_cast<int64_t>(impl_->sizes.size()); }
  int64_t numel() const;
  int64_t storageOffset() const { return impl_->storageOffset; }
  ScalarType dtype() const { return impl_->dtype; }
  ScalarType scalarType() const { return impl_->dtype; }
  size_t itemsize() const { return elementSize(impl_->dtype); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * itemsize(); }
  const Device& device() const { return impl_->device; }
  bool requiresGrad() const { return impl_->requiresGrad; }
  void setRequiresGrad(bool r) { impl_->requiresGrad = r; }
  const Storage& storage() const { return impl_->storage; }
  bool isQuantized() const { return impl_->quantizer != nullptr; }
  const std::shared_ptr<QuantizerInfo>& quantizer() const { return impl_->quantizer; }
  void setQuantizer(std::shared_ptr<QuantizerInfo> q) { impl_->quantizer = std::move(q); }
  /// A nested tensor of sequences [len_i, ...] stored padded (Note [Nested tensors]).
  bool isNested() const { return impl_->nestedLengths != nullptr; }
  const std::shared_ptr<const std::vector<int64_t>>& nestedLengths() const {
    return impl_->nestedLengths;
  }
  void setNestedLengths(std::shared_ptr<const std::vector<int64_t>> lengths) {
    impl_->nestedLengths = std::move(lengths);
  }

  /// Row-major with no gaps (size-1 dims may have any stride), as is_contiguous().
  bool isContiguous() const;
  /// This tensor if contiguous, else a contiguous copy.
  Tensor contiguous() const;
  /// A copy with its own contiguous storage.
  Tensor clone() const;
  /// A view over the same storage; bounds are checked as in fromStorage.
  Tensor asStrided(IntList sizes, IntList strides, int64_t storageOffset) const;
  /// Same storage, same everything: `t.alias()` shares the impl's storage but not its metadata.
  Tensor alias() const;
  /// A copy converted to dtype (values cast as static_cast, bool as != 0).
  Tensor to(ScalarType dtype) const;

  /// Pointer to the first element (storage data + offset * itemsize).
  void* rawData() const;
  template <typename T>
  T* data() const {
    return static_cast<T*>(rawData());
  }
  /// The element at a flat row-major index, as double / int64 / complex (any real dtype).
  double doubleAt(int64_t flatIndex) const;
  int64_t intAt(int64_t flatIndex) const;
  /// The single value of a one-element tensor (Tensor.item()). Throws if numel != 1.
  double itemDouble() const;
  int64_t itemInt() const;
  bool itemBool() const;

  /// What print(tensor) prints in PyTorch: `tensor([[1., 2.],\n        [3., 4.]])`,
  /// with dtype=/requires_grad= suffixes when PyTorch shows them.
  std::string toString() const;

  /// Identity: same impl (the same tensor object, not just the same storage).
  bool is(const Tensor& o) const { return impl_ == o.impl_; }
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

/// Contiguous strides for sizes (row-major).
IntList contiguousStrides(const IntList& sizes);
/// Product of sizes; throws torchless::Error on overflow or negative sizes.
int64_t checkedNumel(const IntList& sizes);
/// "[2, 3]" as PyTorch prints sizes in messages.
std::string sizesToString(const IntList& sizes);

/// The dtypes a dtype switch covers: the real ones (Float, Double, Half, BFloat16, Long, Int,
/// Short, Char, Byte, Bool), and with kRealAndComplex also ComplexFloat and ComplexDouble.
enum class DtypeSet { kReal, kRealAndComplex };

/// The one dtype switch that dispatchDtype and the kernels' ops::dispatchAll (ops/dispatch.h)
/// share: calls `fn` with a value of the C++ type of `dtype` (a tag: `decltype(tag)` is
/// scalar_t) when `dtype` is in `kSet`; otherwise calls `unsupported()`, which must throw.
template <DtypeSet kSet, typename Fn, typename Unsupported>
decltype(auto) switchDtype(ScalarType dtype, Fn&& fn, Unsupported&& unsupported) {
  switch (dtype) {
    case ScalarType::Float: return fn(float{});
    case ScalarType::Double: return fn(double{});
    case ScalarType::Half: return fn(Half{});
    case ScalarType::BFloat16: return fn(BFloat16{});
    case ScalarType::Long: return fn(int64_t{});
    case ScalarType::Int: return fn(int32_t{});
    case ScalarType::Short: return fn(int16_t{});
    case ScalarType::Char: return fn(int8_t{});
    case ScalarType::Byte: return fn(uint8_t{});
    case ScalarType::Bool: return fn(bool{});
    case ScalarType::ComplexFloat:
      if constexpr (kSet == DtypeSet::kRealAndComplex) return fn(std::complex<float>{});
      break;
    case ScalarType::ComplexDouble:
      if constexpr (kSet == DtypeSet::kRealAndComplex) return fn(std::complex<double>{});
      break;
    default: break;
  }
  unsupported();
  __builtin_unreachable();
}

/// Calls `fn` with a value of the C++ type of `dtype` (a tag: `decltype(tag)` is scalar_t).
/// Covers the dtypes kernels compute in; throws torchless::Error for the rest.
template <typename Fn>
decltype(auto) dispatchDtype(ScalarType dtype, Fn&& fn) {
  return switchDtype<DtypeSet::kRealAndComplex>(dtype, std::forward<Fn>(fn), [dtype] {
    throw Error(fmt::format("operation not supported for dtype {}", dtypeName(dtype)));
  });
}

}  // namespace torchless
