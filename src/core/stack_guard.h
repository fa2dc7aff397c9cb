#pragma once
// Note [Stack guard]
//
// Every recursive walk over something a file describes (TorchScript expressions and call chains,
// IR blocks, printed graphs, inlining, exported blocks, the interpreter's calls) calls
// checkStack(where) on entry. It compares the current stack pointer with the thread's stack
// bounds and throws torchless::Error once less than kStackReserve bytes remain, so a deep file
// ends as "WHERE: nested too deeply ..." instead of a segfault. The limit is the stack itself,
// not a count, so a walk may go as deep as the thread's stack allows (the CLI runs its command
// on a thread with a large stack: tools/main.cpp).

#include <cstddef>
#include <string_view>

namespace torchless {

/// Bytes of stack kept free below the deepest allowed frame (for the error's own unwinding,
/// fmt, and frames of callees that do not check).
constexpr size_t kStackReserve = size_t{256} << 10;

namespace detail {
/// The lowest usable stack address of this thread plus kStackReserve (0 if unknown).
size_t stackLimit();
[[noreturn]] void throwStackExhausted(std::string_view where);
}  // namespace detail

/// True when this thread's stack is nearly used up (callers that build a place for their error).
inline bool stackNearlyExhausted() {
  char probe;
  return reinterpret_cast<size_t>(&probe) < detail::stackLimit();
}

/// Throws torchless::Error("WHERE: nested too deeply (... stack exhausted)") when this thread's
/// stack is nearly used up. Cheap: one thread-local load and a compare.
inline void checkStack(std::string_view where) {
  char probe;
  size_t sp = reinterpret_cast<size_t>(&probe);
  if (sp < detail::stackLimit()) detail::throwStackExhausted(where);
}

}  // namespace torchless
