// Edge semantics checked by hand (numbers taken from PyTorch 1.13) and the .npy reader/writer.

#include "core/npy.h"
#include "ops/conv.h"
#include "ops/core_parallelism.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/norm.h"
#include "ops/parallel.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "ops/thread_budget.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

namespace torchless::ops {
namespace {

std::string messageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "<no error>";
}

TEST(OpsElementwise, IntegerDivisionByZero) {
  Tensor a = Tensor::fromVector(std::vector<int64_t>{5, -5}, {2});
  Tensor z = Tensor::fromVector(std::vector<int64_t>{1, 0}, {2});
  EXPECT_EQ(messageOf([&] { div(a, z, "floor"); }), "ZeroDivisionError");
  EXPECT_EQ(messageOf([&] { remainder(a, z); }), "ZeroDivisionError");
  Tensor q = div(a, z);  // true division: Float with inf
  EXPECT_EQ(q.dtype(), ScalarType::Float);
  EXPECT_TRUE(std::isinf(q.doubleAt(1)));
}

TEST(OpsElementwise, NanPropagation) {
  const double nan = std::nan("");
  Tensor x = Tensor::fromVector(std::vector<float>{1.f, static_cast<float>(nan), 3.f}, {3});
  Tensor y = Tensor::fromVector(std::vector<float>{static_cast<float>(nan), 0.f, 5.f}, {3});
  Tensor m = maximum(x, y);
  EXPECT_TRUE(std::isnan(m.doubleAt(0)) && std::isnan(m.doubleAt(1)));
  EXPECT_EQ(m.doubleAt(2), 5.0);
  EXPECT_TRUE(std::isnan(max(x).itemDouble()));
  Tensor c = clamp(x, std::optional<Scalar>(0.0), std::optional<Scalar>(2.0));
  EXPECT_TRUE(std::isnan(c.doubleAt(1)));
  EXPECT_EQ(c.doubleAt(2), 2.0);
}

TEST(OpsElementwise, TypePromotion) {
  Tensor i = Tensor::fromVector(std::vector<int64_t>{1, 2}, {2});
  EXPECT_EQ(resultType(i, Scalar(2.5)), ScalarType::Float);
  EXPECT_EQ(resultType(i.to(ScalarType::Byte), Scalar(int64_t{1000})), ScalarType::Byte);
  EXPECT_EQ(resultType(Tensor::fromVector(std::vector<float>{1.f}, {1}), Tensor::scalar(1.0)),
            ScalarType::Float);
  EXPECT_EQ(resultType(i.to(ScalarType::Char), Tensor::scalar(int64_t{3})), ScalarType::Char);
  EXPECT_EQ(add(i, Scalar(true)).dtype(), ScalarType::Long);
}

TEST(OpsElementwise, BroadcastError) {
  Tensor a = zeros({2, 3}), b = zeros({4});
  EXPECT_EQ(
      messageOf([&] { add(a, b); }),
      "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
}

TEST(OpsShape, ViewErrors) {
  Tensor x = zeros({3, 4});
  EXPECT_EQ(
      messageOf([&] { view(transpose(x, 0, 1), {12}); }),
      "view size is not compatible with input tensor's size and stride (at least one dimension "
      "spans across two contiguous subspaces). Use .reshape(...) instead.");
  EXPECT_EQ(messageOf([&] {
              view(x, {5, -1});
            }),
            "shape '[5, -1]' is invalid for input of size 12");
  EXPECT_EQ(messageOf([&] { view(x, {-1, -1}); }), "only one dimension can be inferred");
  Tensor v = view(x, {2, 6});
  EXPECT_TRUE(v.storage().isAlias(x.storage()));
}

TEST(OpsShape, CopyIntoView) {
  Tensor x = zeros({3, 4});
  Tensor col = select(x, 1, 2);
  fill_(col, 7);
  EXPECT_EQ(x.doubleAt(2), 7.0);
  EXPECT_EQ(x.doubleAt(6), 7.0);
  Tensor row = select(x, 0, 0);
  copy_(row, Tensor::fromVector(std::vector<int64_t>{1, 2, 3, 4}, {4}));
  EXPECT_EQ(x.doubleAt(3), 4.0);
}

TEST(OpsShape, SliceClamps) {
  Tensor x = arange(10);
  EXPECT_EQ(slice(x, 0, -100, 100).numel(), 10);
  EXPECT_EQ(slice(x, 0, 7, 2).numel(), 0);
  EXPECT_EQ(slice(x, 0, 1, std::nullopt, 3).numel(), 3);
}

TEST(OpsConv, OneDnnMatchesReference) {
  Tensor x = Tensor::empty({2, 4, 9, 7}, ScalarType::Float);
  Tensor w = Tensor::empty({6, 2, 3, 3}, ScalarType::Float);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = static_cast<float>(std::sin(i * 0.37));
  for (int64_t i = 0; i < w.numel(); ++i)
    w.data<float>()[i] = static_cast<float>(std::cos(i * 0.11));
  for (bool tr : {false, true}) {
    Tensor ww = tr ? Tensor::empty({4, 3, 3, 3}, ScalarType::Float) : w;
    if (tr)
      for (int64_t i = 0; i < ww.numel(); ++i)
        ww.data<float>()[i] = static_cast<float>(std::cos(i * 0.13));
    Tensor a = convolution(x, ww, std::nullopt, {2}, {1}, {1}, tr, {tr ? 1 : 0}, 2);
    Tensor b = convolutionReference(x, ww, std::nullopt, {2}, {1}, {1}, tr, {tr ? 1 : 0}, 2);
    ASSERT_EQ(a.sizes(), b.sizes());
    for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.doubleAt(i), b.doubleAt(i), 1e-4);
  }
}

TEST(OpsParallel, Threads) {
  setNumThreads(2);
  EXPECT_EQ(getNumThreads(), 2);
  Tensor big = ones({1 << 18});
  EXPECT_EQ(sum(big).itemDouble(), static_cast<double>(1 << 18));
}

// Note [Thread budget]: a tiny op gets one thread, a large one all of them; the limit holds
// for the guard's life only.
TEST(OpsParallel, ThreadBudget) {
  setNumThreads(2);
  EXPECT_EQ(threadsForWork(0), 1);
  EXPECT_EQ(threadsForWork(2.0 * 16 * 128 * 384), 1);  // a d=128 encoder's QKV projection
  EXPECT_EQ(threadsForWork(2 * kWorkPerThread - 1), 1);
  EXPECT_EQ(threadsForWork(2 * kWorkPerThread), 2);
  EXPECT_EQ(threadsForWork(2.0 * 64 * 56 * 56 * 64 * 9), 2);  // a resnet50 3x3 convolution
  EXPECT_EQ(threadsForWork(std::nan("")), 1);
  {
    ThreadLimit limit(threadsForWork(1000));
    EXPECT_EQ(getNumThreads(), 1);
    {
      ThreadLimit wider(2);  // never raises the count
      EXPECT_EQ(getNumThreads(), 1);
    }
    EXPECT_EQ(getNumThreads(), 1);
  }
  EXPECT_EQ(getNumThreads(), 2);
  setNumThreads(1);
  EXPECT_EQ(threadsForWork(1e12), 1);
  setNumThreads(2);
}

// setNumThreads is per thread, as OpenMP's count is: a server's instance threads each keep their
// own count, and a choice on one thread survives adaptThreadsToLoad() there.
TEST(OpsParallel, ThreadCountIsPerThread) {
  setNumThreads(1);
  int other = 0, otherAfterAdapt = 0;
  std::thread t([&] {
    setNumThreads(2);
    other = getNumThreads();
    adaptThreadsToLoad();
    otherAfterAdapt = getNumThreads();
  });
  t.join();
  EXPECT_EQ(other, 2);
  EXPECT_EQ(otherAfterAdapt, 2);
  EXPECT_EQ(getNumThreads(), 1);
  adaptThreadsToLoad();
  EXPECT_EQ(getNumThreads(), 1);
  setNumThreads(2);
}

// Note [Scratchpads of shared primitives] (ops/dnnl_utils.h): the cached oneDNN primitives are
// made on one thread and run on another (a server warms up on its loading thread); each run
// takes the running thread's scratchpad, and the results are the same bits.
TEST(OpsParallel, CachedPrimitivesRunOnAnotherThread) {
  auto values = [](const IntList& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return reshape(sin(arange(Scalar(n), ScalarType::Float)), shape);
  };
  const Tensor x = values({2, 32, 28, 28}), w = values({32, 32, 3, 3}), a = values({64, 256}),
               b = values({256, 192});
  auto compute = [&] {
    return std::vector<Tensor>{convNd(x, w, std::nullopt, {1, 1}, {1, 1}), matmul(a, b),
                               layerNorm(a, {256}), softmax(a, 1)};
  };
  const std::vector<Tensor> here = compute();
  std::vector<Tensor> there;
  std::thread t([&] { there = compute(); });
  t.join();
  ASSERT_EQ(here.size(), there.size());
  for (size_t i = 0; i < here.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(here[i].sizes(), there[i].sizes());
    EXPECT_EQ(std::memcmp(here[i].rawData(), there[i].rawData(), here[i].nbytes()), 0);
  }
}

std::string tmpPath(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string("torchless_ops_") + name)).string();
}

TEST(Npy, RoundTrip) {
  for (ScalarType dt : {ScalarType::Float, ScalarType::Double, ScalarType::Long, ScalarType::Bool,
                        ScalarType::Byte, ScalarType::Half, ScalarType::Char}) {
    Tensor t = transpose(arange(Scalar(int64_t{0}), Scalar(int64_t{6}), Scalar(int64_t{1}),
                                dt == ScalarType::Bool ? ScalarType::Long : dt),
                         0, 0);
    t = reshape(toDtype(t, dt), {2, 3});
    const std::string p = tmpPath("rt.npy");
    saveNpy(p, transpose(t, 0, 1));
    Tensor r = loadNpy(p);
    ASSERT_EQ(r.dtype(), dt);
    ASSERT_EQ(r.sizes(), (IntList{3, 2}));
    Tensor tt = transpose(t, 0, 1);
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(r.doubleAt(i), tt.doubleAt(i));
    std::remove(p.c_str());
  }
  const std::string p = tmpPath("scalar.npy");
  saveNpy(p, Tensor::scalar(2.5));
  Tensor s = loadNpy(p);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.itemDouble(), 2.5);
  std::remove(p.c_str());
}

std::string header(const std::string& dict, int major = 1) {
  std::string h = "\x93NUMPY";
  h.push_back(static_cast<char>(major));
  h.push_back(0);
  std::string d = dict + "\n";
  if (major == 1) {
    h.push_back(static_cast<char>(d.size() & 0xff));
    h.push_back(static_cast<char>(d.size() >> 8));
  } else {
    for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>((d.size() >> (8 * i)) & 0xff));
  }
  return h + d;
}

TEST(Npy, FortranBigEndianAndErrors) {
  // Fortran order [2, 3] holding column-major 0..5
  std::string f = header("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", 2);
  for (int32_t v = 0; v < 6; ++v) f.append(reinterpret_cast<const char*>(&v), 4);
  Tensor t = parseNpy(f.data(), f.size(), "f.npy");
  EXPECT_EQ(t.doubleAt(1), 2.0);  // row 0, col 1 = element 2 in column-major
  EXPECT_EQ(t.doubleAt(3), 1.0);
  std::string b = header("{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }");
  const unsigned char be[8] = {0x40, 0x04, 0, 0, 0, 0, 0, 0};  // 2.5 big-endian
  b.append(reinterpret_cast<const char*>(be), 8);
  EXPECT_EQ(parseNpy(b.data(), b.size(), "b.npy").itemDouble(), 2.5);

  std::string shortData =
      header("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }");
  std::string msg = messageOf([&] { parseNpy(shortData.data(), shortData.size(), "s.npy"); });
  EXPECT_NE(msg.find("short"), std::string::npos) << msg;
  // Found by robust.fuzz_npy: no elements, but strides (sizes with zeros read as ones) that
  // overflow int64; refused with a message instead of overflowing.
  std::string emptyHuge =
      header("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 38888885, 777777777771), }");
  msg = messageOf([&] { parseNpy(emptyHuge.data(), emptyHuge.size(), "e.npy"); });
  EXPECT_NE(msg.find("the strides of [0, 38888885, 777777777771] overflow int64"),
            std::string::npos)
      << msg;
  std::string badDtype =
      header("{'descr': '<U4', 'fortran_order': False, 'shape': (1,), }") + "abcd";
  EXPECT_NE(
      messageOf([&] { parseNpy(badDtype.data(), badDtype.size(), "u.npy"); }).find("unsupported"),
      std::string::npos);
  std::string badMagic = "NUMPY-nope";
  EXPECT_NE(messageOf([&] { parseNpy(badMagic.data(), badMagic.size(), "m.npy"); }).find("magic"),
            std::string::npos);
  std::string hugeHeader = std::string("\x93NUMPY\x01\x00\xff\xff", 10);
  EXPECT_NE(
      messageOf([&] { parseNpy(hugeHeader.data(), hugeHeader.size(), "h.npy"); }).find("exceeds"),
      std::string::npos);
  try {
    loadNpy("/nonexistent/x.npy");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.place(), "/nonexistent/x.npy");
  }
}

}  // namespace
}  // namespace torchless::ops
