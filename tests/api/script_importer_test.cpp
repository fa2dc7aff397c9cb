// ScriptImporter on in-memory code/ files: lazy, cross-file, in any order (Note [Lazy import]).
#include "frontend/script_importer.h"

#include "core/error.h"
#include "runtime/kernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace torchless::frontend {
namespace {

using Files = std::map<std::string, std::string>;

/// An importer over `files` (qualifier -> text), named as an archive's code/ records.
struct Fixture {
  std::map<std::string, std::string> files;
  std::vector<IValue> constants;
  std::shared_ptr<CompilationUnit> unit = std::make_shared<CompilationUnit>();
  std::vector<std::string> loaded;  // qualifiers asked for, in order
  std::unique_ptr<ScriptImporter> importer;

  explicit Fixture(std::map<std::string, std::string> f) : files(std::move(f)) {
    initKernels();
    importer = std::make_unique<ScriptImporter>(
        unit,
        [this](const std::string& q) -> std::optional<SourceFile> {
          loaded.push_back(q);
          auto it = files.find(q);
          if (it == files.end()) return std::nullopt;
          std::string name = "code/" + q + ".py";
          for (char& c : name)
            if (c == '.' && &c < &name[name.size() - 3]) c = '/';
          return SourceFile{name, it->second};
        },
        &constants);
  }
};

TEST(ScriptImporter, ModuleAttributesFlagsConstantsAndHooks) {
  Fixture f(
      Files{{"__torch__",
             "op_version_set = 1\n"
             "import __torch__.torch.nn.modules.linear\n"
             "class M(Module):\n"
             "  __parameters__ = [\"w\", ]\n"
             "  __buffers__ = [\"b\", ]\n"
             "  __forward_pre_hooks__ = [\"pre\", ]\n"
             "  __forward_hooks__ = [\"post\", ]\n"
             "  w : Tensor\n"
             "  b : Tensor\n"
             "  training : bool\n"
             "  __annotations__[\"0\"] = __torch__.Sub\n"
             "  shape : Final[Tuple[int, int]] = (2, 3)\n"
             "  eps : Final[float] = 1.0000000000000001e-05\n"
             "  mode : Final[str] = \"zeros\"\n"
             "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
             "    return (getattr(self, \"0\")).forward(torch.mul(x, self.w), )\n"
             "  def pre(self: __torch__.M, input: Tuple[Tensor]) -> NoneType:\n"
             "    return None\n"
             "  def post(self: __torch__.M, input: Tuple[Tensor], output: Tensor) -> NoneType:\n"
             "    return None\n"
             "class Sub(Module):\n"  // defined after use
             "  __parameters__ = []\n"
             "  training : bool\n"
             "  def forward(self: __torch__.Sub, x: Tensor) -> Tensor:\n"
             "    return torch.relu(x)\n"}});
  ClassTypePtr m = f.importer->resolveClass("__torch__.M");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->isModule());
  ASSERT_EQ(m->attributes().size(), 4u);
  EXPECT_EQ(m->attributes()[0].name, "w");
  EXPECT_TRUE(m->attributes()[0].isParameter);
  EXPECT_TRUE(m->attributes()[1].isBuffer);
  EXPECT_FALSE(m->attributes()[2].isParameter || m->attributes()[2].isBuffer);
  EXPECT_EQ(m->attributes()[3].name, "0");
  EXPECT_EQ(m->attributes()[3].type->str(), "__torch__.Sub");
  ASSERT_TRUE(m->findConstant("shape"));
  EXPECT_EQ(m->findConstant("shape")->repr(), "(2, 3)");
  EXPECT_DOUBLE_EQ(m->findConstant("eps")->toDouble(), 1e-05);
  EXPECT_EQ(m->findConstant("mode")->toStringRef(), "zeros");
  EXPECT_EQ(m->forwardHooks, std::vector<std::string>{"post"});
  EXPECT_EQ(m->forwardPreHooks, std::vector<std::string>{"pre"});
  ASSERT_TRUE(m->findMethod("forward"));
  EXPECT_EQ(m->findMethod("forward")->qualname(), "__torch__.M.forward");
  ASSERT_TRUE(f.unit->findClass("__torch__.Sub"));
  EXPECT_TRUE(f.unit->findClass("__torch__.Sub")->findMethod("forward"));
}

TEST(ScriptImporter, CrossFileBothDirectionsMangledNamesAndFileNextToDirectory) {
  Fixture f(
      Files{{"__torch__.a",
             "class A(Module):\n"
             "  __parameters__ = []\n"
             "  b : __torch__.a.sub.___torch_mangle_3.B\n"
             "  def forward(self: __torch__.a.A, x: Tensor) -> Tensor:\n"
             "    b = self.b\n"
             "    return (b).forward(x, )\n"
             "  def helper(self: __torch__.a.A, x: Tensor) -> Tensor:\n"
             "    return __torch__.a.free(x, )\n"
             "def free(x: Tensor) -> Tensor:\n"
             "  return torch.neg(x)\n"},
            {"__torch__.a.sub.___torch_mangle_3",
             "class B(Module):\n"
             "  __parameters__ = []\n"
             "  def forward(self: __torch__.a.sub.___torch_mangle_3.B, x: Tensor) -> Tensor:\n"
             "    return __torch__.a.free(x, )\n"}});
  ClassTypePtr a = f.importer->resolveClass("__torch__.a.A");
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->findMethod("helper"));
  EXPECT_TRUE(f.unit->findFunction("__torch__.a.free"));
  EXPECT_TRUE(f.unit->findClass("__torch__.a.sub.___torch_mangle_3.B"));
  // Each file was read once.
  EXPECT_EQ(std::count(f.loaded.begin(), f.loaded.end(), "__torch__.a"), 1);
}

TEST(ScriptImporter, MethodCallingALaterMethod) {
  Fixture f(Files{{"__torch__",
                   "class M(Module):\n"
                   "  __parameters__ = []\n"
                   "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
                   "    return (self).twice(x, )\n"
                   "  def twice(self: __torch__.M, x: Tensor) -> Tensor:\n"
                   "    return torch.add(x, x)\n"}});
  ClassTypePtr m = f.importer->resolveClass("__torch__.M");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->findMethod("forward"));
  EXPECT_TRUE(m->findMethod("twice"));
}

TEST(ScriptImporter, NamedTupleEnumInterface) {
  Fixture f(Files{{"__torch__",
                   "class NT(NamedTuple):\n"
                   "  a : Tensor\n"
                   "  n : int = 3\n"
                   "class Color(Enum):\n"
                   "  RED = 1\n"
                   "  GREEN = 2\n"
                   "class I(Interface):\n"
                   "  def run(self: __torch__.I, x: Tensor, k: int=2) -> Tensor:\n"
                   "    pass\n"}});
  TypePtr nt = f.importer->resolveType("__torch__.NT");
  ASSERT_TRUE(nt && nt->cast<TupleType>());
  const auto& t = nt->expect<TupleType>();
  EXPECT_EQ(t.fieldNames(), (std::vector<std::string>{"a", "n"}));
  ASSERT_EQ(t.defaults().size(), 2u);
  EXPECT_FALSE(t.defaults()[0]);
  EXPECT_EQ(t.defaults()[1]->toInt(), 3);
  EXPECT_EQ(f.importer->resolveClass("__torch__.NT"), nullptr);

  TypePtr color = f.importer->resolveType("__torch__.Color");
  ASSERT_TRUE(color && color->cast<EnumType>());
  EXPECT_EQ(color->expect<EnumType>().names(), (std::vector<std::string>{"RED", "GREEN"}));
  EXPECT_EQ(color->expect<EnumType>().valueType()->str(), "int");

  TypePtr i = f.importer->resolveType("__torch__.I");
  ASSERT_TRUE(i && i->cast<InterfaceType>());
  ASSERT_EQ(i->expect<InterfaceType>().methods.size(), 1u);
  EXPECT_EQ(i->expect<InterfaceType>().methods[0].second->str(),
            "run(__torch__.I self, Tensor x, int k=2) -> Tensor");
}

TEST(ScriptImporter, MissingNamesAreNull) {
  Fixture f(Files{{"__torch__", "class M(Module):\n  __parameters__ = []\n"}});
  EXPECT_EQ(f.importer->resolveType("__torch__.Nope"), nullptr);
  EXPECT_EQ(f.importer->resolveType("__torch__.no.such.file.C"), nullptr);
  EXPECT_EQ(f.importer->resolveFunction("__torch__.nope"), nullptr);
}

std::string errorOf(Fixture& f, const std::string& qualname) {
  try {
    f.importer->resolveType(qualname);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ScriptImporter, ErrorsNameTheFileAndLine) {
  Fixture bad(Files{{"__torch__", "class M(Module):\n  __parameters__ = []\nx = 1\n"}});
  std::string e = errorOf(bad, "__torch__.M");
  EXPECT_NE(e.find("code/__torch__.py:3:1: unexpected statement at the top level"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("while loading code/__torch__.py"), std::string::npos) << e;

  Fixture base(Files{{"__torch__", "class M(Foo):\n  pass\n"}});
  e = errorOf(base, "__torch__.M");
  EXPECT_NE(e.find("code/__torch__.py:1:9: unsupported base class 'Foo'"), std::string::npos) << e;

  Fixture type(Files{{"__torch__", "class M(Module):\n  x : __torch__.Missing\n"}});
  e = errorOf(type, "__torch__.M");
  EXPECT_NE(e.find("code/__torch__.py:2:7:"), std::string::npos) << e;
  EXPECT_NE(e.find("__torch__.Missing"), std::string::npos) << e;

  Fixture body(Files{{"__torch__",
                      "class M(Module):\n"
                      "  __parameters__ = []\n"
                      "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
                      "    return undefined_name(x)\n"}});
  e = errorOf(body, "__torch__.M");
  EXPECT_NE(e.find("code/__torch__.py:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("while compiling __torch__.M.forward"), std::string::npos) << e;
  EXPECT_NE(e.find("while loading code/__torch__.py"), std::string::npos) << e;

  Fixture tb(Files{{"__torch__", "class M(Module):\n  p : __torch__.torch.classes.quantized.X\n"}});
  e = errorOf(tb, "__torch__.M");
  EXPECT_NE(e.find("code/__torch__.py:2:7: TorchBind class '__torch__.torch.classes.quantized.X' "
                   "is not supported yet"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace torchless::frontend
