// FunctionSchema parser and printer, and the op table. The expected prints in kPrints were
// made by PyTorch 1.13 (`str(torch._C.parse_schema(s))`); tests/ir/schema_oracle.py checks
// every schema PyTorch itself registers.
#include "ir/function_schema.h"
#include "core/error.h"
#include "ir/operator_registry.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace torchless;

namespace {

struct Print {
  const char* input;
  const char* expected;  // nullptr: prints back unchanged
};

const Print kPrints[] = {
    {R"s(aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor)s", nullptr},
    {R"s(aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!))s",
     nullptr},
    {R"s(aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!))s",
     nullptr},
    {R"s(aten::relu(Tensor self) -> Tensor)s", nullptr},
    {R"s(aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a))s", nullptr},
    {R"s(aten::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[])s", nullptr},
    {R"s(aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[])s",
     nullptr},
    {R"s(aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!))s", nullptr},
    {R"s(aten::cat(Tensor[] tensors, int dim=0) -> Tensor)s", nullptr},
    {R"s(aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor)s", nullptr},
    {R"s(aten::_foreach_add_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ())s", nullptr},
    {R"s(foo::bar(Tensor(a! -> *) z) -> ())s", nullptr},
    {R"s(foo::bar(Tensor(a)[](b!) y) -> ())s", nullptr},
    {R"s(foo::bar(Tensor! x) -> ())s", R"s(foo::bar(Tensor($0! -> ) x) -> ())s"},
    {R"s(foo::bar(Tensor(a)?[] z) -> ())s", R"s(foo::bar(Tensor?(a)[] z) -> ())s"},
    {R"s(aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor)s",
     nullptr},
    {R"s(aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor)s",
     nullptr},
    {R"s(foo::bar(int[1] x=1, int[2] y=[1, 2], int[2] z=[3, 3], int[] w=[5], int[] e=[]) -> ())s",
     R"s(foo::bar(int[1] x=[1], int[2] y=[1, 2], int[2] z=3, int[] w=[5], int[] e=[]) -> ())s"},
    {R"s(foo::bar(SymInt[2] x=1, SymInt[2] q=[3,4]) -> ())s",
     R"s(foo::bar(SymInt[2] x=[1, 1], SymInt[2] q=[3, 4]) -> ())s"},
    {R"s(foo::bar(int[2]? x=None, int[2]? y=1, int[1]? dim=None) -> ())s", nullptr},
    {R"s(foo::bar(float x=1e-5, float y=1.5e300, float z=0.1, float w=-0.0, float v=3, float u=1e20, float q=-2.5, float r=0.5) -> ())s",
     R"s(foo::bar(float x=1.0000000000000001e-05, float y=1.5000000000000001e+300, float z=0.10000000000000001, float w=0., float v=3., float u=1e+20, float q=-2.5, float r=0.5) -> ())s"},
    {R"s(foo::bar(float[] f=[1, 2.5], float[2] g=1) -> ())s",
     R"s(foo::bar(float[] f=[1., 2.5], float[2] g=[1., 1.]) -> ())s"},
    {R"s(foo::bar(int x=1j) -> ())s", R"s(foo::bar(int x=0.+1.j) -> ())s"},
    {R"s(foo::bar(int x=-3, bool b=True, bool c=False, Scalar s=1.5, Scalar t=2, Scalar? u=None, Scalar v=True) -> ())s",
     nullptr},
    {R"s(foo::bar(ScalarType dtype=float, Layout l=strided, MemoryFormat m=contiguous_format, int r=Mean, ScalarType d2=long, ScalarType? d3=complex) -> ())s",
     R"s(foo::bar(ScalarType dtype=6, Layout l=0, MemoryFormat m=0, int r=1, ScalarType d2=4, ScalarType? d3=9) -> ())s"},
    {R"s(foo::bar(str a="x\ny'", str b='single', str? c="", str d="\"\'\\") -> ())s",
     R"s(foo::bar(str a="x\ny\'", str b="single", str? c="", str d="\"\'\\") -> ())s"},
    {R"s(aten::linalg_norm(Tensor self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor)s",
     nullptr},
    {R"s(aten::linalg_norm.ord_str(Tensor self, str ord, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor)s",
     nullptr},
    {R"s(aten::nanquantile.scalar_out(Tensor self, float q, int? dim=None, bool keepdim=False, *, str interpolation="linear", Tensor(a!) out) -> Tensor(a!))s",
     nullptr},
    {R"s(aten::var_mean.correction_names(Tensor self, Dimname[1] dim, *, int? correction, bool keepdim=False) -> (Tensor, Tensor))s",
     R"s(aten::var_mean.correction_names(Tensor self, str[1] dim, *, int? correction, bool keepdim=False) -> (Tensor, Tensor))s"},
    {R"s(foo::bar(Dimname x, Dimname[] y, Dimname? z=None) -> Dimname)s",
     R"s(foo::bar(str x, str[] y, str? z=None) -> str)s"},
    {R"s(prim::Print(...) -> ())s", nullptr},
    {R"s(prim::TupleConstruct(...) -> ...)s", nullptr},
    {R"s(prim::rpc_sync(...) -> ...)s", nullptr},
    {R"s(foo::bar(int a, *, int b, ...) -> ...)s", nullptr},
    {R"s(foo::bar(...) -> (int, ...))s", nullptr},
    {R"s(foo::bar() -> ((int, int)))s", nullptr},
    {R"s(foo::bar() -> ((int, int) x))s", nullptr},
    {R"s(foo::bar() -> ((int, int), int))s", nullptr},
    {R"s(foo::bar() -> ())s", nullptr},
    {R"s(aten::linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> (Tensor LU, Tensor pivots, Tensor info))s",
     nullptr},
    {R"s(aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices))s",
     nullptr},
    {R"s(foo::bar(Tensor self) -> Tensor self)s", nullptr},
    {R"s(aten::__getitem__.Dict_str(Dict(str, t) self, str key) -> t(*))s", nullptr},
    {R"s(aten::_set_item.str(Dict(str, t)(a!) l, str(b -> *) idx, t(c -> *) v) -> ())s", nullptr},
    {R"s(aten::keys.Tensor(Dict(Tensor, t) self) -> Tensor[](*))s", nullptr},
    {R"s(aten::wait(Future(t) self) -> t)s", nullptr},
    {R"s(aten::to_here(RRef(t) self, float timeout=60.) -> t)s", nullptr},
    {R"s(foo::bar(Union(int, str) x) -> Union(int, str))s", nullptr},
    {R"s(foo::bar(Generator? g, Storage s, Stream st, QScheme q, Capsule c, AnyClassType a, AnyEnumType e, ConstQuantizerPtr p, Quantizer qq, Device d, Any y) -> NoneType)s",
     R"s(foo::bar(Generator? g, Storage s, Stream st, QScheme q, Capsule c, AnyClassType a, AnyEnumType e, int p, Quantizer qq, Device d, Any y) -> NoneType)s"},
    {R"s(foo::bar(t x, t1 y, t2[] z) -> t(*))s", nullptr},
    {R"s(quantized::conv2d_relu.new(Tensor qx, __torch__.torch.classes.quantized.Conv2dPackedParamsBase packed_weight, float output_scale, int output_zero_point) -> Tensor)s",
     nullptr},
    {R"s(__getstate__(__torch__.torch.classes.quantized.Conv2dPackedParamsBase _0) -> ((str, Tensor[], Tensor?[]) _0))s",
     nullptr},
    {R"s(torchvision::nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor)s", nullptr},
    {R"s(aten::tensor_split.tensor_indices_or_sections(Tensor(a -> *) self, Tensor tensor_indices_or_sections, int dim=0) -> Tensor(a)[])s",
     nullptr},
    {R"s(foo::bar(Tensor[][] z, (Tensor, int)[] t, (Tensor(a), int) q) -> ())s",
     R"s(foo::bar(Tensor[][] z, (Tensor, int)[] t, (Tensor, int) q) -> ())s"},
    {R"s(foo::bar(Tensor? x=None, Tensor(a!)? y=None) -> ())s", nullptr},
    {R"s(foo::bar(int a,int b=2)->int)s", R"s(foo::bar(int a, int b=2) -> int)s"},
    {R"s(  foo::bar ( int a , int [ 2 ] b = 1 ) -> ( int x , int y )  )s",
     R"s(foo::bar(int a, int[2] b=1) -> (int x, int y))s"},
};

TEST(FunctionSchemaPrint, MatchesPyTorch) {
  for (const auto& p : kPrints) {
    SCOPED_TRACE(p.input);
    const std::string expected = p.expected ? p.expected : p.input;
    FunctionSchema s = parseSchema(p.input);
    EXPECT_EQ(s.str(), expected);
    // What we print parses back to the same print.
    EXPECT_EQ(parseSchema(s.str()).str(), expected);
  }
}

TEST(FunctionSchemaPrint, AliasSetsKeepTheirWrittenOrder) {
  // PyTorch prints its unordered_set's order (`(a|b)` comes back as `(b|a)`); we keep the
  // written order so that str(parse(s)) == s for every s PyTorch prints.
  EXPECT_EQ(parseSchema("foo::bar(Tensor(a|b) x) -> Tensor(b|a)").str(),
            "foo::bar(Tensor(a|b) x) -> Tensor(b|a)");
  EXPECT_EQ(parseSchema("foo::bar(Tensor(a -> b|c) y) -> ()").str(),
            "foo::bar(Tensor(a -> b|c) y) -> ()");
}

TEST(FunctionSchema, NameOverloadArgumentsReturns) {
  FunctionSchema s =
      parseSchema("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(s.name(), "aten::add");
  EXPECT_EQ(s.overloadName(), "Tensor");
  EXPECT_EQ(s.ns(), "aten");
  EXPECT_EQ(s.operatorName().str(), "aten::add.Tensor");
  ASSERT_EQ(s.arguments().size(), 3u);
  EXPECT_EQ(s.arguments()[0].name(), "self");
  EXPECT_EQ(*s.arguments()[0].type(), *TensorType::get());
  EXPECT_FALSE(s.arguments()[1].kwargOnly());
  EXPECT_TRUE(s.arguments()[2].kwargOnly());
  EXPECT_EQ(*s.arguments()[2].type(), *NumberType::get());
  ASSERT_TRUE(s.arguments()[2].defaultValue());
  EXPECT_EQ(s.arguments()[2].defaultValue()->toInt(), 1);
  ASSERT_EQ(s.returns().size(), 1u);
  EXPECT_EQ(s.returns()[0].name(), "");
  EXPECT_FALSE(s.isVararg());
  EXPECT_FALSE(s.isVarret());
  EXPECT_FALSE(s.isMutable());
  EXPECT_EQ(s.argumentIndexWithName("other"), 1u);
  EXPECT_EQ(s.argumentIndexWithName("nope"), std::nullopt);
}

TEST(FunctionSchema, NoOverloadNoNamespace) {
  FunctionSchema s = parseSchema("aten::relu(Tensor self) -> Tensor");
  EXPECT_EQ(s.overloadName(), "");
  EXPECT_EQ(s.operatorName().str(), "aten::relu");
  FunctionSchema m = parseSchema("__getstate__(int self) -> int");
  EXPECT_EQ(m.name(), "__getstate__");
  EXPECT_EQ(m.ns(), "");
}

TEST(FunctionSchema, AliasAnnotations) {
  FunctionSchema s = parseSchema(
      "foo::bar(Tensor(a!) self, Tensor(a -> *) v, Tensor(b|c) u, Tensor(a!)[] l, "
      "Tensor x) -> Tensor(a!)");
  const auto& a0 = *s.arguments()[0].aliasInfo();
  EXPECT_TRUE(a0.isWrite());
  EXPECT_EQ(a0.beforeSets(), std::vector<std::string>{"a"});
  EXPECT_EQ(a0.afterSets(), std::vector<std::string>{"a"});
  EXPECT_EQ(a0.str(), "(a!)");

  const auto& a1 = *s.arguments()[1].aliasInfo();
  EXPECT_FALSE(a1.isWrite());
  EXPECT_EQ(a1.beforeSets(), std::vector<std::string>{"a"});
  EXPECT_TRUE(a1.isWildcardAfter());
  EXPECT_FALSE(a1.isWildcardBefore());
  EXPECT_EQ(a1.str(), "(a -> *)");

  const auto& a2 = *s.arguments()[2].aliasInfo();
  EXPECT_EQ(a2.beforeSets(), (std::vector<std::string>{"b", "c"}));

  // The list itself has no set; its elements are in a (a contained alias info), and writing
  // the elements makes the list's info a write too.
  const auto& a3 = *s.arguments()[3].aliasInfo();
  EXPECT_TRUE(a3.beforeSets().empty());
  EXPECT_TRUE(a3.isWrite());
  ASSERT_EQ(a3.containedTypes().size(), 1u);
  EXPECT_EQ(a3.containedTypes()[0].str(), "(a!)");
  EXPECT_EQ(*s.arguments()[3].type(), *ListType::ofTensors());

  EXPECT_FALSE(s.arguments()[4].aliasInfo());
  EXPECT_TRUE(s.isMutable());
  EXPECT_TRUE(s.returns()[0].aliasInfo()->isWrite());
}

TEST(FunctionSchema, WriteShorthandMakesFreshSets) {
  FunctionSchema s = parseSchema("foo::bar(Tensor! x, Tensor! y) -> ()");
  EXPECT_EQ(s.arguments()[0].aliasInfo()->beforeSets(), std::vector<std::string>{"$0"});
  EXPECT_EQ(s.arguments()[1].aliasInfo()->beforeSets(), std::vector<std::string>{"$1"});
  EXPECT_TRUE(s.arguments()[1].aliasInfo()->afterSets().empty());
  EXPECT_EQ(s.str(), "foo::bar(Tensor($0! -> ) x, Tensor($1! -> ) y) -> ()");
  // PyTorch cannot read that print back; we can.
  EXPECT_EQ(parseSchema(s.str()).str(), s.str());
}

TEST(FunctionSchema, ContainerAliasAfterList) {
  FunctionSchema s = parseSchema("aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!)");
  const auto& a = *s.arguments()[0].aliasInfo();
  EXPECT_EQ(a.beforeSets(), std::vector<std::string>{"a"});
  EXPECT_TRUE(a.containedTypes().empty());
  EXPECT_EQ(s.arguments()[0].type()->str(), "t[]");
  EXPECT_TRUE(s.arguments()[0].type()->hasFreeVariables());
  FunctionSchema d =
      parseSchema("aten::update.str(Dict(str, t)(a!) self, Dict(str, t)(a!) to_add) -> ()");
  EXPECT_EQ(d.arguments()[0].type()->str(), "Dict(str, t)");
  EXPECT_TRUE(d.arguments()[0].aliasInfo()->isWrite());
}

TEST(FunctionSchema, FixedSizeLists) {
  FunctionSchema s = parseSchema(
      "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
      "int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor");
  const Argument& stride = s.arguments()[3];
  EXPECT_EQ(stride.N(), 2);
  EXPECT_EQ(*stride.type(), *ListType::ofInts());
  // `int[2] stride=1` means [1, 1], printed back as `1`.
  EXPECT_EQ(stride.defaultValue()->toIntVector(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(stride.str(), "int[2] stride=1");
  EXPECT_EQ(s.arguments()[6].N(), std::nullopt);

  FunctionSchema o = parseSchema("foo::bar(int[1]? dim=None, int[2](a) x) -> ()");
  EXPECT_EQ(o.arguments()[0].N(), 1);
  EXPECT_EQ(o.arguments()[0].type()->str(), "int[]?");
  EXPECT_EQ(o.arguments()[0].str(), "int[1]? dim=None");
  EXPECT_EQ(o.arguments()[1].aliasInfo()->str(), "(a)");
  EXPECT_EQ(o.arguments()[1].str(), "int[2](a) x");
}

TEST(FunctionSchema, RealAndFakeTypes) {
  FunctionSchema s = parseSchema(
      "foo::bar(ScalarType? dtype, Layout l, MemoryFormat m, SymInt[] size, SymInt n, "
      "Dimname d, ConstQuantizerPtr q) -> ()");
  const auto& a = s.arguments();
  EXPECT_EQ(a[0].realType()->str(), "ScalarType?");
  EXPECT_EQ(a[0].type()->str(), "int?");
  EXPECT_EQ(a[1].realType()->str(), "Layout");
  EXPECT_EQ(*a[1].type(), *IntType::get());
  EXPECT_EQ(*a[2].type(), *IntType::get());
  EXPECT_EQ(a[3].realType()->str(), "SymInt[]");
  EXPECT_EQ(*a[3].type(), *ListType::ofInts());
  EXPECT_EQ(*a[4].type(), *IntType::get());
  // As in PyTorch, Dimname is a str and prints as one.
  EXPECT_EQ(*a[5].type(), *StringType::get());
  EXPECT_EQ(a[5].str(), "str d");
  EXPECT_EQ(*a[6].type(), *IntType::get());
}

TEST(FunctionSchema, DefaultValues) {
  FunctionSchema s = parseSchema(
      "foo::bar(float a=1e-05, float b=-inf, float c=inf, int d=-3, bool e=True, "
      "str f=\"mean\", str? g=None, float[] h=[1, 2.5], int[] i=[], ScalarType j=float, "
      "int k=Mean, MemoryFormat l=contiguous_format, Layout m=strided, ScalarType n=long, "
      "complex o=1j, float p=nan, Scalar q=2.5, Tensor? r=None, Device s=\"cpu\") -> ()");
  const auto& a = s.arguments();
  EXPECT_DOUBLE_EQ(a[0].defaultValue()->toDouble(), 1e-5);
  EXPECT_EQ(a[1].defaultValue()->toDouble(), -INFINITY);
  EXPECT_EQ(a[2].defaultValue()->toDouble(), INFINITY);
  EXPECT_EQ(a[3].defaultValue()->toInt(), -3);
  EXPECT_TRUE(a[4].defaultValue()->toBool());
  EXPECT_EQ(a[5].defaultValue()->toStringRef(), "mean");
  EXPECT_TRUE(a[6].defaultValue()->isNone());
  EXPECT_EQ(a[7].defaultValue()->toDoubleVector(), (std::vector<double>{1.0, 2.5}));
  EXPECT_TRUE(a[8].defaultValue()->toIntVector().empty());
  EXPECT_EQ(a[9].defaultValue()->toInt(), 6);   // at::kFloat
  EXPECT_EQ(a[10].defaultValue()->toInt(), 1);  // at::Reduction::Mean
  EXPECT_EQ(a[11].defaultValue()->toInt(), 0);  // MemoryFormat::Contiguous
  EXPECT_EQ(a[12].defaultValue()->toInt(), 0);  // Layout::Strided
  EXPECT_EQ(a[13].defaultValue()->toInt(), 4);  // at::kLong
  EXPECT_EQ(a[14].defaultValue()->toComplexDouble(), std::complex<double>(0, 1));
  EXPECT_TRUE(std::isnan(a[15].defaultValue()->toDouble()));
  EXPECT_EQ(a[16].defaultValue()->toDouble(), 2.5);
  EXPECT_TRUE(a[17].defaultValue()->isNone());
  EXPECT_TRUE(a[18].defaultValue()->toDevice().isCpu());
  EXPECT_EQ(s.str(),
            "foo::bar(float a=1.0000000000000001e-05, float b=-inf, float c=inf, int d=-3, "
            "bool e=True, str f=\"mean\", str? g=None, float[] h=[1., 2.5], int[] i=[], "
            "ScalarType j=6, int k=1, MemoryFormat l=0, Layout m=0, ScalarType n=4, "
            "complex o=0.+1.j, float p=nan, Scalar q=2.5, Tensor? r=None, Device s=cpu) -> ()");
}

TEST(FunctionSchema, PrintSchemaValue) {
  EXPECT_EQ(printSchemaValue(IValue(1.0)), "1.");
  EXPECT_EQ(printSchemaValue(IValue(-0.0)), "0.");
  EXPECT_EQ(printSchemaValue(IValue(0.1)), "0.10000000000000001");
  EXPECT_EQ(printSchemaValue(IValue(1e20)), "1e+20");
  EXPECT_EQ(printSchemaValue(IValue(60.0)), "60.");
  EXPECT_EQ(printSchemaValue(IValue(std::complex<double>(1, -2))), "1.-2.j");
  EXPECT_EQ(printSchemaValue(IValue(std::string("a\"b\\c\n\x01"))), "\"a\\\"b\\\\c\\n\\001\"");
  EXPECT_EQ(printSchemaValue(IValue()), "None");
  EXPECT_EQ(printSchemaValue(IValue(false)), "False");
}

TEST(FunctionSchema, StringEscapesRoundTrip) {
  FunctionSchema s = parseSchema(R"(foo::bar(str a="\"\'\\\t\001", str b='x') -> ())");
  EXPECT_EQ(s.arguments()[0].defaultValue()->toStringRef(), "\"'\\\t\001");
  EXPECT_EQ(s.str(), R"(foo::bar(str a="\"\'\\\t\001", str b="x") -> ())");
}

TEST(FunctionSchema, VarargsAndVarret) {
  FunctionSchema p = parseSchema("prim::Print(...) -> ()");
  EXPECT_TRUE(p.isVararg());
  EXPECT_FALSE(p.isVarret());
  EXPECT_TRUE(p.arguments().empty());
  EXPECT_TRUE(p.returns().empty());

  FunctionSchema t = parseSchema("prim::TupleConstruct(...) -> ...");
  EXPECT_TRUE(t.isVararg());
  EXPECT_TRUE(t.isVarret());
  EXPECT_EQ(t.str(), "prim::TupleConstruct(...) -> ...");

  FunctionSchema m = parseSchema("foo::bar(int a, *, int b, ...) -> (int, ...)");
  EXPECT_EQ(m.arguments().size(), 2u);
  EXPECT_TRUE(m.arguments()[1].kwargOnly());
  EXPECT_EQ(m.returns().size(), 1u);
  EXPECT_TRUE(m.isVarret());
  EXPECT_EQ(m.str(), "foo::bar(int a, *, int b, ...) -> (int, ...)");
}

TEST(FunctionSchema, NamedAndTupleReturns) {
  FunctionSchema s = parseSchema(
      "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  ASSERT_EQ(s.returns().size(), 2u);
  EXPECT_EQ(s.returns()[0].name(), "values");
  EXPECT_EQ(s.returns()[1].name(), "indices");

  // A single tuple return keeps its parentheses: `-> ((int, int))`.
  FunctionSchema t = parseSchema("foo::bar() -> ((int, int))");
  ASSERT_EQ(t.returns().size(), 1u);
  EXPECT_EQ(t.returns()[0].type()->str(), "(int, int)");
  EXPECT_EQ(t.str(), "foo::bar() -> ((int, int))");

  FunctionSchema n = parseSchema("foo::bar() -> ()");
  EXPECT_TRUE(n.returns().empty());
  EXPECT_EQ(parseSchema("foo::bar(Tensor self) -> Tensor self").returns()[0].name(), "self");
}

TEST(FunctionSchema, Types) {
  FunctionSchema s = parseSchema(
      "foo::bar(Dict(str, Tensor) a, (int, float) b, () c, Future(int) d, RRef(t) e, "
      "Union(int, str) f, Tensor?[] g, t1 h, NoneType i, Await(int) j, "
      "__torch__.torch.classes.quantized.Conv2dPackedParamsBase k) -> Any");
  const auto& a = s.arguments();
  EXPECT_EQ(a[0].type()->str(), "Dict(str, Tensor)");
  EXPECT_EQ(a[1].type()->str(), "(int, float)");
  EXPECT_EQ(a[2].type()->str(), "()");
  EXPECT_EQ(a[3].type()->kind(), TypeKind::FutureType);
  EXPECT_EQ(a[4].type()->str(), "RRef(t)");
  EXPECT_EQ(a[5].type()->kind(), TypeKind::UnionType);
  EXPECT_EQ(a[6].type()->str(), "Tensor?[]");
  EXPECT_EQ(a[7].type()->kind(), TypeKind::VarType);
  EXPECT_EQ(*a[8].type(), *NoneType::get());
  EXPECT_EQ(a[9].type()->kind(), TypeKind::AwaitType);
  ASSERT_EQ(a[10].type()->kind(), TypeKind::ClassType);
  EXPECT_EQ(a[10].type()->str(), "__torch__.torch.classes.quantized.Conv2dPackedParamsBase");
}

TEST(FunctionSchema, ClassTypesGoThroughTheResolver) {
  auto cls = ClassType::create("__torch__.M", /*isModule=*/true);
  TypeResolver resolver = [&](const std::string& name) -> TypePtr {
    return name == "__torch__.M" ? cls : nullptr;
  };
  FunctionSchema s = parseSchema("forward(__torch__.M self, __torch__.N x) -> int", resolver);
  EXPECT_EQ(s.arguments()[0].type().get(), cls.get());
  EXPECT_EQ(s.arguments()[1].type()->str(), "__torch__.N");
}

TEST(FunctionSchema, ParseNameAndSchemaOrName) {
  OperatorName n = parseName("aten::relu");
  EXPECT_EQ(n.name, "aten::relu");
  EXPECT_EQ(n.overloadName, "");
  EXPECT_EQ(parseName("aten::add.Tensor").overloadName, "Tensor");
  auto v = parseSchemaOrName("aten::add.out");
  ASSERT_TRUE(std::holds_alternative<OperatorName>(v));
  EXPECT_EQ(std::get<OperatorName>(v).str(), "aten::add.out");
  auto w = parseSchemaOrName("aten::relu(Tensor self) -> Tensor");
  ASSERT_TRUE(std::holds_alternative<FunctionSchema>(w));
  EXPECT_THROW(parseName("aten::relu(Tensor self) -> Tensor"), Error);
}

// ---- bad schemas ---------------------------------------------------------------------------

std::string errorOf(const char* schema) {
  try {
    parseSchema(schema);
  } catch (const Error& e) {
    return e.message();
  }
  return "(no error)";
}

TEST(FunctionSchemaErrors, MessagesNameTheProblemAndColumn) {
  EXPECT_EQ(errorOf("foo::bar(Bogus x) -> ()"),
            "invalid schema: unknown type specifier 'Bogus' at column 10");
  EXPECT_EQ(errorOf("aten::relu"),
            "invalid schema: tried to parse a function schema but only the operator name was "
            "given at column 11");
  EXPECT_EQ(errorOf("foo::bar(int x, ..., int y) -> ()"),
            "invalid schema: '...' must be the last element of the argument list at column 22");
  EXPECT_EQ(errorOf("foo::bar(int x) -> (int a, ..., int b)"),
            "invalid schema: '...' must be the last element of the return list at column 33");
  // `-> int a` names the return; a second name is junk.
  EXPECT_EQ(errorOf("foo::bar(int x) -> int a b"),
            "invalid schema: expected end of schema but found 'b' at column 26");
  EXPECT_EQ(errorOf("foo::bar(int x) ->"),
            "invalid schema: expected a type but found end of input at column 19");
  EXPECT_EQ(errorOf("foo::bar(int x) Tensor"),
            "invalid schema: expected '->' but found 'Tensor' at column 17");
  EXPECT_EQ(errorOf("foo::bar(int x"),
            "invalid schema: expected ')' but found end of schema at column 15");
  // A sized list's default is repeated N times: N is checked first (found by fuzz_types).
  EXPECT_EQ(errorOf("foo::bar(int[39999999] padding=0) -> ()"),
            "invalid schema: list size 39999999 is over the limit of 65536 at column 14");
  EXPECT_EQ(errorOf("foo::bar(int) -> ()"),
            "invalid schema: expected an argument name but found ')' at column 13");
  EXPECT_EQ(errorOf("foo::bar(int x=) -> ()"),
            "invalid schema: expected a default value but found ')' at column 16");
  EXPECT_EQ(errorOf("foo::bar(int x=banana) -> ()"),
            "invalid schema: invalid numeric default value 'banana' at column 16");
  EXPECT_EQ(errorOf("foo::bar(Tensor x=1) -> ()"),
            "invalid schema: expected None but found '1' at column 19");
  EXPECT_EQ(errorOf("foo::bar(str[] x=[\"a\"]) -> ()"),
            "invalid schema: lists are only supported for float, int and complex types at "
            "column 18");
  EXPECT_EQ(errorOf("foo::bar(int[] x=[1.5]) -> ()"),
            "invalid schema: expected a list of ints at column 18");
  EXPECT_EQ(errorOf("foo::bar(Tensor(*|a) x) -> ()"),
            "invalid schema: expected ')' but found 'a' at column 19");
  EXPECT_EQ(errorOf("foo::bar(Tensor(a x) -> ()"),
            "invalid schema: expected ')' but found 'x' at column 19");
  EXPECT_EQ(errorOf("foo::bar(int[x] y) -> ()"),
            "invalid schema: expected a list size but found 'x' at column 14");
  EXPECT_EQ(errorOf("foo::bar(str s=\"abc) -> ()"),
            "invalid schema: unterminated string literal at column 16");
  EXPECT_EQ(errorOf("foo::bar(Dict(str) d) -> ()"),
            "invalid schema: Dict takes 2 types, got 1 at column 10");
  EXPECT_EQ(errorOf("foo::bar(Tensor x, int y=1, int z) -> ()"),
            "invalid schema: non-default positional argument 'z' follows a default argument");
  EXPECT_EQ(errorOf("::bar() -> ()"),
            "invalid schema: expected an operator name but found ':' at column 1");
}

TEST(FunctionSchemaErrors, DetailsShowACaret) {
  try {
    parseSchema("foo::bar(Bogus x) -> ()");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.details(), "foo::bar(Bogus x) -> ()\n         ^");
  }
}

// ---- the op table ---------------------------------------------------------------------------

TEST(OperatorRegistry, RegisterAndLookUp) {
  OperatorRegistry r;
  OpInfo& add =
      r.registerSchema("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  r.registerSchema(
      "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)");
  r.registerSchema("aten::relu(Tensor self) -> Tensor");
  EXPECT_EQ(r.size(), 3u);
  EXPECT_EQ(add.overloadKey, "aten::add.Tensor");
  EXPECT_EQ(r.find(add.key), &add);
  EXPECT_EQ(r.findOverload("aten::add.Tensor"), &add);
  EXPECT_EQ(r.findOverload("aten::relu")->schema.name(), "aten::relu");
  EXPECT_EQ(r.findOverload("aten::add"), nullptr);
  EXPECT_EQ(r.lookup("aten::add").size(), 2u);
  EXPECT_TRUE(r.lookup("aten::mul").empty());
  EXPECT_EQ(r.find("aten::relu(Tensor x) -> Tensor"), nullptr);
  EXPECT_THROW(r.expect("aten::relu(Tensor x) -> Tensor"), Error);
  auto all = r.all();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0]->overloadKey, "aten::add.Tensor");
  EXPECT_EQ(all[2]->overloadKey, "aten::relu");
  EXPECT_FALSE(add.mutates);
  EXPECT_TRUE(r.findOverload("aten::add.out")->mutates);
  EXPECT_TRUE(r.findOverload("aten::add.out")->returnsAlias);
}

TEST(OperatorRegistry, DuplicatesAndBadSchemasAreErrors) {
  OperatorRegistry r;
  r.registerSchema("aten::relu(Tensor self) -> Tensor");
  try {
    r.registerSchema("aten::relu(Tensor self) -> Tensor");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "operator schema registered twice: 'aten::relu(Tensor self) -> Tensor'");
  }
  try {
    r.registerSchema("aten::relu(Tensor x) -> Tensor");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(),
              "operator aten::relu registered twice: 'aten::relu(Tensor self) -> Tensor' and "
              "'aten::relu(Tensor x) -> Tensor'");
  }
  try {
    r.registerSchema("aten::relu(Tensr self) -> Tensor");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("while registering operator schema"), std::string::npos);
  }
  EXPECT_EQ(r.size(), 1u);
}

// Note [Lazy schemas]: texts are parsed by the first lookup of their name, a whole name at once.
TEST(OperatorRegistry, SchemaTextsAreParsedOnFirstLookupOfTheirName) {
  OperatorRegistry r;
  r.registerSchemaText("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  r.registerSchemaText(
      "aten::randn(int[] size, *, int? dtype=None, int? layout=None, Device? device=None, bool? "
      "pin_memory=None) -> Tensor");
  r.registerSchemaText(
      "aten::randn.generator(int[] size, *, Generator? generator, int? dtype=None, int? "
      "layout=None, Device? device=None, bool? pin_memory=None) -> Tensor");
  r.registerSchemaText("aten::relu(Tensor self) -> Tensor");
  EXPECT_EQ(r.size(), 4u);
  // find by the printed schema, findOverload and lookup all see unparsed texts.
  const OpInfo* add =
      r.find("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->overloadKey, "aten::add.Tensor");
  EXPECT_EQ(r.findOverload("aten::add.Tensor"), add);
  EXPECT_EQ(r.find("aten::add.Tensor(Tensor self, Tensor other) -> Tensor"), nullptr);
  EXPECT_EQ(r.findOverload("aten::relu")->schema.name(), "aten::relu");
  // Facts per name come out as with eager registration: the Generator overload makes both random.
  ASSERT_EQ(r.lookup("aten::randn").size(), 2u);
  EXPECT_EQ(r.lookup("aten::randn")[0]->overloadKey, "aten::randn");
  EXPECT_TRUE(r.lookup("aten::randn")[0]->nondeterministic);
  EXPECT_TRUE(r.lookup("aten::randn")[1]->nondeterministic);
  // Addresses stay valid as other names are parsed; size() does not change by parsing.
  EXPECT_EQ(r.all().size(), 4u);
  EXPECT_EQ(r.findOverload("aten::add.Tensor"), add);
  EXPECT_EQ(r.size(), 4u);
  // An eager registration of a name with pending texts parses them first and sees them.
  r.registerSchemaText("aten::mul.Tensor(Tensor self, Tensor other) -> Tensor");
  r.registerSchema("aten::mul.Scalar(Tensor self, Scalar other) -> Tensor");
  ASSERT_EQ(r.lookup("aten::mul").size(), 2u);
  EXPECT_EQ(r.lookup("aten::mul")[0]->overloadKey, "aten::mul.Tensor");
}

TEST(OperatorRegistry, SchemaTextErrors) {
  OperatorRegistry r;
  r.registerSchemaText("aten::relu(Tensor self) -> Tensor");
  // Duplicates are found without parsing.
  try {
    r.registerSchemaText("aten::relu(Tensor self) -> Tensor");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "operator schema registered twice: 'aten::relu(Tensor self) -> Tensor'");
  }
  try {
    r.registerSchemaText("aten::relu(Tensor x) -> Tensor");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(),
              "operator aten::relu registered twice: 'aten::relu(Tensor self) -> Tensor' and "
              "'aten::relu(Tensor x) -> Tensor'");
  }
  EXPECT_THROW(r.registerSchemaText("aten::relu"), Error);
  // After parsing, a text with the same overload is still a duplicate, and so is an eager one.
  ASSERT_NE(r.findOverload("aten::relu"), nullptr);
  EXPECT_THROW(r.registerSchemaText("aten::relu(Tensor self) -> Tensor"), Error);
  r.registerSchemaText("aten::gelu(Tensor self, *, str approximate=\"none\") -> Tensor");
  EXPECT_THROW(r.registerSchema("aten::gelu(Tensor self, *, str approximate=\"none\") -> Tensor"),
               Error);
  // A text that does not parse throws from every lookup that reaches its name, not before.
  r.registerSchemaText("aten::foo(Tensr self) -> Tensor");
  EXPECT_EQ(r.findOverload("aten::relu")->overloadKey, "aten::relu");
  for (int i = 0; i < 2; ++i) {
    try {
      r.lookup("aten::foo");
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(
                    "while registering operator schema 'aten::foo(Tensr self) -> Tensor'"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(r.all(), Error);
  // A text that parses but is not printed as PyTorch prints it (its key would not be found).
  OperatorRegistry r2;
  r2.registerSchemaText("aten::bar(Tensor  self) -> Tensor");
  try {
    r2.find("aten::bar(Tensor  self) -> Tensor");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(),
              "operator schema 'aten::bar(Tensor  self) -> Tensor' is not as PyTorch prints it: "
              "'aten::bar(Tensor self) -> Tensor'");
  }
}

TEST(OperatorRegistry, GlobalTableHoldsPyTorchsOperators) {
  initOperatorRegistry();
  initOperatorRegistry();  // once only
  const OperatorRegistry& r = OperatorRegistry::global();
  EXPECT_GT(r.size(), 2000u);
  const OpInfo* add = r.findOverload("aten::add.Tensor");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->key, "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_GE(r.lookup("aten::add").size(), 10u);
  for (const char* name :
       {"prim::Print", "prim::TupleUnpack", "quantized::conv2d_relu", "prepacked::conv2d_clamp_run",
        "torchvision::nms", "torchvision::roi_align"})
    EXPECT_FALSE(r.lookup(name).empty()) << name;
  EXPECT_TRUE(r.lookup("prim::Print")[0]->hasSideEffects);
  EXPECT_FALSE(add->hasSideEffects);
  EXPECT_TRUE(r.findOverload("aten::dropout")->nondeterministic);
  EXPECT_TRUE(r.findOverload("aten::randn")->nondeterministic);
  EXPECT_FALSE(add->nondeterministic);
  EXPECT_TRUE(r.findOverload("aten::add_.Tensor")->mutates);
  EXPECT_TRUE(r.findOverload("aten::view")->returnsAlias);
  EXPECT_FALSE(add->returnsAlias);
  // Every key prints back to itself.
  for (const OpInfo* op : r.all()) ASSERT_EQ(op->schema.str(), op->key);
}

}  // namespace
