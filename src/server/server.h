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
// SIGTERM or SIGINT: readiness drops, the ports stop accepting, every accepted request is
// answered (Note [Serving execution] in server/scheduler.h), exit 0.

#include "server/metrics.h"
#include "server/model.h"
#include "server/protocol.h"
#include "server/scheduler.h"

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torchless::serve {

enum class LogLevel { Error = 0, Warning = 1, Info = 2 };

/// The command line of `torchless serve`.
struct ServeOptions {
  std::string repository;                                  // may be empty with --model
  std::vector<std::pair<std::string, std::string>> models; // --model NAME=PATH
  std::string host = "127.0.0.1";
  int httpPort = 8000;  // 0: a free port; -1: no HTTP
  int grpcPort = 8001;  // 0: a free port; -1: no gRPC
  int threads = 0;      // the thread budget (0: the cores)
  int64_t maxQueue = 64;
  int64_t maxBodyBytes = 64 << 20;
  int httpThreads = 16;
  LogLevel logLevel = LogLevel::Info;
};

/// The protocol-neutral server both frontends call. Thread-safe once started.
class Server {
 public:
  explicit Server(const ServeOptions& options);
  ~Server();

  const ServeOptions& options() const { return options_; }
  bool ready() const { return ready_.load(); }
  /// The model `name` at `version` ("" = the served one). Throws ServeError(NotFound).
  const ServedModel& find(const std::string& name, const std::string& version) const;
  /// True when the model exists and is ready; throws ServeError(NotFound) when it does not exist.
  bool modelReady(const std::string& name, const std::string& version) const;
  ModelMetadata metadata(const std::string& name, const std::string& version) const;
  /// Runs one inference, recording metrics and the log line. Throws ServeError.
  InferResponse infer(const InferRequest& request, const char* protocol);
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
  ServeOptions options_;
  std::vector<ModelSource> sources_;
  std::map<std::string, std::unique_ptr<ServedModel>> models_;
  std::map<std::string, std::unique_ptr<Scheduler>> schedulers_;
  Metrics metrics_;
  std::atomic<bool> ready_{false};
};

/// Runs `torchless serve` until SIGTERM/SIGINT. Returns the exit code (0 after a graceful
/// stop); throws torchless::Error for a bad repository, a port that cannot be bound, or a
/// model that does not load.
int runServer(const ServeOptions& options);

}  // namespace torchless::serve
