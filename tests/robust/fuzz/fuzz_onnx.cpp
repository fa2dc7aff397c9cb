// libFuzzer target: ONNX export of parsed IR, as `torchless export GRAPH.ir` does: the IR text
// parser, the verifier, then exportGraph (preparation, the example run, the converters, the
// ONNX checker) with one small example per graph input (a tensor of the input's complete type
// when it has one of at most 4096 elements, else 2x3 floats; 1, 1.0 and False for numbers).
// Every loop runs at most 4 times (Note [Bounded loops in fuzz_onnx]).
// Only torchless::Error may escape; a crash, a sanitizer report, a hang (-timeout) or another
// exception is a bug.
#include "convert/onnx/onnx_export.h"
#include "core/error.h"
#include "core/tensor.h"
#include "ir/ir.h"
#include "ir/ir_parser.h"
#include "ir/operator_registry.h"
#include "ir/verifier.h"
#include "runtime/kernel.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

namespace {
bool example(const torchless::TypePtr& type, torchless::IValue& out) {
  using namespace torchless;
  if (type->kind() == TypeKind::IntType) return out = IValue(int64_t{1}), true;
  if (type->kind() == TypeKind::FloatType) return out = IValue(1.0), true;
  if (type->kind() == TypeKind::BoolType) return out = IValue(false), true;
  if (type->kind() != TypeKind::TensorType) return false;
  const auto& t = static_cast<const TensorType&>(*type);
  IntList sizes{2, 3};
  if (t.sizes()) {
    IntList known;
    int64_t numel = 1;
    for (const auto& s : *t.sizes()) {
      if (!s || *s < 0 || *s > 4096) return false;
      numel *= *s;
      if (numel > 4096) return false;
      known.push_back(*s);
    }
    sizes = known;
  }
  const ScalarType dtype = t.scalarType().value_or(ScalarType::Float);
  if (dtype != ScalarType::Float && dtype != ScalarType::Long && dtype != ScalarType::Bool)
    return false;
  Tensor x = Tensor::empty(sizes, dtype);
  std::memset(x.rawData(), 0, x.nbytes());
  out = IValue(x);
  return true;
}

// Note [Bounded loops in fuzz_onnx]
// The export runs the graph once on the examples, as torch.onnx.export runs the model. A
// mutated `while` whose condition never turns false (`i += 0`) then loops for ever, in our
// exporter as in PyTorch's: the program's behaviour, not a bug of the exporter. So every
// prim::Loop gets a trip count of at most kMaxTrips (a constant inserted before it), which
// keeps the loops, their conditions and carried values for the converters.
constexpr int64_t kMaxTrips = 4;

void boundLoops(torchless::Graph& g, torchless::Block* b) {
  using namespace torchless;
  for (Node* n : b->nodes()) {
    for (Block* inner : n->blocks()) boundLoops(g, inner);
    if (n->kind() != prim::Loop || n->inputs().empty()) continue;
    std::optional<IValue> m = toIValue(n->input(0));
    if (m && m->isInt() && m->toInt() <= kMaxTrips) continue;
    WithInsertPoint guard(n);
    n->replaceInput(0, g.insertConstant(IValue(kMaxTrips)));
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool once = (torchless::initOperatorRegistry(), torchless::initKernels(), true);
  (void)once;
  auto graph = std::make_shared<torchless::Graph>();
  try {
    torchless::parseIR(std::string_view(reinterpret_cast<const char*>(data), size), graph.get());
    torchless::verify(*graph);
    boundLoops(*graph, graph->block());  // Note [Bounded loops in fuzz_onnx]
    std::vector<torchless::IValue> inputs;
    for (const torchless::Value* v : graph->inputs()) {
      torchless::IValue x;
      if (!example(v->type(), x)) return 0;
      inputs.push_back(x);
    }
    (void)torchless::onnx_export::exportGraph(*graph, inputs);
  } catch (const torchless::Error&) {
  }
  return 0;
}
