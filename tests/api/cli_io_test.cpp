// Command-line inputs and outputs as ../shared/docs/cli.md specifies them.
#include "api/cli_io.h"
#include "core/error.h"

#include <gtest/gtest.h>

using namespace torchless;

namespace {

Tensor fakeLoad(const std::string& path) {
  Tensor t = Tensor::empty({static_cast<int64_t>(path.size())}, ScalarType::Float);
  return t;
}

ParamSpec param(const char* name, const char* type, std::optional<IValue> def = std::nullopt) {
  return {name, parseTypeAnnotation(type), std::move(def)};
}

std::string errorOf(const std::vector<std::string>& words, const std::vector<ParamSpec>& params) {
  try {
    parseInputs(words, params, fakeLoad);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(CliInputs, LiteralsTensorsAndDefaults) {
  std::vector<ParamSpec> params = {param("x", "Tensor"),
                                   param("n", "int"),
                                   param("s", "float"),
                                   param("flag", "bool"),
                                   param("y", "Optional[Tensor]"),
                                   param("name", "str"),
                                   param("k", "int", IValue(7))};
  auto args = parseInputs({"a.npy", "13", "-2.5", "true", "none", "hello"}, params, fakeLoad);
  ASSERT_EQ(args.size(), 7u);
  EXPECT_EQ(args[0].toTensor().numel(), 5);
  EXPECT_EQ(args[1].toInt(), 13);
  EXPECT_EQ(args[2].toDouble(), -2.5);
  EXPECT_TRUE(args[3].toBool());
  EXPECT_TRUE(args[4].isNone());
  EXPECT_EQ(args[5].toStringRef(), "hello");
  EXPECT_EQ(args[6].toInt(), 7);
  // an int literal is a valid float
  EXPECT_EQ(parseInputs({"3"}, {param("s", "float")}, fakeLoad)[0].toDouble(), 3.0);
}

TEST(CliInputs, TuplesListsDicts) {
  std::vector<ParamSpec> params = {param("pair", "Tuple[Tensor, int]"), param("xs", "List[Tensor]"),
                                   param("named", "Dict[str, Tensor]")};
  auto args =
      parseInputs({"a.npy", "4", "@list:b.npy,cc.npy", "@dict:w=d.npy,v=e.npy"}, params, fakeLoad);
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[0].toTuple()->elements[1].toInt(), 4);
  EXPECT_EQ(args[1].toList()->list.size(), 2u);
  EXPECT_EQ(args[1].toList()->list[1].toTensor().numel(), 6);
  EXPECT_EQ(args[2].toDict()->entries()[0].first.toStringRef(), "w");
  EXPECT_EQ(
      parseInputs({"@list:"}, {param("xs", "List[Tensor]")}, fakeLoad)[0].toList()->list.size(),
      0u);
}

TEST(CliInputs, ErrorsNameTheParameter) {
  EXPECT_EQ(errorOf({"2.5"}, {param("n", "int")}),
            "argument 'n' (int): expected an int, got '2.5'");
  EXPECT_EQ(errorOf({"x"}, {param("t", "Tensor")}),
            "argument 't' (Tensor): expected a .npy file, got 'x'");
  EXPECT_EQ(errorOf({"@list:a.npy,b.npy"}, {param("t", "Tensor")}),
            "argument 't' (Tensor): expected a .npy file, got the list '@list:a.npy,b.npy'");
  EXPECT_EQ(errorOf({}, {param("t", "Tensor")}),
            "missing input for argument 't' (Tensor): 0 inputs given, the method takes 1");
  EXPECT_EQ(errorOf({"a.npy", "b.npy"}, {param("t", "Tensor")}),
            "too many inputs: the method takes 1 argument, 2 inputs given");
  EXPECT_EQ(errorOf({"a.npy"}, {param("p", "Tuple[Tensor, Tensor]")}),
            "argument 'p' (Tuple[Tensor, Tensor]): a tuple of 2 takes 2 inputs, only 1 left");
  EXPECT_EQ(errorOf({"@dict:a"}, {param("d", "Dict[str, Tensor]")}),
            "argument 'd' (Dict[str, Tensor]): dict entry 'a' has no '='");
  EXPECT_EQ(errorOf({"a.npy"}, {param("xs", "List[Tensor]")}),
            "argument 'xs' (List[Tensor]): expected @list:a,b,... got 'a.npy'");
}

TEST(CliInputs, UnionsTakeTheFirstMemberThatFits) {
  auto p = param("v", "Union[Tensor, List[Tensor], int]");
  EXPECT_EQ(parseInputs({"a.npy"}, {p}, fakeLoad)[0].toTensor().numel(), 5);
  EXPECT_EQ(parseInputs({"@list:a.npy"}, {p}, fakeLoad)[0].toList()->list.size(), 1u);
  EXPECT_EQ(parseInputs({"3"}, {p}, fakeLoad)[0].toInt(), 3);
  EXPECT_EQ(errorOf({"word"}, {p}),
            "argument 'v' (Union[Tensor, List[Tensor], int]): 'word' is none of the union's types");
}

TEST(CliInputs, UnionsTakeTheNarrowestMemberWhateverTheOrder) {
  // PyTorch stores Union[int, float] as Union[float, int]: `3` is still an int, as in Python;
  // a str takes a word only when no other member does.
  for (const char* annotation : {"Union[float, int]", "Union[int, float]"}) {
    auto p = param("v", annotation);
    const IValue three = parseInputs({"3"}, {p}, fakeLoad)[0];
    ASSERT_TRUE(three.isInt()) << annotation;
    EXPECT_EQ(three.toInt(), 3);
    EXPECT_DOUBLE_EQ(parseInputs({"2.5"}, {p}, fakeLoad)[0].toDouble(), 2.5);
  }
  auto s = param("v", "Union[str, int]");
  EXPECT_TRUE(parseInputs({"7"}, {s}, fakeLoad)[0].isInt());
  EXPECT_EQ(parseInputs({"seven"}, {s}, fakeLoad)[0].toStringRef(), "seven");
}

TEST(CliInputs, OptionalTupleTakesTheTuplesInputsOrOneNone) {
  std::vector<ParamSpec> params = {param("size", "Optional[Tuple[int, int]]"), param("k", "int")};
  auto given = parseInputs({"4", "5", "6"}, params, fakeLoad);
  ASSERT_TRUE(given[0].isTuple());
  EXPECT_EQ(given[0].toTuple()->elements[1].toInt(), 5);
  EXPECT_EQ(given[1].toInt(), 6);
  auto none = parseInputs({"none", "6"}, params, fakeLoad);
  EXPECT_TRUE(none[0].isNone());
  EXPECT_EQ(none[1].toInt(), 6);
}

TEST(CliInputs, ShapeSpecs) {
  InputSpec a = parseInputSpec("1x3x224x224");
  EXPECT_EQ(a.sizes, (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(a.dtype, ScalarType::Float);
  EXPECT_EQ(a.fill, InputSpec::Fill::Random);
  InputSpec b = parseInputSpec("2x128:int64:ones");
  EXPECT_EQ(b.dtype, ScalarType::Long);
  EXPECT_EQ(b.fill, InputSpec::Fill::Ones);
  EXPECT_TRUE(parseInputSpec("scalar:float64").sizes.empty());
  EXPECT_EQ(parseInputSpec("0x4").sizes, (std::vector<int64_t>{0, 4}));
  for (const char* bad :
       {"1xx3", "1x-3", "3:float31", "3:float32:noise", "1:f:z:w", "", "100000x100000x1000"}) {
    EXPECT_THROW(parseInputSpec(bad), Error) << bad;
  }
  try {
    parseInputSpec("1x3xa");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input spec '1x3xa': 'a' is not a size"),
              std::string::npos);
  }
}

TEST(CliInputs, SpecTensorsAreSeededAndInRange) {
  Tensor r1 = tensorFromSpec(parseInputSpec("4x5"), 7);
  Tensor r2 = tensorFromSpec(parseInputSpec("4x5"), 7);
  Tensor r3 = tensorFromSpec(parseInputSpec("4x5"), 8);
  ASSERT_EQ(r1.sizes(), (IntList{4, 5}));
  bool differs = false;
  for (int64_t i = 0; i < 20; ++i) {
    float v = r1.data<float>()[i];
    EXPECT_EQ(v, r2.data<float>()[i]);
    EXPECT_GE(v, 0.f);
    EXPECT_LT(v, 1.f);
    differs |= v != r3.data<float>()[i];
  }
  EXPECT_TRUE(differs);
  Tensor ids = tensorFromSpec(parseInputSpec("64:int64"), 0);
  EXPECT_EQ(ids.scalarType(), ScalarType::Long);
  for (int64_t i = 0; i < 64; ++i) {
    EXPECT_GE(ids.data<int64_t>()[i], 0);
    EXPECT_LT(ids.data<int64_t>()[i], 10);
  }
  Tensor z = tensorFromSpec(parseInputSpec("3:float64:zeros"), 0);
  Tensor o = tensorFromSpec(parseInputSpec("3:int32:ones"), 0);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(z.data<double>()[i], 0.0);
    EXPECT_EQ(o.data<int32_t>()[i], 1);
  }
}

TEST(CliOutputs, FlattenInCliOrder) {
  auto dict = DictImpl::create(StringType::get(), TensorType::get());
  dict->insertOrAssign(IValue("z"), IValue(Tensor::empty({1}, ScalarType::Float)));
  dict->insertOrAssign(IValue("a"), IValue(Tensor::empty({2}, ScalarType::Float)));
  IValue result(TupleImpl::create({IValue(Tensor::empty({3}, ScalarType::Float)), IValue(),
                                   IValue(ListImpl::create(IntType::get(), {IValue(1), IValue(2)})),
                                   IValue(dict), IValue("text"), IValue(2.5), IValue(true)}));
  auto outs = flattenOutputs(result);
  ASSERT_EQ(outs.size(), 8u);
  EXPECT_EQ(describeOutput(outs[0]), "out0.npy: float32 [3]");
  EXPECT_EQ(describeOutput(outs[1]), "out1.npy: int64 []");
  EXPECT_EQ(describeOutput(outs[3]), "out3.npy: float32 [2]");  // key "a" before "z"
  EXPECT_EQ(describeOutput(outs[4]), "out4.npy: float32 [1]");
  EXPECT_EQ(describeOutput(outs[5]), "out5.txt: str (len 4)");
  EXPECT_EQ(describeOutput(outs[6]), "out6.npy: float64 []");
  EXPECT_EQ(describeOutput(outs[7]), "out7.npy: bool []");
}

}  // namespace
