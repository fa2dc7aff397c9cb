#pragma once
// The execution side of a served model: a bounded queue of requests in front of a pool of
// model instances, one worker thread per instance, and dynamic batching.
//
// Note [Serving execution]
// - Threads. The server has a thread budget (--threads, default: the cores). Each instance's
//   worker runs its kernels on `threads` OpenMP threads (config.json's "threads", or the
//   budget shared out over every instance of every model, at least 1), so instances together
//   do not oversubscribe the cores; when config.json's threads (or more instances than the
//   budget has threads) make them add up to more, the server says so at load
//   (Server::checkThreadBudget). An instance executes one request (or one joined batch) at a
//   time, wherever it runs (its worker, or a request's thread: below), so at most
//   instances x threads threads compute at once. OpenMP (libgomp) keeps a team per thread that
//   starts parallel regions: each HTTP/gRPC thread that ran a forward keeps threads - 1 idle
//   team threads, which spin ~20 us and then sleep (GOMP_SPINCOUNT=1000, Note [OpenMP wait
//   policy] in tools/launcher/launcher.cpp) and cost no CPU between requests.
// - Back-pressure. At most `capacity` requests wait per model; one more is refused at once
//   (HTTP 429, gRPC UNAVAILABLE) instead of queueing without bound.
// - Dynamic batching (Triton's): for a batchable model (ServedModel::batchable), a worker that
//   takes a request also takes the waiting requests whose tensors match it in dtype and in every
//   dimension but the first (and whose other arguments are equal), up to max_batch_size rows,
//   waiting at most max_queue_delay_microseconds for more after the first request arrived or, when
//   it had to wait for the instance, after the instance became idle; their inputs are concatenated
//   along dimension 0, and every output, which must keep the batch as its first dimension, is split
//   back. When a joined execution fails, each request runs alone, so one bad request fails only
//   itself. Why the delay restarts when the instance becomes idle: with the delay counted from the
//   oldest request only, requests that waited through an execution have used it up, so an
//   idle instance ran at once whatever had come by then. Closed-loop clients (8 of them, one
//   instance) then fell into batches alternating 3 and 5 rows instead of 8 (resnet18: 0.7x the
//   throughput of no batching, bench/RESULTS.md), the straggler batch running while the others'
//   next requests were arriving. A request waits at most its time in a busy queue plus the delay.
// - No hand-off when there is nothing to gather. Without dynamic batching, a request that finds
//   the queue empty and an instance idle runs on the thread that received it (the HTTP or gRPC
//   thread), as `torchless bench` runs it; only a request that must wait is queued for an
//   instance's worker. A request whose deadline is near (under 1 s away, or under 20 times the
//   slowest of the last 64-128 forwards, or any deadline before a request of the model ran) is
//   always queued, so
//   that its waiter can give up at the deadline; a far one (grpcio's `timeout=120`, a client's
//   default deadline) runs on the request thread as a request without one does, and is answered
//   Timeout if the forward ends after it (its result dropped, as when a worker's execution passes
//   the deadline). Measured (bench/RESULTS.md, session 9): the forward costs the same on the
//   request thread as in `torchless bench`'s loop, and handing it to the instance's worker made it
//   slower (the worker's caches are colder than the thread that just read the request) and added
//   0.5-1 ms of wake-ups; what a served resnet18 request adds is the HTTP path (about 38 system
//   calls, httplib reading the body 4 KB at a time, each costly on this VM) running with the caches
//   the forward left, and, after the server idled, the forward itself paying again for what a first
//   call pays (a plain loop of forwards shows the same after a sleep).
// - Timeouts (Triton's request parameter `timeout`). A queued request whose deadline passes is
//   taken out of the queue and answered ErrorKind::Timeout; one that is already executing is
//   answered Timeout at the deadline too, and its result is dropped when it comes (an execution
//   cannot be interrupted).
// - Shutdown. stop() lets the workers empty the queue, then joins them: every accepted request
//   is answered.

#include "server/metrics.h"
#include "server/model.h"

#include <atomic>
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
  double forwardSeconds = 0;  // the execution's forward (a joined batch's, when batched)
  int64_t batchRows = 0;      // rows of the execution that answered it (0: the model has no batch)
};

class Scheduler {
 public:
  using Clock = std::chrono::steady_clock;
  /// Serves `model` (already loaded) with at most `capacity` waiting requests.
  Scheduler(std::shared_ptr<const ServedModel> model, size_t capacity, int threadsPerInstance,
            ModelMetrics& metrics);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// Starts one worker per instance.
  void start();
  /// Runs a request's bound arguments: at once on the calling thread when no batching is
  /// configured, the queue is empty, an instance is idle and there is no deadline; otherwise
  /// through the queue, waiting at most until `deadline` (Clock::time_point::max(): none).
  /// Throws ServeError: Unavailable when the queue is full or the scheduler is stopping,
  /// Timeout when the deadline passes first, and what runForward throws.
  Outcome run(std::vector<IValue> args, Clock::time_point deadline);
  /// Answers every queued request, then joins the workers. Idempotent.
  void stop();
  size_t queued() const;

 private:
  struct Job {
    std::vector<IValue> args;
    int64_t rows = 0;
    std::promise<Outcome> promise;
    Clock::time_point enqueued;
    Clock::time_point deadline = Clock::time_point::max();
  };
  void work(size_t instance);
  bool compatible(const Job& a, const Job& b) const;
  void runAlone(const Module& m, Job& job, int64_t batchRows);
  void runJoined(const Module& m, std::vector<std::unique_ptr<Job>>& jobs, int64_t rows);

  ServeError timeoutError(Clock::time_point enqueued, bool executing) const;
  /// Remembers the slowest of the recent forwards (what decides whether a deadline is far).
  void noteForward(Clock::duration took);
  /// The slowest of the last kForwardWindow to 2 * kForwardWindow forwards (0 before any).
  Clock::duration slowestRecentForward() const;
  /// Forwards per window of slowestRecentForward(): one slow forward (a first call, a page
  /// fault storm, a core taken by another process) stops counting after 2 windows instead of
  /// queueing every deadline under 20 times it for the server's lifetime.
  static constexpr uint64_t kForwardWindow = 64;
  /// Deadlines nearer than this (or than 20 slowest forwards) are queued: Note [Serving
  /// execution].
  static constexpr Clock::duration kNearDeadline = std::chrono::seconds(1);
  std::shared_ptr<const ServedModel> model_;
  bool batching_;
  size_t capacity_;
  int threads_;
  ModelMetrics& metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Job>> queue_;
  std::vector<char> busy_;  // per instance: executing (on its worker or on a request's thread)
  mutable std::mutex forwardsMu_;        // the two windows below
  int64_t windowSlowestNs_[2] = {0, 0};  // the current window's, the previous one's
  uint64_t windowForwards_ = 0;          // forwards in the current window
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

/// Runs `m`'s forward on `args` and turns what it throws into a ServeError: the model's own
/// exception (prim::RaiseException) is ModelFailed (500), another torchless::Error (a kernel
/// refusing the inputs' shapes or dtypes) BadRequest (400), anything else Internal (500).
IValue runForward(const Module& m, std::vector<IValue> args, const std::string& modelName);

}  // namespace torchless::serve
