// `torchless run` (and `code`, `graph`, `info`) end to end on examples/tiny_cnn.pt, whose
// forward is `forward(self, x: Tensor, scale: Optional[float]=None) -> Tensor`; the contract
// is ../shared/docs/cli.md: outputs flattened and named out0.npy ..., one line per output,
// exit 1 with the first stderr line naming the parameter for wrong inputs, exit 2 for usage
// errors, and no half-written output files.
#include "../serialize/serialize_test_util.h"
#include "oracle_util.h"

#include "api/compile.h"
#include "core/npy.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace torchless {
namespace {

namespace fs = std::filesystem;
using testing::allClose;
using testing::runCli;

const std::string kExamples = std::string(TORCHLESS_SOURCE_DIR) + "/examples";
const std::string kModel = kExamples + "/tiny_cnn.pt";
const std::string kInput = kExamples + "/input.npy";

fs::path freshDir(const std::string& name) { return testing::freshDir("api", name); }

std::vector<std::string> listDir(const fs::path& d) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(d)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The README's example: PyTorch's output for examples/input.npy is examples/expected.npy.
TEST(RunCli, TinyCnnMatchesPyTorch) {
  fs::path d = freshDir("tiny");
  auto r = runCli({"run", kModel, kInput, "--output-dir", d.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "out0.npy: float32 [1, 4]\n");
  EXPECT_EQ(listDir(d), std::vector<std::string>{"out0.npy"});
  EXPECT_TRUE(allClose(loadNpy((d / "out0.npy").string()), loadNpy(kExamples + "/expected.npy"),
                       1e-4, 1e-4));
  fs::remove_all(d);
}

TEST(RunCli, OptionalFloatLiteralAndNone) {
  fs::path d1 = freshDir("none"), d2 = freshDir("scale");
  auto a = runCli({"run", kModel, kInput, "none", "--output-dir", d1.string()});
  ASSERT_EQ(a.status, 0) << a.err;
  auto b = runCli({"run", kModel, kInput, "1.0", "--output-dir", d2.string()});
  ASSERT_EQ(b.status, 0) << b.err;
  // scale=1.0 multiplies the logits by 1: the same softmax as scale=None.
  EXPECT_TRUE(
      allClose(loadNpy((d1 / "out0.npy").string()), loadNpy((d2 / "out0.npy").string()), 0, 0));
  fs::remove_all(d1);
  fs::remove_all(d2);
}

TEST(RunCli, WrongKindNamesTheParameter) {
  fs::path d = freshDir("kind");
  auto r = runCli({"run", kModel, kInput, "hello", "--output-dir", d.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.firstErrLine().find("'scale'"), std::string::npos) << r.err;
  EXPECT_TRUE(listDir(d).empty());
  fs::remove_all(d);
}

TEST(RunCli, MissingInputNamesTheParameter) {
  fs::path d = freshDir("missing");
  auto r = runCli({"run", kModel, "--output-dir", d.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.firstErrLine().find("'x'"), std::string::npos) << r.err;
  EXPECT_TRUE(listDir(d).empty());
  fs::remove_all(d);
}

TEST(RunCli, TooManyInputs) {
  fs::path d = freshDir("many");
  auto r = runCli({"run", kModel, kInput, "1.0", "2", "--output-dir", d.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.firstErrLine().find("too many inputs"), std::string::npos) << r.err;
  EXPECT_TRUE(listDir(d).empty());
  fs::remove_all(d);
}

TEST(RunCli, TensorWhereAFloatIsDeclared) {
  fs::path d = freshDir("tensor_for_float");
  auto r = runCli({"run", kModel, kInput, kInput, "--output-dir", d.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.firstErrLine().find("'scale'"), std::string::npos) << r.err;
  EXPECT_TRUE(listDir(d).empty());
  fs::remove_all(d);
}

// A shape the model rejects fails while running: exit 1, nothing written (not even a .tmp).
TEST(RunCli, RuntimeFailureLeavesNoFiles) {
  fs::path d = freshDir("runtime");
  fs::path bad = d / "bad_input";
  fs::create_directories(bad);
  {
    Tensor t = Tensor::fromVector(std::vector<float>(6, 1.0f), {1, 6});
    saveNpy((bad / "x.npy").string(), t);
  }
  fs::path outDir = d / "out";
  auto r = runCli({"run", kModel, (bad / "x.npy").string(), "--output-dir", outDir.string()});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_FALSE(r.err.empty());
  EXPECT_TRUE(!fs::exists(outDir) || listDir(outDir).empty());
  fs::remove_all(d);
}

TEST(RunCli, MissingModelFileIsAUserError) {
  auto r = runCli({"run", kExamples + "/no_such_model.pt", kInput});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.firstErrLine().find("no_such_model.pt"), std::string::npos) << r.err;
}

TEST(RunCli, UsageErrorsExit2) {
  EXPECT_EQ(runCli({"run"}).status, 2);
  EXPECT_EQ(runCli({"run", kModel, "--no-such-flag"}).status, 2);
  EXPECT_EQ(runCli({"run", kModel, "--threads", "0"}).status, 2);
}

TEST(RunCli, UnknownMethodNamesIt) {
  auto r = runCli({"run", kModel, kInput, "--method", "nope"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.firstErrLine().find("'nope'"), std::string::npos) << r.err;
}

// The messages a new user meets first (issue #17 part 7).
TEST(RunCli, FirstErrorsSayWhatExists) {
  auto method = runCli({"run", kModel, kInput, "--method", "nope"});
  EXPECT_EQ(method.firstErrLine(),
            kModel + ": module '__torch__.TinyCNN' has no method 'nope' (methods: forward)");
  // scale is optional: 1 required input, named with the model
  auto missing = runCli({"run", kModel});
  EXPECT_EQ(missing.firstErrLine(),
            kModel +
                ": method forward: missing input for argument 'x' (Tensor): 0 inputs given, "
                "the method takes 1 (and 1 optional)");
  auto help = runCli({"help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("Usage: torchless"), std::string::npos) << help.out;
  auto helpRun = runCli({"help", "run"});
  EXPECT_EQ(helpRun.status, 0);
  EXPECT_NE(helpRun.out.find("Usage: torchless run"), std::string::npos) << helpRun.out;
  ::setenv("TORCHLESS_LOG", "bogus", 1);
  fs::path d = freshDir("log");
  auto log = runCli({"freeze", kModel, "-o", (d / "f.pt").string()});
  ::unsetenv("TORCHLESS_LOG");
  EXPECT_EQ(log.status, 1);
  EXPECT_NE(log.firstErrLine().find("TORCHLESS_LOG names an unknown pass 'bogus' (passes: all, "),
            std::string::npos)
      << log.err;
  EXPECT_FALSE(fs::exists(d / "f.pt"));
  // graph of a binary file (the ONNX model export writes) refuses it without quoting bytes
  auto onnx = runCli({"export", kModel, kInput, "-o", (d / "m.onnx").string()});
  ASSERT_EQ(onnx.status, 0) << onnx.err;
  auto graph = runCli({"graph", (d / "m.onnx").string()});
  EXPECT_EQ(graph.status, 1);
  EXPECT_EQ(graph.firstErrLine(),
            (d / "m.onnx").string() +
                ": not a graph in PyTorch's text format: byte 0 is binary "
                "(0x08); graph text starts with 'graph(' (an ONNX model or an "
                "archive?)");
  fs::remove_all(d);
}

// `torchless env`: what a bug report needs, as text and as JSON.
TEST(EnvCli, ReportsLibrariesCpuThreadsAndFormats) {
  auto text = runCli({"env"});
  ASSERT_EQ(text.status, 0) << text.err;
  for (const char* line :
       {"torchless ", "oneDNN: 2.", "CPU: ", "CPU features: ", "threads: ",
        "ONNX export: opsets 13..18 (default ", "archives read: file-format versions 1..10"})
    EXPECT_NE(text.out.find(line), std::string::npos) << line << " in\n" << text.out;
  auto json = runCli({"env", "--json"});
  ASSERT_EQ(json.status, 0) << json.err;
  for (const char* key : {"\"onednn\"", "\"isa\"", "\"features\"", "\"wait_policy\"",
                          "\"onnx_opsets\"", "\"archive_versions\""})
    EXPECT_NE(json.out.find(key), std::string::npos) << key << " in\n" << json.out;
}

TEST(CodeCli, PrintsTheRootClassFile) {
  auto r = runCli({"code", kModel});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("class TinyCNN(Module):\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("  def forward(self: __torch__.TinyCNN,\n"), std::string::npos);
}

TEST(CodeCli, PrintsOneMethodDedented) {
  auto r = runCli({"code", kModel, "--method", "forward"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("def forward(self: __torch__.TinyCNN,\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\n  return torch.softmax(y2, 1)\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("class "), std::string::npos);
  auto bad = runCli({"code", kModel, "--method", "nope"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.firstErrLine().find("'nope'"), std::string::npos) << bad.err;
  EXPECT_NE(bad.firstErrLine().find("forward"), std::string::npos) << bad.err;
}

TEST(GraphCli, PrintsTheForwardGraphOfAnArchive) {
  auto r = runCli({"graph", kModel});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("graph(%self", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("prim::CallMethod[name=\"forward\"]"), std::string::npos) << r.out;
  auto inl = runCli({"graph", kModel, "--inline"});
  ASSERT_EQ(inl.status, 0) << inl.err;
  EXPECT_EQ(inl.out.find("prim::CallMethod"), std::string::npos) << inl.out;
  EXPECT_NE(inl.out.find("aten::conv2d"), std::string::npos) << inl.out;
  auto bad = runCli({"graph", kModel, "--method", "nope"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.firstErrLine().find("'nope'"), std::string::npos) << bad.err;
}

TEST(InfoCli, ListsMethodsParametersBuffersAndOperators) {
  auto r = runCli({"info", kModel});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("code: compiles"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("  forward(__torch__.TinyCNN self, Tensor x, float? scale=None) -> Tensor\n"),
      std::string::npos)
      << r.out;
  // conv (weight, bias), bn (weight, bias), fc (weight, bias); bn's running stats are buffers.
  EXPECT_NE(r.out.find("parameters: 6 tensors"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("buffers: 3 tensors"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"),
            std::string::npos)
      << r.out;
  // The summary comes before the records (issue 17, part 6).
  EXPECT_NE(r.out.find("module: __torch__.TinyCNN (training: False)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("operators used: 23 distinct, all with kernels"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("traced inputs: none recorded"), std::string::npos) << r.out;
  EXPECT_LT(r.out.find("parameters: 6 tensors"), r.out.find("records: "));
}

// `info --json`: the same facts as one JSON object, for scripts.
TEST(InfoCli, JsonReport) {
  auto r = runCli({"info", kModel, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["code"]["compiles"], true);
  EXPECT_EQ(j["module"]["class"], "__torch__.TinyCNN");
  EXPECT_EQ(j["module"]["training"], false);
  ASSERT_EQ(j["methods"].size(), 1u);
  EXPECT_EQ(j["methods"][0]["name"], "forward");
  EXPECT_EQ(j["methods"][0]["schema"],
            "forward(__torch__.TinyCNN self, Tensor x, float? scale=None) -> Tensor");
  EXPECT_EQ(j["parameters"]["count"], 6);
  EXPECT_EQ(j["parameters"]["bytes"], 1104);
  EXPECT_EQ(j["buffers"]["count"], 3);
  EXPECT_TRUE(j["traced_inputs"].is_null());
  EXPECT_EQ(j["operators"].size(), 23u);
  EXPECT_TRUE(j["operators_without_kernel"].empty());
  EXPECT_EQ(j["records"].size(), 24u);
  EXPECT_EQ(j["format_version"], 3);
}

// An archive whose code does not compile: info prints what it could read, then fails (exit 1)
// naming the compile error (issue 18, part 7: an archive that cannot load exits 1).
TEST(InfoCli, CodeThatDoesNotCompileExitsOne) {
  auto e = test::minimalArchive();
  for (auto& x : e)
    if (x.name == "archive/code/__torch__.py")
      x.data += "  def forward(self) -> Tensor:\n    return self.nope(\n";
  std::string path = test::writeTemp("info_bad_code.pt", test::makeZip(e));
  auto r = runCli({"info", path});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("code: does not compile"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("records: 5"), std::string::npos) << r.out;
  EXPECT_NE(r.firstErrLine().find("code/__torch__.py"), std::string::npos) << r.err;
  auto j = runCli({"info", path, "--json"});
  EXPECT_EQ(j.status, 1);
  EXPECT_EQ(nlohmann::json::parse(j.out)["code"]["compiles"], false) << j.out;
}

}  // namespace
}  // namespace torchless

namespace torchless {
namespace {

// `--input SHAPE[:DTYPE[:FILL]]` stands for a .npy file (cli.md "Inputs"): zeros give what a
// file of zeros gives, a seed repeats its tensor, positional words follow the specs.
TEST(RunCli, InputSpecsStandForFiles) {
  fs::path d = freshDir("specs");
  Tensor zeros = Tensor::empty({1, 3, 16, 16}, ScalarType::Float);
  std::fill(zeros.data<float>(), zeros.data<float>() + zeros.numel(), 0.f);
  saveNpy((d / "zeros.npy").string(), zeros);
  auto run = [&](std::vector<std::string> args, const std::string& out) {
    args.insert(args.begin(), {"run", kModel});
    args.insert(args.end(), {"--output-dir", (d / out).string()});
    auto r = runCli(args);
    EXPECT_EQ(r.status, 0) << r.err;
    return loadNpy((d / out / "out0.npy").string());
  };
  Tensor fromFile = run({(d / "zeros.npy").string()}, "file");
  EXPECT_TRUE(allClose(run({"--input", "1x3x16x16:float32:zeros"}, "spec"), fromFile, 0, 0));
  Tensor a = run({"--input", "1x3x16x16", "--seed", "5"}, "a");
  EXPECT_TRUE(allClose(run({"--input", "1x3x16x16", "--seed", "5"}, "b"), a, 0, 0));
  EXPECT_FALSE(allClose(run({"--input", "1x3x16x16", "--seed", "6"}, "c"), a, 0, 0));
  // the spec is x, the word after it is scale
  EXPECT_TRUE(allClose(run({"--input", "1x3x16x16", "--seed", "5", "1.0"}, "scaled"), a, 0, 0));
  auto bad = runCli({"run", kModel, "--input", "1x3xq", "--output-dir", (d / "bad").string()});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("input spec '1x3xq'"), std::string::npos) << bad.err;
  auto wrongRank =
      runCli({"run", kModel, "--input", "3x16x16:int64", "--output-dir", (d / "rank").string()});
  EXPECT_EQ(wrongRank.status, 1);
  // bench, trace and export take the same option
  auto bench = runCli({"bench", kModel, "--input", "1x3x16x16", "--runs", "1", "--warmup", "0"});
  EXPECT_EQ(bench.status, 0) << bench.err;
  auto trace = runCli({"trace", kModel, "--input", "1x3x16x16", "-o", (d / "t.pt").string()});
  EXPECT_EQ(trace.status, 0) << trace.err;
  auto onnx = runCli({"export", kModel, "--input", "1x3x16x16", "-o", (d / "m.onnx").string()});
  EXPECT_EQ(onnx.status, 0) << onnx.err;
  fs::remove_all(d);
}

// `--expect` compares with PyTorch's output and exits 1 when a value differs beyond the
// tolerances; a wrong shape and too many expected files are errors too.
TEST(RunCli, ExpectComparesWithTolerances) {
  fs::path d = freshDir("expect");
  const std::string expected = kExamples + "/expected.npy";
  auto ok = runCli({"run", kModel, kInput, "--output-dir", d.string(), "--expect", expected});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.out.find("out0.npy: max abs error"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find(": ok\n"), std::string::npos) << ok.out;
  // scale 2.0 changes the softmax: a mismatch, exit 1, and the outputs are still written
  auto off =
      runCli({"run", kModel, kInput, "2.0", "--output-dir", d.string(), "--expect", expected});
  EXPECT_EQ(off.status, 1);
  EXPECT_NE(off.out.find("4 of 4 elements differ"), std::string::npos) << off.out;
  EXPECT_NE(off.firstErrLine().find("1 of 1 compared output differs"), std::string::npos)
      << off.err;
  // the same run passes with a tolerance wide enough for it
  auto loose = runCli({"run", kModel, kInput, "2.0", "--output-dir", d.string(), "--expect",
                       expected, "--atol", "1"});
  EXPECT_EQ(loose.status, 0) << loose.err;
  auto shape = runCli({"run", kModel, kInput, "--output-dir", d.string(), "--expect", kInput});
  EXPECT_EQ(shape.status, 1);
  EXPECT_NE(shape.out.find("shape [1, 4] but"), std::string::npos) << shape.out;
  auto many = runCli(
      {"run", kModel, kInput, "--output-dir", d.string(), "--expect", expected + "," + expected});
  EXPECT_EQ(many.status, 1);
  EXPECT_NE(many.firstErrLine().find("--expect gives 2 files but the method has 1 output"),
            std::string::npos)
      << many.err;
  auto usage = runCli({"run", kModel, kInput, "--expect", expected, "--rtol", "-1"});
  EXPECT_EQ(usage.status, 2);
  fs::remove_all(d);
}

// `--expect` compares as numpy.allclose(equal_nan=True): an infinity matches itself and NaN
// matches NaN (gen_models.py's inf_values: 2 * [-inf, 1, inf, nan]); a finite value where an
// infinity is expected still differs.
TEST(RunCliOracle, ExpectMatchesInfinitiesAndNaN) {
  const fs::path m = fs::path(TORCHLESS_API_MODELS) / "inf_values";
  fs::path d = freshDir("expect_inf");
  auto same = runCli({"run", (m / "model.pt").string(), (m / "in0.npy").string(), "--output-dir",
                      d.string(), "--expect", (m / "out0.npy").string()});
  EXPECT_EQ(same.status, 0) << same.out << same.err;
  EXPECT_NE(same.out.find(": ok\n"), std::string::npos) << same.out;
  auto other = runCli({"run", (m / "model.pt").string(), (m / "in0.npy").string(), "--output-dir",
                       d.string(), "--expect", (m / "in0.npy").string()});
  EXPECT_EQ(other.status, 1) << other.out;
  EXPECT_NE(other.out.find("1 of 4 elements differ"), std::string::npos) << other.out;
  fs::remove_all(d);
}

// Every command that computes takes --threads (issue #17 part 4).
TEST(RunCli, ThreadsOnEveryCommandThatComputes) {
  fs::path d = freshDir("threads");
  for (const std::string cmd : {"freeze", "trace", "compile"}) {
    std::vector<std::string> args{cmd, kModel};
    if (cmd != "freeze") args.push_back(kInput);
    args.insert(args.end(), {"-o", (d / (cmd + ".pt")).string()});
    auto one = args;
    one.insert(one.end(), {"--threads", "1"});
    auto r = runCli(one);
    EXPECT_EQ(r.status, 0) << cmd << ": " << r.err;
    auto zero = args;
    zero.insert(zero.end(), {"--threads", "0"});
    EXPECT_EQ(runCli(zero).status, 2) << cmd;
  }
  fs::remove_all(d);
}

TEST(RunCli, ThreadsMustBePositive) {
  auto r = testing::runCli({"run", std::string(TORCHLESS_SOURCE_DIR) + "/examples/tiny_cnn.pt",
                            std::string(TORCHLESS_SOURCE_DIR) + "/examples/input.npy", "--threads",
                            "0"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--threads: Value 0 not in range 1 to 4096"), std::string::npos) << r.err;
}

// torchless compile on the shipped example: a report, an archive that run loads and runs with
// the example's numbers (examples/expected.npy, PyTorch's, at 1e-4).
TEST(CompileCli, CompilesTheExampleAndTheArchiveRunsLikePyTorch) {
  const std::string src = TORCHLESS_SOURCE_DIR;
  const auto dir = testing::freshDir("compile", "example");
  const std::string out = (dir / "tiny_engine.pt").string();
  auto r = testing::runCli(
      {"compile", src + "/examples/tiny_cnn.pt", src + "/examples/input.npy", "-o", out});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("segments: 1 engine, 0 interpreter"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory plan"), std::string::npos) << r.out;
  auto run =
      testing::runCli({"run", out, src + "/examples/input.npy", "--output-dir", dir.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(testing::allClose(loadNpy((dir / "out0.npy").string()),
                                loadNpy(src + "/examples/expected.npy"), 1e-4, 1e-4));
  // The archive is specialized to the example's signature (scale=None, a float32 4-d x): a
  // call with another one is a clear error, not numbers computed with folded facts.
  auto scaled = testing::runCli(
      {"run", out, src + "/examples/input.npy", "2.0", "--output-dir", dir.string()});
  EXPECT_EQ(scaled.status, 1);
  EXPECT_NE(scaled.err.find(
                "RuntimeError: this method was specialized for scale=None; it cannot take a value"),
            std::string::npos)
      << scaled.err;
  Tensor x = loadNpy(src + "/examples/input.npy");
  Tensor x64 = Tensor::empty(x.sizes(), ScalarType::Double);
  for (int64_t i = 0; i < x64.numel(); ++i) x64.data<double>()[i] = 0.25;
  saveNpy((dir / "x64.npy").string(), x64);
  auto dtype =
      testing::runCli({"run", out, (dir / "x64.npy").string(), "--output-dir", dir.string()});
  EXPECT_EQ(dtype.status, 1);
  EXPECT_NE(dtype.err.find("this method was specialized for a Float tensor x; pass that dtype"),
            std::string::npos)
      << dtype.err;
  // tiny_cnn's `if scale is not None:` stays in the interpreter without example inputs (the
  // method is then not specialized): listed with its place, exit 1.
  auto check =
      testing::runCli({"compile", src + "/examples/tiny_cnn.pt", "--check-method-support"});
  EXPECT_EQ(check.status, 1) << check.err;
  EXPECT_NE(
      check.err.find("unsupported operator prim::If (control flow) used at code/__torch__.py:20:4"),
      std::string::npos)
      << check.err;
}

// Bad input: a malformed --input spec, a profile whose min exceeds its max, a shape outside the
// profile at run time; each a clear error, exit 1 (or 2 for usage), and nothing written.
TEST(CompileCli, BadSpecsAndShapesOutsideTheProfileAreClearErrors) {
  const std::string src = TORCHLESS_SOURCE_DIR;
  const auto dir = testing::freshDir("compile", "bad");
  const std::string out = (dir / "never.pt").string();
  auto bad = testing::runCli(
      {"compile", src + "/examples/tiny_cnn.pt", "-o", out, "--input", "1xtwox8x8"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.firstErrLine().find("--input '1xtwox8x8': 'two' is not a positive size"),
            std::string::npos)
      << bad.err;
  auto order = testing::runCli({"compile", src + "/examples/tiny_cnn.pt", "-o", out, "--input",
                                "[(4,3,8,8);(2,3,8,8);(8,3,8,8)]@fp32"});
  EXPECT_EQ(order.status, 1);
  EXPECT_NE(order.err.find("min 4 <= opt 2 <= max 8 does not hold in dimension 0"),
            std::string::npos)
      << order.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  auto half = testing::runCli({"compile", src + "/examples/tiny_cnn.pt", "-o", out, "--input",
                               "[(1,3,8,8);(1,3,8,8);(2,3,8,8)]@fp16"});
  EXPECT_EQ(half.status, 1);
  EXPECT_NE(half.err.find("dtype 'fp16' is not supported (fp32, int64, int32 or bool)"),
            std::string::npos)
      << half.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  // A fixed-shape engine, then an input of another shape.
  auto ok = testing::runCli({"compile", src + "/examples/tiny_cnn.pt", "-o", out, "--input",
                             "[(1,3,8,8);(1,3,8,8);(2,3,8,8)]"});
  ASSERT_EQ(ok.status, 0) << ok.err;
  Tensor big = Tensor::empty({3, 3, 8, 8}, ScalarType::Float);
  for (int64_t i = 0; i < big.numel(); ++i) big.data<float>()[i] = 0.5f;
  saveNpy((dir / "big.npy").string(), big);
  auto outside =
      testing::runCli({"run", out, (dir / "big.npy").string(), "--output-dir", dir.string()});
  EXPECT_EQ(outside.status, 1);
  EXPECT_NE(
      outside.err.find("size [3, 3, 8, 8] is outside the profile [(1,3,8,8);(1,3,8,8);(2,3,8,8)]"),
      std::string::npos)
      << outside.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "out0.npy"));
}

// A token-id model compiled for a range of sequence lengths from an int64 profile alone (its
// example input is made of ids in [0, 10)), then run on PyTorch's input: PyTorch's numbers.
TEST(CompileCli, AnInt64ProfileCompilesATokenModel) {
  const fs::path models = TORCHLESS_API_MODELS;
  const fs::path c = models / "corpus_bert_like_scripted";
  const auto dir = testing::freshDir("compile", "int64");
  const std::string out = (dir / "ids.pt").string();
  auto r = testing::runCli(
      {"compile", (c / "model.pt").string(), "-o", out, "--input", "[(1,4);(2,10);(4,16)]@int64"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto run = testing::runCli({"run", out, (c / "in0.npy").string(), "--output-dir", dir.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(testing::allClose(loadNpy((dir / "out0.npy").string()),
                                loadNpy((c / "out0.npy").string()), 1e-4, 1e-4));
}

// --precision bf16: convolutions and products in bfloat16 where the CPU has it (outputs within
// 1e-2 of PyTorch's float32 ones), a clear error where it has not.
TEST(CompileCli, Bf16RunsWhereTheCpuHasItAndSaysSoWhereNot) {
  const std::string src = TORCHLESS_SOURCE_DIR;
  const auto dir = testing::freshDir("compile", "bf16");
  const std::string out = (dir / "bf.pt").string();
  auto r = testing::runCli({"compile", src + "/examples/tiny_cnn.pt", src + "/examples/input.npy",
                            "-o", out, "--precision", "bf16"});
  if (!cpuHasBf16()) {
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("--precision bf16 needs a CPU with AVX512-BF16 or AMX"), std::string::npos)
        << r.err;
    EXPECT_FALSE(std::filesystem::exists(out));
    return;
  }
  ASSERT_EQ(r.status, 0) << r.err;
  auto run =
      testing::runCli({"run", out, src + "/examples/input.npy", "--output-dir", dir.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(testing::allClose(loadNpy((dir / "out0.npy").string()),
                                loadNpy(src + "/examples/expected.npy"), 1e-2, 1e-2));
}

}  // namespace
}  // namespace torchless

namespace torchless {
namespace {

/// Writes `source` to DIR/m.py and scripts its class M into DIR/m.pt with `torchless script`;
/// returns the archive's path.
std::string scriptClassM(const fs::path& d, const std::string& source) {
  std::ofstream(d / "m.py") << source;
  auto s = runCli({"script", (d / "m.py").string(), "--class", "M", "-o", (d / "m.pt").string()});
  EXPECT_EQ(s.status, 0) << s.err;
  return (d / "m.pt").string();
}

// `freeze` of a module saved in training mode: refused as torch.jit.freeze refuses it, with an
// offer of --eval; with --eval, every submodule is switched to eval mode first, so the training
// branch is gone from the frozen module (issue 17, part 7).
TEST(FreezeCli, TrainingModeIsRefusedWithAnOfferOfEval) {
  fs::path d = freshDir("freeze_eval");
  const std::string model = scriptClassM(d,
                                         "import torch\n"
                                         "class Inner(torch.nn.Module):\n"
                                         "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                                         "        if self.training:\n"
                                         "            return x * 3.0\n"
                                         "        return x\n"
                                         "class M(torch.nn.Module):\n"
                                         "    def __init__(self):\n"
                                         "        super().__init__()\n"
                                         "        self.inner = Inner()\n"
                                         "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                                         "        if self.training:\n"
                                         "            return self.inner(x) * 2.0\n"
                                         "        return self.inner(x) + 1.0\n");
  const std::string frozen = (d / "frozen.pt").string();
  auto refused = runCli({"freeze", model, "-o", frozen});
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.firstErrLine().find("training mode"), std::string::npos) << refused.err;
  EXPECT_NE(refused.firstErrLine().find("--eval"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(frozen));
  auto ok = runCli({"freeze", model, "-o", frozen, "--eval"});
  ASSERT_EQ(ok.status, 0) << ok.err;
  auto r =
      runCli({"run", frozen, "--input", "2x2:float32:ones", "--output-dir", d.string(), "--print"});
  ASSERT_EQ(r.status, 0) << r.err;
  Tensor y = loadNpy((d / "out0.npy").string());
  ASSERT_EQ(y.numel(), 4);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(y.data<float>()[i], 2.f) << r.out;  // x + 1, eval
}

}  // namespace
}  // namespace torchless

namespace torchless {
namespace {

// One spelling for positional arguments in every command's --help, as cli.md writes them
// (MODEL, INPUT..., FILE, REPOSITORY).
TEST(HelpCli, PositionalArgumentsAreSpelledAsInCliMd) {
  const std::set<std::string> spellings = {"MODEL", "INPUT", "FILE", "REPOSITORY"};
  for (const char* cmd : {"info", "graph", "code", "run", "export", "compile", "bench", "serve",
                          "script", "trace", "freeze"}) {
    auto r = runCli({cmd, "--help"});
    ASSERT_EQ(r.status, 0) << cmd << ": " << r.err;
    size_t at = r.out.find("Positionals:");
    ASSERT_NE(at, std::string::npos) << cmd << ": " << r.out;
    std::istringstream lines(r.out.substr(at, r.out.find("Options:", at) - at));
    std::string line;
    std::getline(lines, line);
    size_t count = 0;
    while (std::getline(lines, line)) {
      if (line.size() < 3 || line[2] == ' ') continue;  // blank or a wrapped description
      std::string name = line.substr(2, line.find(' ', 2) - 2);
      EXPECT_TRUE(spellings.count(name)) << cmd << " spells a positional '" << name << "'";
      ++count;
    }
    EXPECT_GE(count, 1u) << cmd;
  }
}

}  // namespace
}  // namespace torchless

namespace torchless {
namespace {

// Every command that writes makes a missing output directory, as `run --output-dir` does, and
// one that cannot be made (a parent is a file) is one clear error with nothing written
// (issue 17, part 7).
TEST(OutputDirCli, EveryCommandMakesAMissingOutputDirectory) {
  fs::path d = freshDir("outdirs");
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"run", {"run", kModel, kInput, "--output-dir", (d / "run/a").string()}},
      {"freeze", {"freeze", kModel, "-o", (d / "freeze/a/m.pt").string()}},
      {"trace", {"trace", kModel, kInput, "-o", (d / "trace/a/m.pt").string()}},
      {"compile", {"compile", kModel, kInput, "-o", (d / "compile/a/m.pt").string()}},
      {"export", {"export", kModel, kInput, "-o", (d / "export/a/m.onnx").string()}},
  };
  for (const auto& [name, args] : commands) {
    auto r = runCli(args);
    EXPECT_EQ(r.status, 0) << name << ": " << r.err;
  }
  EXPECT_TRUE(fs::exists(d / "run/a/out0.npy"));
  EXPECT_TRUE(fs::exists(d / "freeze/a/m.pt"));
  EXPECT_TRUE(fs::exists(d / "trace/a/m.pt"));
  EXPECT_TRUE(fs::exists(d / "compile/a/m.pt"));
  EXPECT_TRUE(fs::exists(d / "export/a/m.onnx"));

  std::ofstream(d / "file") << "x";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", kModel, kInput, "--output-dir", (d / "file/a").string()},
           {"freeze", kModel, "-o", (d / "file/a/m.pt").string()},
           {"export", kModel, kInput, "-o", (d / "file/a/m.onnx").string()}}) {
    auto r = runCli(args);
    EXPECT_EQ(r.status, 1) << args[0];
    EXPECT_NE(r.firstErrLine().find("cannot create the output directory"), std::string::npos)
        << args[0] << ": " << r.err;
  }
}

}  // namespace
}  // namespace torchless

namespace torchless {
namespace {

// Usage errors exit 2 (cli.md "Errors"): a bad --opset, --dynamic-axes or --pass, each named.
TEST(UsageCli, BadOpsetDynamicAxesAndPassExitTwo) {
  const std::string out = (freshDir("usage") / "m.onnx").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"export", kModel, kInput, "-o", out, "--opset", "5"}, "--opset"},
      {{"export", kModel, kInput, "-o", out, "--dynamic-axes", "bogus"}, "--dynamic-axes"},
      {{"export", kModel, kInput, "-o", out, "--dynamic-axes", "x:zz"},
       "'zz' is not an axis number"},
      {{"graph", kModel, "--pass", "nope"}, "unknown pass 'nope'"},
  };
  for (const auto& [args, part] : cases) {
    auto r = runCli(args);
    EXPECT_EQ(r.status, 2) << args[args.size() - 2] << " " << args.back() << ": " << r.err;
    EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace torchless

namespace torchless {
namespace {

// A model whose code names a GPU (as a trace on a GPU bakes `device=torch.device("cuda:0")`
// into its code) fails on the CPU as PyTorch fails without CUDA; --map-location cpu and
// --device-map cuda:0=cpu remap those constants and say so (issue 17, part 9).
TEST(DeviceMapCli, MapLocationRemapsDeviceConstantsInCode) {
  fs::path d = freshDir("device_map");
  const std::string model =
      scriptClassM(d,
                   "import torch\n"
                   "class M(torch.nn.Module):\n"
                   "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                   "        z = torch.ones([2, 2], device=torch.device(\"cuda:0\"))\n"
                   "        return x.to(torch.device(\"cuda:0\")) + z\n");
  auto plain = runCli({"run", model, "--input", "2x2:float32:ones", "--output-dir", d.string()});
  EXPECT_EQ(plain.status, 1);
  EXPECT_NE(plain.firstErrLine().find("device 'cuda:0' is not available"), std::string::npos)
      << plain.err;
  for (const std::vector<std::string>& flag :
       {std::vector<std::string>{"--map-location", "cpu"},
        std::vector<std::string>{"--device-map", "cuda:0=cpu"}}) {
    std::vector<std::string> args = {"run",          model,     "--input", "2x2:float32:ones",
                                     "--output-dir", d.string()};
    args.insert(args.end(), flag.begin(), flag.end());
    auto r = runCli(args);
    ASSERT_EQ(r.status, 0) << flag[0] << ": " << r.err;
    EXPECT_NE(r.err.find("device constant (cuda:0) in the code remapped to cpu"), std::string::npos)
        << r.err;
    Tensor y = loadNpy((d / "out0.npy").string());
    ASSERT_EQ(y.numel(), 4);
    EXPECT_EQ(y.data<float>()[3], 2.f);
  }
  auto other = runCli({"run", model, "--input", "2x2:float32:ones", "--device-map", "cuda:1=cpu",
                       "--output-dir", d.string()});
  EXPECT_EQ(other.status, 1) << "cuda:0 is not mapped: " << other.err;
  auto bad = runCli({"run", model, "--map-location", "cuda:0", "--output-dir", d.string()});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("CPU only"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace torchless
