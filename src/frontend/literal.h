#pragma once
// Constant expressions of TorchScript source: default arguments (the emitter), class
// constants, NamedTuple field defaults, Enum values and interface stubs' defaults (the script
// importer) all evaluate here, so both accept the same literals.

#include "core/ivalue.h"
#include "core/type.h"
#include "frontend/source.h"
#include "frontend/tree.h"

#include <optional>
#include <string>
#include <vector>

namespace torchless::frontend {

/// The member `name` of enum type `enumType` as a value (its holder), or nullopt when the type
/// is not an enum or has no such member.
std::optional<IValue> enumMember(const TypePtr& enumType, const std::string& name);

/// The value of constant expression `e` read as `type` (may be null: unknown). Accepted:
///  - numbers (an int read as `float` is a float; `2j` is a complex), `-` of a number, `inf`
///    and `nan`, strings, True, False, None;
///  - tuple and list literals of constants: a `List[T]` type makes a list of T and a tuple
///    type a tuple (a NamedTuple type: that NamedTuple), whichever brackets were written;
///    without one, `[...]` is a list whose element type is its first element's (Tensor when
///    empty) and `(...)` a tuple;
///  - `torch.device("cpu")`;
///  - `CONSTANTS.cN`: entry N of `constants` (the archive's constants table).
/// An Optional type reads None as None and anything else as its element type. Anything else
/// throws the compile error `notConstant` at `e`.
IValue evalLiteral(const Expr& e, const TypePtr& type, const std::vector<IValue>* constants,
                   const std::string& notConstant);

/// Entry `name` ("c3") of the constants table behind `CONSTANTS.cN`; throws a compile error at
/// `loc` when there is no table (outside archives), the name is not cN, or N is out of range.
const IValue& constantsTableEntry(const std::vector<IValue>* constants, const std::string& name,
                                  const SourceRange& loc);

}  // namespace torchless::frontend
