// parseIRType: types as PyTorch's IR printer writes them (`print(graph)`), e.g.
//   %x : Float(3, 4, strides=[4, 1], requires_grad=0, device=cpu)
// Each spelling must parse to a type that core prints back the same way.
#include "ir/type_parser.h"
#include "core/error.h"
#include "ir/function_schema.h"

#include <gtest/gtest.h>

using namespace torchless;

namespace {

TypePtr parseAll(std::string_view text, const TypeResolver& resolver = nullptr) {
  size_t pos = 0;
  TypePtr t = parseIRType(text, pos, resolver);
  EXPECT_EQ(pos, text.size()) << "did not consume all of '" << text << "'";
  return t;
}

/// The IR printer's spelling of each type (Type::reprStr) round-trips through parseIRType.
TEST(TypeParser, IRSpellingsRoundTrip) {
  const char* spellings[] = {
      "Tensor",
      "Float(3, 4, strides=[4, 1], requires_grad=0, device=cpu)",
      "Long(*, 3)",
      "Float(2, *, 5, requires_grad=1, device=cuda:0)",
      "Double(requires_grad=0, device=cpu)",  // 0-dim
      "Float()",
      "FloatTensor",
      "Tensor(requires_grad=0)",
      "Tensor(device=cpu)",
      "Tensor(3, 4)",
      "Bool(1, strides=[1], requires_grad=0, device=cpu)",
      "int",
      "int[]",
      "int[][]",
      "Tensor?",
      "Tensor?[]",
      "Tensor[]?",
      "Float(3, strides=[1], requires_grad=0, device=cpu)[]",
      "Dict(str, Tensor)",
      "Dict(int, Tensor[])",  // PyTorch prints no tensor details inside a Dict
      "(int, float)",
      "()",
      "(Tensor, (int, str[]))",
      "NoneType",
      "Scalar",
      "ScalarType",
      "Layout",
      "MemoryFormat",
      "Device",
      "Generator",
      "Storage",
      "Stream",
      "QScheme",
      "Any",
      "SymInt",
      "SymInt[]",
      "str",
      "bool",
      "float",
      "complex",
      "Capsule",
      "t",
      "t1[]",
      "Union(int, str)",
      "__torch__.torch.classes.quantized.Conv2dPackedParamsBase",
  };
  for (const char* s : spellings) {
    SCOPED_TRACE(s);
    TypePtr t = parseAll(s);
    EXPECT_EQ(t->reprStr(), s);
  }
}

TEST(TypeParser, SpellingsThatPrintDifferently) {
  // Future/RRef print with brackets in the IR printer's detail spelling, and with
  // parentheses in str() (the schema spelling); both parse from the schema spelling.
  EXPECT_EQ(parseAll("Future(int)")->str(), "Future(int)");
  EXPECT_EQ(parseAll("RRef(t)")->str(), "RRef(t)");
  EXPECT_EQ(parseAll("Await(Tensor)")->str(), "Await(Tensor)");
  // Dimname is a str, as in PyTorch.
  EXPECT_EQ(*parseAll("Dimname"), *StringType::get());
  EXPECT_EQ(*parseAll("None"), *NoneType::get());
}

TEST(TypeParser, TensorDetails) {
  auto t =
      parseAll("Float(3, 4, strides=[4, 1], requires_grad=0, device=cpu)")->castPtr<TensorType>();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->scalarType(), ScalarType::Float);
  ASSERT_TRUE(t->sizes());
  EXPECT_EQ(*t->sizes(), (std::vector<std::optional<int64_t>>{3, 4}));
  EXPECT_EQ(*t->strides(), (std::vector<std::optional<int64_t>>{4, 1}));
  EXPECT_EQ(t->requiresGrad(), false);
  EXPECT_TRUE(t->device()->isCpu());

  auto u = parseAll("Long(*, 3)")->castPtr<TensorType>();
  EXPECT_EQ(*u->sizes(), (std::vector<std::optional<int64_t>>{std::nullopt, 3}));
  EXPECT_FALSE(u->requiresGrad());
  // Rank known, strides not.
  EXPECT_EQ(u->strides()->size(), 2u);

  auto v = parseAll("FloatTensor")->castPtr<TensorType>();
  EXPECT_EQ(v->scalarType(), ScalarType::Float);
  EXPECT_FALSE(v->sizes());

  auto w = parseAll("Tensor(requires_grad=1)")->castPtr<TensorType>();
  EXPECT_FALSE(w->scalarType());
  EXPECT_FALSE(w->sizes());
  EXPECT_EQ(w->requiresGrad(), true);

  auto z = parseAll("Double(requires_grad=0, device=cpu)")->castPtr<TensorType>();
  EXPECT_EQ(z->dim(), 0u);

  EXPECT_TRUE(parseAll("Tensor")->castPtr<TensorType>()->isUnshaped());
  EXPECT_TRUE(parseAll("Float(3, 4)")->isSubtypeOf(*TensorType::get()));
}

TEST(TypeParser, Containers) {
  TypePtr d = parseAll("Dict(str, Tensor)");
  ASSERT_EQ(d->kind(), TypeKind::DictType);
  EXPECT_EQ(*d->expect<DictType>().getKeyType(), *StringType::get());
  TypePtr l = parseAll("Tensor?[]");
  ASSERT_EQ(l->kind(), TypeKind::ListType);
  EXPECT_EQ(*l->expect<ListType>().getElementType(), *OptionalType::ofTensor());
  TypePtr o = parseAll("int[]?");
  ASSERT_EQ(o->kind(), TypeKind::OptionalType);
  TypePtr tup = parseAll("(int, float)");
  ASSERT_EQ(tup->kind(), TypeKind::TupleType);
  EXPECT_EQ(tup->expect<TupleType>().elements().size(), 2u);
  EXPECT_TRUE(parseAll("()")->expect<TupleType>().elements().empty());
  EXPECT_EQ(parseAll("t")->kind(), TypeKind::VarType);
  EXPECT_TRUE(parseAll("t2[]")->hasFreeVariables());
}

TEST(TypeParser, ClassesThroughTheResolver) {
  auto cls = ClassType::create("__torch__.MyModule", /*isModule=*/true);
  TypeResolver resolver = [&](const std::string& name) -> TypePtr {
    return name == "__torch__.MyModule" ? cls : nullptr;
  };
  EXPECT_EQ(parseAll("__torch__.MyModule", resolver).get(), cls.get());
  // Unknown to the resolver (or no resolver): a fresh ClassType with that name.
  TypePtr other = parseAll("__torch__.torch.classes.quantized.Conv2dPackedParamsBase", resolver);
  ASSERT_EQ(other->kind(), TypeKind::ClassType);
  EXPECT_EQ(other->str(), "__torch__.torch.classes.quantized.Conv2dPackedParamsBase");
  EXPECT_EQ(parseAll("__torch__.MyModule?", resolver)->str(), "__torch__.MyModule?");
}

TEST(TypeParser, StopsAtTheEndOfTheType) {
  // The IR parser reads `%x : Float(3) = aten::relu(%y)`: parse the type, stop before ` = `.
  std::string_view line = "Float(3, strides=[1], requires_grad=0, device=cpu) = aten::relu(%y)";
  size_t pos = 0;
  TypePtr t = parseIRType(line, pos);
  EXPECT_EQ(line.substr(pos), "= aten::relu(%y)");
  EXPECT_EQ(t->reprStr(), "Float(3, strides=[1], requires_grad=0, device=cpu)");

  std::string_view two = "%a : int, %b : Tensor):";
  pos = 5;
  EXPECT_EQ(parseIRType(two, pos)->str(), "int");
  EXPECT_EQ(two.substr(pos), ", %b : Tensor):");
  pos = 15;
  EXPECT_EQ(parseIRType(two, pos)->str(), "Tensor");
  EXPECT_EQ(two.substr(pos), "):");

  // A fixed size is not part of the type.
  std::string_view fixed = "int[2] x";
  pos = 0;
  EXPECT_EQ(parseIRType(fixed, pos)->str(), "int");
  EXPECT_EQ(fixed.substr(pos), "[2] x");
}

TEST(TypeParser, StopBeforeAlias) {
  std::string_view text = "Tensor(a!)[] self";
  size_t pos = 0;
  TypePtr t = parseIRType(text, pos, nullptr, /*stopBeforeAlias=*/true);
  EXPECT_EQ(t->str(), "Tensor");
  EXPECT_EQ(text.substr(pos), "(a!)[] self");
}

TEST(TypeParser, SchemaFlavourKeepsAliasAnnotations) {
  std::string_view text = "Tensor(a!)[] out";
  size_t pos = 0;
  int nextId = 0;
  std::optional<AliasInfo> alias;
  TypePtr t = detail::parseSchemaType(text, pos, alias, nullptr, nextId);
  EXPECT_EQ(t->str(), "Tensor[]");
  ASSERT_TRUE(alias);
  ASSERT_EQ(alias->containedTypes().size(), 1u);
  EXPECT_EQ(alias->containedTypes()[0].str(), "(a!)");
  EXPECT_EQ(text.substr(pos), "out");
}

std::string errorOf(std::string_view text) {
  size_t pos = 0;
  try {
    parseIRType(text, pos);
  } catch (const Error& e) {
    return e.message();
  }
  return "(no error)";
}

TEST(TypeParser, Errors) {
  EXPECT_EQ(errorOf("Bogus"), "invalid type: unknown type specifier 'Bogus' at column 1");
  EXPECT_EQ(errorOf("Dict(str Tensor)"),
            "invalid type: expected ')' but found 'Tensor' at column 10");
  EXPECT_EQ(errorOf("Float(3, 4, strides=[1])"),
            "invalid type: strides are given for some but not all dimensions at column 25");
  EXPECT_EQ(errorOf("Float(3, colour=red)"),
            "invalid type: unexpected tensor property 'colour' at column 10");
  EXPECT_EQ(errorOf("Float(requires_grad=0, 3)"),
            "invalid type: tensor sizes must come before strides, requires_grad and device at "
            "column 24");
  EXPECT_EQ(errorOf("Float(3, device=warp:1)"),
            "invalid type: unknown device type in device string 'warp:1' at column 17");
  EXPECT_EQ(errorOf(""), "invalid type: expected a type but found end of input at column 1");
  EXPECT_EQ(errorOf("(int, "), "invalid type: expected a type but found end of input at column 7");
}

}  // namespace

namespace {
// Spellings the IR printer (operator<< on types) writes for named tuples and futures.
TEST(TypeParserIRSpellings, NamedTupleAndBracketFuture) {
  size_t pos = 0;
  auto nt = torchless::parseIRType("NamedTuple(x : int, y : Tensor)", pos);
  EXPECT_EQ(nt->reprStr(), "NamedTuple(x : int, y : Tensor)");
  pos = 0;
  auto nested = torchless::parseIRType("(int, Future[int])", pos);
  EXPECT_EQ(nested->str(), "(int, Future(int))");
}
}  // namespace
