#include "core/memory_budget.h"

#include "core/error.h"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <string>

namespace torchless {

namespace {
std::atomic<size_t> gBudget{0};

size_t physicalMemory() {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return SIZE_MAX;
  return static_cast<size_t>(pages) * static_cast<size_t>(page);
}
}  // namespace

size_t memoryBudget() {
  size_t b = gBudget.load(std::memory_order_relaxed);
  if (b) return b;
  static const size_t phys = physicalMemory();
  return phys;
}

void setMemoryBudget(size_t bytes) { gBudget.store(bytes, std::memory_order_relaxed); }

void checkAllocation(size_t bytes, std::string_view what) {
  size_t budget = memoryBudget();
  if (bytes > budget)
    throw Error(
        fmt::format("{} needs {} bytes, more than the memory budget of {} bytes "
                    "(--max-memory, or the machine's memory)",
                    what, bytes, budget));
}

size_t parseMemorySize(std::string_view text) {
  std::string s(text);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    throw Error(fmt::format("bad memory size '{}' (expected e.g. 512M, 4G)", text));
  }
  std::string unit = s.substr(used);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  double mult = 1;
  if (unit == "K" || unit == "k")
    mult = 1024.0;
  else if (unit == "M" || unit == "m")
    mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "g")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "t")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty())
    throw Error(fmt::format("bad memory size '{}' (expected e.g. 512M, 4G)", text));
  double bytes = v * mult;
  if (!(bytes >= 1) || !std::isfinite(bytes) || bytes > 1.8e19)
    throw Error(fmt::format("bad memory size '{}' (expected e.g. 512M, 4G)", text));
  return static_cast<size_t>(bytes);
}

}  // namespace torchless
