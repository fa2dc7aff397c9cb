#pragma once
// Helpers shared by the register_*.cpp files that bind ops:: kernels to op-table schemas.
//
// Note [Binding kernels]
// A node's inputs arrive on the stack exactly as the schema lists them: the IR passes every
// argument, defaults included, so a kernel of a schema with n arguments always finds n values.
// Argument conversions follow the schema's types:
//   Scalar                  int, float or bool            -> ops::Scalar
//   Tensor?                 None or a Tensor              -> std::optional<Tensor>
//   int[N] (N > 1)          a list, or one int repeated   -> IntList
//   ScalarType?/Layout?...  None or an int (c10 numbering) -> std::optional<ScalarType> ...
//   Device?                 None or a Device              -> ignored (CPU only)
// Kernels are registered by the op-table name `aten::add.Tensor` (overload key); the table
// maps it to the exact schema string, so a name that is not in the table stops start-up
// just as an unknown schema string does.
//
// kernel<N>(fn) wraps fn(const IValue* args) over the last N stack values: fn returns one
// IValue (or a Tensor), or a std::tuple of Tensors for multi-return schemas, which are
// pushed in order. Nothing is looked up at run time.

#include "core/error.h"
#include "ir/operator_registry.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "runtime/kernel.h"

#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace torchless::kreg {

using ops::Scalar;

/// The schema string of op-table entry `overloadKey` ("aten::add.Tensor", "aten::relu").
/// Throws torchless::Error when the table has no such entry.
inline const std::string& schemaOf(std::string_view overloadKey) {
  const OpInfo* op = OperatorRegistry::global().findOverload(overloadKey);
  if (!op) throw Error(fmt::format("kernel for unknown operator '{}'", overloadKey));
  return op->key;
}

/// Registers `op` for the entry named `overloadKey`.
inline void def(KernelRegistry& r, std::string_view overloadKey, Operation op) {
  r.registerKernel(schemaOf(overloadKey), std::move(op));
}
inline void defCreator(KernelRegistry& r, std::string_view overloadKey, OperationCreator c) {
  r.registerKernelCreator(schemaOf(overloadKey), std::move(c));
}

template <typename T>
struct IsTuple : std::false_type {};
template <typename... Ts>
struct IsTuple<std::tuple<Ts...>> : std::true_type {};

/// Pushes a result: one value, or each element of a std::tuple (multi-return schemas).
template <typename R>
inline void pushResult(Stack& s, R&& r) {
  using D = std::decay_t<R>;
  if constexpr (IsTuple<D>::value) {
    std::apply([&s](auto&&... vs) { (s.emplace_back(std::move(vs)), ...); }, std::forward<R>(r));
  } else {
    s.emplace_back(std::forward<R>(r));
  }
}

/// An Operation over the last N stack values (see Note [Binding kernels]).
template <size_t N, typename Fn>
Operation kernel(Fn fn) {
  return [fn = std::move(fn)](Stack& s) {
    const IValue* args = s.data() + (s.size() - N);
    if constexpr (std::is_void_v<decltype(fn(args))>) {
      fn(args);
      drop(s, N);
    } else {
      auto r = fn(args);
      drop(s, N);
      pushResult(s, std::move(r));
    }
  };
}

/// Registers kernel<N>(fn) for `overloadKey`.
template <size_t N, typename Fn>
void defN(KernelRegistry& r, std::string_view overloadKey, Fn fn) {
  def(r, overloadKey, kernel<N>(std::move(fn)));
}

/// The in-place variant of a functional entry (`aten::add_.Tensor` for `aten::add.Tensor`:
/// same overload name, same arguments), or nullptr.
const OpInfo* inplaceVariant(const OpInfo& functional);
/// The `out=` variants of a functional entry: overloads of the same name taking its
/// arguments plus one trailing `Tensor(a!) out` (`aten::add.out` for `aten::add.Tensor`).
std::vector<const OpInfo*> outVariants(const OpInfo& functional);

Tensor writeOut(const Tensor& out, const Tensor& result);
Tensor assignInPlace(const IValue& selfValue, const Tensor& result);

/// Registers fn (fn(const IValue* args) -> Tensor) for the functional entry `overloadKey`
/// and derives the in-place variant (result written into self, self returned) and the out=
/// variants (result written into out) that the table has and that have no kernel yet.
template <typename Fn>
void defFamily(KernelRegistry& r, std::string_view overloadKey, Fn fn, bool inplace = true,
               bool out = true) {
  const OpInfo* op = OperatorRegistry::global().findOverload(overloadKey);
  if (!op) throw Error(fmt::format("kernel for unknown operator '{}'", overloadKey));
  const size_t n = op->schema.arguments().size();
  r.registerKernel(op->key, [fn, n](Stack& s) {
    const IValue* args = s.data() + (s.size() - n);
    Tensor res = fn(args);
    drop(s, n);
    s.emplace_back(std::move(res));
  });
  if (inplace) {
    if (const OpInfo* ip = inplaceVariant(*op); ip && !ip->kernel) {
      r.registerKernel(ip->key, [fn, n](Stack& s) {
        const IValue* args = s.data() + (s.size() - n);
        Tensor self = assignInPlace(args[0], fn(args));
        drop(s, n);
        s.emplace_back(std::move(self));
      });
    }
  }
  if (out) {
    for (const OpInfo* o : outVariants(*op)) {
      if (o->kernel) continue;
      r.registerKernel(o->key, [fn, n](Stack& s) {
        const IValue* args = s.data() + (s.size() - n - 1);
        Tensor res = writeOut(args[n].toTensor(), fn(args));
        drop(s, n + 1);
        s.emplace_back(std::move(res));
      });
    }
  }
}

// ---- argument conversions ----

inline Scalar toScalar(const IValue& v) {
  switch (v.tag()) {
    case IValue::Tag::Int: return Scalar(v.toInt());
    case IValue::Tag::Double: return Scalar(v.toDouble());
    case IValue::Tag::Bool: return Scalar(v.toBool());
    case IValue::Tag::Tensor: {
      // A 0-dim tensor where a number is expected (aten::ScalarImplicit semantics).
      Tensor t = v.toTensor();
      if (t.numel() != 1)
        throw Error(
            fmt::format("a Tensor with {} elements cannot be converted to Scalar", t.numel()));
      if (isFloatingType(t.dtype())) return Scalar(t.itemDouble());
      if (t.dtype() == ScalarType::Bool) return Scalar(t.itemBool());
      return Scalar(t.itemInt());
    }
    default: throw Error(fmt::format("expected a number but got {}", v.tagName()));
  }
}
inline std::optional<Scalar> toOptScalar(const IValue& v) {
  if (v.isNone()) return std::nullopt;
  return toScalar(v);
}
/// A Scalar as an IValue (int, float or bool).
inline IValue fromScalar(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Double: return IValue(s.toDouble());
    case Scalar::Kind::Int: return IValue(s.toLong());
    default: return IValue(s.toBool());
  }
}
inline std::optional<Tensor> toOptTensor(const IValue& v) {
  if (v.isNone()) return std::nullopt;
  return v.toTensor();
}
inline std::optional<int64_t> toOptInt(const IValue& v) {
  if (v.isNone()) return std::nullopt;
  return v.toInt();
}
inline std::optional<double> toOptDouble(const IValue& v) {
  if (v.isNone()) return std::nullopt;
  return v.toScalarDouble();
}
inline std::optional<bool> toOptBool(const IValue& v) {
  if (v.isNone()) return std::nullopt;
  return v.toBool();
}
/// int[] (a list, or one int for every dim when the schema says int[N]).
inline IntList toIntList(const IValue& v, size_t n = 0) {
  if (v.isInt()) return IntList(n ? n : 1, v.toInt());
  IntList out;
  const auto& l = v.toList()->list;
  out.reserve(l.size());
  for (const auto& e : l) out.push_back(e.toInt());
  if (n > 1 && out.size() == 1) out.resize(n, out[0]);
  return out;
}
inline std::optional<IntList> toOptIntList(const IValue& v, size_t n = 0) {
  if (v.isNone()) return std::nullopt;
  return toIntList(v, n);
}
inline ScalarType toDtype(const IValue& v) {
  auto t = scalarTypeFromInt(v.toInt());
  if (!t) throw Error(fmt::format("unknown ScalarType {}", v.toInt()));
  return *t;
}
inline std::optional<ScalarType> toOptDtype(const IValue& v) {
  if (v.isNone()) return std::nullopt;
  return toDtype(v);
}
/// Tensor?[] (aten::index): None entries stay nullopt.
inline std::vector<std::optional<Tensor>> toOptTensorList(const IValue& v) {
  std::vector<std::optional<Tensor>> out;
  for (const auto& e : v.toList()->list) out.push_back(toOptTensor(e));
  return out;
}
/// A Tensor? argument that may not be None.
inline Tensor toTensorChecked(const IValue& v, const char* what) {
  if (v.isNone()) throw Error(fmt::format("{} must be a Tensor, not None", what));
  return v.toTensor();
}

/// Device? arguments: only the CPU runs.
inline void checkCpu(const IValue& device) {
  if (device.isNone()) return;
  if (device.isDevice() && !device.toDevice().isCpu())
    throw Error(
        fmt::format("device '{}' is not available: torchless runs on the CPU only (a model "
                    "saved on a GPU runs with --map-location cpu)",
                    device.toDevice().str()));
  if (device.isString() && device.toStringRef().rfind("cpu", 0) != 0)
    throw Error(
        fmt::format("device '{}' is not available: torchless runs on the CPU only (a model "
                    "saved on a GPU runs with --map-location cpu)",
                    device.toStringRef()));
}

/// A List[Tensor] IValue.
IValue tensorList(std::vector<Tensor> tensors);

/// upsample_*.vec arguments: the n scale factors of a float[]? (None: all unset), and the output
/// size, output_size or floor(input size * scale_factor) per spatial dim (the last n dims of x).
/// Throws when both are None.
std::vector<std::optional<double>> scalesOf(const IValue& v, size_t n);
IntList vecOutputSize(const Tensor& x, const IValue& outputSize, const IValue& scaleFactors,
                      size_t n);

}  // namespace torchless::kreg
