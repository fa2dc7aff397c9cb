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
  std::vector<ParamSpec> params = {param("x", "Tensor"), param("n", "int"), param("s", "float"),
                                   param("flag", "bool"), param("y", "Optional[Tensor]"),
                                   param("name", "str"), param("k", "int", IValue(7))};
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
  std::vector<ParamSpec> params = {param("pair", "Tuple[Tensor, int]"),
                                   param("xs", "List[Tensor]"),
                                   param("named", "Dict[str, Tensor]")};
  auto args = parseInputs({"a.npy", "4", "@list:b.npy,cc.npy", "@dict:w=d.npy,v=e.npy"}, params,
                          fakeLoad);
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[0].toTuple()->elements[1].toInt(), 4);
  EXPECT_EQ(args[1].toList()->list.size(), 2u);
  EXPECT_EQ(args[1].toList()->list[1].toTensor().numel(), 6);
  EXPECT_EQ(args[2].toDict()->entries()[0].first.toStringRef(), "w");
  EXPECT_EQ(parseInputs({"@list:"}, {param("xs", "List[Tensor]")}, fakeLoad)[0].toList()->list.size(), 0u);
}

TEST(CliInputs, ErrorsNameTheParameter) {
  EXPECT_EQ(errorOf({"2.5"}, {param("n", "int")}), "argument 'n' (int): expected an int, got '2.5'");
  EXPECT_EQ(errorOf({"x"}, {param("t", "Tensor")}), "argument 't' (Tensor): expected a .npy file, got 'x'");
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

TEST(CliOutputs, FlattenInCliOrder) {
  auto dict = DictImpl::create(StringType::get(), TensorType::get());
  dict->insertOrAssign(IValue("z"), IValue(Tensor::empty({1}, ScalarType::Float)));
  dict->insertOrAssign(IValue("a"), IValue(Tensor::empty({2}, ScalarType::Float)));
  IValue result(TupleImpl::create(
      {IValue(Tensor::empty({3}, ScalarType::Float)), IValue(),
       IValue(ListImpl::create(IntType::get(), {IValue(1), IValue(2)})), IValue(dict),
       IValue("text"), IValue(2.5), IValue(true)}));
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
