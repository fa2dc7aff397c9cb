#include "server/server.h"

#include "core/error.h"
#include "server/grpc_frontend.h"
#include "server/http_frontend.h"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <pthread.h>
#include <thread>

namespace torchless::serve {

Server::Server(const ServeOptions& options) : options_(options) {}

Server::~Server() { drain(); }

void Server::log(LogLevel level, const std::string& line) const {
  if (static_cast<int>(level) > static_cast<int>(options_.logLevel)) return;
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  static const char* kLevels[] = {"error", "warning", "info"};
  // One write per line, so lines of concurrent requests never interleave.
  const std::string text = fmt::format("ts={:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z level={} {}\n", tm.tm_year + 1900,
                                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms,
                                       kLevels[static_cast<int>(level)], line);
  std::fwrite(text.data(), 1, text.size(), stderr);
}

namespace {
// logfmt quoting.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out + "\"";
}
}  // namespace

const ServedModel& Server::find(const std::string& name, const std::string& version) const {
  auto it = models_.find(name);
  if (it == models_.end()) throw ServeError(ErrorKind::NotFound, fmt::format("unknown model '{}'", name));
  if (!version.empty() && version != it->second->version())
    throw ServeError(ErrorKind::NotFound, fmt::format("model '{}' has no version '{}' (serving version {})", name,
                                                      version, it->second->version()));
  return *it->second;
}

bool Server::modelReady(const std::string& name, const std::string& version) const {
  return find(name, version).ready();
}

ModelMetadata Server::metadata(const std::string& name, const std::string& version) const {
  const ServedModel& m = find(name, version);
  if (!m.ready()) throw ServeError(ErrorKind::Unavailable, fmt::format("model '{}' is loading", name));
  return m.metadata();
}

void Server::logFailure(const char* protocol, const std::string& model, const ServeError& e) {
  auto it = models_.find(model);
  if (it != models_.end()) metrics_.model(model).request(e.httpStatus(), 0);
  log(e.kind() == ErrorKind::Internal ? LogLevel::Error : LogLevel::Info,
      fmt::format("protocol={} model={} status={} error={}", protocol, quoted(model), e.httpStatus(), quoted(e.what())));
}

InferResponse Server::infer(const InferRequest& request, const char* protocol) {
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const ServedModel* model = nullptr;
  try {
    model = &find(request.model, request.version);
    if (!model->ready()) throw ServeError(ErrorKind::Unavailable, fmt::format("model '{}' is loading", request.model));
    Scheduler& scheduler = *schedulers_.at(request.model);
    std::vector<IValue> args = model->bindInputs(request);
    ModelMetrics& mm = metrics_.model(model->name());
    std::future<Outcome> f = scheduler.submit(std::move(args));
    mm.inFlight(1);
    Outcome o;
    try {
      o = f.get();
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
    metrics_.model(model->name()).request(200, s);
    log(LogLevel::Info, fmt::format("protocol={} model={} version={} id={} status=200 duration_ms={:.3f} queue_ms={:.3f} batch={}",
                                    protocol, quoted(model->name()), model->version(), quoted(request.id), s * 1e3,
                                    o.queueSeconds * 1e3, o.batchRows));
    return r;
  } catch (const ServeError& e) {
    if (model) metrics_.model(model->name()).request(e.httpStatus(), seconds());
    log(e.kind() == ErrorKind::Internal ? LogLevel::Error : LogLevel::Info,
        fmt::format("protocol={} model={} id={} status={} duration_ms={:.3f} error={}", protocol, quoted(request.model),
                    quoted(request.id), e.httpStatus(), seconds() * 1e3, quoted(e.what())));
    throw;
  }
}

void Server::discover() {
  sources_.clear();
  if (!options_.repository.empty()) sources_ = scanRepository(options_.repository);
  for (const auto& [name, path] : options_.models) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) throw Error("--model: no such file", path);
    ModelSource s;
    s.name = name;
    s.version = "1";
    s.path = path;
    sources_.push_back(std::move(s));
  }
  if (sources_.empty()) throw Error("nothing to serve: give a model repository or --model NAME=MODEL.pt");
  for (const auto& s : sources_) {
    if (models_.count(s.name)) throw Error(fmt::format("model '{}' is given twice", s.name), s.path);
    models_[s.name] = std::make_unique<ServedModel>(s);
    schedulers_[s.name] = nullptr;
  }
}

void Server::loadModels(const std::atomic<bool>& stop) {
  int budget = options_.threads > 0 ? options_.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int instances = 0;
  for (const auto& [name, m] : models_) instances += m->config().instances;
  const int share = std::max(1, budget / std::max(1, instances));
  for (auto& [name, m] : models_) {
    if (stop) return;
    const auto start = std::chrono::steady_clock::now();
    try {
      m->load();
    } catch (Error& e) {
      e.addContext(fmt::format("while loading model '{}'", name));
      throw;
    }
    const int threads = m->config().threads > 0 ? m->config().threads : share;
    const std::string warm = m->warmUp();
    if (!warm.empty())
      log(LogLevel::Warning, fmt::format("model={} warm-up call on zeros failed (requests will still run): {}", quoted(name), quoted(warm)));
    const size_t capacity = static_cast<size_t>(m->config().maxQueueSize > 0 ? m->config().maxQueueSize : options_.maxQueue);
    auto scheduler = std::make_unique<Scheduler>(*m, capacity, threads, metrics_.model(name));
    scheduler->start();
    schedulers_[name] = std::move(scheduler);
    m->setReady(true);
    log(LogLevel::Info, fmt::format("model={} version={} ready: loaded{} in {:.2f} s, {} instance{} x {} thread{}, queue {}{}",
                                    quoted(name), m->version(), m->config().compile ? " and compiled" : "",
                                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                                    m->instanceCount(), m->instanceCount() == 1 ? "" : "s", threads, threads == 1 ? "" : "s",
                                    capacity, m->batchable() ? fmt::format(", dynamic batching up to {}", m->config().maxBatchSize) : ""));
  }
  ready_ = true;
}

void Server::drain() {
  for (auto& [name, s] : schedulers_)
    if (s) s->stop();
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

int runServer(const ServeOptions& options) {
  // Signals go to one thread that sigwait()s; every thread started from here inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that goes away must not end the server

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
  server.log(LogLevel::Info, fmt::format("{}: stopping; answering accepted requests", stop.signal == SIGINT ? "SIGINT" : "SIGTERM"));
  shutdown();
  server.log(LogLevel::Info, "stopped");
  return 0;
}

}  // namespace torchless::serve
