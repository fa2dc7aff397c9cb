#pragma once
// `torchless serve`: the Open Inference Protocol (KServe v2) over HTTP/REST and gRPC.
//
//   torchless serve REPOSITORY [--model NAME=MODEL.pt ...] [--http-port 8000] [--grpc-port 8001]
//                   [--host 127.0.0.1] [--threads N] [--max-queue N] [--max-body-bytes N]
//                   [--log-level info]
//
// Start-up: the models are found (Note [Model repository] in server/model.h), the HTTP and gRPC
// ports are bound (0 picks a free port; the chosen ports are printed), then the models load;
// /v2/health/live answers from the start, /v2/health/ready only once every model is loaded.
// Triton's model repository extension (Note [Repository API] below) loads, reloads and unloads
// models while the server runs.
// SIGTERM or SIGINT: readiness drops, the ports stop accepting, every accepted request is
// answered (Note [Serving execution] in server/scheduler.h), exit 0.

#include "server/metrics.h"
#include "server/model.h"
#include "server/protocol.h"
#include "server/scheduler.h"

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace torchless::serve {

enum class LogLevel { Error = 0, Warning = 1, Info = 2 };

/// The command line of `torchless serve`.
struct ServeOptions {
  std::string repository;                                   // may be empty with --model
  std::vector<std::pair<std::string, std::string>> models;  // --model NAME=PATH
  std::string host = "127.0.0.1";
  int httpPort = 8000;  // 0: a free port; -1: no HTTP
  int grpcPort = 8001;  // 0: a free port; -1: no gRPC
  int threads = 0;      // the thread budget (0: the cores)
  int64_t maxQueue = 64;
  int64_t maxBodyBytes = 64 << 20;
  int httpThreads = 16;
  LogLevel logLevel = LogLevel::Info;
};

// Note [Repository API]
// Triton's model repository extension, in its EXPLICIT model control mode's semantics, on top of
// loading every model at start-up (its default mode):
// - index: every model of the repository directory (and every --model), loaded or not, with its
//   version, state (READY, LOADING, UNAVAILABLE) and the reason of the last failed load;
// - load NAME: reads NAME's directory again (the highest version, config.json), loads and warms up
//   new instances while the current ones go on serving, then swaps them in; the old instances
//   answer what they had queued. A load that fails leaves the model as it was and answers 400
//   with the reason. A name that is not a model of the repository is NOT_FOUND.
// - unload NAME: new requests are refused (400, "not loaded"); queued ones are answered.
// One load or unload runs at a time.

/// One model of the repository index (Triton's model repository extension).
struct ModelIndexEntry {
  std::string name;
  std::string version;  // "" when no version is known
  std::string state;    // READY, LOADING or UNAVAILABLE
  std::string reason;
};

/// The protocol-neutral server both frontends call. Thread-safe once started.
class Server {
 public:
  explicit Server(const ServeOptions& options);
  ~Server();

  const ServeOptions& options() const { return options_; }
  bool ready() const { return ready_.load(); }
  /// True when the model is loaded and ready; throws ServeError(NotFound) when the server
  /// knows no such model or version.
  bool modelReady(const std::string& name, const std::string& version) const;
  /// Throws ServeError(NotFound) for a model not known or not loaded, (Unavailable) loading.
  ModelMetadata metadata(const std::string& name, const std::string& version) const;
  /// Runs one inference, recording metrics and the log line. The request's deadline is the
  /// earliest of its `timeout` (or its model's default), and `transportDeadline` (gRPC's
  /// deadline). Throws ServeError.
  InferResponse infer(const InferRequest& request, const char* protocol,
                      std::chrono::steady_clock::time_point transportDeadline =
                          std::chrono::steady_clock::time_point::max());

  /// Note [Repository API]. Throw ServeError: NotFound for a name that is neither a model of
  /// the repository nor a --model, BadRequest for a load that fails (naming why), Unavailable
  /// while the server stops.
  std::vector<ModelIndexEntry> repositoryIndex(bool readyOnly) const;
  void loadModel(const std::string& name);
  void unloadModel(const std::string& name);
  /// Records a request that failed before it reached infer() (malformed body ...).
  void logFailure(const char* protocol, const std::string& model, const ServeError& e);
  std::string metricsText() const { return metrics_.text(); }

  /// Finds the models (throws torchless::Error), then loads them one by one, marking each
  /// ready; the server is ready when all are. Throws torchless::Error naming the model.
  void discover();
  void loadModels(const std::atomic<bool>& stop);
  /// Drops readiness.
  void setNotReady() { ready_ = false; }
  /// Answers every queued request and stops the workers.
  void drain();

  void log(LogLevel level, const std::string& line) const;

 private:
  /// A model the server knows, loaded or not.
  struct Slot {
    ModelSource source;
    std::shared_ptr<ServedModel> model;  // null when not loaded
    std::shared_ptr<Scheduler> scheduler;
    std::string state = "UNAVAILABLE";
    std::string reason;
  };
  /// A loaded model and its scheduler (kept alive by whoever holds them).
  struct Loaded {
    std::shared_ptr<ServedModel> model;
    std::shared_ptr<Scheduler> scheduler;
  };
  /// The loaded model `name` at `version` ("" = the served one). Throws ServeError(NotFound).
  Loaded find(const std::string& name, const std::string& version) const;
  /// Loads, compiles and warms up `source`'s instances and starts their scheduler. Throws.
  Loaded build(const ModelSource& source);
  /// The source of `name` as the repository (read again) or --model gives it. Throws ServeError.
  ModelSource sourceOf(const std::string& name) const;
  /// Logs a warning when the loaded models' instances x threads add up to more than the thread
  /// budget (Note [Serving execution] in server/scheduler.h): then busy instances oversubscribe
  /// the cores.
  void checkThreadBudget() const;

  ServeOptions options_;
  mutable std::mutex mu_;  // slots_
  std::map<std::string, Slot> slots_;
  std::mutex loadMu_;      // one load or unload at a time
  bool draining_ = false;  // under loadMu_
  int budget_ = 1;         // --threads, or the cores
  int share_ = 1;          // threads per instance when config.json gives none
  Metrics metrics_;
  std::atomic<bool> ready_{false};
};

/// Runs `torchless serve` until SIGTERM/SIGINT. Returns the exit code (0 after a graceful
/// stop); throws torchless::Error for a bad repository, a port that cannot be bound, or a
/// model that does not load.
int runServer(const ServeOptions& options);

}  // namespace torchless::serve
