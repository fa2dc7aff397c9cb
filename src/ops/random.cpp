// Random sampling with PyTorch's numbers (ops/random.h). Each transform names the PyTorch
// 1.13 source it reproduces.
#include "ops/random.h"

#include "core/error.h"
#include "ops/shape.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace torchless::ops {

void normalFill16Avx2(float* data, float mean, float std);  // random_avx2.cpp

namespace {

/// at::CPUGeneratorImpl: mt19937 (at::mt19937 is the standard engine seeded with the low 32
/// bits of the seed) and the cached second Box-Muller sample of normal_distribution<double>.
struct CpuGenerator {
  std::mutex mu;
  uint64_t seed = nondeterministicSeed();
  std::mt19937 engine{static_cast<uint32_t>(seed & 0xffffffffULL)};
  std::optional<double> nextDoubleNormal;

  /// As c10::detail::getNonDeterministicRandom: libtorch's default generator starts from 64
  /// random bits, so only torch.manual_seed makes draws repeatable.
  static uint64_t nondeterministicSeed() {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) | rd();
  }

  uint32_t random() { return static_cast<uint32_t>(engine()); }
  /// CPUGeneratorImpl::random64: make64BitsFrom32Bits(hi = first, lo = second).
  uint64_t random64() {
    const uint64_t hi = random();
    const uint64_t lo = random();
    return (hi << 32) | lo;
  }
};

CpuGenerator& generator() {
  static CpuGenerator g;
  return g;
}

// transformation::uniform_real: the low `digits` bits scaled into [0, 1), then into [from, to).
float uniformFloat(CpuGenerator& g) {
  constexpr uint32_t mask = (1u << 24) - 1;
  constexpr float divisor = 1.0f / static_cast<float>(1u << 24);
  return static_cast<float>(g.random() & mask) * divisor;
}
double uniformDouble(CpuGenerator& g) {
  constexpr uint64_t mask = (uint64_t(1) << 53) - 1;
  constexpr double divisor = 1.0 / static_cast<double>(uint64_t(1) << 53);
  return static_cast<double>(g.random64() & mask) * divisor;
}

/// PyTorch's CPU capability (Note [CPU capability of normal_] in ops/random.h).
enum class Capability { Default, Avx2, Avx512 };
Capability cpuCapability() {
  static const Capability c = [] {
    if (const char* env = std::getenv("ATEN_CPU_CAPABILITY")) {
      const std::string s = env;
      if (s == "default") return Capability::Default;
      if (s == "avx2") return Capability::Avx2;
      if (s == "avx512") return Capability::Avx512;
    }
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Capability::Avx2;
#endif
    return Capability::Default;
  }();
  return c;
}

/// Calls f(element pointer) for every element of `t` in TensorIterator's order for one
/// output: memory order (dims by decreasing stride, ties in dim order). Overlapping writes
/// are refused as PyTorch refuses them.
template <typename T, typename F>
void forEachElement(const Tensor& t, const char* op, F&& f) {
  T* base = t.data<T>();
  if (t.isContiguous()) {
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) f(base + i);
    return;
  }
  const IntList& sizes = t.sizes();
  const IntList& strides = t.strides();
  std::vector<size_t> dims;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    if (strides[d] == 0 && sizes[d] > 1)
      throw Error(fmt::format(
          "{}: unsupported operation: more than one element of the written-to tensor refers to a "
          "single memory location. Please clone() the tensor before performing the operation.",
          op));
    dims.push_back(d);
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [&](size_t a, size_t b) { return std::abs(strides[a]) > std::abs(strides[b]); });
  if (t.numel() == 0) return;
  std::vector<int64_t> idx(dims.size(), 0);
  T* p = base;
  while (true) {
    f(p);
    size_t k = dims.size();
    while (k > 0) {
      --k;
      const size_t d = dims[k];
      if (++idx[k] < sizes[d]) {
        p += strides[d];
        break;
      }
      p -= strides[d] * (sizes[d] - 1);
      idx[k] = 0;
      if (k == 0) return;
    }
    if (dims.empty()) return;
  }
}

[[noreturn]] void badDtype(const char* op, const Tensor& t) {
  throw Error(fmt::format("\"{}\" not implemented for '{}'", op, toString(t.dtype())));
}

// DistributionTemplates.h normal_fill_16: Box-Muller on 8 pairs (u1 = 1 - data[j], u2 = data[j +
// 8]). `fma` is what GCC's contraction makes of `radius * cos * std + mean` in the AVX512 build.
template <typename T>
void normalFill16(T* data, T mean, T std, bool fma) {
  for (int j = 0; j < 8; ++j) {
    const T u1 = 1 - data[j];
    const T u2 = data[j + 8];
    const T radius = std::sqrt(-2 * std::log(u1));
    const T theta = static_cast<T>(2.0f * M_PI * u2);
    if (fma) {
      data[j] = std::fma(radius * std::cos(theta), std, mean);
      data[j + 8] = std::fma(radius * std::sin(theta), std, mean);
    } else {
      data[j] = radius * std::cos(theta) * std + mean;
      data[j + 8] = radius * std::sin(theta) * std + mean;
    }
  }
}

// DistributionTemplates.h normal_fill: uniforms for every element, transformed 16 at a time;
// a tail redraws the last 16.
template <typename T>
void normalFill(CpuGenerator& g, T* data, int64_t size, T mean, T std) {
  auto uniform = [&g]() -> T {
    if constexpr (std::is_same_v<T, float>)
      return uniformFloat(g);
    else
      return uniformDouble(g);
  };
  const Capability cap = cpuCapability();
  const bool avx2 = std::is_same_v<T, float> && cap == Capability::Avx2;
  auto fill16 = [&](T* p) {
    if constexpr (std::is_same_v<T, float>) {
      if (avx2) return normalFill16Avx2(p, mean, std);
    }
    normalFill16<T>(p, mean, std, cap != Capability::Default);
  };
  for (int64_t i = 0; i < size; ++i) data[i] = uniform();
  for (int64_t i = 0; i < size - 15; i += 16) fill16(data + i);
  if (size % 16 != 0) {
    T* tail = data + size - 16;
    for (int i = 0; i < 16; ++i) tail[i] = uniform();
    fill16(tail);
  }
}

// DistributionsHelper.h normal_distribution<double>: a pair from two uniforms, the second
// sample cached in the generator.
// `fma` as in uniform_.
double normalDouble(CpuGenerator& g, double mean, double std, bool fma) {
  auto transform = [&](double v) { return fma ? std::fma(v, std, mean) : v * std + mean; };
  if (g.nextDoubleNormal) {
    const double r = *g.nextDoubleNormal;
    g.nextDoubleNormal.reset();
    return transform(r);
  }
  const double u1 = uniformDouble(g);
  const double u2 = uniformDouble(g);
  const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
  const double theta = 2.0 * M_PI * u1;
  g.nextDoubleNormal = r * std::sin(theta);
  return transform(r * std::cos(theta));
}

template <typename F>
void dispatchAll(const Tensor& t, const char* op, F&& f) {
  switch (t.dtype()) {
    case ScalarType::Float: return f(float{});
    case ScalarType::Double: return f(double{});
    case ScalarType::Long: return f(int64_t{});
    case ScalarType::Int: return f(int32_t{});
    case ScalarType::Short: return f(int16_t{});
    case ScalarType::Char: return f(int8_t{});
    case ScalarType::Byte: return f(uint8_t{});
    case ScalarType::Bool: return f(bool{});
    default: badDtype(op, t);
  }
}

}  // namespace

void manualSeed(uint64_t seed) {
  CpuGenerator& g = generator();
  std::lock_guard<std::mutex> lock(g.mu);
  g.engine.seed(static_cast<uint32_t>(seed & 0xffffffffULL));
  g.seed = seed;
  g.nextDoubleNormal.reset();
}

uint64_t initialSeed() {
  CpuGenerator& g = generator();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.seed;
}

// DistributionTemplates.h uniform_kernel: x * (to - from) + from per element (serial), in the
// tensor's dtype; contracted to an FMA in PyTorch's AVX2/AVX512 builds.
void uniform_(const Tensor& self, double from, double to) {
  TL_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from={} > to={}",
           from, to);
  CpuGenerator& g = generator();
  const bool fma = cpuCapability() != Capability::Default;
  std::lock_guard<std::mutex> lock(g.mu);
  if (self.dtype() == ScalarType::Float) {
    const float f = static_cast<float>(from), span = static_cast<float>(to) - f;
    forEachElement<float>(self, "uniform_", [&](float* p) {
      const float x = uniformFloat(g);
      *p = fma ? std::fma(x, span, f) : x * span + f;
    });
  } else if (self.dtype() == ScalarType::Double) {
    const double span = to - from;
    forEachElement<double>(self, "uniform_", [&](double* p) {
      const double x = uniformDouble(g);
      *p = fma ? std::fma(x, span, from) : x * span + from;
    });
  } else {
    badDtype("check_uniform_bounds", self);
  }
}

// DistributionTemplates.h normal_kernel.
void normal_(const Tensor& self, double mean, double std) {
  TL_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std {}", std);
  CpuGenerator& g = generator();
  std::lock_guard<std::mutex> lock(g.mu);
  const int64_t size = self.numel();
  const bool contiguous = self.isContiguous();
  const bool fma = cpuCapability() != Capability::Default;
  if (self.dtype() == ScalarType::Float) {
    if (size >= 16 && contiguous)
      return normalFill<float>(g, self.data<float>(), size, static_cast<float>(mean),
                               static_cast<float>(std));
    forEachElement<float>(self, "normal_", [&](float* p) {
      *p = static_cast<float>(normalDouble(g, mean, std, fma));
    });
  } else if (self.dtype() == ScalarType::Double) {
    if (size >= 16 && contiguous)
      return normalFill<double>(g, self.data<double>(), size, mean, std);
    forEachElement<double>(self, "normal_",
                           [&](double* p) { *p = normalDouble(g, mean, std, fma); });
  } else {
    badDtype("normal_kernel_cpu", self);
  }
}

// Random.cpp random_from_to + DistributionsHelper.h uniform_int_from_to_distribution.
void random_(const Tensor& self, int64_t from, std::optional<int64_t> to) {
  int64_t hi = 0;
  if (to) {
    hi = *to;
    TL_CHECK(from < hi, "random_ expects 'from' to be less than 'to', but got from={} >= to={}",
             from, hi);
  } else {
    // to = None: one past the dtype's largest value (floats: 2^digits + 1).
    switch (self.dtype()) {
      case ScalarType::Float: hi = (int64_t(1) << 24) + 1; break;
      case ScalarType::Double: hi = (int64_t(1) << 53) + 1; break;
      case ScalarType::Long:
        TL_CHECK(false, "random_ from {} to the largest int64 is not supported", from);
        break;
      case ScalarType::Int: hi = int64_t(std::numeric_limits<int32_t>::max()) + 1; break;
      case ScalarType::Short: hi = int64_t(std::numeric_limits<int16_t>::max()) + 1; break;
      case ScalarType::Char: hi = int64_t(std::numeric_limits<int8_t>::max()) + 1; break;
      case ScalarType::Byte: hi = 256; break;
      case ScalarType::Bool: hi = 2; break;
      default: badDtype("random_from_to_kernel_cpu", self);
    }
  }
  const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(from);
  CpuGenerator& g = generator();
  std::lock_guard<std::mutex> lock(g.mu);
  dispatchAll(self, "random_from_to_kernel_cpu", [&](auto zero) {
    using T = decltype(zero);
    constexpr bool wide =
        std::is_same_v<T, int64_t> || std::is_same_v<T, double> || std::is_same_v<T, float>;
    forEachElement<T>(self, "random_", [&](T* p) {
      const uint64_t v = (wide && range >= (uint64_t(1) << 32)) ? g.random64() : g.random();
      *p = static_cast<T>(static_cast<int64_t>(v % range + static_cast<uint64_t>(from)));
    });
  });
}

// DistributionsHelper.h uniform_int_distribution + TransformationHelper.h uniform_int.
void random_(const Tensor& self) {
  CpuGenerator& g = generator();
  std::lock_guard<std::mutex> lock(g.mu);
  dispatchAll(self, "random_kernel_cpu", [&](auto zero) {
    using T = decltype(zero);
    forEachElement<T>(self, "random_", [&](T* p) {
      const uint64_t v =
          (std::is_same_v<T, double> || std::is_same_v<T, int64_t>) ? g.random64() : g.random();
      if constexpr (std::is_same_v<T, bool>)
        *p = (v & 1) != 0;
      else if constexpr (std::is_floating_point_v<T>)
        *p =
            static_cast<T>(v % static_cast<uint64_t>((1ULL << std::numeric_limits<T>::digits) + 1));
      else
        *p = static_cast<T>(v % (static_cast<uint64_t>(std::numeric_limits<T>::max()) + 1));
    });
  });
}

// TensorFactories.cpp randperm_cpu: identity, then Fisher-Yates with random() % (n - i).
Tensor randperm(int64_t n, ScalarType dtype) {
  TL_CHECK(n >= 0, "n must be non-negative, got{}", n);
  Tensor out = empty({n}, dtype);
  CpuGenerator& g = generator();
  std::lock_guard<std::mutex> lock(g.mu);
  dispatchAll(out, "randperm", [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>) {
      badDtype("randperm", out);
    } else {
      T* r = out.data<T>();
      for (int64_t i = 0; i < n; ++i) r[i] = static_cast<T>(i);
      for (int64_t i = 0; i < n - 1; ++i) {
        const int64_t z = static_cast<int64_t>(g.random() % static_cast<uint64_t>(n - i));
        std::swap(r[i], r[z + i]);
      }
    }
  });
  return out;
}

// DistributionTemplates.h bernoulli_kernel(self, double p): uniform double < p, serially.
void bernoulli_(const Tensor& self, double p) {
  TL_CHECK(p >= 0 && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p={}", p);
  CpuGenerator& g = generator();
  std::lock_guard<std::mutex> lock(g.mu);
  dispatchAll(self, "bernoulli_scalar_cpu_", [&](auto zero) {
    using T = decltype(zero);
    forEachElement<T>(self, "bernoulli_",
                      [&](T* p_) { *p_ = static_cast<T>(uniformDouble(g) < p); });
  });
}

// DistributionTemplates.h bernoulli_kernel(self, p_): per element, a uniform in p's precision
// (double: 53 bits of random64, float: 24 bits of random) compared with p, serially.
void bernoulli_(const Tensor& self, const Tensor& p) {
  TL_CHECK(p.dtype() == ScalarType::Float || p.dtype() == ScalarType::Double,
           "bernoulli_: expected p to be a Float or Double tensor, got {}", toString(p.dtype()));
  Tensor probs = contiguous(expand(p, self.sizes()));
  Tensor out = self.isContiguous() ? self : contiguous(self);
  CpuGenerator& g = generator();
  {
    std::lock_guard<std::mutex> lock(g.mu);
    int64_t i = 0;
    dispatchAll(out, "bernoulli_tensor_cpu_self_", [&](auto zero) {
      using T = decltype(zero);
      if (probs.dtype() == ScalarType::Double) {
        const double* pd = probs.data<double>();
        forEachElement<T>(out, "bernoulli_",
                          [&](T* o) { *o = static_cast<T>(uniformDouble(g) < pd[i++]); });
      } else {
        const float* pf = probs.data<float>();
        forEachElement<T>(out, "bernoulli_",
                          [&](T* o) { *o = static_cast<T>(uniformFloat(g) < pf[i++]); });
      }
    });
  }
  if (!out.is(self)) {
    Tensor target = self;
    copy_(target, out);
  }
}

}  // namespace torchless::ops
