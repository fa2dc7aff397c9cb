// The ONNX export oracle: graphs PyTorch made (gen_export_cases.py), exported at opsets 13 and
// 17 (checked by the ONNX checker) and 18, with parameters as named initializers, run in ONNX Runtime
// (run_ort.js) and compared with PyTorch's outputs. Where torch.onnx.export could export the
// same model, its operator counts are printed beside ours.
//
// Differences from torch.onnx's counts, expected:
//  - torch.onnx folds constants (do_constant_folding) and fuses Conv+BatchNormalization in
//    eval mode ("fuse_conv_bn"), so it has no BatchNormalization where we keep one per norm;
//  - linear on 2-d inputs is one Gemm in both; on 3-d inputs torch.onnx writes MatMul + Add
//    with a pre-transposed initializer, we write Transpose + MatMul + Add;
//  - traced shape arithmetic (size -> view) is Shape/Gather/Unsqueeze/Concat in torch.onnx
//    (it keeps the batch dim symbolic); we fold it to a constant shape unless the axis is
//    declared dynamic;
//  - softmax over the last dim is the same; flatten is Flatten there, Reshape here.
#include "core/error.h"
#include "core/npy.h"
#include "ir/ir_parser.h"
#include "torchless/onnx_export.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

using namespace torchless;
namespace tlo = torchless::onnx;  // ::onnx is the protobuf namespace
namespace fs = std::filesystem;

namespace {

const fs::path kCases = fs::path(TORCHLESS_BINARY_DIR) / "convert_export_cases";
const fs::path kRunOrt = fs::path(TORCHLESS_SOURCE_DIR) / "tests" / "convert" / "run_ort.js";

std::string readFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string runCommand(const std::string& cmd) {
  std::array<char, 4096> buf{};
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return "{\"ok\": false, \"error\": \"popen failed\"}";
  while (fgets(buf.data(), buf.size(), pipe.get())) out += buf.data();
  return out;
}

std::string counts(const std::map<std::string, int>& c) {
  std::string s;
  for (const auto& [k, v] : c) s += fmt::format("{}{}:{}", s.empty() ? "" : " ", k, v);
  return s;
}

void exportCase(const std::string& name) {
  const fs::path dir = kCases / name;
  ASSERT_TRUE(fs::exists(dir / "meta.json")) << dir;
  auto meta = nlohmann::json::parse(readFile(dir / "meta.json"));
  auto g = std::make_shared<Graph>();
  parseIR(readFile(dir / "graph.txt"), g.get());
  std::vector<IValue> inputs;
  const size_t numInputs = meta["inputs"];
  for (size_t i = 0; i < numInputs; ++i) inputs.emplace_back(loadNpy((dir / fmt::format("in{}.npy", i)).string()));
  tlo::ExportOptions base;
  const auto& params = meta["params"];
  for (size_t j = 0; j < params.size(); ++j) {
    inputs.emplace_back(loadNpy((dir / fmt::format("p{}.npy", j)).string()));
    base.constantInputs[numInputs + j] = params[j].get<std::string>();
  }
  // 18 is past what Debian's libonnx checks (see checkerMaxOpset): ONNX Runtime validates it.
  for (int opset : {13, 17, 18}) {
    SCOPED_TRACE(fmt::format("{} at opset {}", name, opset));
    tlo::ExportOptions o = base;
    o.opset = opset;
    tlo::ExportReport report;
    ::onnx::ModelProto model;
    try {
      model = tlo::exportGraph(*g, inputs, o, &report);
    } catch (const Error& e) {
      FAIL() << e.what();
    }
    EXPECT_EQ(report.runError, "");
    EXPECT_EQ(report.checked, opset <= tlo::checkerMaxOpset());
    // Parameters keep their names as initializers.
    if (!params.empty()) {
      std::set<std::string> inits;
      for (const auto& t : model.graph().initializer()) inits.insert(t.name());
      size_t named = 0;
      for (const auto& p : params) named += inits.count(p.get<std::string>());
      EXPECT_GT(named, 0u);
    }
    const fs::path out = dir / fmt::format("torchless_opset{}.onnx", opset);
    tlo::saveModel(model, out.string());
    auto res = nlohmann::json::parse(runCommand(fmt::format(
        "node {} {} {} {} {} {}", kRunOrt.string(), out.string(), dir.string(), numInputs,
        meta["rtol"].get<double>(), meta["atol"].get<double>())));
    EXPECT_TRUE(res["ok"].get<bool>()) << res.dump();
    std::cout << fmt::format("[{} opset {}] ORT max_abs={} | ours: {}\n", name, opset,
                             res.value("max_abs", -1.0), counts(report.opCounts));
    if (opset == 13 && meta["torch_onnx"].get<bool>()) {
      ::onnx::ModelProto theirs;
      std::ifstream f(dir / "torch.onnx", std::ios::binary);
      ASSERT_TRUE(theirs.ParseFromIstream(&f));
      std::cout << fmt::format("[{} opset 13] torch.onnx: {}\n", name, counts(tlo::countOps(theirs)));
    }
  }
}

class ExportOracle : public ::testing::TestWithParam<std::string> {};

// `torchless export` on the archives: load, inline, freeze, export, check, write; then ONNX
// Runtime against PyTorch. The batch axis is declared dynamic.
TEST(CliExportOracle, ExportsArchivesThatOnnxRuntimeRuns) {
  const char* bin = std::getenv("TORCHLESS_BIN");
  ASSERT_NE(bin, nullptr) << "TORCHLESS_BIN is not set";
  for (const std::string name : {"mlp", "conv_bn_relu", "view_traced", "resnet18"}) {
    SCOPED_TRACE(name);
    const fs::path dir = kCases / name;
    auto meta = nlohmann::json::parse(readFile(dir / "meta.json"));
    const fs::path out = dir / "cli.onnx";
    fs::remove(out);
    std::string cmd = fmt::format("{} export {} {} -o {} --input-names x --output-names y --dynamic-axes x:0 2>&1",
                                  bin, (dir / "model.pt").string(), (dir / "in0.npy").string(), out.string());
    std::string log = runCommand(cmd);
    ASSERT_TRUE(fs::exists(out)) << cmd << "\n" << log;
    EXPECT_NE(log.find("checked"), std::string::npos) << log;
    ::onnx::ModelProto m;
    std::ifstream f(out, std::ios::binary);
    ASSERT_TRUE(m.ParseFromIstream(&f));
    EXPECT_EQ(m.graph().input(0).name(), "x");
    EXPECT_EQ(m.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "x_dim0");
    EXPECT_EQ(m.graph().output(0).name(), "y");
    auto res = nlohmann::json::parse(runCommand(fmt::format("node {} {} {} 1 {} {}", kRunOrt.string(), out.string(),
                                                            dir.string(), meta["rtol"].get<double>(),
                                                            meta["atol"].get<double>())));
    EXPECT_TRUE(res["ok"].get<bool>()) << res.dump();
  }
  // Usage and user errors: nothing is written.
  const fs::path dir = kCases / "mlp";
  const fs::path bad = dir / "bad.onnx";
  std::string log = runCommand(fmt::format("{} export {} {} -o {} --dynamic-axes nosuch:0 2>&1; echo rc=$?", bin,
                                           (dir / "model.pt").string(), (dir / "in0.npy").string(), bad.string()));
  EXPECT_NE(log.find("neither an input nor an output"), std::string::npos) << log;
  EXPECT_NE(log.find("rc=1"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(bad));
  log = runCommand(fmt::format("{} export {} -o {} --opset 9 2>&1; echo rc=$?", bin, (dir / "model.pt").string(),
                               bad.string()));
  EXPECT_NE(log.find("rc=2"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(bad));
}

TEST_P(ExportOracle, CheckerAndOnnxRuntimeMatchPyTorch) { exportCase(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cases, ExportOracle,
                         ::testing::Values("mlp", "conv_bn_relu", "view_traced", "softmax", "pool_ceil",
                                           "layer_norm", "embedding", "elementwise", "resnet18",
                                           "mobilenet_v2_traced"));

}  // namespace
