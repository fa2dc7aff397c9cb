// `torchless bench` end to end on examples/tiny_cnn.pt: the flags users expect from trtexec and
// onnxruntime_perf_test parse and print, and peak memory is the bench's own (issue 13).
#include "oracle_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <cstring>
#include <fstream>
#include <map>

namespace torchless {
namespace {

namespace fs = std::filesystem;
using testing::runCli;

const std::string kExamples = std::string(TORCHLESS_SOURCE_DIR) + "/examples";
const std::string kModel = kExamples + "/tiny_cnn.pt";
const std::string kInput = kExamples + "/input.npy";

// Runs torchless with posix_spawn from this process (as Python's subprocess does: vfork + exec,
// so the new image starts from this process's memory), stdout to a file; returns the exit
// status and stdout.
testing::CliResult spawn(const std::vector<std::string>& args) {
  const fs::path out = testing::freshDir("api", "bench_spawn") / "out.txt";
  std::vector<std::string> argv = {testing::torchlessBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  testing::CliResult r;
  r.status = -1;
  if (posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), environ) == 0) {
    int raw = 0;
    ::waitpid(pid, &raw, 0);
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  r.out = testing::readFile(out);
  return r;
}

TEST(BenchCli, PeakMemoryIsTheBenchsOwnNotItsParents) {
  // ru_maxrss survives exec: a bench started from a process that once held 768 MiB reported
  // at least 768 MiB. VmHWM is the bench's own.
  const size_t big = size_t{768} << 20;
  std::vector<char> ballast(big);
  for (size_t i = 0; i < big; i += 4096) ballast[i] = static_cast<char>(i);
  auto r = spawn({"bench", kModel, kInput, "--runs", "2", "--warmup", "0", "--json"});
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j.at("peak_rss_mib").get<double>(), 1.0);
  EXPECT_LT(j.at("peak_rss_mib").get<double>(), 512.0) << r.out;
  EXPECT_NE(ballast[4096], 1);  // keep the ballast alive past the child
}

TEST(BenchCli, FlagsParseAndPrint) {
  auto r = runCli({"bench", kModel, kInput, "--runs", "4", "--warmup", "1", "--batch", "3",
                   "--concurrency", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* want :
       {"batch: 3, concurrency: 2", "latency over 8 runs", "percentiles: p50 ", "p90 ", "p99 ",
        "throughput: ", "inferences/s", "first call: ", "peak memory: "})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  auto j = runCli({"bench", kModel, kInput, "--runs", "5", "--batch", "2", "--json"});
  ASSERT_EQ(j.status, 0) << j.err;
  auto o = nlohmann::json::parse(j.out);
  EXPECT_EQ(o.at("batch"), 2);
  EXPECT_EQ(o.at("concurrency"), 1);
  EXPECT_LE(o.at("p50_ms").get<double>(), o.at("p90_ms").get<double>());
  EXPECT_LE(o.at("p90_ms").get<double>(), o.at("p99_ms").get<double>());
  EXPECT_LE(o.at("p99_ms").get<double>(), o.at("max_ms").get<double>());
  EXPECT_GT(o.at("inferences_per_s").get<double>(), 0.0);
  // The load is the read and the build at these inputs' shapes (Note [Preparing at load]).
  EXPECT_TRUE(o.at("prepared").get<bool>()) << j.out;
  EXPECT_GE(o.at("build_ms").get<double>(), 0.0);
  EXPECT_NEAR(o.at("load_ms").get<double>(),
              o.at("read_ms").get<double>() + o.at("build_ms").get<double>(), 1e-6);
}

TEST(BenchCli, BadFlagsAreUsageOrUserErrors) {
  EXPECT_EQ(runCli({"bench", kModel, kInput, "--batch", "0"}).status, 2);
  EXPECT_EQ(runCli({"bench", kModel, kInput, "--concurrency", "0"}).status, 2);
  EXPECT_EQ(runCli({"bench", kModel, kInput, "--batch", "x"}).status, 2);
  // The example input has batch 1; a batch-2 input cannot be repeated to batch 3.
  const fs::path d = testing::freshDir("api", "bench_batch");
  auto two = runCli({"bench", kModel, kInput, "--batch", "2", "--runs", "1", "--profile",
                     (d / "p.json").string()});
  ASSERT_EQ(two.status, 0) << two.err;
  auto bad = runCli({"bench", kModel, (d / "p.json").string()});
  EXPECT_EQ(bad.status, 1);
  // A missing directory is made, as by every command that writes (issue 17, part 7); one that
  // cannot be made (its parent is a file) is a user error naming it.
  auto missing = runCli(
      {"bench", kModel, kInput, "--runs", "1", "--profile", (d / "new_dir" / "p.json").string()});
  EXPECT_EQ(missing.status, 0) << missing.err;
  EXPECT_TRUE(fs::exists(d / "new_dir" / "p.json"));
  std::ofstream(d / "file") << "x";
  auto unwritable = runCli(
      {"bench", kModel, kInput, "--runs", "1", "--profile", (d / "file" / "p.json").string()});
  EXPECT_EQ(unwritable.status, 1);
  EXPECT_NE(unwritable.err.find((d / "file").string()), std::string::npos) << unwritable.err;
}

TEST(BenchCli, BatchOfAnInputThatIsNotBatchOneNamesIt) {
  const fs::path d = testing::freshDir("api", "bench_batch2");
  Tensor x = loadNpy(kInput);
  Tensor two = Tensor::empty({2, x.size(1), x.size(2), x.size(3)}, x.dtype());
  std::memcpy(two.rawData(), x.rawData(), x.numel() * x.itemsize());
  std::memcpy(static_cast<char*>(two.rawData()) + x.numel() * x.itemsize(), x.rawData(),
              x.numel() * x.itemsize());
  saveNpy((d / "two.npy").string(), two);
  auto r = runCli({"bench", kModel, (d / "two.npy").string(), "--batch", "3", "--runs", "1"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--batch 3: input 'x' has size 2 along dim 0"), std::string::npos) << r.err;
  auto same = runCli({"bench", kModel, (d / "two.npy").string(), "--batch", "2", "--runs", "1"});
  EXPECT_EQ(same.status, 0) << same.err;
}

TEST(BenchCli, ProfileWritesAChromeTraceOfEveryKernelCall) {
  // Interpreter only (TORCHLESS_JIT=0), so that the convolutions are kernels of their own rather
  // than layers of an engine (which shows as one torchless::execute_engine kernel).
  const fs::path d = testing::freshDir("api", "bench_profile");
  ::setenv("TORCHLESS_JIT", "0", 1);
  auto r = runCli({"bench", kModel, kInput, "--runs", "3", "--warmup", "1", "--profile",
                   (d / "p.json").string()});
  ::unsetenv("TORCHLESS_JIT");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("aten::conv2d"), std::string::npos) << r.out;
  auto trace = nlohmann::json::parse(testing::readFile(d / "p.json"));
  int calls = 0, convs = 0, ops = 0;
  for (const auto& e : trace.at("traceEvents")) {
    EXPECT_EQ(e.at("ph"), "X");
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    if (e.at("cat") == "call") ++calls;
    if (e.at("cat") == "op") ++ops;
    if (e.at("name") == "aten::conv2d") ++convs;
  }
  EXPECT_EQ(calls, 3);
  EXPECT_GT(convs, 0);
  EXPECT_EQ(convs % 3, 0);  // the same kernels in every call
  EXPECT_EQ(ops % 3, 0);
  // With the default pipeline the trace still holds every kernel the interpreter ran.
  auto jit = runCli({"bench", kModel, kInput, "--runs", "2", "--warmup", "1", "--profile",
                     (d / "q.json").string()});
  ASSERT_EQ(jit.status, 0) << jit.err;
  int jitOps = 0;
  const auto jitTrace = nlohmann::json::parse(testing::readFile(d / "q.json"));
  for (const auto& e : jitTrace.at("traceEvents"))
    if (e.at("cat") == "op") ++jitOps;
  EXPECT_GT(jitOps, 0);
  EXPECT_EQ(jitOps % 2, 0);
}

// Issue 13: `--profile` shows inside the engines. Each timed call has one "layer" event per
// engine layer that runs (the same layers every call), and the build steps appear once, as
// "build" events: freeze and partition during the load, the engine plan (with each layer's
// preparation) in the first warm-up call. The text output sums the layers by kind.
TEST(BenchCli, ProfileShowsEngineLayersAndBuildSteps) {
  const fs::path d = testing::freshDir("api", "bench_profile_layers");
  auto r = runCli({"bench", kModel, kInput, "--runs", "3", "--warmup", "2", "--profile",
                   (d / "p.json").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("engine layers by kind"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Convolution"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("build steps"), std::string::npos) << r.out;
  auto trace = nlohmann::json::parse(testing::readFile(d / "p.json"));
  int calls = 0, loads = 0, warmups = 0, layers = 0, convLayers = 0;
  std::map<std::string, int> steps;
  double loadEnd = 0, firstWarmupStart = -1;
  for (const auto& e : trace.at("traceEvents")) {
    const std::string cat = e.at("cat");
    if (cat == "call") ++calls;
    if (cat == "load") ++loads, loadEnd = e.at("ts").get<double>() + e.at("dur").get<double>();
    if (cat == "warmup") {
      ++warmups;
      const double ts = e.at("ts").get<double>();
      if (firstWarmupStart < 0 || ts < firstWarmupStart) firstWarmupStart = ts;
    }
    if (cat == "layer") {
      ++layers;
      EXPECT_FALSE(e.at("name").get<std::string>().empty());
      if (e.at("args").at("detail").get<std::string>().rfind("Convolution", 0) == 0) ++convLayers;
    }
    if (cat == "build") ++steps[e.at("name").get<std::string>()];
  }
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(loads, 1);
  EXPECT_EQ(warmups, 2);
  EXPECT_GT(convLayers, 0);
  EXPECT_EQ(layers % 3, 0);  // the same layers in every timed call
  EXPECT_EQ(steps["freeze"], 1);
  EXPECT_GE(steps["partition"], 1);
  EXPECT_EQ(steps["engine plan"], 1);  // one input signature, planned once
  EXPECT_EQ(steps["prepare"], 1);
  // Everything is built inside the load (Note [Preparing at load]): no build step ends after
  // it, and the warm-up calls build nothing.
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("cat") != "build") continue;
    const double end = e.at("ts").get<double>() + e.at("dur").get<double>();
    EXPECT_LE(end, loadEnd) << e.at("name");
    EXPECT_LT(e.at("ts").get<double>(), firstWarmupStart) << e.at("name");
  }
}

// Note [OpenMP wait policy] (tools/launcher/launcher.cpp): idle OpenMP threads spin briefly,
// then sleep (spin count 1000; libgomp's default is 300000) unless the user set a policy or a
// spin count;
// libgomp prints what it read with OMP_DISPLAY_ENV=verbose. (`env`: a command, which opens the
// commands' library; `--version` is answered by the launcher without libgomp.)
TEST(ThreadsCli, OpenMpThreadsSleepWhenIdleUnlessTheUserSaysOtherwise) {
  ::setenv("OMP_DISPLAY_ENV", "verbose", 1);
  auto passive = runCli({"env"});
  ::setenv("OMP_WAIT_POLICY", "active", 1);
  auto active = runCli({"env"});
  ::unsetenv("OMP_WAIT_POLICY");
  ::setenv("GOMP_SPINCOUNT", "2500", 1);
  auto spin = runCli({"env"});
  ::unsetenv("GOMP_SPINCOUNT");
  ::unsetenv("OMP_DISPLAY_ENV");
  EXPECT_NE(passive.err.find("GOMP_SPINCOUNT = '1000'"), std::string::npos) << passive.err;
  EXPECT_NE(active.err.find("OMP_WAIT_POLICY = 'ACTIVE'"), std::string::npos) << active.err;
  EXPECT_NE(spin.err.find("GOMP_SPINCOUNT = '2500'"), std::string::npos) << spin.err;
  // the command sees the user's environment (no GOMP_SPINCOUNT) and names the default it lent
  EXPECT_NE(passive.out.find("GOMP_SPINCOUNT=1000 (torchless's default"), std::string::npos)
      << passive.out;
  EXPECT_NE(passive.out.find("torchless "), std::string::npos);
}

}  // namespace
}  // namespace torchless
