// Constructs of PyTorch's printed code that real archives use and the emitter once lacked:
// each compiles as PyTorch compiles it (graphs checked against torch 1.13.1's).
#include "frontend/script_importer.h"

#include "core/error.h"
#include "core/tensor.h"
#include "ir/verifier.h"

#include <gtest/gtest.h>

#include <map>

namespace torchless::frontend {
namespace {

/// An importer over one file `__torch__` (code/__torch__.py) with a constants table.
struct Fixture {
  std::string text;
  std::vector<IValue> constants;
  std::shared_ptr<CompilationUnit> unit = std::make_shared<CompilationUnit>();
  std::unique_ptr<ScriptImporter> importer;

  explicit Fixture(std::string t, std::vector<IValue> c = {})
      : text(std::move(t)), constants(std::move(c)) {
    importer = std::make_unique<ScriptImporter>(
        unit,
        [this](const std::string& q) -> std::optional<SourceFile> {
          if (q != "__torch__") return std::nullopt;
          return SourceFile{"code/__torch__.py", text};
        },
        &constants);
  }

  GraphFunction& function(const std::string& name) {
    GraphFunction* fn = importer->resolveFunction("__torch__." + name);
    EXPECT_NE(fn, nullptr) << name;
    verify(*fn->graph());
    return *fn;
  }
};

std::vector<const Node*> nodesOfKind(const Graph& g, Symbol kind) {
  std::vector<const Node*> out;
  for (const Node* n : g.nodes())
    if (n->kind() == kind) out.push_back(n);
  return out;
}

// reddit_bytelstm_v1 (sparse.py): `t? -> t` binds t from the element type of an annotated
// None. PyTorch: `%1 : int? = prim::Constant()`, `%2 : int = prim::unchecked_unwrap_optional(%1)`.
TEST(frontend_emitter_gaps, UncheckedUnwrapOfAnnotatedNone) {
  Fixture f(
      "def f(x: int) -> int:\n"
      "  if torch.__isnot__(None, None):\n"
      "    y = ops.prim.unchecked_unwrap_optional(annotate(Optional[int], None))\n"
      "  else:\n"
      "    y = x\n"
      "  return y\n"
      "def g() -> Optional[int]:\n"
      "  return annotate(Optional[int], None)\n");
  GraphFunction& fn = f.function("f");
  const Node* unwrap = nullptr;
  for (const Node* n : fn.graph()->nodes())
    for (const Block* b : n->blocks())
      for (const Node* m : b->nodes())
        if (m->kind() == prim::unchecked_unwrap_optional) unwrap = m;
  ASSERT_NE(unwrap, nullptr) << fn.graph()->toString(false);
  EXPECT_EQ(unwrap->output()->type()->reprStr(), "int");
  const Node* none = unwrap->input(0)->node();
  EXPECT_EQ(none->kind(), prim::Constant);
  EXPECT_FALSE(none->hasAttribute(attr::value));
  EXPECT_EQ(unwrap->input(0)->type()->reprStr(), "int?");
  // Returned as is, the annotated None keeps its Optional type (the schema's return type).
  GraphFunction& g = f.function("g");
  EXPECT_EQ(g.graph()->outputs()[0]->type()->reprStr(), "int?");
}

// A plain None still cannot bind t, as in PyTorch.
TEST(frontend_emitter_gaps, UncheckedUnwrapOfPlainNoneIsRejected) {
  Fixture f("def f() -> int:\n  return ops.prim.unchecked_unwrap_optional(None)\n");
  try {
    f.importer->resolveFunction("__torch__.f");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("could not be inferred"), std::string::npos) << e.what();
  }
}

// silero_vad_v4: `h: Tensor=CONSTANTS.c0` takes the default from the constants table.
TEST(frontend_emitter_gaps, ConstantsTableDefault) {
  Tensor c0 = Tensor::empty({2, 3}, ScalarType::Float);
  Fixture f(
      "def f(x: Tensor, h: Tensor=CONSTANTS.c0) -> Tensor:\n"
      "  return torch.add(x, h)\n"
      "def g(x: Tensor) -> Tensor:\n"
      "  return __torch__.f(x)\n",
      {IValue(c0)});
  GraphFunction& fn = f.function("f");
  const auto& h = fn.schema().arguments().at(1);
  ASSERT_TRUE(h.defaultValue().has_value());
  ASSERT_TRUE(h.defaultValue()->isTensor());
  EXPECT_EQ(h.defaultValue()->toTensor().data<float>(), c0.data<float>());
  // A call leaving it out passes the tensor as a constant.
  GraphFunction& g = f.function("g");
  auto calls = nodesOfKind(*g.graph(), prim::CallFunction);
  ASSERT_EQ(calls.size(), 1u) << g.graph()->toString(false);
  const Node* dflt = calls[0]->input(2)->node();
  EXPECT_EQ(dflt->kind(), prim::Constant);
  EXPECT_TRUE(dflt->hasAttribute(attr::value));
}

// Frozen archives: two weights of one shape (printed alike as `<Tensor>`) must stay two
// constants; constant pooling merged them once (resnet50's downsample conv took the weight of
// the conv before it).
TEST(frontend_emitter_gaps, SameShapeTensorConstantsAreNotPooled) {
  Tensor a = Tensor::empty({4, 4}, ScalarType::Float), b = Tensor::empty({4, 4}, ScalarType::Float);
  for (int64_t i = 0; i < 16; ++i) {
    a.data<float>()[i] = static_cast<float>(i);
    b.data<float>()[i] = static_cast<float>(-i);
  }
  Fixture f(
      "def f(x: Tensor) -> Tensor:\n"
      "  return torch.add(torch.mul(x, CONSTANTS.c0), CONSTANTS.c1)\n",
      {IValue(a), IValue(b)});
  GraphFunction& fn = f.function("f");
  size_t tensors = 0;
  for (const Node* n : nodesOfKind(*fn.graph(), prim::Constant))
    if (auto v = toIValue(n->output()); v && v->isTensor()) ++tensors;
  ASSERT_EQ(tensors, 2u) << fn.graph()->toString(false);
  const Node* mul = nodesOfKind(*fn.graph(), Symbol::aten("mul")).at(0);
  const Node* add = nodesOfKind(*fn.graph(), Symbol::aten("add")).at(0);
  EXPECT_EQ(toIValue(mul->input(1))->toTensor().rawData(), a.rawData());
  EXPECT_EQ(toIValue(add->input(1))->toTensor().rawData(), b.rawData());
}

TEST(frontend_emitter_gaps, ConstantsTableDefaultOutOfRange) {
  Fixture f("def f(x: Tensor, h: Tensor=CONSTANTS.c3) -> Tensor:\n  return x\n");
  try {
    f.importer->resolveFunction("__torch__.f");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range of the constants table"), std::string::npos)
        << e.what();
  }
}

// tchrs_foo7_classes / script_class: `X.__new__(X)` is prim::CreateObject of X; `__init__` is
// an ordinary prim::CallMethod.
TEST(frontend_emitter_gaps, ClassNew) {
  Fixture f(
      "class C:\n"
      "  a : Tensor\n"
      "  def __init__(self: __torch__.C, a: Tensor) -> NoneType:\n"
      "    self.a = a\n"
      "    return None\n"
      "class D:\n"
      "  b : int\n"
      "def make(x: Tensor) -> __torch__.C:\n"
      "  _0 = __torch__.C.__new__(__torch__.C)\n"
      "  _1 = (_0).__init__(x, )\n"
      "  return _0\n"
      "def bad() -> __torch__.C:\n"
      "  return __torch__.C.__new__(__torch__.D)\n");
  GraphFunction& fn = f.function("make");
  const Graph& g = *fn.graph();
  auto creates = nodesOfKind(g, prim::CreateObject);
  ASSERT_EQ(creates.size(), 1u) << g.toString(false);
  EXPECT_EQ(creates[0]->output()->type()->reprStr(), "__torch__.C");
  auto inits = nodesOfKind(g, prim::CallMethod);
  ASSERT_EQ(inits.size(), 1u) << g.toString(false);
  EXPECT_EQ(inits[0]->s(attr::name), "__init__");
  EXPECT_EQ(inits[0]->input(0), creates[0]->output());
  EXPECT_EQ(g.outputs()[0], creates[0]->output());
  try {
    f.importer->resolveFunction("__torch__.bad");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Argument to __new__() must match the class"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace torchless::frontend

namespace torchless::frontend {
namespace {
// reddit_bytelstm_v1 calls `ops.prim.shape(x)`: a builtin function in PyTorch (compiled from
// TorchScript source), which is `x.size()`; PyTorch's graph holds aten::size.
TEST(frontend_emitter_gaps, PrimShapeIsSize) {
  Fixture f(
      "def f(x: Tensor) -> List[int]:\n"
      "  return ops.prim.shape(x)\n");
  GraphFunction& fn = f.function("f");
  auto sizes = nodesOfKind(*fn.graph(), Symbol::aten("size"));
  ASSERT_EQ(sizes.size(), 1u) << fn.graph()->toString(false);
  EXPECT_EQ(sizes[0]->output()->type()->str(), "int[]");
}

// torchvision's detection models (`degen_bb = annotate(List[float], boxes[i].tolist())`):
// `x.tolist()` is typed by the annotation it is written under. PyTorch 1.13:
// `%a : float[][] = prim::tolist(%x, %dims=2, %elem=1)` (0 int, 1 float, 2 bool).
TEST(frontend_emitter_gaps, ToListTypedByItsAnnotation) {
  Fixture f(
      "def f(x: Tensor) -> List[List[float]]:\n"
      "  return annotate(List[List[float]], x.tolist())\n"
      "def g(x: Tensor) -> List[bool]:\n"
      "  b: List[bool] = x.tolist()\n"
      "  return b\n"
      "def h(x: Tensor) -> int:\n"
      "  return annotate(int, x.tolist())\n");
  auto check = [&](const char* name, const char* type, int64_t dims, int64_t elem) {
    GraphFunction& fn = f.function(name);
    auto nodes = nodesOfKind(*fn.graph(), Symbol::prim("tolist"));
    ASSERT_EQ(nodes.size(), 1u) << fn.graph()->toString(false);
    EXPECT_EQ(nodes[0]->output()->type()->str(), type);
    EXPECT_EQ(toIValue(nodes[0]->input(1))->toInt(), dims);
    EXPECT_EQ(toIValue(nodes[0]->input(2))->toInt(), elem);
  };
  check("f", "float[][]", 2, 1);
  check("g", "bool[]", 1, 2);
  check("h", "int", 0, 0);
}

// Note [Normalized op aliases]: PyTorch 1.13 compiles this function to
//   aten::transpose, aten::abs, aten::sub(%y, %x, %1), aten::clamp, aten::div, aten::eq(%b, %true),
//   aten::sigmoid, aten::movedim (and no alias).
TEST(frontend_emitter_gaps, OpAliasesNormalized) {
  Fixture f(
      "def f(x: Tensor, y: Tensor, b: bool) -> Tuple[Tensor, bool, Tensor]:\n"
      "  a = torch.swapaxes(x, 0, 1) + torch.absolute(x) + torch.rsub(x, y)\n"
      "  a = a + torch.clip(x, 0, 1) + torch.true_divide(x, y)\n"
      "  c = b is True\n"
      "  d = torch.special_expit(x) + torch.moveaxis(x, 0, 1)\n"
      "  return (a, c, d)\n");
  GraphFunction& fn = f.function("f");
  std::map<std::string, int> kinds;
  for (const Node* n : fn.graph()->nodes()) ++kinds[n->kind().toQualString()];
  for (const char* k : {"aten::transpose", "aten::abs", "aten::sub", "aten::clamp", "aten::div",
                        "aten::eq", "aten::sigmoid", "aten::movedim"})
    EXPECT_EQ(kinds[k], 1) << k << "\n" << fn.graph()->toString(false);
  for (const char* k :
       {"aten::swapaxes", "aten::absolute", "aten::rsub", "aten::clip", "aten::true_divide",
        "aten::__is__", "aten::special_expit", "aten::moveaxis"})
    EXPECT_EQ(kinds[k], 0) << k;
  // rsub(x, y) = y - x: the operands swap.
  for (const Node* n : fn.graph()->nodes())
    if (n->kind() == Symbol::aten("sub")) {
      EXPECT_EQ(n->input(0), fn.graph()->inputs()[1]);
      EXPECT_EQ(n->input(1), fn.graph()->inputs()[0]);
    }
}

// torchvision's transforms/functional.py as PyTorch prints it: an enum member as a default
// argument, the str `.value` of a str enum, and a Union declared by an annotated assignment in
// one branch of an if (PyTorch 1.13: `%padding2 : Union(int[], int) = prim::If(...)`).
TEST(frontend_emitter_gaps, EnumDefaultsAndDeclaredUnionsInBranches) {
  Fixture f(
      "class Mode(Enum):\n"
      "  NEAREST = \"nearest\"\n"
      "  BILINEAR = \"bilinear\"\n"
      "def name(m: __torch__.Mode=__torch__.Mode.BILINEAR) -> str:\n"
      "  return m.value\n"
      "def pad(padding: Union[List[int], int]) -> int:\n"
      "  if isinstance(padding, list):\n"
      "    padding0 = unchecked_cast(List[int], padding)\n"
      "    padding2 : Union[List[int], int] = padding0\n"
      "  else:\n"
      "    padding2 = unchecked_cast(int, padding)\n"
      "  if isinstance(padding2, int):\n"
      "    return unchecked_cast(int, padding2)\n"
      "  return 0\n");
  GraphFunction& name = f.function("name");
  const auto& arg = name.schema().arguments().at(0);
  ASSERT_TRUE(arg.defaultValue().has_value());
  ASSERT_TRUE(arg.defaultValue()->isEnum());
  EXPECT_EQ(arg.defaultValue()->toEnum()->name, "BILINEAR");
  EXPECT_EQ(name.graph()->outputs()[0]->type()->str(), "str");
  GraphFunction& pad = f.function("pad");
  auto ifs = nodesOfKind(*pad.graph(), prim::If);
  ASSERT_FALSE(ifs.empty()) << pad.graph()->toString(false);
  EXPECT_EQ(ifs[0]->output(0)->type()->str(), "Union(int[], int)");
}

TEST(frontend_emitter_gaps, ToListNeedsASupportedAnnotation) {
  auto message = [](const std::string& body) {
    Fixture f("def f(x: Tensor):\n" + body);
    try {
      f.importer->resolveFunction("__torch__.f");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("  return x.tolist()\n").find("Expected type hint for result of tolist()"),
            std::string::npos);
  EXPECT_NE(message("  return annotate(List[str], x.tolist())\n")
                .find("str is not one of the supported element types for tolist"),
            std::string::npos);
  EXPECT_NE(
      message("  return annotate(List[int], x.tolist(1))\n").find("tolist() takes no arguments"),
      std::string::npos);
}
}  // namespace
}  // namespace torchless::frontend
