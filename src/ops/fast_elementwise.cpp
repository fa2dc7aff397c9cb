#include "ops/fast_elementwise.h"

#include "ops/parallel.h"

#include <algorithm>
#include <cmath>

namespace torchless::ops::fast {
namespace {

constexpr int64_t kGrain = 32768;

#define TL_MULTIVERSION __attribute__((target_clones("avx2", "default")))

TL_MULTIVERSION void reluLoop(const float* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.f ? 0.f : x[i];
}
TL_MULTIVERSION void reluLoopInPlace(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] < 0.f ? 0.f : y[i];
}
TL_MULTIVERSION void clampLoop(const float* x, float* y, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(x[i], lo), hi);
}
TL_MULTIVERSION void addLoop(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}
TL_MULTIVERSION void addAlphaLoop(const float* a, const float* b, float* y, int64_t n,
                                  float alpha) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + alpha * b[i];
}
TL_MULTIVERSION void mulLoop(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}
TL_MULTIVERSION void hardswishLoop(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = v * std::min(std::max(v + 3.f, 0.f), 6.f) / 6.f;
  }
}
void sigmoidLoop(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 1.f / (1.f + std::exp(-x[i]));
}
void siluLoop(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.f + std::exp(-x[i]));
}

template <typename F>
void split(int64_t n, const F& f) {
  parallelFor(n, kGrain, [&](int64_t b, int64_t e) { f(b, e - b); });
}

}  // namespace

void relu(const float* x, float* y, int64_t n) {
  if (x == y)
    split(n, [&](int64_t b, int64_t m) { reluLoopInPlace(y + b, m); });
  else
    split(n, [&](int64_t b, int64_t m) { reluLoop(x + b, y + b, m); });
}
void clamp(const float* x, float* y, int64_t n, float lo, float hi) {
  split(n, [&](int64_t b, int64_t m) { clampLoop(x + b, y + b, m, lo, hi); });
}
void sigmoid(const float* x, float* y, int64_t n) {
  split(n, [&](int64_t b, int64_t m) { sigmoidLoop(x + b, y + b, m); });
}
void silu(const float* x, float* y, int64_t n) {
  split(n, [&](int64_t b, int64_t m) { siluLoop(x + b, y + b, m); });
}
void hardswish(const float* x, float* y, int64_t n) {
  split(n, [&](int64_t b, int64_t m) { hardswishLoop(x + b, y + b, m); });
}
void add(const float* a, const float* b, float* y, int64_t n, float alpha) {
  if (alpha == 1.f)
    split(n, [&](int64_t s, int64_t m) { addLoop(a + s, b + s, y + s, m); });
  else
    split(n, [&](int64_t s, int64_t m) { addAlphaLoop(a + s, b + s, y + s, m, alpha); });
}
void mul(const float* a, const float* b, float* y, int64_t n) {
  split(n, [&](int64_t s, int64_t m) { mulLoop(a + s, b + s, y + s, m); });
}

}  // namespace torchless::ops::fast
