#include "ops/conv.h"

#include "ops/dispatch.h"
#include "ops/dnnl_utils.h"
#include "ops/elementwise.h"
#include "ops/parallel.h"
#include "ops/shape.h"

namespace torchless::ops {
namespace {

struct ConvParams {
  int64_t k = 0;  // spatial dims
  IntList stride, padding, dilation, outputPadding;
  bool transposed = false;
  int64_t groups = 1;
};

IntList expandParam(const IntList& v, int64_t k, const char* name, int64_t dflt) {
  if (v.empty()) return IntList(static_cast<size_t>(k), dflt);
  if (v.size() == 1) return IntList(static_cast<size_t>(k), v[0]);
  TL_CHECK(static_cast<int64_t>(v.size()) == k, "expected {} to be a single integer value or a list of {} values to match the convolution dimensions, but got {}={}",
           name, k, name, sizesToString(v));
  return v;
}

IntList outputShape(const Tensor& in, const Tensor& w, const ConvParams& p) {
  IntList out{in.sizes()[0], p.transposed ? w.sizes()[1] * p.groups : w.sizes()[0]};
  for (int64_t i = 0; i < p.k; ++i) {
    const int64_t isz = in.sizes()[2 + i], ksz = w.sizes()[2 + i];
    int64_t o;
    if (p.transposed)
      o = (isz - 1) * p.stride[i] - 2 * p.padding[i] + p.dilation[i] * (ksz - 1) + p.outputPadding[i] + 1;
    else
      o = (isz + 2 * p.padding[i] - p.dilation[i] * (ksz - 1) - 1) / p.stride[i] + 1;
    out.push_back(o);
  }
  return out;
}

void checkShapes(const Tensor& in, const Tensor& w, const std::optional<Tensor>& bias, const ConvParams& p) {
  for (int64_t i = 0; i < p.k; ++i) {
    TL_CHECK(p.stride[i] > 0, "non-positive stride is not supported");
    TL_CHECK(p.padding[i] >= 0, "negative padding is not supported");
    TL_CHECK(p.dilation[i] > 0, "dilation should be greater than zero");
    if (p.transposed)
      TL_CHECK(p.outputPadding[i] < p.stride[i] || p.outputPadding[i] < p.dilation[i],
               "output padding must be smaller than either stride or dilation, but got output_padding_height: {} output_padding_width: {} stride_height: {} stride_width: {} dilation_height: {} dilation_width: {}",
               p.outputPadding[0], p.outputPadding[p.k - 1], p.stride[0], p.stride[p.k - 1], p.dilation[0], p.dilation[p.k - 1]);
  }
  TL_CHECK(p.groups > 0, "non-positive groups is not supported");
  const int64_t C = in.sizes()[1];
  if (!p.transposed) {
    TL_CHECK(w.sizes()[0] % p.groups == 0,
             "Given groups={}, expected weight to be divisible by {} at dimension 0, but got weight of size {} instead",
             p.groups, p.groups, sizesToString(w.sizes()));
    TL_CHECK(C == w.sizes()[1] * p.groups,
             "Given groups={}, weight of size {}, expected input{} to have {} channels, but got {} channels instead",
             p.groups, sizesToString(w.sizes()), sizesToString(in.sizes()), w.sizes()[1] * p.groups, C);
    for (int64_t i = 0; i < p.k; ++i)
      TL_CHECK(in.sizes()[2 + i] + 2 * p.padding[i] >= p.dilation[i] * (w.sizes()[2 + i] - 1) + 1,
               "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
               in.sizes()[2 + i] + 2 * p.padding[i], p.dilation[i] * (w.sizes()[2 + i] - 1) + 1);
  } else {
    TL_CHECK(C == w.sizes()[0],
             "Given transposed=1, weight of size {}, expected input{} to have {} channels, but got {} channels instead",
             sizesToString(w.sizes()), sizesToString(in.sizes()), w.sizes()[0], C);
    TL_CHECK(C % p.groups == 0, "Given groups={}, expected input channels to be divisible by groups", p.groups);
  }
  if (bias && bias->defined()) {
    const int64_t oc = p.transposed ? w.sizes()[1] * p.groups : w.sizes()[0];
    TL_CHECK(bias->dim() == 1 && bias->sizes()[0] == oc,
             "Given weight of size {}, expected bias to be 1-dimensional with {} elements, but got bias of size {} instead",
             sizesToString(w.sizes()), oc, sizesToString(bias->sizes()));
  }
}

// Reference on the canonical 3-d form: [N, C, D, H, W], weights [.., .., KD, KH, KW].
template <typename T>
void convRef3d(const Tensor& in, const Tensor& w, const Tensor* bias, const Tensor& out,
               const IntList& s, const IntList& pd, const IntList& dl, bool transposed, int64_t g) {
  using A = Acc<T>;
  const T* ip = in.data<T>();
  const T* wp = w.data<T>();
  T* op = out.data<T>();
  const T* bp = bias ? bias->data<T>() : nullptr;
  const int64_t N = in.sizes()[0], C = in.sizes()[1], ID = in.sizes()[2], IH = in.sizes()[3], IW = in.sizes()[4];
  const int64_t OC = out.sizes()[1], OD = out.sizes()[2], OH = out.sizes()[3], OW = out.sizes()[4];
  const int64_t KD = w.sizes()[2], KH = w.sizes()[3], KW = w.sizes()[4];
  const int64_t Cg = C / g, OCg = OC / g;
  const int64_t K = KD * KH * KW;
  parallelFor(N * OC, 1, [&](int64_t lo, int64_t hi) {
    std::vector<A> acc;
    for (int64_t nc = lo; nc < hi; ++nc) {
      const int64_t n = nc / OC, oc = nc % OC, grp = oc / OCg;
      acc.assign(static_cast<size_t>(OD * OH * OW), bp ? static_cast<A>(static_cast<OpMath<T>>(bp[oc])) : A(0));
      for (int64_t ci = 0; ci < Cg; ++ci) {
        const int64_t c = grp * Cg + ci;
        const T* plane = ip + (n * C + c) * ID * IH * IW;
        // weight [OC, Cg, K] plain, or transposed [C, OCg, K]
        const T* wk = transposed ? wp + (c * OCg + (oc - grp * OCg)) * K : wp + (oc * Cg + ci) * K;
        for (int64_t kd = 0; kd < KD; ++kd)
          for (int64_t kh = 0; kh < KH; ++kh)
            for (int64_t kw = 0; kw < KW; ++kw) {
              const A wv = static_cast<A>(static_cast<OpMath<T>>(wk[(kd * KH + kh) * KW + kw]));
              if (!transposed) {
                for (int64_t od = 0; od < OD; ++od) {
                  const int64_t id = od * s[0] - pd[0] + kd * dl[0];
                  if (id < 0 || id >= ID) continue;
                  for (int64_t oh = 0; oh < OH; ++oh) {
                    const int64_t ih = oh * s[1] - pd[1] + kh * dl[1];
                    if (ih < 0 || ih >= IH) continue;
                    for (int64_t ow = 0; ow < OW; ++ow) {
                      const int64_t iw = ow * s[2] - pd[2] + kw * dl[2];
                      if (iw < 0 || iw >= IW) continue;
                      acc[static_cast<size_t>((od * OH + oh) * OW + ow)] +=
                          wv * static_cast<A>(static_cast<OpMath<T>>(plane[(id * IH + ih) * IW + iw]));
                    }
                  }
                }
              } else {
                for (int64_t id = 0; id < ID; ++id) {
                  const int64_t od = id * s[0] - pd[0] + kd * dl[0];
                  if (od < 0 || od >= OD) continue;
                  for (int64_t ih = 0; ih < IH; ++ih) {
                    const int64_t oh = ih * s[1] - pd[1] + kh * dl[1];
                    if (oh < 0 || oh >= OH) continue;
                    for (int64_t iw = 0; iw < IW; ++iw) {
                      const int64_t ow = iw * s[2] - pd[2] + kw * dl[2];
                      if (ow < 0 || ow >= OW) continue;
                      acc[static_cast<size_t>((od * OH + oh) * OW + ow)] +=
                          wv * static_cast<A>(static_cast<OpMath<T>>(plane[(id * IH + ih) * IW + iw]));
                    }
                  }
                }
              }
            }
      }
      T* dst = op + (n * OC + oc) * OD * OH * OW;
      for (int64_t i = 0; i < OD * OH * OW; ++i) dst[i] = castTo<T>(acc[static_cast<size_t>(i)]);
    }
  });
}

// Views an [N, C, *k] tensor as [N, C, 1.., *k] with 3 spatial dims.
Tensor to3d(const Tensor& t, int64_t k) {
  IntList s(t.sizes().begin(), t.sizes().begin() + 2);
  for (int64_t i = k; i < 3; ++i) s.push_back(1);
  s.insert(s.end(), t.sizes().begin() + 2, t.sizes().end());
  return reshape(t, s);
}
IntList pad3(const IntList& v, int64_t k, int64_t fill) {
  IntList out(static_cast<size_t>(3 - k), fill);
  out.insert(out.end(), v.begin(), v.end());
  return out;
}

Tensor runReference(const Tensor& in, const Tensor& w, const std::optional<Tensor>& bias,
                    const ConvParams& p, const IntList& outShape) {
  Tensor out = Tensor::empty(outShape, in.dtype());
  if (out.numel() == 0) return out;
  Tensor i3 = to3d(in.contiguous(), p.k), w3 = to3d(w.contiguous(), p.k), o3 = to3d(out, p.k);
  Tensor b = bias && bias->defined() ? bias->to(in.dtype()).contiguous() : Tensor();
  dispatchNumeric(in.dtype(), "slow_conv2d_cpu", [&](auto tag) {
    using T = decltype(tag);
    convRef3d<T>(i3, w3, b.defined() ? &b : nullptr, o3, pad3(p.stride, p.k, 1), pad3(p.padding, p.k, 0),
                 pad3(p.dilation, p.k, 1), p.transposed, p.groups);
  });
  return out;
}

bool runDnnl(const Tensor& inIn, const Tensor& wIn, const std::optional<Tensor>& bias,
             const ConvParams& p, const Tensor& out) {
  using namespace dnnl;
  using dims = memory::dims;
  Tensor in = inIn.contiguous(), w = wIn.contiguous();
  const int64_t k = p.k, g = p.groups;
  dims strides(p.stride.begin(), p.stride.end()), dil, padL(p.padding.begin(), p.padding.end()), padR;
  for (int64_t i = 0; i < k; ++i) {
    dil.push_back(p.dilation[i] - 1);
    const int64_t isz = in.sizes()[2 + i], ksz = w.sizes()[2 + i], osz = out.sizes()[2 + i];
    const int64_t eff = (ksz - 1) * p.dilation[i] + 1;
    const int64_t r = p.transposed ? (isz - 1) * p.stride[i] + eff - p.padding[i] - osz
                                   : (osz - 1) * p.stride[i] + eff - isz - p.padding[i];
    if (r < 0) return false;
    padR.push_back(r);
  }
  const dims srcDims(in.sizes().begin(), in.sizes().end()), dstDims(out.sizes().begin(), out.sizes().end());
  const int64_t C = in.sizes()[1], OC = out.sizes()[1];
  dims wDims, wStrides;
  const IntList ks(w.sizes().begin() + 2, w.sizes().end());
  int64_t K = 1;
  for (int64_t v : ks) K *= v;
  IntList kStrides = contiguousStrides(ks);
  if (!p.transposed) {
    // PyTorch [OC, C/g, k...] == [g, OC/g, C/g, k...]
    if (g > 1) wDims = {g, OC / g, C / g};
    else wDims = {OC, C};
    IntList full = wDims;
    full.insert(full.end(), ks.begin(), ks.end());
    wDims = dims(full.begin(), full.end());
    IntList st = contiguousStrides(full);
    wStrides = dims(st.begin(), st.end());
  } else {
    // PyTorch [C, OC/g, k...] == [g, C/g, OC/g, k...]; oneDNN wants [g, OC/g, C/g, k...]
    const int64_t Cg = C / g, OCg = OC / g;
    if (g > 1) {
      wDims = {g, OCg, Cg};
      wStrides = {Cg * OCg * K, K, OCg * K};
    } else {
      wDims = {OC, C};
      wStrides = {K, OC * K};
    }
    wDims.insert(wDims.end(), ks.begin(), ks.end());
    wStrides.insert(wStrides.end(), kStrides.begin(), kStrides.end());
  }
  const auto f32 = memory::data_type::f32;
  memory::desc srcAny(srcDims, f32, memory::format_tag::any), dstAny(dstDims, f32, memory::format_tag::any),
      wAny(wDims, f32, memory::format_tag::any);
  const bool hasBias = bias && bias->defined();
  memory::desc biasMd = hasBias ? memory::desc({OC}, f32, memory::format_tag::a) : memory::desc();
  auto& eng = dnnl_utils::engine();
  auto& strm = dnnl_utils::stream();
  const memory::desc srcUser(srcDims, f32, dims(in.strides().begin(), in.strides().end()));
  const memory::desc dstUser(dstDims, f32, dims(out.strides().begin(), out.strides().end()));
  const memory::desc wUser(wDims, f32, wStrides);
  memory srcMem(srcUser, eng, in.rawData()), dstMem(dstUser, eng, out.rawData()), wMem(wUser, eng, w.rawData());
  Tensor b = hasBias ? bias->contiguous() : Tensor();
  memory biasMem = hasBias ? memory(biasMd, eng, b.rawData()) : memory();

  auto run = [&](auto pd, auto prim) {
    memory src = srcMem, wt = wMem, dst = dstMem;
    if (pd.src_desc() != srcUser) {
      src = memory(pd.src_desc(), eng);
      reorder(srcMem, src).execute(strm, srcMem, src);
    }
    if (pd.weights_desc() != wUser) {
      wt = memory(pd.weights_desc(), eng);
      reorder(wMem, wt).execute(strm, wMem, wt);
    }
    if (pd.dst_desc() != dstUser) dst = memory(pd.dst_desc(), eng);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wt}, {DNNL_ARG_DST, dst}};
    if (hasBias) args[DNNL_ARG_BIAS] = biasMem;
    prim.execute(strm, args);
    if (pd.dst_desc() != dstUser) reorder(dst, dstMem).execute(strm, dst, dstMem);
    strm.wait();
  };
  try {
    if (!p.transposed) {
      auto d = hasBias ? convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct,
                                                   srcAny, wAny, biasMd, dstAny, strides, dil, padL, padR)
                       : convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct,
                                                   srcAny, wAny, dstAny, strides, dil, padL, padR);
      convolution_forward::primitive_desc pd(d, eng);
      run(pd, convolution_forward(pd));
    } else {
      auto d = hasBias ? deconvolution_forward::desc(prop_kind::forward_inference, algorithm::deconvolution_direct,
                                                     srcAny, wAny, biasMd, dstAny, strides, dil, padL, padR)
                       : deconvolution_forward::desc(prop_kind::forward_inference, algorithm::deconvolution_direct,
                                                     srcAny, wAny, dstAny, strides, dil, padL, padR);
      deconvolution_forward::primitive_desc pd(d, eng);
      run(pd, deconvolution_forward(pd));
    }
  } catch (const dnnl::error&) {
    return false;  // shapes oneDNN does not take: the reference loop runs instead
  }
  return true;
}

Tensor convImpl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                const IntList& stride, const IntList& padding, const IntList& dilation, bool transposed,
                const IntList& outputPadding, int64_t groups, bool allowDnnl) {
  const int64_t wd = weight.dim();
  TL_CHECK(wd >= 3 && wd <= 5, "Expected 3D, 4D or 5D weight for convolution, but got weight of size {}",
           sizesToString(weight.sizes()));
  const bool unbatched = input.dim() == wd - 1;
  TL_CHECK(unbatched || input.dim() == wd,
           "Expected {}D (unbatched) or {}D (batched) input to conv{}d, but got input of size: {}", wd - 1, wd,
           wd - 2, sizesToString(input.sizes()));
  Tensor in = unbatched ? unsqueeze(input, 0) : input;
  TL_CHECK(in.dtype() == weight.dtype(),
           "expected scalar type {} but found {}", toString(in.dtype()), toString(weight.dtype()));
  ConvParams p;
  p.k = wd - 2;
  p.stride = expandParam(stride, p.k, "stride", 1);
  p.padding = expandParam(padding, p.k, "padding", 0);
  p.dilation = expandParam(dilation, p.k, "dilation", 1);
  p.outputPadding = expandParam(outputPadding, p.k, "output_padding", 0);
  p.transposed = transposed;
  p.groups = groups;
  checkShapes(in, weight, bias, p);
  const IntList outShape = outputShape(in, weight, p);
  Tensor out;
  if (allowDnnl && in.dtype() == ScalarType::Float && in.numel() > 0 && checkedNumel(outShape) > 0) {
    out = Tensor::empty(outShape, in.dtype());
    if (!runDnnl(in, weight, bias, p, out)) out = runReference(in, weight, bias, p, outShape);
  } else {
    out = runReference(in, weight, bias, p, outShape);
  }
  return unbatched ? squeeze(out, 0) : out;
}

}  // namespace

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   const IntList& stride, const IntList& padding, const IntList& dilation, bool transposed,
                   const IntList& outputPadding, int64_t groups) {
  return convImpl(input, weight, bias, stride, padding, dilation, transposed, outputPadding, groups, true);
}

Tensor convolutionReference(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                            const IntList& stride, const IntList& padding, const IntList& dilation,
                            bool transposed, const IntList& outputPadding, int64_t groups) {
  return convImpl(input, weight, bias, stride, padding, dilation, transposed, outputPadding, groups, false);
}

Tensor convNd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              const IntList& stride, const IntList& padding, const IntList& dilation, int64_t groups) {
  return convolution(input, weight, bias, stride, padding, dilation, false, {0}, groups);
}

Tensor convTransposeNd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                       const IntList& stride, const IntList& padding, const IntList& outputPadding,
                       int64_t groups, const IntList& dilation) {
  return convolution(input, weight, bias, stride, padding, dilation, true, outputPadding, groups);
}

}  // namespace torchless::ops
