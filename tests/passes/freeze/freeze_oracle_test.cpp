// torchless::freeze / optimizeForInference against PyTorch's torch.jit.freeze and
// torch.jit.optimize_for_inference (tests/passes/gen_freeze_models.py writes the models and
// PyTorch's outputs; tests/passes/extra.cmake runs the FreezeOracle suite under that fixture).
// Also: the frozen archive saved by torchless::save loads in torch.jit.load with the same
// outputs (check_frozen_loads.py) and in torchless again; the module that writes its
// attributes keeps them as PyTorch does; the CLI's bad inputs.
#include "../../api/oracle_util.h"

#include "api/freeze.h"
#include "api/module.h"
#include "core/error.h"
#include "core/npy.h"
#include "passes/passes.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

namespace torchless::testing {
namespace {

namespace fs = std::filesystem;

fs::path dataDir() { return fs::path(TORCHLESS_FREEZE_MODELS); }
std::string file(const std::string& name) { return (dataDir() / name).string(); }

fs::path scratch() {
  fs::path p = fs::path(TORCHLESS_BINARY_DIR) / "passes_freeze_scratch";
  fs::create_directories(p);
  return p;
}

/// Node kinds of a graph, nested blocks included.
std::map<std::string, int> kinds(const Graph& g) {
  std::map<std::string, int> out;
  std::function<void(const Block*)> walk = [&](const Block* b) {
    for (const Node* n : b->nodes()) {
      ++out[n->kind().toQualString()];
      for (const Block* inner : n->blocks()) walk(inner);
    }
  };
  walk(g.block());
  return out;
}

std::string kindsText(const std::map<std::string, int>& k) {
  std::string s;
  for (const auto& [name, n] : k) s += fmt::format("  {:4d}  {}\n", n, name);
  return s;
}

Tensor forward(const Module& m, const std::string& model) {
  return m.forward({IValue(loadNpy(file(model + "_in.npy")))}).toTensor();
}

/// Runs a python checker; returns its exit status (stderr shown on failure by the caller).
int runPython(const std::string& args, std::string* err) {
  fs::path errFile = scratch() / "python.err";
  std::string cmd = "/usr/bin/python3 " + args + " 2>" + shellQuote(errFile.string());
  int raw = std::system(cmd.c_str());
  *err = readFile(errFile);
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

const std::string kChecker =
    std::string(TORCHLESS_SOURCE_DIR) + "/tests/passes/check_frozen_loads.py";

/// Saves `m`, checks that torch.jit.load gives `expected` (files, one per call) and that
/// torchless loads it again with the same first output.
void expectSavedArchiveLoads(const Module& m, const std::string& model, double tol,
                             const std::vector<std::string>& expected,
                             bool readsAttributes = false) {
  fs::path out = scratch() / (model + "_frozen_by_torchless.pt");
  save(m, out.string());
  std::string args = shellQuote(kChecker) + " " + shellQuote(out.string()) + " " +
                     shellQuote(file(model + "_in.npy")) + " " + std::to_string(tol);
  for (const auto& e : expected) args += " " + shellQuote(file(e));
  std::string err;
  EXPECT_EQ(runPython(args, &err), 0) << "torch.jit.load of " << out << ": " << err;
  Module again = load(out.string());
  EXPECT_TRUE(allClose(forward(again, model), loadNpy(file(expected.front())), tol, tol));
  if (!readsAttributes) {
    EXPECT_EQ(kinds(*again.findMethod("forward")->graph()).count("prim::GetAttr"), 0u)
        << "reloaded " << model << " reads attributes";
  }
}

void expectConvnet(const std::string& model, double tol) {
  Module m = load(file(model + ".pt"));
  auto before = m.findMethod("forward")->graph()->copy();
  passes::inlineCalls(*before);
  Module f = freeze(m);
  EXPECT_TRUE(allClose(forward(f, model), loadNpy(file(model + "_frozen.npy")), tol, tol));
  EXPECT_TRUE(allClose(forward(f, model), loadNpy(file(model + "_eager.npy")), tol, tol));
  Module o = optimizeForInference(m);
  EXPECT_TRUE(allClose(forward(o, model), loadNpy(file(model + "_optimized.npy")), tol, tol));
  auto after = kinds(*o.findMethod("forward")->graph());
  std::cout << model << " node kinds, inlined before freezing:\n"
            << kindsText(kinds(*before)) << model << " after optimizeForInference:\n"
            << kindsText(after);
  for (const char* k : {"aten::batch_norm", "aten::dropout", "aten::dropout_", "prim::GetAttr",
                        "prim::SetAttr", "prim::CallMethod", "prim::CallFunction"})
    EXPECT_EQ(after.count(k), 0u) << model << " still has " << k << ":\n" << kindsText(after);
  EXPECT_GT(after["aten::conv2d"], 0);
  // The original module is untouched: still parameters, still batch_norm.
  EXPECT_GT(kinds(*before)["aten::batch_norm"], 0);
  EXPECT_FALSE(m.namedParameters().empty());
  EXPECT_EQ(o.object()->type->attributes().size(), 0u);
  expectSavedArchiveLoads(o, model, tol, {model + "_optimized.npy"});
}

TEST(FreezeOracle, ResNet18) { expectConvnet("resnet18", 1e-3); }

TEST(FreezeOracle, MobileNetV2) { expectConvnet("mobilenet_v2", 1e-3); }

TEST(FreezeOracle, SmallModule) {
  Module m = load(file("small.pt"));
  Module f = freeze(m);
  EXPECT_TRUE(allClose(forward(f, "small"), loadNpy(file("small_frozen.npy")), 1e-4, 1e-4));
  EXPECT_TRUE(allClose(forward(f, "small"), loadNpy(file("small_eager.npy")), 1e-4, 1e-4));
  // The same folds as PyTorch 1.13's frozen graph: conv+bn, conv+mul+add, conv1d-sub fold;
  // nn.BatchNorm1d after the linear stays (its input-rank check uses the linear's output,
  // and 1.13 has no linear+bn fold); dropouts, attributes and training branches go.
  auto k = kinds(*f.findMethod("forward")->graph());
  std::map<std::string, int> torchKinds;
  {
    std::string json = readFile(file("small_torch_frozen_kinds.json"));
    for (const char* name : {"aten::batch_norm", "aten::conv2d", "aten::conv1d", "aten::mul",
                             "aten::sub", "aten::linear"}) {
      std::string key = std::string("\"") + name + "\": ";
      size_t at = json.find(key);
      torchKinds[name] = at == std::string::npos ? 0 : std::stoi(json.substr(at + key.size()));
      EXPECT_EQ(k[name], torchKinds[name]) << name << " in\n" << *f.findMethod("forward")->graph();
    }
  }
  EXPECT_EQ(torchKinds["aten::batch_norm"], 1);
  for (const char* gone : {"aten::dropout", "prim::GetAttr", "aten::add"})
    EXPECT_EQ(k.count(gone), 0u) << gone << " left:\n" << *f.findMethod("forward")->graph();
  EXPECT_EQ(f.methodNames(), std::vector<std::string>{"forward"});
  Module o = optimizeForInference(m);
  EXPECT_TRUE(allClose(forward(o, "small"), loadNpy(file("small_optimized.npy")), 1e-4, 1e-4));
  expectSavedArchiveLoads(f, "small", 1e-4, {"small_frozen.npy"});
}

TEST(FreezeOracle, PreservedMethod) {
  Module m = load(file("small.pt"));
  FreezeOptions o;
  o.preservedAttrs = {"features"};
  Module f = freeze(m, o);
  EXPECT_EQ(f.methodNames(), (std::vector<std::string>{"forward", "features"}));
  Tensor y = f.runMethod("features", {IValue(loadNpy(file("small_in.npy")))}).toTensor();
  EXPECT_TRUE(allClose(y, loadNpy(file("small_features_frozen.npy")), 1e-4, 1e-4));
  o.preservedAttrs = {"nope"};
  try {
    freeze(m, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'nope' is neither a method nor an attribute"),
              std::string::npos)
        << e.what();
  }
}

TEST(FreezeOracle, MutatingModuleKeepsItsAttributes) {
  Module m = load(file("mutating.pt"));
  Module f = freeze(m);
  std::vector<std::string> attrs;
  for (const auto& a : f.object()->type->attributes()) attrs.push_back(a.name);
  EXPECT_EQ(attrs, (std::vector<std::string>{"n", "count"}));  // as PyTorch's frozen module
  EXPECT_TRUE(f.object()->type->attributes()[0].isBuffer);
  EXPECT_TRUE(allClose(forward(f, "mutating"), loadNpy(file("mutating_frozen1.npy")), 1e-5, 1e-5));
  EXPECT_TRUE(allClose(forward(f, "mutating"), loadNpy(file("mutating_frozen2.npy")), 1e-5, 1e-5));
  // The frozen module has its own copies: the original did not count.
  EXPECT_EQ(m.object()->getAttr("count").toInt(), 0);
  EXPECT_EQ(m.object()->getAttr("n").toTensor().doubleAt(0), 0.0);
  // A fresh frozen copy, saved: torch.jit.load runs it twice with PyTorch's numbers.
  expectSavedArchiveLoads(freeze(m), "mutating", 1e-5,
                          {"mutating_frozen1.npy", "mutating_frozen2.npy"},
                          /*readsAttributes=*/true);
}

TEST(FreezeOracle, TrainingModeIsAnError) {
  Module m = load(file("small_train.pt"));
  try {
    freeze(m);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is in training mode"), std::string::npos) << e.what();
  }
}

TEST(FreezeOracle, JitDisabledSkipsTheFolds) {
  Module m = load(file("small.pt"));
  ::setenv("TORCHLESS_JIT", "0", 1);
  Module f = freeze(m);
  ::unsetenv("TORCHLESS_JIT");
  auto k = kinds(*f.findMethod("forward")->graph());
  EXPECT_EQ(k["aten::batch_norm"], 3) << kindsText(k);
  EXPECT_GT(k["aten::dropout"], 0) << kindsText(k);
  EXPECT_EQ(k.count("prim::GetAttr"), 0u);
  EXPECT_TRUE(allClose(forward(f, "small"), loadNpy(file("small_frozen.npy")), 1e-4, 1e-4));
}

TEST(FreezeOracle, LogPrintsTheGraphAfterNamedPasses) {
  Module m = load(file("small.pt"));
  ::setenv("TORCHLESS_LOG", "fold_conv_bn", 1);
  ::testing::internal::CaptureStderr();
  freeze(m);
  std::string log = ::testing::internal::GetCapturedStderr();
  ::unsetenv("TORCHLESS_LOG");
  EXPECT_NE(log.find("after fold_conv_bn:\ngraph("), std::string::npos) << log;
  EXPECT_EQ(log.find("after freeze"), std::string::npos);
}

// ---- the CLI ----

TEST(FreezeOracle, CliFreezeAndGraphFrozen) {
  fs::path out = scratch() / "cli_small_frozen.pt";
  fs::remove(out);
  CliResult r = runCli({"freeze", file("small.pt"), "-o", out.string(), "--optimize"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(out));
  std::string err;
  EXPECT_EQ(runPython(shellQuote(kChecker) + " " + shellQuote(out.string()) + " " +
                          shellQuote(file("small_in.npy")) + " 1e-4 " +
                          shellQuote(file("small_optimized.npy")),
                      &err),
            0)
      << err;
  CliResult g = runCli({"graph", file("resnet18.pt"), "--frozen"});
  ASSERT_EQ(g.status, 0) << g.err;
  EXPECT_EQ(g.out.find("prim::GetAttr"), std::string::npos);
  EXPECT_EQ(g.out.find("aten::batch_norm"), std::string::npos);
  EXPECT_NE(g.out.find("aten::conv2d"), std::string::npos);
}

TEST(FreezeOracle, CliBadInputs) {
  fs::path out = scratch() / "cli_never_written.pt";
  fs::remove(out);
  CliResult missing =
      runCli({"freeze", (scratch() / "no_such_model.pt").string(), "-o", out.string()});
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.firstErrLine().find("no_such_model.pt"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(out));

  // A missing output directory is made, as by every command that writes; one that cannot be
  // made (its parent is a file) is an error naming it, with nothing written.
  fs::path notADir = scratch() / "a_file";
  std::ofstream(notADir) << "x";
  fs::path badDir = notADir / "sub" / "out.pt";
  CliResult unwritable = runCli({"freeze", file("small.pt"), "-o", badDir.string()});
  EXPECT_EQ(unwritable.status, 1);
  EXPECT_NE(unwritable.firstErrLine().find(notADir.string()), std::string::npos) << unwritable.err;
  EXPECT_FALSE(fs::exists(badDir));

  CliResult train = runCli({"freeze", file("small_train.pt"), "-o", out.string()});
  EXPECT_EQ(train.status, 1);
  EXPECT_NE(train.firstErrLine().find("training mode"), std::string::npos) << train.err;
  EXPECT_FALSE(fs::exists(out));

  CliResult method = runCli({"freeze", file("small.pt"), "-o", out.string(), "--method", "nope"});
  EXPECT_EQ(method.status, 1);
  EXPECT_NE(method.firstErrLine().find("has no method 'nope'"), std::string::npos) << method.err;
  EXPECT_FALSE(fs::exists(out));

  CliResult usage = runCli({"freeze", file("small.pt")});
  EXPECT_EQ(usage.status, 2);
}

// reddit_bytelstm_v1 (../shared/wild): freezing turns the LSTM's flat weights into a list of
// CONSTANTS.cN; as in PyTorch's importer those constants are plain Tensor so the list is the
// Tensor[] aten::lstm takes, and the frozen archive loads and runs again.
TEST(FreezeOracle, CliWildByteLstmFrozenArchiveRunsAgain) {
  const fs::path dir =
      fs::path(TORCHLESS_SOURCE_DIR) / ".." / "shared" / "wild" / "reddit_bytelstm_v1";
  for (const char* flag : {"", "--optimize"}) {
    SCOPED_TRACE(flag);
    fs::path out = scratch() / "bytelstm_frozen.pt";
    fs::remove(out);
    std::vector<std::string> args = {"freeze", (dir / "model.pt").string(), "-o", out.string()};
    if (*flag) args.push_back(flag);
    CliResult r = runCli(args);
    ASSERT_EQ(r.status, 0) << r.err;
    fs::path outDir = scratch() / "bytelstm_out";
    fs::create_directories(outDir);
    CliResult run =
        runCli({"run", out.string(), (dir / "in0.npy").string(), "--output-dir", outDir.string()});
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_TRUE(allClose(loadNpy((outDir / "out0.npy").string()),
                         loadNpy((dir / "out0.npy").string()), 1e-4, 1e-4));
  }
}

// The frozen module is loaded back before it is renamed into place: an archive torchless
// cannot read (here: an interface-typed attribute, whose interface the printer does not write
// yet) is an error naming the output, and nothing is left behind.
// An interface-typed submodule: the archive defines the interface and the class behind it
// (once an error, "does not load back"), loads in torch.jit.load and in torchless, and gives
// PyTorch's frozen output; no temporary file is left beside it.
TEST(FreezeOracle, CliInterfaceSubmoduleSavesAndLoads) {
  fs::path out = scratch() / "with_interface_frozen.pt";
  fs::remove(out);
  CliResult r = runCli({"freeze", file("with_interface.pt"), "-o", out.string()});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(scratch()))
    EXPECT_EQ(e.path().filename().string().find("with_interface_frozen.pt.tmp"), std::string::npos)
        << e.path();
  expectSavedArchiveLoads(freeze(load(file("with_interface.pt"))), "with_interface", 1e-6,
                          {"with_interface_frozen.npy"}, /*readsAttributes=*/true);
}

TEST(FreezeOracle, CliCorruptArchiveAndOutputDirectory) {
  fs::path trunc = scratch() / "small_truncated.pt";
  {
    std::ifstream in(file("small.pt"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(trunc.string(), std::ios::binary) << bytes.substr(0, bytes.size() - 30);
  }
  fs::path out = scratch() / "cli_never_written2.pt";
  fs::remove(out);
  CliResult t = runCli({"freeze", trunc.string(), "-o", out.string()});
  EXPECT_EQ(t.status, 1);
  EXPECT_NE(t.firstErrLine().find("small_truncated.pt: not a zip archive"), std::string::npos)
      << t.err;
  EXPECT_FALSE(fs::exists(out));

  fs::path dirOut = scratch() / "an_existing_dir";
  fs::create_directories(dirOut);
  CliResult d = runCli({"freeze", file("small.pt"), "-o", dirOut.string()});
  EXPECT_EQ(d.status, 1);
  EXPECT_NE(d.firstErrLine().find("cannot write the output: it is a directory"), std::string::npos)
      << d.err;
  EXPECT_TRUE(fs::is_empty(dirOut));

  CliResult p =
      runCli({"freeze", file("small.pt"), "-o", out.string(), "--preserve", "no.such.attr"});
  EXPECT_EQ(p.status, 1);
  EXPECT_NE(p.firstErrLine().find("'no.such.attr' is neither a method nor an attribute"),
            std::string::npos)
      << p.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace torchless::testing
