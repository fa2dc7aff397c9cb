#include "ops/conv.h"

#include "ops/dispatch.h"
#include "ops/dnnl_utils.h"
#include "ops/elementwise.h"
#include "ops/parallel.h"
#include "ops/shape.h"
#include "ops/tensor_iterator.h"
#include "ops/thread_budget.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

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
  TL_CHECK(static_cast<int64_t>(v.size()) == k,
           "expected {} to be a single integer value or a list of {} values to match the "
           "convolution dimensions, but got {}={}",
           name, k, name, sizesToString(v));
  return v;
}

IntList outputShape(const Tensor& in, const Tensor& w, const ConvParams& p) {
  IntList out{in.sizes()[0], p.transposed ? w.sizes()[1] * p.groups : w.sizes()[0]};
  for (int64_t i = 0; i < p.k; ++i) {
    const int64_t isz = in.sizes()[2 + i], ksz = w.sizes()[2 + i];
    int64_t o;
    if (p.transposed)
      o = (isz - 1) * p.stride[i] - 2 * p.padding[i] + p.dilation[i] * (ksz - 1) +
          p.outputPadding[i] + 1;
    else
      o = (isz + 2 * p.padding[i] - p.dilation[i] * (ksz - 1) - 1) / p.stride[i] + 1;
    out.push_back(o);
  }
  return out;
}

void checkShapes(const Tensor& in, const Tensor& w, const std::optional<Tensor>& bias,
                 const ConvParams& p) {
  for (int64_t i = 0; i < p.k; ++i) {
    TL_CHECK(p.stride[i] > 0, "non-positive stride is not supported");
    TL_CHECK(p.padding[i] >= 0, "negative padding is not supported");
    TL_CHECK(p.dilation[i] > 0, "dilation should be greater than zero");
    if (p.transposed)
      TL_CHECK(p.outputPadding[i] < p.stride[i] || p.outputPadding[i] < p.dilation[i],
               "output padding must be smaller than either stride or dilation, but got "
               "output_padding_height: {} output_padding_width: {} stride_height: {} stride_width: "
               "{} dilation_height: {} dilation_width: {}",
               p.outputPadding[0], p.outputPadding[p.k - 1], p.stride[0], p.stride[p.k - 1],
               p.dilation[0], p.dilation[p.k - 1]);
  }
  TL_CHECK(p.groups > 0, "non-positive groups is not supported");
  const int64_t C = in.sizes()[1];
  if (!p.transposed) {
    TL_CHECK(w.sizes()[0] % p.groups == 0,
             "Given groups={}, expected weight to be divisible by {} at dimension 0, but got "
             "weight of size {} instead",
             p.groups, p.groups, sizesToString(w.sizes()));
    TL_CHECK(C == w.sizes()[1] * p.groups,
             "Given groups={}, weight of size {}, expected input{} to have {} channels, but got {} "
             "channels instead",
             p.groups, sizesToString(w.sizes()), sizesToString(in.sizes()), w.sizes()[1] * p.groups,
             C);
    for (int64_t i = 0; i < p.k; ++i)
      TL_CHECK(in.sizes()[2 + i] + 2 * p.padding[i] >= p.dilation[i] * (w.sizes()[2 + i] - 1) + 1,
               "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size "
               "can't be greater than actual input size",
               in.sizes()[2 + i] + 2 * p.padding[i], p.dilation[i] * (w.sizes()[2 + i] - 1) + 1);
  } else {
    TL_CHECK(C == w.sizes()[0],
             "Given transposed=1, weight of size {}, expected input{} to have {} channels, but got "
             "{} channels instead",
             sizesToString(w.sizes()), sizesToString(in.sizes()), w.sizes()[0], C);
    TL_CHECK(C % p.groups == 0,
             "Given groups={}, expected input channels to be divisible by groups", p.groups);
  }
  if (bias && bias->defined()) {
    const int64_t oc = p.transposed ? w.sizes()[1] * p.groups : w.sizes()[0];
    TL_CHECK(bias->dim() == 1 && bias->sizes()[0] == oc,
             "Given weight of size {}, expected bias to be 1-dimensional with {} elements, but got "
             "bias of size {} instead",
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
  const int64_t N = in.sizes()[0], C = in.sizes()[1], ID = in.sizes()[2], IH = in.sizes()[3],
                IW = in.sizes()[4];
  const int64_t OC = out.sizes()[1], OD = out.sizes()[2], OH = out.sizes()[3], OW = out.sizes()[4];
  const int64_t KD = w.sizes()[2], KH = w.sizes()[3], KW = w.sizes()[4];
  const int64_t Cg = C / g, OCg = OC / g;
  const int64_t K = KD * KH * KW;
  parallelFor(N * OC, 1, [&](int64_t lo, int64_t hi) {
    std::vector<A> acc;
    for (int64_t nc = lo; nc < hi; ++nc) {
      const int64_t n = nc / OC, oc = nc % OC, grp = oc / OCg;
      acc.assign(static_cast<size_t>(OD * OH * OW),
                 bp ? static_cast<A>(static_cast<OpMath<T>>(bp[oc])) : A(0));
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
                          wv *
                          static_cast<A>(static_cast<OpMath<T>>(plane[(id * IH + ih) * IW + iw]));
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
                          wv *
                          static_cast<A>(static_cast<OpMath<T>>(plane[(id * IH + ih) * IW + iw]));
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
    convRef3d<T>(i3, w3, b.defined() ? &b : nullptr, o3, pad3(p.stride, p.k, 1),
                 pad3(p.padding, p.k, 0), pad3(p.dilation, p.k, 1), p.transposed, p.groups);
  });
  return out;
}

// Note [oneDNN convolution cache]
// Creating a oneDNN primitive (and the reorders around it) costs about as much as running a
// small convolution, so each distinct convolution (shapes, parameters, post-ops, thread count)
// is created once and kept in a process-wide cache (ConvPrim, at most kMaxPrims entries; the
// cache is emptied when full). oneDNN chooses the weight layout (format_tag::any).
//
// Reordered weights are cached only when the caller says the weight is constant
// (convolutionFused(..., constantWeight = true), which the fuse_conv_activation pass sets
// for a prim::Constant weight that no node can mutate). They are keyed by the weight's storage
// identity, data pointer and strides, and the cache entry holds the storage, so the address
// cannot be reused by another tensor while it is cached. A weight that is not constant (a
// module attribute, an argument) is reordered on every call, so a mutated weight is never
// served stale. At most kMaxWeightBytes of reordered weights are kept; beyond that weights are
// reordered per call.
//
// Activations are plain strided tensors: contiguous NCHW, or channels-last (NHWC memory) where
// the fusion pass asked for it between fused convolutions (convolutionFused's
// channelsLastOutput); both are handed to oneDNN as they are, and oneDNN's own layout, when it
// differs, costs a reorder into a scratch buffer from our caching allocator (core/storage.h).
constexpr size_t kMaxPrims = 1024;
constexpr size_t kMaxWeightBytes = size_t{1} << 30;

struct CachedWeight {
  Storage keepAlive;  // the original weight's storage (identity stays valid)
  Storage buffer;     // the reordered bytes
  dnnl::memory mem;
};

std::atomic<size_t> gWeightBytes{0};

struct ConvPrim {
  ~ConvPrim() {
    for (const auto& [id, cw] : weights) gWeightBytes -= cw->buffer.nbytes();
  }
  dnnl::primitive prim;
  dnnl::memory::desc srcUser, wUser, dstUser, srcPd, wPd, dstPd, biasMd;
  dnnl::reorder srcReorder, wReorder, dstReorder;  // empty when the layouts agree
  dnnl::reorder residualReorder;                   // plain -> dstPd, for the sum post-op
  bool srcReorderNeeded = false, wReorderNeeded = false, dstReorderNeeded = false;
  std::mutex mu;  // guards weights
  std::vector<std::pair<std::vector<int64_t>, std::shared_ptr<CachedWeight>>> weights;
};

struct VecHash {
  size_t operator()(const std::vector<int64_t>& v) const {
    size_t h = 1469598103934665603ull;
    for (int64_t x : v) h = (h ^ static_cast<size_t>(x)) * 1099511628211ull;
    return h;
  }
};

std::mutex gPrimMu;
std::unordered_map<std::vector<int64_t>, std::shared_ptr<ConvPrim>, VecHash> gPrims;

int64_t floatBits(float f) {
  int32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// A fused ReLU is oneDNN's eltwise_relu post-op, a vmaxps against zero: a NaN output becomes 0.
// PyTorch's own frozen graph after optimize_for_inference (mkldnn_convolution, then relu_ on
// the MKLDNN tensor) does the same, as does ONNX Runtime's fused Conv+Relu (MLAS); unfused,
// aten::relu keeps NaN.
dnnl::algorithm eltwiseAlg(ConvActivation a) {
  using dnnl::algorithm;
  switch (a) {
    case ConvActivation::Relu: return algorithm::eltwise_relu;
    case ConvActivation::Clamp: return algorithm::eltwise_clip_v2;
    case ConvActivation::Sigmoid: return algorithm::eltwise_logistic;
    case ConvActivation::Silu: return algorithm::eltwise_swish;
    case ConvActivation::Hardswish: return algorithm::eltwise_hardswish;
    case ConvActivation::GeluErf: return algorithm::eltwise_gelu_erf;
    case ConvActivation::GeluTanh: return algorithm::eltwise_gelu_tanh;
    case ConvActivation::None: break;
  }
  return algorithm::undef;
}

// Dense [N, C, H, W] with NHWC strides (torch.channels_last); C, H and W above 1 so that the
// layout is unambiguous.
bool isChannelsLast(const Tensor& t) {
  if (t.dim() != 4) return false;
  const IntList& z = t.sizes();
  const IntList& s = t.strides();
  if (z[1] <= 1 || z[2] <= 1 || z[3] <= 1) return false;
  return s[1] == 1 && s[3] == z[1] && s[2] == z[3] * z[1] &&
         (z[0] == 1 || s[0] == z[2] * z[3] * z[1]);
}

Tensor emptyChannelsLast(const IntList& sizes, ScalarType dt) {
  Tensor base = Tensor::empty({sizes[0], sizes[2], sizes[3], sizes[1]}, dt);
  return permute(base, {0, 3, 1, 2});
}

// out = residual (same shape); a memcpy when both have the same dense layout.
void copyResidual(const Tensor& out, const Tensor& residual) {
  if (residual.strides() == out.strides() &&
      (residual.isContiguous() || isChannelsLast(residual))) {
    std::memcpy(out.rawData(), residual.rawData(),
                static_cast<size_t>(out.numel()) * out.itemsize());
    return;
  }
  copyInto(out, residual);
}

// The epilogue of a fused convolution: y = act(conv + residual).
struct Epilogue {
  ConvActivation act = ConvActivation::None;
  float alpha = 0, beta = 0;
  bool sum = false;  // dst holds the residual before the convolution runs
};

std::shared_ptr<ConvPrim> makePrim(const Tensor& in, const Tensor& w, bool hasBias,
                                   const ConvParams& p, const IntList& outSizes,
                                   const IntList& outStrides, const Epilogue& ep) {
  using namespace dnnl;
  using dims = memory::dims;
  const int64_t k = p.k, g = p.groups;
  dims strides(p.stride.begin(), p.stride.end()), dil, padL(p.padding.begin(), p.padding.end()),
      padR;
  for (int64_t i = 0; i < k; ++i) {
    dil.push_back(p.dilation[i] - 1);
    const int64_t isz = in.sizes()[2 + i], ksz = w.sizes()[2 + i], osz = outSizes[2 + i];
    const int64_t eff = (ksz - 1) * p.dilation[i] + 1;
    const int64_t r = p.transposed ? (isz - 1) * p.stride[i] + eff - p.padding[i] - osz
                                   : (osz - 1) * p.stride[i] + eff - isz - p.padding[i];
    // A strided convolution whose last window ends before the input does (1x1, stride 2 on an
    // even size) has r = -1: no right padding, oneDNN's floor division gives the same size.
    if (r < 0 && p.transposed) return nullptr;
    padR.push_back(std::max<int64_t>(r, 0));
  }
  const dims srcDims(in.sizes().begin(), in.sizes().end()),
      dstDims(outSizes.begin(), outSizes.end());
  const int64_t OC = outSizes[1];
  const auto [wd, ws] = dnnlConvWeightsView(w.sizes(), g, p.transposed);
  const dims wDims(wd.begin(), wd.end()), wStrides(ws.begin(), ws.end());
  const auto f32 = memory::data_type::f32;
  auto prim = std::make_shared<ConvPrim>();
  const IntList& srcSt = in.strides();
  const IntList& dstSt = outStrides;
  prim->srcUser = memory::desc(srcDims, f32, dims(srcSt.begin(), srcSt.end()));
  prim->dstUser = memory::desc(dstDims, f32, dims(dstSt.begin(), dstSt.end()));
  prim->wUser = memory::desc(wDims, f32, wStrides);
  memory::desc srcAny(srcDims, f32, memory::format_tag::any),
      dstAny(dstDims, f32, memory::format_tag::any), wAny(wDims, f32, memory::format_tag::any);
  prim->biasMd = hasBias ? memory::desc({OC}, f32, memory::format_tag::a) : memory::desc();
  auto& eng = dnnl_utils::engine();
  primitive_attr attr = dnnl_utils::userScratchpad();  // Note [Scratchpads of shared primitives]
  if (ep.sum || ep.act != ConvActivation::None) {
    post_ops po;
    if (ep.sum) po.append_sum(1.f);
    if (ep.act != ConvActivation::None) {
      const bool swish = ep.act == ConvActivation::Silu;
      po.append_eltwise(1.f, eltwiseAlg(ep.act), swish ? 1.f : ep.alpha, ep.beta);
    }
    attr.set_post_ops(po);
  }
  try {
    if (!p.transposed) {
      auto d = hasBias ? convolution_forward::desc(prop_kind::forward_inference,
                                                   algorithm::convolution_direct, srcAny, wAny,
                                                   prim->biasMd, dstAny, strides, dil, padL, padR)
                       : convolution_forward::desc(prop_kind::forward_inference,
                                                   algorithm::convolution_direct, srcAny, wAny,
                                                   dstAny, strides, dil, padL, padR);
      convolution_forward::primitive_desc pd(d, attr, eng);
      prim->srcPd = pd.src_desc();
      prim->wPd = pd.weights_desc();
      prim->dstPd = pd.dst_desc();
      prim->prim = convolution_forward(pd);
    } else {
      auto d = hasBias ? deconvolution_forward::desc(prop_kind::forward_inference,
                                                     algorithm::deconvolution_direct, srcAny, wAny,
                                                     prim->biasMd, dstAny, strides, dil, padL, padR)
                       : deconvolution_forward::desc(prop_kind::forward_inference,
                                                     algorithm::deconvolution_direct, srcAny, wAny,
                                                     dstAny, strides, dil, padL, padR);
      deconvolution_forward::primitive_desc pd(d, attr, eng);
      prim->srcPd = pd.src_desc();
      prim->wPd = pd.weights_desc();
      prim->dstPd = pd.dst_desc();
      prim->prim = deconvolution_forward(pd);
    }
    if (prim->srcPd != prim->srcUser) {
      prim->srcReorderNeeded = true;
      prim->srcReorder = reorder(reorder::primitive_desc(eng, prim->srcUser, eng, prim->srcPd));
    }
    if (prim->wPd != prim->wUser) {
      prim->wReorderNeeded = true;
      prim->wReorder = reorder(reorder::primitive_desc(eng, prim->wUser, eng, prim->wPd));
    }
    if (prim->dstPd != prim->dstUser) {
      prim->dstReorderNeeded = true;
      prim->dstReorder = reorder(reorder::primitive_desc(eng, prim->dstPd, eng, prim->dstUser));
      if (ep.sum)
        prim->residualReorder =
            reorder(reorder::primitive_desc(eng, prim->dstUser, eng, prim->dstPd));
    }
  } catch (const dnnl::error&) {
    return nullptr;  // shapes oneDNN does not take: the reference loop runs instead
  }
  return prim;
}

std::shared_ptr<ConvPrim> primFor(const Tensor& in, const Tensor& w, bool hasBias,
                                  const ConvParams& p, const IntList& outSizes,
                                  const IntList& outStrides, const Epilogue& ep) {
  std::vector<int64_t> key;
  key.reserve(64);
  key.push_back(in.dim());
  key.insert(key.end(), in.sizes().begin(), in.sizes().end());
  key.insert(key.end(), w.sizes().begin(), w.sizes().end());
  key.insert(key.end(), p.stride.begin(), p.stride.end());
  key.insert(key.end(), p.padding.begin(), p.padding.end());
  key.insert(key.end(), p.dilation.begin(), p.dilation.end());
  key.insert(key.end(), outSizes.begin(), outSizes.end());
  key.insert(key.end(), in.strides().begin(), in.strides().end());
  key.insert(key.end(), outStrides.begin(), outStrides.end());
  key.insert(key.end(),
             {p.transposed ? 1 : 0, p.groups, hasBias ? 1 : 0, static_cast<int64_t>(ep.act),
              floatBits(ep.alpha), floatBits(ep.beta), ep.sum ? 1 : 0, getNumThreads()});
  {
    std::lock_guard<std::mutex> lock(gPrimMu);
    auto it = gPrims.find(key);
    if (it != gPrims.end()) return it->second;
  }
  auto prim = makePrim(in, w, hasBias, p, outSizes, outStrides, ep);
  if (!prim) return nullptr;
  std::lock_guard<std::mutex> lock(gPrimMu);
  if (gPrims.size() >= kMaxPrims) gPrims.clear();
  return gPrims.emplace(std::move(key), prim).first->second;
}

// The weights in the primitive's layout: from the cache for a constant weight, else reordered
// into `scratch` now (or the weight's own bytes when the layouts agree).
dnnl::memory weightsFor(ConvPrim& prim, const Tensor& wIn, bool constantWeight, Storage& scratch) {
  using namespace dnnl;
  auto& eng = dnnl_utils::engine();
  if (!prim.wReorderNeeded) {
    Tensor w = wIn.contiguous();
    scratch = w.storage();  // keeps a contiguous copy alive until the primitive ran
    return memory(prim.wUser, eng, w.rawData());
  }
  std::vector<int64_t> id;
  if (constantWeight) {
    id = {static_cast<int64_t>(reinterpret_cast<uintptr_t>(wIn.storage().unsafeGetImpl())),
          static_cast<int64_t>(reinterpret_cast<uintptr_t>(wIn.rawData()))};
    id.insert(id.end(), wIn.strides().begin(), wIn.strides().end());
    std::lock_guard<std::mutex> lock(prim.mu);
    for (const auto& [k, cw] : prim.weights)
      if (k == id) return cw->mem;
  }
  Tensor w = wIn.contiguous();
  memory user(prim.wUser, eng, w.rawData());
  const size_t bytes = prim.wPd.get_size();
  const bool keep = constantWeight && gWeightBytes.load() + bytes <= kMaxWeightBytes;
  // Weights reordered per call share one buffer per thread, grown to the largest seen: a fresh
  // buffer per weight size stays idle in the caching allocator afterwards (resnet50 `torchless
  // run`: 10 MB of its peak; Note [One call runs as loaded] in api/module.cpp).
  thread_local Storage perCall;
  if (!keep && perCall.nbytes() < bytes) perCall = Storage::allocate(bytes);
  Storage buf = keep ? Storage::allocate(bytes) : perCall;
  memory mem(prim.wPd, eng, buf.data());
  prim.wReorder.execute(dnnl_utils::stream(), user, mem);
  dnnl_utils::stream().wait();
  if (keep) {
    auto cw = std::make_shared<CachedWeight>();
    cw->keepAlive = wIn.storage();
    cw->buffer = buf;
    cw->mem = mem;
    gWeightBytes += buf.nbytes();
    std::lock_guard<std::mutex> lock(prim.mu);
    prim.weights.emplace_back(std::move(id), std::move(cw));
    return mem;
  }
  scratch = buf;
  return mem;
}

// Runs the convolution into `out` (float, contiguous or channels-last). With ep.sum, `out`
// already holds the residual. False when oneDNN does not take these shapes.
bool runDnnl(const Tensor& inIn, const Tensor& w, const std::optional<Tensor>& bias,
             const ConvParams& p, const Tensor& out, const Epilogue& ep = {},
             bool constantWeight = false) {
  using namespace dnnl;
  const bool hasBias = bias && bias->defined();
  // A channels-last input (what a fused convolution hands to the next one) is taken as it is.
  Tensor in = inIn.isContiguous() || isChannelsLast(inIn) ? inIn : inIn.contiguous();
  // Multiply-adds: the weight's elements times the output's (input's, transposed) points.
  double macs = static_cast<double>(w.numel()) * static_cast<double>(in.sizes()[0]);
  for (int64_t i = 0; i < p.k; ++i)
    macs *= static_cast<double>(p.transposed ? in.sizes()[2 + i] : out.sizes()[2 + i]);
  ThreadLimit limit(threadsForWork(2 * macs));  // Note [Thread budget] in ops/thread_budget.h
  auto primPtr = primFor(in, w, hasBias, p, out.sizes(), out.strides(), ep);
  if (!primPtr) return false;
  ConvPrim& prim = *primPtr;
  auto& eng = dnnl_utils::engine();
  auto& strm = dnnl_utils::stream();
  Tensor b = hasBias ? bias->contiguous() : Tensor();
  memory srcMem(prim.srcUser, eng, in.rawData()), dstMem(prim.dstUser, eng, out.rawData());
  Storage wScratch, srcScratch, dstScratch;
  memory wt = weightsFor(prim, w, constantWeight, wScratch);
  memory src = srcMem, dst = dstMem;
  if (prim.srcReorderNeeded) {
    srcScratch = Storage::allocate(prim.srcPd.get_size());
    src = memory(prim.srcPd, eng, srcScratch.data());
    prim.srcReorder.execute(strm, srcMem, src);
  }
  if (prim.dstReorderNeeded) {
    dstScratch = Storage::allocate(prim.dstPd.get_size());
    dst = memory(prim.dstPd, eng, dstScratch.data());
    if (ep.sum) prim.residualReorder.execute(strm, dstMem, dst);
  }
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wt}, {DNNL_ARG_DST, dst}};
  if (hasBias) args[DNNL_ARG_BIAS] = memory(prim.biasMd, eng, b.rawData());
  dnnl_utils::execute(prim.prim, args);
  if (prim.dstReorderNeeded) prim.dstReorder.execute(strm, dst, dstMem);
  strm.wait();
  return true;
}

Tensor applyConvActivation(const Tensor& x, ConvActivation act, float alpha, float beta) {
  switch (act) {
    case ConvActivation::None: return x;
    case ConvActivation::Relu: return relu(x);
    case ConvActivation::Clamp:
      return clamp(x, std::optional<Scalar>(alpha), std::optional<Scalar>(beta));
    case ConvActivation::Sigmoid: return sigmoid(x);
    case ConvActivation::Silu: return silu(x);
    case ConvActivation::Hardswish: return hardswish(x);
    case ConvActivation::GeluErf: return gelu(x, "none");
    case ConvActivation::GeluTanh: return gelu(x, "tanh");
  }
  return x;
}

Tensor convImpl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                const IntList& stride, const IntList& padding, const IntList& dilation,
                bool transposed, const IntList& outputPadding, int64_t groups, bool allowDnnl,
                const Epilogue* fused = nullptr,
                const std::optional<Tensor>& residual = std::nullopt, bool constantWeight = false,
                bool channelsLastOut = false) {
  const int64_t wd = weight.dim();
  TL_CHECK(wd >= 3 && wd <= 5,
           "Expected 3D, 4D or 5D weight for convolution, but got weight of size {}",
           sizesToString(weight.sizes()));
  const bool unbatched = input.dim() == wd - 1;
  TL_CHECK(unbatched || input.dim() == wd,
           "Expected {}D (unbatched) or {}D (batched) input to conv{}d, but got input of size: {}",
           wd - 1, wd, wd - 2, sizesToString(input.sizes()));
  Tensor in = unbatched ? unsqueeze(input, 0) : input;
  TL_CHECK(in.dtype() == weight.dtype(), "expected scalar type {} but found {}",
           toString(in.dtype()), toString(weight.dtype()));
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
  const bool dnnlOk =
      allowDnnl && in.dtype() == ScalarType::Float && in.numel() > 0 && checkedNumel(outShape) > 0;
  if (fused) {
    // One oneDNN primitive with post-ops when it can; otherwise the same ops one by one.
    const bool residualOk =
        !residual || (residual->dtype() == ScalarType::Float && residual->sizes() == outShape);
    if (dnnlOk && !unbatched && residualOk &&
        (!bias || !bias->defined() || bias->dtype() == ScalarType::Float)) {
      const bool cl = channelsLastOut && outShape.size() == 4 && outShape[1] > 1 &&
                      outShape[2] > 1 && outShape[3] > 1;
      out = cl ? emptyChannelsLast(outShape, in.dtype()) : Tensor::empty(outShape, in.dtype());
      Epilogue ep = *fused;
      ep.sum = residual.has_value();
      if (ep.sum) copyResidual(out, *residual);
      if (runDnnl(in, weight, bias, p, out, ep, constantWeight)) return out;
    }
    out = convImpl(input, weight, bias, stride, padding, dilation, transposed, outputPadding,
                   groups, allowDnnl);
    if (residual) out = add(out, *residual);
    return applyConvActivation(out, fused->act, fused->alpha, fused->beta);
  }
  if (dnnlOk) {
    out = Tensor::empty(outShape, in.dtype());
    if (!runDnnl(in, weight, bias, p, out)) out = runReference(in, weight, bias, p, outShape);
  } else {
    out = runReference(in, weight, bias, p, outShape);
  }
  return unbatched ? squeeze(out, 0) : out;
}

}  // namespace

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   const IntList& stride, const IntList& padding, const IntList& dilation,
                   bool transposed, const IntList& outputPadding, int64_t groups) {
  // at::_convolution's check_input_shape_forward: only conv1d/2d/3d batchify an unbatched input.
  TL_CHECK(input.dim() == weight.dim(),
           "Expected {}-dimensional input for {}-dimensional weight {}, but got {}-dimensional "
           "input of size {} "
           "instead",
           weight.dim(), weight.dim(), sizesToString(weight.sizes()), input.dim(),
           sizesToString(input.sizes()));
  return convImpl(input, weight, bias, stride, padding, dilation, transposed, outputPadding, groups,
                  true);
}

ConvActivation convActivationFromString(const std::string& name) {
  static const std::pair<const char*, ConvActivation> names[] = {
      {"none", ConvActivation::None},    {"relu", ConvActivation::Relu},
      {"clamp", ConvActivation::Clamp},  {"sigmoid", ConvActivation::Sigmoid},
      {"silu", ConvActivation::Silu},    {"hardswish", ConvActivation::Hardswish},
      {"gelu", ConvActivation::GeluErf}, {"gelu_tanh", ConvActivation::GeluTanh}};
  for (const auto& [n, a] : names)
    if (name == n) return a;
  throw Error(fmt::format("unknown fused convolution activation '{}'", name));
}

Tensor convolutionFused(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, const IntList& stride,
                        const IntList& padding, const IntList& dilation, int64_t groups,
                        const std::optional<Tensor>& residual, ConvActivation act, double alpha,
                        double beta, bool constantWeight, bool channelsLastOutput) {
  Epilogue ep;
  ep.act = act;
  ep.alpha = static_cast<float>(alpha);
  ep.beta = static_cast<float>(beta);
  return convImpl(input, weight, bias, stride, padding, dilation, false, {0}, groups, true, &ep,
                  residual, constantWeight, channelsLastOutput);
}

std::pair<IntList, IntList> dnnlConvWeightsView(const IntList& w, int64_t g, bool transposed) {
  const IntList ks(w.begin() + 2, w.end());
  int64_t K = 1;
  for (int64_t v : ks) K *= v;
  const int64_t C = transposed ? w[0] : w[1] * g, OC = transposed ? w[1] * g : w[0];
  IntList dims, strides;
  if (!transposed) {
    // PyTorch [OC, C/g, k...] == [g, OC/g, C/g, k...]
    dims = g > 1 ? IntList{g, OC / g, C / g} : IntList{OC, C};
    dims.insert(dims.end(), ks.begin(), ks.end());
    strides = contiguousStrides(dims);
  } else {
    // PyTorch [C, OC/g, k...] == [g, C/g, OC/g, k...]; oneDNN wants [g, OC/g, C/g, k...]
    const int64_t Cg = C / g, OCg = OC / g;
    if (g > 1) {
      dims = {g, OCg, Cg};
      strides = {Cg * OCg * K, K, OCg * K};
    } else {
      dims = {OC, C};
      strides = {K, OC * K};
    }
    const IntList kStrides = contiguousStrides(ks);
    dims.insert(dims.end(), ks.begin(), ks.end());
    strides.insert(strides.end(), kStrides.begin(), kStrides.end());
  }
  return {dims, strides};
}

size_t convolutionCacheSize() {
  std::lock_guard<std::mutex> lock(gPrimMu);
  return gPrims.size();
}

Tensor convolutionReference(const Tensor& input, const Tensor& weight,
                            const std::optional<Tensor>& bias, const IntList& stride,
                            const IntList& padding, const IntList& dilation, bool transposed,
                            const IntList& outputPadding, int64_t groups) {
  return convImpl(input, weight, bias, stride, padding, dilation, transposed, outputPadding, groups,
                  false);
}

Tensor convNd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              const IntList& stride, const IntList& padding, const IntList& dilation,
              int64_t groups) {
  return convImpl(input, weight, bias, stride, padding, dilation, false, {0}, groups, true);
}

Tensor convTransposeNd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                       const IntList& stride, const IntList& padding, const IntList& outputPadding,
                       int64_t groups, const IntList& dilation) {
  return convImpl(input, weight, bias, stride, padding, dilation, true, outputPadding, groups,
                  true);
}

}  // namespace torchless::ops
