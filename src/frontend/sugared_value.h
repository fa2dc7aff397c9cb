#pragma once
// Sugared values: what a name or expression denotes before it becomes an IR Value
// (torch/csrc/jit/frontend/sugared_value.h in role). `torch` is a namespace of builtins,
// `self.layer1` a module, `x.view` a method bound to `x`, `range(n)` an iterable, `Foo` a
// class; only some of them (SimpleValue) are plain graph values. The emitter asks a sugared
// value for attributes, calls, iteration and indexing; each kind answers what it supports
// and rejects the rest with a TorchScript error at the use.

#include "frontend/schema_matching.h"
#include "frontend/source.h"
#include "ir/function.h"
#include "ir/ir.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torchless::frontend {

class Emitter;
struct SugaredValue;
using SugaredValuePtr = std::shared_ptr<SugaredValue>;

/// Base of all sugared values.
struct SugaredValue : std::enable_shared_from_this<SugaredValue> {
  virtual ~SugaredValue() = default;
  /// What it is, for messages ("builtin", "module", "range").
  virtual std::string kind() const = 0;
  /// As a graph value; the default rejects ("builtin cannot be used as a value").
  virtual Value* asValue(const SourceRange& loc, Emitter& e);
  /// `value.name`.
  virtual SugaredValuePtr attr(const SourceRange& loc, Emitter& e, const std::string& name);
  /// `value(args, kwargs)`.
  virtual SugaredValuePtr call(const SourceRange& loc, Emitter& e,
                               const std::vector<NamedValue>& args,
                               const std::vector<NamedValue>& kwargs, size_t nBinders);
  /// The elements when unpacked or iterated as a tuple (`a, b = v`, unrolled `for`).
  virtual std::vector<SugaredValuePtr> asTuple(const SourceRange& loc, Emitter& e,
                                               std::optional<size_t> sizeHint);
  /// For `for x in v`: an iterable with len() and getitem(); the default uses the value.
  virtual SugaredValuePtr iter(const SourceRange& loc, Emitter& e);
  /// Number of iterations (IterableValue kinds).
  virtual Value* len(const SourceRange& loc, Emitter& e);
  /// Element `idx` of an iteration (IterableValue kinds) or of a subscript.
  virtual SugaredValuePtr getitem(const SourceRange& loc, Emitter& e, Value* idx);
  /// True when iterating must unroll (tuples, module lists): the loop body is emitted once per
  /// element from asTuple().
  virtual bool shouldUnroll() const { return false; }
  /// Static length for zip/enumerate of unrolled iterables.
  virtual std::optional<int64_t> staticLen() const { return std::nullopt; }
};

/// A plain IR value; attributes and methods follow its type.
struct SimpleValue : SugaredValue {
  explicit SimpleValue(Value* v) : value_(v) {}
  std::string kind() const override;
  Value* asValue(const SourceRange&, Emitter&) override { return value_; }
  SugaredValuePtr attr(const SourceRange& loc, Emitter& e, const std::string& name) override;
  SugaredValuePtr call(const SourceRange& loc, Emitter& e, const std::vector<NamedValue>& args,
                       const std::vector<NamedValue>& kwargs, size_t nBinders) override;
  std::vector<SugaredValuePtr> asTuple(const SourceRange& loc, Emitter& e,
                                       std::optional<size_t> sizeHint) override;
  SugaredValuePtr iter(const SourceRange& loc, Emitter& e) override;
  Value* len(const SourceRange& loc, Emitter& e) override;
  SugaredValuePtr getitem(const SourceRange& loc, Emitter& e, Value* idx) override;
  bool shouldUnroll() const override;
  std::optional<int64_t> staticLen() const override;
  Value* value() const { return value_; }

 private:
  Value* value_;
};

/// An operator by name (`aten::add`), optionally bound to `self` (`x.add`).
struct BuiltinFunction : SugaredValue {
  BuiltinFunction(Symbol symbol, std::optional<NamedValue> self)
      : symbol_(symbol), self_(std::move(self)) {}
  std::string kind() const override { return "builtin"; }
  SugaredValuePtr call(const SourceRange& loc, Emitter& e, const std::vector<NamedValue>& args,
                       const std::vector<NamedValue>& kwargs, size_t nBinders) override;
  Symbol symbol_;
  std::optional<NamedValue> self_;
};

/// A namespace of builtins: `torch` (aten), `ops.prim`, `math`. Attributes are operators,
/// except the constants `torch` also holds (dtypes, layouts, `math.pi`).
struct BuiltinModule : SugaredValue {
  BuiltinModule(std::string ns, std::string displayName)
      : ns_(std::move(ns)), name_(std::move(displayName)) {}
  std::string kind() const override { return "builtin module"; }
  SugaredValuePtr attr(const SourceRange& loc, Emitter& e, const std::string& name) override;
  std::string ns_, name_;
};

/// `ops`: `ops.<ns>` is that namespace.
struct OpsValue : SugaredValue {
  std::string kind() const override { return "ops"; }
  SugaredValuePtr attr(const SourceRange& loc, Emitter& e, const std::string& name) override;
};

/// A qualified-name prefix (`__torch__`, `__torch__.foo`): classes and functions resolve
/// through CompileEnv once the full name is spelled.
struct QualifiedNamespace : SugaredValue {
  explicit QualifiedNamespace(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string kind() const override { return "namespace"; }
  SugaredValuePtr attr(const SourceRange& loc, Emitter& e, const std::string& name) override;
  std::string prefix_;
};

/// A script function: calls become prim::CallFunction.
struct FunctionValue : SugaredValue {
  explicit FunctionValue(GraphFunction* fn) : fn_(fn) {}
  std::string kind() const override { return "function"; }
  SugaredValuePtr call(const SourceRange& loc, Emitter& e, const std::vector<NamedValue>& args,
                       const std::vector<NamedValue>& kwargs, size_t nBinders) override;
  GraphFunction* fn_;
};

/// `obj.method`: calls become prim::CallMethod[name=method](obj, ...).
struct MethodValue : SugaredValue {
  MethodValue(Value* self, std::string name) : self_(self), name_(std::move(name)) {}
  std::string kind() const override { return "method"; }
  SugaredValuePtr call(const SourceRange& loc, Emitter& e, const std::vector<NamedValue>& args,
                       const std::vector<NamedValue>& kwargs, size_t nBinders) override;
  Value* self_;
  std::string name_;
};

/// A named type used as a value: a class (`__new__`, construction), a NamedTuple
/// (construction), an enum (members).
struct ClassValue : SugaredValue {
  explicit ClassValue(TypePtr type) : type_(std::move(type)) {}
  std::string kind() const override { return "class"; }
  SugaredValuePtr attr(const SourceRange& loc, Emitter& e, const std::string& name) override;
  SugaredValuePtr call(const SourceRange& loc, Emitter& e, const std::vector<NamedValue>& args,
                       const std::vector<NamedValue>& kwargs, size_t nBinders) override;
  TypePtr type_;
};

/// `Cls.__new__`: prim::CreateObject.
struct ClassNewValue : SugaredValue {
  explicit ClassNewValue(TypePtr type) : type_(std::move(type)) {}
  std::string kind() const override { return "__new__"; }
  SugaredValuePtr call(const SourceRange& loc, Emitter& e, const std::vector<NamedValue>& args,
                       const std::vector<NamedValue>& kwargs, size_t nBinders) override;
  TypePtr type_;
};

/// Special forms and Python builtins the emitter implements itself (`print`, `len`,
/// `range`, `isinstance`, ...), by name.
struct SpecialFormValue : SugaredValue {
  explicit SpecialFormValue(std::string name) : name_(std::move(name)) {}
  std::string kind() const override { return name_; }
  SugaredValuePtr call(const SourceRange& loc, Emitter& e, const std::vector<NamedValue>& args,
                       const std::vector<NamedValue>& kwargs, size_t nBinders) override;
  std::string name_;
};

/// An exception class (`RuntimeError`); calling it gives an ExceptionMessageValue.
struct ExceptionValue : SugaredValue {
  explicit ExceptionValue(std::string name) : name_(std::move(name)) {}
  std::string kind() const override { return "exception"; }
  SugaredValuePtr call(const SourceRange& loc, Emitter& e, const std::vector<NamedValue>& args,
                       const std::vector<NamedValue>& kwargs, size_t nBinders) override;
  std::string name_;
};

/// `RuntimeError("msg")`: what `raise` takes.
struct ExceptionMessageValue : SugaredValue {
  ExceptionMessageValue(Value* message, Value* qualifiedClassName)
      : message_(message), qualifiedClassName_(qualifiedClassName) {}
  std::string kind() const override { return "exception message"; }
  Value* message_;
  Value* qualifiedClassName_;
};

/// `range(...)`: len is the end (one argument) or aten::__range_length; element i is i or
/// aten::__derive_index(i, start, step).
struct RangeValue : SugaredValue {
  RangeValue(const SourceRange& loc, Emitter& e, std::vector<Value*> inputs);
  std::string kind() const override { return "range"; }
  SugaredValuePtr iter(const SourceRange&, Emitter&) override { return shared_from_this(); }
  Value* len(const SourceRange& loc, Emitter& e) override;
  SugaredValuePtr getitem(const SourceRange& loc, Emitter& e, Value* idx) override;
  Value* start_ = nullptr;
  Value* end_ = nullptr;
  Value* step_ = nullptr;
  bool hasOnlyEnd_ = false;
};

/// `enumerate(...)` / `zip(...)`: iterables iterated together; len is prim::min of the lens.
struct IterableTree : SugaredValue {
  std::string kind() const override { return "iterable tree"; }
  SugaredValuePtr iter(const SourceRange&, Emitter&) override { return shared_from_this(); }
  Value* len(const SourceRange& loc, Emitter& e) override;
  SugaredValuePtr getitem(const SourceRange& loc, Emitter& e, Value* idx) override;
  bool shouldUnroll() const override;
  std::vector<SugaredValuePtr> asTuple(const SourceRange& loc, Emitter& e,
                                       std::optional<size_t> sizeHint) override;
  std::vector<SugaredValuePtr> children_;
};

/// A tuple of sugared values (a ModuleList's elements, `(a, b)` of non-simple values).
struct SugaredTupleValue : SugaredValue {
  explicit SugaredTupleValue(std::vector<SugaredValuePtr> elems) : elems_(std::move(elems)) {}
  std::string kind() const override { return "tuple"; }
  std::vector<SugaredValuePtr> asTuple(const SourceRange&, Emitter&,
                                       std::optional<size_t>) override {
    return elems_;
  }
  SugaredValuePtr iter(const SourceRange&, Emitter&) override { return shared_from_this(); }
  bool shouldUnroll() const override { return true; }
  std::optional<int64_t> staticLen() const override { return int64_t(elems_.size()); }
  std::vector<SugaredValuePtr> elems_;
};

/// A module container (ModuleList / Sequential / ModuleDict) value: unrolled iteration and
/// constant indexing over its submodules.
struct ModuleContainerValue : SugaredValue {
  explicit ModuleContainerValue(Value* self) : self_(self) {}
  std::string kind() const override { return "module container"; }
  Value* asValue(const SourceRange&, Emitter&) override { return self_; }
  SugaredValuePtr attr(const SourceRange& loc, Emitter& e, const std::string& name) override;
  SugaredValuePtr call(const SourceRange& loc, Emitter& e, const std::vector<NamedValue>& args,
                       const std::vector<NamedValue>& kwargs, size_t nBinders) override;
  std::vector<SugaredValuePtr> asTuple(const SourceRange& loc, Emitter& e,
                                       std::optional<size_t> sizeHint) override;
  SugaredValuePtr iter(const SourceRange&, Emitter&) override { return shared_from_this(); }
  bool shouldUnroll() const override { return true; }
  std::optional<int64_t> staticLen() const override;
  Value* self_;
};

/// `CONSTANTS`: `CONSTANTS.cN` is a prim::Constant of the archive's constant N.
struct ConstantTableValue : SugaredValue {
  std::string kind() const override { return "constants table"; }
  SugaredValuePtr attr(const SourceRange& loc, Emitter& e, const std::string& name) override;
};

/// Wraps a value as a sugared value (modules containers become ModuleContainerValue).
SugaredValuePtr makeSugared(Value* v);

/// True for the class names of torch.nn containers (ModuleList, Sequential, ModuleDict).
bool isModuleContainer(const TypePtr& type);

}  // namespace torchless::frontend
