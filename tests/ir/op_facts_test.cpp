// Per-op facts (Note [Op facts]): set where ops are registered, read through the node's
// cached op-table entry (Node::maybeOperator).
#include "core/error.h"
#include "ir/ir.h"
#include "ir/ir_parser.h"
#include "ir/operator_registry.h"

#include <gtest/gtest.h>

#include <unordered_map>

namespace torchless {
namespace {

const OpInfo& op(const char* overload) {
  const OpInfo* info = OperatorRegistry::global().findOverload(overload);
  EXPECT_NE(info, nullptr) << overload;
  return *info;
}

TEST(OpFacts, FromSchemaAndFromRegistration) {
  // Prints and raises have effects but write nothing.
  EXPECT_TRUE(op("prim::Print").hasSideEffects);
  EXPECT_FALSE(op("prim::Print").mutates);
  EXPECT_TRUE(op("prim::RaiseException").hasSideEffects);
  EXPECT_TRUE(op("aten::warn").hasSideEffects);
  // Python code may write anything.
  EXPECT_TRUE(op("prim::PythonOp").mutates);
  // Writes come from the schema: list mutators and in-place ops.
  EXPECT_TRUE(op("aten::append.t").mutates);
  EXPECT_TRUE(op("aten::sort.int").mutates);
  EXPECT_FALSE(op("aten::sort").mutates);
  // Random: by registration (no Generator argument) and by a Generator overload.
  EXPECT_TRUE(op("aten::dropout").nondeterministic);
  EXPECT_TRUE(op("aten::rand").nondeterministic);
  EXPECT_FALSE(op("aten::add.Tensor").nondeterministic);
  // Foldable: none of the above, and not excluded at registration.
  EXPECT_TRUE(op("aten::add.Tensor").foldable);
  EXPECT_TRUE(op("aten::view").foldable);
  for (const char* o : {"aten::add_.Tensor", "aten::dropout", "aten::randn", "prim::Print",
                        "aten::dequantize.self", "prim::Uninitialized"})
    EXPECT_FALSE(op(o).foldable) << o;
}

TEST(OpFacts, AddFactsNeedsARegisteredName) {
  OperatorRegistry r;
  r.registerSchema("aten::relu(Tensor self) -> Tensor");
  r.addFacts("aten::relu", RegisteredFacts{.sideEffects = true});
  EXPECT_TRUE(r.findOverload("aten::relu")->hasSideEffects);
  EXPECT_FALSE(r.findOverload("aten::relu")->foldable);
  try {
    r.addFacts("aten::relu6", RegisteredFacts{.random = true});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aten::relu6, which is not registered"), std::string::npos)
        << e.what();
  }
}

TEST(OpFacts, NodeFactsComeFromTheMatchedOverload) {
  Graph g;
  std::unordered_map<std::string, Value*> v;
  parseIR(R"IR(
graph(%t : Tensor, %l : int[]):
  %0 : int = prim::Constant[value=0]()
  %1 : bool = prim::Constant[value=0]()
  %2 : float = prim::Constant[value=0.5]()
  %s : Tensor, %i : Tensor = aten::sort(%t, %0, %1)
   = aten::sort(%l, %1)
   = prim::Print(%t)
  %c : Tensor = prim::CallMethod[name="forward"](%t)
  %r : Tensor = aten::dropout(%t, %2, %1)
  return (%s)
)IR",
          &g, v);
  const Node* tensorSort = v.at("s")->node();
  const Node* listSort = tensorSort->next();
  EXPECT_EQ(tensorSort->maybeOperator(), &op("aten::sort"));
  EXPECT_FALSE(tensorSort->hasSideEffects());
  EXPECT_FALSE(tensorSort->mayWrite());
  // A list overload (`.any` and `.int` both fit; the matcher's choice is not this test's).
  ASSERT_NE(listSort->maybeOperator(), nullptr);
  EXPECT_TRUE(listSort->maybeOperator()->schema.returns().empty());
  EXPECT_TRUE(listSort->mayWrite());
  EXPECT_TRUE(listSort->hasSideEffects());
  const Node* print = listSort->next();
  EXPECT_EQ(print->maybeOperator(), &op("prim::Print"));
  EXPECT_TRUE(print->hasSideEffects());
  EXPECT_FALSE(print->mayWrite());
  // IR constructs have no entry; the IR states their facts.
  EXPECT_EQ(v.at("c")->node()->maybeOperator(), nullptr);
  EXPECT_TRUE(v.at("c")->node()->mayWrite());
  EXPECT_EQ(v.at("r")->node()->maybeOperator(), &op("aten::dropout"));
  EXPECT_TRUE(v.at("r")->node()->isNondeterministic());
  EXPECT_FALSE(tensorSort->isNondeterministic());
}

TEST(OpFacts, TheMatchIsCachedUntilTheInputsChange) {
  Graph g;
  std::unordered_map<std::string, Value*> v;
  parseIR(R"IR(
graph(%a : int, %b : int, %f : float):
  %c : int = aten::add(%a, %b)
  return (%c)
)IR",
          &g, v);
  Node* add = v.at("c")->node();
  EXPECT_EQ(add->maybeOperator(), &op("aten::add.int"));
  EXPECT_EQ(add->maybeOperator(), &op("aten::add.int"));
  add->replaceInput(1, v.at("f"));
  EXPECT_EQ(add->maybeOperator(), &op("aten::add.int_float"));
  // A new type of an input changes the match too.
  v.at("a")->setType(FloatType::get());
  EXPECT_EQ(add->maybeOperator(), &op("aten::add.float"));
  add->removeInput(1);
  EXPECT_EQ(add->maybeOperator(), nullptr);
}

}  // namespace
}  // namespace torchless
