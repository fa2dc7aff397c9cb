// Note [Prefaulting fresh buffers] (core/prefault.h): a prefaulted fresh buffer is written
// without page faults, and pages outside it are left alone.
#include "core/prefault.h"
#include "core/storage.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/resource.h>

#include <cstring>
#include <vector>

using namespace torchless;

namespace {

long minorFaults() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

constexpr size_t kBytes = size_t{8} << 20;  // 2,048 pages of 4 KiB

// A fresh anonymous mapping: no page of it is resident yet.
struct FreshMapping {
  FreshMapping() {
    p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  }
  ~FreshMapping() {
    if (p != MAP_FAILED) munmap(p, kBytes);
  }
  void* p;
};

// Pages of [p, p + n) that are resident.
size_t residentPages(void* p, size_t n) {
  std::vector<unsigned char> v(n / 4096);
  if (mincore(p, n, v.data()) != 0) return 0;
  size_t r = 0;
  for (unsigned char c : v) r += c & 1;
  return r;
}

}  // namespace

TEST(Prefault, AFreshBufferIsWrittenWithoutPageFaults) {
  FreshMapping m;
  ASSERT_NE(m.p, MAP_FAILED);
  // Without prefaulting, writing it faults (at least once per 2 MiB, once per page without THP).
  {
    FreshMapping control;
    ASSERT_NE(control.p, MAP_FAILED);
    const long before = minorFaults();
    std::memset(control.p, 1, kBytes);
    EXPECT_GE(minorFaults() - before, 4);
  }
  prefaultFreshBuffer(m.p, kBytes);
  const long before = minorFaults();
  std::memset(m.p, 1, kBytes);
  EXPECT_LE(minorFaults() - before, 2) << "the kernel refused MADV_POPULATE_WRITE (Linux < 5.14?)";
}

TEST(Prefault, OnlyPagesInsideTheBufferAreMapped) {
  FreshMapping m;
  ASSERT_NE(m.p, MAP_FAILED);
  // A buffer that starts 100 bytes into the mapping and ends 1 MiB + 100 bytes before its end:
  // its partial first page is left to fault when written; the pages after it stay unmapped.
  auto* base = static_cast<std::byte*>(m.p);
  const size_t n = kBytes - (size_t{1} << 20) - 200;
  prefaultFreshBuffer(base + 100, n);
  EXPECT_EQ(residentPages(base, 4096), 0u);
  // Whole pages inside: from page 1 up to the page holding the end (7 MiB - 100), not included.
  EXPECT_EQ(residentPages(base + 4096, kBytes - (size_t{1} << 20) - 4096), kBytes / 4096 - 256 - 2);
  EXPECT_EQ(residentPages(base + kBytes - (size_t{1} << 20), size_t{1} << 20), 0u);
  // Small buffers are left alone.
  FreshMapping small;
  ASSERT_NE(small.p, MAP_FAILED);
  prefaultFreshBuffer(small.p, size_t{32} << 10);
  EXPECT_EQ(residentPages(small.p, size_t{32} << 10), 0u);
}

TEST(Prefault, LargeStoragesComeMappedAndKeepTheirBytes) {
  Storage s = Storage::allocateZeroed(size_t{6} << 20);
  ASSERT_TRUE(s.defined());
  for (size_t i = 0; i < s.nbytes(); i += 4096) ASSERT_EQ(s.data()[i], std::byte{0});
}
