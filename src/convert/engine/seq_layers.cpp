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

#include <sched.h>

#include <algorithm>
#include <atomic>
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

// exp(x) for x in [-87.3, 88.3] (float's normal range), Cephes' expf (Note [Attention softmax]).
template <class F, class I>
[[gnu::always_inline]] inline void expInRange(F& x) {
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
}

// x = exp(x) for x <= 0 (a row minus its max) in every lane (Note [Attention softmax]).
template <class F, class I>
[[gnu::always_inline]] inline void expNonPositive(F& x) {
  const I under = x < -87.3f;
  x = under ? F{} - 87.3f : x;
  expInRange<F, I>(x);
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
    dnnl::stream& strm = strm_ ? *strm_ : du::stream();
    prim_.execute(strm, args_);
    strm.wait();
  }

 protected:
  /// Before prepare(): the primitive is made for one thread and runs on `strm` (a task of a
  /// parallel region: Note [Row-parallel transformer layers]); null: the shared stream, threads
  /// by the work.
  void bindStream(dnnl::stream* strm) { strm_ = strm; }
  int threadsFor(double flops) const { return strm_ ? 1 : ops::threadsForWork(flops); }

  dnnl::stream* strm_ = nullptr;
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
               dnnl::algorithm act = dnnl::algorithm::undef, dnnl::stream* strm = nullptr) {
    auto& eng = du::engine();
    const int64_t N = w.size(0), K = w.size(1);
    n_ = N;
    bindStream(strm);
    // Note [Thread budget]: threads by the work, when the primitive is made and when it runs.
    threads_ =
        threadsFor(2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K));
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
  /// N, the output features.
  int64_t outFeatures() const { return n_; }
  /// y = x W^T + b + residual (prepared with a residual).
  void run(const float* x, float* y, const float* residual) {
    residual_.set_data_handle(const_cast<float*>(residual));
    BoundPrimitive::run(x, y);
  }
  using BoundPrimitive::run;

 private:
  int64_t n_ = 0;
  Storage scratch_;
  memory residual_;
};

// layer_norm over the last dim of [M, E] rows with weight and bias [E] (oneDNN's layer
// normalization, in float as PyTorch's CPU kernel).
class FusedLayerNorm : public BoundPrimitive {
 public:
  void prepare(int64_t M, int64_t E, const Tensor& w, const Tensor& b, double eps,
               dnnl::stream* strm = nullptr) {
    auto& eng = du::engine();
    bindStream(strm);
    threads_ = threadsFor(8.0 * static_cast<double>(M) * static_cast<double>(E));
    ops::ThreadLimit limit(threads_);  // Note [Thread budget]
    w_ = w.contiguous();
    b_ = b.contiguous();
    memory::desc md({M, E}, dt::f32, memory::format_tag::ab);
    memory::desc vd({E}, dt::f32, memory::format_tag::a);
    using nf = dnnl::normalization_flags;
    dnnl::layer_normalization_forward::desc d(dnnl::prop_kind::forward_inference, md,
                                              static_cast<float>(eps),
                                              nf::use_scale | nf::use_shift);
    // Note [Scratchpads of shared primitives] in ops/dnnl_utils.h: a plan runs on any thread.
    dnnl::layer_normalization_forward::primitive_desc pd(d, du::userScratchpad(), eng);
    prim_ = dnnl::layer_normalization_forward(pd);
    src_ = memory(md, eng, nullptr);
    dst_ = memory(md, eng, nullptr);
    args_ = {{DNNL_ARG_SRC, src_},
             {DNNL_ARG_DST, dst_},
             {DNNL_ARG_SCALE, memory(vd, eng, w_.rawData())},
             {DNNL_ARG_SHIFT, memory(vd, eng, b_.rawData())}};
    if (pd.scratchpad_desc().get_size() > 0) {
      scratch_ = Storage::allocate(pd.scratchpad_desc().get_size());
      args_[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), eng, scratch_.data());
    }
  }

 private:
  Storage scratch_;
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
    reserveThreads(threads_);
  }
  /// Scores buffers for `n` threads (threads of a parallel region calling head()).
  void reserveThreads(int n) {
    if (n > scratchThreads_) {
      scores_ = Storage::allocate(static_cast<size_t>(n * L_ * L_) * sizeof(float));
      scratchThreads_ = n;
    }
  }
  int64_t heads() const { return B_ * H_; }
  /// Head i (of heads(): batch element i / H, head i % H) with the scores buffer of thread
  /// `thread` (< reserveThreads()).
  void runHead(int64_t i, const float* qkv, float* ctx, int thread) {
    head(i, qkv, ctx, reinterpret_cast<float*>(scores_.data()) + thread * L_ * L_);
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
  int threads_ = 1, scratchThreads_ = 0;
  Storage scores_;
  const uint8_t* keyMask_ = nullptr;
};

// Tasks claimed in order by the threads of a parallel region, each of which may start once
// the tasks of the phases before its own are done (Note [LSTM recurrence]: a phase per time
// step; Note [Row-parallel transformer layers]). No thread waits for a given other one: when
// another process holds a core, the thread that runs claims the tasks of the one that does not.
// A thread waiting for a phase spins (a phase takes tens of microseconds, a futex wake-up about
// ten), then yields its core so that a preempted thread finishing the phase before can run.
class StepTasks {
 public:
  /// Before the parallel region: `total` tasks.
  void reset(int64_t total) {
    total_ = total;
    next_.store(0, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
  }
  /// The next task for the calling thread once it may start (phaseStart(i): the first task of
  /// task i's phase); -1 when none is left.
  template <class PhaseStart>
  int64_t claim(PhaseStart phaseStart) {
    const int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= total_) return -1;
    const int64_t before = phaseStart(i);
    for (int spins = 0; done_.load(std::memory_order_acquire) < before; ++spins) {
      if (spins < 4000)
        __builtin_ia32_pause();
      else
        sched_yield();
    }
    return i;
  }
  /// The caller's task is done (its writes are visible to the threads that start after it).
  void finish() { done_.fetch_add(1, std::memory_order_acq_rel); }

 private:
  int64_t total_ = 0;
  std::atomic<int64_t> next_{0}, done_{0};
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
  // Note [Row-parallel transformer layers]
  // With more than one thread (by the layer's work, Note [Thread budget]), a layer runs in one
  // parallel region as three phases of tasks (StepTasks): per chunk of rows (one per thread)
  // the row-wise work before attention (the QKV product; with pre-norm the first layer_norm
  // too), then the (batch, head) pairs of attention, then per chunk of rows everything after
  // (output projection, layer_norm, feed-forward products, residuals: all row-wise), the
  // chunks' primitives made for one thread each with their own stream. Before, every product
  // was a parallel region of its own, whose wake-up and barrier cost more than the second
  // thread gave on these small products (bert_small batch 8: 1.09 ms at 2 threads against
  // 0.86 at 1, quiet). With one thread (or inside another parallel region) the layer runs its
  // whole-size primitives one after the other and reports its steps to profiles.
  struct RowChunk {
    int64_t r0 = 0, r1 = 0;  // rows [r0, r1) of the [B*L, E] activations
    dnnl::stream strm;
    FusedLinear qkv, out, ffn1, ffn2;
    FusedLayerNorm norm1, norm2;
  };
  /// Threads by the layer's `flops` per call; for more than one, a chunk of rows per thread
  /// with its one-thread QKV and output projections (the caller prepares the rest).
  void prepareChunks(double flops, const Tensor& qkvW, const Tensor& qkvB, const Tensor& projW,
                     const Tensor& projB, bool projResidual) {
    const int P = ops::threadsForWork(flops);
    if (P <= 1 || M_ < 16 * P) return;
    attention_.reserveThreads(P);
    for (int p = 0; p < P; ++p) {
      auto c = std::make_unique<RowChunk>();
      c->r0 = M_ * p / P;
      c->r1 = M_ * (p + 1) / P;
      c->strm = dnnl::stream(du::engine());
      const int64_t m = c->r1 - c->r0;
      c->qkv.prepare(l_, 0, m, qkvW, qkvB, false, dnnl::algorithm::undef, &c->strm);
      c->out.prepare(l_, 1, m, projW, projB, projResidual, dnnl::algorithm::undef, &c->strm);
      chunks_.push_back(std::move(c));
    }
  }
  /// True when this call runs the chunks (Note [Row-parallel transformer layers]).
  bool parallelCall() const {
    return !chunks_.empty() && !omp_in_parallel() && ops::getNumThreads() > 1;
  }
  /// The phases of Note [Row-parallel transformer layers]: first(chunk) for every chunk, the
  /// attention heads (qkv_ -> ctx_), last(chunk) for every chunk.
  template <class First, class Last>
  void runChunks(First first, Last last) {
    const auto P = static_cast<int64_t>(chunks_.size());
    const int64_t nh = attention_.heads();
    const auto* qkv = reinterpret_cast<const float*>(qkv_.data());
    auto* ctx = reinterpret_cast<float*>(ctx_.data());
    auto task = [&](int64_t i, int thread) {
      if (i < P)
        first(*chunks_[static_cast<size_t>(i)]);
      else if (i < P + nh)
        attention_.runHead(i - P, qkv, ctx, thread);
      else
        last(*chunks_[static_cast<size_t>(i - P - nh)]);
    };
    const int nth = static_cast<int>(std::min<int64_t>(P, ops::getNumThreads()));
    tasks_.reset(2 * P + nh);
    auto phaseStart = [P, nh](int64_t i) { return i < P ? 0 : i < P + nh ? P : P + nh; };
#pragma omp parallel num_threads(nth)
    for (int64_t i = tasks_.claim(phaseStart); i >= 0; i = tasks_.claim(phaseStart)) {
      task(i, omp_get_thread_num());
      tasks_.finish();
    }
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
  std::vector<std::unique_ptr<RowChunk>> chunks_;  // Note [Row-parallel transformer layers]
  StepTasks tasks_;
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
    const double M = static_cast<double>(exec->M_), Ed = static_cast<double>(E),
                 L = static_cast<double>(exec->L_);
    exec->prepareChunks(8 * M * Ed * Ed + 4 * M * L * Ed, qkvW, qkvB, projW, projB, false);
    return exec;
  }

  void run(std::vector<IValue>& slots) override {
    const Tensor& x = slots[static_cast<size_t>(l_.inputs[0])].toTensor();
    if (!takes(x) || x.sizes() != sizes_ || !readMask(slots)) return fallback(slots);
    Tensor y = output();
    if (parallelCall()) {
      const float* xp = x.data<float>();
      float* yp = y.data<float>();
      auto* qkv = reinterpret_cast<float*>(qkv_.data());
      auto* ctx = reinterpret_cast<float*>(ctx_.data());
      const int64_t E = E_;
      runChunks([&](RowChunk& c) { c.qkv.run(xp + c.r0 * E, qkv + c.r0 * 3 * E); },
                [&](RowChunk& c) { c.out.run(ctx + c.r0 * E, yp + c.r0 * E); });
      slots[static_cast<size_t>(l_.outputs[0])] = IValue(std::move(y));
      slots[static_cast<size_t>(l_.outputs[1])] = IValue();  // need_weights=False: None
      return;
    }
    StepTimer steps(l_);
    selfAttention(x.data<float>(), y.data<float>(), steps);
    slots[static_cast<size_t>(l_.outputs[0])] = IValue(std::move(y));
    slots[static_cast<size_t>(l_.outputs[1])] = IValue();  // need_weights=False: None
  }

 private:
  MultiHeadAttentionExec(const Layer& l, const Tensor& x) : AttentionBase(l, x) {}
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
    const dnnl::algorithm act =
        gelu->toBool() ? dnnl::algorithm::eltwise_gelu_erf : dnnl::algorithm::eltwise_relu;
    exec->ffn1_.prepare(l, 2, M, w(14), w(15), false, act);
    exec->ffn2_.prepare(l, 3, M, w(16), w(17), true);
    exec->norm1_.prepare(M, E, w(10), w(11), eps->toDouble());
    exec->norm2_.prepare(M, E, w(12), w(13), eps->toDouble());
    const double Md = static_cast<double>(M), Ed = static_cast<double>(E),
                 Fd = static_cast<double>(F), Ld = static_cast<double>(exec->L_);
    exec->prepareChunks(8 * Md * Ed * Ed + 4 * Md * Ld * Ed + 4 * Md * Ed * Fd, w(3), w(4), w(5),
                        w(6), true);
    for (auto& c : exec->chunks_) {
      const int64_t m = c->r1 - c->r0;
      c->ffn1.prepare(l, 2, m, w(14), w(15), false, act, &c->strm);
      c->ffn2.prepare(l, 3, m, w(16), w(17), true, dnnl::algorithm::undef, &c->strm);
      c->norm1.prepare(m, E, w(10), w(11), eps->toDouble(), &c->strm);
      c->norm2.prepare(m, E, w(12), w(13), eps->toDouble(), &c->strm);
    }
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
    if (parallelCall()) {
      auto* qkv = reinterpret_cast<float*>(qkv_.data());
      auto* ctx = reinterpret_cast<float*>(ctx_.data());
      const int64_t E = E_, F = ffn1_.outFeatures();
      if (normFirst_)
        runChunks(
            [&](RowChunk& k) {
              k.norm1.run(x + k.r0 * E, t + k.r0 * E);
              k.qkv.run(t + k.r0 * E, qkv + k.r0 * 3 * E);
            },
            [&](RowChunk& k) {
              const int64_t r = k.r0 * E;
              k.out.run(ctx + r, a + r, x + r);
              k.norm2.run(a + r, t + r);
              k.ffn1.run(t + r, f + k.r0 * F);
              k.ffn2.run(f + k.r0 * F, y + r, a + r);
            });
      else
        runChunks([&](RowChunk& k) { k.qkv.run(x + k.r0 * E, qkv + k.r0 * 3 * E); },
                  [&](RowChunk& k) {
                    const int64_t r = k.r0 * E;
                    k.out.run(ctx + r, a + r, x + r);
                    k.norm1.run(a + r, t + r);
                    k.ffn1.run(t + r, f + k.r0 * F);
                    k.ffn2.run(f + k.r0 * F, c + r, t + r);
                    k.norm2.run(c + r, y + r);
                  });
      slots[static_cast<size_t>(l_.outputs[0])] = IValue(std::move(yt));
      return;
    }
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

// Note [LSTM recurrence]
// aten::lstm.input runs per layer as
//   - the input projection of all time steps at once, G = x W_ih^T + (b_ih + b_hh): one oneDNN
//     matmul [T*N, I] x [I, D*4H] (FusedLinear, weights packed once per engine), G's columns
//     in the order the recurrence reads them (below);
//   - the recurrence, step by step: gates = G_t + h_{t-1} W_hh^T, then i, f, o = sigmoid,
//     g = tanh, c = f c + i g, h = o tanh(c), PyTorch's gate order (i, f, g, o).
// The hidden units are split into P contiguous slices (two per thread, the threads by the work
// of one step, Note [Thread budget]); a slice's task owns the 4 gate columns of its units: it
// multiplies h_{t-1} by its rows of W_hh (packed once per plan into panels of 2W columns, W the
// vector width, so that one pass over them serves all batch rows, up to 8 at a time), adds G_t,
// applies the cell to its units and writes its part of h_t. The threads of one parallel region
// per layer claim the tasks (step, slice) in order from a counter (StepTasks) and start a
// step's task once every task of the step before is done: no thread waits for a given other
// one, so when another process holds a core, the thread that runs does the steps alone instead
// of waiting at a barrier for the preempted one each step (a barrier per step made lstm_lm
// batch 8 at 2 threads 2-3x slower than oneDNN's LSTM at load 12 on 2 cores). oneDNN's LSTM
// primitive, which ran here before, split each small step over the threads and took as long
// at 2 threads as at 1 (lstm_lm batch 8: 19.6 and 19.3 ms; at batch 1, 14.0 against 9.3).
// sigmoid and tanh are vectorized (Cephes' expf as Note [Attention softmax]; tanh by Cephes'
// polynomial below |x| = 0.625 and 1 - 2 / (exp(2|x|) + 1) above), within a few ulp of
// PyTorch's Sleef versions; NaN propagates.

// (Vectors are passed by reference: returning them by value changes the ABI with -mavx512f.)

// exp(x) clamped into float's normal range (0 and inf become its ends; NaN stays NaN).
template <class F, class I>
[[gnu::always_inline]] inline void expClamped(F& x) {
  x = x < -87.3f ? F{} - 87.3f : x;
  x = x > 88.3f ? F{} + 88.3f : x;
  expInRange<F, I>(x);
}

template <class F, class I>
[[gnu::always_inline]] inline void sigmoidV(F& x) {
  x = -x;
  expClamped<F, I>(x);
  x = 1.f / (1.f + x);
}

template <class F, class I>
[[gnu::always_inline]] inline void tanhV(F& x) {
  const F ax = x < 0.f ? -x : x;
  const F z = x * x;
  F p = F{} - 5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const F small = p * z * x + x;
  F e = ax * 2.f;
  expClamped<F, I>(e);
  F big = 1.f - 2.f / (e + 1.f);
  big = x < 0.f ? -big : big;
  x = ax < 0.625f ? small : big;
}

// One step of one slice (Note [LSTM recurrence]): r [m, ldr] = g [m, ldg] + a [m, lda] B for
// the m batch rows (B: the slice's packed W_hh^T, panels of [k][2W] floats, `panels` of them),
// then the cell on the slice's hs units of each row: gates i, f, g, o at r + {0, 1, 2, 3} * hs,
// c [m, ldc] updated in place, h written to y [m, ldy].
struct SliceStep {
  int64_t m, k, hs, panels;
  const float* a;
  int64_t lda;
  const float* b;
  const float* g;
  int64_t ldg;
  float* r;
  int64_t ldr;
  float* c;
  int64_t ldc;
  float* y;
  int64_t ldy;
};

template <int W, int MR>
[[gnu::always_inline]] inline void gatePanel(const SliceStep& s, int64_t m0, int64_t p) {
  using F = typename Lanes<W>::F;
  F acc[MR][2];
  for (int i = 0; i < MR; ++i) {
    const float* gi = s.g + (m0 + i) * s.ldg + p * 2 * W;
    std::memcpy(&acc[i][0], gi, sizeof(F));
    std::memcpy(&acc[i][1], gi + W, sizeof(F));
  }
  const float* bp = s.b + p * s.k * 2 * W;
  const float* a = s.a + m0 * s.lda;
  for (int64_t kk = 0; kk < s.k; ++kk) {
    F b0, b1;
    std::memcpy(&b0, bp + kk * 2 * W, sizeof(F));
    std::memcpy(&b1, bp + kk * 2 * W + W, sizeof(F));
    for (int i = 0; i < MR; ++i) {
      const F av = a[i * s.lda + kk] - F{};  // a broadcast
      acc[i][0] += av * b0;
      acc[i][1] += av * b1;
    }
  }
  for (int i = 0; i < MR; ++i) {
    float* ri = s.r + (m0 + i) * s.ldr + p * 2 * W;
    std::memcpy(ri, &acc[i][0], sizeof(F));
    std::memcpy(ri + W, &acc[i][1], sizeof(F));
  }
}

template <int W, int MR>
[[gnu::always_inline]] inline void gateRows(const SliceStep& s, int64_t m0) {
  for (int64_t p = 0; p < s.panels; ++p) gatePanel<W, MR>(s, m0, p);
}

template <int W>
[[gnu::always_inline]] inline void lstmCell(const float* r, int64_t hs, float* c, float* h,
                                            int64_t u) {
  using F = typename Lanes<W>::F;
  using I = typename Lanes<W>::I;
  F gi, gf, gg, go, cv;
  std::memcpy(&gi, r + u, sizeof(F));
  std::memcpy(&gf, r + hs + u, sizeof(F));
  std::memcpy(&gg, r + 2 * hs + u, sizeof(F));
  std::memcpy(&go, r + 3 * hs + u, sizeof(F));
  std::memcpy(&cv, c + u, sizeof(F));
  sigmoidV<F, I>(gi);
  sigmoidV<F, I>(gf);
  tanhV<F, I>(gg);
  sigmoidV<F, I>(go);
  cv = gf * cv + gi * gg;
  std::memcpy(c + u, &cv, sizeof(F));
  tanhV<F, I>(cv);
  go *= cv;
  std::memcpy(h + u, &go, sizeof(F));
}

template <int W>
[[gnu::always_inline]] inline void sliceStepW(const SliceStep& s) {
  for (int64_t m0 = 0; m0 < s.m; m0 += 8) {
    switch (std::min<int64_t>(8, s.m - m0)) {
      case 1: gateRows<W, 1>(s, m0); break;
      case 2: gateRows<W, 2>(s, m0); break;
      case 3: gateRows<W, 3>(s, m0); break;
      case 4: gateRows<W, 4>(s, m0); break;
      case 5: gateRows<W, 5>(s, m0); break;
      case 6: gateRows<W, 6>(s, m0); break;
      case 7: gateRows<W, 7>(s, m0); break;
      default: gateRows<W, 8>(s, m0); break;
    }
  }
  for (int64_t i = 0; i < s.m; ++i) {
    const float* r = s.r + i * s.ldr;
    float* c = s.c + i * s.ldc;
    float* h = s.y + i * s.ldy;
    int64_t u = 0;
    for (; u + W <= s.hs; u += W) lstmCell<W>(r, s.hs, c, h, u);
    for (; u < s.hs; ++u) lstmCell<1>(r, s.hs, c, h, u);
  }
}

__attribute__((target("avx512f"), optimize("no-trapping-math"))) void sliceStep16(
    const SliceStep& s) {
  sliceStepW<16>(s);
}
__attribute__((target("avx2,fma"), optimize("no-trapping-math"))) void sliceStep8(
    const SliceStep& s) {
  sliceStepW<8>(s);
}
__attribute__((optimize("no-trapping-math"))) void sliceStep4(const SliceStep& s) {
  sliceStepW<4>(s);
}

using SliceStepFn = void (*)(const SliceStep&);

// The widest sliceStep the CPU runs and its vector width W (panels are 2W columns wide).
std::pair<SliceStepFn, int> sliceStepForCpu() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {sliceStep16, 16};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {sliceStep8, 8};
  return {sliceStep4, 4};
}

const std::pair<SliceStepFn, int>& sliceStepKernel() {
  static const std::pair<SliceStepFn, int> k = sliceStepForCpu();
  return k;
}

// aten::lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers,
// float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)
// with static params (frozen weights, no proj_size), as Note [LSTM recurrence]: input [T, N, I]
// or [N, T, I] (batch_first), contiguous; hx = [h0, c0], each [L*D, N, H] contiguous; the
// output [T, N, D*H] (or [N, T, D*H]) with both directions side by side as PyTorch's, then
// h_n and c_n [L*D, N, H]. Layers between the first and the last keep the input's layout.
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
    std::vector<Tensor> flat;
    flat.reserve(ps.size());
    for (const IValue& p : ps) flat.push_back(p.toTensor().contiguous());
    if (!exec->prepare(slots, flat, per)) return nullptr;
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
    std::memcpy(cn.rawData(), c0.rawData(), static_cast<size_t>(cn.numel()) * sizeof(float));
    const float* in = x.data<float>();
    for (int64_t l = 0; l < L_; ++l) {
      float* out = l + 1 == L_
                       ? y.data<float>()
                       : reinterpret_cast<float*>(between_[static_cast<size_t>(l % 2)].data());
      inputProj_[static_cast<size_t>(l)].run(in, reinterpret_cast<float*>(g_.data()));
      recurrence(l, h0.data<float>(), cn.data<float>(), out);
      // h_n: h of each direction's last step (t = T-1 forward, t = 0 backward).
      for (int64_t d = 0; d < D_; ++d)
        for (int64_t n = 0; n < N_; ++n)
          std::memcpy(hn.data<float>() + ((l * D_ + d) * N_ + n) * H_,
                      out + row(d == 0 ? T_ - 1 : 0, n) * D_ * H_ + d * H_,
                      static_cast<size_t>(H_) * sizeof(float));
      in = out;
    }
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
  const char* fusedPath() const override { return "fused lstm"; }

 private:
  explicit LstmExec(const Layer& l) : l_(l) {}

  // The row of time step t, batch element n in the sequence layout (tnc or ntc).
  int64_t row(int64_t t, int64_t n) const { return batchFirst_ ? n * T_ + t : t * N_ + n; }
  // Rows between batch elements n and n + 1 of one time step.
  int64_t rowStride() const { return batchFirst_ ? T_ : 1; }

  // Units [u0, u1) of slice s (P_ contiguous slices, the first ones one unit larger).
  int64_t sliceBegin(int64_t s) const {
    const int64_t q = H_ / P_, rem = H_ % P_;
    return s * q + std::min(s, rem);
  }

  // Layer l's time steps (both directions) into out; c [L*D, N, H] holds c0 and becomes c_n.
  void recurrence(int64_t l, const float* h0, float* c, float* out) {
    const int nth = static_cast<int>(std::min<int64_t>(P_ / 2, ops::getNumThreads()));
    if (nth <= 1 || omp_in_parallel()) {
      for (int64_t d = 0; d < D_; ++d)
        for (int64_t k = 0; k < T_; ++k)
          for (int64_t s = 0; s < P_; ++s) step(l, d, k, s, h0, c, out);
      return;
    }
    tasks_.reset(D_ * T_ * P_);
    const int64_t per = P_;
    auto phaseStart = [per](int64_t i) { return i / per * per; };
#pragma omp parallel num_threads(nth)
    for (int64_t i = tasks_.claim(phaseStart); i >= 0; i = tasks_.claim(phaseStart)) {
      const int64_t dk = i / P_;
      step(l, dk / T_, dk % T_, i % P_, h0, c, out);
      tasks_.finish();
    }
  }

  // Step k of direction d of layer l for slice s.
  void step(int64_t l, int64_t d, int64_t k, int64_t s, const float* h0, float* c,
            float* out) const {
    const int64_t t = d == 0 ? k : T_ - 1 - k;
    const int64_t u0 = sliceBegin(s), hs = sliceBegin(s + 1) - u0;
    const int64_t DH = D_ * H_, G4 = D_ * 4 * H_;
    SliceStep st{};
    st.m = N_;
    st.k = H_;
    st.hs = hs;
    st.panels = panels_[static_cast<size_t>(s)];
    if (k == 0) {
      st.a = h0 + (l * D_ + d) * N_ * H_;
      st.lda = H_;
    } else {
      const int64_t tp = d == 0 ? t - 1 : t + 1;
      st.a = out + row(tp, 0) * DH + d * H_;
      st.lda = rowStride() * DH;
    }
    st.b = reinterpret_cast<const float*>(
        recurrent_[static_cast<size_t>((l * D_ + d) * P_ + s)].data());
    st.g = reinterpret_cast<const float*>(g_.data()) + row(t, 0) * G4 + d * 4 * H_ + 4 * u0;
    st.ldg = rowStride() * G4;
    st.r = reinterpret_cast<float*>(gates_[static_cast<size_t>(s)].data());
    st.ldr = panels_[static_cast<size_t>(s)] * 2 * sliceStepKernel().second;
    st.c = c + (l * D_ + d) * N_ * H_ + u0;
    st.ldc = H_;
    st.y = out + row(t, 0) * DH + d * H_ + u0;
    st.ldy = rowStride() * DH;
    sliceStepKernel().first(st);
  }

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

  bool prepare(const std::vector<IValue>& slots, const std::vector<Tensor>& params, size_t per) {
    H_ = params[1].dim() == 2 ? params[1].size(1) : 0;
    Tensor x, h0, c0;
    if (H_ <= 0 || !inputsOf(slots, x, h0, c0)) return false;
    inSizes_ = x.sizes();
    T_ = x.size(batchFirst_ ? 1 : 0);
    N_ = x.size(batchFirst_ ? 0 : 1);
    outSizes_ = batchFirst_ ? IntList{N_, T_, D_ * H_} : IntList{T_, N_, D_ * H_};
    outBytes_ = static_cast<size_t>(T_ * N_ * D_ * H_) * sizeof(float);
    // Slices: two per thread, the threads by one step's work (Note [Thread budget]), at least
    // 8 units each.
    const double stepFlops = 2.0 * static_cast<double>(N_ * H_ * 4 * H_);
    const int threads = ops::threadsForWork(stepFlops);
    P_ = std::max<int64_t>(1, std::min<int64_t>(threads > 1 ? 2 * threads : 1, H_ / 8));
    const int W = sliceStepKernel().second;
    for (int64_t s = 0; s < P_; ++s) {
      const int64_t cols = 4 * (sliceBegin(s + 1) - sliceBegin(s));
      panels_.push_back((cols + 2 * W - 1) / (2 * W));
      gates_.push_back(
          Storage::allocate(static_cast<size_t>(N_ * panels_.back() * 2 * W) * sizeof(float)));
    }
    int64_t I = x.size(2);
    for (int64_t l = 0; l < L_; ++l) {
      // W_ih of both directions as one [D*4H, I] with its rows in the order [d][slice][gate]
      // [unit]; the bias b_ih + b_hh in the same order.
      Tensor wx = Tensor::empty({D_ * 4 * H_, I}, ScalarType::Float);
      Tensor bx = Tensor::empty({D_ * 4 * H_}, ScalarType::Float);
      for (int64_t d = 0; d < D_; ++d) {
        const size_t base = per * static_cast<size_t>(l * D_ + d);
        const Tensor &wih = params[base], &whh = params[base + 1];
        if (wih.sizes() != IntList{4 * H_, I} || whh.sizes() != IntList{4 * H_, H_}) return false;
        const Tensor* bih = per == 4 ? &params[base + 2] : nullptr;
        const Tensor* bhh = per == 4 ? &params[base + 3] : nullptr;
        if (bih && (bih->numel() != 4 * H_ || bhh->numel() != 4 * H_)) return false;
        int64_t dst = d * 4 * H_;
        for (int64_t s = 0; s < P_; ++s) {
          const int64_t u0 = sliceBegin(s), hs = sliceBegin(s + 1) - u0;
          for (int64_t g = 0; g < 4; ++g)
            for (int64_t u = u0; u < u0 + hs; ++u, ++dst) {
              const int64_t src = g * H_ + u;
              std::memcpy(wx.data<float>() + dst * I, wih.data<float>() + src * I,
                          static_cast<size_t>(I) * sizeof(float));
              bx.data<float>()[dst] = bih ? bih->data<float>()[src] + bhh->data<float>()[src] : 0.f;
            }
          recurrent_.push_back(packRecurrent(whh, u0, hs, panels_[static_cast<size_t>(s)], W));
        }
      }
      inputProj_.emplace_back();
      inputProj_.back().prepare(l_, static_cast<int>(l), T_ * N_, wx, bx, false);
      I = D_ * H_;
    }
    // G, with room for the last panel's columns past the end of the last row.
    g_ = Storage::allocate(static_cast<size_t>(T_ * N_ * D_ * 4 * H_ + 2 * W) * sizeof(float));
    for (int64_t i = 0; i < std::min<int64_t>(L_ - 1, 2); ++i)
      between_[static_cast<size_t>(i)] = Storage::allocate(outBytes_);
    return true;
  }

  // Rows u0 .. u0+hs of each gate of W_hh [4H, H] as B = W_hh^T restricted to those columns
  // ([H, 4*hs], columns [gate][unit], zero-padded to panels * 2W), in panels of [H][2W].
  Storage packRecurrent(const Tensor& whh, int64_t u0, int64_t hs, int64_t panels, int W) const {
    const int64_t pw = 2 * W, cols = 4 * hs;
    Storage buf = Storage::allocate(static_cast<size_t>(panels * H_ * pw) * sizeof(float));
    auto* b = reinterpret_cast<float*>(buf.data());
    const float* w = whh.data<float>();
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t k = 0; k < H_; ++k)
        for (int64_t j = 0; j < pw; ++j) {
          const int64_t col = p * pw + j;
          b[(p * H_ + k) * pw + j] =
              col < cols ? w[((col / hs) * H_ + u0 + col % hs) * H_ + k] : 0.f;
        }
    return buf;
  }

  const Layer& l_;
  int64_t L_ = 1, D_ = 1, H_ = 0, T_ = 0, N_ = 0, P_ = 1;
  bool batchFirst_ = false;
  std::vector<FusedLinear> inputProj_;  // per layer
  std::vector<Storage> recurrent_;      // per (layer, direction, slice): packed W_hh^T
  std::vector<int64_t> panels_;         // per slice
  std::vector<Storage> gates_;          // per slice: [N, panels * 2W]
  Storage g_;                           // [T*N, D*4H] input projection of the current layer
  Storage between_[2];                  // outputs of the layers before the last
  StepTasks tasks_;
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
