// torchvision::nms and torchvision::roi_align (see vision.h).
#include "ops/vision.h"

#include "ops/dispatch.h"
#include "ops/reduction.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace torchless::ops {

Tensor nms(const Tensor& dets, const Tensor& scores, double iouThreshold) {
  TL_CHECK(dets.dim() == 2, "boxes should be a 2d tensor, got {}D", dets.dim());
  TL_CHECK(dets.size(1) == 4, "boxes should have 4 elements in dimension 1, got {}", dets.size(1));
  TL_CHECK(scores.dim() == 1, "scores should be a 1d tensor, got {}D", scores.dim());
  TL_CHECK(dets.size(0) == scores.size(0),
           "boxes and scores should have same number of elements in dimension 0, got {} and {}",
           dets.size(0), scores.size(0));
  TL_CHECK(dets.dtype() == scores.dtype(), "dets should have the same type as scores");
  if (dets.numel() == 0) return Tensor::empty({0}, ScalarType::Long);
  const Tensor d = dets.contiguous();
  const int64_t n = d.size(0);
  const Tensor order =
      std::get<1>(sort(scores, 0, /*descending=*/true, /*stable=*/true)).contiguous();
  const int64_t* ord = order.data<int64_t>();
  std::vector<int64_t> keep;
  std::vector<uint8_t> suppressed(static_cast<size_t>(n), 0);
  dispatchFloating(d.dtype(), "nms_kernel", [&](auto tag) {
    using T = TagT<decltype(tag)>;
    using F = OpMath<T>;
    const T* p = d.data<T>();
    std::vector<F> x1(static_cast<size_t>(n)), y1(x1.size()), x2(x1.size()), y2(x1.size()),
        area(x1.size());
    for (int64_t i = 0; i < n; ++i) {
      const auto k = static_cast<size_t>(i);
      x1[k] = static_cast<F>(p[i * 4]);
      y1[k] = static_cast<F>(p[i * 4 + 1]);
      x2[k] = static_cast<F>(p[i * 4 + 2]);
      y2[k] = static_cast<F>(p[i * 4 + 3]);
      area[k] = static_cast<F>(castTo<T>((x2[k] - x1[k]) * (y2[k] - y1[k])));
    }
    for (int64_t a = 0; a < n; ++a) {
      const auto i = static_cast<size_t>(ord[a]);
      if (suppressed[i]) continue;
      keep.push_back(static_cast<int64_t>(i));
      for (int64_t b = a + 1; b < n; ++b) {
        const auto j = static_cast<size_t>(ord[b]);
        if (suppressed[j]) continue;
        const F xx1 = std::max(x1[i], x1[j]), yy1 = std::max(y1[i], y1[j]);
        const F xx2 = std::min(x2[i], x2[j]), yy2 = std::min(y2[i], y2[j]);
        const F w = std::max(static_cast<F>(0), xx2 - xx1),
                h = std::max(static_cast<F>(0), yy2 - yy1);
        const F inter = w * h;
        const F ovr = inter / (area[i] + area[j] - inter);
        if (static_cast<double>(ovr) > iouThreshold) suppressed[j] = 1;
      }
    }
  });
  Tensor out = Tensor::empty({static_cast<int64_t>(keep.size())}, ScalarType::Long);
  std::copy(keep.begin(), keep.end(), out.data<int64_t>());
  return out;
}

namespace {

template <typename T>
struct PreCalc {
  int64_t pos1, pos2, pos3, pos4;
  T w1, w2, w3, w4;
};

// torchvision's pre_calc_for_bilinear_interpolate.
template <typename T>
void preCalc(int64_t height, int64_t width, int64_t ph, int64_t pw, int64_t gridH, int64_t gridW,
             T startH, T startW, T binH, T binW, std::vector<PreCalc<T>>& out) {
  size_t idx = 0;
  for (int64_t py = 0; py < ph; ++py) {
    for (int64_t px = 0; px < pw; ++px) {
      for (int64_t iy = 0; iy < gridH; ++iy) {
        const T yy = startH + static_cast<T>(py) * binH +
                     (static_cast<T>(iy) + static_cast<T>(.5f)) * binH / static_cast<T>(gridH);
        for (int64_t ix = 0; ix < gridW; ++ix) {
          const T xx = startW + static_cast<T>(px) * binW +
                       (static_cast<T>(ix) + static_cast<T>(.5f)) * binW / static_cast<T>(gridW);
          T x = xx, y = yy;
          PreCalc<T>& pc = out[idx++];
          if (y < -1.0 || y > static_cast<T>(height) || x < -1.0 || x > static_cast<T>(width)) {
            pc = {0, 0, 0, 0, 0, 0, 0, 0};
            continue;
          }
          if (y <= 0) y = 0;
          if (x <= 0) x = 0;
          int64_t yLow = static_cast<int64_t>(y), xLow = static_cast<int64_t>(x), yHigh, xHigh;
          if (yLow >= height - 1) {
            yHigh = yLow = height - 1;
            y = static_cast<T>(yLow);
          } else {
            yHigh = yLow + 1;
          }
          if (xLow >= width - 1) {
            xHigh = xLow = width - 1;
            x = static_cast<T>(xLow);
          } else {
            xHigh = xLow + 1;
          }
          const T ly = y - static_cast<T>(yLow), lx = x - static_cast<T>(xLow);
          const T hy = static_cast<T>(1.) - ly, hx = static_cast<T>(1.) - lx;
          pc = {yLow * width + xLow,
                yLow * width + xHigh,
                yHigh * width + xLow,
                yHigh * width + xHigh,
                hy * hx,
                hy * lx,
                ly * hx,
                ly * lx};
        }
      }
    }
  }
}

}  // namespace

Tensor roiAlign(const Tensor& input, const Tensor& rois, double spatialScale, int64_t pooledHeight,
                int64_t pooledWidth, int64_t samplingRatio, bool aligned) {
  TL_CHECK(input.dim() == 4, "roi_align: input must be 4-D [N, C, H, W], got {}-D", input.dim());
  TL_CHECK(rois.dim() == 2 && rois.size(1) == 5, "rois must have shape as Tensor[K, 5]");
  TL_CHECK(input.dtype() == rois.dtype(), "roi_align: input and rois must have the same dtype");
  const int64_t K = rois.size(0), C = input.size(1), H = input.size(2), W = input.size(3);
  Tensor out = Tensor::empty({K, C, pooledHeight, pooledWidth}, input.dtype());
  if (out.numel() == 0) return out;
  const Tensor in = input.contiguous(), r = rois.contiguous();
  dispatchFloating(in.dtype(), "roi_align_forward_kernel", [&](auto tag) {
    using T0 = TagT<decltype(tag)>;
    if constexpr (!std::is_same_v<T0, float> && !std::is_same_v<T0, double>) {
      throw Error(fmt::format("roi_align: dtype {} is not supported", toString(in.dtype())));
    } else {
      using T = T0;
      const T* ip = in.data<T>();
      const T* rp = r.data<T>();
      T* op = out.data<T>();
      for (int64_t n = 0; n < K; ++n) {
        const T* roi = rp + n * 5;
        const auto batch = static_cast<int64_t>(roi[0]);
        TL_CHECK(batch >= 0 && batch < in.size(0), "roi_align: roi batch index {} out of range",
                 batch);
        const T offset = aligned ? static_cast<T>(0.5) : static_cast<T>(0.0);
        const T ss = static_cast<T>(spatialScale);
        const T startW = roi[1] * ss - offset, startH = roi[2] * ss - offset;
        const T endW = roi[3] * ss - offset, endH = roi[4] * ss - offset;
        T roiW = endW - startW, roiH = endH - startH;
        if (!aligned) {
          roiW = std::max(roiW, static_cast<T>(1.));
          roiH = std::max(roiH, static_cast<T>(1.));
        }
        const T binH = roiH / static_cast<T>(pooledHeight),
                binW = roiW / static_cast<T>(pooledWidth);
        const int64_t gridH =
            samplingRatio > 0
                ? samplingRatio
                : static_cast<int64_t>(std::ceil(roiH / static_cast<T>(pooledHeight)));
        const int64_t gridW =
            samplingRatio > 0 ? samplingRatio
                              : static_cast<int64_t>(std::ceil(roiW / static_cast<T>(pooledWidth)));
        const T count = std::max(static_cast<T>(gridH * gridW), static_cast<T>(1));
        std::vector<PreCalc<T>> pcs(
            static_cast<size_t>(gridH * gridW * pooledWidth * pooledHeight));
        preCalc(H, W, pooledHeight, pooledWidth, gridH, gridW, startH, startW, binH, binW, pcs);
        for (int64_t c = 0; c < C; ++c) {
          const T* plane = ip + (batch * C + c) * H * W;
          T* o = op + (n * C + c) * pooledHeight * pooledWidth;
          size_t idx = 0;
          for (int64_t py = 0; py < pooledHeight; ++py) {
            for (int64_t px = 0; px < pooledWidth; ++px) {
              T val = 0.;
              for (int64_t g = 0; g < gridH * gridW; ++g) {
                const PreCalc<T>& pc = pcs[idx++];
                val += pc.w1 * plane[pc.pos1] + pc.w2 * plane[pc.pos2] + pc.w3 * plane[pc.pos3] +
                       pc.w4 * plane[pc.pos4];
              }
              o[py * pooledWidth + px] = val / count;
            }
          }
        }
      }
    }
  });
  return out;
}

}  // namespace torchless::ops
