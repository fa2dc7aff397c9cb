#include "server/server.h"

#include "core/error.h"
#include "server/grpc_frontend.h"
#include "server/http_frontend.h"

#include <fmt/format.h>

#include <malloc.h>
#include <pthread.h>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

namespace torchless::serve {

Server::Server(const ServeOptions& options) : options_(options) {}

Server::~Server() { drain(); }

void Server::log(LogLevel level, const std::string& line) const {
  if (static_cast<int>(level) > static_cast<int>(options_.logLevel)) return;
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  static const char* kLevels[] = {"error", "warning", "info"};
  // One write per line, so lines of concurrent requests never interleave.
  const std::string text =
      fmt::format("ts={:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z level={} {}\n", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms,
                  kLevels[static_cast<int>(level)], line);
  std::fwrite(text.data(), 1, text.size(), stderr);
}

namespace {
// logfmt quoting.
std::string logfmtQuoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}
}  // namespace

Server::Loaded Server::find(const std::string& name, const std::string& version) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(name);
  if (it == slots_.end())
    throw ServeError(ErrorKind::NotFound, fmt::format("unknown model '{}'", name));
  const Slot& s = it->second;
  if (!s.model)
    throw ServeError(ErrorKind::NotFound,
                     fmt::format("model '{}' is not loaded ({}{})", name,
                                 s.state == "LOADING" ? "loading" : "unavailable",
                                 s.reason.empty() ? "" : ": " + s.reason));
  if (!version.empty() && version != s.model->version())
    throw ServeError(ErrorKind::NotFound,
                     fmt::format("model '{}' has no version '{}' (serving version {})", name,
                                 version, s.model->version()));
  return {s.model, s.scheduler};
}

bool Server::modelReady(const std::string& name, const std::string& version) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(name);
    if (it != slots_.end() && !it->second.model) return false;  // known, not loaded
  }
  return find(name, version).model->ready();
}

ModelMetadata Server::metadata(const std::string& name, const std::string& version) const {
  const Loaded l = find(name, version);
  if (!l.model->ready())
    throw ServeError(ErrorKind::Unavailable, fmt::format("model '{}' is loading", name));
  return l.model->metadata();
}

void Server::logFailure(const char* protocol, const std::string& model, const ServeError& e) {
  bool known;
  {
    std::lock_guard<std::mutex> lock(mu_);
    known = slots_.count(model) != 0;
  }
  if (known) metrics_.model(model).request(e.httpStatus(), 0);
  log(e.kind() == ErrorKind::Internal ? LogLevel::Error : LogLevel::Info,
      fmt::format("protocol={} model={} status={} error={}", protocol, logfmtQuoted(model),
                  e.httpStatus(), logfmtQuoted(e.what())));
}

InferResponse Server::infer(const InferRequest& request, const char* protocol,
                            std::chrono::steady_clock::time_point transportDeadline) {
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::shared_ptr<ServedModel> model;
  try {
    const Loaded l = find(request.model, request.version);
    model = l.model;
    if (!model->ready() || !l.scheduler)
      throw ServeError(ErrorKind::Unavailable, fmt::format("model '{}' is loading", request.model));
    // The deadline: Triton's default_queue_policy and the request's `timeout` (Note [Model
    // repository] in server/model.h), and the transport's.
    const ModelConfig& c = model->config();
    int64_t timeoutUs = request.timeoutUs;
    if (c.defaultTimeoutUs > 0)
      timeoutUs = c.allowTimeoutOverride && timeoutUs > 0 ? std::min(timeoutUs, c.defaultTimeoutUs)
                                                          : c.defaultTimeoutUs;
    auto deadline = transportDeadline;
    if (timeoutUs > 0) deadline = std::min(deadline, start + std::chrono::microseconds(timeoutUs));
    std::vector<IValue> args = model->bindInputs(request);
    ModelMetrics& mm = metrics_.model(model->name());
    mm.inFlight(1);
    Outcome o;
    try {
      o = l.scheduler->run(std::move(args), deadline);
    } catch (...) {
      mm.inFlight(-1);
      throw;
    }
    mm.inFlight(-1);
    InferResponse r;
    r.model = model->name();
    r.version = model->version();
    r.id = request.id;
    r.outputs = model->outputsOf(o.result, request);
    const double s = seconds();
    mm.request(200, s);
    if (options_.logLevel >= LogLevel::Info)
      log(LogLevel::Info,
          fmt::format("protocol={} model={} version={} id={} status=200 duration_ms={:.3f} "
                      "queue_ms={:.3f} forward_ms={:.3f} batch={}",
                      protocol, logfmtQuoted(model->name()), model->version(),
                      logfmtQuoted(request.id), s * 1e3, o.queueSeconds * 1e3,
                      o.forwardSeconds * 1e3, o.batchRows));
    return r;
  } catch (const ServeError& e) {
    if (model) metrics_.model(model->name()).request(e.httpStatus(), seconds());
    log(e.kind() == ErrorKind::Internal ? LogLevel::Error : LogLevel::Info,
        fmt::format("protocol={} model={} id={} status={} duration_ms={:.3f} error={}", protocol,
                    logfmtQuoted(request.model), logfmtQuoted(request.id), e.httpStatus(),
                    seconds() * 1e3, logfmtQuoted(e.what())));
    throw;
  }
}

void Server::discover() {
  std::vector<ModelSource> sources;
  if (!options_.repository.empty()) sources = scanRepository(options_.repository);
  for (const auto& [name, path] : options_.models) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) throw Error("--model: no such file", path);
    ModelSource s;
    s.name = name;
    s.version = "1";
    s.path = path;
    sources.push_back(std::move(s));
  }
  if (sources.empty())
    throw Error("nothing to serve: give a model repository or --model NAME=MODEL.pt");
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : sources) {
    if (slots_.count(s.name)) throw Error(fmt::format("model '{}' is given twice", s.name), s.path);
    Slot& slot = slots_[s.name];
    slot.source = std::move(s);
    slot.state = "LOADING";
  }
}

Server::Loaded Server::build(const ModelSource& source) {
  const auto start = std::chrono::steady_clock::now();
  auto m = std::make_shared<ServedModel>(source);
  try {
    m->load();
  } catch (Error& e) {
    e.addContext(fmt::format("while loading model '{}'", source.name));
    throw;
  }
  const int threads = m->config().threads > 0 ? m->config().threads : share_;
  const std::string warm = m->warmUp(threads);
  if (!warm.empty())
    log(LogLevel::Warning,
        fmt::format("model={} warm-up call on zeros failed (requests will still run): {}",
                    logfmtQuoted(source.name), logfmtQuoted(warm)));
  const size_t capacity = static_cast<size_t>(
      m->config().maxQueueSize > 0 ? m->config().maxQueueSize : options_.maxQueue);
  auto scheduler = std::make_shared<Scheduler>(m, capacity, threads, metrics_.model(source.name));
  scheduler->start();
  m->setReady(true);
  log(LogLevel::Info,
      fmt::format(
          "model={} version={} ready: loaded{} in {:.2f} s, {} instance{} x {} thread{}, queue "
          "{}{}",
          logfmtQuoted(source.name), m->version(), m->config().compile ? " and compiled" : "",
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
          m->instanceCount(), m->instanceCount() == 1 ? "" : "s", threads, threads == 1 ? "" : "s",
          capacity,
          m->batchable() ? fmt::format(", dynamic batching up to {}", m->config().maxBatchSize)
                         : ""));
  return {m, scheduler};
}

void Server::loadModels(const std::atomic<bool>& stop) {
  std::lock_guard<std::mutex> load(loadMu_);
  budget_ = options_.threads > 0
                ? options_.threads
                : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<ModelSource> sources;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, slot] : slots_) sources.push_back(slot.source);
  }
  int instances = 0;
  for (const auto& s : sources) instances += s.config.instances;
  share_ = std::max(1, budget_ / std::max(1, instances));
  for (const auto& source : sources) {
    if (stop || draining_) return;
    Loaded l = build(source);
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[source.name];
    slot.model = std::move(l.model);
    slot.scheduler = std::move(l.scheduler);
    slot.state = "READY";
  }
  checkThreadBudget();
  ready_ = true;
}

void Server::checkThreadBudget() const {
  int total = 0;
  std::vector<std::string> parts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, slot] : slots_) {
      if (!slot.model) continue;
      const int threads = slot.model->config().threads > 0 ? slot.model->config().threads : share_;
      const int n = static_cast<int>(slot.model->instanceCount());
      total += n * threads;
      parts.push_back(fmt::format("{} {}x{}", name, n, threads));
    }
  }
  if (total > budget_)
    log(LogLevel::Warning,
        fmt::format("the models' instances x threads add up to {} ({}), over the thread budget of "
                    "{} (--threads, default: the cores): busy instances oversubscribe the cores; "
                    "lower config.json's \"threads\" or instance_group count, or raise --threads",
                    total, fmt::join(parts, ", "), budget_));
}

namespace {
// A model name that names one directory of the repository and nothing else.
bool safeModelName(const std::string& name) {
  return !name.empty() && name[0] != '.' &&
         name.find_first_of(std::string("/\\\0", 3)) == std::string::npos;
}
}  // namespace

ModelSource Server::sourceOf(const std::string& name) const {
  if (!safeModelName(name))
    throw ServeError(ErrorKind::NotFound, fmt::format("'{}' is not a model name", name));
  if (!options_.repository.empty()) {
    const std::filesystem::path dir = std::filesystem::path(options_.repository) / name;
    std::error_code ec;
    if (std::filesystem::is_directory(dir, ec))
      return scanModel(dir.string());  // throws torchless::Error
  }
  for (const auto& [n, path] : options_.models)
    if (n == name) {  // a --model: its file again
      ModelSource s;
      s.name = n;
      s.version = "1";
      s.path = path;
      return s;
    }
  throw ServeError(
      ErrorKind::NotFound,
      fmt::format("no model '{}' in the repository{}", name,
                  options_.repository.empty() ? " (there is none: only --model)" : ""));
}

void Server::loadModel(const std::string& name) {
  std::lock_guard<std::mutex> load(loadMu_);
  if (draining_) throw ServeError(ErrorKind::Unavailable, "the server is shutting down");
  Loaded l;
  try {
    const ModelSource source = sourceOf(name);
    {
      std::lock_guard<std::mutex> lock(mu_);
      Slot& slot = slots_[name];
      slot.source = source;
      if (!slot.model) slot.state = "LOADING";
    }
    l = build(source);
  } catch (const ServeError&) {
    throw;  // not a model of the repository
  } catch (const std::exception& e) {
    std::string why = e.what();
    while (!why.empty() && why.back() == '\n') why.pop_back();
    {
      std::lock_guard<std::mutex> lock(mu_);
      Slot& slot = slots_[name];
      slot.reason = why;
      if (!slot.model) slot.state = "UNAVAILABLE";
    }
    log(LogLevel::Warning,
        fmt::format("model={} load failed: {}", logfmtQuoted(name), logfmtQuoted(why)));
    throw ServeError(ErrorKind::BadRequest,
                     fmt::format("failed to load model '{}': {}", name, why));
  }
  std::shared_ptr<Scheduler> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[name];
    old = std::move(slot.scheduler);
    slot.model = std::move(l.model);
    slot.scheduler = std::move(l.scheduler);
    slot.state = "READY";
    slot.reason.clear();
  }
  if (old) old->stop();  // the old instances answer what they had queued
  checkThreadBudget();
}

void Server::unloadModel(const std::string& name) {
  std::lock_guard<std::mutex> load(loadMu_);
  if (draining_) throw ServeError(ErrorKind::Unavailable, "the server is shutting down");
  if (!safeModelName(name))
    throw ServeError(ErrorKind::NotFound, fmt::format("'{}' is not a model name", name));
  std::shared_ptr<Scheduler> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(name);
    if (it == slots_.end()) {
      bool inRepository = false;
      if (!options_.repository.empty())
        for (const auto& [n, v] : listRepository(options_.repository)) inRepository |= n == name;
      if (!inRepository)
        throw ServeError(ErrorKind::NotFound, fmt::format("unknown model '{}'", name));
      return;  // in the repository, never loaded: nothing to do
    }
    if (it->second.model) it->second.model->setReady(false);
    old = std::move(it->second.scheduler);
    it->second.model.reset();
    it->second.state = "UNAVAILABLE";
    it->second.reason = "unloaded";
  }
  if (old) old->stop();
  log(LogLevel::Info, fmt::format("model={} unloaded", logfmtQuoted(name)));
}

std::vector<ModelIndexEntry> Server::repositoryIndex(bool readyOnly) const {
  std::map<std::string, ModelIndexEntry> all;
  if (!options_.repository.empty())
    for (const auto& [name, version] : listRepository(options_.repository))
      all[name] = {name, version, "UNAVAILABLE", "not loaded"};
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, s] : slots_)
      all[name] = {name, s.model ? s.model->version() : s.source.version, s.state, s.reason};
  }
  std::vector<ModelIndexEntry> out;
  for (auto& [name, e] : all)
    if (!readyOnly || e.state == "READY") out.push_back(std::move(e));
  return out;
}

void Server::drain() {
  std::lock_guard<std::mutex> load(loadMu_);
  draining_ = true;
  std::vector<std::shared_ptr<Scheduler>> schedulers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, s] : slots_)
      if (s.scheduler) schedulers.push_back(s.scheduler);
  }
  for (auto& s : schedulers) s->stop();
}

// ---- the process ----

namespace {

struct StopSignal {
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<bool> requested{false};
  int signal = 0;
};

}  // namespace

// Note [Server memory]
// glibc gives each thread that allocates its own malloc arena (up to 8 per core). In the server
// a request's buffers are allocated on an HTTP thread and freed there or on a worker, and every
// arena keeps its own high-water mark of free space that no other arena reuses; as connections
// move between the 16 HTTP threads (and their OpenMP teams), arenas fill one by one and RSS
// crept up by 7 MiB over 10,000 requests of varying batch sizes (bench/RESULTS.md) without a
// leak. With one arena it stays flat (lifecycle_test.py's memory test); the per-thread caches
// (tcache) keep small allocations off the arena's lock, and tensors of 64 KiB and more come
// from the tensor allocator's cache (Note [Caching allocator] in core/storage.cpp) anyway.
int runServer(const ServeOptions& options) {
  // Signals go to one thread that sigwait()s; every thread started from here inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that goes away must not end the server
  // Note [Server memory]: one malloc arena, unless the user chose (MALLOC_ARENA_MAX).
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 1);

  Server server(options);
  server.discover();

  StopSignal stop;
  std::thread signals([&stop, set] {
    int sig = 0;
    sigwait(&set, &sig);
    std::lock_guard<std::mutex> lock(stop.mu);
    stop.signal = sig;
    stop.requested = true;
    stop.cv.notify_all();
  });
  signals.detach();

  std::unique_ptr<HttpFrontend> http;
  std::unique_ptr<GrpcFrontend> grpc;
  if (options.httpPort >= 0) {
    http = std::make_unique<HttpFrontend>(server);
    const int port = http->bind(options.host, options.httpPort);
    server.log(LogLevel::Info, fmt::format("HTTP listening on {}:{}", options.host, port));
    std::printf("HTTP port %d\n", port);
  }
  if (options.grpcPort >= 0) {
    grpc = std::make_unique<GrpcFrontend>(server);
    const int port = grpc->start(options.host, options.grpcPort);
    server.log(LogLevel::Info, fmt::format("gRPC listening on {}:{}", options.host, port));
    std::printf("gRPC port %d\n", port);
  }
  std::fflush(stdout);
  if (http) http->start();

  // Both frontends stop accepting at once; each returns when its in-flight requests are
  // answered (the workers still run); then the workers empty the queues and end.
  auto shutdown = [&] {
    server.setNotReady();
    std::thread grpcStop([&] {
      if (grpc) grpc->stop();
    });
    if (http) http->stop();
    grpcStop.join();
    server.drain();
  };
  try {
    server.loadModels(stop.requested);
  } catch (...) {
    shutdown();
    throw;
  }
  if (!stop.requested) server.log(LogLevel::Info, "server ready");
  {
    std::unique_lock<std::mutex> lock(stop.mu);
    stop.cv.wait(lock, [&] { return stop.requested.load(); });
  }
  server.log(LogLevel::Info, fmt::format("{}: stopping; answering accepted requests",
                                         stop.signal == SIGINT ? "SIGINT" : "SIGTERM"));
  shutdown();
  server.log(LogLevel::Info, "stopped");
  return 0;
}

}  // namespace torchless::serve
