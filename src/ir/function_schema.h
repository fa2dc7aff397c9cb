#pragma once
// FunctionSchema: the signature of an operator, as c10::FunctionSchema in shape and in print.
//
//   aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
//   ^name     ^overload    ^arguments            ^kwarg-only marker   ^returns
//
// Grammar (torch/csrc/jit/frontend/function_schema_parser.cpp, schema_type_parser.cpp):
//
//   schema    := name ['.' overload] '(' [arg {',' arg}] ')' '->' returns
//   name      := ident ['::' ident]
//   arg       := '*' | '...' | type ['[' N ']' [alias] ['?']] ident ['=' default]
//   returns   := '...' | '(' [ret {',' ret}] ')' | ret
//   ret       := '...' | type ['[' N ']' [alias] ['?']] [ident]
//   type      := base [alias] {'[]' [alias] | '?'}
//   base      := 'Tensor' | 'Dict(' type ',' type ')' | '(' [type {',' type}] ')'
//              | 'Future(' type ')' | 'RRef(' type ')' | 'Await(' type ')' | 'Union(' types ')'
//              | int | float | str | Scalar | ... | lower-case ident (type variable)
//              | __torch__.a.b.C (class, through the resolver)
//   alias     := '(' set {'|' set} ['!'] ['->' set {'|' set}] ')' | '!'
//   set       := ident | '*'
//   default   := True | False | None | number | '-' number | string | '[' defaults ']'
//              | float | long | complex | strided | Mean | contiguous_format | inf | nan
//
// Printing (FunctionSchema::str) reproduces PyTorch's `str(schema)` byte for byte, including
// its quirks: `int[2] stride=1` for a default [1, 1], floats as `1.` and
// `1.0000000000000001e-05`, enum-like defaults as ints (`reduction=1`), Dimname as `str`.
// One deliberate difference: alias sets print in the order they were written, where PyTorch
// prints its unordered_set's order; so str(parse(s)) == s for every s PyTorch prints.

#include "core/ivalue.h"
#include "core/type.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace torchless {

/// The alias annotation of one argument or return (c10::AliasInfo):
///   Tensor(a)        before = after = {a}
///   Tensor(a!)       the same, and the value is written
///   Tensor(a -> *)   before {a}, after the wildcard set
///   Tensor(b|c)      may alias either set
///   Tensor(a!)[]     a list whose elements are in set a (a contained AliasInfo)
/// Sets are plain names without the `alias::` prefix; "*" is the wildcard.
class AliasInfo {
 public:
  static constexpr std::string_view kWildcard = "*";

  const std::vector<std::string>& beforeSets() const { return before_; }
  const std::vector<std::string>& afterSets() const { return after_; }
  bool isWrite() const { return isWrite_; }
  bool isWildcardBefore() const;
  bool isWildcardAfter() const;
  /// Alias infos of contained types (the elements of a list).
  const std::vector<AliasInfo>& containedTypes() const { return contained_; }

  /// Adds a set; a repeated name is ignored (sets, not lists).
  void addBeforeSet(std::string set);
  void addAfterSet(std::string set);
  void setIsWrite(bool w) { isWrite_ = w; }
  void addContainedType(AliasInfo info) { contained_.push_back(std::move(info)); }

  /// `(a! -> *)` as PyTorch prints it (operator<< in aten/src/ATen/core/alias_info.h).
  std::string str() const;
  bool operator==(const AliasInfo& o) const;
  bool operator!=(const AliasInfo& o) const { return !(*this == o); }

 private:
  std::vector<std::string> before_, after_;
  bool isWrite_ = false;
  std::vector<AliasInfo> contained_;
};

/// One argument or return of a schema (c10::Argument).
///
/// Two types, as in PyTorch: realType() is what the schema says (`ScalarType`, `SymInt[]`,
/// `MemoryFormat?`), type() is what TorchScript values of it carry (`int`, `int[]`, `int?`).
class Argument {
 public:
  Argument() = default;
  /// `N` is the size of a fixed-size list (`int[2]`); the type is then a plain ListType.
  Argument(std::string name, TypePtr realType, std::optional<int32_t> N = std::nullopt,
           std::optional<IValue> defaultValue = std::nullopt, bool kwargOnly = false,
           std::optional<AliasInfo> aliasInfo = std::nullopt);

  const std::string& name() const { return name_; }
  /// The type values carry: ScalarType, Layout, MemoryFormat and SymInt become int.
  const TypePtr& type() const { return type_; }
  /// The type as written in the schema.
  const TypePtr& realType() const { return realType_; }
  /// Size of a fixed-size list argument (`int[2]` -> 2).
  std::optional<int32_t> N() const { return N_; }
  const std::optional<IValue>& defaultValue() const { return defaultValue_; }
  bool kwargOnly() const { return kwargOnly_; }
  const std::optional<AliasInfo>& aliasInfo() const { return aliasInfo_; }
  /// A kwarg-only argument that is written (`*, Tensor(a!) out`), as Argument::is_out.
  bool isOut() const { return kwargOnly_ && aliasInfo_ && aliasInfo_->isWrite(); }

  /// `Tensor(a!)? out=None` as PyTorch prints it (operator<< in function_schema.h).
  std::string str() const;

 private:
  std::string name_;
  TypePtr type_, realType_;
  std::optional<int32_t> N_;
  std::optional<IValue> defaultValue_;
  bool kwargOnly_ = false;
  std::optional<AliasInfo> aliasInfo_;
};

/// `aten::add` + `Tensor`: a schema's name without its signature (c10::OperatorName).
struct OperatorName {
  std::string name;          // "aten::add"
  std::string overloadName;  // "Tensor", or empty
  /// "aten::add.Tensor", or "aten::add" without an overload name.
  std::string str() const { return overloadName.empty() ? name : name + "." + overloadName; }
  bool operator==(const OperatorName& o) const = default;
};

/// An operator signature (c10::FunctionSchema). Immutable once built.
struct FunctionSchema {
  FunctionSchema() = default;
  FunctionSchema(std::string name, std::string overloadName, std::vector<Argument> arguments,
                 std::vector<Argument> returns, bool isVararg = false, bool isVarret = false);

  /// Qualified name: "aten::add" (custom class methods have none: "__getstate__").
  const std::string& name() const { return name_.name; }
  const std::string& overloadName() const { return name_.overloadName; }
  const OperatorName& operatorName() const { return name_; }
  /// "aten" for "aten::add"; empty when the name has no namespace.
  std::string ns() const;
  const std::vector<Argument>& arguments() const { return arguments_; }
  const std::vector<Argument>& returns() const { return returns_; }
  /// `...` ends the arguments / the returns.
  bool isVararg() const { return isVararg_; }
  bool isVarret() const { return isVarret_; }

  /// Index of the argument called `name`, or nullopt.
  std::optional<size_t> argumentIndexWithName(std::string_view name) const;
  /// True when some argument is written (an alias annotation with `!`), as is_mutable().
  bool isMutable() const;
  /// True when argument `i` shares an alias set with a return (`self` of a view or of an
  /// in-place op), or an alias annotation on either is a wildcard, or `i` is past the
  /// declared arguments (varargs): what PyTorch's alias analysis would let the return alias.
  bool argumentMayAliasReturn(size_t i) const;

  /// The schema as PyTorch's str(schema) prints it (operator<< in function_schema.cpp).
  std::string str() const;

 private:
  OperatorName name_;
  std::vector<Argument> arguments_;
  std::vector<Argument> returns_;
  bool isVararg_ = false;
  bool isVarret_ = false;
};

/// Parses a full schema string. Throws torchless::Error("invalid schema: <what> at column C",
/// details = the schema with a caret). Follows torch::jit::parseSchema.
FunctionSchema parseSchema(std::string_view text, const TypeResolver& resolver = nullptr);

/// Parses `aten::relu` or `aten::add.Tensor` (a name without signature).
/// Throws torchless::Error as parseSchema does.
OperatorName parseName(std::string_view text);

/// A full schema or, when the text stops after the name, just the name
/// (torch::jit::parseSchemaOrName).
std::variant<OperatorName, FunctionSchema> parseSchemaOrName(
    std::string_view text, const TypeResolver& resolver = nullptr);

/// Prints a default value as PyTorch's IValue operator<< does: `None`, `True`, `1`, `1.`,
/// `0.10000000000000001`, `-inf`, `0.+1.j`, `"str"` (quoted, escaped), `[1, 2]`.
std::string printSchemaValue(const IValue& v);

namespace detail {
// Pieces of the schema grammar shared with type_parser.cpp. `nextAliasId` numbers the fresh
// sets made by the `Tensor!` shorthand (`$0`, `$1` ...) within one schema.

/// The schema flavour of the type grammar (SchemaTypeParser::parseType): parses a type with
/// its alias annotations, advances pos past it and trailing spaces. Fixed-size `[N]` is not
/// consumed (the argument parser handles it).
TypePtr parseSchemaType(std::string_view text, size_t& pos, std::optional<AliasInfo>& alias,
                        const TypeResolver& resolver, int& nextAliasId);
/// Parses an alias annotation at text[pos], if there is one.
std::optional<AliasInfo> parseAliasAnnotation(std::string_view text, size_t& pos, int& nextAliasId);
/// Throws the parser's syntax error for text[pos]: "invalid schema: what at column C".
[[noreturn]] void throwSyntaxError(std::string_view kind, std::string_view text, size_t pos,
                                   const std::string& what);
}  // namespace detail

}  // namespace torchless
