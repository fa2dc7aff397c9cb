#include "ops/dnnl_utils.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>

namespace torchless::ops::dnnl_utils {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

dnnl::memory::desc stridedDesc(const Tensor& t) {
  dnnl::memory::dims dims(t.sizes().begin(), t.sizes().end());
  dnnl::memory::dims strides(t.strides().begin(), t.strides().end());
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

dnnl::memory wrap(const dnnl::memory::desc& md, const Tensor& t) {
  return dnnl::memory(md, engine(), t.rawData());
}

dnnl::primitive_attr userScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void* threadScratchpad(size_t bytes) {
  // Not a Storage: its cache of large blocks would keep every smaller size it grew through.
  struct Buffer {
    void* data = nullptr;
    size_t bytes = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffer;
  if (buffer.bytes < bytes) {
    std::free(buffer.data);
    buffer.bytes = 0;
    buffer.data = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (buffer.data == nullptr) throw std::bad_alloc();
    buffer.bytes = bytes;
  }
  return buffer.data;
}

void execute(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory>& args) {
  const dnnl_memory_desc_t* md =
      dnnl_primitive_desc_query_md(prim.get_primitive_desc(), dnnl_query_scratchpad_md, 0);
  if (md != nullptr) {
    dnnl::memory::desc scratch(*md);
    if (const size_t bytes = scratch.get_size(); bytes > 0)
      args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(scratch, engine(), threadScratchpad(bytes));
  }
  prim.execute(stream(), args);
  stream().wait();
}

namespace {

constexpr size_t kMaxCachedPrimitives = 1024;

struct PrimitiveKeyHash {
  size_t operator()(const PrimitiveKey& k) const {
    size_t h = 1469598103934665603ull;
    for (int64_t x : k) h = (h ^ static_cast<size_t>(x)) * 1099511628211ull;
    return h;
  }
};

std::mutex gPrimMu;
std::unordered_map<PrimitiveKey, std::shared_ptr<dnnl::primitive>, PrimitiveKeyHash>& primitives() {
  static auto* m =
      new std::unordered_map<PrimitiveKey, std::shared_ptr<dnnl::primitive>, PrimitiveKeyHash>();
  return *m;
}

}  // namespace

std::shared_ptr<dnnl::primitive> findPrimitive(const PrimitiveKey& key) {
  std::lock_guard<std::mutex> lock(gPrimMu);
  auto& m = primitives();
  auto it = m.find(key);
  return it == m.end() ? nullptr : it->second;
}

std::shared_ptr<dnnl::primitive> storePrimitive(const PrimitiveKey& key, dnnl::primitive prim) {
  auto p = std::make_shared<dnnl::primitive>(std::move(prim));
  std::lock_guard<std::mutex> lock(gPrimMu);
  auto& m = primitives();
  if (m.size() >= kMaxCachedPrimitives) m.clear();
  m[key] = p;
  return p;
}

}  // namespace torchless::ops::dnnl_utils
