// TorchBind objects (runtime/torchbind.h, Note [TorchBind objects]): state formats PyTorch
// pickles, their errors, the declared classes, and the prepacked / quantized packing kernels.
// The oracle part (archives PyTorch wrote: mobile-optimized, static and dynamic quantized, a
// corrupted CRC) runs under the serialize_torchbind fixture (extra.cmake).
#include "runtime/torchbind.h"
#include "api/module.h"
#include "core/error.h"
#include "core/npy.h"
#include "ir/ir_parser.h"
#include "runtime/interpreter.h"
#include "runtime/kernel.h"
#include "serialize_test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace torchless {
namespace {

namespace fs = std::filesystem;

constexpr const char* kConvCtx = "__torch__.torch.classes.xnnpack.Conv2dOpContext";
constexpr const char* kQConv = "__torch__.torch.classes.quantized.Conv2dPackedParamsBase";
constexpr const char* kQLinear = "__torch__.torch.classes.quantized.LinearPackedParamsBase";
constexpr const char* kCell = "__torch__.torch.classes.rnn.CellParamsBase";

Tensor ft(std::vector<float> v, IntList sizes) { return Tensor::fromVector(v, sizes); }

IValue ints(std::vector<int64_t> v) {
  std::vector<IValue> out(v.begin(), v.end());
  return IValue(ListImpl::create(IntType::get(), std::move(out)));
}
IValue tuple(std::vector<IValue> v) { return IValue(TupleImpl::create(std::move(v))); }

std::string errorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

Tensor qint8(std::vector<float> values, IntList sizes, double scale) {
  Tensor t = Tensor::empty(sizes, ScalarType::QInt8);
  for (size_t i = 0; i < values.size(); ++i)
    t.data<int8_t>()[i] = static_cast<int8_t>(std::lround(values[i] / scale));
  auto q = std::make_shared<QuantizerInfo>();
  q->scale = scale;
  t.setQuantizer(q);
  return t;
}

TEST(TorchBindState, XnnpackConvRoundTrip) {
  auto obj = Object::create(torchbind::classType(kConvCtx));
  Tensor w = ft({1, 2, 3, 4, 5, 6}, {2, 3, 1, 1});
  IValue state = tuple({IValue(w), IValue(), ints({1, 2}), ints({0, 3}), ints({1, 1}),
                        IValue(int64_t{1}), IValue(int64_t{0}), IValue(6.0)});
  torchbind::setState(*obj, state);
  EXPECT_TRUE(obj->getAttr("weight").toTensor().is(w));
  EXPECT_EQ(obj->getAttr("stride").toIntVector(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(obj->getAttr("padding").toIntVector(), (std::vector<int64_t>{0, 3}));
  // An int Scalar bound is kept as float (c10::optional<double> in PyTorch).
  ASSERT_TRUE(obj->getAttr("output_min").isDouble());
  EXPECT_EQ(obj->getAttr("output_min").toDouble(), 0.0);
  IValue back = torchbind::getState(*obj);
  ASSERT_EQ(back.toTuple()->elements.size(), 8u);
  EXPECT_EQ(back.toTuple()->elements[3].toIntVector(), (std::vector<int64_t>{0, 3}));
}

TEST(TorchBindState, BadStatesNameTheField) {
  auto obj = Object::create(torchbind::classType(kConvCtx));
  EXPECT_NE(errorOf([&] { torchbind::setState(*obj, tuple({IValue(int64_t{1})})); })
                .find("TorchBind state of '__torch__.torch.classes.xnnpack.Conv2dOpContext' must "
                      "have 8 elements, got 1"),
            std::string::npos);
  Tensor w = ft({1}, {1, 1, 1, 1});
  IValue bad = tuple({IValue(w), IValue(), IValue("x"), ints({0, 0}), ints({1, 1}),
                      IValue(int64_t{1}), IValue(), IValue()});
  EXPECT_NE(errorOf([&] {
              torchbind::setState(*obj, bad);
            }).find("field 'stride' must be List[int], got str"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { torchbind::setState(*obj, IValue(int64_t{3})); }).find("must be a tuple"),
            std::string::npos);
}

TEST(TorchBindState, QuantizedConvVersions) {
  Tensor w = qint8({0.1f, -0.2f, 0.3f, 0.4f}, {1, 1, 2, 2}, 0.1);
  Tensor b = ft({0.5f}, {1});
  // Version 2 (what 1.13 writes): ("2", [int16 params, weight], [bias]).
  Tensor params = Tensor::empty({11}, ScalarType::Short);
  const int16_t p[] = {2, 2, 1, 1, 0, 1,
                       1, 0, 0, 1, 0};  // dims, stride, pad, dil, out_pad, groups, transpose
  for (int i = 0; i < 11; ++i) params.data<int16_t>()[i] = p[i];
  IValue v2 =
      tuple({IValue("2"), IValue(ListImpl::create(TensorType::get(), {IValue(params), IValue(w)})),
             IValue(ListImpl::create(OptionalType::ofTensor(), {IValue(b)}))});
  auto a = Object::create(torchbind::classType(kQConv));
  torchbind::setState(*a, v2);
  EXPECT_EQ(a->getAttr("stride_").toIntVector(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(a->getAttr("padding_").toIntVector(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(a->getAttr("dilation_").toIntVector(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(a->getAttr("groups_").toInt(), 1);
  EXPECT_FALSE(a->getAttr("transpose_").toBool());
  // Version 3: (3, config, [None, weight, bias]) gives the same slots.
  IValue v3 =
      tuple({IValue(int64_t{3}), ints({2, 2, 1, 1, 0, 1, 1, 0, 0, 1, 0}),
             IValue(ListImpl::create(OptionalType::ofTensor(), {IValue(), IValue(w), IValue(b)}))});
  auto c = Object::create(torchbind::classType(kQConv));
  torchbind::setState(*c, v3);
  for (size_t i = 2; i < 8; ++i)
    EXPECT_TRUE(c->slots[i].equals(a->slots[i]) || c->slots[i].repr() == a->slots[i].repr()) << i;
  // getState writes version 2, which reads back to the same object.
  auto d = Object::create(torchbind::classType(kQConv));
  torchbind::setState(*d, torchbind::getState(*c));
  EXPECT_EQ(d->getAttr("stride_").toIntVector(), (std::vector<int64_t>{2, 1}));
  EXPECT_TRUE(d->getAttr("weight_").toTensor().is(w));
  // An unknown version.
  IValue v9 =
      tuple({IValue(int64_t{9}), ints({}), IValue(ListImpl::create(OptionalType::ofTensor(), {}))});
  EXPECT_NE(errorOf([&] { torchbind::setState(*d, v9); }).find("unknown version 9"),
            std::string::npos);
  IValue shortConfig =
      tuple({IValue(int64_t{3}), ints({2, 1}),
             IValue(ListImpl::create(OptionalType::ofTensor(), {IValue(), IValue(w), IValue()}))});
  EXPECT_NE(errorOf([&] {
              torchbind::setState(*d, shortConfig);
            }).find("2 configuration values, expected 11"),
            std::string::npos);
}

TEST(TorchBindState, CellParamsHoldPackedParams) {
  auto lin = torchbind::makeObject(kQLinear, {IValue(qint8({0.1f, 0.2f}, {1, 2}, 0.1)), IValue()});
  auto cell = Object::create(torchbind::classType(kCell));
  IValue packed =
      IValue(ListImpl::create(torchbind::classType(kQLinear), {IValue(lin), IValue(lin)}));
  torchbind::setState(
      *cell, tuple({IValue("quantized_dynamic"), IValue(ListImpl::create(TensorType::get(), {})),
                    IValue(ListImpl::create(FloatType::get(), {})), ints({}), packed}));
  EXPECT_EQ(cell->getAttr("type_").toStringRef(), "quantized_dynamic");
  EXPECT_EQ(cell->getAttr("packed_").toList()->list.size(), 2u);
}

TEST(TorchBindState, DeclaredClasses) {
  auto q = torchbind::namespaceSource("__torch__.torch.classes.quantized");
  ASSERT_TRUE(q.has_value());
  EXPECT_NE(q->find("class Conv2dPackedParamsBase:\n  weight_ : Tensor\n"), std::string::npos);
  EXPECT_NE(q->find("  def unpack(self: __torch__.torch.classes.quantized.LinearPackedParamsBase)"),
            std::string::npos);
  EXPECT_FALSE(torchbind::namespaceSource("__torch__.torch.classes.dist_rpc").has_value());
  EXPECT_TRUE(torchbind::isKnownClass(kCell));
  EXPECT_FALSE(torchbind::isKnownClass("__torch__.torch.classes.dist_rpc.WorkerInfo"));
  EXPECT_NE(errorOf([] {
              torchbind::classType("__torch__.torch.classes.x.Y");
            }).find("'__torch__.torch.classes.x.Y' is not a TorchBind class we know"),
            std::string::npos);
}

// ---- kernels ----------------------------------------------------------------------------------

std::vector<IValue> runGraph(const char* text, std::vector<IValue> inputs) {
  initKernels();
  auto g = std::make_shared<Graph>();
  parseIR(text, g.get());
  Code code(g, "test");
  Stack stack = std::move(inputs);
  code.run(stack);
  return stack;
}

double maxAbsDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(a.doubleAt(i) - b.doubleAt(i)));
  return m;
}

TEST(PrepackedKernels, ConvClampIsConvThenClamp) {
  const char* prepacked = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %zero : int = prim::Constant[value=0]()
  %lo : float = prim::Constant[value=-0.5]()
  %hi : float = prim::Constant[value=0.5]()
  %s : int[] = prim::ListConstruct(%one, %two)
  %p : int[] = prim::ListConstruct(%zero, %one)
  %d : int[] = prim::ListConstruct(%one, %one)
  %ctx : __torch__.torch.classes.xnnpack.Conv2dOpContext = prepacked::conv2d_clamp_prepack(%w, %b, %s, %p, %d, %one, %lo, %hi)
  %y : Tensor = prepacked::conv2d_clamp_run(%x, %ctx)
  return (%y)
)IR";
  const char* reference = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %zero : int = prim::Constant[value=0]()
  %lo : float = prim::Constant[value=-0.5]()
  %hi : float = prim::Constant[value=0.5]()
  %s : int[] = prim::ListConstruct(%one, %two)
  %p : int[] = prim::ListConstruct(%zero, %one)
  %d : int[] = prim::ListConstruct(%one, %one)
  %c : Tensor = aten::conv2d(%x, %w, %b, %s, %p, %d, %one)
  %y : Tensor = aten::clamp(%c, %lo, %hi)
  return (%y)
)IR";
  std::vector<float> xs(2 * 3 * 4 * 6), ws(4 * 3 * 1 * 3);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.3f * static_cast<float>(i));
  for (size_t i = 0; i < ws.size(); ++i) ws[i] = std::cos(0.7f * static_cast<float>(i));
  Tensor x = ft(xs, {2, 3, 4, 6}), w = ft(ws, {4, 3, 1, 3});
  Tensor b = ft({0.1f, -0.1f, 0.2f, 0.0f}, {4});
  Tensor y = runGraph(prepacked, {IValue(x), IValue(w), IValue(b)})[0].toTensor();
  Tensor r = runGraph(reference, {IValue(x), IValue(w), IValue(b)})[0].toTensor();
  EXPECT_EQ(y.sizes(), (IntList{2, 4, 4, 3}));
  EXPECT_EQ(maxAbsDiff(y, r), 0.0);
}

TEST(PrepackedKernels, LinearClampWithoutBounds) {
  const char* text = R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %ctx : __torch__.torch.classes.xnnpack.LinearOpContext = prepacked::linear_clamp_prepack(%w, %none, %none, %none)
  %y : Tensor = prepacked::linear_clamp_run(%x, %ctx)
  return (%y)
)IR";
  Tensor x = ft({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor w = ft({1, 0, -1, 2, 2, 2}, {2, 3});
  Tensor y = runGraph(text, {IValue(x), IValue(w)})[0].toTensor();
  EXPECT_EQ(y.sizes(), (IntList{2, 2}));
  EXPECT_EQ(y.doubleAt(0), -2.0);
  EXPECT_EQ(y.doubleAt(3), 30.0);
  // A 3-d weight is refused when packing.
  Tensor w3 = ft({1, 2}, {1, 1, 2});
  EXPECT_NE(errorOf([&] {
              runGraph(text, {IValue(x), IValue(w3)});
            }).find("prepacked::linear_clamp_prepack: weight must have 2 dimensions, got 3"),
            std::string::npos);
}

TEST(PrepackedKernels, QuantizedConv1dPrepackUnpack) {
  const char* text = R"IR(
graph(%w : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %s : int[] = prim::ListConstruct(%two)
  %p : int[] = prim::ListConstruct(%one)
  %d : int[] = prim::ListConstruct(%one)
  %pk : __torch__.torch.classes.quantized.Conv2dPackedParamsBase = quantized::conv1d_prepack(%w, %none, %s, %p, %d, %one)
  %u : Tensor, %ub : Tensor? = quantized::conv1d_unpack(%pk)
  %st : int[] = quantized::conv2d_stride(%pk)
  return (%pk, %u, %st)
)IR";
  Tensor w = qint8({0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, {2, 1, 3}, 0.1);
  auto out = runGraph(text, {IValue(w)});
  const auto& pk = out[0].toObject();
  EXPECT_EQ(pk->getAttr("weight_").toTensor().sizes(), (IntList{2, 1, 1, 3}));
  EXPECT_EQ(out[1].toTensor().sizes(), (IntList{2, 1, 3}));
  EXPECT_TRUE(out[1].toTensor().isQuantized());
  EXPECT_EQ(out[2].toIntVector(), (std::vector<int64_t>{1, 2}));
  // A float weight is refused.
  EXPECT_NE(errorOf([&] {
              runGraph(text, {IValue(ft({1, 2, 3}, {1, 1, 3}))});
            }).find("quantized::conv1d_prepack: weight must be a quantized tensor"),
            std::string::npos);
}

// ---- oracle: archives PyTorch wrote (gen_torchbind.py) -----------------------------------------

fs::path tbDir() { return fs::path(TORCHLESS_BINARY_DIR) / "serialize_torchbind"; }

class TorchBindOracle : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::path m = tbDir() / "manifest.json";
    ASSERT_TRUE(fs::exists(m)) << "run ctest -R serialize_torchbind (gen_torchbind.py first)";
    manifest_ = nlohmann::json::parse(test::readFile(m.string()));
  }
  std::string path(const char* name) const { return (tbDir() / name).string(); }
  nlohmann::json manifest_;
};

void expectTensorLike(const Tensor& t, const nlohmann::json& j) {
  EXPECT_EQ(t.sizes(), j["shape"].get<IntList>());
  EXPECT_EQ(dtypeName(t.dtype()), j["dtype"].get<std::string>());
  EXPECT_EQ(std::to_string(test::tensorChecksum(t)), j["checksum"].get<std::string>());
  if (j.contains("scale")) {
    ASSERT_TRUE(t.isQuantized());
    EXPECT_DOUBLE_EQ(t.quantizer()->scale, j["scale"].get<double>());
    EXPECT_EQ(t.quantizer()->zeroPoint, j["zero_point"].get<int64_t>());
  }
}

TEST_F(TorchBindOracle, MobileRunsLikePyTorch) {
  Module m = load(path("mobile.pt"));
  IValue out = m.forward({IValue(loadNpy(path("mobile_in.npy")))});
  const auto& e = out.toTuple()->elements;
  ASSERT_EQ(e.size(), 2u);
  EXPECT_LT(maxAbsDiff(e[0].toTensor(), loadNpy(path("mobile_out0.npy"))), 1e-4);
  EXPECT_LT(maxAbsDiff(e[1].toTensor(), loadNpy(path("mobile_out1.npy"))), 1e-4);
}

TEST_F(TorchBindOracle, StaticQuantizedLoadsPackedParams) {
  Module m = load(path("quant_static.pt"));
  const auto& j = manifest_["quant_static"];
  auto root = m.object();
  for (const char* name : {"conv", "conv1d"}) {
    SCOPED_TRACE(name);
    auto pk = root->getAttr(name).toObject()->getAttr("_packed_params").toObject();
    const auto& e = j[name];
    expectTensorLike(pk->getAttr("weight_").toTensor(), e["weight"]);
    expectTensorLike(pk->getAttr("bias_").toTensor(), e["bias"]);
    EXPECT_EQ(pk->getAttr("stride_").toIntVector(), e["stride"].get<std::vector<int64_t>>());
    EXPECT_EQ(pk->getAttr("padding_").toIntVector(), e["padding"].get<std::vector<int64_t>>());
    EXPECT_EQ(pk->getAttr("dilation_").toIntVector(), e["dilation"].get<std::vector<int64_t>>());
    EXPECT_EQ(pk->getAttr("groups_").toInt(), e["groups"].get<int64_t>());
  }
  auto fc = root->getAttr("fc")
                .toObject()
                ->getAttr("_packed_params")
                .toObject()
                ->getAttr("_packed_params")
                .toObject();
  expectTensorLike(fc->getAttr("weight_").toTensor(), j["fc"]["weight"]);
  expectTensorLike(fc->getAttr("bias_").toTensor(), j["fc"]["bias"]);
  // Conv2d._weight_bias() calls the packed params' unpack() method (compiled TorchScript).
  Module conv(root->getAttr("conv").toObject(), m.unit());
  IValue wb = conv.runMethod("_weight_bias", {});
  expectTensorLike(wb.toTuple()->elements[0].toTensor(), j["conv"]["weight"]);
}

// The packed params rebuilt here are what the quantized kernels read: both models run (their
// numbers against PyTorch's are api.quantized's, tests/api/quantized_oracle_test.cpp; the
// static model's aten::mean of a quantized tensor is its quantized_mean case).
TEST_F(TorchBindOracle, QuantizedModelsRunOnTheirPackedParams) {
  Module s = load(path("quant_static.pt"));
  Tensor x = Tensor::empty({1, 2, 8, 8}, ScalarType::Float);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.01f * static_cast<float>(i % 17);
  IValue ys = s.forward({IValue(x)});
  ASSERT_TRUE(ys.isTensor());
  EXPECT_EQ(ys.toTensor().sizes(), (IntList{1, 3}));
  Module d = load(path("quant_dynamic.pt"));
  const auto& j = manifest_["quant_dynamic"];
  auto fc = d.object()
                ->getAttr("fc")
                .toObject()
                ->getAttr("_packed_params")
                .toObject()
                ->getAttr("_packed_params")
                .toObject();
  expectTensorLike(fc->getAttr("weight_").toTensor(), j["fc"]["weight"]);
  Tensor xd = Tensor::empty({1, 2, 6}, ScalarType::Float);
  for (int64_t i = 0; i < xd.numel(); ++i) xd.data<float>()[i] = 0.1f * static_cast<float>(i);
  IValue yd = d.forward({IValue(xd)});
  ASSERT_TRUE(yd.isTensor());
  EXPECT_EQ(yd.toTensor().sizes()[0], 1);
}

TEST_F(TorchBindOracle, CheckCrcOption) {
  // A flipped byte in data/0: refused by default, loaded as it is with checkCrc = false.
  std::string what = errorOf([&] { load(path("crc_bad.pt")); });
  EXPECT_NE(what.find("record 'data/0': CRC-32 mismatch"), std::string::npos) << what;
  LoadOptions lax;
  lax.checkCrc = false;
  Module m = load(path("crc_bad.pt"), lax);
  Tensor w = m.object()->getAttr("w").toTensor();
  Tensor good = loadNpy(path("crc_good_w.npy"));
  EXPECT_GT(maxAbsDiff(w, good), 0.0);  // the corrupted bytes, as PyTorch would load them
  Module ok = load(path("crc_good.pt"), lax);
  EXPECT_EQ(maxAbsDiff(ok.object()->getAttr("w").toTensor(), good), 0.0);
  // Mapped (`torchless run`): the tensor records are checked on a thread of the reader's own
  // (Note [Checking mapped records in the background]), and the load still fails naming one.
  LoadOptions mapped;
  mapped.mapRecords = true;
  what = errorOf([&] { load(path("crc_bad.pt"), mapped); });
  EXPECT_NE(what.find("crc_bad.pt: record 'data/0': CRC-32 mismatch"), std::string::npos) << what;
  Module okMapped = load(path("crc_good.pt"), mapped);
  EXPECT_EQ(maxAbsDiff(okMapped.object()->getAttr("w").toTensor(), good), 0.0);
}

// torchless::save writes TorchBind objects through their state and quantized tensors through
// _rebuild_qtensor; the re-saved archives load in torchless and in torch.jit.load, which
// computes the original outputs from them.
TEST_F(TorchBindOracle, ResavedArchivesLoadInPyTorch) {
  const fs::path wild = fs::path(TORCHLESS_SOURCE_DIR) / ".." / "shared" / "wild";
  struct Case {
    const char* name;
    std::string model, input, expected;
    bool runsHere;  // only float / prepacked ops: we run it too
  };
  const Case cases[] = {
      {"restart_resnet1d_ptl", (wild / "restart_resnet1d_ptl" / "model.pt").string(),
       (wild / "restart_resnet1d_ptl" / "in0.npy").string(),
       (wild / "restart_resnet1d_ptl" / "out0.npy").string(), true},
      {"int8_static_quant_cnn", (wild / "int8_static_quant_cnn" / "model.pt").string(),
       (wild / "int8_static_quant_cnn" / "in0.npy").string(),
       (wild / "int8_static_quant_cnn" / "out0.npy").string(), false},
      {"quant_static", path("quant_static.pt"), "", "", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Module m = load(c.model);
    const std::string saved = (tbDir() / (std::string("resaved_") + c.name + ".pt")).string();
    ASSERT_NO_THROW(save(m, saved));
    Module again = load(saved);
    if (c.runsHere) {
      Tensor y = again.forward({IValue(loadNpy(c.input))}).toTensor();
      EXPECT_LT(maxAbsDiff(y, loadNpy(c.expected)), 1e-4);
    }
    if (c.input.empty()) {
      const std::string cmd =
          "/usr/bin/python3 -c \"import torch; torch.jit.load('" + saved + "')\"";
      EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
      continue;
    }
    const std::string cmd = "/usr/bin/python3 " + std::string(TORCHLESS_SOURCE_DIR) +
                            "/tests/serialize/check_torch_loads.py " + saved + " " + c.input + " " +
                            c.expected;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
}

}  // namespace
}  // namespace torchless
