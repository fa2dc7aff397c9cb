#pragma once
// torchless's C++ API: libtorch's inference surface (c10::IValue, at::Tensor, torch::jit::Module,
// factories, operator<<), header-only over the C API (torchless/c_api.h). C++17, the standard
// library only. Programs written against libtorch include <torch/script.h> or <torch/torch.h>
// from include/torchless/compat (CMake target torchless::compat); this header is what those
// include.
//
//   torch::jit::script::Module m = torch::jit::load("model.pt");
//   std::vector<torch::jit::IValue> inputs{torch::ones({1, 3, 224, 224})};
//   at::Tensor y = m.forward(inputs).toTensor();
//   std::cout << y.slice(1, 0, 5) << '\n';          // prints as libtorch prints
//
// Semantics follow libtorch 1.13: tensors and values are handles that share their data;
// every failure throws c10::Error (what() and msg() carry torchless's message). What is not
// provided fails at compile time. The operators of the op table that have a CPU kernel come
// from <torchless/cxx/ops_generated.h>, written at build time by scripts/gen_compat_ops.py.
// Only the CPU exists: torch::cuda::is_available() is false and moving to CUDA throws.
//
// Difference from libtorch: operator<< prints a tensor as libtorch prints into a stream in its
// default state (the stream's own precision or flags are not used).

#include <torchless/c_api.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace c10 {

/// c10::Error: every failure of the API (what() is the message; there is no backtrace).
class Error : public std::exception {
 public:
  explicit Error(std::string msg) : msg_(std::move(msg)) {}
  const char* what() const noexcept override { return msg_.c_str(); }
  const std::string& msg() const { return msg_; }
  const char* what_without_backtrace() const noexcept { return msg_.c_str(); }

 private:
  std::string msg_;
};
class IndexError : public Error {
  using Error::Error;
};
class ValueError : public Error {
  using Error::Error;
};
class TypeError : public Error {
  using Error::Error;
};
class NotImplementedError : public Error {
  using Error::Error;
};

template <typename T>
using optional = std::optional<T>;
using std::nullopt;
using std::nullopt_t;
using string_view = std::string_view;

/// Numbered as in libtorch (and tl_dtype).
enum class ScalarType : int8_t {
  Byte = 0,
  Char = 1,
  Short = 2,
  Int = 3,
  Long = 4,
  Half = 5,
  Float = 6,
  Double = 7,
  ComplexHalf = 8,
  ComplexFloat = 9,
  ComplexDouble = 10,
  Bool = 11,
  QInt8 = 12,
  QUInt8 = 13,
  QInt32 = 14,
  BFloat16 = 15,
  Undefined = 127
};
constexpr ScalarType kByte = ScalarType::Byte;
constexpr ScalarType kChar = ScalarType::Char;
constexpr ScalarType kShort = ScalarType::Short;
constexpr ScalarType kInt = ScalarType::Int;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kUInt8 = ScalarType::Byte;
constexpr ScalarType kInt8 = ScalarType::Char;
constexpr ScalarType kInt16 = ScalarType::Short;
constexpr ScalarType kInt32 = ScalarType::Int;
constexpr ScalarType kInt64 = ScalarType::Long;
constexpr ScalarType kFloat16 = ScalarType::Half;
constexpr ScalarType kFloat32 = ScalarType::Float;
constexpr ScalarType kFloat64 = ScalarType::Double;

inline const char* toString(ScalarType t) {
  switch (t) {
    case ScalarType::Byte: return "Byte";
    case ScalarType::Char: return "Char";
    case ScalarType::Short: return "Short";
    case ScalarType::Int: return "Int";
    case ScalarType::Long: return "Long";
    case ScalarType::Half: return "Half";
    case ScalarType::Float: return "Float";
    case ScalarType::Double: return "Double";
    case ScalarType::ComplexHalf: return "ComplexHalf";
    case ScalarType::ComplexFloat: return "ComplexFloat";
    case ScalarType::ComplexDouble: return "ComplexDouble";
    case ScalarType::Bool: return "Bool";
    case ScalarType::QInt8: return "QInt8";
    case ScalarType::QUInt8: return "QUInt8";
    case ScalarType::QInt32: return "QInt32";
    case ScalarType::BFloat16: return "BFloat16";
    default: return "UNKNOWN_SCALAR";
  }
}
inline std::ostream& operator<<(std::ostream& out, ScalarType t) { return out << toString(t); }
inline size_t elementSize(ScalarType t) { return tl_dtype_size(static_cast<tl_dtype>(t)); }
inline bool isFloatingType(ScalarType t) {
  return t == kFloat || t == kDouble || t == kHalf || t == kBFloat16;
}
inline bool isIntegralType(ScalarType t, bool includeBool) {
  return t == kByte || t == kChar || t == kShort || t == kInt || t == kLong ||
         (includeBool && t == kBool);
}

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;

/// c10::Device. Only the CPU runs; CUDA devices can be named (and are refused when used).
class Device {
 public:
  Device(DeviceType type, int8_t index = -1) : type_(type), index_(index) {}  // NOLINT
  /// "cpu", "cuda", "cuda:1".
  Device(const std::string& s) {  // NOLINT
    std::string t = s.substr(0, s.find(':'));
    if (t == "cpu")
      type_ = kCPU;
    else if (t == "cuda")
      type_ = kCUDA;
    else
      throw Error("Expected one of cpu, cuda device type at start of device string: " + s);
    if (s.find(':') != std::string::npos)
      index_ = static_cast<int8_t>(std::stoi(s.substr(s.find(':') + 1)));
  }
  Device(const char* s) : Device(std::string(s)) {}  // NOLINT
  DeviceType type() const { return type_; }
  int8_t index() const { return index_; }
  bool has_index() const { return index_ != -1; }
  bool is_cpu() const { return type_ == kCPU; }
  bool is_cuda() const { return type_ == kCUDA; }
  std::string str() const {
    std::string s = is_cpu() ? "cpu" : "cuda";
    if (has_index()) s += ":" + std::to_string(index_);
    return s;
  }
  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  DeviceType type_ = kCPU;
  int8_t index_ = -1;
};
inline std::ostream& operator<<(std::ostream& out, const Device& d) { return out << d.str(); }
inline std::ostream& operator<<(std::ostream& out, DeviceType t) {
  return out << (t == kCPU ? "cpu" : "cuda");
}

enum class Layout : int8_t { Strided = 0 };
constexpr Layout kStrided = Layout::Strided;
enum class MemoryFormat : int8_t {
  Contiguous = 0,
  Preserve = 1,
  ChannelsLast = 2,
  ChannelsLast3d = 3
};

/// c10::ArrayRef: a non-owning view of contiguous elements.
template <typename T>
class ArrayRef {
 public:
  using value_type = T;
  using iterator = const T*;
  using const_iterator = const T*;
  using size_type = size_t;
  constexpr ArrayRef() = default;
  constexpr ArrayRef(const T& one) : data_(&one), size_(1) {}  // NOLINT
  constexpr ArrayRef(const T* data, size_t n) : data_(data), size_(n) {}
  constexpr ArrayRef(const T* begin, const T* end)
      : data_(begin), size_(static_cast<size_t>(end - begin)) {}
  template <typename A>
  ArrayRef(const std::vector<T, A>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  template <size_t N>
  constexpr ArrayRef(const T (&a)[N]) : data_(a), size_(N) {}  // NOLINT
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  // As in libtorch: the list lives until the end of the full expression that made it.
  constexpr ArrayRef(const std::initializer_list<T>& l)  // NOLINT
      : data_(l.begin() == l.end() ? nullptr : l.begin()), size_(l.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T& at(size_t i) const {
    if (i >= size_)
      throw Error("ArrayRef: invalid index " + std::to_string(i) + " for length " +
                  std::to_string(size_));
    return data_[i];
  }
  const T& front() const { return at(0); }
  const T& back() const { return at(size_ - 1); }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  bool equals(ArrayRef o) const {
    if (size_ != o.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (!(data_[i] == o.data_[i])) return false;
    return true;
  }
  ArrayRef slice(size_t n, size_t m) const { return ArrayRef(data_ + n, m); }
  ArrayRef slice(size_t n) const { return ArrayRef(data_ + n, size_ - n); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};
template <typename T>
bool operator==(ArrayRef<T> a, ArrayRef<T> b) {
  return a.equals(b);
}
template <typename T>
bool operator!=(ArrayRef<T> a, ArrayRef<T> b) {
  return !a.equals(b);
}
template <typename T>
bool operator==(const std::vector<T>& a, ArrayRef<T> b) {
  return ArrayRef<T>(a).equals(b);
}
template <typename T>
bool operator==(ArrayRef<T> a, const std::vector<T>& b) {
  return a.equals(ArrayRef<T>(b));
}
template <typename T>
std::ostream& operator<<(std::ostream& out, ArrayRef<T> list) {
  out << "[";
  for (size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out << ", ";
    out << list[i];
  }
  return out << "]";
}
using IntArrayRef = ArrayRef<int64_t>;
/// An optional list of ints (dims): nullopt, a list, or one int.
class OptionalIntArrayRef {
 public:
  OptionalIntArrayRef() = default;
  OptionalIntArrayRef(std::nullopt_t) {}                                                // NOLINT
  OptionalIntArrayRef(IntArrayRef r) : v_(r) {}                                         // NOLINT
  OptionalIntArrayRef(const std::initializer_list<int64_t>& l) : v_(IntArrayRef(l)) {}  // NOLINT
  OptionalIntArrayRef(const std::vector<int64_t>& v) : v_(IntArrayRef(v)) {}            // NOLINT
  OptionalIntArrayRef(const int64_t& one) : v_(IntArrayRef(one)) {}                     // NOLINT
  bool has_value() const { return v_.has_value(); }
  explicit operator bool() const { return v_.has_value(); }
  IntArrayRef operator*() const { return *v_; }
  IntArrayRef value() const { return v_.value(); }

 private:
  std::optional<IntArrayRef> v_;
};

/// c10::irange(end), c10::irange(begin, end): for (const auto i : c10::irange(n)).
template <typename I>
class IntegerRange {
 public:
  struct iterator {
    using iterator_category = std::forward_iterator_tag;
    using value_type = I;
    using difference_type = std::ptrdiff_t;
    using pointer = const I*;
    using reference = I;
    I v;
    I operator*() const { return v; }
    iterator& operator++() {
      ++v;
      return *this;
    }
    bool operator==(const iterator& o) const { return v == o.v; }
    bool operator!=(const iterator& o) const { return v != o.v; }
  };
  IntegerRange(I b, I e) : b_(b), e_(e < b ? b : e) {}
  iterator begin() const { return {b_}; }
  iterator end() const { return {e_}; }

 private:
  I b_, e_;
};
template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
IntegerRange<I> irange(I end) {
  return IntegerRange<I>(I(0), end);
}
template <typename I1, typename I2,
          typename = std::enable_if_t<std::is_integral_v<I1> && std::is_integral_v<I2>>>
IntegerRange<I2> irange(I1 begin, I2 end) {
  return IntegerRange<I2>(static_cast<I2>(begin), end);
}

/// c10::InferenceMode / at::NoGradGuard: nothing is recorded for autograd in torchless.
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true) : enabled_(enabled) {}
  ~InferenceMode() { (void)enabled_; }
  static bool is_enabled() { return true; }

 private:
  bool enabled_;
};

/// c10::Scalar: an int, float or bool.
class Scalar {
 public:
  Scalar() : Scalar(int64_t(0)) {}
  Scalar(double v) : tag_(Tag::Double), d_(v) {}  // NOLINT
  Scalar(float v) : tag_(Tag::Double), d_(v) {}   // NOLINT
  Scalar(bool v) : tag_(Tag::Bool), i_(v) {}      // NOLINT
  template <typename I,
            std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  Scalar(I v) : tag_(Tag::Int), i_(static_cast<int64_t>(v)) {}  // NOLINT
  bool isFloatingPoint() const { return tag_ == Tag::Double; }
  bool isIntegral(bool includeBool) const {
    return tag_ == Tag::Int || (includeBool && tag_ == Tag::Bool);
  }
  bool isBoolean() const { return tag_ == Tag::Bool; }
  double toDouble() const { return tag_ == Tag::Double ? d_ : static_cast<double>(i_); }
  float toFloat() const { return static_cast<float>(toDouble()); }
  int64_t toLong() const { return tag_ == Tag::Double ? static_cast<int64_t>(d_) : i_; }
  int toInt() const { return static_cast<int>(toLong()); }
  bool toBool() const { return tag_ == Tag::Double ? d_ != 0 : i_ != 0; }
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>)
      return toBool();
    else if constexpr (std::is_floating_point_v<T>)
      return static_cast<T>(toDouble());
    else
      return static_cast<T>(toLong());
  }
  /// A tl_value holding the number (owned by the caller).
  tl_value* toCValue() const {
    switch (tag_) {
      case Tag::Double: return tl_value_from_double(d_);
      case Tag::Bool: return tl_value_from_bool(i_ != 0);
      default: return tl_value_from_int(i_);
    }
  }

 private:
  enum class Tag { Int, Double, Bool } tag_;
  double d_ = 0;
  int64_t i_ = 0;
};
inline std::ostream& operator<<(std::ostream& out, const Scalar& s) {
  if (s.isFloatingPoint()) return out << s.toDouble();
  if (s.isBoolean()) return out << (s.toBool() ? "true" : "false");
  return out << s.toLong();
}

}  // namespace c10

namespace caffe2 {
/// The element type as tensor.dtype() returns it; compares equal to c10::ScalarType and
/// prints C++'s name for the type ("float", "long int").
class TypeMeta {
 public:
  TypeMeta() = default;
  explicit TypeMeta(c10::ScalarType t) : t_(t) {}
  static TypeMeta fromScalarType(c10::ScalarType t) { return TypeMeta(t); }
  c10::ScalarType toScalarType() const { return t_; }
  size_t itemsize() const { return c10::elementSize(t_); }
  std::string_view name() const {
    switch (t_) {
      case c10::kByte: return "unsigned char";
      case c10::kChar: return "signed char";
      case c10::kShort: return "short int";
      case c10::kInt: return "int";
      case c10::kLong: return "long int";
      case c10::kHalf: return "c10::Half";
      case c10::kFloat: return "float";
      case c10::kDouble: return "double";
      case c10::kBool: return "bool";
      case c10::kBFloat16: return "c10::BFloat16";
      default: return "nullptr (uninitialized)";
    }
  }
  bool operator==(const TypeMeta& o) const { return t_ == o.t_; }
  bool operator!=(const TypeMeta& o) const { return t_ != o.t_; }

 private:
  c10::ScalarType t_ = c10::ScalarType::Undefined;
};
inline bool operator==(TypeMeta a, c10::ScalarType b) { return a.toScalarType() == b; }
inline bool operator==(c10::ScalarType a, TypeMeta b) { return a == b.toScalarType(); }
inline bool operator!=(TypeMeta a, c10::ScalarType b) { return a.toScalarType() != b; }
inline bool operator!=(c10::ScalarType a, TypeMeta b) { return a != b.toScalarType(); }
inline std::ostream& operator<<(std::ostream& out, const TypeMeta& m) { return out << m.name(); }
}  // namespace caffe2

namespace at {
using namespace c10;  // as libtorch's at:: sees c10's names

class Tensor;
using TensorList = c10::ArrayRef<Tensor>;
namespace indexing {
struct TensorIndex;
}  // namespace indexing

/// at::TensorOptions: dtype and device of a new tensor (layout strided; requires_grad ignored).
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t) {}                       // NOLINT
  TensorOptions(caffe2::TypeMeta t) : dtype_(t.toScalarType()) {}  // NOLINT
  TensorOptions(Device d) : device_(d) {}                          // NOLINT
  TensorOptions(DeviceType d) : device_(Device(d)) {}              // NOLINT
  TensorOptions(Layout) {}                                         // NOLINT
  TensorOptions dtype(ScalarType t) const {
    TensorOptions o = *this;
    o.dtype_ = t;
    return o;
  }
  TensorOptions dtype(caffe2::TypeMeta t) const { return dtype(t.toScalarType()); }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions layout(Layout) const { return *this; }
  TensorOptions requires_grad(bool = true) const { return *this; }
  TensorOptions memory_format(MemoryFormat) const { return *this; }
  TensorOptions pinned_memory(bool = true) const { return *this; }
  /// The dtype given, or float (torch's default dtype).
  caffe2::TypeMeta dtype() const { return caffe2::TypeMeta(dtype_.value_or(kFloat)); }
  std::optional<ScalarType> dtype_opt() const { return dtype_; }
  bool has_dtype() const { return dtype_.has_value(); }
  Device device() const { return device_.value_or(Device(kCPU)); }
  std::optional<Device> device_opt() const { return device_; }

 private:
  std::optional<ScalarType> dtype_;
  std::optional<Device> device_;
};
inline TensorOptions dtype(ScalarType t) { return TensorOptions().dtype(t); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions layout(Layout) { return TensorOptions(); }
inline TensorOptions requires_grad(bool = true) { return TensorOptions(); }

namespace detail {

[[noreturn]] inline void throwLast() { throw c10::Error(tl_last_error()); }
inline void check(tl_status s) {
  if (s != TL_OK) throwLast();
}
/// Refuses devices other than the CPU.
inline void checkDevice(const Device& d) {
  if (!d.is_cpu())
    throw c10::Error("torchless runs on the CPU only: device '" + d.str() +
                     "' is not available (torch::cuda::is_available() is false)");
}
struct ValueDeleter {
  void operator()(tl_value* v) const { tl_value_free(v); }
};
using OwnedValue = std::unique_ptr<tl_value, ValueDeleter>;

inline const tl_op* findOp(const char* key) {
  const tl_op* op = nullptr;
  check(tl_op_find(key, &op));
  return op;
}

template <typename T>
constexpr ScalarType scalarTypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return kFloat;
  else if constexpr (std::is_same_v<T, double>)
    return kDouble;
  else if constexpr (std::is_same_v<T, int64_t>)
    return kLong;
  else if constexpr (std::is_same_v<T, int32_t>)
    return kInt;
  else if constexpr (std::is_same_v<T, int16_t>)
    return kShort;
  else if constexpr (std::is_same_v<T, int8_t>)
    return kChar;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return kByte;
  else if constexpr (std::is_same_v<T, bool>)
    return kBool;
  else {
    static_assert(sizeof(T) == 0,
                  "torchless: data_ptr<T>/item<T>/accessor<T> support float, double, "
                  "int64_t, int32_t, int16_t, int8_t, uint8_t and bool");
    return kFloat;
  }
}

}  // namespace detail

/// at::TensorAccessor<T, N>: a[i][j] over a tensor's elements (strides honoured).
template <typename T, size_t N>
class TensorAccessor {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  TensorAccessor<T, N - 1> operator[](int64_t i) const {
    return TensorAccessor<T, N - 1>(data_ + strides_[0] * i, sizes_ + 1, strides_ + 1);
  }
  int64_t size(int64_t d) const { return sizes_[d]; }
  int64_t stride(int64_t d) const { return strides_[d]; }
  IntArrayRef sizes() const { return IntArrayRef(sizes_, N); }
  IntArrayRef strides() const { return IntArrayRef(strides_, N); }
  T* data() const { return data_; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};
template <typename T>
class TensorAccessor<T, 1> {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  T& operator[](int64_t i) const { return data_[strides_[0] * i]; }
  int64_t size(int64_t d) const { return sizes_[d]; }
  int64_t stride(int64_t d) const { return strides_[d]; }
  IntArrayRef sizes() const { return IntArrayRef(sizes_, 1); }
  IntArrayRef strides() const { return IntArrayRef(strides_, 1); }
  T* data() const { return data_; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

/// at::Tensor: a handle to a torchless tensor; copies share the elements.
class Tensor {
 public:
  Tensor() = default;
  /// Takes ownership of a C API handle (nullptr: undefined tensor).
  explicit Tensor(tl_tensor* h) : h_(h, tl_tensor_free) {}
  /// The C API handle (owned by this Tensor), or nullptr when undefined.
  tl_tensor* unsafeGetHandle() const { return h_.get(); }

  bool defined() const { return h_ != nullptr; }
  void reset() { h_.reset(); }
  int64_t dim() const { return static_cast<int64_t>(tl_tensor_dim(h())); }
  int64_t ndimension() const { return dim(); }
  IntArrayRef sizes() const { return IntArrayRef(tl_tensor_sizes(h()), tl_tensor_dim(h())); }
  IntArrayRef strides() const { return IntArrayRef(tl_tensor_strides(h()), tl_tensor_dim(h())); }
  int64_t size(int64_t d) const { return sizes()[wrapDim(d)]; }
  int64_t stride(int64_t d) const { return strides()[wrapDim(d)]; }
  int64_t numel() const { return tl_tensor_numel(h()); }
  ScalarType scalar_type() const { return static_cast<ScalarType>(tl_tensor_dtype(h())); }
  caffe2::TypeMeta dtype() const { return caffe2::TypeMeta(scalar_type()); }
  size_t element_size() const { return elementSize(scalar_type()); }
  size_t itemsize() const { return element_size(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  Device device() const { return Device(kCPU); }
  bool is_cuda() const { return false; }
  bool is_cpu() const { return true; }
  bool is_contiguous() const { return tl_tensor_is_contiguous(h()) != 0; }
  bool is_floating_point() const { return isFloatingType(scalar_type()); }
  bool requires_grad() const { return false; }
  TensorOptions options() const { return TensorOptions(scalar_type()); }
  /// libtorch's type string: "CPUFloatType".
  std::string toString() const {
    return std::string("CPU") + c10::toString(scalar_type()) + "Type";
  }

  void* data_ptr() const { return tl_tensor_data(h()); }
  template <typename T>
  T* data_ptr() const {
    checkType(detail::scalarTypeOf<T>());
    return static_cast<T*>(tl_tensor_data(h()));
  }
  template <typename T>
  const T* const_data_ptr() const {
    return data_ptr<T>();
  }
  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() const& {
    static_assert(N > 0, "accessor is used for indexing tensor, for scalars use *data_ptr<T>()");
    if (dim() != static_cast<int64_t>(N))
      throw c10::Error("TensorAccessor expected " + std::to_string(N) + " dims but tensor has " +
                       std::to_string(dim()));
    return TensorAccessor<T, N>(data_ptr<T>(), tl_tensor_sizes(h()), tl_tensor_strides(h()));
  }
  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() && = delete;

  /// The single element (any dtype); throws unless numel() == 1.
  Scalar item() const;
  template <typename T>
  T item() const {
    return item().to<T>();
  }

  Tensor contiguous() const {
    tl_tensor* out = nullptr;
    detail::check(tl_tensor_contiguous(h(), &out));
    return Tensor(out);
  }
  Tensor to(ScalarType t, bool non_blocking = false, bool copy = false) const;
  Tensor to(caffe2::TypeMeta t, bool non_blocking = false, bool copy = false) const {
    return to(t.toScalarType(), non_blocking, copy);
  }
  Tensor to(Device d, ScalarType t, bool non_blocking = false, bool copy = false) const {
    detail::checkDevice(d);
    return to(t, non_blocking, copy);
  }
  Tensor to(Device d, bool non_blocking = false, bool copy = false) const {
    detail::checkDevice(d);
    return copy ? to(scalar_type(), non_blocking, true) : *this;
  }
  Tensor to(DeviceType d, bool non_blocking = false, bool copy = false) const {
    return to(Device(d), non_blocking, copy);
  }
  Tensor to(const TensorOptions& o, bool non_blocking = false, bool copy = false) const {
    detail::checkDevice(o.device());
    return to(o.dtype_opt().value_or(scalar_type()), non_blocking, copy);
  }
  Tensor cpu() const { return *this; }
  Tensor cuda() const {
    detail::checkDevice(Device(kCUDA));
    return *this;
  }
  Tensor detach() const { return *this; }
  Tensor& requires_grad_(bool = true) { return *this; }

  /// Python-style indexing (libtorch's at::indexing; see TensorIndex below):
  /// t.index({Slice(), 0, None, "..."}) reads, t.index_put_({Slice(1, None), 0}, v) writes.
  Tensor index(ArrayRef<indexing::TensorIndex> indices) const;
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor& index_put_(ArrayRef<indexing::TensorIndex> indices, const Tensor& rhs);
  Tensor& index_put_(ArrayRef<indexing::TensorIndex> indices, const Scalar& v);
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& rhs);
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& v);

  /// t[i] is t.select(0, i); t[index_tensor] is t.index({index_tensor}).
  Tensor operator[](int64_t i) const;
  Tensor operator[](const Tensor& index) const;
  /// Assignment into a selection writes the elements (t[0] = 1; t.slice(1, 0, 2) = other).
  Tensor& operator=(const Scalar& v) &&;
  Tensor& operator=(const Tensor& src) &&;
  Tensor& operator=(Tensor&& src) &&;
  Tensor& operator=(const Tensor& o) & = default;
  Tensor& operator=(Tensor&& o) & = default;
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) = default;
  ~Tensor() = default;

  /// Compound assignment writes in place (also into a selection: t[0] += 1), as libtorch's.
  Tensor& operator+=(const Tensor& o) { return add_(o); }
  Tensor& operator+=(const Scalar& o) { return add_(o); }
  Tensor& operator-=(const Tensor& o) { return sub_(o); }
  Tensor& operator-=(const Scalar& o) { return sub_(o); }
  Tensor& operator*=(const Tensor& o) { return mul_(o); }
  Tensor& operator*=(const Scalar& o) { return mul_(o); }
  Tensor& operator/=(const Tensor& o) { return div_(o); }
  Tensor& operator/=(const Scalar& o) { return div_(o); }

  bool is_same(const Tensor& o) const {
    return data_ptr() == o.data_ptr() && sizes() == o.sizes() && strides() == o.strides();
  }

// The op table's methods (declarations; generated by scripts/gen_compat_ops.py).
#include <torchless/cxx/ops_methods.inc>

 private:
  tl_tensor* h() const {
    if (!h_) throw c10::Error("undefined Tensor");
    return h_.get();
  }
  size_t wrapDim(int64_t d) const {
    int64_t n = dim();
    int64_t w = d < 0 ? d + n : d;
    if (w < 0 || w >= n)
      throw c10::IndexError("Dimension out of range (expected to be in range of [" +
                            std::to_string(-n) + ", " + std::to_string(n - 1) + "], but got " +
                            std::to_string(d) + ")");
    return static_cast<size_t>(w);
  }
  void checkType(ScalarType want) const {
    if (scalar_type() != want)
      throw c10::Error(std::string("expected scalar type ") + c10::toString(want) + " but found " +
                       c10::toString(scalar_type()));
  }
  std::shared_ptr<tl_tensor> h_;
};

inline std::ostream& operator<<(std::ostream& out, const Tensor& t) {
  if (!t.defined()) return out << "[ Tensor (undefined) ]";
  char* s = tl_tensor_to_string(t.unsafeGetHandle());
  if (!s) detail::throwLast();
  out << s;
  tl_string_free(s);
  return out;
}
inline std::ostream& print(std::ostream& out, const Tensor& t, int64_t = 80) { return out << t; }
inline void print(const Tensor& t, int64_t = 80) { std::cout << t; }

namespace detail {

// ---- arguments and results of op calls (C values owned for the call) ----
inline OwnedValue arg(const Tensor& t) {
  return OwnedValue(t.defined() ? tl_value_from_tensor(t.unsafeGetHandle()) : tl_value_none());
}
inline OwnedValue arg(const std::optional<Tensor>& t) {
  return t ? arg(*t) : OwnedValue(tl_value_none());
}
inline OwnedValue arg(const Scalar& s) { return OwnedValue(s.toCValue()); }
inline OwnedValue arg(const std::optional<Scalar>& s) {
  return s ? arg(*s) : OwnedValue(tl_value_none());
}
inline OwnedValue arg(int64_t v) { return OwnedValue(tl_value_from_int(v)); }
inline OwnedValue arg(double v) { return OwnedValue(tl_value_from_double(v)); }
inline OwnedValue arg(bool v) { return OwnedValue(tl_value_from_bool(v)); }
inline OwnedValue arg(ScalarType t) {
  return OwnedValue(tl_value_from_int(static_cast<int64_t>(t)));
}
inline OwnedValue arg(MemoryFormat f) {
  return OwnedValue(tl_value_from_int(static_cast<int64_t>(f)));
}
inline OwnedValue arg(Layout) { return OwnedValue(tl_value_none()); }
inline OwnedValue arg(const Device& d) {
  checkDevice(d);
  return OwnedValue(tl_value_none());
}
inline OwnedValue arg(std::string_view s) {
  return OwnedValue(tl_value_from_string(std::string(s).c_str()));
}
inline OwnedValue arg(std::nullopt_t) { return OwnedValue(tl_value_none()); }
template <typename T>
OwnedValue list(ArrayRef<T> xs) {
  std::vector<OwnedValue> owned;
  std::vector<tl_value*> raw;
  for (const T& x : xs) {
    owned.push_back(arg(x));
    raw.push_back(owned.back().get());
  }
  tl_value* out = nullptr;
  check(tl_value_list(raw.data(), raw.size(), &out));
  return OwnedValue(out);
}
inline OwnedValue arg(IntArrayRef xs) { return list(xs); }
inline OwnedValue arg(ArrayRef<double> xs) { return list(xs); }
inline OwnedValue arg(const OptionalIntArrayRef& xs) {
  return xs ? list(*xs) : OwnedValue(tl_value_none());
}
inline OwnedValue arg(ArrayRef<bool> xs) { return list(xs); }
inline OwnedValue arg(TensorList xs) { return list(xs); }
inline OwnedValue arg(ArrayRef<std::optional<Tensor>> xs) { return list(xs); }
template <typename T>
OwnedValue arg(const std::optional<T>& x) {
  return x ? arg(*x) : OwnedValue(tl_value_none());
}

inline Tensor toTensor(const tl_value* v) {
  tl_tensor* t = nullptr;
  if (tl_value_get_kind(v) == TL_VALUE_NONE) return Tensor();
  check(tl_value_to_tensor(v, &t));
  return Tensor(t);
}
inline OwnedValue element(const tl_value* v, size_t i) {
  tl_value* e = nullptr;
  check(tl_value_element(v, i, &e));
  return OwnedValue(e);
}
template <typename R>
struct Result;
template <>
struct Result<Tensor> {
  static Tensor get(const tl_value* v) { return toTensor(v); }
};
template <>
struct Result<int64_t> {
  static int64_t get(const tl_value* v) {
    int64_t x = 0;
    check(tl_value_to_int(v, &x));
    return x;
  }
};
template <>
struct Result<double> {
  static double get(const tl_value* v) {
    double x = 0;
    check(tl_value_to_double(v, &x));
    return x;
  }
};
template <>
struct Result<bool> {
  static bool get(const tl_value* v) {
    int x = 0;
    check(tl_value_to_bool(v, &x));
    return x != 0;
  }
};
template <>
struct Result<Scalar> {
  static Scalar get(const tl_value* v) {
    switch (tl_value_get_kind(v)) {
      case TL_VALUE_INT: return Scalar(Result<int64_t>::get(v));
      case TL_VALUE_BOOL: return Scalar(Result<bool>::get(v));
      default: return Scalar(Result<double>::get(v));
    }
  }
};
template <>
struct Result<std::vector<Tensor>> {
  static std::vector<Tensor> get(const tl_value* v) {
    size_t n = 0;
    check(tl_value_length(v, &n));
    std::vector<Tensor> out;
    for (size_t i = 0; i < n; ++i) out.push_back(toTensor(element(v, i).get()));
    return out;
  }
};
template <typename... Ts>
struct Result<std::tuple<Ts...>> {
  template <size_t... I>
  static std::tuple<Ts...> unpack(const tl_value* v, std::index_sequence<I...>) {
    return std::tuple<Ts...>(Result<Ts>::get(element(v, I).get())...);
  }
  static std::tuple<Ts...> get(const tl_value* v) {
    return unpack(v, std::index_sequence_for<Ts...>{});
  }
};

/// Calls op-table entry `op` with all its arguments in schema order.
template <typename R, typename... A>
R call(const tl_op* op, const A&... a) {
  OwnedValue owned[] = {arg(a)..., OwnedValue()};
  tl_value* raw[sizeof...(A) + 1];
  for (size_t i = 0; i < sizeof...(A); ++i) raw[i] = owned[i].get();
  tl_value* out = nullptr;
  check(tl_op_call(op, raw, sizeof...(A), &out));
  OwnedValue result(out);
  if constexpr (!std::is_void_v<R>) return Result<R>::get(out);
}

}  // namespace detail

// The op table's functions (at::softmax, at::topk, ...) and the definitions of the methods.
}  // namespace at

#include <torchless/cxx/ops_generated.h>

namespace at {

inline Scalar Tensor::item() const {
  if (numel() != 1)
    throw c10::Error("a Tensor with " + std::to_string(numel()) +
                     " elements cannot be converted to Scalar");
  const void* p = data_ptr();
  switch (scalar_type()) {
    case kFloat: return Scalar(static_cast<double>(*static_cast<const float*>(p)));
    case kDouble: return Scalar(*static_cast<const double*>(p));
    case kLong: return Scalar(*static_cast<const int64_t*>(p));
    case kInt: return Scalar(*static_cast<const int32_t*>(p));
    case kShort: return Scalar(*static_cast<const int16_t*>(p));
    case kChar: return Scalar(*static_cast<const int8_t*>(p));
    case kByte: return Scalar(*static_cast<const uint8_t*>(p));
    case kBool: return Scalar(*static_cast<const bool*>(p));
    default: return Scalar(to(kDouble).item().toDouble());
  }
}

inline Tensor Tensor::to(ScalarType t, bool non_blocking, bool copy) const {
  static const tl_op* op = detail::findOp("aten::to.dtype");
  return detail::call<Tensor>(op, *this, t, non_blocking, copy, std::optional<MemoryFormat>());
}
inline Tensor Tensor::operator[](int64_t i) const { return select(0, i); }
inline Tensor Tensor::operator[](const Tensor& index) const {
  static const tl_op* op = detail::findOp("aten::index.Tensor");
  return detail::call<Tensor>(op, *this,
                              ArrayRef<std::optional<Tensor>>({std::optional<Tensor>(index)}));
}
inline Tensor& Tensor::operator=(const Scalar& v) && {
  static const tl_op* op = detail::findOp("aten::fill_.Scalar");
  detail::call<Tensor>(op, *this, v);
  return *this;
}
inline Tensor& Tensor::operator=(const Tensor& src) && {
  static const tl_op* op = detail::findOp("aten::copy_");
  detail::call<Tensor>(op, *this, src, false);
  return *this;
}
inline Tensor& Tensor::operator=(Tensor&& src) && {
  return std::move(*this) = static_cast<const Tensor&>(src);
}

// ---- operators ----
inline Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
inline Tensor operator+(const Tensor& a, const Scalar& b) { return a.add(b); }
inline Tensor operator+(const Scalar& a, const Tensor& b) { return b.add(a); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
inline Tensor operator-(const Tensor& a, const Scalar& b) { return a.sub(b); }
inline Tensor operator-(const Scalar& a, const Tensor& b) { return b.neg().add(a); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
inline Tensor operator*(const Tensor& a, const Scalar& b) { return a.mul(b); }
inline Tensor operator*(const Scalar& a, const Tensor& b) { return b.mul(a); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
inline Tensor operator/(const Tensor& a, const Scalar& b) { return a.div(b); }
inline Tensor operator-(const Tensor& a) { return a.neg(); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
inline Tensor operator>(const Tensor& a, const Scalar& b) { return a.gt(b); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
inline Tensor operator<(const Tensor& a, const Scalar& b) { return a.lt(b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
inline Tensor operator>=(const Tensor& a, const Scalar& b) { return a.ge(b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
inline Tensor operator<=(const Tensor& a, const Scalar& b) { return a.le(b); }
inline Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
inline Tensor operator==(const Tensor& a, const Scalar& b) { return a.eq(b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }
inline Tensor operator!=(const Tensor& a, const Scalar& b) { return a.ne(b); }

// ---- factories beside the op table's ----
namespace detail {
inline std::vector<int64_t> contiguousStrides(IntArrayRef sizes) {
  std::vector<int64_t> s(sizes.size());
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    s[i] = acc;
    acc *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return s;
}
inline void callDeleter(void* data, void* ctx) {
  auto* f = static_cast<std::function<void(void*)>*>(ctx);
  (*f)(data);
  delete f;
}
}  // namespace detail

/// torch::from_blob: a tensor over `data`, not copied; `deleter(data)` runs when the last
/// handle is gone. The memory must outlive the tensor (as in libtorch).
inline Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides,
                        const std::function<void(void*)>& deleter,
                        const TensorOptions& options = {}) {
  detail::checkDevice(options.device());
  tl_tensor* t = nullptr;
  auto* ctx = deleter ? new std::function<void(void*)>(deleter) : nullptr;
  tl_status s = tl_tensor_from_buffer(data, static_cast<tl_dtype>(options.dtype().toScalarType()),
                                      sizes.data(), sizes.size(), strides.data(),
                                      ctx ? detail::callDeleter : nullptr, ctx, &t);
  if (s != TL_OK) {
    delete ctx;
    detail::throwLast();
  }
  return Tensor(t);
}
inline Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides,
                        const TensorOptions& options = {}) {
  return from_blob(data, sizes, strides, std::function<void(void*)>(), options);
}
inline Tensor from_blob(void* data, IntArrayRef sizes, const std::function<void(void*)>& deleter,
                        const TensorOptions& options = {}) {
  std::vector<int64_t> st = detail::contiguousStrides(sizes);
  return from_blob(data, sizes, st, deleter, options);
}
inline Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options = {}) {
  std::vector<int64_t> st = detail::contiguousStrides(sizes);
  return from_blob(data, sizes, st, std::function<void(void*)>(), options);
}

namespace detail {
template <typename T>
Tensor tensorFrom(const T* values, IntArrayRef sizes, ScalarType natural,
                  const TensorOptions& options) {
  tl_tensor* t = nullptr;
  check(tl_tensor_copy_from(values, static_cast<tl_dtype>(scalarTypeOf<T>()), sizes.data(),
                            sizes.size(), &t));
  Tensor x(t);
  ScalarType want = options.dtype_opt().value_or(natural);
  return want == x.scalar_type() ? x : x.to(want);
}
}  // namespace detail

/// torch::tensor: a copy of the values. As libtorch: floating values make float (the default
/// dtype), int and long make long, uint8/int8/int16/bool keep their type.
template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(ArrayRef<T> values, const TensorOptions& options = {}) {
  int64_t n = static_cast<int64_t>(values.size());
  ScalarType natural = std::is_same_v<T, bool>       ? kBool
                       : std::is_floating_point_v<T> ? kFloat
                       : sizeof(T) >= 4              ? kLong
                                                     : detail::scalarTypeOf<T>();
  if constexpr (std::is_floating_point_v<T>) {
    std::vector<double> v(values.begin(), values.end());
    return detail::tensorFrom(v.data(), IntArrayRef(&n, 1), natural, options);
  } else if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> v(values.begin(), values.end());
    return detail::tensorFrom(v.data(), IntArrayRef(&n, 1), natural, options);
  } else {
    std::vector<int64_t> v(values.begin(), values.end());
    return detail::tensorFrom(v.data(), IntArrayRef(&n, 1), natural, options);
  }
}
template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(const std::vector<T>& values, const TensorOptions& options = {}) {
  return tensor(ArrayRef<T>(values), options);
}
template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(std::initializer_list<T> values, const TensorOptions& options = {}) {
  return tensor(ArrayRef<T>(values), options);
}
/// A 0-dim tensor: torch::tensor(3.5).
template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
Tensor tensor(T value, const TensorOptions& options = {}) {
  Tensor t = tensor(ArrayRef<T>(&value, 1), options);
  return t.reshape(IntArrayRef{});
}

// ---- at::indexing (libtorch's ATen/TensorIndexing.h, same rules) ----
namespace indexing {
constexpr int64_t INDEX_MAX = std::numeric_limits<int64_t>::max();
constexpr int64_t INDEX_MIN = std::numeric_limits<int64_t>::min();
/// Python's None: a new dimension of size 1.
constexpr std::nullopt_t None = std::nullopt;
struct EllipsisIndexType final {
  EllipsisIndexType() {}
};
/// Python's `...`: as many full slices as the other indices leave.
inline const EllipsisIndexType Ellipsis;

/// Python's start:stop:step (each may be None).
class Slice final {
 public:
  Slice(std::optional<int64_t> start_index = std::nullopt,
        std::optional<int64_t> stop_index = std::nullopt,
        std::optional<int64_t> step_index = std::nullopt) {
    if (!step_index) {
      step_ = 1;
    } else {
      step_ = *step_index;
      if (step_ == 0) throw c10::ValueError("slice step cannot be zero");
      if (step_ < -INDEX_MAX) step_ = -INDEX_MAX;
    }
    start_ = start_index ? *start_index : (step_ < 0 ? INDEX_MAX : 0);
    stop_ = stop_index ? *stop_index : (step_ < 0 ? INDEX_MIN : INDEX_MAX);
  }
  int64_t start() const { return start_; }
  int64_t stop() const { return stop_; }
  int64_t step() const { return step_; }

 private:
  int64_t start_, stop_, step_;
};
inline std::ostream& operator<<(std::ostream& out, const Slice& s) {
  return out << s.start() << ":" << s.stop() << ":" << s.step();
}

enum class TensorIndexType { None, Ellipsis, Integer, Boolean, Slice, Tensor };

/// One index of t.index({...}): None, Ellipsis or "...", an integer, a bool, a Slice or a Tensor.
struct TensorIndex final {
  TensorIndex(std::nullopt_t) : type_(TensorIndexType::None) {}         // NOLINT
  TensorIndex(EllipsisIndexType) : type_(TensorIndexType::Ellipsis) {}  // NOLINT
  TensorIndex(const char* str) : TensorIndex(Ellipsis) {                // NOLINT
    if (std::string_view(str) != "...")
      throw c10::Error(std::string("Expected \"...\" to represent an ellipsis index, but got \"") +
                       str + "\"");
  }
  TensorIndex(int64_t integer) : integer_(integer), type_(TensorIndexType::Integer) {}  // NOLINT
  TensorIndex(int integer) : TensorIndex(static_cast<int64_t>(integer)) {}              // NOLINT
  template <class T, class = std::enable_if_t<std::is_same_v<bool, T>>>
  TensorIndex(T boolean) : boolean_(boolean), type_(TensorIndexType::Boolean) {}  // NOLINT
  TensorIndex(Slice slice) : slice_(slice), type_(TensorIndexType::Slice) {}      // NOLINT
  TensorIndex(Tensor tensor)
      : tensor_(std::move(tensor)), type_(TensorIndexType::Tensor) {}  // NOLINT

  bool is_none() const { return type_ == TensorIndexType::None; }
  bool is_ellipsis() const { return type_ == TensorIndexType::Ellipsis; }
  bool is_integer() const { return type_ == TensorIndexType::Integer; }
  int64_t integer() const { return integer_; }
  bool is_boolean() const { return type_ == TensorIndexType::Boolean; }
  bool boolean() const { return boolean_; }
  bool is_slice() const { return type_ == TensorIndexType::Slice; }
  const Slice& slice() const { return slice_; }
  bool is_tensor() const { return type_ == TensorIndexType::Tensor; }
  const Tensor& tensor() const { return tensor_; }

 private:
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  Tensor tensor_;
  TensorIndexType type_;
};
inline std::ostream& operator<<(std::ostream& out, const TensorIndex& i) {
  if (i.is_none()) return out << "None";
  if (i.is_ellipsis()) return out << "...";
  if (i.is_integer()) return out << i.integer();
  if (i.is_boolean()) return out << (i.boolean() ? "true" : "false");
  if (i.is_slice()) return out << i.slice();
  return out << i.tensor();
}

namespace impl {
inline Tensor applySlice(const Tensor& self, int64_t dim, const Slice& s,
                         bool disable_slice_optimization) {
  if (s.step() <= 0) throw c10::ValueError("step must be greater than zero");
  if (!disable_slice_optimization && s.start() == 0 && s.stop() == self.size(dim) && s.step() == 1)
    return self;
  return self.slice(dim, s.start(), s.stop(), s.step());
}
inline Tensor applySelect(const Tensor& self, int64_t dim, int64_t index, int64_t real_dim) {
  if (index == 0 && dim == 0 && self.dim() == 0)
    throw c10::IndexError(
        "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
        "in C++ to convert a 0-dim tensor to a number");
  const int64_t size = self.size(dim);
  if (index < -size || index >= size)
    throw c10::IndexError("index " + std::to_string(index) + " is out of bounds for dimension " +
                          std::to_string(real_dim) + " with size " + std::to_string(size));
  return self.select(dim, index);
}
inline Tensor boolToIndexingTensor(bool value) {
  int64_t n = value ? 1 : 0;
  tl_tensor* t = nullptr;
  detail::check(tl_tensor_zeros(TL_INT64, &n, 1, &t));
  return Tensor(t);
}
inline void recordTensorIndex(const Tensor& t, std::vector<Tensor>& out, int64_t* dim) {
  out.resize(static_cast<size_t>(*dim + 1));
  out[static_cast<size_t>(*dim)] = t;
  ++*dim;
}
inline int64_t countSpecifiedDimensions(ArrayRef<TensorIndex> indices) {
  int64_t count = 0;
  for (const TensorIndex& i : indices) {
    if (i.is_tensor()) {
      const ScalarType t = i.tensor().scalar_type();
      count += (t == kByte || t == kBool) ? i.tensor().dim() : 1;
    } else if (!i.is_none() && !i.is_ellipsis() && !i.is_boolean()) {
      ++count;
    }
  }
  return count;
}
inline Tensor applySlicing(const Tensor& self, ArrayRef<TensorIndex> indices,
                           std::vector<Tensor>& outIndices, bool disable_slice_optimization) {
  int64_t dim = 0;
  const int64_t specified = countSpecifiedDimensions(indices);
  if (specified > self.dim())
    throw c10::IndexError("too many indices for tensor of dimension " + std::to_string(self.dim()));
  Tensor result = self;
  for (size_t k = 0; k < indices.size(); ++k) {
    const TensorIndex& index = indices[k];
    const int64_t real_dim = static_cast<int64_t>(k);
    if (index.is_integer()) {
      result = applySelect(result, dim, index.integer(), real_dim);
    } else if (index.is_slice()) {
      result = applySlice(result, dim, index.slice(), disable_slice_optimization);
      ++dim;
    } else if (index.is_ellipsis()) {
      dim += self.dim() - specified;
    } else if (index.is_none()) {
      result = result.unsqueeze(dim);
      ++dim;
    } else if (index.is_boolean()) {
      result = result.unsqueeze(dim);
      recordTensorIndex(boolToIndexingTensor(index.boolean()), outIndices, &dim);
    } else {
      const Tensor& t = index.tensor();
      const ScalarType st = t.scalar_type();
      if (t.dim() == 0 && isIntegralType(st, true)) {
        if (st != kByte && st != kBool) {
          result = applySelect(result, dim, t.item<int64_t>(), real_dim);
        } else {
          result = result.unsqueeze(dim);
          recordTensorIndex(boolToIndexingTensor(t.item<int64_t>() != 0), outIndices, &dim);
        }
      } else {
        recordTensorIndex(t, outIndices, &dim);
      }
    }
  }
  return result;
}
inline std::vector<std::optional<Tensor>> typeConvertIndices(const std::vector<Tensor>& indices) {
  std::vector<std::optional<Tensor>> out;
  for (const Tensor& t : indices)
    out.push_back(t.defined() ? std::optional<Tensor>(t) : std::nullopt);
  return out;
}
inline IntArrayRef slicePrefix1sSize(IntArrayRef sizes) {
  size_t first = sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] != 1) {
      first = i;
      break;
    }
  return sizes.slice(first);
}
inline void copyTo(const Tensor& dst, const Tensor& src) {
  if (dst.sizes() == src.sizes()) {
    dst.copy_(src, false);
    return;
  }
  if (src.dim() == 0) {
    dst.fill_(src);
    return;
  }
  dst.copy_(src.view(slicePrefix1sSize(src.sizes())).expand_as(dst), false);
}
}  // namespace impl

/// libtorch's at::indexing::get_item: t.index({...}).
inline Tensor get_item(const Tensor& self, ArrayRef<TensorIndex> indices,
                       bool disable_slice_optimization = false) {
  if (indices.size() == 1) {
    const TensorIndex& index = indices[0];
    if (index.is_integer()) return impl::applySelect(self, 0, index.integer(), 0);
    if (index.is_slice()) return impl::applySlice(self, 0, index.slice(), true);
    if (index.is_none()) return self.unsqueeze(0);
    if (index.is_ellipsis()) return self.alias();
    if (index.is_boolean()) {
      Tensor result = self.unsqueeze(0);
      std::vector<std::optional<Tensor>> idx{impl::boolToIndexingTensor(index.boolean())};
      return result.index(ArrayRef<std::optional<Tensor>>(idx));
    }
  }
  std::vector<Tensor> tensorIndices;
  Tensor sliced = impl::applySlicing(self, indices, tensorIndices, disable_slice_optimization);
  if (tensorIndices.empty()) return sliced.is_same(self) ? sliced.alias() : sliced;
  std::vector<std::optional<Tensor>> idx = impl::typeConvertIndices(tensorIndices);
  return sliced.index(ArrayRef<std::optional<Tensor>>(idx));
}

/// libtorch's at::indexing::set_item: t.index_put_({...}, value).
inline void set_item(const Tensor& self, ArrayRef<TensorIndex> indices, const Tensor& value,
                     bool disable_slice_optimization = false) {
  if (indices.size() == 1) {
    const TensorIndex& index = indices[0];
    if (index.is_boolean() && !index.boolean()) return;
    if (index.is_ellipsis()) return impl::copyTo(self, value);
    if (index.is_none() || (index.is_boolean() && index.boolean()))
      return impl::copyTo(self.unsqueeze(0), value);
    if (index.is_integer())
      return impl::copyTo(impl::applySelect(self, 0, index.integer(), 0), value);
    if (index.is_slice())
      return impl::copyTo(impl::applySlice(self, 0, index.slice(), disable_slice_optimization),
                          value);
  }
  std::vector<Tensor> tensorIndices;
  Tensor sliced = impl::applySlicing(self, indices, tensorIndices, disable_slice_optimization);
  if (tensorIndices.empty()) return impl::copyTo(sliced, value);
  IntArrayRef valueSizes = value.sizes();
  IntArrayRef sliced1s = impl::slicePrefix1sSize(valueSizes);
  Tensor values = valueSizes == sliced1s ? value : value.view(sliced1s);
  std::vector<std::optional<Tensor>> idx = impl::typeConvertIndices(tensorIndices);
  sliced.index_put_(ArrayRef<std::optional<Tensor>>(idx), values);
}
}  // namespace indexing

inline Tensor Tensor::index(ArrayRef<indexing::TensorIndex> indices) const {
  if (indices.empty()) throw c10::Error("Tensor.index(...) expects at least one index");
  return indexing::get_item(*this, indices);
}
inline Tensor Tensor::index(std::initializer_list<indexing::TensorIndex> indices) const {
  return index(ArrayRef<indexing::TensorIndex>(indices));
}
inline Tensor& Tensor::index_put_(ArrayRef<indexing::TensorIndex> indices, const Tensor& rhs) {
  if (indices.empty()) throw c10::Error("Tensor.index_put_(...) expects at least one index");
  indexing::set_item(*this, indices, rhs);
  return *this;
}
inline Tensor& Tensor::index_put_(ArrayRef<indexing::TensorIndex> indices, const Scalar& v) {
  if (indices.empty()) throw c10::Error("Tensor.index_put_(...) expects at least one index");
  indexing::set_item(*this, indices, full({}, v, TensorOptions(scalar_type())));
  return *this;
}
inline Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices,
                                  const Tensor& rhs) {
  return index_put_(ArrayRef<indexing::TensorIndex>(indices), rhs);
}
inline Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices,
                                  const Scalar& v) {
  return index_put_(ArrayRef<indexing::TensorIndex>(indices), v);
}

}  // namespace at

namespace torch::jit {
class Module;
}  // namespace torch::jit

namespace c10 {

class IValue;
namespace ivalue {
/// c10::ivalue::Tuple: toTuple()->elements().
struct Tuple {
  std::vector<IValue> elements_;
  const std::vector<IValue>& elements() const& { return elements_; }
  std::vector<IValue>& elements() & { return elements_; }
  size_t size() const { return elements_.size(); }
  static std::shared_ptr<Tuple> create(std::vector<IValue> e) {
    auto t = std::make_shared<Tuple>();
    t->elements_ = std::move(e);
    return t;
  }
  template <typename... Args>
  static std::shared_ptr<Tuple> create(Args&&... args);
};
}  // namespace ivalue

/// c10::List<T>: an ordered list of values (toTensorList(), toList(), inputs).
template <typename T>
class List {
 public:
  using value_type = T;
  List() = default;
  List(std::initializer_list<T> l) : v_(l) {}
  explicit List(std::vector<T> v) : v_(std::move(v)) {}
  size_t size() const { return v_.size(); }
  bool empty() const { return v_.empty(); }
  T get(size_t i) const { return v_.at(i); }
  T operator[](size_t i) const { return v_.at(i); }
  T extract(size_t i) const { return v_.at(i); }
  void set(size_t i, T x) { v_.at(i) = std::move(x); }
  void push_back(T x) { v_.push_back(std::move(x)); }
  void emplace_back(T x) { v_.push_back(std::move(x)); }
  void reserve(size_t n) { v_.reserve(n); }
  typename std::vector<T>::const_iterator begin() const { return v_.begin(); }
  typename std::vector<T>::const_iterator end() const { return v_.end(); }
  std::vector<T> vec() const { return v_; }

 private:
  std::vector<T> v_;
};

/// c10::Dict<K, V>: insertion-ordered; iterating gives entries with key() and value().
template <typename K, typename V>
class Dict {
 public:
  class Entry {
   public:
    Entry(K k, V v) : k_(std::move(k)), v_(std::move(v)) {}
    const K& key() const { return k_; }
    const V& value() const { return v_; }

   private:
    K k_;
    V v_;
  };
  size_t size() const { return e_.size(); }
  bool empty() const { return e_.empty(); }
  void insert(K k, V v) {
    for (auto& e : e_)
      if (e.key() == k) return;
    e_.emplace_back(std::move(k), std::move(v));
  }
  void insert_or_assign(K k, V v) {
    for (auto& e : e_)
      if (e.key() == k) {
        e = Entry(std::move(k), std::move(v));
        return;
      }
    e_.emplace_back(std::move(k), std::move(v));
  }
  const V& at(const K& k) const {
    for (auto& e : e_)
      if (e.key() == k) return e.value();
    throw Error("Argument passed to at() was not in the map.");
  }
  bool contains(const K& k) const {
    for (auto& e : e_)
      if (e.key() == k) return true;
    return false;
  }
  typename std::vector<Entry>::const_iterator begin() const { return e_.begin(); }
  typename std::vector<Entry>::const_iterator end() const { return e_.end(); }

 private:
  std::vector<Entry> e_;
};

/// c10::IValue: a TorchScript value (None, Tensor, int, float, bool, str, tuple, list, dict).
class IValue {
 public:
  IValue() : h_(own(tl_value_none())) {}
  IValue(const at::Tensor& t)  // NOLINT
      : h_(own(t.defined() ? tl_value_from_tensor(t.unsafeGetHandle()) : tl_value_none())) {}
  IValue(const at::Scalar& s) : h_(own(s.toCValue())) {}  // NOLINT
  IValue(double v) : h_(own(tl_value_from_double(v))) {}  // NOLINT
  IValue(bool v) : h_(own(tl_value_from_bool(v))) {}      // NOLINT
  template <typename I,
            std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  IValue(I v) : h_(own(tl_value_from_int(static_cast<int64_t>(v)))) {}                   // NOLINT
  IValue(const char* s) : h_(own(tl_value_from_string(s))) {}                            // NOLINT
  IValue(const std::string& s) : h_(own(tl_value_from_string(s.c_str()))) {}             // NOLINT
  IValue(std::string_view s) : IValue(std::string(s)) {}                                 // NOLINT
  IValue(std::nullopt_t) : IValue() {}                                                   // NOLINT
  IValue(const std::shared_ptr<ivalue::Tuple>& t) : IValue(makeTuple(t->elements())) {}  // NOLINT
  template <typename T>
  IValue(const std::vector<T>& v) : IValue(makeList(v)) {}  // NOLINT
  template <typename T>
  IValue(const List<T>& l) : IValue(makeList(l.vec())) {}  // NOLINT
  template <typename T>
  IValue(at::ArrayRef<T> v) : IValue(makeList(v.vec())) {}  // NOLINT
  template <typename K, typename V>
  IValue(const Dict<K, V>& d) : IValue(makeDict(d)) {}  // NOLINT
  template <typename... Ts>
  IValue(const std::tuple<Ts...>& t)
      : IValue(std::apply([](const auto&... x) { return makeTuple({IValue(x)...}); }, t)) {
  }  // NOLINT
  template <typename T>
  IValue(const std::optional<T>& v) : IValue(v ? IValue(*v) : IValue()) {}  // NOLINT
  /// Takes ownership of a C API value.
  explicit IValue(tl_value* v) : h_(own(v)) {}
  const tl_value* unsafeGetHandle() const { return h_->v; }

  bool isNone() const { return kind() == TL_VALUE_NONE; }
  bool isTensor() const { return kind() == TL_VALUE_TENSOR; }
  bool isDouble() const { return kind() == TL_VALUE_DOUBLE; }
  bool isInt() const { return kind() == TL_VALUE_INT; }
  bool isBool() const { return kind() == TL_VALUE_BOOL; }
  bool isString() const { return kind() == TL_VALUE_STRING; }
  bool isList() const { return kind() == TL_VALUE_LIST; }
  bool isTuple() const { return kind() == TL_VALUE_TUPLE; }
  bool isGenericDict() const { return kind() == TL_VALUE_DICT; }
  bool isScalar() const { return isInt() || isDouble() || isBool(); }
  bool isTensorList() const { return isList() && allElements(TL_VALUE_TENSOR); }
  bool isIntList() const { return isList() && allElements(TL_VALUE_INT); }
  bool isDoubleList() const { return isList() && allElements(TL_VALUE_DOUBLE); }
  bool isBoolList() const { return isList() && allElements(TL_VALUE_BOOL); }
  bool isObject() const { return kind() == TL_VALUE_OTHER; }
  /// A submodule read with Module::attr / named_attributes.
  bool isModule() const { return tl_value_is_module(h_->v) != 0; }
  torch::jit::Module toModule() const;
  bool isDevice() const { return false; }
  /// libtorch's name of the tag ("Tensor", "Int", "Tuple", "GenericList" ...).
  std::string tagKind() const {
    switch (kind()) {
      case TL_VALUE_NONE: return "None";
      case TL_VALUE_TENSOR: return "Tensor";
      case TL_VALUE_DOUBLE: return "Double";
      case TL_VALUE_INT: return "Int";
      case TL_VALUE_BOOL: return "Bool";
      case TL_VALUE_STRING: return "String";
      case TL_VALUE_LIST: return "GenericList";
      case TL_VALUE_TUPLE: return "Tuple";
      case TL_VALUE_DICT: return "GenericDict";
      default: return "Object";
    }
  }

  at::Tensor toTensor() const {
    expect(isTensor(), "Tensor");
    return at::detail::toTensor(h_->v);
  }
  int64_t toInt() const {
    expect(isInt(), "Int");
    return at::detail::Result<int64_t>::get(h_->v);
  }
  double toDouble() const {
    expect(isDouble(), "Double");
    return at::detail::Result<double>::get(h_->v);
  }
  bool toBool() const {
    expect(isBool(), "Bool");
    return at::detail::Result<bool>::get(h_->v);
  }
  at::Scalar toScalar() const {
    if (!isScalar()) expect(false, "Scalar");
    return at::detail::Result<at::Scalar>::get(h_->v);
  }
  const std::string& toStringRef() const {
    expect(isString(), "String");
    if (!h_->str) {
      const char* p = nullptr;
      size_t n = 0;
      at::detail::check(tl_value_to_string(h_->v, &p, &n));
      h_->str = std::string(p, n);
    }
    return *h_->str;
  }
  std::string_view toStringView() const { return toStringRef(); }
  std::shared_ptr<ivalue::Tuple> toTuple() const {
    expect(isTuple(), "Tuple");
    return ivalue::Tuple::create(elements());
  }
  List<IValue> toList() const {
    expect(isList(), "GenericList");
    return List<IValue>(elements());
  }
  List<at::Tensor> toTensorList() const {
    expect(isList(), "TensorList");
    std::vector<at::Tensor> out;
    for (const IValue& e : elements()) out.push_back(e.toTensor());
    return List<at::Tensor>(std::move(out));
  }
  std::vector<at::Tensor> toTensorVector() const { return toTensorList().vec(); }
  List<int64_t> toIntList() const {
    expect(isList(), "IntList");
    std::vector<int64_t> out;
    for (const IValue& e : elements()) out.push_back(e.toInt());
    return List<int64_t>(std::move(out));
  }
  std::vector<int64_t> toIntVector() const { return toIntList().vec(); }
  List<double> toDoubleList() const {
    expect(isList(), "DoubleList");
    std::vector<double> out;
    for (const IValue& e : elements()) out.push_back(e.toDouble());
    return List<double>(std::move(out));
  }
  std::vector<double> toDoubleVector() const { return toDoubleList().vec(); }
  Dict<IValue, IValue> toGenericDict() const {
    expect(isGenericDict(), "GenericDict");
    size_t n = 0;
    at::detail::check(tl_value_length(h_->v, &n));
    Dict<IValue, IValue> d;
    for (size_t i = 0; i < n; ++i) {
      tl_value* k = nullptr;
      tl_value* v = nullptr;
      at::detail::check(tl_value_dict_key(h_->v, i, &k));
      IValue key(k);
      at::detail::check(tl_value_dict_value(h_->v, i, &v));
      d.insert(key, IValue(v));
    }
    return d;
  }
  template <typename T>
  T to() const;

  /// Same kind and equal contents (ints, floats, bools, strings; tensors by identity).
  bool operator==(const IValue& o) const {
    if (kind() != o.kind()) return false;
    switch (kind()) {
      case TL_VALUE_NONE: return true;
      case TL_VALUE_INT: return toInt() == o.toInt();
      case TL_VALUE_DOUBLE: return toDouble() == o.toDouble();
      case TL_VALUE_BOOL: return toBool() == o.toBool();
      case TL_VALUE_STRING: return toStringRef() == o.toStringRef();
      case TL_VALUE_TENSOR: return toTensor().is_same(o.toTensor());
      default: return h_ == o.h_;
    }
  }
  bool operator!=(const IValue& o) const { return !(*this == o); }

  friend std::ostream& operator<<(std::ostream& out, const IValue& v) {
    char* s = tl_value_to_string_repr(v.h_->v);
    if (!s) at::detail::throwLast();
    out << s;
    tl_string_free(s);
    return out;
  }

 private:
  struct Box {
    tl_value* v;
    std::optional<std::string> str;
    ~Box() { tl_value_free(v); }
  };
  static std::shared_ptr<Box> own(tl_value* v) {
    if (!v) at::detail::throwLast();
    return std::shared_ptr<Box>(new Box{v, std::nullopt});
  }
  explicit IValue(std::shared_ptr<Box> b) : h_(std::move(b)) {}
  tl_value_kind kind() const { return tl_value_get_kind(h_->v); }
  void expect(bool ok, const char* what) const {
    if (!ok) throw Error(std::string("Expected ") + what + " but got " + tagKind());
  }
  std::vector<IValue> elements() const {
    size_t n = 0;
    at::detail::check(tl_value_length(h_->v, &n));
    std::vector<IValue> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      tl_value* e = nullptr;
      at::detail::check(tl_value_element(h_->v, i, &e));
      out.emplace_back(e);
    }
    return out;
  }
  bool allElements(tl_value_kind k) const {
    for (const IValue& e : elements())
      if (e.kind() != k) return false;
    return true;
  }
  static std::shared_ptr<Box> fromC(tl_status s, tl_value* v) {
    if (s != TL_OK) at::detail::throwLast();
    return own(v);
  }
  static IValue makeTuple(const std::vector<IValue>& e) {
    std::vector<tl_value*> raw;
    for (const IValue& x : e) raw.push_back(x.h_->v);
    tl_value* out = nullptr;
    tl_status s = tl_value_tuple(raw.data(), raw.size(), &out);
    return IValue(fromC(s, out));
  }
  template <typename T>
  static IValue makeList(const std::vector<T>& v) {
    std::vector<IValue> e(v.begin(), v.end());
    std::vector<tl_value*> raw;
    for (const IValue& x : e) raw.push_back(x.h_->v);
    tl_value* out = nullptr;
    tl_status s = tl_value_list(raw.data(), raw.size(), &out);
    return IValue(fromC(s, out));
  }
  template <typename K, typename V>
  static IValue makeDict(const Dict<K, V>& d) {
    std::vector<IValue> ks, vs;
    for (const auto& e : d) {
      ks.emplace_back(e.key());
      vs.emplace_back(e.value());
    }
    std::vector<tl_value*> rk, rv;
    for (size_t i = 0; i < ks.size(); ++i) {
      rk.push_back(ks[i].h_->v);
      rv.push_back(vs[i].h_->v);
    }
    tl_value* out = nullptr;
    tl_status s = tl_value_dict(rk.data(), rv.data(), rk.size(), &out);
    return IValue(fromC(s, out));
  }

  std::shared_ptr<Box> h_;
};

template <typename... Args>
std::shared_ptr<ivalue::Tuple> ivalue::Tuple::create(Args&&... args) {
  return create(std::vector<IValue>{IValue(std::forward<Args>(args))...});
}

template <typename T>
T IValue::to() const {
  if constexpr (std::is_same_v<T, at::Tensor>)
    return toTensor();
  else if constexpr (std::is_same_v<T, bool>)
    return toBool();
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(toInt());
  else if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(toDouble());
  else if constexpr (std::is_same_v<T, std::string>)
    return toStringRef();
  else if constexpr (std::is_same_v<T, IValue>)
    return *this;
  else
    static_assert(sizeof(T) == 0,
                  "torchless: IValue::to<T> supports Tensor, bool, integers, floats, std::string");
}

template <typename T>
inline std::ostream& operator<<(std::ostream& out, const List<T>& l) {
  out << "[";
  bool first = true;
  for (const auto& x : l) {
    if (!first) out << ", ";
    first = false;
    out << x;
  }
  return out << "]";
}

using GenericList = List<IValue>;
using GenericDict = Dict<IValue, IValue>;
template <typename T>
using intrusive_ptr = std::shared_ptr<T>;

}  // namespace c10

namespace at {
using c10::IValue;
/// at::NoGradGuard: nothing records gradients in torchless.
struct NoGradGuard {
  NoGradGuard() {}   // user-provided, as libtorch's: a guard variable is not "unused"
  ~NoGradGuard() {}  // NOLINT
};
struct AutoGradMode {
  explicit AutoGradMode(bool) {}
};
}  // namespace at

namespace torch {
using namespace at;  // as torch/types.h
using c10::IValue;
using Error = c10::Error;
using NoGradGuard = at::NoGradGuard;
using Dtype = c10::ScalarType;

/// torch::manual_seed: reseeds the default CPU generator, so that torch::rand / randn / randint /
/// randperm / normal_ / uniform_ / bernoulli give libtorch's numbers for the same seed (a fresh
/// process starts from a random seed, as libtorch's).
inline void manual_seed(uint64_t seed) {
  static const tl_op* op = at::detail::findOp("aten::manual_seed");
  at::detail::call<void>(op, static_cast<int64_t>(seed));
}

namespace cuda {
inline bool is_available() { return false; }
inline size_t device_count() { return 0; }
inline bool cudnn_is_available() { return false; }
}  // namespace cuda

namespace jit {
using c10::IValue;
using Stack = std::vector<IValue>;
using Kwargs = std::unordered_map<std::string, IValue>;

/// What a TorchScript `raise` inside a method becomes (a std::runtime_error, as in libtorch).
struct JITException : public std::runtime_error {
  explicit JITException(const std::string& msg,
                        std::optional<std::string> python_class_name = std::nullopt)
      : std::runtime_error(msg), python_class_name_(std::move(python_class_name)) {}
  std::optional<std::string> getPythonClassName() const { return python_class_name_; }

 private:
  std::optional<std::string> python_class_name_;
};

template <typename T>
struct Named {
  std::string name;
  T value;
};
using NamedTensor = Named<at::Tensor>;
using NamedIValue = Named<IValue>;

class Module;

/// torch::jit::Method: a method of a loaded module, callable with its arguments.
class Method {
 public:
  Method(std::shared_ptr<tl_module> m, std::string name)
      : m_(std::move(m)), name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  /// Keyword arguments are not provided (a call with them does not compile): pass them in order.
  IValue operator()(std::vector<IValue> stack, const Kwargs& kwargs) const = delete;
  IValue operator()(std::vector<IValue> stack) const {
    std::vector<const tl_value*> raw;
    for (const IValue& v : stack) raw.push_back(v.unsafeGetHandle());
    tl_value* out = nullptr;
    tl_status st = tl_module_run_method(m_.get(), name_.c_str(),
                                        const_cast<tl_value* const*>(raw.data()), raw.size(), &out);
    // As libtorch's interpreter: the model's own `raise` is a JITException.
    if (st == TL_ERROR_MODEL) throw JITException(tl_last_error());
    at::detail::check(st);
    return IValue(out);
  }
  size_t num_inputs() const = delete;  // not provided by torchless

 private:
  std::shared_ptr<tl_module> m_;
  std::string name_;
};

/// torch::jit::Module (also torch::jit::script::Module): a loaded TorchScript module.
class Module {
 public:
  Module() = default;
  explicit Module(tl_module* m) : m_(m, tl_module_free) {}

  IValue forward(std::vector<IValue> inputs) { return get_method("forward")(std::move(inputs)); }
  /// Keyword arguments are not provided (a call with them does not compile).
  IValue forward(std::vector<IValue> inputs, const Kwargs& kwargs) = delete;
  template <typename... Types>
  IValue run_method(const std::string& name, Types&&... args) {
    return get_method(name)(std::vector<IValue>{IValue(std::forward<Types>(args))...});
  }
  Method get_method(const std::string& name) const {
    if (!tl_module_has_method(handle(), name.c_str()))
      throw c10::Error("Method '" + name + "' is not defined.");
    return Method(m_, name);
  }
  std::optional<Method> find_method(const std::string& name) const {
    if (!tl_module_has_method(handle(), name.c_str())) return std::nullopt;
    return Method(m_, name);
  }
  std::vector<Method> get_methods() const {
    std::vector<Method> out;
    for (size_t i = 0; i < tl_module_num_methods(handle()); ++i)
      out.emplace_back(m_, tl_module_method_name(handle(), i));
    return out;
  }
  IValue attr(const std::string& name) const {
    tl_value* out = nullptr;
    at::detail::check(tl_module_attr(handle(), name.c_str(), &out));
    return IValue(out);
  }
  IValue attr(const std::string& name, IValue or_else) const {
    tl_value* out = nullptr;
    if (tl_module_attr(handle(), name.c_str(), &out) != TL_OK) return or_else;
    return IValue(out);
  }
  bool hasattr(const std::string& name) const {
    tl_value* out = nullptr;
    if (tl_module_attr(handle(), name.c_str(), &out) != TL_OK) return false;
    tl_value_free(out);
    return true;
  }
  std::vector<NamedTensor> named_parameters(bool recurse = true) const { return named(0, recurse); }
  std::vector<NamedTensor> named_buffers(bool recurse = true) const { return named(1, recurse); }
  std::vector<at::Tensor> parameters(bool recurse = true) const {
    std::vector<at::Tensor> out;
    for (auto& p : named_parameters(recurse)) out.push_back(p.value);
    return out;
  }
  std::vector<at::Tensor> buffers(bool recurse = true) const {
    std::vector<at::Tensor> out;
    for (auto& p : named_buffers(recurse)) out.push_back(p.value);
    return out;
  }
  /// Sets the `training` attribute of this module and every submodule, as libtorch's train();
  /// the methods are planned again on their next call. Training-mode kernels torchless lacks
  /// (dropout, for one) then throw c10::Error when reached.
  void train(bool on = true) { at::detail::check(tl_module_set_training(handle(), on ? 1 : 0)); }
  void eval() { train(false); }
  bool is_training() const { return tl_module_is_training(handle()) != 0; }
  /// Converts every parameter and buffer (of submodules too) to `dtype`, as libtorch's
  /// torch::jit::Module::to; only the CPU exists.
  void to(at::ScalarType dtype, bool = false) {
    at::detail::check(tl_module_to_dtype(handle(), static_cast<tl_dtype>(dtype)));
  }
  void to(at::Device d, bool = false) { at::detail::checkDevice(d); }
  void to(at::Device d, at::ScalarType dtype, bool non_blocking = false) {
    at::detail::checkDevice(d);
    to(dtype, non_blocking);
  }
  /// Attributes (parameters, buffers, submodules, plain values, `training`), each module's in
  /// definition order; with recurse, a submodule is followed by its own (dotted names).
  std::vector<NamedIValue> named_attributes(bool recurse = true) const {
    tl_value* raw = nullptr;
    at::detail::check(tl_module_named_attributes(handle(), recurse ? 1 : 0, &raw));
    IValue list(raw);
    std::vector<NamedIValue> out;
    size_t n = 0;
    at::detail::check(tl_value_length(raw, &n));
    for (size_t i = 0; i < n; ++i) {
      tl_value* item = nullptr;
      at::detail::check(tl_value_element(raw, i, &item));
      IValue pair(item);
      auto t = pair.toTuple();
      out.push_back({t->elements()[0].toStringRef(), t->elements()[1]});
    }
    return out;
  }
  std::vector<IValue> attributes(bool recurse = true) const {
    std::vector<IValue> out;
    for (auto& a : named_attributes(recurse)) out.push_back(a.value);
    return out;
  }
  /// The direct submodules, in definition order.
  std::vector<Named<Module>> named_children() const;
  std::vector<Module> children() const {
    std::vector<Module> out;
    for (auto& c : named_children()) out.push_back(c.value);
    return out;
  }
  /// This module (named "") and every submodule, depth first (dotted names).
  std::vector<Named<Module>> named_modules() const {
    std::vector<Named<Module>> out{{"", *this}};
    for (auto& c : named_children())
      for (auto& sub : c.value.named_modules())
        out.push_back({sub.name.empty() ? c.name : c.name + "." + sub.name, sub.value});
    return out;
  }
  std::vector<Module> modules() const {
    std::vector<Module> out;
    for (auto& m : named_modules()) out.push_back(m.value);
    return out;
  }

 private:
  tl_module* handle() const {
    if (!m_) throw c10::Error("the module is not loaded");
    return m_.get();
  }
  std::vector<NamedTensor> named(int which, bool recurse) const {
    tl_value* raw = nullptr;
    at::detail::check(tl_module_named_tensors(handle(), which, &raw));
    IValue list(raw);
    std::vector<NamedTensor> out;
    for (const IValue& e : list.toList()) {
      auto t = e.toTuple();
      std::string name = t->elements()[0].toStringRef();
      if (!recurse && name.find('.') != std::string::npos) continue;
      out.push_back({name, t->elements()[1].toTensor()});
    }
    return out;
  }
  std::shared_ptr<tl_module> m_;
};

inline std::vector<Named<Module>> Module::named_children() const {
  std::vector<Named<Module>> out;
  for (auto& a : named_attributes(false))
    if (a.value.isModule()) out.push_back({a.name, a.value.toModule()});
  return out;
}

/// torch::jit::load: a torch.jit.save archive; `device` may only be the CPU.
inline Module load(const std::string& path, std::optional<at::Device> device = std::nullopt) {
  if (device) at::detail::checkDevice(*device);
  tl_module* m = nullptr;
  at::detail::check(tl_module_load(path.c_str(), &m));
  return Module(m);
}
inline Module load(const std::string& path, at::DeviceType device) {
  return load(path, at::Device(device));
}

namespace script {
using Module = ::torch::jit::Module;
using Method = ::torch::jit::Method;
}  // namespace script
}  // namespace jit
}  // namespace torch

inline torch::jit::Module c10::IValue::toModule() const {
  tl_module* m = nullptr;
  if (tl_value_to_module(h_->v, &m) != TL_OK) throw Error("Expected Module but got " + tagKind());
  return torch::jit::Module(m);
}

/// TORCH_CHECK(cond, message parts...): throws c10::Error with the parts concatenated.
#define TORCH_CHECK(cond, ...)                                                                   \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::ostringstream torchless_msg_;                                                         \
      ::torchless_detail_concat(torchless_msg_, "Expected " #cond " to be true, but got false.", \
                                ##__VA_ARGS__);                                                  \
      throw ::c10::Error(torchless_msg_.str());                                                  \
    }                                                                                            \
  } while (false)
template <typename... A>
inline void torchless_detail_concat(std::ostream& out, const char* deflt, const A&... a) {
  if constexpr (sizeof...(A) == 0)
    out << deflt;
  else
    (out << ... << a);
}
