// A user's .py through the ScriptImporter (Note [User sources] in script_importer.h): the
// rules `torchless script` relies on. Numbers against PyTorch are in check_script_cli.py.
#include "frontend/script_importer.h"

#include <gtest/gtest.h>

namespace torchless::frontend {
namespace {

constexpr const char* kSource = R"(import torch
from typing import List, Optional

SCALE = 2  # Python-only: ignored


def helper(x: torch.Tensor) -> torch.Tensor:
    return x * 2


class Point:
    def __init__(self, x: int, y: int):
        self.x = x
        self.y = y
        self.tags: List[str] = []

    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(3))
        self.register_buffer("running", torch.zeros(3))
        self.count = 2
        self.scale: float = 0.5
        self.bias: Optional[torch.Tensor] = None  # NoneType: PyTorch ignores the annotation
        self.names: List[str] = []  # no type from an empty list: no attribute

    def unused(self, x: torch.Tensor) -> torch.Tensor:
        return undefined_name(x)

    def used(self, x: torch.Tensor) -> torch.Tensor:
        return helper(x) + Point(1, -2).norm1()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.used(x) * self.w + self.running * self.scale

    @torch.jit.export
    def exported(self) -> int:
        return self.count
)";

std::unique_ptr<ScriptImporter> userImporter(const std::string& text) {
  auto imp =
      std::make_unique<ScriptImporter>(std::make_shared<CompilationUnit>(),
                                       [text](const std::string& q) -> std::optional<SourceFile> {
                                         if (q != "__torch__") return std::nullopt;
                                         return SourceFile{"user.py", text};
                                       });
  imp->setUserSource("__torch__");
  return imp;
}

std::string errorOf(const std::string& text, const std::string& cls) {
  try {
    userImporter(text)->resolveClass("__torch__." + cls);
  } catch (const Error& e) {
    std::string all = e.what();
    return all.substr(0, all.find('\n'));
  }
  return "no error";
}

TEST(frontend_user_source, ModuleAttributesFromInit) {
  auto owned = userImporter(kSource);
  ScriptImporter& imp = *owned;
  ClassTypePtr m = imp.resolveClass("__torch__.M");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->isModule());
  std::vector<std::string> names;
  for (const auto& a : m->attributes()) names.push_back(a.name + ":" + a.type->annotationStr());
  EXPECT_EQ(names, (std::vector<std::string>{"training:bool", "w:Tensor", "running:Tensor",
                                             "count:int", "scale:float", "bias:NoneType"}));
  EXPECT_TRUE(m->findAttribute("w")->isParameter);
  EXPECT_TRUE(m->findAttribute("running")->isBuffer);
  EXPECT_FALSE(m->findAttribute("count")->isParameter);
  // __init__ is compiled apart; forward, what it calls and exported methods are methods;
  // `unused` (it names an undefined value) is never compiled.
  ASSERT_NE(imp.userInit("__torch__.M"), nullptr);
  EXPECT_EQ(imp.userInit("__torch__.M")->graph()->inputs().size(), 1u);
  EXPECT_EQ(m->findMethod("__init__"), nullptr);
  EXPECT_NE(m->findMethod("forward"), nullptr);
  EXPECT_NE(m->findMethod("used"), nullptr);
  EXPECT_NE(m->findMethod("exported"), nullptr);
  EXPECT_EQ(m->findMethod("unused"), nullptr);
  // Bare names resolve in the file: the free function and the script class.
  EXPECT_NE(imp.unit()->findFunction("__torch__.helper"), nullptr);
  ClassTypePtr p = imp.resolveClass("__torch__.Point");
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->isModule());
  EXPECT_NE(p->findMethod("__init__"), nullptr);  // a script class keeps its constructor
  ASSERT_NE(p->findAttribute("tags"), nullptr);
  EXPECT_EQ(p->findAttribute("tags")->type->annotationStr(), "List[str]");
  EXPECT_EQ(imp.definedNames("__torch__", true), (std::vector<std::string>{"__torch__.M"}));
  EXPECT_EQ(imp.definedNames("__torch__", false), (std::vector<std::string>{"__torch__.helper"}));
}

TEST(frontend_user_source, Diagnostics) {
  // Outside __init__, a new attribute is an error, as in PyTorch.
  EXPECT_EQ(errorOf("import torch\nclass M(torch.nn.Module):\n"
                    "    def __init__(self):\n        self.a = 1\n"
                    "    def forward(self, x):\n        self.b = 2\n        return x\n",
                    "M"),
            "user.py:6:9: Tried to set nonexistent attribute: b. Did you forget to initialize it "
            "in __init__()?");
  EXPECT_EQ(errorOf("import torch\nclass M(torch.nn.Module):\n"
                    "    def __init__(self):\n        self.a = []\n"
                    "    def forward(self, x):\n        return self.a\n",
                    "M"),
            "user.py:6:16: Module '__torch__.M' has no attribute 'a' ");
  EXPECT_EQ(errorOf("import torch\nclass M(torch.nn.Module):\n"
                    "    def __init__(self):\n        self.a = 1\n        self.a = 'x'\n"
                    "    def forward(self, x):\n        return x\n",
                    "M"),
            "user.py:5:18: Wrong type for attribute assignment. Expected int but got str");
  EXPECT_EQ(errorOf("import torch\nclass M(torch.nn.Module):\n"
                    "    def __init__(self):\n        self.register_buffer(1, 2)\n"
                    "    def forward(self, x):\n        return x\n",
                    "M"),
            "user.py:4:9: register_buffer takes a string literal name and a tensor");
}

}  // namespace
}  // namespace torchless::frontend
