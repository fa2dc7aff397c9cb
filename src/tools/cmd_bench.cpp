// `torchless bench MODEL.pt [INPUT ...] [--threads N] [--runs N] [--warmup N] [--method NAME]
// [--batch N] [--concurrency K] [--profile OUT.json] [--json]`: load time, latency (median,
// min, max, p50/p90/p99 over --runs calls per caller after --warmup calls), throughput and
// peak resident memory of the process, as trtexec and onnxruntime_perf_test report them.
// The load time includes building the method's execution plan (freeze and partition); the
// first call's time (reported apart) includes planning the engines for the inputs' shapes.
#include "api/cli_io.h"
#include "api/module.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/npy.h"
#include "ir/ir.h"
#include "ops/parallel.h"
#include "ops/shape.h"
#include "passes/pass_manager.h"
#include "runtime/op_observer.h"
#include "tools/commands.h"
#include "tools/device_options.h"
#include "tools/input_options.h"
#include "tools/save_checked.h"

#include <sys/resource.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

namespace torchless::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  DeviceOptions device;  // --map-location / --device-map
  std::string model;
  std::vector<std::string> inputs;
  std::string method = "forward";
  int threads = 0;
  int runs = 20;
  int warmup = 3;
  int batch = 0;  // 0: the inputs as given
  int concurrency = 1;
  std::string profile;
  bool json = false;
  InputOptions in;
};

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// CPU time of the whole process (every thread), in milliseconds: what a call costs when other
// processes share the cores, where its wall time also counts their turns.
double processCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
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

// Inputs at batch n: a tensor argument whose dim 0 is 1 is repeated n times along dim 0 (a
// tensor already of batch n stays); any other batch is an error naming the argument. Scalars,
// 0-d tensors and non-tensor arguments are passed as given.
std::vector<IValue> atBatch(std::vector<IValue> args, int64_t n,
                            const std::vector<ParamSpec>& params) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].isTensor()) continue;
    const Tensor& t = args[i].toTensor();
    if (t.dim() == 0 || t.sizes()[0] == n) continue;
    const std::string name = i < params.size() ? params[i].name : fmt::format("#{}", i);
    if (t.sizes()[0] != 1)
      throw Error(fmt::format(
          "--batch {}: input '{}' has size {} along dim 0 (shape {}); give it at batch 1 "
          "to be repeated, or at batch {}",
          n, name, t.sizes()[0], sizesToString(t.sizes()), n));
    IntList sizes = t.sizes();
    sizes[0] = n;
    args[i] = IValue(ops::expand(t, sizes).contiguous());
  }
  return args;
}

// Nearest-rank percentile of sorted times (q in (0, 1]).
double percentile(const std::vector<double>& sorted, double q) {
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

// `--profile`: a Chrome trace (chrome://tracing, Perfetto) of the load, the warm-up calls with
// the build steps of the first ones (category "build": freeze, partition, engine plan and each
// layer's preparation), and every kernel call and engine layer of the timed calls ("op",
// "layer"); plus the totals per operator and per engine layer kind over the timed calls (Note
// [Op observer] in runtime/op_observer.h).
class TraceRecorder final : public OpObserver {
 public:
  explicit TraceRecorder(Clock::time_point origin) : origin_(origin) {}

  /// From now on, ops and layers are recorded too (the timed calls).
  void startTimed() { timed_.store(true); }

  void onOpStart(const Node&) override {
    if (timed_.load(std::memory_order_relaxed)) starts().push_back(Clock::now());
  }
  void onOpEnd(const Node& node) override {
    if (!timed_.load(std::memory_order_relaxed)) return;
    auto& s = starts();
    if (s.empty()) return;
    const Clock::time_point t0 = s.back();
    s.pop_back();
    const Clock::time_point t1 = Clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(
        Event{&node, tid(), us(t0), std::chrono::duration<double, std::micro>(t1 - t0).count()});
  }
  void onSpan(const char* category, const std::string& name, const std::string& detail,
              Clock::time_point t0, Clock::time_point t1) override {
    const bool isBuild = std::string_view(category) == "build";
    if (!isBuild && !timed_.load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> lock(mu_);
    spans_.push_back(Span{category, name, detail, tid(), us(t0),
                          std::chrono::duration<double, std::micro>(t1 - t0).count()});
  }

  /// A whole timed call of the method (category "call"), or the load or a warm-up call
  /// (`category` "load", "warmup"): one event each, enclosing the rest.
  void addCall(const std::string& name, Clock::time_point t0, Clock::time_point t1,
               const char* category = "call") {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(Call{name, category, tid(), us(t0),
                          std::chrono::duration<double, std::micro>(t1 - t0).count()});
  }

  void write(const std::string& path) const {
    nlohmann::json events = nlohmann::json::array();
    for (const auto& c : calls_)
      events.push_back({{"name", c.name},
                        {"cat", c.category},
                        {"ph", "X"},
                        {"ts", c.ts},
                        {"dur", c.dur},
                        {"pid", 1},
                        {"tid", c.tid}});
    for (const auto& e : events_) {
      nlohmann::json args = nlohmann::json::object();
      if (e.node->sourceRange()) args["place"] = e.node->sourceRange()->str();
      events.push_back({{"name", e.node->kind().toQualString()},
                        {"cat", "op"},
                        {"ph", "X"},
                        {"ts", e.ts},
                        {"dur", e.dur},
                        {"pid", 1},
                        {"tid", e.tid},
                        {"args", args}});
    }
    for (const auto& sp : spans_) {
      nlohmann::json args = nlohmann::json::object();
      if (!sp.detail.empty()) args["detail"] = sp.detail;
      events.push_back({{"name", sp.name},
                        {"cat", sp.category},
                        {"ph", "X"},
                        {"ts", sp.ts},
                        {"dur", sp.dur},
                        {"pid", 1},
                        {"tid", sp.tid},
                        {"args", args}});
    }
    nlohmann::json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
    writeFileAtomically(path, trace.dump() + "\n");
  }

  /// Total milliseconds per operator kind over the timed calls, largest first.
  std::vector<std::pair<std::string, double>> totals() const {
    std::map<std::string, double> ms;
    for (const auto& e : events_) ms[e.node->kind().toQualString()] += e.dur / 1000.0;
    return sorted(ms);
  }
  /// Total milliseconds per engine layer kind (plugins: per operator) over the timed calls
  /// (inside the engines' torchless::execute_engine ops), largest first.
  std::vector<std::pair<std::string, double>> layerTotals() const {
    std::map<std::string, double> ms;
    for (const auto& sp : spans_)
      if (sp.category == "layer")
        ms[sp.detail.substr(0, sp.detail.find(" at "))] += sp.dur / 1000.0;
    return sorted(ms);
  }
  /// Total milliseconds per step kind inside fused layers ("part" spans, e.g. the attention of
  /// a fused transformer layer) over the timed calls, largest first.
  std::vector<std::pair<std::string, double>> partTotals() const {
    std::map<std::string, double> ms;
    for (const auto& sp : spans_)
      if (sp.category == "part") ms[sp.detail] += sp.dur / 1000.0;
    return sorted(ms);
  }
  /// The build steps (name, milliseconds) in order; the layers' preparation spans left out.
  std::vector<std::pair<std::string, double>> buildSteps() const {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& sp : spans_)
      if (sp.category == "build" &&
          (sp.name == "freeze" || sp.name == "partition" || sp.name == "specialize" ||
           sp.name == "prepare" || sp.name == "engine plan"))
        out.emplace_back(sp.name, sp.dur / 1000.0);
    return out;
  }

 private:
  static std::vector<std::pair<std::string, double>> sorted(
      const std::map<std::string, double>& ms) {
    std::vector<std::pair<std::string, double>> out(ms.begin(), ms.end());
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.second > b.second; });
    return out;
  }
  struct Event {
    const Node* node;
    int tid;
    double ts, dur;  // microseconds
  };
  struct Span {
    std::string category, name, detail;
    int tid;
    double ts, dur;
  };
  struct Call {
    std::string name;
    const char* category;
    int tid;
    double ts, dur;
  };
  static std::vector<Clock::time_point>& starts() {
    thread_local std::vector<Clock::time_point> s;
    return s;
  }
  int tid() {
    thread_local int id = nextTid_++;
    return id;
  }
  double us(Clock::time_point t) const {
    return std::chrono::duration<double, std::micro>(t - origin_).count();
  }

  Clock::time_point origin_;
  std::atomic<int> nextTid_{1};
  std::atomic<bool> timed_{false};
  mutable std::mutex mu_;
  std::vector<Event> events_;
  std::vector<Span> spans_;
  std::vector<Call> calls_;
};

void benchCommand(const BenchOptions& o) {
  if (o.threads > 0) ops::setNumThreads(o.threads);
  const auto origin = Clock::now();
  std::unique_ptr<TraceRecorder> recorder;
  if (!o.profile.empty()) {
    recorder = std::make_unique<TraceRecorder>(origin);
    setOpObserver(recorder.get());
  }
  struct RemoveObserver {
    ~RemoveObserver() { setOpObserver(nullptr); }
  } removeObserver;
  auto t0 = Clock::now();
  const double cpu0 = processCpuMs();
  Module m = loadWithDeviceMap(o.model, o.device);
  if (!m.findMethod(o.method)) throw m.noSuchMethod(o.method).withPlace(o.model);
  const double readMs = msSince(t0);
  const double readCpuMs = processCpuMs() - cpu0;
  const auto params = m.methodParams(o.method);
  std::vector<IValue> args = commandInputs(o.in, o.inputs, params, o.model, o.method);
  if (o.batch > 0) args = atBatch(std::move(args), o.batch, params);
  // The build is part of the load, as ONNX Runtime's session creation and TensorRT's engine
  // build are (Note [Preparing at load] in api/pipeline.h): the execution plan (freeze,
  // partition) and, for these inputs' shapes, the specialization and the engines' plans, so
  // that the first call only executes.
  const auto b0 = Clock::now();
  const double bcpu0 = processCpuMs();
  bool prepared = false;
  if (passes::jitOptimizationsEnabled()) {
    (void)m.executionPlan(o.method);
    prepared = m.prepare(o.method, args);
  }
  const double buildMs = msSince(b0);
  const double buildCpuMs = processCpuMs() - bcpu0;
  const double loadMs = readMs + buildMs;
  const double loadCpuMs = readCpuMs + buildCpuMs;
  if (recorder) recorder->addCall("load", t0, Clock::now(), "load");
  double firstMs = -1, firstCpuMs = -1;
  for (int i = 0; i < o.warmup; ++i) {
    auto t = Clock::now();
    const double c = processCpuMs();
    (void)m.runMethod(o.method, args);
    if (i == 0) firstMs = msSince(t), firstCpuMs = processCpuMs() - c;
    if (recorder)
      recorder->addCall(fmt::format("{} (warm-up {})", o.method, i + 1), t, Clock::now(), "warmup");
  }
  if (recorder) recorder->startTimed();
  // K callers, each making --runs timed calls; latencies of all calls, wall time of all.
  std::vector<std::vector<double>> perCaller(static_cast<size_t>(o.concurrency));
  std::vector<double> cpuTimes;  // per call, one caller only (process CPU time)
  auto caller = [&](size_t k) {
    auto& times = perCaller[k];
    times.reserve(static_cast<size_t>(o.runs));
    if (o.concurrency == 1) cpuTimes.reserve(static_cast<size_t>(o.runs));
    for (int i = 0; i < o.runs; ++i) {
      auto t = Clock::now();
      const double c = o.concurrency == 1 ? processCpuMs() : 0;
      (void)m.runMethod(o.method, args);
      times.push_back(msSince(t));
      if (o.concurrency == 1) cpuTimes.push_back(processCpuMs() - c);
      if (recorder) recorder->addCall(o.method, t, Clock::now());
    }
  };
  const auto wall0 = Clock::now();
  if (o.concurrency == 1) {
    caller(0);
  } else {
    std::vector<std::thread> threads;
    std::exception_ptr failure;
    std::mutex failureMu;
    for (size_t k = 0; k < perCaller.size(); ++k)
      threads.emplace_back([&, k] {
        try {
          caller(k);
        } catch (...) {
          std::lock_guard<std::mutex> lock(failureMu);
          if (!failure) failure = std::current_exception();
        }
      });
    for (auto& t : threads) t.join();
    if (failure) std::rethrow_exception(failure);
  }
  const double wallMs = msSince(wall0);
  setOpObserver(nullptr);

  std::vector<double> times;
  for (const auto& c : perCaller) times.insert(times.end(), c.begin(), c.end());
  std::sort(times.begin(), times.end());
  const double median = times.size() % 2
                            ? times[times.size() / 2]
                            : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
  const double p50 = percentile(times, 0.50), p90 = percentile(times, 0.90),
               p99 = percentile(times, 0.99);
  const int64_t batch = o.batch > 0 ? o.batch : 1;
  const double ips =
      wallMs > 0 ? static_cast<double>(times.size()) * static_cast<double>(batch) * 1000.0 / wallMs
                 : 0;
  if (recorder) {
    createParentDirectory(o.profile);
    recorder->write(o.profile);
  }

  if (o.json) {
    nlohmann::json j = {{"model", o.model},
                        {"method", o.method},
                        {"threads", ops::getNumThreads()},
                        {"runs", o.runs},
                        {"warmup", o.warmup},
                        {"load_ms", loadMs},
                        {"read_ms", readMs},
                        {"build_ms", buildMs},
                        {"prepared", prepared},
                        {"median_ms", median},
                        {"min_ms", times.front()},
                        {"max_ms", times.back()},
                        {"p50_ms", p50},
                        {"p90_ms", p90},
                        {"p99_ms", p99},
                        {"batch", o.batch > 0 ? nlohmann::json(o.batch) : nlohmann::json(nullptr)},
                        {"concurrency", o.concurrency},
                        {"inferences_per_s", ips},
                        {"peak_rss_mib", peakRssMiB()}};
    if (firstMs >= 0) j["first_call_ms"] = firstMs;
    // CPU time of the process: what the load and the calls cost when other processes share the
    // cores (their wall times also count the others' turns). Median over the timed calls with
    // one caller.
    j["load_cpu_ms"] = loadCpuMs;
    j["build_cpu_ms"] = buildCpuMs;
    if (firstCpuMs >= 0) j["first_call_cpu_ms"] = firstCpuMs;
    if (!cpuTimes.empty()) {
      std::sort(cpuTimes.begin(), cpuTimes.end());
      const size_t n = cpuTimes.size();
      j["median_cpu_ms"] = n % 2 ? cpuTimes[n / 2] : (cpuTimes[n / 2 - 1] + cpuTimes[n / 2]) / 2;
    }
    if (recorder) j["profile"] = o.profile;
    std::cout << j.dump() << "\n";
    return;
  }
  std::cout << fmt::format("model: {} ({})\n", o.model, o.method)
            << fmt::format("threads: {}{}\n", ops::getNumThreads(),
                           o.threads > 0 ? "" : " (default: the cores other processes leave idle)")
            << fmt::format("load: {:.2f} ms (read {:.2f} ms, build {:.2f} ms{})\n", loadMs, readMs,
                           buildMs, prepared ? ", engines planned for these inputs" : "");
  if (firstMs >= 0) std::cout << fmt::format("first call: {:.3f} ms\n", firstMs);
  if (o.batch > 0 || o.concurrency > 1)
    std::cout << fmt::format("batch: {}, concurrency: {}\n",
                             o.batch > 0 ? std::to_string(o.batch) : "as given", o.concurrency);
  std::cout << fmt::format(
                   "latency over {} runs after {} warmup: median {:.3f} ms, min {:.3f} ms, max "
                   "{:.3f} ms\n",
                   times.size(), o.warmup, median, times.front(), times.back())
            << fmt::format("percentiles: p50 {:.3f} ms, p90 {:.3f} ms, p99 {:.3f} ms\n", p50, p90,
                           p99)
            << fmt::format("throughput: {:.2f} inferences/s\n", ips)
            << fmt::format("peak memory: {:.1f} MiB\n", peakRssMiB());
  if (recorder) {
    auto totals = recorder->totals();
    double all = 0;
    for (const auto& [name, ms] : totals) all += ms;
    std::cout << fmt::format("profile: {} (per-op totals over {} calls below)\n", o.profile,
                             times.size());
    for (size_t i = 0; i < totals.size() && i < 15; ++i)
      std::cout << fmt::format("  {:>10.3f} ms {:>5.1f}%  {}\n", totals[i].second,
                               all > 0 ? 100.0 * totals[i].second / all : 0.0, totals[i].first);
    auto layers = recorder->layerTotals();
    if (!layers.empty()) {
      double inEngines = 0;
      for (const auto& [kind, ms] : layers) inEngines += ms;
      std::cout << "engine layers by kind (inside torchless::execute_engine):\n";
      for (size_t i = 0; i < layers.size() && i < 15; ++i)
        std::cout << fmt::format("  {:>10.3f} ms {:>5.1f}%  {}\n", layers[i].second,
                                 inEngines > 0 ? 100.0 * layers[i].second / inEngines : 0.0,
                                 layers[i].first);
    }
    auto parts = recorder->partTotals();
    if (!parts.empty()) {
      double inFused = 0;
      for (const auto& [kind, ms] : parts) inFused += ms;
      std::cout << "inside fused layers, by step:\n";
      for (const auto& [kind, ms] : parts)
        std::cout << fmt::format("  {:>10.3f} ms {:>5.1f}%  {}\n", ms,
                                 inFused > 0 ? 100.0 * ms / inFused : 0.0, kind);
    }
    auto steps = recorder->buildSteps();
    if (!steps.empty()) {
      std::cout << "build steps (in the load and the warm-up calls):\n";
      for (const auto& [name, ms] : steps)
        std::cout << fmt::format("  {:>10.3f} ms  {}\n", ms, name);
    }
  }
}

}  // namespace

void registerBenchCommand(CLI::App& app) {
  auto opts = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand("bench", "Measure load time, latency, throughput and peak memory");
  cmd->add_option("MODEL", opts->model, "TorchScript archive (.pt)")->required();
  addDeviceOptions(cmd, opts->device);
  cmd->add_option("INPUT", opts->inputs, "method arguments, as for run");
  addInputOptions(*cmd, opts->in);
  cmd->add_option("--method", opts->method, "method to run (default forward)");
  cmd->add_option("--threads", opts->threads, "threads for kernels (default: all cores)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--runs", opts->runs, "timed calls per caller (default 20)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", opts->warmup, "untimed calls first (default 3)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option(
         "--batch", opts->batch,
         "repeat each tensor input of batch 1 along dim 0 to this batch (default: as given)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--concurrency", opts->concurrency,
                  "callers calling at once, each --runs times (default 1)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--profile", opts->profile,
                  "write per-op times of the timed calls as a Chrome trace (JSON)");
  cmd->add_flag("--json", opts->json, "one JSON object instead of text");
  cmd->callback([opts]() { benchCommand(*opts); });
}

}  // namespace torchless::cli
