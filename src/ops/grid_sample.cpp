// grid_sampler (see grid_sample.h): PyTorch's GridSampler.cpp / GridSampler.h, 2-d.
#include "ops/grid_sample.h"

#include "ops/dispatch.h"

#include <fmt/format.h>

#include <cmath>

namespace torchless::ops {

namespace {

// GridSampler.h: grid_sampler_unnormalize.
template <typename F>
F unnormalize(F coord, int64_t size, bool alignCorners) {
  return alignCorners ? ((coord + 1) / 2) * static_cast<F>(size - 1)
                      : ((coord + 1) * static_cast<F>(size) - 1) / 2;
}

template <typename F>
F clipCoordinates(F in, int64_t size) {
  return std::min(static_cast<F>(size - 1), std::max(in, static_cast<F>(0)));
}

// GridSampler.h: reflect_coordinates (twice_low, twice_high are doubled bounds).
template <typename F>
F reflectCoordinates(F in, int64_t twiceLow, int64_t twiceHigh) {
  if (twiceLow == twiceHigh) return static_cast<F>(0);
  const F min = static_cast<F>(twiceLow) / 2;
  const F span = static_cast<F>(twiceHigh - twiceLow) / 2;
  in = std::fabs(in - min);
  const F extra = std::fmod(in, span);
  const int flips = static_cast<int>(std::floor(in / span));
  return flips % 2 == 0 ? extra + min : span - extra + min;
}

// GridSampler.h: compute_coordinates (padding applied to an unnormalized coordinate).
template <typename F>
F computeCoordinates(F coord, int64_t size, int64_t padding, bool alignCorners) {
  if (padding == 1) return clipCoordinates(coord, size);
  if (padding == 2) {
    coord = alignCorners ? reflectCoordinates(coord, 0, 2 * (size - 1))
                         : reflectCoordinates(coord, -1, 2 * size - 1);
    return clipCoordinates(coord, size);
  }
  return coord;
}

template <typename F>
F cubicConvolution1(F x, F A) {
  return ((A + 2) * x - (A + 3)) * x * x + 1;
}
template <typename F>
F cubicConvolution2(F x, F A) {
  return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

}  // namespace

Tensor gridSampler(const Tensor& input, const Tensor& grid, int64_t interpolationMode,
                   int64_t paddingMode, bool alignCorners) {
  TL_CHECK(input.dtype() == grid.dtype(),
           "grid_sampler(): expected input and grid to have same dtype, but input has {} and grid "
           "has {}",
           toString(input.dtype()), toString(grid.dtype()));
  TL_CHECK(input.dim() == 4 || input.dim() == 5,
           "grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
           "got input with "
           "sizes {} and grid with sizes {}",
           fmt::join(input.sizes(), ", "), fmt::join(grid.sizes(), ", "));
  TL_CHECK(input.dim() == grid.dim(),
           "grid_sampler(): expected grid to have same number of dimensions as input, but got "
           "input with sizes {} "
           "and grid with sizes {}",
           fmt::join(input.sizes(), ", "), fmt::join(grid.sizes(), ", "));
  TL_CHECK(input.size(0) == grid.size(0),
           "grid_sampler(): expected grid and input to have same batch size, but got input with "
           "sizes {} and grid "
           "with sizes {}",
           fmt::join(input.sizes(), ", "), fmt::join(grid.sizes(), ", "));
  TL_CHECK(
      grid.size(-1) == input.dim() - 2,
      "grid_sampler(): expected grid to have size {} in last dimension, but got grid with sizes {}",
      input.dim() - 2, fmt::join(grid.sizes(), ", "));
  TL_CHECK(input.dim() == 4, "grid_sampler: 3-d sampling (5-d input) is not implemented");
  TL_CHECK(interpolationMode >= 0 && interpolationMode <= 2,
           "grid_sampler: unknown interpolation mode {}", interpolationMode);
  TL_CHECK(paddingMode >= 0 && paddingMode <= 2, "grid_sampler: unknown padding mode {}",
           paddingMode);
  for (int64_t d = 2; d < 4; ++d)
    TL_CHECK(input.size(d) > 0,
             "grid_sampler(): expected input to have non-empty spatial dimensions, but input "
             "has sizes {} with dimension {} being empty",
             fmt::join(input.sizes(), ", "), d);
  const Tensor in = input.contiguous(), g = grid.contiguous();
  const int64_t N = in.size(0), C = in.size(1), H = in.size(2), W = in.size(3);
  const int64_t Ho = g.size(1), Wo = g.size(2);
  Tensor out = Tensor::empty({N, C, Ho, Wo}, in.dtype());
  dispatchFloating(in.dtype(), "grid_sampler_2d_cpu", [&](auto tag) {
    using T = TagT<decltype(tag)>;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* x = in.data<T>();
      const T* gp = g.data<T>();
      T* y = out.data<T>();
      auto at = [&](const T* plane, int64_t yy, int64_t xx) -> T {
        return (xx >= 0 && xx < W && yy >= 0 && yy < H) ? plane[yy * W + xx] : T(0);
      };
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t h = 0; h < Ho; ++h) {
          for (int64_t w = 0; w < Wo; ++w) {
            const T* gxy = gp + ((n * Ho + h) * Wo + w) * 2;
            T ix = unnormalize(gxy[0], W, alignCorners), iy = unnormalize(gxy[1], H, alignCorners);
            for (int64_t c = 0; c < C; ++c) {
              const T* plane = x + (n * C + c) * H * W;
              T& o = y[((n * C + c) * Ho + h) * Wo + w];
              if (interpolationMode == 2) {
                // Bicubic: taps around the unpadded coordinate, each padded on its own.
                const T fx = std::floor(ix), fy = std::floor(iy);
                const T tx = ix - fx, ty = iy - fy;
                const T A = T(-0.75);
                const T cx[4] = {cubicConvolution2(tx + 1, A), cubicConvolution1(tx, A),
                                 cubicConvolution1(1 - tx, A), cubicConvolution2(2 - tx, A)};
                const T cy[4] = {cubicConvolution2(ty + 1, A), cubicConvolution1(ty, A),
                                 cubicConvolution1(1 - ty, A), cubicConvolution2(2 - ty, A)};
                T acc = 0;
                for (int j = 0; j < 4; ++j) {
                  T row = 0;
                  for (int i = 0; i < 4; ++i) {
                    T px = computeCoordinates(fx - 1 + i, W, paddingMode, alignCorners);
                    T py = computeCoordinates(fy - 1 + j, H, paddingMode, alignCorners);
                    row += at(plane, static_cast<int64_t>(py), static_cast<int64_t>(px)) * cx[i];
                  }
                  acc += row * cy[j];
                }
                o = acc;
                continue;
              }
              const T sx = computeCoordinates(ix, W, paddingMode, alignCorners);
              const T sy = computeCoordinates(iy, H, paddingMode, alignCorners);
              if (interpolationMode == 1) {
                o = at(plane, static_cast<int64_t>(std::nearbyint(sy)),
                       static_cast<int64_t>(std::nearbyint(sx)));
                continue;
              }
              const T x0 = std::floor(sx), y0 = std::floor(sy);
              const int64_t ixw = static_cast<int64_t>(x0), iyn = static_cast<int64_t>(y0);
              const T e = sx - x0, s = sy - y0;
              o = at(plane, iyn, ixw) * (1 - e) * (1 - s) + at(plane, iyn, ixw + 1) * e * (1 - s) +
                  at(plane, iyn + 1, ixw) * (1 - e) * s + at(plane, iyn + 1, ixw + 1) * e * s;
            }
          }
        }
      }
    } else {
      throw Error(
          fmt::format("\"grid_sampler_2d_cpu\" not implemented for '{}'", toString(in.dtype())));
    }
  });
  return out;
}

}  // namespace torchless::ops
