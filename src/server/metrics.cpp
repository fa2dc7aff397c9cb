#include "server/metrics.h"

#include "core/storage.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include <memory>

namespace torchless::serve {

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::write(std::string& out, const std::string& name, const std::string& labels) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, count_);
  out += fmt::format("{}_sum{{{}}} {}\n", name, labels, sum_);
  out += fmt::format("{}_count{{{}}} {}\n", name, labels, count_);
}

namespace {
std::vector<double> secondsBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}
std::string modelLabel(const std::string& model) {
  std::string escaped;
  for (char c : model) {
    if (c == '\\' || c == '"') escaped += '\\';
    if (c == '\n') {
      escaped += "\\n";
      continue;
    }
    escaped += c;
  }
  return fmt::format("model=\"{}\"", escaped);
}
}  // namespace

ModelMetrics::ModelMetrics()
    : latency_(secondsBuckets()),
      queue_(secondsBuckets()),
      batch_({1, 2, 4, 8, 16, 32, 64, 128, 256}) {}

void ModelMetrics::request(int status, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++byStatus_[status];
  if (status == 200) latency_.observe(seconds);
}

void ModelMetrics::queued(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.observe(seconds);
}

void ModelMetrics::batch(int64_t rows) {
  std::lock_guard<std::mutex> lock(mu_);
  batch_.observe(static_cast<double>(rows));
}

void ModelMetrics::inFlight(int delta) {
  std::lock_guard<std::mutex> lock(mu_);
  inFlight_ += delta;
}

void ModelMetrics::writeInFlight(std::string& out, const std::string& model) const {
  std::lock_guard<std::mutex> lock(mu_);
  out += fmt::format("torchless_inference_requests_in_flight{{{}}} {}\n", modelLabel(model),
                     inFlight_);
}

void ModelMetrics::writeRequests(std::string& out, const std::string& model) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [status, n] : byStatus_)
    out += fmt::format("torchless_inference_requests_total{{{},status=\"{}\"}} {}\n",
                       modelLabel(model), status, n);
}
void ModelMetrics::writeLatency(std::string& out, const std::string& model) const {
  std::lock_guard<std::mutex> lock(mu_);
  latency_.write(out, "torchless_request_duration_seconds", modelLabel(model));
}
void ModelMetrics::writeQueue(std::string& out, const std::string& model) const {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.write(out, "torchless_queue_duration_seconds", modelLabel(model));
}
void ModelMetrics::writeBatch(std::string& out, const std::string& model) const {
  std::lock_guard<std::mutex> lock(mu_);
  batch_.write(out, "torchless_batch_size", modelLabel(model));
}

ModelMetrics& Metrics::model(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& m = models_[name];
  if (!m) m = std::make_unique<ModelMetrics>();
  return *m;
}

std::string Metrics::text() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  out += "# HELP torchless_inference_requests_total Inference requests by model and HTTP status.\n";
  out += "# TYPE torchless_inference_requests_total counter\n";
  for (const auto& [name, m] : models_) m->writeRequests(out, name);
  out +=
      "# HELP torchless_request_duration_seconds Successful inference requests, receipt to "
      "answer.\n";
  out += "# TYPE torchless_request_duration_seconds histogram\n";
  for (const auto& [name, m] : models_) m->writeLatency(out, name);
  out += "# HELP torchless_queue_duration_seconds Time a request waited for a model instance.\n";
  out += "# TYPE torchless_queue_duration_seconds histogram\n";
  for (const auto& [name, m] : models_) m->writeQueue(out, name);
  out +=
      "# HELP torchless_batch_size Rows per model execution (dynamic batching joins requests).\n";
  out += "# TYPE torchless_batch_size histogram\n";
  for (const auto& [name, m] : models_) m->writeBatch(out, name);
  out += "# HELP torchless_inference_requests_in_flight Requests accepted and not yet answered.\n";
  out += "# TYPE torchless_inference_requests_in_flight gauge\n";
  for (const auto& [name, m] : models_) m->writeInFlight(out, name);
  // The process (Prometheus' standard name) and the tensor allocator's cache: what memory
  // the server holds, to watch for growth.
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  out += "# HELP process_resident_memory_bytes Resident memory size in bytes.\n";
  out += "# TYPE process_resident_memory_bytes gauge\n";
  out += fmt::format("process_resident_memory_bytes {}\n",
                     static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE));
  out +=
      "# HELP torchless_allocator_cached_bytes Freed tensor blocks kept for reuse (Note [Caching "
      "allocator]).\n";
  out += "# TYPE torchless_allocator_cached_bytes gauge\n";
  out += fmt::format("torchless_allocator_cached_bytes {}\n", Storage::cachedBytes());
  return out;
}

}  // namespace torchless::serve
