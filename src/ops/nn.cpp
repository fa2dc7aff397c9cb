#include "ops/nn.h"

#include "ops/elementwise.h"
#include "ops/parallel.h"
#include "ops/shape.h"
#include "ops/tensor_iterator.h"

#include <cmath>

namespace torchless::ops {

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t paddingIdx) {
  TL_CHECK(weight.dim() == 2, "'weight' must be 2-D");
  TL_CHECK(indices.dtype() == ScalarType::Long || indices.dtype() == ScalarType::Int,
           "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
           "Long, Int; but got torch.{} instead (while checking arguments for embedding)",
           toString(indices.dtype()) + std::string("Tensor"));
  IntList shape = indices.sizes();
  shape.push_back(weight.sizes()[1]);
  return reshape(indexSelect(weight, 0, reshape(indices, {-1})), shape);
}

Tensor dropout(const Tensor& x, double p, bool training) {
  TL_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got {}", p);
  // As ATen's _dropout_impl: with p = 0 (torchvision's swin_t traces dropout(x, 0., True)) or
  // nothing to drop, training mode is the input too.
  TL_CHECK(!training || p == 0 || x.numel() == 0,
           "dropout with training=True and p={} is not supported (it is random; torchless runs "
           "inference only: call eval() before saving)",
           p);
  return x;
}

namespace {

struct Blocks {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
  int64_t height, width;  // the image's
  int64_t outH, outW;     // the sliding blocks'
};

// ATen's im2col_shape_check / col2im_shape_check arguments, for an image of height x width.
Blocks blocksOf(const char* op, const IntList& k, const IntList& d, const IntList& p,
                const IntList& s, int64_t height, int64_t width) {
  TL_CHECK(k.size() == 2 && d.size() == 2 && p.size() == 2 && s.size() == 2,
           "{}: kernel_size, dilation, padding and stride must have 2 elements", op);
  Blocks b{k[0], k[1], d[0], d[1], p[0], p[1], s[0], s[1], height, width, 0, 0};
  TL_CHECK(b.kh > 0 && b.kw > 0,
           "kernel size should be greater than zero, but got kernel_height: {} kernel_width: {}",
           b.kh, b.kw);
  TL_CHECK(b.sh > 0 && b.sw > 0,
           "stride should be greater than zero, but got stride_height: {} stride_width: {}", b.sh,
           b.sw);
  TL_CHECK(b.dh > 0 && b.dw > 0,
           "dilation should be greater than zero, but got dilation_height: {} dilation_width: {}",
           b.dh, b.dw);
  TL_CHECK(b.ph >= 0 && b.pw >= 0,
           "padding should be non-negative, but got pad_height: {} pad_width: {}", b.ph, b.pw);
  b.outH = (height + 2 * b.ph - (b.dh * (b.kh - 1) + 1)) / b.sh + 1;
  b.outW = (width + 2 * b.pw - (b.dw * (b.kw - 1) + 1)) / b.sw + 1;
  return b;
}

// y[c * kh * kw + i * kw + j, r * outW + s] <-> x[c, r * sh - ph + i * dh, s * sw - pw + j * dw]
// over one image: copied (im2col) or added back (col2im).
template <class T, bool Fold>
void slide(const Blocks& b, int64_t channels, T* image, T* cols) {
  const int64_t L = b.outH * b.outW;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < b.kh; ++i)
      for (int64_t j = 0; j < b.kw; ++j) {
        T* row = cols + ((c * b.kh + i) * b.kw + j) * L;
        for (int64_t r = 0; r < b.outH; ++r) {
          const int64_t y = r * b.sh - b.ph + i * b.dh;
          for (int64_t s = 0; s < b.outW; ++s) {
            const int64_t x = s * b.sw - b.pw + j * b.dw;
            const bool inside = y >= 0 && y < b.height && x >= 0 && x < b.width;
            T* at = image + (c * b.height + y) * b.width + x;
            if constexpr (Fold) {
              if (inside) *at += row[r * b.outW + s];
            } else {
              row[r * b.outW + s] = inside ? *at : T(0);
            }
          }
        }
      }
}

template <bool Fold>
Tensor slideAll(const Tensor& in, const Blocks& b, int64_t batch, int64_t channels,
                const IntList& outSizes) {
  const ScalarType dt = in.dtype();
  TL_CHECK(isFloatingType(dt), "\"{}\" not implemented for '{}'",
           Fold ? "col2im_out_cpu" : "im2col_out_cpu", toString(dt));
  const ScalarType work = dt == ScalarType::Double ? dt : ScalarType::Float;
  Tensor src = in.to(work).contiguous();
  Tensor out = Fold ? zeros(outSizes, work) : Tensor::empty(outSizes, work);
  const int64_t imageSize = channels * b.height * b.width;
  const int64_t colsSize = channels * b.kh * b.kw * b.outH * b.outW;
  auto run = [&](auto* s, auto* o) {
    for (int64_t n = 0; n < batch; ++n) {
      if constexpr (Fold)
        slide<std::remove_pointer_t<decltype(s)>, true>(b, channels, o + n * imageSize,
                                                        s + n * colsSize);
      else
        slide<std::remove_pointer_t<decltype(s)>, false>(b, channels, s + n * imageSize,
                                                         o + n * colsSize);
    }
  };
  if (work == ScalarType::Double)
    run(src.data<double>(), out.data<double>());
  else
    run(src.data<float>(), out.data<float>());
  return work == dt ? out : out.to(dt);
}

// Every dim of `t` is non-empty, but the first when `batched` (a batch may be empty), as
// ATen's im2col / col2im shape checks ask.
bool nonEmptyPastBatch(const Tensor& t, bool batched) {
  for (int64_t d = batched ? 1 : 0; d < t.dim(); ++d)
    if (t.size(d) == 0) return false;
  return true;
}

}  // namespace

Tensor im2col(const Tensor& x, const IntList& kernelSize, const IntList& dilation,
              const IntList& padding, const IntList& stride) {
  const bool batched = x.dim() == 4;
  TL_CHECK((x.dim() == 3 || batched) && nonEmptyPastBatch(x, batched),
           "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
           "dimensions for input, but got: {}",
           sizesToString(x.sizes()));
  const int64_t h = x.size(-2), w = x.size(-1), c = x.size(-3);
  Blocks b = blocksOf("im2col", kernelSize, dilation, padding, stride, h, w);
  TL_CHECK(b.outH >= 1 && b.outW >= 1,
           "Given input with spatial size ({}, {}), kernel_size=({}, {}), dilation=({}, {}), "
           "padding=({}, {}), calculated shape of the array of sliding blocks as ({}, {}), but "
           "its components must be at least one.",
           h, w, b.kh, b.kw, b.dh, b.dw, b.ph, b.pw, b.outH, b.outW);
  const int64_t batch = batched ? x.size(0) : 1;
  IntList outSizes = {batch, c * b.kh * b.kw, b.outH * b.outW};
  Tensor y = slideAll<false>(x, b, batch, c, outSizes);
  return batched ? y : reshape(y, {outSizes[1], outSizes[2]});
}

Tensor col2im(const Tensor& cols, const IntList& outputSize, const IntList& kernelSize,
              const IntList& dilation, const IntList& padding, const IntList& stride) {
  TL_CHECK(outputSize.size() == 2, "It is expected output_size equals to 2, but got size {}",
           outputSize.size());
  const bool batched = cols.dim() == 3;
  TL_CHECK((cols.dim() == 2 || batched) && nonEmptyPastBatch(cols, batched),
           "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
           "non-zero dimensions for input, but got: {}",
           sizesToString(cols.sizes()));
  Blocks b =
      blocksOf("col2im", kernelSize, dilation, padding, stride, outputSize[0], outputSize[1]);
  TL_CHECK(outputSize[0] > 0 && outputSize[1] > 0,
           "output_size should be greater than zero, but got output_height: {} output_width: {}",
           outputSize[0], outputSize[1]);
  const int64_t rows = cols.size(-2), blocks = cols.size(-1);
  TL_CHECK(rows % (b.kh * b.kw) == 0,
           "Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
           "but got input.size(1)={} and kernel_size=({}, {})",
           rows, b.kh, b.kw);
  TL_CHECK(b.outH >= 1 && b.outW >= 1 && blocks == b.outH * b.outW,
           "Given output_size=({}, {}), kernel_size=({}, {}), dilation=({}, {}), padding=({}, "
           "{}), stride=({}, {}), expected size of input's dimension 2 to match the calculated "
           "number of sliding blocks {} * {} = {}, but got input.size(2)={}.",
           outputSize[0], outputSize[1], b.kh, b.kw, b.dh, b.dw, b.ph, b.pw, b.sh, b.sw, b.outH,
           b.outW, b.outH * b.outW, blocks);
  const int64_t batch = batched ? cols.size(0) : 1, c = rows / (b.kh * b.kw);
  Tensor y = slideAll<true>(cols, b, batch, c, {batch, c, outputSize[0], outputSize[1]});
  return batched ? y : reshape(y, {c, outputSize[0], outputSize[1]});
}

Tensor prelu(const Tensor& x, const Tensor& weight) {
  const int64_t n = weight.numel();
  Tensor w = weight;
  if (n != 1) {
    TL_CHECK(x.dim() >= 2 && x.sizes()[1] == n,
             "Mismatch of parameter numbers and input channel size. Found parameter numbers = {} "
             "and channel size = {}.",
             n, x.dim() >= 2 ? x.sizes()[1] : 1);
    IntList s(static_cast<size_t>(x.dim()), 1);
    s[1] = n;
    w = reshape(weight, s);
  } else {
    w = reshape(weight, {});
  }
  return where(gt(x, 0), x, mul(x, w));
}

Tensor glu(const Tensor& x, int64_t dim) {
  TL_CHECK(x.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t d = wrapDim(dim, x.dim());
  const int64_t n = x.sizes()[d];
  TL_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension {} is size {}", d, n);
  return mul(narrow(x, d, 0, n / 2), sigmoid(narrow(x, d, n / 2, n / 2)));
}

Tensor threshold(const Tensor& x, const Scalar& th, const Scalar& value) {
  Tensor out = Tensor::empty(x.sizes(), x.dtype());
  TensorIter it({out, x});
  dispatchNumeric(x.dtype(), "threshold_cpu", [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    const A t = th.to<A>();
    const T v = value.to<T>();
    cpuKernel<T, T>(it, [=](T a) { return static_cast<A>(a) <= t ? v : a; });
  });
  return out;
}

namespace {
// PyTorch's compute_scales_value / area_pixel_compute_scale.
double nearestScale(int64_t in, int64_t out, std::optional<double> scale) {
  return scale && *scale > 0 ? 1.0 / *scale : static_cast<double>(in) / static_cast<double>(out);
}
}  // namespace

void checkNearestDtype(const Tensor& x) {
  const ScalarType t = x.dtype();
  TL_CHECK(t == ScalarType::Float || t == ScalarType::Double || t == ScalarType::BFloat16 ||
               t == ScalarType::Byte,
           "\"compute_indices_weights_nearest\" not implemented for '{}'", toString(t));
}

Tensor upsampleNearest(const Tensor& x, const IntList& outputSize,
                       const std::vector<std::optional<double>>& scales) {
  const int64_t k = static_cast<int64_t>(outputSize.size());
  TL_CHECK(k >= 1 && k <= 3 && x.dim() == k + 2,
           "upsample_nearest{}d: expected input of {} dims, got {}", k, k + 2,
           sizesToString(x.sizes()));
  checkNearestDtype(x);
  // One index table per spatial dim, then a gather over the canonical [planes, D, H, W].
  std::vector<std::vector<int64_t>> idx(3);
  IntList in3(3, 1), out3(3, 1);
  for (int64_t i = 0; i < k; ++i) {
    const int64_t in = x.sizes()[2 + i], out = outputSize[i];
    TL_CHECK(in > 0 && out > 0,
             "Input and output sizes should be greater than 0, but got input ({}) and output ({})",
             in, out);
    in3[3 - k + i] = in;
    out3[3 - k + i] = out;
    const std::optional<double> sc =
        static_cast<int64_t>(scales.size()) > i ? scales[i] : std::nullopt;
    const float scale = static_cast<float>(nearestScale(in, out, sc));
    auto& t = idx[3 - k + i];
    for (int64_t o = 0; o < out; ++o) {
      int64_t s;
      if (out == in)
        s = o;
      else if (out == 2 * in)
        s = o >> 1;
      else
        s = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * scale)), in - 1);
      t.push_back(s);
    }
  }
  for (int i = 0; i < 3 - k; ++i) idx[i] = {0};
  Tensor c = x.contiguous();
  IntList outShape{x.sizes()[0], x.sizes()[1]};
  outShape.insert(outShape.end(), outputSize.begin(), outputSize.end());
  Tensor out = Tensor::empty(outShape, x.dtype());
  const int64_t planes = x.sizes()[0] * x.sizes()[1];
  dispatchBySize(x.itemsize(), [&](auto tag) {
    using U = decltype(tag);
    const U* ip = c.data<U>();
    U* op = out.data<U>();
    parallelFor(planes, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p)
        for (int64_t od = 0; od < out3[0]; ++od)
          for (int64_t oh = 0; oh < out3[1]; ++oh)
            for (int64_t ow = 0; ow < out3[2]; ++ow)
              op[((p * out3[0] + od) * out3[1] + oh) * out3[2] + ow] =
                  ip[((p * in3[0] + idx[0][od]) * in3[1] + idx[1][oh]) * in3[2] + idx[2][ow]];
    });
  });
  return out;
}

// Note [bilinear arithmetic]
// PyTorch 1.13's CPU upsample_bilinear2d (UpSampleKernel.cpp, the generic N-d kernel taken by
// channels-first inputs) computes, for float:
// - the ratio in float: (in - 1) / (out - 1) with align_corners, else (float)in / out or
//   (float)(1 / scale) (area_pixel_compute_scale<float>);
// - the source index in double, acc_type<float> on CPU (compute_source_index_and_lambda):
//   real = (double)ratio * o, or (double)ratio * (o + 0.5) - 0.5 clamped at 0;
//   i0 = (int64)real, lambda1 = (float)clamp(real - i0, 0, 1), lambda0 = 1.f - lambda1;
//   an output size equal to the input size copies (lambda 1, 0);
// - the interpolation in float, height outer, width inner. Its AVX2/AVX512 builds (the ones
//   PyTorch dispatches to on x86 CPUs with FMA) are compiled with FMA contraction, which gives
//   t = fma(x0, w0, x1 * w1) per row and fma(t0, h0, t1 * h1) across rows. Matching that
//   exactly matters for quantized models: a resize before quantize_per_tensor that is one ulp
//   off moves integers (../shared/wild/d2go_detector).
// Not matched: inputs that are channels-last contiguous (including any NCHW input with C == 1,
// which PyTorch also sees as channels-last) take PyTorch's channels-last kernel, which sums the
// four corners with products of the two weights; we compute them as above (within 1 ulp).
Tensor upsampleBilinear2d(const Tensor& x, const IntList& outputSize, bool alignCorners,
                          std::optional<double> scalesH, std::optional<double> scalesW) {
  TL_CHECK(x.dim() == 4 && outputSize.size() == 2,
           "upsample_bilinear2d: expected 4-D input and 2 output sizes");
  const int64_t IH = x.sizes()[2], IW = x.sizes()[3], OH = outputSize[0], OW = outputSize[1];
  TL_CHECK(IH > 0 && IW > 0 && OH > 0 && OW > 0, "Input and output sizes should be greater than 0");
  Tensor c = x.contiguous();
  Tensor out = Tensor::empty({x.sizes()[0], x.sizes()[1], OH, OW}, x.dtype());
  const int64_t planes = x.sizes()[0] * x.sizes()[1];
  dispatchFloating(x.dtype(), "upsample_bilinear2d", [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;  // the ratio's and the weights' type (float for float, half, bf16)
    const auto th = linearTaps<A>(IH, OH, alignCorners, scalesH),
               tw = linearTaps<A>(IW, OW, alignCorners, scalesW);
    const T* ip = c.data<T>();
    T* op = out.data<T>();
    parallelFor(planes, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const T* in = ip + p * IH * IW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const LinearTap<A>& a = th[static_cast<size_t>(oh)];
          const T* r0 = in + a.i0 * IW;
          const T* r1 = in + a.i1 * IW;
          T* orow = op + (p * OH + oh) * OW;
          for (int64_t ow = 0; ow < OW; ++ow) {
            const LinearTap<A>& b = tw[static_cast<size_t>(ow)];
            const A t0 = std::fma(static_cast<A>(r0[b.i0]), b.l0,
                                  static_cast<A>(static_cast<A>(r0[b.i1]) * b.l1));
            const A t1 = std::fma(static_cast<A>(r1[b.i0]), b.l0,
                                  static_cast<A>(static_cast<A>(r1[b.i1]) * b.l1));
            orow[ow] = castTo<T>(std::fma(t0, a.l0, static_cast<A>(t1 * a.l1)));
          }
        }
      }
    });
  });
  return out;
}

Tensor upsampleTrilinear3d(const Tensor& x, const IntList& outputSize, bool alignCorners,
                           std::optional<double> scalesD, std::optional<double> scalesH,
                           std::optional<double> scalesW) {
  TL_CHECK(x.dim() == 5 && outputSize.size() == 3,
           "upsample_trilinear3d: expected 5-D input and 3 output sizes");
  const int64_t ID = x.sizes()[2], IH = x.sizes()[3], IW = x.sizes()[4], OD = outputSize[0],
                OH = outputSize[1], OW = outputSize[2];
  TL_CHECK(ID > 0 && IH > 0 && IW > 0 && OD > 0 && OH > 0 && OW > 0,
           "Input and output sizes should be greater than 0, but got input (D: {}, H: {}, W: {}) "
           "output (D: {}, H: {}, W: {})",
           ID, IH, IW, OD, OH, OW);
  Tensor c = x.contiguous();
  Tensor out = Tensor::empty({x.sizes()[0], x.sizes()[1], OD, OH, OW}, x.dtype());
  const int64_t planes = x.sizes()[0] * x.sizes()[1];
  dispatchFloating(x.dtype(), "upsample_trilinear3d", [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    const auto td = linearTaps<A>(ID, OD, alignCorners, scalesD),
               th = linearTaps<A>(IH, OH, alignCorners, scalesH),
               tw = linearTaps<A>(IW, OW, alignCorners, scalesW);
    const T* ip = c.data<T>();
    T* op = out.data<T>();
    parallelFor(planes, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const T* in = ip + p * ID * IH * IW;
        T* o = op + p * OD * OH * OW;
        for (int64_t od = 0; od < OD; ++od) {
          const LinearTap<A>& a = td[static_cast<size_t>(od)];
          for (int64_t oh = 0; oh < OH; ++oh) {
            const LinearTap<A>& b = th[static_cast<size_t>(oh)];
            const T* r00 = in + (a.i0 * IH + b.i0) * IW;
            const T* r01 = in + (a.i0 * IH + b.i1) * IW;
            const T* r10 = in + (a.i1 * IH + b.i0) * IW;
            const T* r11 = in + (a.i1 * IH + b.i1) * IW;
            for (int64_t ow = 0; ow < OW; ++ow) {
              const LinearTap<A>& w = tw[static_cast<size_t>(ow)];
              auto alongW = [&](const T* r) {
                return static_cast<A>(r[w.i0]) * w.l0 + static_cast<A>(r[w.i1]) * w.l1;
              };
              const A h0 = alongW(r00) * b.l0 + alongW(r01) * b.l1;
              const A h1 = alongW(r10) * b.l0 + alongW(r11) * b.l1;
              *o++ = castTo<T>(h0 * a.l0 + h1 * a.l1);
            }
          }
        }
      }
    });
  });
  return out;
}

namespace {

// Keys' cubic convolution weights of the 4 taps at fraction t (A = -0.75, PyTorch's).
template <class A>
void cubicWeights(A t, A w[4]) {
  constexpr A kA = A(-0.75);
  auto near = [&](A x) { return ((kA + 2) * x - (kA + 3)) * x * x + 1; };
  auto far = [&](A x) { return ((kA * x - 5 * kA) * x + 8 * kA) * x - 4 * kA; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

}  // namespace

Tensor upsampleBicubic2d(const Tensor& x, const IntList& outputSize, bool alignCorners,
                         std::optional<double> scalesH, std::optional<double> scalesW) {
  TL_CHECK(x.dim() == 4 && outputSize.size() == 2,
           "upsample_bicubic2d: expected 4-D input and 2 output sizes");
  const int64_t IH = x.sizes()[2], IW = x.sizes()[3], OH = outputSize[0], OW = outputSize[1];
  TL_CHECK(IH > 0 && IW > 0 && OH > 0 && OW > 0,
           "Input and output sizes should be greater than 0, but got input (H: {}, W: {}) output "
           "(H: {}, W: {})",
           IH, IW, OH, OW);
  if (IH == OH && IW == OW) return x.contiguous().clone();
  Tensor c = x.contiguous();
  Tensor out = Tensor::empty({x.sizes()[0], x.sizes()[1], OH, OW}, x.dtype());
  const int64_t planes = x.sizes()[0] * x.sizes()[1];
  dispatchFloating(x.dtype(), "upsample_bicubic2d", [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    struct Taps {
      int64_t idx[4];
      A w[4];
    };
    auto taps = [&](int64_t in, int64_t outN, std::optional<double> scale) {
      const A s = areaPixelScale<A>(in, outN, alignCorners, scale);
      std::vector<Taps> t(static_cast<size_t>(outN));
      for (int64_t o = 0; o < outN; ++o) {
        // area_pixel_compute_source_index for cubic: no clamp at 0
        const A real =
            alignCorners ? s * static_cast<A>(o) : s * (static_cast<A>(o) + A(0.5)) - A(0.5);
        const auto i = static_cast<int64_t>(std::floor(real));
        Taps& tp = t[static_cast<size_t>(o)];
        cubicWeights<A>(real - static_cast<A>(i), tp.w);
        for (int k = 0; k < 4; ++k) tp.idx[k] = std::clamp<int64_t>(i - 1 + k, 0, in - 1);
      }
      return t;
    };
    const auto th = taps(IH, OH, scalesH), tw = taps(IW, OW, scalesW);
    const T* ip = c.data<T>();
    T* op = out.data<T>();
    parallelFor(planes, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const T* in = ip + p * IH * IW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const Taps& a = th[static_cast<size_t>(oh)];
          T* orow = op + (p * OH + oh) * OW;
          for (int64_t ow = 0; ow < OW; ++ow) {
            const Taps& b = tw[static_cast<size_t>(ow)];
            A rows[4];
            for (int k = 0; k < 4; ++k) {
              const T* r = in + a.idx[k] * IW;
              rows[k] = static_cast<A>(r[b.idx[0]]) * b.w[0] +
                        static_cast<A>(r[b.idx[1]]) * b.w[1] +
                        static_cast<A>(r[b.idx[2]]) * b.w[2] + static_cast<A>(r[b.idx[3]]) * b.w[3];
            }
            orow[ow] = castTo<T>(rows[0] * a.w[0] + rows[1] * a.w[1] + rows[2] * a.w[2] +
                                 rows[3] * a.w[3]);
          }
        }
      }
    });
  });
  return out;
}

template <class T>
AntialiasTaps<T> antialiasTaps(int64_t in, int64_t out, bool alignCorners,
                               std::optional<double> scale, bool cubic) {
  // ATen's HelperInterp{Linear,Cubic}::aa_filter: |x| in T, the polynomials in double except
  // the outer piece's bracket (T, as ATen's), returned as T.
  auto filter = [cubic](T t) -> T {
    const T x = t < 0 ? -t : t;
    if (!cubic) return static_cast<T>(x < 1.0 ? 1.0 - x : 0.0);
    constexpr double a = -0.5;
    if (x < 1.0) return static_cast<T>(((a + 2.0) * x - (a + 3.0)) * x * x + 1);
    if (x < 2.0) return static_cast<T>((((x - 5) * x + 8) * x - 4) * a);
    return T(0);
  };
  const int interp = cubic ? 4 : 2;
  const T s = areaPixelScale<T>(in, out, alignCorners, scale);
  const T support = s >= 1.0 ? static_cast<T>((interp * 0.5) * s) : static_cast<T>(interp * 0.5);
  const T invscale = s >= 1.0 ? static_cast<T>(1.0 / s) : T(1);
  AntialiasTaps<T> t;
  // ATen's window is ceil(support) * 2 + 1 taps (support in float); no window reaches past the
  // input, so `in` bounds it (a scale factor from a file cannot size the allocation).
  const float fs = static_cast<float>(support);
  t.width = fs < static_cast<float>(in)
                ? std::min<int64_t>(static_cast<int64_t>(std::ceil(fs)) * 2 + 1, in)
                : in;
  t.first.resize(static_cast<size_t>(out));
  t.count.resize(static_cast<size_t>(out));
  t.w.assign(static_cast<size_t>(out * t.width), T(0));
  // static_cast<int64_t> of a bound clamped to [-1, in + 1] first: the same integer as ATen's
  // for every window that meets the input, and defined for the rest.
  auto bound = [in](double v) {
    if (!(v > -1.0)) return int64_t{-1};
    return static_cast<int64_t>(std::min(v, static_cast<double>(in + 1)));
  };
  for (int64_t o = 0; o < out; ++o) {
    const T center = static_cast<T>(s * (static_cast<double>(o) + 0.5));
    const int64_t xmin = std::max<int64_t>(bound(static_cast<T>(center - support) + 0.5), 0);
    int64_t count = std::min<int64_t>(bound(static_cast<T>(center + support) + 0.5), in) - xmin;
    count = std::clamp<int64_t>(count, 0, t.width);
    T* w = t.w.data() + o * t.width;
    T total = 0;
    for (int64_t j = 0; j < count; ++j) {
      w[j] = filter(static_cast<T>(
          (static_cast<double>(static_cast<T>(static_cast<T>(j + xmin) - center)) + 0.5) *
          static_cast<double>(invscale)));
      total += w[j];
    }
    if (total != 0.0)
      for (int64_t j = 0; j < count; ++j) w[j] /= total;
    t.first[static_cast<size_t>(o)] = xmin;
    t.count[static_cast<size_t>(o)] = count;
  }
  return t;
}
template AntialiasTaps<float> antialiasTaps<float>(int64_t, int64_t, bool, std::optional<double>,
                                                   bool);
template AntialiasTaps<double> antialiasTaps<double>(int64_t, int64_t, bool, std::optional<double>,
                                                     bool);

Tensor upsampleAntialias2d(const Tensor& x, const IntList& outputSize, bool alignCorners,
                           std::optional<double> scalesH, std::optional<double> scalesW,
                           bool cubic) {
  TL_CHECK(outputSize.size() == 2, "It is expected output_size equals to 2, but got size {}",
           outputSize.size());
  TL_CHECK(x.dim() == 4, "It is expected input_size equals to 4, but got size {}", x.dim());
  const int64_t IH = x.sizes()[2], IW = x.sizes()[3], OH = outputSize[0], OW = outputSize[1];
  TL_CHECK(IH > 0 && IW > 0 && OH > 0 && OW > 0,
           "Input and output sizes should be greater than 0, but got input (H: {}, W: {}) output "
           "(H: {}, W: {})",
           IH, IW, OH, OW);
  TL_CHECK(x.numel() != 0 || x.sizes()[1] != 0,
           "Non-empty 4D data tensor expected but got a tensor with sizes {}",
           sizesToString(x.sizes()));
  if (x.dtype() != ScalarType::Float && x.dtype() != ScalarType::Double)
    notImplemented("compute_indices_weights_aa", x.dtype());
  const int64_t planes = x.sizes()[0] * x.sizes()[1];
  Tensor out = Tensor::empty({x.sizes()[0], x.sizes()[1], OH, OW}, x.dtype());
  if (planes == 0) return out;
  Tensor c = x.contiguous();
  // Both passes run even where a size is unchanged (ATen's separable kernel does): the
  // identity's zero weights carry a NaN to its left neighbour as PyTorch's.
  Tensor rows = Tensor::empty({x.sizes()[0], x.sizes()[1], IH, OW}, x.dtype());
  dispatchFloating(x.dtype(), "compute_indices_weights_aa", [&](auto tag) {
    using T = TagT<decltype(tag)>;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const auto tw = antialiasTaps<T>(IW, OW, alignCorners, scalesW, cubic);
      const auto th = antialiasTaps<T>(IH, OH, alignCorners, scalesH, cubic);
      // output[o] = src[first] * w[0] + src[first + 1] * w[1] + ... in T, in order; an empty
      // window gives 0.
      auto tap = [](const T* src, int64_t stride, const T* w, int64_t count) {
        if (count == 0) return T(0);
        T acc = src[0] * w[0];
        for (int64_t j = 1; j < count; ++j) acc += src[j * stride] * w[j];
        return acc;
      };
      const T* ip = c.data<T>();
      T* rp = rows.data<T>();
      T* op = out.data<T>();
      parallelFor(planes, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t p = lo; p < hi; ++p) {
          for (int64_t h = 0; h < IH; ++h) {
            const T* src = ip + (p * IH + h) * IW;
            T* dst = rp + (p * IH + h) * OW;
            for (int64_t o = 0; o < OW; ++o) {
              const auto k = static_cast<size_t>(o);
              dst[o] = tap(src + tw.first[k], 1, tw.w.data() + o * tw.width, tw.count[k]);
            }
          }
          for (int64_t o = 0; o < OH; ++o) {
            const auto k = static_cast<size_t>(o);
            const T* w = th.w.data() + o * th.width;
            const T* src = rp + (p * IH + th.first[k]) * OW;
            T* dst = op + (p * OH + o) * OW;
            for (int64_t col = 0; col < OW; ++col) dst[col] = tap(src + col, OW, w, th.count[k]);
          }
        }
      });
    }
  });
  return out;
}

Tensor interpolate(const Tensor& x, const std::optional<IntList>& size,
                   const std::optional<std::vector<double>>& scaleFactor, const std::string& mode,
                   std::optional<bool> alignCorners) {
  const int64_t k = x.dim() - 2;
  TL_CHECK(k >= 1, "interpolate: expected at least 3-D input");
  TL_CHECK(size.has_value() != scaleFactor.has_value(),
           "only one of size or scale_factor should be defined");
  IntList out;
  std::vector<std::optional<double>> scales(static_cast<size_t>(k));
  if (size) {
    out = size->size() == 1 ? IntList(static_cast<size_t>(k), (*size)[0]) : *size;
  } else {
    const auto& sf = *scaleFactor;
    for (int64_t i = 0; i < k; ++i) {
      const double s = sf.size() == 1 ? sf[0] : sf[static_cast<size_t>(i)];
      out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(x.sizes()[2 + i]) * s)));
      scales[static_cast<size_t>(i)] = s;
    }
  }
  TL_CHECK(static_cast<int64_t>(out.size()) == k, "interpolate: size must have {} elements", k);
  if (mode == "nearest") {
    TL_CHECK(!alignCorners.has_value(),
             "align_corners option can only be set with the interpolating modes: linear | bilinear "
             "| bicubic | trilinear");
    return upsampleNearest(x, out, scales);
  }
  if (mode == "bilinear") {
    TL_CHECK(k == 2, "Got {}D input, but bilinear mode needs 4D input", x.dim());
    return upsampleBilinear2d(x, out, alignCorners.value_or(false), scales[0], scales[1]);
  }
  if (mode == "trilinear") {
    TL_CHECK(k == 3, "Got {}D input, but trilinear mode needs 5D input", x.dim());
    return upsampleTrilinear3d(x, out, alignCorners.value_or(false), scales[0], scales[1],
                               scales[2]);
  }
  if (mode == "bicubic") {
    TL_CHECK(k == 2, "Got {}D input, but bicubic mode needs 4D input", x.dim());
    return upsampleBicubic2d(x, out, alignCorners.value_or(false), scales[0], scales[1]);
  }
  throw Error(fmt::format("interpolate: mode '{}' is not supported yet", mode));
}

}  // namespace torchless::ops
