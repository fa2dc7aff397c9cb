#pragma once
// Note [Naming out of memory]
//
// Allocations sized by a file are checked against the memory budget before they happen (Note
// [Memory budget]). What still fails (a vector or string grown step by step, the system's own
// limits such as `ulimit -v`) throws std::bad_alloc, which names nothing. The entry points of
// each phase (loading an archive, running a method, exporting) turn it into a torchless::Error
// that says what was being built and where, with namingOutOfMemory.

#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.h"

namespace torchless {

/// The message of an Error made from a std::bad_alloc: "out of memory while WHAT (...)".
inline std::string outOfMemoryMessage(std::string_view what) {
  return fmt::format(
      "out of memory while {} (an allocation failed; --max-memory and the README's "
      "Reliability section say how memory is bounded)",
      what);
}

/// Runs f(); a std::bad_alloc it throws becomes Error(outOfMemoryMessage(what), place).
/// torchless::Error passes through unchanged.
template <class F>
decltype(auto) namingOutOfMemory(std::string_view what, const std::string& place, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const std::bad_alloc&) {
    throw Error(outOfMemoryMessage(what), place);
  }
}

}  // namespace torchless
