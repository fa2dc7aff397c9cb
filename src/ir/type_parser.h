#pragma once
// Types in the IR / schema spelling, shared by the FunctionSchema parser and the IR text parser:
//   Tensor   Float(3, 4, strides=[4, 1], requires_grad=0, device=cpu)   Long(*, 3)   FloatTensor
//   int[]  int[2]  Tensor?  Tensor?[]  Dict(str, Tensor)  (int, float)  NoneType  Future(int)
//   Scalar  ScalarType  Layout  MemoryFormat  Device  Generator  Storage  Any  t  t1[]
//   __torch__.a.B (through the resolver; without one, or when it returns null, a new ClassType
//   of that name)   Tensor(requires_grad=0)   Tensor(3, 4)   Enum<__torch__.E> (resolver only)
// Dimname parses as str and ConstQuantizerPtr as int, as in PyTorch. The schema flavour of
// this grammar, which keeps alias annotations, is detail::parseSchemaType (function_schema.h).

#include "core/type.h"

#include <string_view>

namespace torchless {

/// Parses one type starting at text[pos] and advances pos past it (and past trailing spaces).
/// Alias annotations such as `(a!)` are not consumed: the schema parser handles them between
/// the base type and `[]`/`?` suffixes, so this function stops before a `(` that follows
/// `Tensor` only when `stopBeforeAlias` is true. Throws torchless::Error with the column.
TypePtr parseIRType(std::string_view text, size_t& pos, const TypeResolver& resolver = nullptr,
                    bool stopBeforeAlias = false);

}  // namespace torchless
