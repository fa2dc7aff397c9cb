#include "core/stack_guard.h"

#include "core/error.h"

#include <pthread.h>

namespace torchless::detail {

size_t stackLimit() {
  thread_local size_t limit = [] {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return size_t{0};
    void* addr = nullptr;
    size_t size = 0;
    int rc = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    if (rc != 0 || size <= 2 * kStackReserve) return size_t{0};
    // The stack grows down from addr + size to addr (the guard page sits below addr).
    return reinterpret_cast<size_t>(addr) + kStackReserve;
  }();
  return limit;
}

void throwStackExhausted(std::string_view where) {
  throw Error(
      fmt::format("{}: nested too deeply (the stack is nearly exhausted; see "
                  "README, Reliability)",
                  where));
}

}  // namespace torchless::detail
