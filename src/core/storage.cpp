#include "core/storage.h"

#include "core/error.h"
#include "core/memory_budget.h"
#include "core/prefault.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include <sys/mman.h>

namespace torchless {
namespace {

// Note [Caching allocator]
// Inference allocates the same few activation sizes on every call. glibc serves blocks above
// its mmap threshold with mmap/munmap, so each fresh activation page-faults (a third of a
// convnet's time before this cache). Blocks of at least kMinCachedBytes are rounded up to a
// size class (a multiple of 1/8 of their power of two, at most 12.5% slack) and, when freed,
// kept on a free list of that class instead of going back to the system; the next allocation
// of that class reuses one. At most kMaxCachedBytes are kept idle: a block freed beyond that
// goes back to the system. When the class asked for has no idle block, the smallest idle
// block of a larger class up to twice its size is taken instead of fresh memory, and failing
// that idle smaller blocks make room for the fresh one (Note [Reusing larger blocks]). Thread-safe
// (one mutex). Like PyTorch's empty(), blocks are not zero-filled. The cache object is never
// destroyed, so tensors that outlive static destruction can still free their blocks.
constexpr size_t kMinCachedBytes = size_t{64} << 10;
constexpr size_t kMaxCachedBytes = size_t{512} << 20;

// Note [Reusing larger blocks]
// A model run as loaded (`torchless run`, Note [One call runs as loaded] in api/module.cpp)
// allocates activations in sizes that differ from layer to layer, and a fresh block costs its
// pages' clearing (clear_page was ~15% of a resnet50 `run`'s CPU on our VMs) and stays in the
// peak. With exact classes only, that call took 41 fresh blocks (59 MB); taking the smallest
// idle block of a larger class, up to twice the size, it takes 26 (50 MB), and the run's peak
// RSS fell from 188 to 180 MB. When a fresh block is still needed and idle smaller blocks add
// up to its size, those (largest first) go back to malloc before it is allocated, so that it
// takes their place rather than adding to the peak: 180 -> 170 MB, the same CPU time. An
// exact class is still taken first, so steady inference (the same sizes every call) reuses
// exactly as before and never gets here.
constexpr size_t kMaxReuseFactor = 2;

size_t sizeClass(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  const size_t step = std::max<size_t>(p / 8, kStorageAlignment);
  return (n + step - 1) / step * step;
}

class BlockCache {
 public:
  /// A block of at least class `cls` for `nbytes` (<= cls) that the caller writes; `*got` is
  /// the class of the block returned (what put() takes back).
  void* get(size_t cls, size_t nbytes, size_t* got) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      // The exact class, else the smallest larger one within kMaxReuseFactor (Note [Reusing
      // larger blocks]).
      for (auto it = free_.lower_bound(cls);
           it != free_.end() && it->first <= cls * kMaxReuseFactor; ++it) {
        if (it->second.empty()) continue;
        void* p = it->second.back();
        it->second.pop_back();
        idle_ -= it->first;
        *got = it->first;
        return p;
      }
      // Idle smaller blocks that add up to this one go back to the system first, largest
      // first, so that the new block takes their place instead of adding to the peak.
      size_t smaller = 0;
      for (auto it = free_.begin(); it != free_.end() && it->first < cls; ++it)
        smaller += it->first * it->second.size();
      if (smaller >= cls) {
        size_t freed = 0;
        for (auto it = std::make_reverse_iterator(free_.lower_bound(cls));
             it != free_.rend() && freed < cls; ++it) {
          while (!it->second.empty() && freed < cls) {
            std::free(it->second.back());
            it->second.pop_back();
            freed += it->first;
          }
        }
        idle_ -= freed;
      }
    }
    *got = cls;
    void* p = std::aligned_alloc(kStorageAlignment, cls);
    prefaultFreshBuffer(p, nbytes);
    return p;
  }
  void put(void* p, size_t cls) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (idle_ + cls <= kMaxCachedBytes) {
        free_[cls].push_back(p);
        idle_ += cls;
        return;
      }
    }
    std::free(p);
  }
  size_t release() {
    std::map<size_t, std::vector<void*>> blocks;
    size_t n;
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocks.swap(free_);
      n = idle_;
      idle_ = 0;
    }
    for (auto& [cls, v] : blocks)
      for (void* p : v) std::free(p);
    return n;
  }
  size_t idle() {
    std::lock_guard<std::mutex> lock(mu_);
    return idle_;
  }

 private:
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;  // class -> idle blocks
  size_t idle_ = 0;
};

BlockCache& cache() {
  static BlockCache* c = new BlockCache();  // never destroyed, see the Note
  return *c;
}

}  // namespace

void prefaultFreshBuffer(void* p, size_t nbytes) {
  constexpr uintptr_t kPage = 4096, kHuge = uintptr_t{2} << 20;
  if (p == nullptr || nbytes < (size_t{64} << 10)) return;
  auto inside = [&](uintptr_t unit, uintptr_t& begin, uintptr_t& end) {
    begin = (reinterpret_cast<uintptr_t>(p) + unit - 1) & ~(unit - 1);
    end = (reinterpret_cast<uintptr_t>(p) + nbytes) & ~(unit - 1);
    return end > begin;
  };
  uintptr_t begin, end;
  if (nbytes >= 2 * kHuge && inside(kHuge, begin, end))
    (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
  if (inside(kPage, begin, end))
    (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#endif
}

Storage Storage::allocate(size_t nbytes) {
  Storage s;
  s.impl_ = std::make_shared<StorageImpl>();
  size_t rounded = (nbytes + kStorageAlignment - 1) / kStorageAlignment * kStorageAlignment;
  if (rounded == 0) rounded = kStorageAlignment;
  void* p;
  if (rounded >= kMinCachedBytes) {
    checkAllocation(nbytes, "a tensor's storage");  // Note [Memory budget]
    size_t cls = sizeClass(rounded);
    p = cache().get(cls, nbytes, &cls);
    if (!p) throw Error(fmt::format("out of memory allocating {} bytes", nbytes));
    s.impl_->owner = std::shared_ptr<void>(p, [cls](void* q) { cache().put(q, cls); });
  } else {
    p = std::aligned_alloc(kStorageAlignment, rounded);
    if (!p) throw Error(fmt::format("out of memory allocating {} bytes", nbytes));
    s.impl_->owner = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  }
  s.impl_->data = static_cast<std::byte*>(p);
  s.impl_->nbytes = nbytes;
  return s;
}

Storage Storage::allocateZeroed(size_t nbytes) {
  Storage s = allocate(nbytes);
  if (nbytes) std::memset(s.data(), 0, nbytes);
  return s;
}

size_t Storage::releaseCachedBlocks() { return cache().release(); }
size_t Storage::cachedBytes() { return cache().idle(); }

Storage Storage::wrap(void* data, size_t nbytes, std::shared_ptr<void> owner) {
  Storage s;
  s.impl_ = std::make_shared<StorageImpl>();
  s.impl_->data = static_cast<std::byte*>(data);
  s.impl_->nbytes = nbytes;
  s.impl_->owner = std::move(owner);
  return s;
}

}  // namespace torchless
