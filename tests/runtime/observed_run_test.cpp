// Observed runs of the interpreter (runtime/observed_run.h, Note [Execution observer]): the
// observer hears every step in execution order, and the run computes what an ordinary run
// computes.
#include "runtime/observed_run.h"
#include "ir/ir_parser.h"
#include "runtime/interpreter.h"
#include "runtime/kernel.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

using namespace torchless;

namespace {

/// Writes each event as one word.
struct Recorder : ExecutionObserver {
  std::vector<std::string> events;
  void enterCall(const Node* caller, const Graph&, const IValue*, size_t n) override {
    events.push_back(fmt::format("call({}{})", caller ? "nested, " : "", n));
  }
  void exitCall(const Node*, const Graph&, const IValue*, size_t n) override {
    events.push_back(fmt::format("return({})", n));
  }
  void afterOp(const Node& node, const OpInfo* op, const std::vector<IValue>& inputs, const IValue*,
               size_t n) override {
    events.push_back(fmt::format("{}({}->{}{})", node.kind().toQualString(), inputs.size(), n,
                                 op ? "" : ", no schema"));
  }
  void enterIf(const Node&, size_t block) override { events.push_back(fmt::format("if{}", block)); }
  void exitIf(const Node&, size_t block) override {
    events.push_back(fmt::format("endif{}", block));
  }
  void enterLoop(const Node&) override { events.push_back("loop"); }
  void endIteration(const Node&) override { events.push_back("next"); }
  void exitLoop(const Node&) override { events.push_back("endloop"); }
  void afterGetAttr(const Node&, const IValue&) override { events.push_back("getattr"); }
  void beforeSetAttr(const Node&, const IValue&, const IValue&) override {
    events.push_back("setattr");
  }
};

constexpr const char* kGraph = R"IR(
graph(%x : Tensor, %n : int, %c : bool):
  %one : int = prim::Constant[value=1]()
  %t : bool = prim::Constant[value=1]()
  %y : Tensor = prim::If(%c)
    block0():
      %a : Tensor = aten::neg(%x)
      -> (%a)
    block1():
      -> (%x)
  %z : Tensor = prim::Loop(%n, %t, %y)
    block0(%i : int, %acc : Tensor):
      %b : Tensor = aten::add(%acc, %acc, %one)
      -> (%t, %b)
  return (%z)
)IR";

std::unique_ptr<GraphFunction> function() {
  initKernels();
  auto g = std::make_shared<Graph>();
  parseIR(kGraph, g.get());
  FunctionSchema schema = GraphFunction::schemaFromGraph("f", *g);
  return std::make_unique<GraphFunction>("f", g, std::move(schema));
}

TEST(ObservedRun, EventsFollowExecution) {
  auto fn = function();
  Tensor x = Tensor::fromVector(std::vector<float>{1, -2}, {2});
  Recorder r;
  auto out = runObserved(*fn, {IValue(x), IValue(int64_t{2}), IValue(true)}, r);
  ASSERT_EQ(out.size(), 1u);
  const std::vector<std::string> want{
      "call(3)",         "if0",  "aten::neg(1->1)", "endif0",   "loop", "aten::add(3->1)", "next",
      "aten::add(3->1)", "next", "endloop",         "return(1)"};
  EXPECT_EQ(r.events, want);
  // The same numbers as an ordinary run: -x doubled twice.
  IValue plain = runFunction(*fn, {IValue(x), IValue(int64_t{2}), IValue(true)});
  EXPECT_EQ(out[0].toTensor().doubleAt(0), -4.0);
  EXPECT_EQ(out[0].toTensor().doubleAt(1), 8.0);
  EXPECT_EQ(plain.toTensor().doubleAt(0), -4.0);
}

TEST(ObservedRun, UntakenBranchAndEmptyLoop) {
  auto fn = function();
  Tensor x = Tensor::fromVector(std::vector<float>{3}, {1});
  Recorder r;
  auto out = runObserved(*fn, {IValue(x), IValue(int64_t{0}), IValue(false)}, r);
  const std::vector<std::string> want{"call(3)", "if1", "endif1", "loop", "endloop", "return(1)"};
  EXPECT_EQ(r.events, want);
  EXPECT_EQ(out[0].toTensor().doubleAt(0), 3.0);
}

TEST(ObservedRun, ObserverErrorsGetThePlaceOfTheNode) {
  struct Thrower : Recorder {
    void afterOp(const Node&, const OpInfo*, const std::vector<IValue>&, const IValue*,
                 size_t) override {
      throw Error("refused");
    }
  };
  auto fn = function();
  Thrower t;
  try {
    runObserved(
        *fn,
        {IValue(Tensor::fromVector(std::vector<float>{1}, {1})), IValue(int64_t{1}), IValue(true)},
        t);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "refused");
    EXPECT_NE(std::string(e.what()).find("aten::neg"), std::string::npos) << e.what();
  }
}

}  // namespace
