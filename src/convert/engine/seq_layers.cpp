// Fused executors for the transformer fast paths and recurrent layers (Note [Fused sequence
// layers] in seq_layers.h).
#include "convert/engine/seq_layers.h"

#include "core/error.h"
#include "ops/dnnl_utils.h"
#include "ops/elementwise.h"
#include "ops/parallel.h"
#include "ops/thread_budget.h"
#include "runtime/op_observer.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <vector>

namespace torchless::engine {

namespace {

using dnnl::memory;
using dt = memory::data_type;
namespace du = ops::dnnl_utils;

// ---- softmax rows with a vectorized exp --------------------------------------------------

// Note [Attention softmax]
// The rows of q k^T are normalized here, W floats at a time with GCC's vector extensions,
// compiled three times (AVX-512, AVX2 + FMA, SSE2) and chosen once at run time: one pass for
// the row's max, one for exp(x - max) and its sum, one to scale by 1 / sum. exp is Cephes'
// expf written without branches or library calls (round to nearest with the 1.5 * 2^23 trick,
// a degree-5 polynomial on the remainder, 2^n put into the exponent bits), relative error about
// 1 ulp, and 0 below -87.3 (where float's normal range ends; PyTorch's Sleef exp gives 0 or a
// denormal there). As PyTorch's kernel: a NaN in a row makes the row NaN, a row whose entries
// are all -inf (every key masked) is NaN (max - max = NaN), and a masked key (-inf) gets 0.

template <int W>
struct Lanes {
  // (typedef: GCC drops vector_size from a dependent alias-declaration)
  typedef float F __attribute__((vector_size(W * sizeof(float))));
  typedef int32_t I __attribute__((vector_size(W * sizeof(float))));
};

// x = exp(x) for x <= 0 (a row minus its max) in every lane (Note [Attention softmax]).
template <class F, class I>
[[gnu::always_inline]] inline void expNonPositive(F& x) {
  const I under = x < -87.3f;
  x = under ? F{} - 87.3f : x;
  const F n = (x * 1.44269504088896341f + 12582912.f) - 12582912.f;
  const F r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  F p = F{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const I e = (__builtin_convertvector(n, I) + 127) << 23;
  F scale;
  std::memcpy(&scale, &e, sizeof scale);
  x = (p * r * r + r + 1.f) * scale;
  x = under ? F{} : x;
}

// softmax over each of `rows` contiguous rows of n floats, in place, W lanes at a time.
template <int W>
[[gnu::always_inline]] inline void softmaxRowsW(float* p, int64_t rows, int64_t n) {
  using F = typename Lanes<W>::F;
  using I = typename Lanes<W>::I;
  using F1 = typename Lanes<1>::F;
  using I1 = typename Lanes<1>::I;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = p + r * n;
    float m = row[0];
    int64_t j = 0;
    if (n >= W) {
      F mv, v;
      std::memcpy(&mv, row, sizeof mv);
      for (j = W; j + W <= n; j += W) {
        std::memcpy(&v, row + j, sizeof v);
        mv = v > mv ? v : mv;
      }
      for (int k = 0; k < W; ++k) m = mv[k] > m ? mv[k] : m;
    }
    for (; j < n; ++j) m = row[j] > m ? row[j] : m;
    F acc{};
    for (j = 0; j + W <= n; j += W) {
      F v;
      std::memcpy(&v, row + j, sizeof v);
      v -= m;
      expNonPositive<F, I>(v);
      std::memcpy(row + j, &v, sizeof v);
      acc += v;
    }
    float s = 0.f;
    for (; j < n; ++j) {
      F1 v = {row[j] - m};
      expNonPositive<F1, I1>(v);
      row[j] = v[0];
      s += v[0];
    }
    for (int k = 0; k < W; ++k) s += acc[k];
    const float inv = 1.f / s;
    for (j = 0; j + W <= n; j += W) {
      F v;
      std::memcpy(&v, row + j, sizeof v);
      v *= inv;
      std::memcpy(row + j, &v, sizeof v);
    }
    for (; j < n; ++j) row[j] *= inv;
  }
}

// One copy per vector width; without trapping math (with it GCC keeps the selects above as
// branches).
__attribute__((target("avx512f"), optimize("no-trapping-math"))) void softmaxRows16(float* p,
                                                                                    int64_t rows,
                                                                                    int64_t n) {
  softmaxRowsW<16>(p, rows, n);
}
__attribute__((target("avx2,fma"), optimize("no-trapping-math"))) void softmaxRows8(float* p,
                                                                                    int64_t rows,
                                                                                    int64_t n) {
  softmaxRowsW<8>(p, rows, n);
}
__attribute__((optimize("no-trapping-math"))) void softmaxRows4(float* p, int64_t rows, int64_t n) {
  softmaxRowsW<4>(p, rows, n);
}

using SoftmaxRowsFn = void (*)(float*, int64_t, int64_t);

// The widest softmaxRows the CPU runs (chosen once).
SoftmaxRowsFn softmaxRowsForCpu() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return softmaxRows16;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return softmaxRows8;
  return softmaxRows4;
}

// softmax over each of `rows` contiguous rows of n floats, in place (Note [Attention softmax]).
void softmaxRows(float* p, int64_t rows, int64_t n) {
  static const SoftmaxRowsFn fn = softmaxRowsForCpu();
  fn(p, rows, n);
}

// ---- oneDNN pieces, built once per plan --------------------------------------------------

// A oneDNN primitive from one f32 buffer to another, with its weight and bias kept alive; run()
// binds x and y and executes it under the thread count prepare() chose (Note [Thread budget]).
class BoundPrimitive {
 public:
  void run(const float* x, float* y) {
    ops::ThreadLimit limit(threads_);
    src_.set_data_handle(const_cast<float*>(x));
    dst_.set_data_handle(y);
    prim_.execute(du::stream(), args_);
    du::stream().wait();
  }

 protected:
  int threads_ = 1;
  Tensor w_, b_;
  dnnl::primitive prim_;
  memory src_, dst_;
  std::unordered_map<int, memory> args_;
};

// y [M, N] = x [M, K] @ W^T + b, W [N, K] (PyTorch's linear), then (residual) a residual
// [M, N] added (a binary post-op: no copy of it into y first), then an activation; W packed
// into the primitive's layout once per engine.
class FusedLinear : public BoundPrimitive {
 public:
  void prepare(const Layer& l, int slot, int64_t M, const Tensor& w, const Tensor& b, bool residual,
               dnnl::algorithm act = dnnl::algorithm::undef) {
    auto& eng = du::engine();
    const int64_t N = w.size(0), K = w.size(1);
    // Note [Thread budget]: threads by the work, when the primitive is made and when it runs.
    threads_ = ops::threadsForWork(2.0 * static_cast<double>(M) * static_cast<double>(N) *
                                   static_cast<double>(K));
    ops::ThreadLimit limit(threads_);
    w_ = w.contiguous();
    b_ = b.contiguous();
    memory::desc srcMd({M, K}, dt::f32, {K, 1}), dstMd({M, N}, dt::f32, {N, 1});
    memory::desc wUser({K, N}, dt::f32, {1, K}), wAny({K, N}, dt::f32, memory::format_tag::any);
    memory::desc biasMd({1, N}, dt::f32, {N, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops po;
    if (residual) po.append_binary(dnnl::algorithm::binary_add, dstMd);
    if (act != dnnl::algorithm::undef) po.append_eltwise(1.f, act, 0.f, 0.f);
    attr.set_post_ops(po);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(srcMd, wAny, biasMd, dstMd), attr, eng);
    prim_ = dnnl::matmul(pd);
    memory wMem = packedWeights(l, slot, wUser, pd.weights_desc(), w_.rawData());
    src_ = memory(srcMd, eng, nullptr);
    dst_ = memory(dstMd, eng, nullptr);
    args_ = {{DNNL_ARG_SRC, src_},
             {DNNL_ARG_WEIGHTS, wMem},
             {DNNL_ARG_BIAS, memory(biasMd, eng, b_.rawData())},
             {DNNL_ARG_DST, dst_}};
    if (residual) {
      residual_ = memory(dstMd, eng, nullptr);
      args_[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = residual_;
    }
    if (pd.scratchpad_desc().get_size() > 0) {
      scratch_ = Storage::allocate(pd.scratchpad_desc().get_size());
      args_[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), eng, scratch_.data());
    }
  }
  /// y = x W^T + b + residual (prepared with a residual).
  void run(const float* x, float* y, const float* residual) {
    residual_.set_data_handle(const_cast<float*>(residual));
    BoundPrimitive::run(x, y);
  }
  using BoundPrimitive::run;

 private:
  Storage scratch_;
  memory residual_;
};

// layer_norm over the last dim of [M, E] rows with weight and bias [E] (oneDNN's layer
// normalization, in float as PyTorch's CPU kernel).
class FusedLayerNorm : public BoundPrimitive {
 public:
  void prepare(int64_t M, int64_t E, const Tensor& w, const Tensor& b, double eps) {
    auto& eng = du::engine();
    threads_ = ops::threadsForWork(8.0 * static_cast<double>(M) * static_cast<double>(E));
    ops::ThreadLimit limit(threads_);  // Note [Thread budget]
    w_ = w.contiguous();
    b_ = b.contiguous();
    memory::desc md({M, E}, dt::f32, memory::format_tag::ab);
    memory::desc vd({E}, dt::f32, memory::format_tag::a);
    using nf = dnnl::normalization_flags;
    dnnl::layer_normalization_forward::desc d(dnnl::prop_kind::forward_inference, md,
                                              static_cast<float>(eps),
                                              nf::use_scale | nf::use_shift);
    prim_ = dnnl::layer_normalization_forward(
        dnnl::layer_normalization_forward::primitive_desc(d, eng));
    src_ = memory(md, eng, nullptr);
    dst_ = memory(md, eng, nullptr);
    args_ = {{DNNL_ARG_SRC, src_},
             {DNNL_ARG_DST, dst_},
             {DNNL_ARG_SCALE, memory(vd, eng, w_.rawData())},
             {DNNL_ARG_SHIFT, memory(vd, eng, b_.rawData())}};
  }
};

// Scaled dot-product self-attention over a packed QKV buffer [B*L, 3E] (q, k, v side by side
// in each row, head h at columns h*D of each), written to ctx [B*L, E] in [B, L, H, D] order:
// per (b, h), scores = q k^T / sqrt(D) (dnnl_sgemm, reading q and k in place), softmax rows,
// ctx = scores v. (b, h) pairs are split across threads, each with its own scores buffer. With
// a key padding mask, the scores of masked keys are -inf before the softmax (Note [Attention
// softmax]: they get 0, and a query whose keys are all masked gets NaN, as PyTorch's).
class Attention {
 public:
  void prepare(int64_t B, int64_t L, int64_t E, int64_t H) {
    B_ = B, L_ = L, E_ = E, H_ = H, D_ = E / H;
    // Threads only when there is enough work per thread (a parallel region costs microseconds).
    const int64_t flops = 4 * B * H * L * L * D_;
    threads_ = static_cast<int>(std::min<int64_t>(ops::getNumThreads(), B * H));
    if (flops < (int64_t{1} << 21)) threads_ = 1;
    scores_ = Storage::allocate(static_cast<size_t>(threads_ * L * L) * sizeof(float));
  }
  /// The key padding mask of the next run() calls: masked[b * L + j] nonzero when key j of
  /// batch element b is masked; null for none. The caller keeps it alive.
  void setKeyMask(const uint8_t* masked) { keyMask_ = masked; }
  void run(const float* qkv, float* ctx) {
    const int64_t n = B_ * H_;
    float* scratch = reinterpret_cast<float*>(scores_.data());
    if (threads_ <= 1 || omp_in_parallel()) {
      for (int64_t i = 0; i < n; ++i) head(i, qkv, ctx, scratch);
      return;
    }
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t i = 0; i < n; ++i) head(i, qkv, ctx, scratch + omp_get_thread_num() * L_ * L_);
  }

 private:
  void head(int64_t i, const float* qkv, float* ctx, float* s) const {
    const int64_t b = i / H_, h = i % H_, ld = 3 * E_;
    const float* q = qkv + b * L_ * ld + h * D_;
    const float* k = q + E_;
    const float* v = q + 2 * E_;
    const float scale = 1.f / std::sqrt(static_cast<float>(D_));
    dnnl_sgemm('N', 'T', L_, L_, D_, scale, q, ld, k, ld, 0.f, s, L_);
    if (keyMask_) maskKeys(s, keyMask_ + b * L_);
    softmaxRows(s, L_, L_);
    dnnl_sgemm('N', 'N', L_, D_, L_, 1.f, s, L_, v, ld, 0.f, ctx + b * L_ * E_ + h * D_, E_);
  }

  // Scores [L, L] of masked keys (columns) to -inf.
  void maskKeys(float* s, const uint8_t* masked) const {
    constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < L_; ++j) {
      if (!masked[j]) continue;
      for (int64_t r = 0; r < L_; ++r) s[r * L_ + j] = kMinusInf;
    }
  }

  int64_t B_ = 0, L_ = 0, E_ = 0, H_ = 0, D_ = 0;
  int threads_ = 1;
  Storage scores_;
  const uint8_t* keyMask_ = nullptr;
};

// ---- the transformer executors -----------------------------------------------------------

// Times the steps of a fused layer for profiles (issue 13 part 5: time per layer kind): with an
// observer installed, each step is a "part" span named after the layer, its detail the step's
// kind ("MatMul qkv", "attention", "LayerNorm"); `bench --profile` totals them. Without one,
// step() costs a null check.
class StepTimer {
 public:
  StepTimer(const Layer& l) : l_(l), obs_(opObserver()) {
    if (obs_) t_ = std::chrono::steady_clock::now();
  }
  void step(const char* kind) {
    if (!obs_) return;
    const auto now = std::chrono::steady_clock::now();
    obs_->onSpan("part", l_.name, kind, t_, now);
    t_ = now;
  }

 private:
  const Layer& l_;
  OpObserver* obs_;
  std::chrono::steady_clock::time_point t_;
};

const IValue* staticArg(const Layer& l, size_t i) {
  return i < l.args.size() && l.args[i] ? &*l.args[i] : nullptr;
}

// Where a node argument that is a network value (args[i] null) sits in l.inputs: after the
// inputs of the dynamic arguments before it.
size_t inputOfArg(const Layer& l, size_t i) {
  size_t n = 0;
  for (size_t j = 0; j < i; ++j) n += l.args[j] ? 0 : 1;
  return n;
}

bool floatTensorArg(const Layer& l, size_t i, int64_t dim) {
  const IValue* v = staticArg(l, i);
  return v && v->isTensor() && v->toTensor().dtype() == ScalarType::Float &&
         v->toTensor().dim() == dim;
}

// What both transformer executors share: the input [B, L, E] (float, contiguous), the packed
// QKV product, attention and the output projection, an output planned in the arena, and the
// node's kernel for inputs that are not the planned ones.
class AttentionBase : public LayerExec {
 public:
  AttentionBase(const Layer& l, const Tensor& x) : l_(l), sizes_(x.sizes()) {
    B_ = x.size(0), L_ = x.size(1), E_ = x.size(2), M_ = B_ * L_;
    outBytes_ = static_cast<size_t>(M_ * E_) * sizeof(float);
  }
  bool ownsOutput() const override { return true; }
  size_t outputBytes() const override { return outBytes_; }
  void useOutputBuffer(const Storage& arena, size_t offset) override {
    arenaOut_ = Tensor::fromStorage(arena, static_cast<int64_t>(offset / sizeof(float)), sizes_,
                                    contiguousStrides(sizes_), ScalarType::Float);
  }
  const char* fusedPath() const override { return "fused attention"; }

  /// True when `x` is what this plan was prepared for.
  static bool takes(const Tensor& x) {
    return x.dtype() == ScalarType::Float && x.dim() == 3 && x.isContiguous() && x.numel() > 0;
  }

 protected:
  /// Takes the node's mask (argument `maskArg`, a static value or a network input) with its
  /// mask_type (argument `typeArg`): None, or a key padding mask (mask_type 1) whose value is
  /// checked on each call (readMask). False for another form (the node's kernel runs).
  bool prepareMask(size_t maskArg, size_t typeArg) {
    const IValue* type = staticArg(l_, typeArg);
    const IValue* mask = staticArg(l_, maskArg);
    if (mask && mask->isNone()) return true;  // no mask (mask_type does not matter)
    if (!type || !type->isInt() || type->toInt() != 1) return false;
    if (mask && !mask->isTensor()) return false;
    hasMask_ = true;
    maskInput_ = mask ? -1 : static_cast<int>(inputOfArg(l_, maskArg));
    if (mask) staticMask_ = mask->toTensor();
    keyMasked_.assign(static_cast<size_t>(B_ * L_), 0);
    return true;
  }
  /// Reads this call's key padding mask [B, L] (bool, or float where nonzero means masked as
  /// PyTorch's conversion to bool) into the attention; false when it is not of that form.
  bool readMask(const std::vector<IValue>& slots) {
    if (!hasMask_) return true;
    const IValue* mv =
        maskInput_ < 0 ? nullptr
                       : &slots[static_cast<size_t>(l_.inputs[static_cast<size_t>(maskInput_)])];
    if (mv && !mv->isTensor()) return false;
    const Tensor& m = mv ? mv->toTensor() : staticMask_;
    if (m.dim() != 2 || m.size(0) != B_ || m.size(1) != L_ || !m.isContiguous()) return false;
    uint8_t* out = keyMasked_.data();
    const auto n = static_cast<size_t>(B_ * L_);
    if (m.dtype() == ScalarType::Bool) {
      const auto* in = static_cast<const uint8_t*>(m.rawData());
      for (size_t i = 0; i < n; ++i) out[i] = in[i] != 0;
    } else if (m.dtype() == ScalarType::Float) {
      const float* in = m.data<float>();
      for (size_t i = 0; i < n; ++i) out[i] = in[i] != 0.f;  // NaN too, as .to(bool)
    } else {
      return false;
    }
    attention_.setKeyMask(out);
    return true;
  }

  /// Runs the node's kernel (an input of another layout than the prepared one).
  void fallback(std::vector<IValue>& slots) {
    if (!kernel_) kernel_ = makeKernelExec(l_);
    kernel_->run(slots);
  }
  Tensor output() const {
    if (arenaOut_.defined()) return arenaOut_;
    return Tensor::fromStorage(Storage::allocate(outBytes_), 0, sizes_, contiguousStrides(sizes_),
                               ScalarType::Float);
  }
  /// qkv = x Wqkv^T + b; ctx = attention(qkv).
  void prepareAttention(int64_t H, const Tensor& qkvW, const Tensor& qkvB, const Tensor& projW,
                        const Tensor& projB, bool projResidual) {
    qkvProj_.prepare(l_, 0, M_, qkvW, qkvB, false);
    outProj_.prepare(l_, 1, M_, projW, projB, projResidual);
    attention_.prepare(B_, L_, E_, H);
    qkv_ = Storage::allocate(static_cast<size_t>(M_ * 3 * E_) * sizeof(float));
    ctx_ = Storage::allocate(static_cast<size_t>(M_ * E_) * sizeof(float));
  }
  /// y = attention(x Wqkv^T + b) Wo^T + bo (+ residual: prepared with projResidual).
  void selfAttention(const float* x, float* y, StepTimer& steps, const float* residual = nullptr) {
    auto* qkv = reinterpret_cast<float*>(qkv_.data());
    auto* ctx = reinterpret_cast<float*>(ctx_.data());
    qkvProj_.run(x, qkv);
    steps.step("MatMul qkv (+bias)");
    attention_.run(qkv, ctx);
    steps.step("attention (q k^T, softmax, v)");
    if (residual)
      outProj_.run(ctx, y, residual);
    else
      outProj_.run(ctx, y);
    steps.step("MatMul out-proj (+bias, +residual)");
  }

  const Layer& l_;
  IntList sizes_;
  int64_t B_ = 0, L_ = 0, E_ = 0, M_ = 0;
  size_t outBytes_ = 0;
  Tensor arenaOut_;
  FusedLinear qkvProj_, outProj_;
  Attention attention_;
  Storage qkv_, ctx_;
  std::unique_ptr<LayerExec> kernel_;
  bool hasMask_ = false;
  int maskInput_ = -1;  // index in l_.inputs of a mask that is a network value
  Tensor staticMask_;
  std::vector<uint8_t> keyMasked_;  // [B, L], this call's mask as bytes
};

// aten::_native_multi_head_attention(Tensor query, Tensor key, Tensor value, int embed_dim,
// int num_head, Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias,
// Tensor? mask=None, bool need_weights=True, bool average_attn_weights=True,
// int? mask_type=None) -> (Tensor, Tensor)
class MultiHeadAttentionExec : public AttentionBase {
 public:
  static std::unique_ptr<LayerExec> make(const Layer& l, const std::vector<IValue>& slots) {
    if (l.inputs.size() < 3 || l.args.size() != 13 || l.args[0] || l.args[1] || l.args[2] ||
        l.inputs[0] != l.inputs[1] || l.inputs[0] != l.inputs[2] || l.outputs.size() != 2)
      return nullptr;
    const IValue& xv = slots[static_cast<size_t>(l.inputs[0])];
    if (!xv.isTensor() || !takes(xv.toTensor())) return nullptr;
    const IValue *e = staticArg(l, 3), *h = staticArg(l, 4), *needW = staticArg(l, 10);
    if (!e || !e->isInt() || !h || !h->isInt() || !needW || !needW->isBool() || needW->toBool())
      return nullptr;
    const Tensor& x = xv.toTensor();
    const int64_t E = e->toInt(), H = h->toInt();
    if (E != x.size(2) || H <= 0 || E % H != 0 || !floatTensorArg(l, 5, 2) ||
        !floatTensorArg(l, 6, 1) || !floatTensorArg(l, 7, 2) || !floatTensorArg(l, 8, 1))
      return nullptr;
    const Tensor &qkvW = staticArg(l, 5)->toTensor(), &qkvB = staticArg(l, 6)->toTensor(),
                 &projW = staticArg(l, 7)->toTensor(), &projB = staticArg(l, 8)->toTensor();
    if (qkvW.sizes() != IntList{3 * E, E} || qkvB.size(0) != 3 * E ||
        projW.sizes() != IntList{E, E} || projB.size(0) != E)
      return nullptr;
    auto exec = std::unique_ptr<MultiHeadAttentionExec>(new MultiHeadAttentionExec(l, x));
    if (!exec->prepareMask(9, 12)) return nullptr;
    exec->prepareAttention(H, qkvW, qkvB, projW, projB, false);
    return exec;
  }

  void run(std::vector<IValue>& slots) override {
    const Tensor& x = slots[static_cast<size_t>(l_.inputs[0])].toTensor();
    if (!takes(x) || x.sizes() != sizes_ || !readMask(slots)) return fallback(slots);
    Tensor y = output();
    StepTimer steps(l_);
    selfAttention(x.data<float>(), y.data<float>(), steps);
    slots[static_cast<size_t>(l_.outputs[0])] = IValue(std::move(y));
    slots[static_cast<size_t>(l_.outputs[1])] = IValue(noWeights_);
  }

 private:
  MultiHeadAttentionExec(const Layer& l, const Tensor& x)
      : AttentionBase(l, x), noWeights_(Tensor::empty({0}, ScalarType::Float)) {}
  Tensor noWeights_;  // need_weights=False returns an empty tensor
};

// aten::_transformer_encoder_layer_fwd(Tensor src, int embed_dim, int num_heads,
// Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, bool use_gelu,
// bool norm_first, float eps, Tensor norm_weight_1, Tensor norm_bias_1, Tensor norm_weight_2,
// Tensor norm_bias_2, Tensor ffn_weight_1, Tensor ffn_bias_1, Tensor ffn_weight_2,
// Tensor ffn_bias_2, Tensor? mask=None, int? mask_type=None) -> Tensor
//
// post-norm: a = x + attn(x); h = ln1(a); y = ln2(h + ffn(h))
// pre-norm:  a = x + attn(ln1(x)); y = a + ffn(ln2(a))
class EncoderLayerExec : public AttentionBase {
 public:
  static std::unique_ptr<LayerExec> make(const Layer& l, const std::vector<IValue>& slots) {
    if (l.inputs.empty() || l.args.size() != 20 || l.args[0] || l.outputs.size() != 1)
      return nullptr;
    const IValue& xv = slots[static_cast<size_t>(l.inputs[0])];
    if (!xv.isTensor() || !takes(xv.toTensor())) return nullptr;
    const IValue *e = staticArg(l, 1), *h = staticArg(l, 2), *gelu = staticArg(l, 7),
                 *normFirst = staticArg(l, 8), *eps = staticArg(l, 9);
    if (!e || !e->isInt() || !h || !h->isInt() || !gelu || !gelu->isBool() || !normFirst ||
        !normFirst->isBool() || !eps || !eps->isDouble())
      return nullptr;
    const Tensor& x = xv.toTensor();
    const int64_t E = e->toInt(), H = h->toInt();
    if (E != x.size(2) || H <= 0 || E % H != 0) return nullptr;
    for (size_t i : {3, 5, 14, 16})
      if (!floatTensorArg(l, i, 2)) return nullptr;
    for (size_t i : {4, 6, 10, 11, 12, 13, 15, 17})
      if (!floatTensorArg(l, i, 1)) return nullptr;
    auto w = [&](size_t i) -> Tensor { return staticArg(l, i)->toTensor(); };
    const int64_t F = w(14).size(0);
    if (w(3).sizes() != IntList{3 * E, E} || w(4).size(0) != 3 * E ||
        w(5).sizes() != IntList{E, E} || w(6).size(0) != E || w(14).size(1) != E ||
        w(15).size(0) != F || w(16).sizes() != IntList{E, F} || w(17).size(0) != E)
      return nullptr;
    for (size_t i : {10, 11, 12, 13})
      if (w(i).size(0) != E) return nullptr;
    auto exec = std::unique_ptr<EncoderLayerExec>(new EncoderLayerExec(l, x));
    exec->normFirst_ = normFirst->toBool();
    if (!exec->prepareMask(18, 19)) return nullptr;
    exec->prepareAttention(H, w(3), w(4), w(5), w(6), true);
    const int64_t M = exec->M_;
    exec->ffn1_.prepare(
        l, 2, M, w(14), w(15), false,
        gelu->toBool() ? dnnl::algorithm::eltwise_gelu_erf : dnnl::algorithm::eltwise_relu);
    exec->ffn2_.prepare(l, 3, M, w(16), w(17), true);
    exec->norm1_.prepare(M, E, w(10), w(11), eps->toDouble());
    exec->norm2_.prepare(M, E, w(12), w(13), eps->toDouble());
    exec->a_ = Storage::allocate(static_cast<size_t>(M * E) * sizeof(float));
    exec->t_ = Storage::allocate(static_cast<size_t>(M * E) * sizeof(float));
    exec->c_ = Storage::allocate(static_cast<size_t>(M * E) * sizeof(float));
    exec->f_ = Storage::allocate(static_cast<size_t>(M * F) * sizeof(float));
    return exec;
  }

  void run(std::vector<IValue>& slots) override {
    const Tensor& xt = slots[static_cast<size_t>(l_.inputs[0])].toTensor();
    if (!takes(xt) || xt.sizes() != sizes_ || !readMask(slots)) return fallback(slots);
    Tensor yt = output();
    const float* x = xt.data<float>();
    float* y = yt.data<float>();
    auto* a = reinterpret_cast<float*>(a_.data());
    auto* t = reinterpret_cast<float*>(t_.data());
    auto* c = reinterpret_cast<float*>(c_.data());
    auto* f = reinterpret_cast<float*>(f_.data());
    StepTimer steps(l_);
    if (normFirst_) {
      norm1_.run(x, t);
      steps.step("LayerNorm");
      selfAttention(t, a, steps, x);
      norm2_.run(a, t);
      steps.step("LayerNorm");
      ffn1_.run(t, f);
      steps.step("MatMul ffn1 (+bias, activation)");
      ffn2_.run(f, y, a);
      steps.step("MatMul ffn2 (+bias, +residual)");
    } else {
      selfAttention(x, a, steps, x);
      norm1_.run(a, t);
      steps.step("LayerNorm");
      ffn1_.run(t, f);
      steps.step("MatMul ffn1 (+bias, activation)");
      ffn2_.run(f, c, t);
      steps.step("MatMul ffn2 (+bias, +residual)");
      norm2_.run(c, y);
      steps.step("LayerNorm");
    }
    slots[static_cast<size_t>(l_.outputs[0])] = IValue(std::move(yt));
  }

 private:
  EncoderLayerExec(const Layer& l, const Tensor& x) : AttentionBase(l, x) {}

  bool normFirst_ = false;
  FusedLinear ffn1_, ffn2_;
  FusedLayerNorm norm1_, norm2_;
  Storage a_, t_, c_, f_;
};

// ---- LSTM ------------------------------------------------------------------------------------

// aten::lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers,
// float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)
// with static params (frozen weights, no proj_size) as one oneDNN LSTM primitive per layer
// (both directions in one, outputs concatenated as PyTorch's): PyTorch's flat weights w_ih
// [4H, I] and w_hh [4H, H] are oneDNN's ldgoi layout with the same gate order (i, f, g, o);
// the bias is b_ih + b_hh. input [T, B, I] (tnc) or [B, T, I] (batch_first: ntc), contiguous;
// hx = [h0, c0], each [L*D, B, H] contiguous.
class LstmExec : public LayerExec {
 public:
  static std::unique_ptr<LayerExec> make(const Layer& l, const std::vector<IValue>& slots) {
    if (l.args.size() != 9 || l.args[0] || l.outputs.size() != 3) return nullptr;
    const IValue *params = staticArg(l, 2), *hasBiases = staticArg(l, 3), *layers = staticArg(l, 4),
                 *train = staticArg(l, 6), *bidi = staticArg(l, 7), *batchFirst = staticArg(l, 8);
    if (!params || !params->isList() || !hasBiases || !hasBiases->isBool() || !layers ||
        !layers->isInt() || !train || !train->isBool() || train->toBool() || !bidi ||
        !bidi->isBool() || !batchFirst || !batchFirst->isBool())
      return nullptr;
    auto exec = std::unique_ptr<LstmExec>(new LstmExec(l));
    exec->L_ = layers->toInt();
    exec->D_ = bidi->toBool() ? 2 : 1;
    exec->batchFirst_ = batchFirst->toBool();
    const std::vector<IValue>& ps = params->toList()->list;
    const size_t per = hasBiases->toBool() ? 4 : 2;
    if (exec->L_ < 1 || ps.size() != per * static_cast<size_t>(exec->L_ * exec->D_)) return nullptr;
    for (const IValue& p : ps)
      if (!p.isTensor() || p.toTensor().dtype() != ScalarType::Float) return nullptr;
    exec->params_.reserve(ps.size());
    for (const IValue& p : ps) exec->params_.push_back(p.toTensor().contiguous());
    exec->per_ = per;
    if (!exec->prepare(slots)) return nullptr;
    return exec;
  }

  void run(std::vector<IValue>& slots) override {
    Tensor x, h0, c0;
    if (!inputsOf(slots, x, h0, c0) || x.sizes() != inSizes_) {
      if (!kernel_) kernel_ = makeKernelExec(l_);
      return kernel_->run(slots);
    }
    Tensor y = arenaOut_.defined()
                   ? arenaOut_
                   : Tensor::fromStorage(Storage::allocate(outBytes_), 0, outSizes_,
                                         contiguousStrides(outSizes_), ScalarType::Float);
    const IntList stateSizes{L_ * D_, N_, H_};
    Tensor hn = Tensor::empty(stateSizes, ScalarType::Float);
    Tensor cn = Tensor::empty(stateSizes, ScalarType::Float);
    auto& strm = du::stream();
    const int64_t state = D_ * N_ * H_;
    for (size_t i = 0; i < layers_.size(); ++i) {
      Step& s = layers_[i];
      const auto off = static_cast<int64_t>(i) * state;
      s.src.set_data_handle(i == 0 ? x.rawData() : layers_[i - 1].dst.get_data_handle());
      if (i + 1 == layers_.size()) s.dst.set_data_handle(y.rawData());
      s.srcIter.set_data_handle(h0.data<float>() + off);
      s.srcIterC.set_data_handle(c0.data<float>() + off);
      s.dstIter.set_data_handle(hn.data<float>() + off);
      s.dstIterC.set_data_handle(cn.data<float>() + off);
      s.prim.execute(strm, s.args);
    }
    strm.wait();
    slots[static_cast<size_t>(l_.outputs[0])] = IValue(std::move(y));
    slots[static_cast<size_t>(l_.outputs[1])] = IValue(std::move(hn));
    slots[static_cast<size_t>(l_.outputs[2])] = IValue(std::move(cn));
  }

  bool ownsOutput() const override { return true; }
  size_t outputBytes() const override { return outBytes_; }
  void useOutputBuffer(const Storage& arena, size_t offset) override {
    arenaOut_ = Tensor::fromStorage(arena, static_cast<int64_t>(offset / sizeof(float)), outSizes_,
                                    contiguousStrides(outSizes_), ScalarType::Float);
  }
  const char* fusedPath() const override { return "oneDNN lstm"; }

 private:
  explicit LstmExec(const Layer& l) : l_(l) {}

  struct Step {
    dnnl::primitive prim;
    memory src, srcIter, srcIterC, dst, dstIter, dstIterC;
    Storage dstBuf, scratch;
    Tensor bias;
    std::unordered_map<int, memory> args;
  };

  // input, h0, c0 from the slots; false unless they are float, contiguous and of this plan's
  // state sizes.
  bool inputsOf(const std::vector<IValue>& slots, Tensor& x, Tensor& h0, Tensor& c0) const {
    size_t j = 0;
    auto arg = [&](size_t i) -> const IValue& {
      return l_.args[i] ? *l_.args[i] : slots[static_cast<size_t>(l_.inputs[j++])];
    };
    const IValue& xv = arg(0);
    const IValue& hv = arg(1);
    if (!xv.isTensor() || !hv.isList() || hv.toList()->list.size() != 2) return false;
    x = xv.toTensor();
    const auto& hs = hv.toList()->list;
    if (!hs[0].isTensor() || !hs[1].isTensor()) return false;
    h0 = hs[0].toTensor();
    c0 = hs[1].toTensor();
    if (x.dtype() != ScalarType::Float || x.dim() != 3 || !x.isContiguous() || x.numel() == 0)
      return false;
    const int64_t N = x.size(batchFirst_ ? 0 : 1);
    for (const Tensor* t : {&h0, &c0})
      if (t->dtype() != ScalarType::Float || !t->isContiguous() ||
          t->sizes() != IntList{L_ * D_, N, H_})
        return false;
    return true;
  }

  bool prepare(const std::vector<IValue>& slots) {
    H_ = params_[1].size(1);
    Tensor x, h0, c0;
    if (H_ <= 0 || !inputsOf(slots, x, h0, c0)) return false;
    inSizes_ = x.sizes();
    T_ = x.size(batchFirst_ ? 1 : 0);
    N_ = x.size(batchFirst_ ? 0 : 1);
    outSizes_ = batchFirst_ ? IntList{N_, T_, D_ * H_} : IntList{T_, N_, D_ * H_};
    outBytes_ = static_cast<size_t>(T_ * N_ * D_ * H_) * sizeof(float);
    auto& eng = du::engine();
    using tag = memory::format_tag;
    const tag seqTag = batchFirst_ ? tag::ntc : tag::tnc;
    int64_t I = x.size(2);
    for (int64_t l = 0; l < L_; ++l) {
      // Weights of both directions side by side: [D, 4H, I] and [D, 4H, H]; bias [D, 4H].
      Tensor wl = Tensor::empty({D_, 4 * H_, I}, ScalarType::Float);
      Tensor wi = Tensor::empty({D_, 4 * H_, H_}, ScalarType::Float);
      Tensor bias = Tensor::empty({D_, 4 * H_}, ScalarType::Float);
      for (int64_t d = 0; d < D_; ++d) {
        const size_t base = per_ * static_cast<size_t>(l * D_ + d);
        const Tensor &wih = params_[base], &whh = params_[base + 1];
        if (wih.sizes() != IntList{4 * H_, I} || whh.sizes() != IntList{4 * H_, H_}) return false;
        std::memcpy(wl.data<float>() + d * 4 * H_ * I, wih.data<float>(),
                    static_cast<size_t>(4 * H_ * I) * sizeof(float));
        std::memcpy(wi.data<float>() + d * 4 * H_ * H_, whh.data<float>(),
                    static_cast<size_t>(4 * H_ * H_) * sizeof(float));
        float* b = bias.data<float>() + d * 4 * H_;
        for (int64_t g = 0; g < 4 * H_; ++g) b[g] = 0.f;
        if (per_ == 4) {
          const Tensor &bih = params_[base + 2], &bhh = params_[base + 3];
          if (bih.numel() != 4 * H_ || bhh.numel() != 4 * H_) return false;
          for (int64_t g = 0; g < 4 * H_; ++g) b[g] = bih.data<float>()[g] + bhh.data<float>()[g];
        }
      }
      const bool last = l + 1 == L_;
      memory::desc srcMd({T_, N_, I}, dt::f32, l == 0 ? seqTag : tag::tnc);
      memory::desc dstMd({T_, N_, D_ * H_}, dt::f32, last ? seqTag : tag::tnc);
      memory::desc iterMd({1, D_, N_, H_}, dt::f32, tag::ldnc);
      memory::desc wlUser({1, D_, I, 4, H_}, dt::f32, tag::ldgoi);
      memory::desc wiUser({1, D_, H_, 4, H_}, dt::f32, tag::ldgoi);
      memory::desc wlAny({1, D_, I, 4, H_}, dt::f32, tag::any);
      memory::desc wiAny({1, D_, H_, 4, H_}, dt::f32, tag::any);
      memory::desc biasMd({1, D_, 4, H_}, dt::f32, tag::ldgo);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      const auto dir = D_ == 2 ? dnnl::rnn_direction::bidirectional_concat
                               : dnnl::rnn_direction::unidirectional_left2right;
      dnnl::lstm_forward::desc desc(dnnl::prop_kind::forward_inference, dir, srcMd, iterMd, iterMd,
                                    wlAny, wiAny, biasMd, dstMd, iterMd, iterMd);
      dnnl::lstm_forward::primitive_desc pd(desc, attr, eng);
      Step s;
      s.prim = dnnl::lstm_forward(pd);
      const int slot = static_cast<int>(l) * 2;
      memory wlMem = packedWeights(l_, slot, wlUser, pd.weights_layer_desc(), wl.rawData());
      memory wiMem = packedWeights(l_, slot + 1, wiUser, pd.weights_iter_desc(), wi.rawData());
      s.bias = bias;
      s.src = memory(srcMd, eng, nullptr);
      s.srcIter = memory(iterMd, eng, nullptr);
      s.srcIterC = memory(iterMd, eng, nullptr);
      s.dstIter = memory(iterMd, eng, nullptr);
      s.dstIterC = memory(iterMd, eng, nullptr);
      if (last) {
        s.dst = memory(dstMd, eng, nullptr);
      } else {
        s.dstBuf = Storage::allocate(dstMd.get_size());
        s.dst = memory(dstMd, eng, s.dstBuf.data());
      }
      s.args = {
          {DNNL_ARG_SRC_LAYER, s.src},       {DNNL_ARG_SRC_ITER, s.srcIter},
          {DNNL_ARG_SRC_ITER_C, s.srcIterC}, {DNNL_ARG_WEIGHTS_LAYER, wlMem},
          {DNNL_ARG_WEIGHTS_ITER, wiMem},    {DNNL_ARG_BIAS, memory(biasMd, eng, s.bias.rawData())},
          {DNNL_ARG_DST_LAYER, s.dst},       {DNNL_ARG_DST_ITER, s.dstIter},
          {DNNL_ARG_DST_ITER_C, s.dstIterC}};
      if (pd.scratchpad_desc().get_size() > 0) {
        s.scratch = Storage::allocate(pd.scratchpad_desc().get_size());
        s.args[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), eng, s.scratch.data());
      }
      layers_.push_back(std::move(s));
      I = D_ * H_;
    }
    params_.clear();  // packed now
    return true;
  }

  const Layer& l_;
  int64_t L_ = 1, D_ = 1, H_ = 0, T_ = 0, N_ = 0;
  size_t per_ = 4;
  bool batchFirst_ = false;
  std::vector<Tensor> params_;
  std::vector<Step> layers_;
  IntList inSizes_, outSizes_;
  size_t outBytes_ = 0;
  Tensor arenaOut_;
  std::unique_ptr<LayerExec> kernel_;
};

}  // namespace

std::unique_ptr<LayerExec> makeSequenceLayerExec(const Layer& layer,
                                                 const std::vector<IValue>& slots) {
  if (layer.kind != LayerKind::Plugin || !layer.node || !layer.packed) return nullptr;
  static const Symbol kEncoderLayer = Symbol::aten("_transformer_encoder_layer_fwd");
  static const Symbol kMha = Symbol::aten("_native_multi_head_attention");
  static const Symbol kLstm = Symbol::aten("lstm");
  try {
    if (layer.node->kind() == kEncoderLayer) return EncoderLayerExec::make(layer, slots);
    if (layer.node->kind() == kMha) return MultiHeadAttentionExec::make(layer, slots);
    if (layer.node->kind() == kLstm && layer.node->inputs().size() == 9 &&
        layer.node->input(1)->type()->kind() == TypeKind::ListType)  // lstm.input, not .data
      return LstmExec::make(layer, slots);
  } catch (const dnnl::error&) {
    return nullptr;  // a problem oneDNN does not take: the node's kernel
  }
  return nullptr;
}

}  // namespace torchless::engine
