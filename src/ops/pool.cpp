#include "ops/pool.h"

#include "ops/dispatch.h"
#include "ops/parallel.h"
#include "ops/shape.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace torchless::ops {

int64_t poolingOutputSize(int64_t in, int64_t k, int64_t pad, int64_t s, int64_t d, bool ceilMode) {
  const int64_t num = in + 2 * pad - d * (k - 1) - 1 + (ceilMode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceilMode && (out - 1) * s >= in + pad) --out;
  return out;
}

namespace {

struct PoolGeom {
  int64_t k = 0;                     // spatial dims
  IntList kernel, stride, pad, dil;  // 3 entries each (leading dims padded)
  IntList in3, out3;                 // [D, H, W] in / out
  int64_t planes = 0;                // N * C
  IntList outShape;                  // full output shape
  bool unbatched = false;
};

IntList fill3(const IntList& v, int64_t k, int64_t lead, const char* name, int64_t dflt) {
  IntList e;
  if (v.empty())
    e.assign(static_cast<size_t>(k), dflt);
  else if (v.size() == 1)
    e.assign(static_cast<size_t>(k), v[0]);
  else {
    TL_CHECK(static_cast<int64_t>(v.size()) == k,
             "{} must either be a single int, or a tuple of {} ints", name, k);
    e = v;
  }
  IntList out(static_cast<size_t>(3 - k), lead);
  out.insert(out.end(), e.begin(), e.end());
  return out;
}

PoolGeom geometry(const Tensor& x, int64_t k, const IntList& kernel, const IntList& stride,
                  const IntList& padding, const IntList& dilation, bool ceilMode,
                  const char* name) {
  TL_CHECK(x.dim() == k + 1 || x.dim() == k + 2, "{}: Expected {}D or {}D input tensor, but got {}",
           name, k + 1, k + 2, sizesToString(x.sizes()));
  PoolGeom g;
  g.k = k;
  g.unbatched = x.dim() == k + 1;
  g.kernel = fill3(kernel, k, 1, "kernel_size", 1);
  g.stride = fill3(stride.empty() ? kernel : stride, k, 1, "stride", 1);
  g.pad = fill3(padding, k, 0, "padding", 0);
  g.dil = fill3(dilation, k, 1, "dilation", 1);
  g.planes = 1;
  const int64_t sp0 = x.dim() - k;
  for (int64_t i = 0; i < sp0; ++i) g.planes *= x.sizes()[i];
  g.in3 = IntList(static_cast<size_t>(3 - k), 1);
  for (int64_t i = 0; i < k; ++i) g.in3.push_back(x.sizes()[sp0 + i]);
  g.outShape = IntList(x.sizes().begin(), x.sizes().begin() + sp0);
  g.out3 = IntList(static_cast<size_t>(3 - k), 1);
  for (int64_t i = 3 - k; i < 3; ++i) {
    TL_CHECK(g.kernel[i] > 0, "kernel_size must be greater than zero, but got kH: {} kW: {}",
             g.kernel[1], g.kernel[2]);
    TL_CHECK(g.stride[i] > 0, "stride should be greater than zero, but got dH: {} dW: {}",
             g.stride[1], g.stride[2]);
    TL_CHECK(g.dil[i] > 0, "dilation should be greater than zero");
    TL_CHECK(g.pad[i] >= 0 && g.pad[i] <= ((g.kernel[i] - 1) * g.dil[i] + 1) / 2,
             "pad should be at most half of effective kernel size, but got pad={}, kernel_size={} "
             "and dilation={}",
             g.pad[i], g.kernel[i], g.dil[i]);
    const int64_t o =
        poolingOutputSize(g.in3[i], g.kernel[i], g.pad[i], g.stride[i], g.dil[i], ceilMode);
    g.out3.push_back(o);
    g.outShape.push_back(o);
  }
  for (int64_t i = 3 - k; i < 3; ++i)
    TL_CHECK(g.out3[i] >= 1,
             "Given input size: ({}). Calculated output size: ({}). Output size is too small",
             fmt::join(x.sizes().begin() + 1, x.sizes().end(), "x"),
             fmt::join(g.outShape.begin() + 1, g.outShape.end(), "x"));
  return g;
}

}  // namespace

std::tuple<Tensor, Tensor> maxPoolWithIndices(const Tensor& x, int64_t k, const IntList& kernel,
                                              const IntList& stride, const IntList& padding,
                                              const IntList& dilation, bool ceilMode) {
  const PoolGeom g = geometry(x, k, kernel, stride, padding, dilation, ceilMode, "max_pool");
  Tensor c = x.contiguous();
  Tensor out = Tensor::empty(g.outShape, x.dtype());
  Tensor idx = Tensor::empty(g.outShape, ScalarType::Long);
  dispatchFloating(x.dtype(),
                   k == 1   ? "max_pool1d"
                   : k == 2 ? "max_pool2d"
                            : "max_pool3d",
                   [&](auto tag) {
                     using T = decltype(tag);
                     using A = OpMath<T>;
                     const T* ip = c.data<T>();
                     T* op = out.data<T>();
                     int64_t* xp = idx.data<int64_t>();
                     const int64_t ID = g.in3[0], IH = g.in3[1], IW = g.in3[2], OD = g.out3[0],
                                   OH = g.out3[1], OW = g.out3[2];
                     parallelFor(g.planes, 1, [&](int64_t lo, int64_t hi) {
                       for (int64_t pl = lo; pl < hi; ++pl) {
                         const T* in = ip + pl * ID * IH * IW;
                         for (int64_t od = 0; od < OD; ++od)
                           for (int64_t oh = 0; oh < OH; ++oh)
                             for (int64_t ow = 0; ow < OW; ++ow) {
                               A best = kIsFloat<T> ? -std::numeric_limits<A>::infinity()
                                                    : std::numeric_limits<A>::lowest();
                               int64_t bi = -1;
                               for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
                                 const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dil[0];
                                 if (id < 0 || id >= ID) continue;
                                 for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
                                   const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dil[1];
                                   if (ih < 0 || ih >= IH) continue;
                                   for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                                     const int64_t iw = ow * g.stride[2] - g.pad[2] + kw * g.dil[2];
                                     if (iw < 0 || iw >= IW) continue;
                                     const int64_t off = (id * IH + ih) * IW + iw;
                                     const A v = static_cast<A>(in[off]);
                                     // As ATen's cpu_max_pool: `val > max || isnan(val)`,
                                     // so the window's last NaN is the one reported.
                                     if (v > best || bi < 0 || v != v) {
                                       best = v;
                                       bi = off;
                                     }
                                   }
                                 }
                               }
                               const int64_t o = ((pl * OD + od) * OH + oh) * OW + ow;
                               op[o] = castTo<T>(best);
                               xp[o] = bi;
                             }
                       }
                     });
                   });
  return {out, idx};
}

namespace {

// Output rows [lo, hi) (over N * OH) of a channels-last max_pool2d (maxPool2dFloat); compiled
// for AVX-512 and AVX2 too, picked at load (the build targets baseline x86-64): resnet50's
// 112x112x64 pool took 0.34-0.52 ms on 1 thread with SSE.
__attribute__((target_clones("avx512f", "avx2", "default"))) void maxPoolRowsChannelsLast(
    const float* ip, float* op, int64_t lo, int64_t hi, int64_t C, int64_t IH, int64_t IW,
    int64_t OH, int64_t OW, int64_t KH, int64_t KW, int64_t SH, int64_t SW, int64_t PH, int64_t PW,
    int64_t DH, int64_t DW) {
  for (int64_t r = lo; r < hi; ++r) {
    const int64_t n = r / OH, oh = r % OH;
    for (int64_t ow = 0; ow < OW; ++ow) {
      float* o = op + ((n * OH + oh) * OW + ow) * C;
      for (int64_t c = 0; c < C; ++c) o[c] = -std::numeric_limits<float>::infinity();
      for (int64_t kh = 0; kh < KH; ++kh) {
        const int64_t ih = oh * SH - PH + kh * DH;
        if (ih < 0 || ih >= IH) continue;
        for (int64_t kw = 0; kw < KW; ++kw) {
          const int64_t iw = ow * SW - PW + kw * DW;
          if (iw < 0 || iw >= IW) continue;
          const float* in = ip + ((n * IH + ih) * IW + iw) * C;
          for (int64_t c = 0; c < C; ++c) {
            const float v = in[c];
            o[c] = (v > o[c] || v != v) ? v : o[c];
          }
        }
      }
    }
  }
}

// max_pool2d of a float [N, C, H, W] tensor without indices: a window's maximum, NaN when the
// window holds one (PyTorch's `val > max || isnan(val)`). A channels-last input (NHWC memory)
// is read in place and gives a channels-last result, as PyTorch's kernel does; the loop over
// channels is innermost and vectorizes. Any other input is made contiguous and pooled plane by
// plane. The window always holds at least one element (geometry() checks the padding).
Tensor maxPool2dFloat(const Tensor& x, const PoolGeom& g) {
  const int64_t N = x.sizes()[0], C = x.sizes()[1], IH = g.in3[1], IW = g.in3[2], OH = g.out3[1],
                OW = g.out3[2];
  const int64_t KH = g.kernel[1], KW = g.kernel[2], SH = g.stride[1], SW = g.stride[2],
                PH = g.pad[1], PW = g.pad[2], DH = g.dil[1], DW = g.dil[2];
  const IntList& st = x.strides();
  const bool channelsLast =
      C > 1 && st[1] == 1 && st[3] == C && st[2] == C * IW && st[0] == C * IW * IH;
  if (channelsLast) {
    Storage buf = Storage::allocate(static_cast<size_t>(N * OH * OW * C) * sizeof(float));
    Tensor out =
        Tensor::fromStorage(buf, 0, {N, C, OH, OW}, {OH * OW * C, 1, OW * C, C}, ScalarType::Float);
    const float* ip = x.data<float>();
    float* op = out.data<float>();
    parallelFor(N * OH, 1, [&](int64_t lo, int64_t hi) {
      maxPoolRowsChannelsLast(ip, op, lo, hi, C, IH, IW, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW);
    });
    return out;
  }
  Tensor c = x.contiguous();
  Tensor out = Tensor::empty({N, C, OH, OW}, ScalarType::Float);
  const float* ip = c.data<float>();
  float* op = out.data<float>();
  parallelFor(N * C, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t pl = lo; pl < hi; ++pl) {
      const float* in = ip + pl * IH * IW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t h0 = oh * SH - PH;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t w0 = ow * SW - PW;
          float best = -std::numeric_limits<float>::infinity();
          for (int64_t kh = 0; kh < KH; ++kh) {
            const int64_t ih = h0 + kh * DH;
            if (ih < 0 || ih >= IH) continue;
            const float* row = in + ih * IW;
            for (int64_t kw = 0; kw < KW; ++kw) {
              const int64_t iw = w0 + kw * DW;
              if (iw < 0 || iw >= IW) continue;
              const float v = row[iw];
              best = (v > best || v != v) ? v : best;
            }
          }
          op[(pl * OH + oh) * OW + ow] = best;
        }
      }
    }
  });
  return out;
}

}  // namespace

Tensor maxPool(const Tensor& x, int64_t k, const IntList& kernel, const IntList& stride,
               const IntList& padding, const IntList& dilation, bool ceilMode) {
  if (k == 2 && x.dim() == 4 && x.dtype() == ScalarType::Float && x.numel() > 0) {
    const PoolGeom g = geometry(x, k, kernel, stride, padding, dilation, ceilMode, "max_pool");
    return maxPool2dFloat(x, g);
  }
  return std::get<0>(maxPoolWithIndices(x, k, kernel, stride, padding, dilation, ceilMode));
}

Tensor avgPool(const Tensor& x, int64_t k, const IntList& kernel, const IntList& stride,
               const IntList& padding, bool ceilMode, bool countIncludePad,
               std::optional<int64_t> divisorOverride) {
  if (divisorOverride) TL_CHECK(*divisorOverride != 0, "divisor must be not zero");
  const PoolGeom g = geometry(x, k, kernel, stride, padding, {1}, ceilMode, "avg_pool");
  Tensor c = x.contiguous();
  Tensor out = Tensor::empty(g.outShape, x.dtype());
  dispatchNumeric(x.dtype(), "avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    using A = Acc<T>;
    const T* ip = c.data<T>();
    T* op = out.data<T>();
    const int64_t ID = g.in3[0], IH = g.in3[1], IW = g.in3[2], OD = g.out3[0], OH = g.out3[1],
                  OW = g.out3[2];
    parallelFor(g.planes, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t pl = lo; pl < hi; ++pl) {
        const T* in = ip + pl * ID * IH * IW;
        for (int64_t od = 0; od < OD; ++od)
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
              int64_t s[3], e[3];
              const int64_t o3[3] = {od, oh, ow}, in3[3] = {ID, IH, IW};
              int64_t poolSize = 1, count = 1;
              for (int i = 0; i < 3; ++i) {
                s[i] = o3[i] * g.stride[i] - g.pad[i];
                e[i] = std::min(s[i] + g.kernel[i], in3[i] + g.pad[i]);
                poolSize *= e[i] - s[i];
                s[i] = std::max<int64_t>(s[i], 0);
                e[i] = std::min(e[i], in3[i]);
                count *= std::max<int64_t>(e[i] - s[i], 0);
              }
              A acc = 0;
              for (int64_t id = s[0]; id < e[0]; ++id)
                for (int64_t ih = s[1]; ih < e[1]; ++ih)
                  for (int64_t iw = s[2]; iw < e[2]; ++iw)
                    acc += static_cast<A>(static_cast<OpMath<T>>(in[(id * IH + ih) * IW + iw]));
              const int64_t div = divisorOverride   ? *divisorOverride
                                  : countIncludePad ? poolSize
                                                    : count;
              const int64_t o = ((pl * OD + od) * OH + oh) * OW + ow;
              if constexpr (std::is_integral_v<T>)
                op[o] = castTo<T>(div == 0 ? 0 : acc / div);
              else
                op[o] = castTo<T>(acc / static_cast<A>(div));
            }
      }
    });
  });
  return out;
}

namespace {
template <bool IsMax>
std::tuple<Tensor, Tensor> adaptive(const Tensor& x, int64_t k, const IntList& outputSize) {
  TL_CHECK(x.dim() == k + 1 || x.dim() == k + 2,
           "adaptive pool: Expected {}D or {}D tensor, but got {}", k + 1, k + 2,
           sizesToString(x.sizes()));
  TL_CHECK(static_cast<int64_t>(outputSize.size()) == k || outputSize.size() == 1,
           "adaptive pool: output_size must be {}", k);
  const int64_t sp0 = x.dim() - k;
  int64_t planes = 1;
  for (int64_t i = 0; i < sp0; ++i) planes *= x.sizes()[i];
  IntList in3(static_cast<size_t>(3 - k), 1), out3(static_cast<size_t>(3 - k), 1);
  IntList outShape(x.sizes().begin(), x.sizes().begin() + sp0);
  for (int64_t i = 0; i < k; ++i) {
    in3.push_back(x.sizes()[sp0 + i]);
    const int64_t o = outputSize.size() == 1 ? outputSize[0] : outputSize[i];
    TL_CHECK(o >= 0, "adaptive pool: elements of output_size must be greater than or equal to 0");
    out3.push_back(o);
    outShape.push_back(o);
  }
  Tensor c = x.contiguous();
  Tensor out = Tensor::empty(outShape, x.dtype());
  Tensor idx = IsMax ? Tensor::empty(outShape, ScalarType::Long) : Tensor();
  dispatchNumeric(x.dtype(), IsMax ? "adaptive_max_pool2d" : "adaptive_avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    using A = Acc<T>;
    const T* ip = c.data<T>();
    T* op = out.data<T>();
    int64_t* xp = IsMax ? idx.data<int64_t>() : nullptr;
    const int64_t ID = in3[0], IH = in3[1], IW = in3[2], OD = out3[0], OH = out3[1], OW = out3[2];
    auto startOf = [](int64_t o, int64_t in, int64_t out) { return (o * in) / out; };
    auto endOf = [](int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; };
    parallelFor(planes, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t pl = lo; pl < hi; ++pl) {
        const T* in = ip + pl * ID * IH * IW;
        for (int64_t od = 0; od < OD; ++od)
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
              const int64_t d0 = startOf(od, ID, OD), d1 = endOf(od, ID, OD);
              const int64_t h0 = startOf(oh, IH, OH), h1 = endOf(oh, IH, OH);
              const int64_t w0 = startOf(ow, IW, OW), w1 = endOf(ow, IW, OW);
              const int64_t o = ((pl * OD + od) * OH + oh) * OW + ow;
              if constexpr (IsMax) {
                using M = OpMath<T>;
                M best = static_cast<M>(in[(d0 * IH + h0) * IW + w0]);
                int64_t bi = (d0 * IH + h0) * IW + w0;
                for (int64_t id = d0; id < d1; ++id)
                  for (int64_t ih = h0; ih < h1; ++ih)
                    for (int64_t iw = w0; iw < w1; ++iw) {
                      const int64_t off = (id * IH + ih) * IW + iw;
                      const M v = static_cast<M>(in[off]);
                      if (v > best || v != v) {  // the last NaN, as ATen's kernel
                        best = v;
                        bi = off;
                      }
                    }
                op[o] = castTo<T>(best);
                xp[o] = bi;
              } else {
                A acc = 0;
                for (int64_t id = d0; id < d1; ++id)
                  for (int64_t ih = h0; ih < h1; ++ih)
                    for (int64_t iw = w0; iw < w1; ++iw)
                      acc += static_cast<A>(static_cast<OpMath<T>>(in[(id * IH + ih) * IW + iw]));
                const int64_t n = (d1 - d0) * (h1 - h0) * (w1 - w0);
                op[o] = castTo<T>(acc / static_cast<A>(n));
              }
            }
      }
    });
  });
  return {out, idx};
}
}  // namespace

namespace {

// acc[c] += in[p * C + c] in double, for p in [0, HW) in order and c in [0, nc): one channels-last
// block of globalAvgPoolChannelsLast. Compiled for AVX-512 and AVX2 too, picked at load (the
// build targets baseline x86-64, two doubles a vector); the order of each channel's sum is kept.
__attribute__((target_clones("avx512f", "avx2", "default"))) void sumChannelsLast(
    const float* in, int64_t HW, int64_t C, int64_t nc, double* acc) {
  for (int64_t p = 0; p < HW; ++p)
    for (int64_t c = 0; c < nc; ++c) acc[c] += static_cast<double>(in[p * C + c]);
}

// adaptive_avg_pool2d(x, 1) of a float [N, C, H, W] tensor stored channels-last (NHWC memory),
// as the engine's convolutions leave it (squeeze-and-excitation blocks, classifier heads):
// read in place, summed in double over (h, w) in the order of the generic path (so the result
// is the same to the bit), channels innermost. Returns [N, C, 1, 1].
Tensor globalAvgPoolChannelsLast(const Tensor& x) {
  const int64_t N = x.sizes()[0], C = x.sizes()[1], HW = x.sizes()[2] * x.sizes()[3];
  Tensor out = Tensor::empty({N, C, 1, 1}, ScalarType::Float);
  const float* ip = x.data<float>();
  float* op = out.data<float>();
  constexpr int64_t kBlock = 256;  // channels summed at once at most (the sums stay on the stack)
  // Threads: one per kElementsPerThread summed (a wake-up is worth ~64K elements, Note [Thread
  // budget]); at batch 1 the channels are cut into narrower blocks (at least 16) so that each
  // thread gets one. Each channel is still summed in order: the result does not change.
  constexpr int64_t kElementsPerThread = int64_t{1} << 16;
  const int64_t threads =
      std::clamp<int64_t>(N * C * HW / kElementsPerThread, 1, std::max(1, omp_get_max_threads()));
  const int64_t perSample = (threads + N - 1) / N;
  const int64_t block =
      std::clamp<int64_t>(((C + perSample - 1) / perSample + 15) & ~int64_t{15}, 16, kBlock);
  const int64_t blocks = (C + block - 1) / block;
  parallelFor(N * blocks, std::max<int64_t>(1, N * blocks / threads), [&](int64_t lo, int64_t hi) {
    double acc[kBlock];
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t n = r / blocks, c0 = (r % blocks) * block, nc = std::min(block, C - c0);
      std::fill(acc, acc + nc, 0.0);
      sumChannelsLast(ip + n * HW * C + c0, HW, C, nc, acc);
      for (int64_t c = 0; c < nc; ++c)
        op[n * C + c0 + c] = static_cast<float>(acc[c] / static_cast<double>(HW));
    }
  });
  return out;
}

}  // namespace

Tensor adaptiveAvgPool(const Tensor& x, int64_t k, const IntList& outputSize) {
  if (k == 2 && x.dim() == 4 && x.dtype() == ScalarType::Float && x.numel() > 0 &&
      (outputSize == IntList{1} || outputSize == IntList{1, 1})) {
    const IntList& st = x.strides();
    const int64_t C = x.sizes()[1], H = x.sizes()[2], W = x.sizes()[3];
    if (C > 1 && H * W > 1 && st[1] == 1 && st[3] == C && st[2] == C * W && st[0] == C * W * H)
      return globalAvgPoolChannelsLast(x);
  }
  return std::get<0>(adaptive<false>(x, k, outputSize));
}
std::tuple<Tensor, Tensor> adaptiveMaxPool(const Tensor& x, int64_t k, const IntList& outputSize) {
  return adaptive<true>(x, k, outputSize);
}

}  // namespace torchless::ops
