#pragma once
// Reads PyTorch's graph text (what str(graph) prints and torch._C.parse_ir accepts) into a
// Graph. See Note [IR text] in ir_printer.cpp for the format. Beyond parse_ir, it keeps
// `# file:line:col` comments as node source locations, keeps value names (`%x.1` stays
// `x.1`; numeric names like `%5` become unnamed values, renumbered when printed), and reads
// every constant the printer writes: `1.`, `inf`, `2.+3.j`, `"a\n"`, `[1, 2]`, `(1, "a",
// None)`, `annotate(List[int], [])`, `{"a": 1}`, `torch.device("cpu")`, `{1.5}`,
// ` 1  2 [ CPULongType{2} ]` and `<Tensor>` (zeros of the output's complete tensor type).
//
//   auto g = std::make_shared<Graph>();
//   parseIR(R"IR(
//   graph(%x : Tensor):
//     %1 : int = prim::Constant[value=1]()
//     %y : Tensor = aten::add(%x, %x, %1) # m.py:3:11
//     return (%y)
//   )IR", g.get());

#include "core/type.h"
#include "ir/ir.h"

#include <string>
#include <string_view>
#include <unordered_map>

namespace torchless {

struct ParseIROptions {
  /// Named in error places ("FILE:line:col"); empty gives "line:col".
  std::string filename;
  /// Resolves class names (`__torch__.M`); unresolved names become fresh ClassTypes.
  TypeResolver resolver;
};

/// Parses `text` into the empty graph `graph`. Throws torchless::Error whose place is
/// "line:col" (1-based) of the offending token, with the line and a caret as details.
void parseIR(std::string_view text, Graph* graph, const ParseIROptions& options = {});

/// As parseIR, and fills `vmap` with every value by the name it has in the text
/// (`"x.1"`, `"5"`).
void parseIR(std::string_view text, Graph* graph, std::unordered_map<std::string, Value*>& vmap,
             const ParseIROptions& options = {});

}  // namespace torchless
