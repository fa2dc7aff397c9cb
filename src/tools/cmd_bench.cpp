// `torchless bench MODEL.pt [INPUT ...] [--threads N] [--runs N] [--warmup N] [--method NAME]
// [--json]`: load time, latency (median, min, max over --runs calls after --warmup calls) and
// peak resident memory of the process.
#include "api/cli_io.h"
#include "api/module.h"
#include "core/error.h"
#include "core/npy.h"
#include "ops/parallel.h"
#include "tools/commands.h"

#include <nlohmann/json.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>

namespace torchless::cli {
namespace {

struct BenchOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::string method = "forward";
  int threads = 0;
  int runs = 20;
  int warmup = 3;
  bool json = false;
};

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Peak resident memory of this process image: VmHWM from /proc/self/status (KiB). Not
// getrusage's ru_maxrss: that survives exec, so a bench started from a large process (a Python
// harness, a build tool) would report the parent's peak. Falls back to ru_maxrss where /proc is
// not mounted.
double peakRssMiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      try {
        return std::stod(line.substr(6)) / 1024.0;
      } catch (const std::exception&) {
        break;
      }
    }
  }
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // Linux reports KiB
}

void benchCommand(const BenchOptions& o) {
  if (o.threads > 0) ops::setNumThreads(o.threads);
  auto t0 = std::chrono::steady_clock::now();
  Module m = load(o.model);
  const double loadMs = msSince(t0);
  std::vector<IValue> args = parseInputs(o.inputs, m.methodParams(o.method),
                                         [](const std::string& p) { return loadNpy(p); });
  for (int i = 0; i < o.warmup; ++i) (void)m.runMethod(o.method, args);
  std::vector<double> times;
  times.reserve(static_cast<size_t>(o.runs));
  for (int i = 0; i < o.runs; ++i) {
    auto t = std::chrono::steady_clock::now();
    (void)m.runMethod(o.method, args);
    times.push_back(msSince(t));
  }
  std::sort(times.begin(), times.end());
  const double median = times.size() % 2 ? times[times.size() / 2]
                                         : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
  if (o.json) {
    nlohmann::json j = {{"model", o.model},        {"method", o.method},
                        {"threads", ops::getNumThreads()}, {"runs", o.runs},
                        {"warmup", o.warmup},      {"load_ms", loadMs},
                        {"median_ms", median},     {"min_ms", times.front()},
                        {"max_ms", times.back()},  {"peak_rss_mib", peakRssMiB()}};
    std::cout << j.dump() << "\n";
    return;
  }
  std::cout << fmt::format("model: {} ({})\n", o.model, o.method)
            << fmt::format("threads: {}\n", ops::getNumThreads())
            << fmt::format("load: {:.2f} ms\n", loadMs)
            << fmt::format("latency over {} runs after {} warmup: median {:.3f} ms, min {:.3f} ms, max {:.3f} ms\n",
                           o.runs, o.warmup, median, times.front(), times.back())
            << fmt::format("peak memory: {:.1f} MiB\n", peakRssMiB());
}

}  // namespace

void registerBenchCommand(CLI::App& app) {
  auto opts = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand("bench", "Measure load time, latency and peak memory");
  cmd->add_option("model", opts->model, "the .pt archive")->required();
  cmd->add_option("inputs", opts->inputs, "method arguments, as for run");
  cmd->add_option("--method", opts->method, "method to run (default forward)");
  cmd->add_option("--threads", opts->threads, "threads for kernels (default: all cores)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--runs", opts->runs, "timed calls (default 20)")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", opts->warmup, "untimed calls first (default 3)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", opts->json, "one JSON object instead of text");
  cmd->callback([opts]() { benchCommand(*opts); });
}

}  // namespace torchless::cli
