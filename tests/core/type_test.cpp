// Type printing, parsing and relations. Expected spellings were printed by PyTorch 1.13
// (`print(fn.graph)` for the IR spelling, `print(fn.code)` for the annotation spelling) for a
// scripted function taking these annotations: tests/core/print_types.py prints them.
#include "core/type.h"
#include "core/error.h"
#include "core/ivalue.h"

#include <gtest/gtest.h>

using namespace torchless;

namespace {

struct Spelling {
  const char* annotation;  // as written in source
  const char* ir;          // str(): the IR printer's spelling
  const char* printed;     // annotationStr(): what PyTorch's code printer writes back
};

const Spelling kSpellings[] = {
    {"List[int]", "int[]", "List[int]"},
    {"Dict[str, Tuple[int, float]]", "Dict(str, (int, float))", "Dict[str, Tuple[int, float]]"},
    {"Optional[List[Tensor]]", "Tensor[]?", "Optional[List[Tensor]]"},
    {"Tuple[()]", "()", "Tuple[()]"},
    {"Union[int, str]", "Union(int, str)", "Union[int, str]"},
    {"Any", "Any", "Any"},
    {"List[Optional[Tensor]]", "Tensor?[]", "List[Optional[Tensor]]"},
    {"Dict[int, List[str]]", "Dict(int, str[])", "Dict[int, List[str]]"},
    {"Optional[Tuple[int, str]]", "(int, str)?", "Optional[Tuple[int, str]]"},
    {"Device", "Device", "Device"},
    {"complex", "complex", "complex"},
    {"Union[int, float, None]", "Union(float, int, NoneType)", "Union[float, int, NoneType]"},
    {"float", "float", "float"},
    {"Tensor", "Tensor", "Tensor"},
    {"bool", "bool", "bool"},
    {"NoneType", "NoneType", "NoneType"},
    {"Optional[Optional[int]]", "int?", "Optional[int]"},
    {"Union[int, None]", "int?", "Optional[int]"},
    {"Final[int]", "int", "int"},
};

class TypeSpelling : public ::testing::TestWithParam<Spelling> {};

TEST_P(TypeSpelling, PrintsAsPyTorch) {
  const auto& s = GetParam();
  TypePtr t = parseTypeAnnotation(s.annotation);
  EXPECT_EQ(t->str(), s.ir);
  EXPECT_EQ(t->annotationStr(), s.printed);
  // The printed annotation parses back to an equal type.
  TypePtr again = parseTypeAnnotation(t->annotationStr());
  EXPECT_TRUE(*again == *t) << again->str() << " vs " << t->str();
}

INSTANTIATE_TEST_SUITE_P(Core, TypeSpelling, ::testing::ValuesIn(kSpellings));

TEST(Type, TensorDetailsPrintLikeTheIR) {
  auto t = TensorType::createContiguous(ScalarType::Float, Device(), {3, 4});
  EXPECT_EQ(t->reprStr(), "Float(3, 4, strides=[4, 1], requires_grad=0, device=cpu)");
  EXPECT_EQ(t->str(), "Tensor");
  auto partial =
      TensorType::create(ScalarType::Long, std::vector<std::optional<int64_t>>{std::nullopt, 3},
                         std::nullopt, std::nullopt, std::nullopt);
  EXPECT_EQ(partial->reprStr(), "Long(*, 3)");
  auto dtypeOnly =
      TensorType::create(ScalarType::Float, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
  EXPECT_EQ(dtypeOnly->reprStr(), "FloatTensor");
  EXPECT_EQ(TensorType::get()->reprStr(), "Tensor");
  EXPECT_EQ(ListType::create(t)->reprStr(),
            "Float(3, 4, strides=[4, 1], requires_grad=0, device=cpu)[]");
}

TEST(Type, NamedTupleAndClassNames) {
  auto nt = TupleType::createNamed("__torch__.Pt", {"x", "y"}, {IntType::get(), FloatType::get()});
  EXPECT_EQ(nt->str(), "__torch__.Pt");
  EXPECT_EQ(nt->annotationStr(), "__torch__.Pt");
  EXPECT_EQ(nt->reprStr(), "NamedTuple(x : int, y : float)");
  auto cls = ClassType::create("__torch__.a.B", true);
  TypePtr parsed =
      parseTypeAnnotation("Optional[__torch__.a.B]", [&](const std::string& n) -> TypePtr {
        return n == "__torch__.a.B" ? TypePtr(cls) : nullptr;
      });
  EXPECT_EQ(parsed->str(), "__torch__.a.B?");
}

TEST(Type, ParseErrorsNameTheProblem) {
  try {
    parseTypeAnnotation("List[Foo]");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown type name 'Foo'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parseTypeAnnotation("Dict[int]"), Error);
  EXPECT_THROW(parseTypeAnnotation("List[int"), Error);
  EXPECT_THROW(parseTypeAnnotation("List[int]]"), Error);
  EXPECT_THROW(parseTypeAnnotation(std::string(200, '[')), Error);
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "List[";
  deep += "int";
  for (int i = 0; i < 100; ++i) deep += "]";
  EXPECT_THROW(parseTypeAnnotation(deep), Error);
}

struct Subtype {
  const char* lhs;
  const char* rhs;
  bool expected;
};

// PyTorch's isSubtypeOf for each row, as tests/core/check_subtypes.py prints it.
const Subtype kSubtypes[] = {
    {"int", "float", false},
    {"int", "number", true},
    {"float", "number", true},
    {"complex", "number", true},
    {"bool", "int", false},
    {"int", "Optional[int]", true},
    {"NoneType", "Optional[Tensor]", true},
    {"Optional[int]", "int", false},
    {"List[int]", "List[number]", false},  // lists are invariant
    {"List[int]", "List[int]", true},
    {"Tuple[int, int]", "Tuple[number, Optional[int]]", true},  // tuples are covariant
    {"Tuple[int]", "Tuple[int, int]", false},
    {"Dict[str, int]", "Dict[str, number]", false},
    {"Tensor", "Any", true},
    {"List[Tensor]", "Any", true},
    {"int", "Union[int, str]", true},
    {"Union[int, str]", "Union[int, str, float]", true},
    {"Union[int, str]", "int", false},
    {"Optional[int]", "Union[int, None, str]", true},
    {"Optional[int]", "Optional[number]", true},
};

class SubtypeTable : public ::testing::TestWithParam<Subtype> {};

TEST_P(SubtypeTable, MatchesPyTorch) {
  const auto& s = GetParam();
  EXPECT_EQ(parseTypeAnnotation(s.lhs)->isSubtypeOf(*parseTypeAnnotation(s.rhs)), s.expected)
      << s.lhs << " <: " << s.rhs;
}

INSTANTIATE_TEST_SUITE_P(Core, SubtypeTable, ::testing::ValuesIn(kSubtypes));

TEST(Type, TensorSubtyping) {
  auto f34 = TensorType::createContiguous(ScalarType::Float, Device(), {3, 4});
  EXPECT_TRUE(f34->isSubtypeOf(*TensorType::get()));
  EXPECT_FALSE(TensorType::get()->isSubtypeOf(*f34));
  auto l34 = TensorType::createContiguous(ScalarType::Long, Device(), {3, 4});
  EXPECT_FALSE(f34->isSubtypeOf(*l34));
}

TEST(Type, Unify) {
  auto u = [](const char* a, const char* b) -> std::string {
    auto r = unifyTypes(parseTypeAnnotation(a), parseTypeAnnotation(b));
    return r ? (*r)->annotationStr() : "<none>";
  };
  EXPECT_EQ(u("int", "int"), "int");
  EXPECT_EQ(u("int", "NoneType"), "Optional[int]");
  EXPECT_EQ(u("NoneType", "Tensor"), "Optional[Tensor]");
  EXPECT_EQ(u("Optional[int]", "int"), "Optional[int]");
  EXPECT_EQ(u("int", "float"), "<none>");
  EXPECT_EQ(u("Tuple[int, NoneType]", "Tuple[int, str]"), "Tuple[int, Optional[str]]");
  EXPECT_EQ(u("List[int]", "List[float]"), "<none>");
  auto f3 = TensorType::createContiguous(ScalarType::Float, Device(), {3});
  auto f4 = TensorType::createContiguous(ScalarType::Float, Device(), {4});
  auto merged = unifyTypes(f3, f4);
  ASSERT_TRUE(merged);
  EXPECT_EQ((*merged)->reprStr(), "Float(*, strides=[1], requires_grad=0, device=cpu)");
  auto unioned = unifyTypes(IntType::get(), StringType::get(), /*defaultToUnion=*/true);
  ASSERT_TRUE(unioned);
  EXPECT_EQ((*unioned)->str(), "Union(int, str)");
}

TEST(Type, UnshapedErasesTensorDetails) {
  auto f34 = TensorType::createContiguous(ScalarType::Float, Device(), {3, 4});
  EXPECT_EQ(unshapedType(ListType::create(f34))->reprStr(), "Tensor[]");
  EXPECT_EQ(unshapedType(OptionalType::create(f34))->reprStr(), "Tensor?");
}

TEST(Type, ClassAttributesKeepOrderAndRejectDuplicates) {
  auto cls = ClassType::create("__torch__.M", true);
  EXPECT_EQ(cls->addAttribute("w", TensorType::get(), true), 0u);
  EXPECT_EQ(cls->addAttribute("training", BoolType::get()), 1u);
  EXPECT_THROW(cls->addAttribute("w", TensorType::get()), Error);
  EXPECT_EQ(cls->findAttributeSlot("training"), 1u);
  EXPECT_FALSE(cls->findAttributeSlot("nope"));
  EXPECT_TRUE(cls->findAttribute("w")->isParameter);
}

}  // namespace
