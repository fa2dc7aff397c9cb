// Binding of ops:: kernels to schemas: the whole table registers, argument conversions (None,
// int[N] from one value, ScalarType as int), in-place ops on views, out= variants, derived
// in-place/out variants.
#include "core/error.h"
#include "ir/ir_parser.h"
#include "runtime/interpreter.h"
#include "runtime/kernel.h"
#include "runtime/register_utils.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>

using namespace torchless;

namespace {

std::vector<IValue> run(const char* text, std::vector<IValue> inputs) {
  initKernels();
  auto g = std::make_shared<Graph>();
  parseIR(text, g.get());
  Code code(g, "test");
  Stack stack = std::move(inputs);
  code.run(stack);
  return stack;
}

/// How many schemas of the checked-in coverage table (tests/ops/op_coverage.tsv, Note in
/// scripts/op_coverage.sh) have an entry in `column` (1 kernel, 2 ONNX, 3 engine).
size_t coverageCount(size_t column) {
  std::ifstream in(std::string(TORCHLESS_SOURCE_DIR) + "/tests/ops/op_coverage.tsv");
  EXPECT_TRUE(in.good()) << "tests/ops/op_coverage.tsv is missing";
  std::string line;
  size_t n = 0, lineNo = 0;
  while (std::getline(in, line)) {
    if (++lineNo <= 4) continue;  // comments and the column names
    std::vector<std::string> cells;
    size_t start = 0;
    for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
      cells.push_back(line.substr(start, tab - start));
    cells.push_back(line.substr(start));
    if (cells.size() == 4 && cells[column] != "-") ++n;
  }
  return n;
}

std::vector<float> values(const Tensor& t) {
  Tensor c = t.contiguous();
  std::vector<float> out;
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(static_cast<float>(c.doubleAt(i)));
  return out;
}

TEST(KernelTable, EveryFamilyRegisters) {
  initKernels();
  // Op-table entries with a kernel (opsWithKernels: numSchemaKernels also counts the entries
  // that wrapKernel replaced).
  const size_t n = KernelRegistry::global().opsWithKernels().size();
  std::cout << n << " of " << OperatorRegistry::global().size() << " schemas have kernels"
            << std::endl;
  // Exactly the kernels of the checked-in coverage table (scripts/op_coverage.sh).
  EXPECT_EQ(n, coverageCount(1));
  for (const char* op :
       {"aten::add.Tensor", "aten::add_.Tensor", "aten::add.out", "aten::relu_", "aten::conv2d",
        "aten::batch_norm", "aten::lstm.input", "aten::format", "aten::__getitem__.Dict_int",
        "aten::split.str", "prim::NumToTensor.Scalar", "aten::_transformer_encoder_layer_fwd"})
    EXPECT_NE(OperatorRegistry::global().findOverload(op)->kernel, nullptr) << op;
}

TEST(KernelBinding, ArgumentConversions) {
  EXPECT_EQ(kreg::toIntList(IValue(int64_t{3}), 2), (IntList{3, 3}));
  EXPECT_EQ(kreg::toIntList(IValue(ListImpl::create(IntType::get(), {IValue(int64_t{2})})), 2),
            (IntList{2, 2}));
  EXPECT_FALSE(kreg::toOptTensor(IValue()).has_value());
  EXPECT_EQ(kreg::toOptDtype(IValue(int64_t{6})), ScalarType::Float);
  EXPECT_TRUE(kreg::toScalar(IValue(1.5)).isFloatingPoint());
  EXPECT_TRUE(kreg::toScalar(IValue(true)).isBoolean());
}

TEST(KernelBinding, NoneAndSingleValueIntLists) {
  const char* text = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %hi : float = prim::Constant[value=0.5]()
  %k : int = prim::Constant[value=2]()
  %kl : int[] = prim::ListConstruct(%k)
  %z : int = prim::Constant[value=0]()
  %zl : int[] = prim::ListConstruct(%z)
  %one : int = prim::Constant[value=1]()
  %ol : int[] = prim::ListConstruct(%one)
  %f : bool = prim::Constant[value=0]()
  %c : Tensor = aten::clamp(%x, %none, %hi)
  %e : int[] = prim::ListConstruct()
  %p : Tensor = aten::max_pool2d(%c, %kl, %e, %zl, %ol, %f)
  %d : int = prim::Constant[value=7]()
  %q : Tensor = aten::to(%p, %d, %f, %f, %none)
  return (%q)
)IR";
  Tensor x = Tensor::fromVector(
      std::vector<float>{1, 2, 3, 4, -1, -2, -3, -4, 0, 0, 0, 0, 5, 5, 5, 5}, {1, 1, 4, 4});
  auto out = run(text, {IValue(x)});
  Tensor y = out[0].toTensor();
  EXPECT_EQ(y.sizes(), (IntList{1, 1, 2, 2}));
  EXPECT_EQ(y.dtype(), ScalarType::Double);
  EXPECT_EQ(values(y), (std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f}));
}

TEST(KernelBinding, InPlaceOnViewWritesThrough) {
  const char* text = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %ten : float = prim::Constant[value=10.]()
  %v : Tensor = aten::select(%x, %zero, %one)
  %w : Tensor = aten::add_(%v, %ten, %one)
  %t : Tensor = aten::t(%x)
  %r : Tensor = aten::relu_(%t)
  return (%x, %w)
)IR";
  Tensor x = Tensor::fromVector(std::vector<float>{1, -2, 3, -4}, {2, 2});
  auto out = run(text, {IValue(x)});
  EXPECT_TRUE(out[0].toTensor().is(x));
  EXPECT_EQ(values(x), (std::vector<float>{1, 0, 13, 6}));
  EXPECT_EQ(values(out[1].toTensor()), (std::vector<float>{13, 6}));
}

TEST(KernelBinding, OutVariantResizesAndInPlaceChecksDtype) {
  const char* text = R"IR(
graph(%x : Tensor, %o : Tensor):
  %one : int = prim::Constant[value=1]()
  %r : Tensor = aten::add(%x, %x, %one, %o)
  return (%r, %o)
)IR";
  Tensor x = Tensor::fromVector(std::vector<float>{1, 2, 3}, {3});
  Tensor o = Tensor::empty({0}, ScalarType::Float);
  auto out = run(text, {IValue(x), IValue(o)});
  EXPECT_EQ(values(o), (std::vector<float>{2, 4, 6}));
  EXPECT_TRUE(out[0].toTensor().is(o));

  const char* inplace = R"IR(
graph(%x : Tensor):
  %s : Tensor = aten::sqrt_(%x)
  return (%s)
)IR";
  Tensor i = Tensor::fromVector(std::vector<int64_t>{4, 9}, {2});
  EXPECT_THROW(run(inplace, {IValue(i)}), Error);
}

TEST(KernelBinding, ModelErrorsUsePythonWords) {
  const char* text = R"IR(
graph(%l : int[], %d : Dict(str, int)):
  %i : int = prim::Constant[value=5]()
  %k : str = prim::Constant[value="nope"]()
  %a : int = aten::__getitem__(%l, %i)
  return (%a)
)IR";
  auto l = IValue(ListImpl::create(IntType::get(), {IValue(int64_t{1})}));
  auto d = IValue(DictImpl::create(StringType::get(), IntType::get()));
  try {
    run(text, {l, d});
    FAIL() << "expected an IndexError";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("IndexError: list index out of range"), std::string::npos)
        << e.what();
  }
}

}  // namespace

namespace {
// aten::_cast_Long & co. (2019 archives): PyTorch returns self when the dtype already matches
// (`torch._cast_Float(x) is x` for a float x) and converts otherwise.
TEST(KernelBinding, LegacyCasts) {
  const char* text = R"IR(
graph(%x : Tensor):
  %f : bool = prim::Constant[value=0]()
  %l : Tensor = aten::_cast_Long(%x, %f)
  %s : Tensor = aten::_cast_Float(%x, %f)
  return (%l, %s)
)IR";
  Tensor x = Tensor::fromVector(std::vector<float>{1.7f, -2.5f}, {2});
  auto out = run(text, {IValue(x)});
  EXPECT_EQ(out[0].toTensor().dtype(), ScalarType::Long);
  EXPECT_EQ(out[0].toTensor().intAt(0), 1);
  EXPECT_EQ(out[0].toTensor().intAt(1), -2);
  EXPECT_TRUE(out[1].toTensor().is(x) || out[1].toTensor().storage().isAlias(x.storage()));
}
}  // namespace
