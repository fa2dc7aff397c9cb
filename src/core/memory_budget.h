#pragma once
// Note [Memory budget]
//
// Allocations whose size comes from a file or from a model's own arithmetic (`[0] * 10**12`,
// a tensor constant in IR text, an inflated record) are checked with checkAllocation() before
// they happen, against the budget: `--max-memory` when given, else the machine's physical
// memory. Over budget is a torchless::Error that names what was being built, never a bare
// std::bad_alloc or the OOM killer.

#include <cstddef>
#include <string_view>

namespace torchless {

/// The budget in bytes: setMemoryBudget's value, else the physical memory of the machine.
size_t memoryBudget();
/// Sets the budget (0: back to physical memory). `torchless --max-memory` calls this.
void setMemoryBudget(size_t bytes);
/// Throws torchless::Error("WHAT needs N bytes, more than the memory budget of M bytes ...")
/// when `bytes` exceeds memoryBudget().
void checkAllocation(size_t bytes, std::string_view what);
/// Parses "512M", "4G", "1.5G", "100000" (bytes; K/M/G/T are powers of 1024). Throws Error.
size_t parseMemorySize(std::string_view text);

}  // namespace torchless
