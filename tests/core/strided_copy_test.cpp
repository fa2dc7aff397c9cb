// Tensor::clone / contiguous through copyToDense (Note [Strided copy]): every kind of view
// (slices, transposes, permutes, broadcasts, more dims than the fast path keeps, every item
// size) against an element-by-element reference read through doubleAt.
#include "core/strided_copy.h"
#include "core/tensor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>

using namespace torchless;

namespace {

// A base tensor of `n` elements of dtype dt holding 0, 1, 2, ... (exact in every dtype used).
Tensor iota(int64_t n, ScalarType dt) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i % 251);
  return Tensor::fromVector(v, {n}).to(dt);
}

// Checks c == view elementwise, c dense with view's sizes and its own storage.
void expectSameElements(const Tensor& view, const Tensor& c) {
  ASSERT_EQ(c.sizes(), view.sizes());
  ASSERT_TRUE(c.isContiguous());
  ASSERT_EQ(c.dtype(), view.dtype());
  for (int64_t i = 0; i < view.numel(); ++i)
    ASSERT_EQ(c.doubleAt(i), view.doubleAt(i)) << "element " << i;
}

// permute(sizes of a dense tensor) as a strided view of base.
Tensor permuted(const Tensor& base, const IntList& sizes, const IntList& perm, int64_t offset = 0) {
  IntList strides = contiguousStrides(sizes), ps, pz;
  for (int64_t p : perm) {
    pz.push_back(sizes[static_cast<size_t>(p)]);
    ps.push_back(strides[static_cast<size_t>(p)]);
  }
  return base.asStrided(pz, ps, offset);
}

// Splits parallel-for ranges into chunks of `grain` items and runs them in reverse order, so a
// copy that depends on running its chunks in order, or on starting at 0, fails.
int gChunks = 0;
void reversedChunks(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t b = 0; b < n; b += grain) ranges.emplace_back(b, std::min(n, b + grain));
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) {
    ++gChunks;
    fn(it->first, it->second);
  }
}

class StridedCopy : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { setParallelForHook(GetParam() ? &reversedChunks : nullptr); }
  void TearDown() override { setParallelForHook(nullptr); }
};

TEST_P(StridedCopy, TransposesAndPermutesEveryItemSize) {
  for (ScalarType dt : {ScalarType::Byte, ScalarType::Half, ScalarType::Float, ScalarType::Double,
                        ScalarType::ComplexDouble}) {
    Tensor base = iota(2 * 37 * 19 * 5 + 3, dt);
    expectSameElements(permuted(base, {37, 19}, {1, 0}), permuted(base, {37, 19}, {1, 0}).clone());
    expectSameElements(
        permuted(base, {2, 37, 19, 5}, {0, 3, 1, 2}, 3),
        permuted(base, {2, 37, 19, 5}, {0, 3, 1, 2}, 3).contiguous());  // NHWC -> NCHW
    expectSameElements(
        permuted(base, {2, 5, 37, 19}, {0, 2, 3, 1}, 1),
        permuted(base, {2, 5, 37, 19}, {0, 2, 3, 1}, 1).contiguous());  // NCHW -> NHWC
    expectSameElements(permuted(base, {2, 37, 19, 5}, {3, 2, 1, 0}),
                       permuted(base, {2, 37, 19, 5}, {3, 2, 1, 0}).clone());
    expectSameElements(permuted(base, {2, 37, 19, 5}, {1, 0, 3, 2}),
                       permuted(base, {2, 37, 19, 5}, {1, 0, 3, 2}).clone());
  }
}

TEST_P(StridedCopy, LargeCopiesSplitAcrossChunks) {
  // Large enough for the parallel path (>= 256 KiB): a transpose, a row slice, a gather.
  Tensor base = iota(300 * 301 + 7, ScalarType::Float);
  gChunks = 0;
  expectSameElements(permuted(base, {300, 301}, {1, 0}, 7),
                     permuted(base, {300, 301}, {1, 0}, 7).clone());
  Tensor rows = base.asStrided({300, 280}, {301, 1}, 5);  // [:, 5:285] of a 300 x 301 matrix
  expectSameElements(rows, rows.contiguous());
  Tensor every3 = base.asStrided({280, 100}, {301, 3}, 2);
  expectSameElements(every3, every3.contiguous());
  if (GetParam()) {
    EXPECT_GT(gChunks, 3);
  }
}

TEST_P(StridedCopy, SlicesBroadcastsAndSmallShapes) {
  Tensor base = iota(1000, ScalarType::Float);
  Tensor cases[] = {
      base.asStrided({4, 6}, {10, 1}, 3),        // rows of a slice: one memcpy per row
      base.asStrided({4, 6}, {6, 1}, 0),         // dense
      base.asStrided({3, 1, 4}, {4, 99, 1}, 0),  // dense except a size-1 dim's stride
      base.asStrided({5, 7}, {0, 1}, 2),         // broadcast rows (expand)
      base.asStrided({5, 7}, {1, 0}, 2),         // broadcast columns
      base.asStrided({6, 3}, {2, 17}, 1),        // no unit stride at all
      base.asStrided({3, 2}, {1, 3}, 0),         // a transpose too small to tile
      base.asStrided({}, {}, 42),                // a scalar
      base.asStrided({0, 5}, {5, 1}, 0),         // empty
      base.asStrided({2, 3, 4, 5}, {200, 1, 3, 40}, 1),
  };
  for (const Tensor& v : cases) expectSameElements(v, v.clone());
}

TEST_P(StridedCopy, ManyDimsThatNeverMerge) {
  // 20 dims of size 2, reversed: nothing merges; 1-byte items.
  IntList sizes(20, 2), rev(20);
  std::iota(rev.rbegin(), rev.rend(), 0);
  Tensor v = permuted(iota(int64_t{1} << 20, ScalarType::Byte), sizes, rev);
  expectSameElements(v, v.clone());
}

TEST_P(StridedCopy, OddItemSizeTakesTheGenericPath) {
  // 3-byte items (no typed loop): the transpose of a 4 x 5 matrix of items {i, i+1, i+2}.
  std::vector<uint8_t> src(4 * 5 * 3), dst(src.size());
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i);
  copyToDense(dst.data(), src.data(), {5, 4}, {1, 5}, 3);
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 4; ++c)
      for (int64_t b = 0; b < 3; ++b)
        EXPECT_EQ(dst[static_cast<size_t>((r * 4 + c) * 3 + b)],
                  src[static_cast<size_t>((c * 5 + r) * 3 + b)]);
}

INSTANTIATE_TEST_SUITE_P(Serial, StridedCopy, ::testing::Values(false));
INSTANTIATE_TEST_SUITE_P(Chunked, StridedCopy, ::testing::Values(true));

}  // namespace
