#pragma once
// Interned symbols (c10::Symbol in shape): `aten::add`, `prim::Loop`, `attr::value`.
//
// A Symbol is a 32-bit id into a process-wide table of qualified strings, so comparing and
// hashing are integer operations. The symbols the IR itself relies on are fixed at compile time
// (`prim::Constant`, `attr::value` ...) and can be used in `switch` statements:
//
//   switch (node->kind()) {
//     case prim::Constant: ...
//     case prim::If: ...
//   }
//
// Every other symbol is interned on first use: `Symbol::fromQualString("my_ops::foo")`,
// `Symbol::aten("relu")`. Namespaces are symbols too (`namespaces::aten`). The table is
// guarded by a mutex; Symbols stay valid for the life of the process.

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace torchless {

// The fixed symbols. Their order fixes their ids; `namespaces::namespaces` must come first.
#define TORCHLESS_FORALL_NS_SYMBOLS(_) \
  _(namespaces, namespaces)            \
  _(namespaces, prim)                  \
  _(namespaces, aten)                  \
  _(namespaces, attr)                  \
  _(namespaces, onnx)                  \
  _(namespaces, quantized)             \
  _(namespaces, user)                  \
  _(namespaces, scope)                 \
  _(prim, Constant)                    \
  _(prim, If)                          \
  _(prim, Loop)                        \
  _(prim, Return)                      \
  _(prim, Param)                       \
  _(prim, GetAttr)                     \
  _(prim, SetAttr)                     \
  _(prim, CallMethod)                  \
  _(prim, CallFunction)                \
  _(prim, ListConstruct)               \
  _(prim, ListUnpack)                  \
  _(prim, TupleConstruct)              \
  _(prim, TupleUnpack)                 \
  _(prim, TupleIndex)                  \
  _(prim, TupleSlice)                  \
  _(prim, DictConstruct)               \
  _(prim, DictIndex)                   \
  _(prim, RaiseException)              \
  _(prim, Print)                       \
  _(prim, unchecked_cast)              \
  _(prim, unchecked_unwrap_optional)   \
  _(prim, Uninitialized)               \
  _(prim, NumToTensor)                 \
  _(prim, ImplicitTensorToNum)         \
  _(prim, device)                      \
  _(prim, dtype)                       \
  _(prim, layout)                      \
  _(prim, shape)                       \
  _(prim, requires_grad)               \
  _(prim, is_cuda)                     \
  _(prim, data)                        \
  _(prim, Enter)                       \
  _(prim, Exit)                        \
  _(prim, fork)                        \
  _(prim, awaitable)                   \
  _(prim, Closure)                     \
  _(prim, CreateObject)                \
  _(prim, isinstance)                  \
  _(prim, EnumName)                    \
  _(prim, EnumValue)                   \
  _(prim, ModuleContainerIndex)        \
  _(prim, StringIndex)                 \
  _(prim, Store)                       \
  _(prim, Load)                        \
  _(prim, With)                        \
  _(prim, Guard)                       \
  _(prim, BailOut)                     \
  _(prim, TypeCheck)                   \
  _(prim, FusionGroup)                 \
  _(prim, DifferentiableGraph)         \
  _(prim, FunctionalGraph)             \
  _(prim, TensorExprGroup)             \
  _(prim, PythonOp)                    \
  _(prim, IgnoredPythonOp)             \
  _(prim, AutogradZero)                \
  _(prim, AutogradAdd)                 \
  _(prim, ConstantChunk)               \
  _(prim, BroadcastSizes)              \
  _(prim, ListIndex)                   \
  _(prim, tolist)                      \
  _(prim, min)                         \
  _(prim, max)                         \
  _(prim, abs)                         \
  _(prim, rpc_async)                   \
  _(prim, profile)                     \
  _(prim, AddStatValue)                \
  _(prim, TimePoint)                   \
  _(aten, add)                         \
  _(aten, sub)                         \
  _(aten, mul)                         \
  _(aten, div)                         \
  _(aten, __is__)                      \
  _(aten, __isnot__)                   \
  _(aten, __not__)                     \
  _(aten, __getitem__)                 \
  _(aten, _set_item)                   \
  _(aten, append)                      \
  _(aten, len)                         \
  _(aten, format)                      \
  _(aten, size)                        \
  _(aten, eq)                          \
  _(aten, ne)                          \
  _(aten, lt)                          \
  _(aten, gt)                          \
  _(aten, le)                          \
  _(aten, ge)                          \
  _(aten, Int)                         \
  _(aten, Float)                       \
  _(aten, Bool)                        \
  _(aten, ScalarImplicit)              \
  _(aten, wait)                        \
  _(aten, warn)                        \
  _(aten, copy_)                       \
  _(attr, value)                       \
  _(attr, name)                        \
  _(attr, Subgraph)                    \
  _(attr, types)                       \
  _(attr, profiled_type)

namespace detail {
enum class BuiltinSymbol : uint32_t {
#define TORCHLESS_DEFINE_ENUM(ns, s) ns##_##s,
  TORCHLESS_FORALL_NS_SYMBOLS(TORCHLESS_DEFINE_ENUM)
#undef TORCHLESS_DEFINE_ENUM
      kNumBuiltins
};
}  // namespace detail

/// An interned `namespace::name`. Cheap to copy, compare and hash.
class Symbol {
 public:
  using unique_t = uint32_t;

  constexpr Symbol() : value_(0) {}
  constexpr explicit Symbol(unique_t v) : value_(v) {}
  constexpr Symbol(detail::BuiltinSymbol b)  // NOLINT(google-explicit-constructor)
      : value_(static_cast<unique_t>(b)) {}

  /// Interns "ns::name". Throws torchless::Error when the string has no `::`.
  static Symbol fromQualString(std::string_view qualString);
  /// Interns `ns::name` from its two parts.
  static Symbol fromDomainAndUnqualString(std::string_view ns, std::string_view name);
  static Symbol aten(std::string_view name) { return fromDomainAndUnqualString("aten", name); }
  static Symbol prim(std::string_view name) { return fromDomainAndUnqualString("prim", name); }
  static Symbol attr(std::string_view name) { return fromDomainAndUnqualString("attr", name); }
  static Symbol onnx(std::string_view name) { return fromDomainAndUnqualString("onnx", name); }
  static Symbol scope(std::string_view name) { return fromDomainAndUnqualString("scope", name); }

  /// "aten::add".
  const std::string& toQualString() const;
  /// "add".
  std::string_view toUnqualString() const;
  /// The namespace as a symbol (`namespaces::aten`).
  Symbol ns() const;
  /// The namespace's name ("aten").
  std::string_view domainString() const;

  bool is_prim() const;
  bool is_aten() const;
  bool is_attr() const;
  bool is_onnx() const;

  constexpr operator unique_t() const { return value_; }  // NOLINT: enables switch
  constexpr unique_t value() const { return value_; }

 private:
  unique_t value_;
};

inline std::ostream& operator<<(std::ostream& out, Symbol s) { return out << s.toQualString(); }

// `prim::Constant`, `aten::add`, `attr::value` ... as compile-time constants.
#define TORCHLESS_DECLARE_SYMBOL(ns, s)                \
  namespace ns {                                       \
  constexpr Symbol s(detail::BuiltinSymbol::ns##_##s); \
  }
TORCHLESS_FORALL_NS_SYMBOLS(TORCHLESS_DECLARE_SYMBOL)
#undef TORCHLESS_DECLARE_SYMBOL

}  // namespace torchless

template <>
struct std::hash<torchless::Symbol> {
  size_t operator()(torchless::Symbol s) const noexcept { return std::hash<uint32_t>()(s.value()); }
};
