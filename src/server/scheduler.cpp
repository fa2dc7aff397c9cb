#include "server/scheduler.h"

#include "api/environment.h"
#include "core/error.h"

#include <fmt/format.h>

#include <cstring>

namespace torchless::serve {

namespace {
std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}
}  // namespace

IValue runForward(const Module& m, std::vector<IValue> args, const std::string& modelName) {
  try {
    return m.forward(std::move(args));
  } catch (const ModelError& e) {
    throw ServeError(ErrorKind::ModelFailed,
                     fmt::format("model '{}' raised: {}", modelName, trimmed(e.what())));
  } catch (const UnsupportedError& e) {
    throw ServeError(ErrorKind::Internal,
                     fmt::format("model '{}': {}", modelName, trimmed(e.what())));
  } catch (const Error& e) {
    throw ServeError(ErrorKind::BadRequest, fmt::format("model '{}' rejected the inputs: {}",
                                                        modelName, trimmed(e.what())));
  } catch (const std::bad_alloc&) {
    throw ServeError(ErrorKind::Internal, fmt::format("model '{}': out of memory", modelName));
  } catch (const std::exception& e) {
    throw ServeError(ErrorKind::Internal,
                     fmt::format("model '{}': {}", modelName, trimmed(e.what())));
  }
}

Scheduler::Scheduler(std::shared_ptr<const ServedModel> model, size_t capacity,
                     int threadsPerInstance, ModelMetrics& metrics)
    : model_(std::move(model)),
      batching_(model_->batchable()),
      capacity_(capacity),
      threads_(threadsPerInstance),
      metrics_(metrics),
      busy_(model_->instanceCount(), 0) {}

Scheduler::~Scheduler() { stop(); }

void Scheduler::start() {
  for (size_t i = 0; i < model_->instanceCount(); ++i)
    workers_.emplace_back([this, i] { work(i); });
}

size_t Scheduler::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

ServeError Scheduler::timeoutError(Clock::time_point enqueued, bool executing) const {
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - enqueued).count();
  return ServeError(
      ErrorKind::Timeout,
      executing
          ? fmt::format("model '{}': the request's timeout passed after {:.1f} ms while it was "
                        "executing; its result is dropped",
                        model_->name(), ms)
          : fmt::format("model '{}': the request's timeout passed after {:.1f} ms waiting in the "
                        "queue; it was not run",
                        model_->name(), ms));
}

Outcome Scheduler::run(std::vector<IValue> args, Clock::time_point deadline) {
  const auto enqueued = Clock::now();
  const bool hasDeadline = deadline != Clock::time_point::max();
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_)
    throw ServeError(ErrorKind::Unavailable, fmt::format("model '{}' is stopping", model_->name()));
  // A far deadline (a gRPC client's default one of minutes) cannot be missed by waiting on
  // this thread: the request runs here as one without a deadline would (Note [Serving
  // execution]).
  const Clock::duration slowest = slowestRecentForward();
  const bool farDeadline =
      hasDeadline && slowest.count() > 0 &&
      deadline - enqueued >= std::max<Clock::duration>(kNearDeadline, 20 * slowest);
  if (!batching_ && (!hasDeadline || farDeadline) && queue_.empty()) {
    // An idle instance and nothing waiting: run here, with no hand-off to a worker.
    for (size_t i = 0; i < busy_.size(); ++i) {
      if (busy_[i]) continue;
      busy_[i] = 1;
      lock.unlock();
      struct Release {  // the instance is idle again however forward ends
        Scheduler* s;
        size_t i;
        ~Release() {
          bool waiting;
          {
            std::lock_guard<std::mutex> l(s->mu_);
            s->busy_[i] = 0;
            waiting = !s->queue_.empty() || s->stopping_;
          }
          if (waiting) s->cv_.notify_all();
        }
      } release{this, i};
      metrics_.queued(0);
      torchless::setNumThreads(threads_);  // the calling thread's OpenMP team
      Outcome o;
      o.batchRows = model_->requestRows(args);
      const auto f0 = Clock::now();
      o.result = runForward(model_->instance(i), std::move(args), model_->name());
      const auto f1 = Clock::now();
      o.forwardSeconds = std::chrono::duration<double>(f1 - f0).count();
      noteForward(f1 - f0);
      if (f1 > deadline) throw timeoutError(enqueued, true);
      return o;
    }
  }
  auto job = std::make_unique<Job>();
  job->rows = model_->batchSize(args);
  job->args = std::move(args);
  job->enqueued = enqueued;
  job->deadline = deadline;
  Job* const raw = job.get();
  std::future<Outcome> f = job->promise.get_future();
  if (queue_.size() >= capacity_)
    throw ServeError(
        ErrorKind::Unavailable,
        fmt::format("model '{}' has {} requests waiting (its queue is full); retry later",
                    model_->name(), queue_.size()));
  queue_.push_back(std::move(job));
  lock.unlock();
  cv_.notify_all();  // a worker gathering a batch and an idle one may both want it
  if (hasDeadline && f.wait_until(deadline) == std::future_status::timeout) {
    lock.lock();
    for (auto it = queue_.begin(); it != queue_.end(); ++it)
      if (it->get() == raw) {
        queue_.erase(it);
        throw timeoutError(enqueued, false);
      }
    lock.unlock();
    // A worker took it: answer at the deadline unless the answer is there already.
    if (f.wait_for(std::chrono::seconds(0)) == std::future_status::timeout)
      throw timeoutError(enqueued, true);
  }
  return f.get();
}

void Scheduler::noteForward(Clock::duration took) {
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(took).count();
  std::lock_guard<std::mutex> lock(forwardsMu_);
  if (windowForwards_ == kForwardWindow) {  // a new window; the one before the last is dropped
    windowSlowestNs_[1] = windowSlowestNs_[0];
    windowSlowestNs_[0] = 0;
    windowForwards_ = 0;
  }
  windowSlowestNs_[0] = std::max(windowSlowestNs_[0], ns);
  ++windowForwards_;
}

Scheduler::Clock::duration Scheduler::slowestRecentForward() const {
  std::lock_guard<std::mutex> lock(forwardsMu_);
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::nanoseconds(std::max(windowSlowestNs_[0], windowSlowestNs_[1])));
}

void Scheduler::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_)
    if (w.joinable()) w.join();
  workers_.clear();
}

bool Scheduler::compatible(const Job& a, const Job& b) const {
  if (a.args.size() != b.args.size()) return false;
  for (size_t i = 0; i < a.args.size(); ++i) {
    const IValue &u = a.args[i], &v = b.args[i];
    if (!u.isTensor() || !v.isTensor()) {
      // Values that are not batched must be the same in every joined request.
      if (u.isNone() && v.isNone()) continue;
      if (u.isInt() && v.isInt() && u.toInt() == v.toInt()) continue;
      if (u.isDouble() && v.isDouble() && u.toDouble() == v.toDouble()) continue;
      if (u.isBool() && v.isBool() && u.toBool() == v.toBool()) continue;
      return false;
    }
    const Tensor x = a.args[i].toTensor(), y = b.args[i].toTensor();
    if (x.dtype() != y.dtype() || x.dim() != y.dim() || x.dim() == 0) return false;
    for (int64_t d = 1; d < x.dim(); ++d)
      if (x.size(d) != y.size(d)) return false;
  }
  return true;
}

void Scheduler::runAlone(const Module& m, Job& job, int64_t batchRows) {
  const double queued = std::chrono::duration<double>(Clock::now() - job.enqueued).count();
  try {
    Outcome o;
    o.queueSeconds = queued;
    o.batchRows = batchRows;
    const auto f0 = Clock::now();
    o.result = runForward(m, std::move(job.args), model_->name());
    o.forwardSeconds = std::chrono::duration<double>(Clock::now() - f0).count();
    noteForward(Clock::now() - f0);
    job.promise.set_value(std::move(o));
  } catch (...) {
    job.promise.set_exception(std::current_exception());
  }
}

namespace {

// Rows [begin, begin + n) of a contiguous tensor, copied.
Tensor rows(const Tensor& t, int64_t begin, int64_t n) {
  IntList sizes = t.sizes();
  sizes[0] = n;
  Tensor out = Tensor::empty(sizes, t.dtype());
  const size_t rowBytes = t.numel() == 0 ? 0 : t.nbytes() / static_cast<size_t>(t.size(0));
  if (rowBytes != 0 && n != 0)
    std::memcpy(out.rawData(), static_cast<const char*>(t.rawData()) + rowBytes * begin,
                rowBytes * n);
  return out;
}

}  // namespace

void Scheduler::runJoined(const Module& m, std::vector<std::unique_ptr<Job>>& jobs, int64_t total) {
  const auto start = Clock::now();
  std::vector<IValue> args;
  const size_t nargs = jobs[0]->args.size();
  for (size_t k = 0; k < nargs; ++k) {
    if (!jobs[0]->args[k].isTensor()) {
      args.push_back(jobs[0]->args[k]);
      continue;
    }
    const Tensor first = jobs[0]->args[k].toTensor();
    IntList sizes = first.sizes();
    sizes[0] = total;
    Tensor joined = Tensor::empty(sizes, first.dtype());
    char* dst = static_cast<char*>(joined.rawData());
    for (auto& j : jobs) {
      const Tensor t = j->args[k].toTensor().contiguous();
      if (t.nbytes()) std::memcpy(dst, t.rawData(), t.nbytes());
      dst += t.nbytes();
    }
    args.push_back(IValue(joined));
  }
  IValue result;
  std::string failure;
  const auto f0 = Clock::now();
  try {
    result = runForward(m, std::move(args), model_->name());
  } catch (const ServeError& e) {
    failure = e.what();
  }
  const double forwardSeconds = std::chrono::duration<double>(Clock::now() - f0).count();
  noteForward(Clock::now() - f0);
  // Split every output back along dimension 0.
  std::vector<Tensor> outs;
  bool tuple = false;
  if (failure.empty()) {
    if (result.isTensor()) {
      outs.push_back(result.toTensor().contiguous());
    } else if (result.isTuple()) {
      tuple = true;
      for (const auto& e : result.toTuple()->elements) {
        if (!e.isTensor()) {
          failure = "an output is not a tensor";
          break;
        }
        outs.push_back(e.toTensor().contiguous());
      }
    } else {
      failure = "the result is not a tensor or a tuple of tensors";
    }
    for (const auto& t : outs)
      if (failure.empty() && (t.dim() == 0 || t.size(0) != total))
        failure = fmt::format("an output's first dimension is not the batch of {}", total);
  }
  if (!failure.empty()) {
    // One request may be the cause: each runs alone and fails, or not, by itself.
    for (auto& j : jobs) runAlone(m, *j, j->rows);
    return;
  }
  int64_t at = 0;
  for (auto& j : jobs) {
    Outcome o;
    o.queueSeconds = std::chrono::duration<double>(start - j->enqueued).count();
    o.forwardSeconds = forwardSeconds;
    o.batchRows = total;
    if (tuple) {
      std::vector<IValue> parts;
      for (const auto& t : outs) parts.push_back(IValue(rows(t, at, j->rows)));
      o.result = IValue(TupleImpl::create(std::move(parts)));
    } else {
      o.result = IValue(rows(outs[0], at, j->rows));
    }
    at += j->rows;
    j->promise.set_value(std::move(o));
  }
}

void Scheduler::work(size_t instance) {
  torchless::setNumThreads(threads_);
  const Module& m = model_->instance(instance);
  const ModelConfig& c = model_->config();
  std::unique_lock<std::mutex> lock(mu_);
  Clock::time_point freeSince = Clock::now();  // when this instance last became idle
  while (true) {
    // Wait for work this instance can take (a request's thread may be using it); at a stop,
    // end once the queue is empty.
    cv_.wait(lock, [&] {
      return (stopping_ && queue_.empty()) || (!queue_.empty() && !busy_[instance]);
    });
    if (queue_.empty()) return;  // stopping, and nothing left
    std::vector<std::unique_ptr<Job>> jobs;
    jobs.push_back(std::move(queue_.front()));
    queue_.pop_front();
    const auto now = Clock::now();
    if (jobs[0]->deadline <= now) {  // its waiter is giving up; do not run it
      jobs[0]->promise.set_exception(
          std::make_exception_ptr(timeoutError(jobs[0]->enqueued, false)));
      continue;
    }
    busy_[instance] = 1;
    int64_t total = jobs[0]->rows;
    if (batching_ && total > 0 && total < c.maxBatchSize) {
      // Gather for at most the delay after the oldest request came, or after the instance became
      // idle when the request waited for it (Note [Serving execution]).
      const auto deadline =
          std::max(jobs[0]->enqueued, freeSince) + std::chrono::microseconds(c.maxQueueDelayUs);
      while (true) {
        for (auto it = queue_.begin(); it != queue_.end() && total < c.maxBatchSize;) {
          if ((*it)->rows > 0 && total + (*it)->rows <= c.maxBatchSize &&
              compatible(*jobs[0], **it)) {
            total += (*it)->rows;
            jobs.push_back(std::move(*it));
            it = queue_.erase(it);
          } else {
            ++it;
          }
        }
        if (total >= c.maxBatchSize || stopping_ || Clock::now() >= deadline) break;
        cv_.wait_until(lock, deadline);
      }
    }
    lock.unlock();
    if (jobs.size() == 1) {
      metrics_.queued(std::chrono::duration<double>(Clock::now() - jobs[0]->enqueued).count());
      if (batching_) metrics_.batch(std::max<int64_t>(total, 1));
      runAlone(m, *jobs[0], total);
    } else {
      for (auto& j : jobs)
        metrics_.queued(std::chrono::duration<double>(Clock::now() - j->enqueued).count());
      metrics_.batch(total);
      runJoined(m, jobs, total);
    }
    jobs.clear();
    lock.lock();
    busy_[instance] = 0;
    freeSince = Clock::now();
  }
}

}  // namespace torchless::serve
