// The backend-neutral conversion layer: the registry (duplicates, unknown schemas, misses),
// Args' typed unwrapping and its errors, the pre-flight listing every unsupported operator,
// and IR-level ONNX export checked by the ONNX checker.
#include "convert/converter_registry.h"
#include "convert/conversion_ctx.h"
#include "convert/onnx/onnx_export.h"
#include "convert/preflight.h"
#include "core/error.h"
#include "ir/ir_parser.h"
#include "ir/operator_matching.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>

using namespace torchless;
namespace tlo = torchless::onnx_export;
using namespace torchless::convert;

namespace {

std::shared_ptr<Graph> parse(const char* text) {
  auto g = std::make_shared<Graph>();
  parseIR(text, g.get());
  return g;
}

using TestFn = int;

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

TEST(ConverterRegistry, KeyedByExactSchemaOneConverterManyOverloads) {
  ConverterRegistry<TestFn> r("test");
  r.add({"aten::relu(Tensor self) -> Tensor", "aten::relu_(Tensor(a!) self) -> Tensor(a!)"}, 7);
  ASSERT_NE(r.find("aten::relu(Tensor self) -> Tensor"), nullptr);
  EXPECT_EQ(*r.find("aten::relu_(Tensor(a!) self) -> Tensor(a!)"), 7);
  EXPECT_EQ(r.numSchemas(), 2u);
  // A miss is nullptr, for the caller's pre-flight.
  EXPECT_EQ(r.find("aten::tanh(Tensor self) -> Tensor"), nullptr);
  EXPECT_EQ(r.find(static_cast<const OpInfo*>(nullptr)), nullptr);
}

TEST(ConverterRegistry, DuplicateAndUnknownSchemasAreErrors) {
  ConverterRegistry<TestFn> r("test");
  r.add("aten::relu(Tensor self) -> Tensor", 1);
  try {
    r.add("aten::relu(Tensor self) -> Tensor", 2);
    FAIL() << "duplicate accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("registered twice"), std::string::npos) << e.what();
  }
  EXPECT_THROW(r.add("aten::relu(Tensor x) -> Tensor", 3), Error);  // not the table's string
  EXPECT_THROW(r.addOverloads({"aten::no_such_op"}, 4), Error);
  r.addNode(prim::ListConstruct, 5);
  EXPECT_THROW(r.addNode(prim::ListConstruct, 6), Error);
}

TEST(ConverterRegistry, OnnxRegistryFillsAndCountsAgainstOpTable) {
  const auto& r = tlo::onnxConverters();
  // Exactly the ONNX converters of the checked-in coverage table (scripts/op_coverage.sh).
  EXPECT_EQ(r.numSchemas(), coverageCount(2));
  std::cout << "onnx converters: " << r.numSchemas() << " schemas, " << r.numNodeKinds()
            << " node kinds\n";
  for (const auto& key : r.schemas())
    EXPECT_NE(OperatorRegistry::global().find(key), nullptr) << key;
  // A second registration of a converted op is refused (user extension point).
  EXPECT_THROW(tlo::registerConverter("aten::relu(Tensor self) -> Tensor", nullptr), Error);
}

// A ctx whose backend values are strings; statics materialize as "static:<repr>".
class StringCtx : public ConversionCtx<std::string> {
 protected:
  std::string materialize(const Value* v, const IValue& value) override {
    return "static:" + value.repr();
  }
};

TEST(Args, TypedUnwrappingDefaultsAndErrors) {
  auto g = parse(R"IR(
graph(%x : Tensor, %n : int):
  %none : NoneType = prim::Constant()
  %two : int = prim::Constant[value=2]()
  %l : int[] = prim::ListConstruct(%two, %two)
  %y : Tensor = aten::view(%x, %l)
  %z : Tensor = aten::leaky_relu(%y, %two)
  %s : Tensor = aten::sum(%z, %none)
  %w : Tensor = aten::view(%x, %n)
  return (%s)
)IR");
  StringCtx ctx;
  ctx.setTensor(g->inputs()[0], "x");
  std::vector<Node*> nodes(g->nodes().begin(), g->nodes().end());
  for (Node* n : nodes)
    if (auto c = toIValue(n->output()); c && n->kind() == prim::Constant)
      ctx.setStatic(n->output(), *c);
  ctx.setStatic(nodes[2]->output(),
                IValue(ListImpl::create(IntType::get(), {IValue(2), IValue(2)})));
  const auto& reg = OperatorRegistry::global();
  Node* view = nodes[3];
  Args<std::string> a(ctx, *view, matchOperator(view, reg));
  EXPECT_TRUE(a[0].isTensor());
  EXPECT_FALSE(a[0].isIValue());
  EXPECT_TRUE(a[1].isIValue());
  EXPECT_EQ(a[0].unwrapToTensor(), "x");
  EXPECT_EQ(a[1].unwrapToIntList(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(a["size"].unwrapToIntList().size(), 2u);
  try {
    a[1].unwrapToInt();
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)"), std::string::npos)
        << m;
    EXPECT_NE(m.find("argument 'size' (1)"), std::string::npos) << m;
  }
  // A static Scalar, and a static value materialized as a backend tensor.
  Node* leaky = nodes[4];
  ctx.setTensor(view->output(), "y");
  Args<std::string> b(ctx, *leaky, matchOperator(leaky, reg));
  EXPECT_EQ(b[1].unwrapToScalar().toInt(), 2);
  EXPECT_DOUBLE_EQ(b[1].unwrapToDouble(), 2.0);
  EXPECT_EQ(b[1].unwrapToTensor(), "static:2");
  // Defaults when None.
  ctx.setTensor(leaky->output(), "z");
  Node* sum = nodes[5];
  Args<std::string> c(ctx, *sum, matchOperator(sum, reg));
  EXPECT_TRUE(c[1].isNone());
  EXPECT_EQ(c[1].unwrapToInt(6), 6);
  EXPECT_FALSE(c[1].unwrapToOptionalTensor().has_value());
  EXPECT_THROW(c[1].unwrapToTensor(), Error);
  EXPECT_THROW(c[7], Error);
  // A run-time value where a constant is required names the argument.
  Node* view2 = nodes[6];
  Args<std::string> d(ctx, *view2, matchOperator(view2, reg));
  try {
    d[1].unwrapToIntList();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("computed at run time"), std::string::npos) << e.what();
  }
}

TEST(Preflight, ListsEveryUnsupportedOperatorWithItsPlace) {
  auto g = parse(R"IR(
graph(%x : Tensor):
  %a : Tensor = aten::lgamma(%x) # m.py:3:8
  %b : Tensor = aten::relu(%a) # m.py:4:8
  %c : Tensor = aten::digamma(%b) # m.py:5:8
  return (%c)
)IR");
  auto missing = findUnsupported(*g, [](const Node& n, const OpInfo* op) {
    return n.kind() == prim::Constant || n.kind() == Symbol::aten("relu");
  });
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing[0].op, "aten::lgamma(Tensor self) -> Tensor");
  EXPECT_EQ(missing[0].place, "m.py:3:8");
  EXPECT_EQ(missing[1].place, "m.py:5:8");

  // The ONNX export runs the pre-flight before converting anything.
  Tensor x = Tensor::fromVector(std::vector<float>{1, 2, 3}, {3});
  try {
    tlo::exportGraph(*g, {IValue(x)});
    FAIL() << "exported unsupported operators";
  } catch (const UnsupportedError& e) {
    std::string m = e.what();
    EXPECT_NE(e.firstLine().find(
                  "unsupported operator aten::lgamma(Tensor self) -> Tensor used at m.py:3:8"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("aten::digamma(Tensor self) -> Tensor used at m.py:5:8"), std::string::npos)
        << m;
  }
}

TEST(OnnxExport, SmallGraphPassesCheckerAtOpsets13To17) {
  auto g = parse(R"IR(
graph(%x : Tensor, %w : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %one, %one)
  %b : Tensor = aten::relu(%a)
  %c : Tensor = aten::mul(%b, %w)
  %d : int[] = prim::ListConstruct(%one)
  %t : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %s : Tensor = aten::sum(%c, %d, %t, %none)
  return (%s)
)IR");
  Tensor x = Tensor::fromVector(std::vector<float>{1, -2, 3, 4, 5, 6}, {2, 3});
  Tensor w = Tensor::fromVector(std::vector<float>{0.5, 1, 2}, {3});
  for (int opset : {13, 17}) {
    tlo::ExportOptions o;
    o.opset = opset;
    o.constantInputs[1] = "scale.weight";
    o.inputNames = {"input"};
    o.outputNames = {"y"};
    o.dynamicAxes["input"] = {0};
    tlo::ExportReport report;
    ::onnx::ModelProto m = tlo::exportGraph(*g, {IValue(x), IValue(w)}, o, &report);
    EXPECT_EQ(m.opset_import(0).version(), opset);
    ASSERT_EQ(m.graph().input_size(), 1);
    EXPECT_EQ(m.graph().input(0).name(), "input");
    EXPECT_EQ(m.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "input_dim0");
    EXPECT_EQ(m.graph().output(0).name(), "y");
    bool named = false;
    for (const auto& init : m.graph().initializer()) named |= init.name() == "scale.weight";
    EXPECT_TRUE(named);
    EXPECT_EQ(report.opCounts["ReduceSum"], 1);
  }
  tlo::ExportOptions bad;
  bad.opset = 12;
  EXPECT_THROW(tlo::exportGraph(*g, {IValue(x), IValue(w)}, bad), Error);
}

TEST(OnnxExport, DynamicAxisKeepsShapeArithmetic) {
  // x.view(x.size(0), -1) as a trace records it: with a dynamic batch the size stays computed.
  auto g = parse(R"IR(
graph(%x : Tensor):
  %0 : int = prim::Constant[value=0]()
  %m1 : int = prim::Constant[value=-1]()
  %n : int = aten::size(%x, %0)
  %t : Tensor = prim::NumToTensor(%n)
  %i : int = aten::Int(%t)
  %l : int[] = prim::ListConstruct(%i, %m1)
  %y : Tensor = aten::view(%x, %l)
  return (%y)
)IR");
  Tensor x = Tensor::fromVector(std::vector<float>(24, 1.0f), {2, 3, 4});
  tlo::ExportOptions o;
  o.inputNames = {"x"};
  o.dynamicAxes["x"] = {0};
  tlo::ExportReport r;
  tlo::exportGraph(*g, {IValue(x)}, o, &r);
  EXPECT_EQ(r.opCounts["Shape"], 1);
  EXPECT_EQ(r.opCounts["Reshape"], 1);
  // Static: folded to a constant shape.
  tlo::ExportReport s;
  tlo::exportGraph(*g, {IValue(x)}, {}, &s);
  EXPECT_EQ(s.opCounts.count("Shape"), 0u);
  EXPECT_EQ(s.opCounts["Reshape"], 1);
}

TEST(OnnxExport, ValueDependentIfBecomesOnnxIf) {
  auto g = parse(R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %zero : int = prim::Constant[value=0]()
  %s : Tensor = aten::sum(%x, %none)
  %c : Tensor = aten::gt(%s, %zero)
  %b : bool = aten::Bool(%c)
  %y : Tensor = prim::If(%b)
    block0():
      %r : Tensor = aten::relu(%x)
      -> (%r)
    block1():
      %n : Tensor = aten::neg(%x)
      -> (%n)
  return (%y)
)IR");
  Tensor x = Tensor::fromVector(std::vector<float>{1, -2, 3}, {3});
  tlo::ExportReport r;
  tlo::exportGraph(*g, {IValue(x)}, {}, &r);
  EXPECT_EQ(r.opCounts["If"], 1);
  EXPECT_EQ(r.opCounts["Relu"], 1);
  EXPECT_EQ(r.opCounts["Neg"], 1);
}

TEST(OnnxExport, UserConverterForAMissingOperator) {
  auto g = parse(R"IR(
graph(%x : Tensor):
  %y : Tensor = aten::negative(%x)
  return (%y)
)IR");
  Tensor x = Tensor::fromVector(std::vector<float>{1, -2, 3}, {3});
  EXPECT_THROW(tlo::exportGraph(*g, {IValue(x)}), UnsupportedError);
  tlo::registerConverter("aten::negative(Tensor self) -> Tensor",
                         [](tlo::OnnxCtx& ctx, const Node& n, tlo::OnnxArgs& args) {
                           ctx.setOutput(n, 0, ctx.op("Neg", {args[0].unwrapToTensor()}));
                         });
  tlo::ExportReport r;
  tlo::exportGraph(*g, {IValue(x)}, {}, &r);
  EXPECT_EQ(r.opCounts["Neg"], 1);
}

}  // namespace

namespace {

// Opset-dependent forms: ReduceMean's axes are an attribute before 18 and an input from 18;
// LayerNormalization exists from 17 (decomposed before).
TEST(OnnxExport, OpsetDependentForms) {
  auto g = parse(R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=-1]()
  %d : int[] = prim::ListConstruct(%one)
  %t : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %n : int = prim::Constant[value=4]()
  %shape : int[] = prim::ListConstruct(%n)
  %m : Tensor = aten::mean(%x, %d, %t, %none)
  %y : Tensor = aten::layer_norm(%x, %shape, %none, %none, %eps, %t)
  %z : Tensor = aten::sub(%y, %m, %n)
  return (%z)
)IR");
  Tensor x = Tensor::fromVector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 9}, {2, 4});
  for (int opset : {13, 16, 17, 18}) {
    SCOPED_TRACE(opset);
    tlo::ExportOptions o;
    o.opset = opset;
    tlo::ExportReport r;
    ::onnx::ModelProto m;
    try {
      m = tlo::exportGraph(*g, {IValue(x)}, o, &r);
    } catch (const Error& e) {
      FAIL() << e.what();
    }
    EXPECT_EQ(r.opCounts.count("LayerNormalization"), opset >= 17 ? 1u : 0u);
    EXPECT_EQ(r.checked, opset <= tlo::checkerMaxOpset());
    for (const auto& node : m.graph().node())
      if (node.op_type() == "ReduceMean") {
        EXPECT_EQ(node.input_size(), opset >= 18 ? 2 : 1);
      }
  }
}

}  // namespace

namespace {

// The message of the Error `fn` throws ("" when it throws none).
template <typename F>
std::string errorOf(F fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OnnxExport, DictsAndAppendedListsBecomePlainValues) {
  // torchvision's IntermediateLayerGetter / segmentation heads (a dict filled with _set_item)
  // and densenet's blocks (a list grown with append, read by cat).
  auto g = parse(R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %k : str = prim::Constant[value="out"]()
  %d : Dict(str, Tensor) = aten::dict()
  %r : Tensor = aten::relu(%x)
   = aten::_set_item(%d, %k, %r)
  %y : Tensor = aten::__getitem__(%d, %k)
  %l : Tensor[] = prim::ListConstruct(%x)
  %l2 : Tensor[] = aten::append(%l, %y)
  %c : Tensor = aten::cat(%l, %one)
  return (%c, %d)
)IR");
  Tensor x = Tensor::fromVector(std::vector<float>{1, -2, 3, -4}, {2, 2});
  tlo::ExportReport r;
  ::onnx::ModelProto m = tlo::exportGraph(*g, {IValue(x)}, {}, &r);
  EXPECT_EQ(r.opCounts["Concat"], 1);
  EXPECT_EQ(r.opCounts["Relu"], 1);
  ASSERT_EQ(m.graph().output_size(), 2);  // the cat, then the dict's value
  EXPECT_EQ(m.graph().output(0).type().tensor_type().shape().dim(1).dim_value(), 4);
}

TEST(OnnxExport, ConvertersNameWhatTheyCannotExport) {
  // pixel_shuffle on a 3-d input: DepthToSpace is 4-d only.
  auto ps = parse(R"IR(
graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %y : Tensor = aten::pixel_shuffle(%x, %two)
  return (%y)
)IR");
  Tensor x3 = Tensor::fromVector(std::vector<float>(16, 1.0f), {4, 2, 2});
  std::string msg = errorOf([&] { tlo::exportGraph(*ps, {IValue(x3)}); });
  EXPECT_NE(msg.find("must be a 4-d tensor (DepthToSpace is 4-d), got rank 3"), std::string::npos)
      << msg;
  // adaptive_avg_pool3d to a size that does not divide the input: no ONNX form here.
  auto ap = parse(R"IR(
graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %s : int[] = prim::ListConstruct(%two, %two, %two)
  %y : Tensor = aten::adaptive_avg_pool3d(%x, %s)
  return (%y)
)IR");
  Tensor x5 = Tensor::fromVector(std::vector<float>(27, 1.0f), {1, 1, 3, 3, 3});
  msg = errorOf([&] { tlo::exportGraph(*ap, {IValue(x5)}); });
  EXPECT_NE(msg.find("must be an output size dividing the input size 3"), std::string::npos) << msg;
  // A 2-d one that does not divide is exported (MatMul with averaging matrices).
  auto ap2 = parse(R"IR(
graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %s : int[] = prim::ListConstruct(%two, %two)
  %y : Tensor = aten::adaptive_avg_pool2d(%x, %s)
  return (%y)
)IR");
  Tensor x4 = Tensor::fromVector(std::vector<float>(9, 1.0f), {1, 1, 3, 3});
  tlo::ExportReport r;
  tlo::exportGraph(*ap2, {IValue(x4)}, {}, &r);
  EXPECT_EQ(r.opCounts["MatMul"], 2);
}

TEST(OnnxExport, TailConvertersNameWhatTheyCannotExport) {
  auto errorFor = [](const char* ir, std::vector<IValue> inputs) {
    auto g = parse(ir);
    return errorOf([&] { tlo::exportGraph(*g, std::move(inputs)); });
  };
  // grid_sampler on a 5-d input (a 3-d grid): GridSample is 2-d up to opset 19, ours end at 18.
  // (Typed inputs: the interpreter has no 3-d grid_sampler, so the sizes come from the types,
  // as a trace's do.)
  Tensor x5 = Tensor::fromVector(std::vector<float>(8, 1.0f), {1, 1, 2, 2, 2});
  Tensor g5 = Tensor::fromVector(std::vector<float>(24, 0.5f), {1, 2, 2, 2, 3});
  std::string msg = errorFor(R"IR(
graph(%x : Float(1, 1, 2, 2, 2), %g : Float(1, 2, 2, 2, 3)):
  %0 : int = prim::Constant[value=0]()
  %f : bool = prim::Constant[value=0]()
  %y : Tensor = aten::grid_sampler(%x, %g, %0, %0, %f)
  return (%y)
)IR",
                             {IValue(x5), IValue(g5)});
  EXPECT_NE(
      msg.find("must be a 4-d input (GridSample samples 2-d grids up to opset 19), got rank 5"),
      std::string::npos)
      << msg;
  Tensor p = Tensor::fromVector(std::vector<float>{0.2f, 0.3f, 0.5f}, {3});
  // multinomial: ONNX's Multinomial draws with replacement.
  msg = errorFor(R"IR(
graph(%p : Tensor):
  %two : int = prim::Constant[value=2]()
  %f : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::multinomial(%p, %two, %f, %none)
  return (%y)
)IR",
                 {IValue(p)});
  EXPECT_NE(msg.find("must be True, or one sample (ONNX's Multinomial draws with replacement)"),
            std::string::npos)
      << msg;
  // rrelu in training draws random slopes.
  msg = errorFor(R"IR(
graph(%x : Tensor):
  %lo : float = prim::Constant[value=0.1]()
  %hi : float = prim::Constant[value=0.3]()
  %t : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::rrelu(%x, %lo, %hi, %t, %none)
  return (%y)
)IR",
                 {IValue(p)});
  EXPECT_NE(msg.find("must be False (random slopes in training are not exported)"),
            std::string::npos)
      << msg;
  // fake quantization to a range that is neither uint8's nor int8's.
  msg = errorFor(R"IR(
graph(%x : Tensor):
  %s : float = prim::Constant[value=0.1]()
  %z : int = prim::Constant[value=0]()
  %hi : int = prim::Constant[value=15]()
  %y : Tensor = aten::fake_quantize_per_tensor_affine(%x, %s, %z, %z, %hi)
  return (%y)
)IR",
                 {IValue(p)});
  EXPECT_NE(msg.find("[0, 255] or [-128, 127]"), std::string::npos) << msg;
  // the nuclear norm needs singular values.
  Tensor m = Tensor::fromVector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  msg = errorFor(R"IR(
graph(%x : Float(2, 2)):
  %ord : str = prim::Constant[value="nuc"]()
  %m2 : int = prim::Constant[value=-2]()
  %m1 : int = prim::Constant[value=-1]()
  %dims : int[] = prim::ListConstruct(%m2, %m1)
  %f : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::linalg_matrix_norm(%x, %ord, %dims, %f, %none)
  return (%y)
)IR",
                 {IValue(m)});
  EXPECT_NE(msg.find("the nuclear and spectral norms need an SVD ONNX lacks"), std::string::npos)
      << msg;
}
