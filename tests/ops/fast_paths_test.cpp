// The float32 fast paths of elementwise ops (Note [Elementwise fast paths]), in-place
// activations and adds, the caching allocator's uninitialized blocks, and the fused,
// primitive-cached oneDNN convolution (ops::convolutionFused), float max_pool2d without
// indices (ops::maxPool): each checked against the generic path it replaces.

#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/pool.h"
#include "ops/shape.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

namespace torchless::ops {
namespace {

// Deterministic values in [lo, hi) (a small LCG), float32.
Tensor filled(const IntList& sizes, double lo, double hi, uint32_t seed) {
  Tensor t = Tensor::empty(sizes, ScalarType::Float);
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(lo + (hi - lo) * ((s >> 8) / double(1 << 24)));
  }
  return t;
}

void expectSame(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.sizes(), b.sizes());
  ASSERT_EQ(a.dtype(), b.dtype());
  Tensor x = a.contiguous(), y = b.contiguous();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double u = x.doubleAt(i), v = y.doubleAt(i);
    if (std::isnan(v))
      EXPECT_TRUE(std::isnan(u)) << "at " << i;
    else
      EXPECT_EQ(u, v) << "at " << i;
  }
}

void expectClose(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.sizes(), b.sizes());
  ASSERT_EQ(a.dtype(), b.dtype());
  Tensor x = a.contiguous(), y = b.contiguous();
  for (int64_t i = 0; i < x.numel(); ++i)
    ASSERT_NEAR(x.doubleAt(i), y.doubleAt(i), tol * (1 + std::fabs(y.doubleAt(i)))) << "at " << i;
}

// A contiguous input with specials, and the same values as a non-contiguous view (the generic
// TensorIter path).
struct Pair {
  Tensor fast, generic;
};
Pair inputs(uint32_t seed) {
  Tensor x = filled({37, 29}, -8, 8, seed);
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  float* p = x.data<float>();
  p[0] = nan;
  p[1] = inf;
  p[2] = -inf;
  p[3] = -0.f;
  p[4] = 0.f;
  p[5] = 6.f;
  p[6] = -3.f;
  // generic: the transpose of a contiguous copy of x^T holds the same values, strided.
  Tensor gen = transpose(transpose(x, 0, 1).contiguous(), 0, 1);
  EXPECT_FALSE(gen.isContiguous());
  return {x, gen};
}

TEST(OpsFastPaths, UnaryMatchGenericBitForBit) {
  const std::pair<const char*, std::function<Tensor(const Tensor&)>> ops[] = {
      {"relu", [](const Tensor& t) { return relu(t); }},
      {"relu6", [](const Tensor& t) { return relu6(t); }},
      {"hardtanh", [](const Tensor& t) { return hardtanh(t, -2.5, 1.5); }},
      {"clamp", [](const Tensor& t) { return clamp(t, Scalar(-1.0), Scalar(2)); }},
      {"clamp_min", [](const Tensor& t) { return clampMin(t, Scalar(0.5)); }},
      {"clamp_max", [](const Tensor& t) { return clampMax(t, Scalar(-0.5)); }},
      {"clamp_inverted", [](const Tensor& t) { return clamp(t, Scalar(3.0), Scalar(1.0)); }},
      {"sigmoid", [](const Tensor& t) { return sigmoid(t); }},
      {"silu", [](const Tensor& t) { return silu(t); }},
      {"hardswish", [](const Tensor& t) { return hardswish(t); }},
  };
  Pair in = inputs(1);
  for (const auto& [name, f] : ops) {
    SCOPED_TRACE(name);
    expectSame(f(in.fast), f(in.generic));
  }
}

TEST(OpsFastPaths, BinaryMatchGenericBitForBit) {
  Pair a = inputs(2), b = inputs(3);
  expectSame(add(a.fast, b.fast), add(a.generic, b.generic));
  expectSame(add(a.fast, b.fast, 0.5), add(a.generic, b.generic, 0.5));
  expectSame(add(a.fast, b.fast, 2), add(a.generic, b.generic, 2));
  expectSame(mul(a.fast, b.fast), mul(a.generic, b.generic));
  // Broadcasting and mixed dtypes keep the generic path and PyTorch's promotion.
  Tensor row = filled({29}, -1, 1, 4);
  EXPECT_EQ(add(a.fast, row).sizes(), (IntList{37, 29}));
  EXPECT_EQ(add(a.fast, a.fast.to(ScalarType::Double)).dtype(), ScalarType::Double);
  EXPECT_EQ(mul(a.fast, Tensor::fromVector(std::vector<int64_t>{2}, {1})).dtype(),
            ScalarType::Float);
}

TEST(OpsFastPaths, EmptyAndLargeInputs) {
  Tensor e = Tensor::empty({0, 3}, ScalarType::Float);
  EXPECT_EQ(relu(e).sizes(), (IntList{0, 3}));
  EXPECT_EQ(hardtanh(e, 0, 6).numel(), 0);
  EXPECT_EQ(add(e, e).sizes(), (IntList{0, 3}));
  EXPECT_EQ(relu_(e).numel(), 0);
  // Above the parallel grain (several chunks when threads are available).
  Tensor big = filled({3, 70001}, -5, 5, 5);
  Tensor gen = transpose(transpose(big, 0, 1).contiguous(), 0, 1);
  expectSame(relu6(big), relu6(gen));
  expectSame(add(big, big, 3), add(gen, gen, 3));
}

TEST(OpsFastPaths, InPlaceWritesSelfWithoutNewStorage) {
  Pair in = inputs(6);
  const std::pair<const char*, std::function<Tensor(const Tensor&)>> ops[] = {
      {"relu_",
       [](const Tensor& t) {
         Tensor s = t;
         return relu_(s);
       }},
      {"hardtanh_",
       [](const Tensor& t) {
         Tensor s = t;
         return hardtanh_(s, 0, 6);
       }},
      {"clamp_",
       [](const Tensor& t) {
         Tensor s = t;
         return clamp_(s, Scalar(-1), std::nullopt);
       }},
      {"sigmoid_",
       [](const Tensor& t) {
         Tensor s = t;
         return sigmoid_(s);
       }},
      {"silu_",
       [](const Tensor& t) {
         Tensor s = t;
         return silu_(s);
       }},
      {"hardswish_",
       [](const Tensor& t) {
         Tensor s = t;
         return hardswish_(s);
       }},
  };
  const std::function<Tensor(const Tensor&)> functional[] = {
      [](const Tensor& t) { return relu(t); },
      [](const Tensor& t) { return hardtanh(t, 0, 6); },
      [](const Tensor& t) { return clamp(t, Scalar(-1), std::nullopt); },
      [](const Tensor& t) { return sigmoid(t); },
      [](const Tensor& t) { return silu(t); },
      [](const Tensor& t) { return hardswish(t); },
  };
  for (size_t i = 0; i < std::size(ops); ++i) {
    SCOPED_TRACE(ops[i].first);
    Tensor want = functional[i](in.fast);
    for (const Tensor& src : {in.fast, in.generic}) {
      // A private copy with src's layout (contiguous, or the strided generic view).
      Tensor self =
          src.isContiguous() ? src.clone() : transpose(transpose(src, 0, 1).clone(), 0, 1);
      ASSERT_EQ(self.isContiguous(), src.isContiguous());
      void* before = self.rawData();
      Tensor r = ops[i].second(self);
      EXPECT_TRUE(r.is(self));
      EXPECT_EQ(self.rawData(), before);
      expectSame(self, want);
    }
  }
}

TEST(OpsFastPaths, InPlaceAddAndMul) {
  Tensor a = filled({4, 33}, -3, 3, 7), b = filled({4, 33}, -3, 3, 8);
  Tensor want = add(a, b, 2);
  Tensor s = a.clone();
  void* before = s.rawData();
  add_(s, b, 2);
  EXPECT_EQ(s.rawData(), before);
  expectSame(s, want);
  Tensor m = a.clone();
  mul_(m, m);  // other is self: same elements, safe in place
  expectSame(m, mul(a, a));
  // other overlaps self shifted by one element: the result must equal the out-of-place one.
  Tensor flat = filled({20}, -1, 1, 9);
  Tensor selfView = narrow(flat, 0, 1, 10), otherView = narrow(flat, 0, 0, 10);
  Tensor expected = add(selfView, otherView);
  add_(selfView, otherView);
  expectSame(selfView, expected);
  // Broadcast other and a dtype that cannot be written into self.
  Tensor row = filled({33}, -1, 1, 10);
  Tensor s2 = a.clone();
  add_(s2, row);
  expectSame(s2, add(a, row));
  Tensor ints = Tensor::fromVector(std::vector<int64_t>{1, 2}, {2});
  try {
    add_(ints, Tensor::fromVector(std::vector<float>{0.5f, 1.5f}, {2}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "result type Float can't be cast to the desired output type Long");
  }
}

TEST(OpsFastPaths, ZerosIsZeroFilledOnReusedBlocks) {
  // Tensor::empty no longer zero-fills; zeros must, even on a block recycled by the cache.
  for (int i = 0; i < 2; ++i) {
    Tensor junk = full({512, 512}, 7.0, ScalarType::Float);
    (void)junk;
  }
  Tensor z = zeros({512, 512}, ScalarType::Float);
  for (int64_t i = 0; i < z.numel(); i += 997) ASSERT_EQ(z.doubleAt(i), 0.0) << i;
  Tensor oh = oneHot(Tensor::fromVector(std::vector<int64_t>{2, 0}, {2}), 4);
  EXPECT_EQ(oh.toString(), "tensor([[0, 0, 1, 0],\n        [1, 0, 0, 0]])");
}

// ---- fused convolution ----

Tensor activate(const Tensor& x, const std::string& act) {
  if (act == "none") return x;
  if (act == "relu") return relu(x);
  if (act == "clamp") return hardtanh(x, 0, 6);
  if (act == "sigmoid") return sigmoid(x);
  if (act == "silu") return silu(x);
  if (act == "hardswish") return hardswish(x);
  if (act == "gelu") return gelu(x, "none");
  if (act == "gelu_tanh") return gelu(x, "tanh");
  throw Error("bad activation");
}

TEST(OpsFusedConv, MatchesUnfusedForEachActivationWithAndWithoutResidual) {
  Tensor x = filled({2, 6, 9, 8}, -2, 2, 11);
  for (int64_t groups : {1, 2, 6}) {
    Tensor w = filled({6, 6 / groups, 3, 3}, -0.5, 0.5, 12 + static_cast<uint32_t>(groups));
    Tensor b = filled({6}, -1, 1, 13);
    Tensor res = filled({2, 6, 9, 8}, -3, 3, 14);
    for (const char* act :
         {"none", "relu", "clamp", "sigmoid", "silu", "hardswish", "gelu", "gelu_tanh"}) {
      for (bool withRes : {false, true}) {
        for (bool constant : {false, true}) {
          SCOPED_TRACE(std::string(act) + (withRes ? " +residual" : "") +
                       (constant ? " const" : "") + " groups " + std::to_string(groups));
          Tensor ref = convNd(x, w, b, {1}, {1}, {1}, groups);
          if (withRes) ref = add(ref, res);
          ref = activate(ref, act);
          const ConvActivation a = convActivationFromString(act);
          const double hi = a == ConvActivation::Clamp ? 6 : 0;  // clamp: [0, 6] as relu6
          Tensor got = convolutionFused(x, w, b, {1}, {1}, {1}, groups,
                                        withRes ? std::optional<Tensor>(res) : std::nullopt, a, 0,
                                        hi, constant);
          expectClose(got, ref);
        }
      }
    }
  }
}

TEST(OpsFusedConv, FallbackPathsKeepPyTorchSemantics) {
  // Double (reference loop), a broadcast residual, an unbatched input: same results as the ops.
  Tensor x = filled({1, 3, 6, 6}, -1, 1, 20), w = filled({4, 3, 3, 3}, -1, 1, 21);
  Tensor xd = x.to(ScalarType::Double), wd = w.to(ScalarType::Double);
  Tensor got =
      convolutionFused(xd, wd, std::nullopt, {2}, {1}, {1}, 1, std::nullopt, ConvActivation::Relu);
  expectSame(got, relu(convNd(xd, wd, std::nullopt, {2}, {1}, {1}, 1)));
  Tensor row = filled({1, 4, 1, 1}, -1, 1, 22);
  got =
      convolutionFused(x, w, std::nullopt, {1}, {0}, {1}, 1, row, ConvActivation::Clamp, -0.5, 0.5);
  expectClose(got, hardtanh(add(convNd(x, w, std::nullopt, {1}, {0}, {1}, 1), row), -0.5, 0.5));
  Tensor x3 = squeeze(x, 0);
  got = convolutionFused(x3, w, std::nullopt, {1}, {1}, {1}, 1, std::nullopt, ConvActivation::Silu);
  expectClose(got, silu(convNd(x3, w, std::nullopt, {1}, {1}, {1}, 1)));
  try {
    convActivationFromString("tanh");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "unknown fused convolution activation 'tanh'");
  }
}

TEST(OpsFusedConv, MutatedWeightIsNotServedStale) {
  Tensor x = filled({1, 8, 10, 10}, -1, 1, 30);
  Tensor w = filled({16, 8, 3, 3}, -1, 1, 31);
  // Not constant: the weight is reordered on every call, so in-place edits are seen.
  Tensor first =
      convolutionFused(x, w, std::nullopt, {1}, {1}, {1}, 1, std::nullopt, ConvActivation::None);
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] *= 2.f;  // mutate in place
  Tensor second =
      convolutionFused(x, w, std::nullopt, {1}, {1}, {1}, 1, std::nullopt, ConvActivation::None);
  expectClose(second, mul(first, Scalar(2.0)));
  expectClose(second, convolutionReference(x, w, std::nullopt, {1}, {1}, {1}, false, {0}, 1));
  // The plain convolution never caches weights either.
  (void)convNd(x, w, std::nullopt, {1}, {1}, {1}, 1);
  Tensor fill = w;
  fill_(fill, 0.25);
  expectClose(convNd(x, w, std::nullopt, {1}, {1}, {1}, 1),
              convolutionReference(x, w, std::nullopt, {1}, {1}, {1}, false, {0}, 1));
  // Constant weights are cached per tensor: a different weight of the same shape (a new
  // storage) gets its own entry, never the first one's.
  Tensor c1 = filled({16, 8, 3, 3}, -1, 1, 32), c2 = filled({16, 8, 3, 3}, -1, 1, 33);
  Tensor r1 = convolutionFused(x, c1, std::nullopt, {1}, {1}, {1}, 1, std::nullopt,
                               ConvActivation::None, 0, 0, true);
  Tensor r2 = convolutionFused(x, c2, std::nullopt, {1}, {1}, {1}, 1, std::nullopt,
                               ConvActivation::None, 0, 0, true);
  Tensor r1again = convolutionFused(x, c1, std::nullopt, {1}, {1}, {1}, 1, std::nullopt,
                                    ConvActivation::None, 0, 0, true);
  expectClose(r1, convolutionReference(x, c1, std::nullopt, {1}, {1}, {1}, false, {0}, 1));
  expectClose(r2, convolutionReference(x, c2, std::nullopt, {1}, {1}, {1}, false, {0}, 1));
  expectSame(r1again, r1);
}

TEST(OpsFusedConv, StridedConvWhoseLastWindowEndsEarlyRunsOnOneDnn) {
  // resnet's 1x1 stride-2 downsample on an even size: right padding -1 in oneDNN's terms.
  Tensor x = filled({1, 8, 14, 14}, -1, 1, 50), w = filled({4, 8, 1, 1}, -1, 1, 51);
  const size_t before = convolutionCacheSize();
  Tensor got = convNd(x, w, std::nullopt, {2}, {0}, {1}, 1);
  EXPECT_EQ(got.sizes(), (IntList{1, 4, 7, 7}));
  EXPECT_GT(convolutionCacheSize(), before);  // a oneDNN primitive, not the reference loop
  expectClose(got, convolutionReference(x, w, std::nullopt, {2}, {0}, {1}, false, {0}, 1));
}

TEST(OpsFusedConv, PrimitivesAreCachedAcrossCalls) {
  Tensor x = filled({1, 5, 7, 7}, -1, 1, 40), w = filled({3, 5, 1, 1}, -1, 1, 41);
  (void)convNd(x, w, std::nullopt, {1}, {0}, {1}, 1);
  const size_t n = convolutionCacheSize();
  for (int i = 0; i < 3; ++i) (void)convNd(x, w, std::nullopt, {1}, {0}, {1}, 1);
  EXPECT_EQ(convolutionCacheSize(), n);
  (void)convNd(filled({1, 5, 9, 7}, -1, 1, 42), w, std::nullopt, {1}, {0}, {1}, 1);
  EXPECT_EQ(convolutionCacheSize(), n + 1);
}

// adaptive_avg_pool2d(x, 1) of a channels-last float input (squeeze-and-excitation blocks)
// reads it in place and gives the generic path's numbers to the bit (same double sums, same
// order, also when large pools are split across threads in narrower channel blocks); contiguous
// inputs and other output sizes take the generic path.
TEST(OpsFastPaths, GlobalAvgPoolOfChannelsLastMatchesGenericBitForBit) {
  for (const IntList& sizes :
       {IntList{1, 300, 7, 7}, IntList{2, 5, 3, 4}, IntList{3, 2, 1, 2}, IntList{1, 96, 56, 56},
        IntList{1, 40, 64, 64}, IntList{4, 300, 14, 14}}) {
    const Tensor x = filled(sizes, -3, 3, 11);
    const Tensor want = adaptiveAvgPool(x, 2, {1, 1});  // contiguous: the generic path
    const Tensor nhwc = permute(permute(x, {0, 2, 3, 1}).contiguous(), {0, 3, 1, 2});
    for (const IntList& out : {IntList{1}, IntList{1, 1}}) {
      const Tensor got = adaptiveAvgPool(nhwc, 2, out);
      EXPECT_EQ(got.sizes(), (IntList{sizes[0], sizes[1], 1, 1}));
      expectSame(got, want);
    }
  }
}

// A channels-last float tensor times a per-channel [N or 1, C, 1, 1] scale, in either order
// (squeeze-and-excitation): the generic broadcast's products, in a channels-last result as
// PyTorch's TensorIterator gives (torch: (s * x).stride() == (60, 1, 15, 5) for x of
// [2, 5, 4, 3] in torch.channels_last and s of [2, 5, 1, 1]).
// Two operands in one dense layout that is not the contiguous one (channels-last, a size-1
// batch dim with any stride, two views permuted alike) take the flat loops: the same values
// as the generic path, the result in their layout (as PyTorch's TensorIterator gives it), and
// in place without a copy, also when both live in one storage (an engine's arena) at disjoint
// bytes; overlapping bytes still give the out-of-place result.
TEST(OpsFastPaths, SameDenseLayoutRunsFlat) {
  for (const IntList& sizes : {IntList{2, 5, 4, 3}, IntList{1, 96, 14, 14}}) {
    const Tensor x = filled(sizes, -3, 3, 5), y = filled(sizes, -3, 3, 6);
    auto nhwc = [](const Tensor& t) {
      return permute(permute(t, {0, 2, 3, 1}).contiguous(), {0, 3, 1, 2});
    };
    const Tensor a = nhwc(x), b = nhwc(y);
    for (const Tensor& got : {add(a, b, 2), mul(a, b)}) EXPECT_EQ(got.strides(), a.strides());
    expectSame(add(a, b, 2), add(x, y, 2));
    expectSame(mul(a, b), mul(x, y));
    Tensor s = nhwc(x);
    void* before = s.rawData();
    add_(s, b);
    EXPECT_EQ(s.rawData(), before);
    expectSame(s, add(x, y));
    Tensor m = nhwc(x);
    mul_(m, b);
    expectSame(m, mul(x, y));
  }
  // One storage, two disjoint channels-last halves: in place, no copy.
  const IntList sz{1, 4, 3, 2};
  const int64_t n = 24;
  Tensor arena = filled({2 * n}, -2, 2, 11);
  auto view = [&](int64_t offset) {
    return Tensor::fromStorage(arena.storage(), offset, sz, {n, 1, 8, 4}, ScalarType::Float);
  };
  Tensor self = view(0), other = view(n);
  const Tensor want = add(self.contiguous(), other.contiguous());
  void* before = self.rawData();
  add_(self, other);
  EXPECT_EQ(self.rawData(), before);
  expectSame(self, want);
  // Overlapping views of one storage: the out-of-place result, as before.
  Tensor arena2 = filled({n + 4}, -2, 2, 12);
  Tensor s2 = Tensor::fromStorage(arena2.storage(), 4, sz, {n, 1, 8, 4}, ScalarType::Float);
  Tensor o2 = Tensor::fromStorage(arena2.storage(), 0, sz, {n, 1, 8, 4}, ScalarType::Float);
  const Tensor want2 = add(s2.contiguous(), o2.contiguous());
  add_(s2, o2);
  expectSame(s2, want2);
}

TEST(OpsFastPaths, ChannelsLastTimesPerChannelScaleMatchesGeneric) {
  for (const IntList& sizes : {IntList{2, 5, 4, 3}, IntList{1, 96, 14, 14}}) {
    const Tensor x = filled(sizes, -3, 3, 5);
    const Tensor nhwc = permute(permute(x, {0, 2, 3, 1}).contiguous(), {0, 3, 1, 2});
    for (int64_t sn : {int64_t{1}, sizes[0]}) {
      const Tensor s = filled({sn, sizes[1], 1, 1}, -2, 2, 9);
      const Tensor want = mul(x, s);  // contiguous x: the generic broadcast
      // s as a channels-last convolution leaves it: strides (C, 1, C, C).
      const Tensor sCl = permute(permute(s, {0, 2, 3, 1}).contiguous(), {0, 3, 1, 2});
      for (const Tensor& got : {mul(nhwc, s), mul(s, nhwc), mul(nhwc, sCl)}) {
        expectSame(got, want);
        EXPECT_EQ(got.strides(), nhwc.strides());
      }
    }
  }
}

// ops::maxPool's float32 2-d path (no indices) against maxPoolWithIndices's values, which the
// op oracle checks against PyTorch: contiguous and channels-last inputs, padding, dilation,
// ceil mode, NaN and -inf. A channels-last input gives a channels-last result, as in PyTorch
// (F.max_pool2d of a torch.channels_last tensor is channels_last).
TEST(OpsFastPaths, MaxPool2dMatchesGenericWithAndWithoutChannelsLast) {
  struct Case {
    IntList sizes, kernel, stride, padding, dilation;
    bool ceil;
  };
  const Case cases[] = {{{1, 64, 12, 12}, {3}, {2}, {1}, {1}, false},
                        {{2, 5, 9, 8}, {3, 2}, {2, 1}, {1, 0}, {1}, true},
                        {{1, 3, 11, 10}, {3}, {2}, {1}, {2}, false},
                        {{2, 7, 5, 5}, {2}, {}, {0}, {1}, true}};
  for (const Case& c : cases) {
    for (bool nan : {false, true}) {
      Tensor x = filled(c.sizes, -3, 3, 7);
      if (nan) {
        x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
        x.data<float>()[x.numel() - 3] = -std::numeric_limits<float>::infinity();
      }
      const Tensor want =
          std::get<0>(maxPoolWithIndices(x, 2, c.kernel, c.stride, c.padding, c.dilation, c.ceil));
      const Tensor got = maxPool(x, 2, c.kernel, c.stride, c.padding, c.dilation, c.ceil);
      EXPECT_TRUE(got.isContiguous());
      expectSame(got, want);
      // The same values stored channels-last (NHWC memory, NCHW sizes).
      const Tensor nhwc = permute(permute(x, {0, 2, 3, 1}).contiguous(), {0, 3, 1, 2});
      const Tensor gotCl = maxPool(nhwc, 2, c.kernel, c.stride, c.padding, c.dilation, c.ceil);
      expectSame(gotCl, want);
      const IntList& o = gotCl.sizes();
      EXPECT_EQ(gotCl.strides(), (IntList{o[1] * o[2] * o[3], 1, o[3] * o[1], o[1]}));
    }
  }
}

}  // namespace
}  // namespace torchless::ops
