#pragma once
// The execution side of a served model: a bounded queue of requests in front of a pool of
// model instances, one worker thread per instance, and dynamic batching.
//
// Note [Serving execution]
// - Threads. The server has a thread budget (--threads, default: the cores). Each instance's
//   worker runs its kernels on `threads` OpenMP threads (config.json's "threads", or the
//   budget shared out over every instance of every model, at least 1), so instances together
//   do not oversubscribe the cores.
// - Back-pressure. At most `capacity` requests wait per model; one more is refused at once
//   (HTTP 429, gRPC UNAVAILABLE) instead of queueing without bound.
// - Dynamic batching (Triton's): for a batchable model (ServedModel::batchable), a worker that
//   takes a request also takes the waiting requests whose tensors match it in dtype and in every
//   dimension but the first (and whose other arguments are equal), up to max_batch_size rows, waiting at most
//   max_queue_delay_microseconds after the first request arrived for more; their inputs are
//   concatenated along dimension 0, and every output, which must keep the batch as its first
//   dimension, is split back. When a joined execution fails, each request runs alone, so one
//   bad request fails only itself.
// - Shutdown. stop() lets the workers empty the queue, then joins them: every accepted request
//   is answered.

#include "server/metrics.h"
#include "server/model.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace torchless::serve {

/// What an execution gave one request.
struct Outcome {
  IValue result;
  double queueSeconds = 0;
  int64_t batchRows = 0;  // rows of the execution that answered it (0: not batched)
};

class Scheduler {
 public:
  /// Serves `model` (already loaded) with at most `capacity` waiting requests.
  Scheduler(ServedModel& model, size_t capacity, int threadsPerInstance, ModelMetrics& metrics);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// Starts one worker per instance.
  void start();
  /// Queues a request's bound arguments. The future gives the outcome, or throws ServeError
  /// (ModelFailed, BadRequest, Internal). Throws ServeError(Unavailable) when the queue is
  /// full or the scheduler is stopping.
  std::future<Outcome> submit(std::vector<IValue> args);
  /// Answers every queued request, then joins the workers. Idempotent.
  void stop();
  size_t queued() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Job {
    std::vector<IValue> args;
    int64_t rows = 0;
    std::promise<Outcome> promise;
    Clock::time_point enqueued;
  };
  void work(size_t instance);
  bool compatible(const Job& a, const Job& b) const;
  void runAlone(const Module& m, Job& job, int64_t batchRows);
  void runJoined(const Module& m, std::vector<std::unique_ptr<Job>>& jobs, int64_t rows);

  ServedModel& model_;
  size_t capacity_;
  int threads_;
  ModelMetrics& metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Job>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

/// Runs `m`'s forward on `args` and turns what it throws into a ServeError: the model's own
/// exception (prim::RaiseException) is ModelFailed (500), another torchless::Error (a kernel
/// refusing the inputs' shapes or dtypes) BadRequest (400), anything else Internal (500).
IValue runForward(const Module& m, std::vector<IValue> args, const std::string& modelName);

}  // namespace torchless::serve
