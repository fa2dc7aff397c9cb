#pragma once
// Prefaulting large fresh buffers (Note [Prefaulting fresh buffers]).

#include <cstddef>

namespace torchless {

/// Note [Prefaulting fresh buffers]
/// A fresh buffer from the system faults once per 4 KiB page when it is first written: the
/// record buffers and folded weights of a 100 MB archive cost ~40,000 page faults, a quarter
/// of `torchless run`'s time on resnet50 (issue 13, cold start), and a fault is dear on a
/// virtual machine. For a buffer of `nbytes` at `p` that the caller is about to write in full,
/// this asks the kernel (madvise) to back its 2 MiB-aligned interior with transparent huge
/// pages (MADV_HUGEPAGE, buffers of 4 MiB and more) and to map all the whole pages inside it
/// in one call (MADV_POPULATE_WRITE, Linux 5.14; buffers of 64 KiB and more). Only pages
/// inside [p, p + nbytes) are touched, so the resident size is what writing the buffer would
/// have made it. Where the kernel refuses, nothing happens and the pages fault as before.
/// Used by Storage::allocate (fresh blocks, storage.cpp) and the archive's record buffers.
void prefaultFreshBuffer(void* p, size_t nbytes);

}  // namespace torchless
