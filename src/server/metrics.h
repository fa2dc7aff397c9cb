#pragma once
// Prometheus metrics of the server (text exposition format 0.0.4 at GET /metrics), per model:
//   torchless_inference_requests_total{model,status}   counter, by HTTP status (gRPC maps to it)
//   torchless_request_duration_seconds{model}          histogram: receipt to answer
//   torchless_queue_duration_seconds{model}            histogram: waiting for an instance
//   torchless_batch_size{model}                        histogram: requests' rows per execution
//   torchless_inference_requests_in_flight{model}      gauge: accepted, not yet answered
//   process_resident_memory_bytes, torchless_allocator_cached_bytes   gauges of the process

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace torchless::serve {

/// A fixed-bucket histogram (Prometheus semantics: cumulative `le` buckets, _sum, _count).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds)
      : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  /// Appends the _bucket, _sum and _count lines of `name` with `labels` ("model=\"m\"").
  void write(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

/// The metrics of one model. Thread-safe.
class ModelMetrics {
 public:
  ModelMetrics();
  void request(int status, double seconds);
  void queued(double seconds);
  void batch(int64_t rows);
  /// A request was accepted (+1) or answered (-1).
  void inFlight(int delta);
  /// Appends this model's samples, one metric family at a time (see Metrics::text).
  void writeRequests(std::string& out, const std::string& model) const;
  void writeLatency(std::string& out, const std::string& model) const;
  void writeQueue(std::string& out, const std::string& model) const;
  void writeBatch(std::string& out, const std::string& model) const;
  void writeInFlight(std::string& out, const std::string& model) const;

 private:
  mutable std::mutex mu_;
  std::map<int, uint64_t> byStatus_;
  Histogram latency_, queue_, batch_;
  int64_t inFlight_ = 0;
};

/// All models' metrics.
class Metrics {
 public:
  /// The metrics of `model`, created on first use (names are fixed at start-up).
  ModelMetrics& model(const std::string& name);
  /// The exposition text.
  std::string text() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<ModelMetrics>> models_;
};

}  // namespace torchless::serve
