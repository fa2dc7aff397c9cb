// frontend/literal.h: one evaluator of constant expressions for both of its users, the
// emitter's default arguments and the script importer's class constants and NamedTuple field
// defaults. Each literal kind is checked through both paths (issue 16: complex numbers,
// torch.device and NamedTuples used to work in the importer only, CONSTANTS.cN in the
// emitter only).
#include "frontend/script_importer.h"

#include "core/error.h"
#include "core/tensor.h"

#include <gtest/gtest.h>

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
};

const char* const kSource =
    "class P(NamedTuple):\n"
    "  a : int\n"
    "  b : float\n"
    "class Q(NamedTuple):\n"
    "  z : complex = -2j\n"
    "  d : Device = torch.device(\"cpu\")\n"
    "  p : __torch__.P = (1, 2.5)\n"
    "  t : Tensor = CONSTANTS.c0\n"
    "  n : float = -1\n"
    "class M(Module):\n"
    "  __parameters__ = []\n"
    "  __buffers__ = []\n"
    "  training : bool\n"
    "  z : Final[complex] = -2j\n"
    "  d : Final[Device] = torch.device(\"cpu\")\n"
    "  p : Final[__torch__.P] = (1, 2.5)\n"
    "  t : Final[Tensor] = CONSTANTS.c0\n"
    "  n : Final[float] = -1\n"
    "def f(x: Tensor, z: complex=-2j, d: Device=torch.device(\"cpu\"), p: __torch__.P=(1, 2.5),\n"
    "      t: Tensor=CONSTANTS.c0, n: float=-1) -> Tensor:\n"
    "  return x\n";

/// The five literals of kSource, in order z, d, p, t, n.
void expectLiterals(const std::vector<const IValue*>& v, const Tensor& c0) {
  ASSERT_EQ(v.size(), 5u);
  for (const IValue* x : v) ASSERT_NE(x, nullptr);
  ASSERT_TRUE(v[0]->isComplexDouble()) << v[0]->tagName();
  EXPECT_EQ(v[0]->toComplexDouble(), std::complex<double>(0, -2));
  ASSERT_TRUE(v[1]->isDevice()) << v[1]->tagName();
  EXPECT_EQ(v[1]->toDevice().str(), "cpu");
  ASSERT_TRUE(v[2]->isTuple()) << v[2]->tagName();
  const auto& tuple = v[2]->toTuple();
  ASSERT_NE(tuple->type, nullptr);
  const auto* named = tuple->type->cast<TupleType>();
  ASSERT_NE(named, nullptr);
  EXPECT_EQ(named->name(), "__torch__.P");
  ASSERT_EQ(tuple->elements.size(), 2u);
  EXPECT_TRUE(tuple->elements[0].isInt());
  EXPECT_TRUE(tuple->elements[1].isDouble());
  ASSERT_TRUE(v[3]->isTensor()) << v[3]->tagName();
  EXPECT_EQ(v[3]->toTensor().rawData(), c0.rawData());
  ASSERT_TRUE(v[4]->isDouble()) << v[4]->tagName();
  EXPECT_EQ(v[4]->toDouble(), -1.0);
}

TEST(frontend_literal, DefaultArgumentsOfTheEmitter) {
  Tensor c0 = Tensor::empty({2}, ScalarType::Float);
  Fixture f(kSource, {IValue(c0)});
  GraphFunction* fn = f.importer->resolveFunction("__torch__.f");
  ASSERT_NE(fn, nullptr);
  std::vector<const IValue*> v;
  const auto& args = fn->schema().arguments();
  ASSERT_EQ(args.size(), 6u);
  for (size_t i = 1; i < args.size(); ++i)
    v.push_back(args[i].defaultValue() ? &*args[i].defaultValue() : nullptr);
  expectLiterals(v, c0);
}

TEST(frontend_literal, ClassConstantsOfTheImporter) {
  Tensor c0 = Tensor::empty({2}, ScalarType::Float);
  Fixture f(kSource, {IValue(c0)});
  ClassTypePtr m = f.importer->resolveClass("__torch__.M");
  ASSERT_NE(m, nullptr);
  expectLiterals({m->findConstant("z"), m->findConstant("d"), m->findConstant("p"),
                  m->findConstant("t"), m->findConstant("n")},
                 c0);
}

TEST(frontend_literal, NamedTupleDefaultsOfTheImporter) {
  Tensor c0 = Tensor::empty({2}, ScalarType::Float);
  Fixture f(kSource, {IValue(c0)});
  TypePtr q = f.importer->resolveType("__torch__.Q");
  ASSERT_NE(q, nullptr);
  const auto* t = q->cast<TupleType>();
  ASSERT_NE(t, nullptr);
  std::vector<const IValue*> v;
  for (const auto& d : t->defaults()) v.push_back(d.get());
  expectLiterals(v, c0);
}

TEST(frontend_literal, ConstantsOutsideArchivesAndBadSpecifiers) {
  for (const char* src : {"def f(x: Tensor, h: Tensor=CONSTANTS.c3) -> Tensor:\n  return x\n",
                          "def f(x: Tensor, h: Tensor=CONSTANTS.foo) -> Tensor:\n  return x\n",
                          "class M(Module):\n  __parameters__ = []\n  __buffers__ = []\n"
                          "  t : Final[Tensor] = CONSTANTS.c3\n"}) {
    SCOPED_TRACE(src);
    Fixture f(src);
    try {
      if (f.importer->resolveFunction("__torch__.f") == nullptr)
        f.importer->resolveClass("__torch__.M");
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("out of range of the constants table") != std::string::npos ||
                  what.find("invalid constant specifier: foo") != std::string::npos)
          << what;
    }
  }
}

TEST(frontend_literal, NonConstantsKeepTheirMessages) {
  Fixture f("def f(x: Tensor, n: int=len(x)) -> Tensor:\n  return x\n");
  try {
    f.importer->resolveFunction("__torch__.f");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("default arguments must be constant literals"),
              std::string::npos)
        << e.what();
  }
  Fixture g(
      "class M(Module):\n  __parameters__ = []\n  __buffers__ = []\n  n : Final[int] = len(x)\n");
  try {
    g.importer->resolveClass("__torch__.M");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected a constant"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace torchless::frontend
