#include "core/mapped_file.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace torchless {
namespace {

// The live mappings, read by the SIGBUS handler (Note [Mapped archives]): a slot is claimed by
// storing its message first, then its range; freed by clearing its range first.
constexpr int kSlots = 64;
struct Slot {
  std::atomic<uintptr_t> begin{0}, end{0};
  std::atomic<const char*> message{nullptr};
  std::atomic<size_t> length{0};
};
Slot gSlots[kSlots];
std::mutex gSlotsMu;  // claiming and freeing (not used by the handler)
struct sigaction gPrevious;
std::once_flag gInstalled;

void onSigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<uintptr_t>(info ? info->si_addr : nullptr);
  for (Slot& s : gSlots) {
    const uintptr_t b = s.begin.load(std::memory_order_acquire);
    if (b == 0 || addr < b || addr >= s.end.load(std::memory_order_acquire)) continue;
    const char* m = s.message.load(std::memory_order_acquire);
    const size_t n = s.length.load(std::memory_order_acquire);
    if (m && n) (void)!write(STDERR_FILENO, m, n);
    _exit(1);
  }
  // Not ours: whoever handled SIGBUS before us does, or the default action.
  if (gPrevious.sa_flags & SA_SIGINFO) {
    if (gPrevious.sa_sigaction) return gPrevious.sa_sigaction(sig, info, context);
  } else if (gPrevious.sa_handler != SIG_DFL && gPrevious.sa_handler != SIG_IGN) {
    return gPrevious.sa_handler(sig);
  }
  signal(SIGBUS, SIG_DFL);  // the faulting access runs again and ends the process as before
}

void installHandler() {
  struct sigaction sa {};
  sa.sa_sigaction = onSigbus;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &gPrevious);
}

}  // namespace

std::shared_ptr<MappedFile> MappedFile::map(int fd, size_t size, const std::string& path) {
  if (size == 0) return nullptr;
  std::call_once(gInstalled, installHandler);
  std::shared_ptr<MappedFile> m(new MappedFile());
  std::string text = path +
                     ": the file shrank while torchless had it mapped (truncated or rewritten "
                     "in place during the run); its records can no longer be read\n";
  m->message_.reset(new char[text.size()]);
  std::memcpy(m->message_.get(), text.data(), text.size());
  {
    std::lock_guard<std::mutex> lock(gSlotsMu);
    for (int i = 0; i < kSlots && m->slot_ < 0; ++i)
      if (gSlots[i].message.load() == nullptr) m->slot_ = i;
    if (m->slot_ < 0) return nullptr;  // table full: read instead
    gSlots[m->slot_].length.store(text.size());
    gSlots[m->slot_].message.store(m->message_.get());
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) return nullptr;  // ~MappedFile frees the slot
  m->data_ = static_cast<std::byte*>(p);
  m->size_ = size;
  const auto b = reinterpret_cast<uintptr_t>(p);
  gSlots[m->slot_].end.store(b + size, std::memory_order_release);
  gSlots[m->slot_].begin.store(b, std::memory_order_release);
  return m;
}

MappedFile::~MappedFile() {
  if (slot_ >= 0) {
    gSlots[slot_].begin.store(0, std::memory_order_release);
    gSlots[slot_].end.store(0, std::memory_order_release);
  }
  if (data_) munmap(data_, size_);
  if (slot_ >= 0) {
    std::lock_guard<std::mutex> lock(gSlotsMu);
    gSlots[slot_].length.store(0);
    gSlots[slot_].message.store(nullptr);
  }
}

bool MappedFile::populate(size_t offset, size_t n) const {
  if (offset > size_ || n > size_ - offset) return false;
  if (n == 0) return true;
  constexpr uintptr_t kPage = 4096;
  const auto at = reinterpret_cast<uintptr_t>(data_) + offset;
  const uintptr_t begin = at & ~(kPage - 1), end = (at + n + kPage - 1) & ~(kPage - 1);
#ifdef MADV_POPULATE_READ
  for (;;) {
    if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) == 0) return true;
    if (errno == EINTR || errno == EAGAIN) continue;
    // EINVAL / ENOSYS: a kernel without it (before 5.14); the pages fault as they are read.
    return errno != EFAULT && errno != ENOMEM;
  }
#else
  return true;
#endif
}

}  // namespace torchless
