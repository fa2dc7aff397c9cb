// torchless::trace and `torchless trace` (api/trace.h): tracing without Python.
//
// Trace*: unit cases on examples/tiny_cnn.pt (in the repository): the traced graph is straight
// line, runs like the original, saves and reloads; the unified diff; the CLI's bad inputs.
// TraceOracle*: the TorchScript documentation's tracing examples made by real PyTorch
// (gen_trace_models.py, ctest fixture api.gen_trace_models; the ctest test api.trace sets
// TORCHLESS_TRACE_MODELS to its directory). Traced archives are loaded back with
// torch.jit.load (gen_trace_models.py check) and must give PyTorch's outputs.
#include "oracle_util.h"

#include "api/trace.h"
#include "core/npy.h"
#include "ir/ir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

namespace torchless {
namespace {

namespace fs = std::filesystem;
using testing::allClose;
using testing::runCli;

const std::string kExamples = std::string(TORCHLESS_SOURCE_DIR) + "/examples";
const std::string kTinyCnn = kExamples + "/tiny_cnn.pt";
const std::string kTinyInput = kExamples + "/input.npy";

fs::path freshDir(const std::string& name) { return testing::freshDir("trace", name); }

std::map<std::string, int64_t> kindCounts(const Graph& g) {
  std::map<std::string, int64_t> counts;
  for (const Node* n : g.nodes()) {
    EXPECT_TRUE(n->blocks().empty()) << "traced graphs are straight line: " << *n;
    if (n->kind() != prim::Constant) ++counts[n->kind().toQualString()];
  }
  return counts;
}

std::vector<std::string> splitLines(const std::string& s) {
  std::vector<std::string> lines;
  std::stringstream in(s);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) lines.push_back(line);
  return lines;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// ---- unit cases -------------------------------------------------------------------------------

TEST(Trace, UnifiedDiffHunks) {
  EXPECT_EQ(unifiedDiff("a\nb\n", "a\nb\n", "x", "y"), "");
  const std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  const std::string b = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n";
  EXPECT_EQ(unifiedDiff(a, b, "old", "new"),
            "--- old\n+++ new\n"
            "@@ -2,8 +2,9 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n 9\n+10\n");
  const std::string far = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n";
  const std::string farB = "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ntwelve\n";
  EXPECT_EQ(unifiedDiff(far, farB, "a", "b"),
            "--- a\n+++ b\n@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n"
            "@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+twelve\n");
}

TEST(Trace, TinyCnnIsStraightLineAndRunsLikeTheOriginal) {
  Module m = load(kTinyCnn);
  Tensor x = loadNpy(kTinyInput);
  TraceResult r = trace(m, {IValue(x)});
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front().str();
  auto kinds = kindCounts(*r.graph);
  // conv2d is recorded as aten::_convolution, as PyTorch's tracer does; scale=None took the
  // else branch, so there is no aten::mul and no prim::If.
  EXPECT_EQ(kinds["aten::_convolution"], 1);
  EXPECT_EQ(kinds["aten::batch_norm"], 1);
  EXPECT_EQ(kinds["aten::softmax"], 1);
  EXPECT_EQ(kinds.count("aten::mul"), 0u);
  EXPECT_EQ(kinds.count("aten::conv2d"), 0u);
  // self plus x; the defaulted `scale` is not an input of the trace.
  ASSERT_EQ(r.graph->inputs().size(), 2u);
  EXPECT_EQ(r.graph->inputs()[1]->debugName(), "x");
  Tensor want = m.forward({IValue(x)}).toTensor();
  EXPECT_TRUE(allClose(r.module.forward({IValue(x)}).toTensor(), want, 0, 0));

  const fs::path d = freshDir("tiny");
  save(r.module, (d / "t.pt").string());
  Module again = load((d / "t.pt").string());
  EXPECT_EQ(again.methodNames(), std::vector<std::string>{"forward"});
  EXPECT_TRUE(allClose(again.forward({IValue(x)}).toTensor(), want, 0, 0));
  fs::remove_all(d);
}

TEST(Trace, CanonicalTextIgnoresValueNames) {
  Module m = load(kTinyCnn);
  Tensor x = loadNpy(kTinyInput);
  TracedGraph a = traceGraph(m, "forward", {IValue(x)});
  TracedGraph b = traceGraph(m, "forward", {IValue(x.clone())});
  EXPECT_EQ(canonicalGraphText(*a.graph), canonicalGraphText(*b.graph));
  b.graph->inputs()[1]->setDebugName("renamed");
  EXPECT_EQ(canonicalGraphText(*a.graph), canonicalGraphText(*b.graph));
  EXPECT_FALSE(contains(canonicalGraphText(*a.graph), "%x"));
}

/// `x` twice along dimension 0.
Tensor twice(const Tensor& x) {
  Tensor c = x.contiguous();
  IntList sizes = c.sizes();
  sizes[0] *= 2;
  Tensor out = Tensor::empty(sizes, c.dtype());
  std::memcpy(out.rawData(), c.rawData(), c.nbytes());
  std::memcpy(static_cast<char*>(out.rawData()) + c.nbytes(), c.rawData(), c.nbytes());
  return out;
}

TEST(Trace, CheckInputsOfAnotherBatchSizePass) {
  Module m = load(kTinyCnn);
  Tensor x = loadNpy(kTinyInput);
  TraceOptions o;
  o.checkInputs.push_back({IValue(twice(x))});
  o.checkInputs.push_back({IValue(x.clone())});
  EXPECT_NO_THROW(trace(m, {IValue(x)}, o));
}

TEST(Trace, NonTensorInputIsRejectedLikePyTorch) {
  Module m = load(kTinyCnn);
  Tensor x = loadNpy(kTinyInput);
  try {
    trace(m, {IValue(x), IValue(2.0)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(),
                         "argument 'scale': Type 'float' cannot be traced. Only Tensors "
                         "and (possibly nested) Lists, Dicts, and Tuples of Tensors can be traced"))
        << e.what();
  }
}

// Archives from the wild (../shared/wild: input and PyTorch's output beside each): traced by
// torchless, loaded by torch.jit.load, same outputs. restart_resnet1d_ptl holds xnnpack
// prepacked weights as object constants; they are carried into the trace.
TEST(Trace, WildArchivesTraceAndLoadInPyTorch) {
  const fs::path wild = fs::path(TORCHLESS_SOURCE_DIR) / ".." / "shared" / "wild";
  const fs::path d = freshDir("wild");
  for (const char* name :
       {"cms_jetmatcher", "tiny_nerf_traced", "torchserve_dummy", "restart_resnet1d_ptl"}) {
    SCOPED_TRACE(name);
    const fs::path dir = wild / name;
    const std::string out = (d / (std::string(name) + ".pt")).string();
    auto r = runCli({"trace", (dir / "model.pt").string(), (dir / "in0.npy").string(), "-o", out});
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string cmd = fmt::format(
        "/usr/bin/python3 {}/tests/api/gen_trace_models.py check {} {} {} 1e-4 1e-4",
        TORCHLESS_SOURCE_DIR, out, (dir / "in0.npy").string(), (dir / "out0.npy").string());
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  fs::remove_all(d);
}

TEST(TraceCli, WritesTheArchive) {
  const fs::path d = freshDir("cli");
  const std::string out = (d / "traced.pt").string();
  auto r = runCli({"trace", kTinyCnn, kTinyInput, "-o", out});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_TRUE(contains(r.out, "traced forward (")) << r.out;
  ASSERT_TRUE(fs::exists(out));
  auto run = runCli({"run", out, kTinyInput, "--output-dir", d.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(allClose(loadNpy((d / "out0.npy").string()), loadNpy(kExamples + "/expected.npy"),
                       1e-4, 1e-4));
  fs::remove_all(d);
}

TEST(TraceCli, TooManyInputs) {
  const fs::path d = freshDir("many");
  const std::string out = (d / "t.pt").string();
  auto r = runCli({"trace", kTinyCnn, kTinyInput, "1.0", "2.0", "-o", out});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.firstErrLine(), "too many inputs")) << r.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(d);
}

TEST(TraceCli, MissingInput) {
  const fs::path d = freshDir("missing");
  const std::string out = (d / "t.pt").string();
  auto r = runCli({"trace", kTinyCnn, "-o", out});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.firstErrLine(), "missing input for argument 'x'")) << r.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(d);
}

TEST(TraceCli, MissingFiles) {
  const fs::path d = freshDir("nofile");
  const std::string out = (d / "t.pt").string();
  auto r = runCli({"trace", kTinyCnn, (d / "nope.npy").string(), "-o", out});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.firstErrLine(), "nope.npy")) << r.err;
  EXPECT_FALSE(fs::exists(out));
  auto m = runCli({"trace", (d / "nope.pt").string(), kTinyInput, "-o", out});
  EXPECT_EQ(m.status, 1);
  EXPECT_TRUE(contains(m.firstErrLine(), "nope.pt")) << m.err;
  EXPECT_FALSE(fs::exists(out));
  auto c = runCli(
      {"trace", kTinyCnn, kTinyInput, "--check-input", (d / "other.npy").string(), "-o", out});
  EXPECT_EQ(c.status, 1);
  EXPECT_TRUE(contains(c.err, "other.npy")) << c.err;
  EXPECT_TRUE(contains(c.err, "--check-input 1")) << c.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(d);
}

// Hostile inputs (helper review): each exits 1 with what and where on the first line and
// leaves no output file behind.
TEST(TraceCli, NoSuchMethodNamesTheArchive) {
  const fs::path d = freshDir("nomethod");
  const std::string out = (d / "t.pt").string();
  auto r = runCli({"trace", kTinyCnn, kTinyInput, "-o", out, "--method", "nope"});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.firstErrLine(),
                       "tiny_cnn.pt: module '__torch__.TinyCNN' has no method "
                       "'nope' (methods: forward)"))
      << r.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(d);
}

TEST(TraceCli, CorruptArchivesAndInputs) {
  const fs::path d = freshDir("corrupt");
  const std::string out = (d / "t.pt").string();
  // A truncated archive: no end of central directory.
  {
    std::ifstream in(kTinyCnn, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream((d / "trunc.pt").string(), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  auto t = runCli({"trace", (d / "trunc.pt").string(), kTinyInput, "-o", out});
  EXPECT_EQ(t.status, 1);
  EXPECT_TRUE(contains(t.firstErrLine(), "trunc.pt: not a zip archive")) << t.err;
  // An .npy whose shape overflows int64, as example input and as check input.
  {
    std::string header =
        "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000, 100000000000, 1000000), "
        "}";
    while ((10 + header.size() + 1) % 64) header += ' ';
    header += '\n';
    std::ofstream f((d / "absurd.npy").string(), std::ios::binary);
    f << "\x93NUMPY" << '\x01' << '\x00' << char(header.size() & 0xff) << char(header.size() >> 8)
      << header << std::string(16, '\0');
  }
  auto a = runCli({"trace", kTinyCnn, (d / "absurd.npy").string(), "-o", out});
  EXPECT_EQ(a.status, 1);
  EXPECT_TRUE(contains(a.firstErrLine(),
                       "absurd.npy: number of elements of [100000000000, 100000000000, "
                       "1000000] overflows int64"))
      << a.err;
  auto c = runCli(
      {"trace", kTinyCnn, kTinyInput, "--check-input", (d / "absurd.npy").string(), "-o", out});
  EXPECT_EQ(c.status, 1);
  EXPECT_TRUE(contains(c.firstErrLine(), "absurd.npy: number of elements")) << c.err;
  EXPECT_TRUE(contains(c.err, "in --check-input 1")) << c.err;
  // The output path is a directory: the temporary file is not renamed over it, nor left behind.
  auto dir = runCli({"trace", kTinyCnn, kTinyInput, "-o", d.string()});
  EXPECT_EQ(dir.status, 1);
  EXPECT_TRUE(contains(dir.firstErrLine(), "cannot write the output: it is a directory"))
      << dir.err;
  EXPECT_FALSE(fs::exists(out));
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(d))
    entries += e.path().string().find(".tmp") != std::string::npos;
  EXPECT_EQ(entries, 0u);
  fs::remove_all(d);
}

// reddit_bytelstm_v1 (../shared/wild): its traced archive keeps the Embedding's untraced
// methods, whose `annotate(Optional[int], None)` must be printed back with its annotation for
// the archive to load again (ops.prim.unchecked_unwrap_optional(None) has no type to infer).
TEST(TraceCli, WildByteLstmTracedArchiveRunsAgain) {
  const fs::path dir =
      fs::path(TORCHLESS_SOURCE_DIR) / ".." / "shared" / "wild" / "reddit_bytelstm_v1";
  const fs::path d = freshDir("bytelstm");
  const std::string out = (d / "t.pt").string();
  auto r = runCli({"trace", (dir / "model.pt").string(), (dir / "in0.npy").string(), "-o", out});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.firstErrLine(), "TracerWarning")) << r.err;
  auto run = runCli({"run", out, (dir / "in0.npy").string(), "--output-dir", d.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(allClose(loadNpy((d / "out0.npy").string()), loadNpy((dir / "out0.npy").string()),
                       1e-4, 1e-4));
  fs::remove_all(d);
}

TEST(TraceCli, NoOutputIsAUsageError) {
  auto r = runCli({"trace", kTinyCnn, kTinyInput});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--output")) << r.err;
}

// ---- PyTorch's documentation examples (fixture api.gen_trace_models) --------------------------

fs::path modelsDir() {
  const char* d = std::getenv("TORCHLESS_TRACE_MODELS");
  return d ? fs::path(d) : fs::path();
}

#define REQUIRE_MODELS()                                       \
  if (modelsDir().empty())                                     \
  GTEST_SKIP() << "TORCHLESS_TRACE_MODELS is not set (run by " \
                  "the ctest test api.trace)"

/// torch.jit.load(archive)(input) against expected, in real PyTorch.
::testing::AssertionResult torchLoadsAndMatches(const std::string& archive,
                                                const std::string& input,
                                                const std::string& expected, double tol) {
  const std::string cmd =
      fmt::format("/usr/bin/python3 {}/tests/api/gen_trace_models.py check {} {} {} {} {}",
                  TORCHLESS_SOURCE_DIR, archive, input, expected, tol, tol);
  if (std::system(cmd.c_str()) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "failed: " << cmd;
}

TEST(TraceOracle, LoopOverSizeDiffersOnOtherShapes) {
  REQUIRE_MODELS();
  const fs::path m = modelsDir();
  // PyTorch itself refuses this trace (its message, for reference).
  ASSERT_TRUE(contains(testing::readFile(m / "loop_pytorch_error.txt"),
                       "ERROR: Graphs differed across invocations!"));

  const fs::path d = freshDir("loop");
  const std::string out = (d / "loop_traced.pt").string();
  auto r = runCli({"trace", (m / "loop.pt").string(), (m / "loop_x.npy").string(), "-o", out,
                   "--check-input", (m / "loop_c1.npy").string(), "--check-input",
                   (m / "loop_c2.npy").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.firstErrLine(), "Tracing failed sanity checks!") << r.err;
  EXPECT_TRUE(contains(r.err, "ERROR: Graphs differed across invocations!")) << r.err;
  EXPECT_TRUE(contains(
      r.err,
      "\tGraph diff:\n\t\t--- trace of the example inputs\n\t\t+++ trace of check input set 1"))
      << r.err;
  // Three iterations against four: the check trace has one more select and mul.
  EXPECT_TRUE(contains(r.err, "\t\t+  %") && contains(r.err, "aten::mul")) << r.err;
  EXPECT_TRUE(contains(r.err, "@@ -")) << r.err;
  EXPECT_FALSE(fs::exists(out));

  // The same trace with a check input of the example's shape passes, and runs like the script.
  auto ok = runCli({"trace", (m / "loop.pt").string(), (m / "loop_x.npy").string(), "-o", out,
                    "--check-input", (m / "loop_x.npy").string()});
  ASSERT_EQ(ok.status, 0) << ok.err;
  Module traced = load(out);
  Tensor x = loadNpy((m / "loop_x.npy").string());
  Tensor want = load((m / "loop.pt").string()).forward({IValue(x)}).toTensor();
  EXPECT_TRUE(allClose(traced.forward({IValue(x)}).toTensor(), want, 0, 0));
  fs::remove_all(d);
}

TEST(TraceOracle, LoopCheckErrorThroughTheApi) {
  REQUIRE_MODELS();
  const fs::path m = modelsDir();
  Module loop = load((m / "loop.pt").string());
  TraceOptions o;
  o.checkInputs.push_back({IValue(loadNpy((m / "loop_c2.npy").string()))});
  try {
    trace(loop, {IValue(loadNpy((m / "loop_x.npy").string()))}, o);
    FAIL() << "expected TracingCheckError";
  } catch (const TracingCheckError& e) {
    EXPECT_EQ(e.message(), "Tracing failed sanity checks!");
    EXPECT_TRUE(contains(e.details(), "ERROR: Graphs differed across invocations!")) << e.details();
    // The trace for [3, 4, 5] run on [2, 3, 4] fails inside (select index 2 of size 2).
    EXPECT_TRUE(
        contains(e.details(), "encountered an exception while running the trace with test inputs."))
        << e.details();
  }
}

TEST(TraceOracle, InPlaceRowWriteWarns) {
  REQUIRE_MODELS();
  const fs::path m = modelsDir();
  const std::string pytorch = testing::readFile(m / "fill_pytorch_warnings.txt");
  const std::string kMessage =
      "There are 2 live references to the data region being modified when tracing in-place "
      "operator copy_ (possibly due to an assignment). This might cause the trace to be incorrect, "
      "because all other views that also reference this data will not reflect this change in the "
      "trace! On the other hand, if all other views use the same memory chunk, but are disjoint "
      "(e.g. are outputs of torch.split), this might still be safe.";
  ASSERT_TRUE(contains(pytorch, kMessage)) << pytorch;

  const fs::path d = freshDir("fill");
  const std::string out = (d / "fill_row_traced.pt").string();
  auto r = runCli({"trace", (m / "fill_row.pt").string(), (m / "fill_x.npy").string(), "-o", out});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "TracerWarning: " + kMessage)) << r.err;
  EXPECT_TRUE(contains(r.out, "1 warning")) << r.out;
  EXPECT_TRUE(torchLoadsAndMatches(out, (m / "fill_x.npy").string(),
                                   (m / "fill_row_expected.npy").string(), 1e-6));

  Module fill = load((m / "fill_row.pt").string());
  TraceResult api = trace(fill, {IValue(loadNpy((m / "fill_x.npy").string()))});
  ASSERT_EQ(api.warnings.size(), 1u);
  EXPECT_EQ(api.warnings[0].message, kMessage);
  EXPECT_FALSE(api.warnings[0].place.empty());
  fs::remove_all(d);
}

TEST(TraceOracle, OutOfPlaceCatTracesClean) {
  REQUIRE_MODELS();
  const fs::path m = modelsDir();
  const fs::path d = freshDir("cat");
  const std::string out = (d / "fill_cat_traced.pt").string();
  auto r = runCli({"trace", (m / "fill_cat.pt").string(), (m / "fill_x.npy").string(), "-o", out,
                   "--check-input", (m / "fill_x.npy").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_TRUE(contains(r.out, "0 warnings, 1 check input set passed")) << r.out;
  EXPECT_TRUE(torchLoadsAndMatches(out, (m / "fill_x.npy").string(),
                                   (m / "fill_cat_expected.npy").string(), 1e-6));
  Module traced = load(out);
  auto kinds = kindCounts(*traced.findMethod("forward")->graph());
  EXPECT_EQ(kinds["aten::cat"], 1);
  EXPECT_EQ(kinds.count("aten::copy_"), 0u);
  fs::remove_all(d);
}

TEST(TraceOracle, SizesStaySymbolic) {
  REQUIRE_MODELS();
  const fs::path m = modelsDir();
  const fs::path d = freshDir("size");
  const std::string out = (d / "size_view_traced.pt").string();
  // Traced on batch 2, checked and run on batch 5: x.size(0) and len(x) are aten::size nodes.
  auto r = runCli({"trace", (m / "size_view.pt").string(), (m / "size_view_x2.npy").string(), "-o",
                   out, "--check-input", (m / "size_view_x5.npy").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  Module traced = load(out);
  EXPECT_EQ(kindCounts(*traced.findMethod("forward")->graph())["aten::size"], 2);
  EXPECT_TRUE(torchLoadsAndMatches(out, (m / "size_view_x5.npy").string(),
                                   (m / "size_view_expected5.npy").string(), 1e-6));
  fs::remove_all(d);
}

TEST(TraceOracle, BranchOnDataFailsTheCheckAsInPyTorch) {
  REQUIRE_MODELS();
  const fs::path m = modelsDir();
  const std::string pytorch = testing::readFile(m / "branch_pytorch_error.txt");
  // PyTorch's output comparison, word for word (it warns; we report it in the error).
  const size_t from = pytorch.find("Output nr 1.");
  const size_t to = pytorch.find("Tracing failed sanity checks!");
  ASSERT_TRUE(from != std::string::npos && to != std::string::npos && from < to) << pytorch;
  const std::string outputReport = pytorch.substr(from, to - from);

  const fs::path d = freshDir("branch");
  const std::string out = (d / "branch_traced.pt").string();
  auto r = runCli({"trace", (m / "branch.pt").string(), (m / "branch_pos.npy").string(), "-o", out,
                   "--check-input", (m / "branch_neg.npy").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.firstErrLine(), "Tracing failed sanity checks!") << r.err;
  EXPECT_TRUE(contains(r.err, outputReport)) << r.err << "\n--- PyTorch:\n" << outputReport;
  EXPECT_TRUE(contains(r.err, "ERROR: Graphs differed across invocations!")) << r.err;
  EXPECT_TRUE(contains(r.err, "aten::add") && contains(r.err, "aten::sub")) << r.err;
  EXPECT_TRUE(
      contains(r.err,
               "TracerWarning: Converting a tensor to a Python boolean might cause the trace "
               "to be incorrect. We can't record the data flow of Python values, so this value "
               "will be treated as a constant in the future. This means that the trace might "
               "not generalize to other inputs!"))
      << r.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(d);
}

TEST(TraceOracle, TensorDataReadAsNumbersWarnsAsPyTorch) {
  REQUIRE_MODELS();
  const fs::path m = modelsDir();
  std::set<std::string> pytorch, ours;
  for (const auto& line : splitLines(testing::readFile(m / "data_dependent_pytorch_warnings.txt")))
    pytorch.insert(line);
  const fs::path d = freshDir("data");
  const std::string out = (d / "data_dependent_traced.pt").string();
  auto r = runCli({"trace", (m / "data_dependent.pt").string(),
                   (m / "data_dependent_x.npy").string(), "-o", out});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const auto& line : splitLines(r.err)) {
    const size_t at = line.find("TracerWarning: ");
    ASSERT_NE(at, std::string::npos) << line;
    ours.insert(line.substr(at));
  }
  EXPECT_EQ(ours, pytorch);
  EXPECT_EQ(ours.size(), 2u);  // "Python integer" (int(t)) and "Python number" (t.item())
  EXPECT_TRUE(torchLoadsAndMatches(out, (m / "data_dependent_x.npy").string(),
                                   (m / "data_dependent_expected.npy").string(), 1e-6));
  fs::remove_all(d);
}

TEST(TraceOracle, ScriptCallingATraceAndTraceCallingAScript) {
  REQUIRE_MODELS();
  const fs::path m = modelsDir();
  const std::string x = (m / "mix_x.npy").string();
  const fs::path d = freshDir("mix");
  for (const char* name : {"script_calls_trace", "trace_calls_script"}) {
    SCOPED_TRACE(name);
    const std::string model = (m / (std::string(name) + ".pt")).string();
    const std::string expected = (m / (std::string(name) + "_expected.npy")).string();
    // PyTorch's archive runs in torchless ...
    Module orig = load(model);
    EXPECT_TRUE(
        allClose(orig.forward({IValue(loadNpy(x))}).toTensor(), loadNpy(expected), 1e-6, 1e-6));
    // ... and our trace of it (calls inlined) runs in torch.jit.load and in torchless.
    const std::string out = (d / (std::string(name) + "_traced.pt")).string();
    auto r = runCli({"trace", model, x, "-o", out});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(torchLoadsAndMatches(out, x, expected, 1e-6));
    Module traced = load(out);
    auto kinds = kindCounts(*traced.findMethod("forward")->graph());
    EXPECT_EQ(kinds.count("prim::CallFunction"), 0u);
    EXPECT_EQ(kinds.count("prim::CallMethod"), 0u);
    EXPECT_TRUE(
        allClose(traced.forward({IValue(loadNpy(x))}).toTensor(), loadNpy(expected), 1e-6, 1e-6));
    if (std::string(name) == "trace_calls_script") {
      // The scripted callee branches on tensor data; inlined, that is specialized with a warning.
      EXPECT_TRUE(contains(r.err,
                           "TracerWarning: Converting a tensor to a Python boolean might cause the "
                           "trace to be incorrect."))
          << r.err;
      // x.size(0) stays a size: aten::size is in the trace.
      EXPECT_EQ(kinds["aten::size"], 1);
    }
  }
  fs::remove_all(d);
}

TEST(TraceOracle, Resnet18MatchesPyTorchsTrace) {
  REQUIRE_MODELS();
  const fs::path m = modelsDir();
  Module model = load((m / "resnet18_scripted.pt").string());
  Tensor x = loadNpy((m / "resnet_x.npy").string());
  TraceResult r = trace(model, {IValue(x)});
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front().str();
  auto want = nlohmann::json::parse(testing::readFile(m / "resnet18_trace_kinds.json"));
  std::map<std::string, int64_t> pytorch;
  for (auto it = want.begin(); it != want.end(); ++it)
    pytorch[it.key()] = it.value().get<int64_t>();
  EXPECT_EQ(kindCounts(*r.graph), pytorch) << *r.graph;

  const fs::path d = freshDir("resnet");
  const std::string out = (d / "resnet18_traced.pt").string();
  save(r.module, out);
  EXPECT_TRUE(torchLoadsAndMatches(out, (m / "resnet_x.npy").string(),
                                   (m / "resnet_expected.npy").string(), 1e-3));
  EXPECT_TRUE(allClose(load(out).forward({IValue(x)}).toTensor(),
                       loadNpy((m / "resnet_expected.npy").string()), 1e-3, 1e-3));
  fs::remove_all(d);
}

}  // namespace
}  // namespace torchless
