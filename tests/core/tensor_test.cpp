// Tensor views, copies, casts and printing. Printing expectations are str(tensor) from
// PyTorch 1.13 for the same values.
#include "core/tensor.h"
#include "core/error.h"

#include <gtest/gtest.h>
#include <cstring>

#include <cmath>
#include <limits>

using namespace torchless;

namespace {

Tensor arangeFloat(int64_t n, float scale = 1.f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i) * scale;
  return Tensor::fromVector(v, {n});
}

TEST(Tensor, EmptyIsContiguousAndAligned) {
  Tensor t = Tensor::empty({2, 3}, ScalarType::Float);
  EXPECT_EQ(t.sizes(), (IntList{2, 3}));
  EXPECT_EQ(t.strides(), (IntList{3, 1}));
  EXPECT_TRUE(t.isContiguous());
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.rawData()) % kStorageAlignment, 0u);
  // Like torch.empty, the elements are uninitialized (Storage::allocateZeroed zero-fills).
}

TEST(Tensor, AllocateZeroedZeroesAndCacheReusesBlocks) {
  const size_t n = size_t{1} << 20;  // above the caching threshold
  void* first;
  {
    Storage s = Storage::allocate(n);
    first = s.data();
    std::memset(s.data(), 0xAB, n);
  }
  EXPECT_GE(Storage::cachedBytes(), n);
  Storage z = Storage::allocateZeroed(n);
  EXPECT_EQ(static_cast<void*>(z.data()), first);  // the freed block came back, zero-filled
  for (size_t i = 0; i < n; i += 4093) EXPECT_EQ(static_cast<int>(z.data()[i]), 0) << i;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(z.data()) % kStorageAlignment, 0u);
  Storage::releaseCachedBlocks();
  EXPECT_EQ(Storage::cachedBytes(), 0u);
}

TEST(Tensor, ViewsShareStorage) {
  // arange(24).reshape(4, 6).t()[1:3] as in the archive spec: offset 1, size (2, 4), stride (1, 6)
  Tensor base = arangeFloat(24);
  Tensor v = base.asStrided({2, 4}, {1, 6}, 1);
  EXPECT_TRUE(v.storage().isAlias(base.storage()));
  EXPECT_FALSE(v.isContiguous());
  EXPECT_EQ(v.doubleAt(0), 1.0);
  EXPECT_EQ(v.doubleAt(1), 7.0);
  EXPECT_EQ(v.doubleAt(4), 2.0);
  Tensor c = v.contiguous();
  EXPECT_TRUE(c.isContiguous());
  EXPECT_FALSE(c.storage().isAlias(base.storage()));
  EXPECT_EQ(c.doubleAt(5), 8.0);
  // A write through the base is seen by the view.
  base.data<float>()[7] = 100.f;
  EXPECT_EQ(v.doubleAt(1), 100.0);
}

TEST(Tensor, FromStorageRejectsOutOfBounds) {
  Storage s = Storage::allocate(2 * sizeof(float));
  EXPECT_THROW(Tensor::fromStorage(s, 5, {1}, {1}, ScalarType::Float), Error);
  EXPECT_THROW(Tensor::fromStorage(s, 0, {3}, {1}, ScalarType::Float), Error);
  EXPECT_THROW(Tensor::fromStorage(s, 0, {2}, {-1}, ScalarType::Float), Error);
  EXPECT_THROW(Tensor::fromStorage(s, 0, {-2}, {1}, ScalarType::Float), Error);
  EXPECT_THROW(Tensor::fromStorage(s, -1, {1}, {1}, ScalarType::Float), Error);
  EXPECT_THROW(Tensor::fromStorage(s, 0, {2, 2}, {1}, ScalarType::Float), Error);
  const int64_t big = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_THROW(Tensor::fromStorage(s, 0, {big, 4}, {1, 1}, ScalarType::Float), Error);
  EXPECT_THROW(Tensor::fromStorage(s, 0, {3, 2}, {big, 1}, ScalarType::Float), Error);
  // zero-element tensors need no bytes
  EXPECT_NO_THROW(Tensor::fromStorage(Storage::allocate(0), 0, {0, 3}, {3, 1}, ScalarType::Float));
  EXPECT_NO_THROW(Tensor::fromStorage(s, 1, {1}, {1}, ScalarType::Float));
}

TEST(Tensor, EmptyRejectsAbsurdSizes) {
  EXPECT_THROW(Tensor::empty({-1}, ScalarType::Float), Error);
  EXPECT_THROW(Tensor::empty({1LL << 40, 1LL << 40}, ScalarType::Float), Error);
}

TEST(Tensor, CastFollowsStaticCast) {
  Tensor t = Tensor::fromVector(std::vector<float>{1.7f, -1.7f, 0.f, 2.5f}, {4});
  Tensor l = t.to(ScalarType::Long);
  EXPECT_EQ(l.intAt(0), 1);
  EXPECT_EQ(l.intAt(1), -1);
  Tensor b = t.to(ScalarType::Bool);
  EXPECT_EQ(b.intAt(0), 1);
  EXPECT_EQ(b.intAt(2), 0);
  Tensor h = t.to(ScalarType::Half);
  EXPECT_FLOAT_EQ(static_cast<float>(h.doubleAt(3)), 2.5f);
  Tensor bf = t.to(ScalarType::BFloat16);
  EXPECT_NEAR(bf.doubleAt(0), 1.7, 0.01);
}

TEST(Tensor, HalfRoundTripsSpecialValues) {
  EXPECT_EQ(Half(65504.f).bits, 0x7bff);
  EXPECT_EQ(Half(1e6f).bits, 0x7c00);  // overflow -> inf
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(std::nanf("")))));
  EXPECT_EQ(static_cast<float>(Half(5.9604645e-08f)), 5.9604645e-08f);  // smallest subnormal
  EXPECT_EQ(static_cast<float>(Half(-0.f)), -0.f);
  EXPECT_EQ(static_cast<float>(BFloat16(1.f)), 1.f);
}

TEST(Tensor, ItemChecksNumel) {
  EXPECT_EQ(Tensor::scalar(2.5).itemDouble(), 2.5);
  EXPECT_EQ(Tensor::scalar(int64_t{7}).itemInt(), 7);
  EXPECT_THROW(arangeFloat(2).itemDouble(), Error);
}

struct PrintCase {
  const char* name;
  Tensor tensor;
  const char* expected;
};

TEST(Tensor, PrintsAsPyTorch) {
  std::vector<PrintCase> cases = {
      {"floats", Tensor::fromVector(std::vector<float>{1, 2, 3}, {3}), "tensor([1., 2., 3.])"},
      {"matrix", Tensor::fromVector(std::vector<float>{1.5f, 2.25f, 3, 4}, {2, 2}),
       "tensor([[1.5000, 2.2500],\n        [3.0000, 4.0000]])"},
      {"ints", Tensor::fromVector(std::vector<int64_t>{0, 1, 2, 3, 4, 5}, {2, 3}),
       "tensor([[0, 1, 2],\n        [3, 4, 5]])"},
      {"scalar", Tensor::scalar(2.5, ScalarType::Float), "tensor(2.5000)"},
      {"sci", Tensor::fromVector(std::vector<float>{1e-5f, 1.f}, {2}),
       "tensor([1.0000e-05, 1.0000e+00])"},
      {"double", Tensor::fromVector(std::vector<float>{1, 2}, {2}).to(ScalarType::Double),
       "tensor([1., 2.], dtype=torch.float64)"},
      {"empty2d", Tensor::empty({0, 3}, ScalarType::Float), "tensor([], size=(0, 3))"},
      {"empty1d", Tensor::empty({0}, ScalarType::Float), "tensor([])"},
      {"int32", Tensor::fromVector(std::vector<int64_t>{1, 2}, {2}).to(ScalarType::Int),
       "tensor([1, 2], dtype=torch.int32)"},
      {"nonfinite",
       Tensor::fromVector(
           std::vector<float>{std::nanf(""), std::numeric_limits<float>::infinity(), 1.f}, {3}),
       "tensor([nan, inf, 1.])"},
      {"large", Tensor::fromVector(std::vector<float>{123456789.f, 1.f}, {2}),
       "tensor([1.2346e+08, 1.0000e+00])"},
      {"wrapped", arangeFloat(30, 1.5f).asStrided({1, 30}, {30, 1}, 0),
       "tensor([[ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n"
       "         12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000,\n"
       "         24.0000, 25.5000, 27.0000, 28.5000, 30.0000, 31.5000, 33.0000, 34.5000,\n"
       "         36.0000, 37.5000, 39.0000, 40.5000, 42.0000, 43.5000]])"},
      {"summarized", arangeFloat(2000),
       "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
       "        1.9990e+03])"},
  };
  Tensor b = Tensor::empty({2}, ScalarType::Bool);
  b.data<bool>()[0] = true;
  b.data<bool>()[1] = false;
  cases.push_back({"bool", b, "tensor([ True, False])"});
  for (const auto& c : cases) EXPECT_EQ(c.tensor.toString(), c.expected) << c.name;
}

}  // namespace
