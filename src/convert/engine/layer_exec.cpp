// Layer executors: oneDNN convolution and matmul primitives with fused post-ops, and the
// node's own kernel for plugin and shape layers (Note [Engine plans] in engine.h).
#include "convert/engine/layer_exec.h"

#include "convert/engine/seq_layers.h"
#include "core/error.h"
#include "ir/operator_matching.h"
#include "ops/conv.h"
#include "ops/dnnl_utils.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/parallel.h"
#include "ops/quantized.h"
#include "ops/quantized_dnnl.h"
#include "ops/shape.h"
#include "ops/tensor_iterator.h"
#include "ops/thread_budget.h"
#include "runtime/kernel.h"

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_map>

namespace torchless::engine {

struct PackedWeightCache {
  std::mutex mu;
  struct Entry {
    int slot;
    dnnl::memory::desc md;
    Storage buf;
    dnnl::memory mem;
  };
  std::vector<Entry> entries;
};

namespace {

thread_local bool tBuildingForReuse = false;

// One thread that runs background build tasks in order (Note [Winograd after reuse]). Tasks
// hold what they touch by shared pointer; at exit the pending ones are dropped and the running
// one is waited for.
class BackgroundBuilder {
 public:
  static BackgroundBuilder& instance() {
    static BackgroundBuilder b;
    return b;
  }
  void post(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    tasks_.push_back(std::move(task));
    cv_.notify_one();
  }
  ~BackgroundBuilder() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      tasks_.clear();
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
        if (stop_) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::thread thread_;
  bool stop_ = false;
};

using dnnl::memory;
using dims = memory::dims;

dims toDims(const IntList& v) { return dims(v.begin(), v.end()); }

std::optional<dnnl::algorithm> dnnlActivation(Activation a) {
  using dnnl::algorithm;
  switch (a) {
    case Activation::Relu: return algorithm::eltwise_relu;
    case Activation::LeakyRelu: return algorithm::eltwise_relu;
    case Activation::Clamp: return algorithm::eltwise_clip_v2;
    case Activation::Sigmoid: return algorithm::eltwise_logistic;
    case Activation::Silu: return algorithm::eltwise_swish;
    case Activation::Hardswish: return algorithm::eltwise_hardswish;
    case Activation::GeluErf: return algorithm::eltwise_gelu_erf;
    case Activation::GeluTanh: return algorithm::eltwise_gelu_tanh;
    case Activation::Tanh: return algorithm::eltwise_tanh;
    case Activation::Elu: return algorithm::eltwise_elu;
    default: return std::nullopt;
  }
}

// The activation with our own kernels (the reference path and non-float dtypes).
Tensor applyActivation(const Tensor& x, const ActivationSpec& a) {
  switch (a.kind) {
    case Activation::None: return x;
    case Activation::Relu: return ops::relu(x);
    case Activation::Clamp:
      return ops::clamp(
          x,
          std::isinf(a.alpha) ? std::nullopt : std::optional<Scalar>(static_cast<double>(a.alpha)),
          std::isinf(a.beta) ? std::nullopt : std::optional<Scalar>(static_cast<double>(a.beta)));
    case Activation::Sigmoid: return ops::sigmoid(x);
    case Activation::Silu: return ops::silu(x);
    case Activation::Hardswish: return ops::hardswish(x);
    case Activation::GeluErf: return ops::gelu(x, "none");
    case Activation::GeluTanh: return ops::gelu(x, "tanh");
    case Activation::Tanh: return ops::tanh(x);
    case Activation::LeakyRelu: return ops::leakyRelu(x, static_cast<double>(a.alpha));
    case Activation::Elu: return ops::elu(x, static_cast<double>(a.alpha));
    case Activation::Mish: return ops::mish(x);
    case Activation::Hardsigmoid: return ops::hardsigmoid(x);
  }
  return x;
}

dnnl::primitive_attr postOpsAttr(bool sum, const ActivationSpec& act, double scale = 1.0) {
  dnnl::primitive_attr attr;
  dnnl::post_ops po;
  if (sum) po.append_sum(1.f);
  if (act.kind != Activation::None) {
    auto alg = dnnlActivation(act.kind);
    TL_INTERNAL_ASSERT(alg.has_value(), "activation {} cannot be a post-op", toString(act.kind));
    float alpha = act.alpha, beta = act.beta;
    if (act.kind == Activation::Silu) alpha = 1.f;
    if (act.kind == Activation::Relu || act.kind == Activation::Hardswish) alpha = beta = 0.f;
    po.append_eltwise(1.f, *alg, alpha, beta);
  }
  attr.set_post_ops(po);
  if (scale != 1.0) attr.set_output_scales(0, {static_cast<float>(scale)});
  // Note [Plan scratchpads]: the running thread's scratchpad, given per run.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// Dense channels-last strides for [N, C, *spatial] (NHWC for 4-d), as torch.channels_last.
IntList channelsLastStrides(const IntList& sizes) {
  const size_t r = sizes.size();
  IntList st(r);
  int64_t s = 1;
  st[1] = s;
  s *= sizes[1];
  for (size_t i = r - 1; i >= 2; --i) {
    st[i] = s;
    s *= sizes[i];
  }
  st[0] = s;
  return st;
}

// The strides a convolution's source is described with: the dense channels-last ones when `x`
// is laid out so, whatever strides its size-1 dimensions carry (they address nothing); `x`'s
// own otherwise. oneDNN's fast kernels take channels-last only in that canonical form: a
// squeeze-and-excitation block's pooled [N, C, 1, 1] (contiguous strides (C, 1, 1, 1)) given
// as it is got oneDNN's reference convolution, ~20% of efficientnet_b0's time at batch 1.
IntList sourceStrides(const Tensor& x) {
  if (x.dim() < 3 || x.sizes()[1] < 2) return x.strides();
  IntList cl = channelsLastStrides(x.sizes());
  for (int64_t d = 0; d < x.dim(); ++d)
    if (x.sizes()[d] != 1 && x.strides()[d] != cl[d]) return x.strides();
  return cl;
}

bool isDense(const Tensor& t) {
  // Every element at a distinct offset within numel elements (contiguous or a permutation).
  int64_t maxOff = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] == 0) return true;
    maxOff += (t.sizes()[d] - 1) * t.strides()[d];
  }
  return maxOff + 1 == t.numel();
}

// ---- oneDNN products: what convolutions and matmuls share ------------------------------------

/// The source operand of a oneDNN primitive: the input as it is in memory (`user`), reordered
/// into the layout the primitive chose when that differs (into a buffer allocated once per
/// plan). Shared by the float and the int8 products.
struct SourceMemory {
  memory user, src;
  Storage buf;
  dnnl::reorder reorder;

  /// Binds user (data set per run) and src for a primitive that wants `md`.
  void bind(const memory::desc& userMd, const memory::desc& md) {
    auto& eng = ops::dnnl_utils::engine();
    user = memory(userMd, eng, nullptr);
    if (md != userMd) {
      buf = Storage::allocate(md.get_size());
      src = memory(md, eng, buf.data());
      reorder = dnnl::reorder(user, src);
    } else {
      src = user;
      reorder = dnnl::reorder();
    }
  }
  /// Points user at `data` and reorders it into src when needed.
  void feed(dnnl::stream& strm, void* data) {
    user.set_data_handle(data);
    if (reorder) reorder.execute(strm, user, src);
  }
};

// A oneDNN product primitive over one input, constant packed weights, an optional bias, and an
// output written fresh or into the arena, with the residual (when fused) copied into the
// output first for the sum post-op. Subclasses prepare() the primitive for the input they see
// and give the reference path (our kernels) for what oneDNN does not take.
class ProductExec : public LayerExec {
 public:
  explicit ProductExec(const Layer& l) : l_(l) {}

  void run(std::vector<IValue>& slots) override {
    const Tensor& x = slots[static_cast<size_t>(l_.inputs[0])].toTensor();
    if (x.sizes() != inSizes_ || x.strides() != inStrides_ || x.dtype() != inDtype_) prepareFor(x);
    Tensor res =
        l_.hasResidual ? slots[static_cast<size_t>(l_.inputs.back())].toTensor() : Tensor();
    const Tensor* residual = l_.hasResidual ? &res : nullptr;
    Tensor out;
    if (!dnnl_ ||
        (residual && (residual->sizes() != outSizes_ || residual->dtype() != ScalarType::Float))) {
      out =
          reference(slots, x, residual);  // also a residual that broadcasts: PyTorch's add decides
    } else {
      out = arenaOut_.defined() ? arenaOut_
                                : Tensor::fromStorage(Storage::allocate(outBytes_), 0, outSizes_,
                                                      outStrides_, ScalarType::Float);
      if (residual && residual->rawData() != out.rawData()) {  // same: Note [Residual in place]
        if (residual->strides() == outStrides_ && residual->dtype() == ScalarType::Float)
          std::memcpy(out.rawData(), residual->rawData(), outBytes_);
        else
          ops::copyInto(out, *residual);
      }
      execute(x.rawData(), out.rawData());
    }
    slots[static_cast<size_t>(l_.outputs[0])] = IValue(std::move(out));
  }

  bool ownsOutput() const override { return dnnl_; }
  bool sumsIntoOutput() const override { return dnnl_ && l_.hasResidual; }
  size_t outputBytes() const override { return dnnl_ ? outBytes_ : 0; }
  void useOutputBuffer(const Storage& arena, size_t offset) override {
    arenaOut_ = Tensor::fromStorage(arena, static_cast<int64_t>(offset / sizeof(float)), outSizes_,
                                    outStrides_, ScalarType::Float);
  }

 protected:
  /// Records the input's layout, drops the arena buffer, and calls prepare(x), which sets
  /// outSizes_/outStrides_/outBytes_ and, when oneDNN takes it, prim_ and bind().
  void prepareFor(const Tensor& x) {
    inSizes_ = x.sizes();
    inStrides_ = x.strides();
    inDtype_ = x.dtype();
    arenaOut_ = Tensor();
    dnnl_ = false;
    dstReorder_ = dnnl::reorder();
    dstInner_ = memory();
    dstBuf_ = Storage();
    scratchBytes_ = 0;
    scratchMem_ = memory();
    prepare(x);
  }
  virtual void prepare(const Tensor& x) = 0;

  /// Runs the prepared primitive on the input at `x` into the output at `out` (laid out as
  /// prepared), on the running thread's stream and scratchpad.
  void execute(const void* x, void* out) {
    ops::ThreadLimit limit(threads_);  // as the primitive was made: Note [Thread budget]
    auto& strm = ops::dnnl_utils::stream();
    src_.feed(strm, const_cast<void*>(x));
    dst_.set_data_handle(out);
    if (scratchBytes_)
      scratchMem_.set_data_handle(ops::dnnl_utils::threadScratchpad(scratchBytes_));
    prim_.execute(strm, args_);
    if (dstReorder_) dstReorder_.execute(strm, dstInner_, dst_);
    strm.wait();
  }

  virtual Tensor reference(const std::vector<IValue>& slots, const Tensor& x,
                           const Tensor* residual) const = 0;

  /// The memory objects of a created primitive: the source (reordered into `srcMd` when it
  /// differs from the input's `srcUserMd`), the packed weights, the bias, the output.
  void bind(const memory::desc& srcUserMd, const memory::desc& srcMd, const memory::desc& wUserMd,
            const memory::desc& wMd, const memory::desc& dstMd, const memory::desc& biasMd) {
    auto& eng = ops::dnnl_utils::engine();
    Tensor wc = l_.weight.contiguous();
    memory wMem = packedWeights(l_, 0, wUserMd, wMd, wc.rawData());
    src_.bind(srcUserMd, srcMd);
    dst_ = memory(dstMd, eng, nullptr);
    args_ = {{DNNL_ARG_SRC, src_.src}, {DNNL_ARG_WEIGHTS, wMem}, {DNNL_ARG_DST, dst_}};
    if (l_.bias) {
      bias_ = l_.bias->contiguous();
      args_[DNNL_ARG_BIAS] = memory(biasMd, eng, bias_.rawData());
    }
    dnnl_ = true;
  }

  // Note [Plan scratchpads]
  // With the library-managed scratchpad (oneDNN's default, DNNL_ENABLE_CONCURRENT_EXEC off, as
  // Debian builds it) the scratchpad is common to the primitives and a primitive "should be
  // executed in the same thread it was created in" (oneDNN's scratchpad_mode docs). A plan is
  // not: the server plans a batchable model's every batch size on its loading thread and runs
  // them on the instance's worker or a request thread, and resnet18's Winograd convolutions
  // (whose scratchpads are large) crashed it in the kernel's stores at the first batch of 2.
  // So every float product is made with scratchpad_mode::user, and each run passes the running
  // thread's scratchpad (threadScratchpad: one per thread, grown to the largest any primitive
  // asked for, like oneDNN's common one; the user mode is thread-safe as long as no buffer is
  // used by two executions at once). A buffer per primitive instead cost 566 MiB more for a
  // server that planned resnet18 at batch sizes 1..8. server.rest's
  // test_batch_sizes_planned_on_another_thread crashed the server without this.
  /// After bind(): the primitive needs a scratchpad of `md` (its scratchpad_desc()), given per
  /// run from the running thread's buffer.
  void bindScratchpad(const memory::desc& md) {
    scratchBytes_ = md.get_size();
    if (scratchBytes_ == 0) return;
    scratchMem_ = memory(md, ops::dnnl_utils::engine(), nullptr);
    args_[DNNL_ARG_SCRATCHPAD] = scratchMem_;
  }

  /// After bind(): the primitive writes `innerMd` (its own layout) into a buffer of the plan,
  /// reordered into the output after each run.
  void bindInnerDst(const memory::desc& innerMd) {
    auto& eng = ops::dnnl_utils::engine();
    dstBuf_ = Storage::allocate(innerMd.get_size());
    dstInner_ = memory(innerMd, eng, dstBuf_.data());
    dstReorder_ = dnnl::reorder(dstInner_, dst_);
    args_[DNNL_ARG_DST] = dstInner_;
  }

  const Layer& l_;
  IntList inSizes_, inStrides_;
  ScalarType inDtype_ = ScalarType::Undefined;
  bool dnnl_ = false;
  int threads_ = 1;  // the primitive's threads, chosen by its work (Note [Thread budget])
  IntList outSizes_, outStrides_;
  size_t outBytes_ = 0;
  dnnl::primitive prim_;
  SourceMemory src_;
  memory dst_;
  memory dstInner_;           // the primitive's own output layout, when not the output's
  Storage dstBuf_;            // dstInner_'s bytes
  dnnl::reorder dstReorder_;  // dstInner_ -> dst_
  size_t scratchBytes_ = 0;   // the primitive's scratchpad: Note [Plan scratchpads]
  memory scratchMem_;         // pointed at the running thread's buffer before each run
  Tensor bias_, arenaOut_;
  std::unordered_map<int, memory> args_;
};

// ---- Convolution ---------------------------------------------------------------------------

// Note [Winograd after reuse]
// A Winograd convolution's weights are transformed by oneDNN's reference (plain C++) reorder:
// for resnet50, ~25% of the CPU time of a cold `torchless run`, to save ~12 ms per call
// (Note [Winograd convolutions]). So a plan made by a call (the first call of a method, or of
// a new input signature) runs the direct convolution, and only when the plan runs again does
// a background thread (BackgroundBuilder) build the Winograd primitive and its weights; the
// call that finds them ready switches to them, between two runs of the layer (the plan is
// used by one call at a time). A one-shot `torchless run` never pays for the transform. A
// plan made while preparing for reuse (Module::prepare: `bench`, BuildForReuse) takes
// Winograd at once, in the load, as before.
class ConvExec : public ProductExec {
 public:
  /// `winogradNow`: where it fits, take the Winograd algorithm at once (else: direct first,
  /// Winograd after reuse); `upgradeOnly`: Winograd or nothing (the background build).
  ConvExec(const Layer& l, const Tensor& x, bool winogradNow = tBuildingForReuse,
           bool upgradeOnly = false)
      : ProductExec(l), winogradNow_(winogradNow || upgradeOnly), upgradeOnly_(upgradeOnly) {
    prepareFor(x);
  }

  // The output rows a band computes and the padding above its first input row.
  struct Band {
    int64_t padTop = 0, rows = 0;
  };
  // A band of `l` (Note [Row bands]) for its rows of the input, `x`.
  ConvExec(const Layer& l, const Tensor& x, Band band, bool winograd)
      : ProductExec(l), winogradNow_(winograd), upgradeOnly_(false), band_(band) {
    prepareFor(x);
  }

  ~ConvExec() override { cancelUpgrade(); }

  const char* fusedPath() const override { return isWinograd_ ? "winograd" : nullptr; }

  bool settled() const override {
    return !winogradLater_ || (upgrade_ && upgrade_->finished.load(std::memory_order_acquire) &&
                               !upgrade_->ready.load(std::memory_order_acquire));
  }

  // Note [Row bands] in engine.cpp: band b computes output rows [out0, out0 + rows) of a
  // channels-last batch-1 output from input rows [in0, ...), as a convolution of its own (the
  // band's rows, its own top and bottom padding, 1 thread), Winograd when this layer is.
  bool prepareBands(const std::vector<IValue>& slots, int bands) override {
    bands_.clear();
    bandIn0_.clear();
    bandOut0_.clear();
    bandsMissed_.store(false, std::memory_order_relaxed);
    if (!dnnl_ || l_.transposed || l_.bf16 || l_.weight.dim() != 4 || !arenaOut_.defined() ||
        inDtype_ != ScalarType::Float || bands < 2 || inSizes_[0] != 1 || outSizes_[1] < 2)
      return false;
    const Tensor& x = slots[static_cast<size_t>(l_.inputs[0])].toTensor();
    // The input channels-last, or contiguous (a network's input: each band's rows are then
    // strided, reordered by the band's primitive as the layer's whole input was).
    if (x.sizes() != inSizes_ || x.strides() != inStrides_ ||
        !(channelsLastBatch1(x.sizes(), inStrides_) || x.isContiguous()) ||
        !channelsLastBatch1(outSizes_, outStrides_))
      return false;
    if (l_.hasResidual && !residualFits(slots)) return false;
    const int64_t oh = outSizes_[2], ih = inSizes_[2];
    if (oh < 2 * bands) return false;
    // A Winograd layer's bands of under 28 rows ran slower than the layer whole (resnet50's
    // layer3 and layer4, 14x14 and 7x7, 2 threads: 0.85-1.9 ms against 0.44-0.69 ms; layer2's
    // 28x28 in two bands on 1 thread: 0.75-0.79 ms against 0.58-0.63; layer1's 56x56: 0.55-0.59
    // against 0.64-0.69).
    if (isWinograd_ && oh < 28 * bands) return false;
    // A band of few pixels streams all the weights for little work, where oneDNN's own split
    // (by output channels) reads half of them per thread: resnet50's layer4 (7x7, 4-9 MB of
    // weights) ran 10-40% slower in bands (mobilenet_v2's 7x7 layers, 0.6-1.6 MB, faster).
    if ((oh / bands) * outSizes_[3] < 64 && l_.weight.nbytes() > (size_t{2} << 20)) return false;
    const int64_t s = l_.stride.empty() ? 1 : l_.stride[0];
    const int64_t p = l_.padding.empty() ? 0 : l_.padding[0];
    const int64_t d = l_.dilation.empty() ? 1 : l_.dilation[0];
    const int64_t eff = (l_.weight.sizes()[2] - 1) * d + 1;
    for (int b = 0; b < bands; ++b) {
      const int64_t o0 = oh * b / bands, o1 = oh * (b + 1) / bands;
      const int64_t first = o0 * s - p, last = (o1 - 1) * s - p + eff - 1;
      const int64_t i0 = std::max<int64_t>(first, 0), i1 = std::min(last, ih - 1);
      if (i1 < i0) return dropBands();
      ops::ThreadLimit one(1);
      auto e = std::make_unique<ConvExec>(l_, ops::narrow(x, 2, i0, i1 - i0 + 1),
                                          Band{std::max<int64_t>(-first, 0), o1 - o0}, isWinograd_);
      if (!e->dnnl_ || e->outSizes_[2] != o1 - o0 ||
          !channelsLastBatch1(e->outSizes_, e->outStrides_))
        return dropBands();
      bands_.push_back(std::move(e));
      bandIn0_.push_back(i0);
      bandOut0_.push_back(o0);
    }
    return true;
  }

  void runBand(std::vector<IValue>& slots, int band) override {
    const Tensor& x = slots[static_cast<size_t>(l_.inputs[0])].toTensor();
    // Read only: the other bands read the same state at once.
    if (bands_.empty() || x.sizes() != inSizes_ || x.strides() != inStrides_ ||
        x.dtype() != inDtype_ || (l_.hasResidual && !residualFits(slots))) {
      if (band == 0) {
        bandsMissed_.store(true, std::memory_order_relaxed);
        const Tensor r =
            l_.hasResidual ? slots[static_cast<size_t>(l_.inputs.back())].toTensor() : Tensor();
        slots[static_cast<size_t>(l_.outputs[0])] =
            IValue(reference(slots, x, l_.hasResidual ? &r : nullptr));
      }
      return;
    }
    const auto b = static_cast<size_t>(band);
    auto* out = static_cast<float*>(arenaOut_.rawData());
    const int64_t outRow = outStrides_[2];
    float* o = out + bandOut0_[b] * outRow;
    if (l_.hasResidual) {
      const Tensor& r = slots[static_cast<size_t>(l_.inputs.back())].toTensor();
      if (r.rawData() != arenaOut_.rawData())  // same: Note [Residual in place]
        std::memcpy(o, static_cast<const float*>(r.rawData()) + bandOut0_[b] * outRow,
                    static_cast<size_t>(bands_[b]->outSizes_[2] * outRow) * sizeof(float));
    }
    bands_[b]->execute(static_cast<const float*>(x.rawData()) + bandIn0_[b] * inStrides_[2], o);
    if (band == 0) slots[static_cast<size_t>(l_.outputs[0])] = IValue(arenaOut_);
  }

  bool bandsMissed() const override { return bandsMissed_.load(std::memory_order_relaxed); }

  void run(std::vector<IValue>& slots) override {
    if (upgrade_ && upgrade_->ready.load(std::memory_order_acquire)) adoptUpgrade();
    ProductExec::run(slots);
    if (winogradLater_ && !upgrade_ && ++runs_ == 2)
      startUpgrade(slots[static_cast<size_t>(l_.inputs[0])].toTensor());
  }

 private:
  // Sizes [1, C, H, W] with channels-last strides (dim 0's stride is not read).
  static bool channelsLastBatch1(const IntList& sizes, const IntList& strides) {
    if (sizes.size() != 4 || sizes[0] != 1) return false;
    const IntList cl = channelsLastStrides(sizes);
    for (size_t d = 1; d < 4; ++d)
      if (sizes[d] != 1 && strides[d] != cl[d]) return false;
    return true;
  }

  // The residual a band adds is the output's rows: same sizes and strides, float.
  bool residualFits(const std::vector<IValue>& slots) const {
    const IValue& v = slots[static_cast<size_t>(l_.inputs.back())];
    if (!v.isTensor()) return false;
    const Tensor& r = v.toTensor();
    return r.dtype() == ScalarType::Float && r.sizes() == outSizes_ && r.strides() == outStrides_;
  }

  bool dropBands() {
    bands_.clear();
    bandIn0_.clear();
    bandOut0_.clear();
    return false;
  }

  // Built in the background: a ConvExec for the same input, Winograd only.
  struct Upgrade {
    std::mutex mu;  // held while the task builds
    bool cancelled = false;
    std::atomic<bool> ready{false};
    std::atomic<bool> finished{false};  // the task ran (built or not)
    std::unique_ptr<ConvExec> built;
  };

  void startUpgrade(const Tensor& x) {
    auto up = std::make_shared<Upgrade>();
    upgrade_ = up;
    const Tensor like = x;  // only its layout is read
    const int threads = ops::getNumThreads();
    const Layer* layer = &l_;
    BackgroundBuilder::instance().post([up, like, threads, layer] {
      std::lock_guard<std::mutex> lock(up->mu);
      struct Finish {
        Upgrade& u;
        ~Finish() { u.finished.store(true, std::memory_order_release); }
      } finish{*up};
      if (up->cancelled) return;
      omp_set_num_threads(threads);  // the primitive is made for the calls' thread count
      try {
        auto e = std::make_unique<ConvExec>(*layer, like, true, true);
        if (!e->isWinograd_) return;
        up->built = std::move(e);
        up->ready.store(true, std::memory_order_release);
      } catch (const std::exception&) {
        // stays direct
      }
    });
  }

  // Waits for a running upgrade task (it reads the layer) and drops the upgrade.
  void cancelUpgrade() {
    if (!upgrade_) return;
    {
      std::lock_guard<std::mutex> lock(upgrade_->mu);
      upgrade_->cancelled = true;
    }
    upgrade_.reset();
  }

  void adoptUpgrade() {
    ConvExec& w = *upgrade_->built;
    std::swap(prim_, w.prim_);
    std::swap(src_, w.src_);
    std::swap(dst_, w.dst_);
    std::swap(dstInner_, w.dstInner_);
    std::swap(dstBuf_, w.dstBuf_);
    std::swap(dstReorder_, w.dstReorder_);
    std::swap(args_, w.args_);
    std::swap(scratchBytes_, w.scratchBytes_);  // args_ holds scratchMem_: Note [Plan scratchpads]
    std::swap(scratchMem_, w.scratchMem_);
    std::swap(bias_, w.bias_);
    threads_ = w.threads_;
    isWinograd_ = true;
    winogradLater_ = false;
    upgrade_.reset();
  }

  Tensor reference(const std::vector<IValue>&, const Tensor& x,
                   const Tensor* residual) const override {
    Tensor y =
        l_.batchedOnly ? ops::convolution(x, l_.weight, l_.bias, l_.stride, l_.padding, l_.dilation,
                                          l_.transposed, l_.outputPadding, l_.groups)
        : l_.transposed
            ? ops::convTransposeNd(x, l_.weight, l_.bias, l_.stride, l_.padding, l_.outputPadding,
                                   l_.groups, l_.dilation)
            : ops::convNd(x, l_.weight, l_.bias, l_.stride, l_.padding, l_.dilation, l_.groups);
    if (residual) y = ops::add(y, *residual);
    return applyActivation(y, l_.activation);
  }

  void prepare(const Tensor& x) override {
    cancelUpgrade();
    dropBands();
    winogradLater_ = isWinograd_ = false;
    runs_ = 0;
    const int64_t k = l_.weight.dim() - 2;
    if (x.dtype() != ScalarType::Float || l_.weight.dtype() != ScalarType::Float ||
        x.dim() != k + 2 || x.numel() == 0 || (!isDense(x) && band_.rows == 0) ||
        (l_.activation.kind != Activation::None && !dnnlActivation(l_.activation.kind)))
      return;
    // Output sizes as PyTorch computes them.
    auto ex = [&](const IntList& v, int64_t d) {
      return v.size() == 1 ? IntList(static_cast<size_t>(k), v[0])
             : v.empty()   ? IntList(static_cast<size_t>(k), d)
                           : v;
    };
    const IntList stride = ex(l_.stride, 1);
    IntList padding = ex(l_.padding, 0);
    const IntList dilation = ex(l_.dilation, 1), outPad = ex(l_.outputPadding, 0);
    if (static_cast<int64_t>(stride.size()) != k || static_cast<int64_t>(padding.size()) != k ||
        static_cast<int64_t>(dilation.size()) != k)
      return;
    const int64_t g = l_.groups, C = x.sizes()[1];
    const IntList& ws = l_.weight.sizes();
    const int64_t OC = l_.transposed ? ws[1] * g : ws[0];
    if ((l_.transposed ? ws[0] : ws[1] * g) != C) return;  // the reference path reports it
    outSizes_ = {x.sizes()[0], OC};
    if (band_.rows > 0) {  // Note [Row bands]: the band's own top padding and rows
      if (l_.transposed || k != 2) return;
      padding[0] = band_.padTop;
    }
    dims padR, dil;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t isz = x.sizes()[2 + i], ksz = ws[2 + i];
      const int64_t eff = (ksz - 1) * dilation[i] + 1;
      int64_t o = l_.transposed ? (isz - 1) * stride[i] - 2 * padding[i] + eff + outPad[i]
                                : (isz + 2 * padding[i] - eff) / stride[i] + 1;
      if (band_.rows > 0 && i == 0) o = band_.rows;
      if (o <= 0) return;
      outSizes_.push_back(o);
      const int64_t r = l_.transposed ? (isz - 1) * stride[i] + eff - padding[i] - o
                                      : (o - 1) * stride[i] + eff - isz - padding[i];
      if (r < 0 && l_.transposed) return;
      padR.push_back(std::max<int64_t>(r, 0));
      dil.push_back(dilation[i] - 1);
    }
    const bool cl = OC > 1;
    outStrides_ = cl ? channelsLastStrides(outSizes_) : contiguousStrides(outSizes_);
    outBytes_ = static_cast<size_t>(checkedNumel(outSizes_)) * sizeof(float);
    // Multiply-adds: every output (input, when transposed) point of every channel takes C/g
    // (OC/g) input channels times the kernel's points.
    double macs = static_cast<double>(l_.weight.numel());
    for (int64_t i = 0; i < k; ++i)
      macs *= static_cast<double>(l_.transposed ? x.sizes()[2 + i] : outSizes_[2 + i]);
    threads_ = ops::threadsForWork(2 * macs * static_cast<double>(x.sizes()[0]));
    ops::ThreadLimit limit(threads_);

    const auto [wv, wvs] = ops::dnnlConvWeightsView(ws, g, l_.transposed);
    const dims wDims = toDims(wv), wStrides = toDims(wvs);
    const auto f32 = memory::data_type::f32;
    auto& eng = ops::dnnl_utils::engine();
    const IntList inStrides = sourceStrides(x);
    memory::desc srcUser(toDims(x.sizes()), f32, toDims(inStrides));
    // A channels-last input (what the convolution before wrote) is taken as it is; a plain one
    // lets the primitive choose (the engine's input reorder).
    const bool inCl = x.dim() >= 3 && inStrides[1] == 1 && x.sizes()[1] > 1;
    // bf16 (Layer::bf16): activations and weights in bfloat16 for the product, f32 results.
    const auto mt = l_.bf16 ? memory::data_type::bf16 : f32;
    memory::desc srcMd =
        inCl && !l_.bf16 ? srcUser : memory::desc(toDims(x.sizes()), mt, memory::format_tag::any);
    memory::desc wUser(wDims, f32, wStrides), wAny(wDims, mt, memory::format_tag::any);
    memory::desc dstMd(toDims(outSizes_), f32, toDims(outStrides_));
    memory::desc biasMd = l_.bias ? memory::desc({OC}, f32, memory::format_tag::a) : memory::desc();
    dnnl::primitive_attr attr = postOpsAttr(l_.hasResidual, l_.activation);
    const dims strides = toDims(stride), padL = toDims(padding);
    if (winogradFits(x, stride, dilation)) {
      if (!winogradNow_) {
        winogradLater_ = true;  // Note [Winograd after reuse]
      } else if (prepareWinograd(x, wUser, wDims, biasMd, dstMd, attr, strides, dil, padL, padR)) {
        isWinograd_ = true;
        return;
      }
    }
    if (upgradeOnly_) return;
    memory::desc srcPd, wPd, scratchPd;
    try {
      if (!l_.transposed) {
        auto d =
            l_.bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                      dnnl::algorithm::convolution_direct, srcMd,
                                                      wAny, biasMd, dstMd, strides, dil, padL, padR)
                    : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                      dnnl::algorithm::convolution_direct, srcMd,
                                                      wAny, dstMd, strides, dil, padL, padR);
        dnnl::convolution_forward::primitive_desc pd(d, attr, eng);
        srcPd = pd.src_desc();
        wPd = pd.weights_desc();
        scratchPd = pd.scratchpad_desc();
        prim_ = dnnl::convolution_forward(pd);
      } else {
        auto d =
            l_.bias
                ? dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                    dnnl::algorithm::deconvolution_direct, srcMd,
                                                    wAny, biasMd, dstMd, strides, dil, padL, padR)
                : dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                    dnnl::algorithm::deconvolution_direct, srcMd,
                                                    wAny, dstMd, strides, dil, padL, padR);
        dnnl::deconvolution_forward::primitive_desc pd(d, attr, eng);
        srcPd = pd.src_desc();
        wPd = pd.weights_desc();
        scratchPd = pd.scratchpad_desc();
        prim_ = dnnl::deconvolution_forward(pd);
      }
    } catch (const dnnl::error&) {
      return;  // shapes oneDNN does not take: the reference path
    }
    bind(srcUser, srcPd, wUser, wPd, dstMd, biasMd);
    bindScratchpad(scratchPd);
  }

  // Note [Winograd convolutions]
  // A 3x3, stride-1 convolution computed by Winograd's minimal filtering (oneDNN's
  // jit_fp32_wino_2x3 / jit_wino_4x3 kernels) takes 2.25-4x fewer multiplications than the
  // direct one. oneDNN 2.6 has it for AVX-512 only and in its blocked layout (nChw16c), so the
  // input is reordered into that layout and the output back to channels-last around it; even
  // so, resnet50's 3x3 convolutions took 0.48-1.18 ms against 1.0-1.5 ms direct (1 thread,
  // batch 1; also faster at 2 threads and at batch 8), and the outputs differed from the direct
  // ones by at most 1e-6 relative. Narrow layers (under 64 channels) and fused residuals (the
  // sum post-op would need the residual reordered too) stay direct; TORCHLESS_WINOGRAD=0 turns
  // it off (to compare).
  bool winogradFits(const Tensor& x, const IntList& stride, const IntList& dilation) const {
    static const bool enabled = [] {
      const char* v = std::getenv("TORCHLESS_WINOGRAD");
      return v == nullptr || std::string(v) != "0";
    }();
    const IntList& ws = l_.weight.sizes();
    return enabled && !l_.transposed && !l_.bf16 && !l_.hasResidual && l_.groups == 1 &&
           x.dim() == 4 && ws[2] == 3 && ws[3] == 3 && stride == IntList{1, 1} &&
           dilation == IntList{1, 1} && ws[0] >= 64 && ws[1] >= 64;
  }

  bool prepareWinograd(const Tensor& x, const memory::desc& wUser, const dims& wDims,
                       const memory::desc& biasMd, const memory::desc& dstMd,
                       const dnnl::primitive_attr& attr, const dims& strides, const dims& dil,
                       const dims& padL, const dims& padR) {
    const auto f32 = memory::data_type::f32;
    const auto any = memory::format_tag::any;
    memory::desc srcAny(toDims(x.sizes()), f32, any), dstAny(toDims(outSizes_), f32, any),
        wAny(wDims, f32, any);
    using cf = dnnl::convolution_forward;
    const auto fi = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::convolution_winograd;
    try {
      auto d = l_.bias ? cf::desc(fi, alg, srcAny, wAny, biasMd, dstAny, strides, dil, padL, padR)
                       : cf::desc(fi, alg, srcAny, wAny, dstAny, strides, dil, padL, padR);
      cf::primitive_desc pd(d, attr, ops::dnnl_utils::engine());
      prim_ = cf(pd);
      memory::desc srcUser(toDims(x.sizes()), f32, toDims(sourceStrides(x)));
      bind(srcUser, pd.src_desc(), wUser, pd.weights_desc(), dstMd, biasMd);
      if (pd.dst_desc() != dstMd) bindInnerDst(pd.dst_desc());
      bindScratchpad(pd.scratchpad_desc());
      return true;
    } catch (const dnnl::error&) {
      return false;  // no Winograd kernel for this CPU or shape: the direct one
    }
  }

  const bool winogradNow_, upgradeOnly_;
  const Band band_{};                             // rows > 0: a band of a layer (Note [Row bands])
  std::vector<std::unique_ptr<ConvExec>> bands_;  // prepareBands(): one per band
  std::vector<int64_t> bandIn0_, bandOut0_;       // each band's first input and output row
  std::atomic<bool> bandsMissed_{false};
  bool winogradLater_ = false;  // direct now, Winograd when the plan runs again
  bool isWinograd_ = false;
  int runs_ = 0;  // runs since prepare, while winogradLater_
  std::shared_ptr<Upgrade> upgrade_;
};

// ---- MatMul ----------------------------------------------------------------------------------

class MatMulExec : public ProductExec {
 public:
  MatMulExec(const Layer& l, const Tensor& a) : ProductExec(l) { prepareFor(a); }

 private:
  Tensor reference(const std::vector<IValue>& slots, const Tensor& a,
                   const Tensor* residual) const override {
    Tensor y;
    if (l_.weight.defined()) {
      y = ops::linear(a, l_.weight, l_.bias);
    } else {
      y = ops::matmul(a, slots[static_cast<size_t>(l_.inputs[1])].toTensor());
      if (l_.bias) y = ops::add(y, *l_.bias);
    }
    if (l_.alpha != 1.0) TL_INTERNAL_ASSERT(false, "matmul alpha is folded by the converter");
    if (residual) y = ops::add(y, *residual);
    return applyActivation(y, l_.activation);
  }

  // Linear form: a [*, K] as [M, K] (contiguous rows), weight [N, K] packed once.
  void prepare(const Tensor& a) override {
    if (!l_.weight.defined() || a.dtype() != ScalarType::Float ||
        l_.weight.dtype() != ScalarType::Float || a.dim() < 1 || !a.isContiguous() ||
        a.numel() == 0 ||
        (l_.activation.kind != Activation::None && !dnnlActivation(l_.activation.kind)))
      return;
    const int64_t K = a.sizes().back(), N = l_.weight.sizes()[0];
    if (l_.weight.dim() != 2 || l_.weight.sizes()[1] != K) return;
    const int64_t M = a.numel() / K;
    threads_ = ops::threadsForWork(2.0 * static_cast<double>(M) * static_cast<double>(N) *
                                   static_cast<double>(K));
    ops::ThreadLimit limit(threads_);
    outSizes_ = a.sizes();
    outSizes_.back() = N;
    outStrides_ = contiguousStrides(outSizes_);
    outBytes_ = static_cast<size_t>(M * N) * sizeof(float);
    const auto f32 = memory::data_type::f32;
    auto& eng = ops::dnnl_utils::engine();
    const auto mt = l_.bf16 ? memory::data_type::bf16 : f32;
    memory::desc srcUser({M, K}, f32, {K, 1});
    memory::desc srcMd({M, K}, mt, {K, 1});
    memory::desc wUser({K, N}, f32, {1, K});
    memory::desc wAny({K, N}, mt, memory::format_tag::any);
    memory::desc dstMd({M, N}, f32, {N, 1});
    memory::desc biasMd = l_.bias ? memory::desc({1, N}, f32, {N, 1}) : memory::desc();
    dnnl::primitive_attr attr = postOpsAttr(l_.hasResidual, l_.activation, l_.alpha);
    memory::desc wPd, scratchPd;
    try {
      auto d = l_.bias ? dnnl::matmul::desc(srcMd, wAny, biasMd, dstMd)
                       : dnnl::matmul::desc(srcMd, wAny, dstMd);
      dnnl::matmul::primitive_desc pd(d, attr, eng);
      wPd = pd.weights_desc();
      scratchPd = pd.scratchpad_desc();
      prim_ = dnnl::matmul(pd);
    } catch (const dnnl::error&) {
      return;
    }
    bind(srcUser, srcMd, wUser, wPd, dstMd, biasMd);
    bindScratchpad(scratchPd);
  }
};

// ---- Plugin / Shape: the node's kernel ---------------------------------------------------

class KernelExec : public LayerExec {
 public:
  explicit KernelExec(const Layer& l) : l_(l) {
    TL_INTERNAL_ASSERT(l.node != nullptr, "plugin layer '{}' has no node", l.name);
    const OpInfo* op = matchOperator(l.node, OperatorRegistry::global());
    op_ = KernelRegistry::global().operationFor(*l.node, op);
    if (!op_)
      throw UnsupportedError(fmt::format("unsupported operator {} in engine layer '{}'",
                                         op ? op->key : l.node->kind().toQualString(), l.name),
                             l.place);
    stack_.reserve(l.args.size() + l.outputs.size());
    static const Symbol kView = Symbol::aten("view");
    contiguousSelf_ = l.node->kind() == kView;
  }

  void run(std::vector<IValue>& slots) override {
    stack_.clear();
    size_t j = 0;
    for (const auto& a : l_.args) {
      if (a)
        stack_.push_back(*a);
      else
        stack_.push_back(slots[static_cast<size_t>(l_.inputs[j++])]);
    }
    // The engine keeps activations channels-last where PyTorch's are contiguous (convolutions,
    // pools): aten::view, which depends on strides, sees them in PyTorch's layout (a conv or
    // max_pool2d followed by x.view(n, -1), as LeNet does, would otherwise be refused).
    if (contiguousSelf_ && !stack_.empty() && stack_[0].isTensor() &&
        !stack_[0].toTensor().isContiguous())
      stack_[0] = IValue(stack_[0].toTensor().contiguous());
    op_(stack_);
    const size_t n = l_.node->outputs().size();
    TL_INTERNAL_ASSERT(stack_.size() >= n, "kernel of '{}' left too few outputs", l_.name);
    const size_t base = stack_.size() - n;
    for (size_t i = 0; i < l_.outputs.size() && i < n; ++i)
      slots[static_cast<size_t>(l_.outputs[i])] = std::move(stack_[base + i]);
    stack_.clear();
  }

 private:
  const Layer& l_;
  Operation op_;
  Stack stack_;
  bool contiguousSelf_ = false;
};

// ---- int8 Convolution / MatMul (Layer::quantized) --------------------------------------------

// oneDNN's u8 x s8 convolution with PyTorch's requantization: the primitive configuration of
// ops::qconv's fast path (Note [oneDNN int8 accumulators] in ops/quantized.cpp: the input's
// zero point, per-channel output scales from ops::qconvScales, the bias in accumulator units,
// the output's zero point, relu as a post-op), built once per input signature, with u8
// activations channels-last in and out so that consecutive layers need no reorder. A linear
// is a 1x1 convolution over [M, K, 1, 1]. Where the input is not what this takes (another
// dtype, per-channel qparams) or oneDNN has only its reference implementation for the shape,
// the node's kernel runs (ops::qconv / qlinear with their own paths), then the fused relu.
class QProductExec : public LayerExec {
 public:
  QProductExec(const Layer& l, const Tensor& x) : l_(l), kernel_(l) { prepare(x); }

  void run(std::vector<IValue>& slots) override {
    const Tensor& x = slots[static_cast<size_t>(l_.inputs[0])].toTensor();
    if (x.sizes() != inSizes_ || x.strides() != inStrides_ || x.dtype() != inDtype_ ||
        !sameQParams(x))
      prepare(x);
    if (!dnnl_) {
      kernel_.run(slots);
      IValue& y = slots[static_cast<size_t>(l_.outputs[0])];
      if (l_.activation.kind == Activation::Relu) y = IValue(ops::qrelu(y.toTensor()));
      return;
    }
    Tensor out = arenaOut_;
    if (!out.defined()) {
      out = Tensor::fromStorage(Storage::allocate(outBytes_), 0, outSizes_, outStrides_,
                                ScalarType::QUInt8);
      out.setQuantizer(outQ_);
    }
    auto& strm = ops::dnnl_utils::stream();
    src_.feed(strm, x.rawData());
    dst_.set_data_handle(out.rawData());
    prim_.execute(strm, args_);
    strm.wait();
    slots[static_cast<size_t>(l_.outputs[0])] = IValue(std::move(out));
  }

  bool ownsOutput() const override { return dnnl_; }
  bool sumsIntoOutput() const override { return dnnl_ && l_.hasResidual; }
  size_t outputBytes() const override { return dnnl_ ? outBytes_ : 0; }
  void useOutputBuffer(const Storage& arena, size_t offset) override {
    arenaOut_ = Tensor::fromStorage(arena, static_cast<int64_t>(offset), outSizes_, outStrides_,
                                    ScalarType::QUInt8);
    arenaOut_.setQuantizer(outQ_);
  }

 private:
  static bool perTensorQUInt8(const Tensor& x) {
    return x.isQuantized() && x.dtype() == ScalarType::QUInt8 &&
           x.quantizer()->scheme == QuantizerInfo::Scheme::PerTensorAffine;
  }
  bool sameQParams(const Tensor& x) const {
    if (!perTensorQUInt8(x)) return !dnnl_;
    return x.quantizer()->scale == inScale_ && x.quantizer()->zeroPoint == inZp_;
  }

  void prepare(const Tensor& x) {
    using dt = memory::data_type;
    using tag = memory::format_tag;
    inSizes_ = x.sizes();
    inStrides_ = x.strides();
    inDtype_ = x.dtype();
    arenaOut_ = Tensor();
    dnnl_ = false;
    if (!perTensorQUInt8(x) || x.numel() == 0 || ops::qconvReferenceLoops()) return;
    inScale_ = x.quantizer()->scale;
    inZp_ = x.quantizer()->zeroPoint;
    ops::QConvScales sc;
    try {
      sc = ops::qconvScales(inScale_, l_.weight, l_.bias, l_.outScale);
    } catch (const Error&) {
      return;  // the kernel reports it
    }
    if (!sc.symmetric) return;
    const Tensor& w = l_.weight;
    const int64_t OC = w.size(0), g = l_.groups;
    dims srcDims, srcStrides, dstDims, wDims, strides, pads, dil;
    int64_t spatial = 2;
    if (l_.kind == LayerKind::MatMul) {
      if (x.dim() < 1 || !x.isContiguous()) return;
      const int64_t K = x.sizes().back();
      if (w.dim() != 2 || w.size(1) != K) return;
      const int64_t M = x.numel() / K;
      srcDims = {M, K, 1, 1};
      srcStrides = {K, 1, K, K};
      dstDims = {M, OC, 1, 1};
      wDims = {OC, K, 1, 1};
      strides = {1, 1};
      pads = {0, 0};
      dil = {0, 0};
      outSizes_ = x.sizes();
      outSizes_.back() = OC;
      outStrides_ = contiguousStrides(outSizes_);
    } else {
      // conv1d's packed weight is [OC, C/g, 1, L] over an input [N, C, L] seen as [N, C, 1, L].
      const bool oneD = x.dim() == 3 && w.dim() == 4;
      if (!oneD && x.dim() != w.dim()) return;
      spatial = w.dim() - 2;
      if (static_cast<int64_t>(l_.stride.size()) != spatial ||
          static_cast<int64_t>(l_.padding.size()) != spatial ||
          static_cast<int64_t>(l_.dilation.size()) != spatial || g < 1)
        return;
      IntList in = x.sizes(), ins = x.strides();
      if (oneD) {
        in.insert(in.begin() + 2, 1);
        ins.insert(ins.begin() + 2, ins[2] * in[3]);
      }
      const int64_t N = in[0], C = in[1];
      if (w.size(1) * g != C || OC % g != 0) return;
      srcDims = toDims(in);
      srcStrides = toDims(ins);
      dstDims = {N, OC};
      for (int64_t i = 0; i < spatial; ++i) {
        const auto j = static_cast<size_t>(i);
        const int64_t k = w.size(2 + i), st = l_.stride[j], pd = l_.padding[j], dl = l_.dilation[j];
        if (st < 1 || dl < 1 || pd < 0) return;
        const int64_t o = (in[2 + j] + 2 * pd - dl * (k - 1) - 1) / st + 1;
        if (o <= 0) return;
        dstDims.push_back(o);
        strides.push_back(st);
        pads.push_back(pd);
        dil.push_back(dl - 1);
      }
      if (g > 1) {
        wDims = {g, OC / g, C / g};
      } else {
        wDims = {OC, C};
      }
      for (int64_t i = 0; i < spatial; ++i) wDims.push_back(w.size(2 + i));
      outSizes_ = IntList(dstDims.begin(), dstDims.end());
      if (oneD) outSizes_.erase(outSizes_.begin() + 2);
      outStrides_ = channelsLastStrides(outSizes_);
    }
    outBytes_ = static_cast<size_t>(checkedNumel(outSizes_));
    const tag cl = spatial == 3 ? tag::acdeb : tag::acdb;
    const tag plainW =
        g > 1 ? (spatial == 3 ? tag::goidhw : tag::goihw) : (spatial == 3 ? tag::oidhw : tag::oihw);
    auto& eng = ops::dnnl_utils::engine();
    memory::desc srcUser(srcDims, dt::u8, srcStrides), srcMd(srcDims, dt::u8, cl);
    memory::desc wUser(wDims, dt::s8, plainW), wAny(wDims, dt::s8, tag::any);
    memory::desc dstMd(dstDims, dt::u8, cl);
    memory::desc biasMd({OC}, dt::f32, tag::x);
    // Our own scratchpad, allocated once per plan: with the library's, oneDNN may allocate one
    // per execution (page faults on every call).
    ops::Int8ConvAttrs attrs;
    attrs.mult = &sc.mult;
    attrs.hasBias = sc.hasBias;
    attrs.relu = l_.activation.kind == Activation::Relu;
    attrs.userScratchpad = true;
    std::optional<dnnl::convolution_forward::primitive_desc> pd =
        ops::int8ConvPrimitiveDesc(srcMd, wAny, dstMd, strides, dil, pads, attrs);
    if (!pd) return;  // the kernel (oneDNN's reference implementation is slower)
    const memory::desc wPd = pd->weights_desc(), scratchMd = pd->scratchpad_desc();
    prim_ = dnnl::convolution_forward(*pd);
    Tensor wc = w.contiguous();
    memory wMem = packedWeights(l_, 0, wUser, wPd, wc.rawData());
    src_.bind(srcUser, srcMd);
    dst_ = memory(dstMd, eng, nullptr);
    srcZp_ = static_cast<int32_t>(inZp_);
    dstZp_ = static_cast<int32_t>(l_.outZeroPoint);
    bias_ = sc.bias;
    args_ = {
        {DNNL_ARG_SRC, src_.src},
        {DNNL_ARG_WEIGHTS, wMem},
        {DNNL_ARG_DST, dst_},
        {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, memory({{1}, dt::s32, tag::x}, eng, &srcZp_)},
        {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, memory({{1}, dt::s32, tag::x}, eng, &dstZp_)}};
    if (sc.hasBias) args_[DNNL_ARG_BIAS] = memory(biasMd, eng, bias_.data());
    if (scratchMd.get_size() > 0) {
      scratch_ = Storage::allocate(scratchMd.get_size());
      args_[DNNL_ARG_SCRATCHPAD] = memory(scratchMd, eng, scratch_.data());
    }
    if (!outQ_) {
      outQ_ = std::make_shared<QuantizerInfo>();
      outQ_->scale = l_.outScale;
      outQ_->zeroPoint = l_.outZeroPoint;
    }
    dnnl_ = true;
  }

  const Layer& l_;
  KernelExec kernel_;
  IntList inSizes_, inStrides_;
  ScalarType inDtype_ = ScalarType::Undefined;
  double inScale_ = 0;
  int64_t inZp_ = 0;
  bool dnnl_ = false;
  IntList outSizes_, outStrides_;
  size_t outBytes_ = 0;
  std::shared_ptr<QuantizerInfo> outQ_;
  dnnl::primitive prim_;
  SourceMemory src_;
  memory dst_;
  Storage scratch_;
  int32_t srcZp_ = 0, dstZp_ = 0;
  std::vector<float> bias_;
  Tensor arenaOut_;
  std::unordered_map<int, memory> args_;
};

// ---- Shape checks: a prim::If that raises, decided per input signature -------------------

class AssertExec : public LayerExec {
 public:
  explicit AssertExec(const Layer& l) : l_(l) {}
  void run(std::vector<IValue>& slots) override {
    const bool cond = slots[static_cast<size_t>(l_.inputs[0])].toBool();
    if (cond == (l_.op == "assert")) return;
    // The message, when the raising block gives it as a constant.
    std::string msg = "a shape check of the model failed";
    for (const Block* b : l_.node->blocks())
      for (const Node* n : b->nodes())
        if (n->kind() == Symbol::fromQualString("prim::RaiseException"))
          if (auto v = toIValue(n->input(0)); v && v->isString()) msg = v->toStringRef();
    throw Error(msg, l_.place);
  }

 private:
  const Layer& l_;
};

}  // namespace

memory packedWeights(const Layer& layer, int slot, const memory::desc& userMd,
                     const memory::desc& md, const void* w) {
  auto& eng = ops::dnnl_utils::engine();
  TL_INTERNAL_ASSERT(layer.packed != nullptr, "layer '{}' has no packed-weight cache", layer.name);
  PackedWeightCache& cache = *layer.packed;
  std::lock_guard<std::mutex> lock(cache.mu);
  for (auto& e : cache.entries)
    if (e.slot == slot && e.md == md) return e.mem;
  Storage buf = Storage::allocate(md.get_size());
  memory dst(md, eng, buf.data());
  memory src(userMd, eng, const_cast<void*>(w));
  dnnl::reorder(src, dst).execute(ops::dnnl_utils::stream(), src, dst);
  ops::dnnl_utils::stream().wait();
  cache.entries.push_back({slot, md, buf, dst});
  return dst;
}

BuildForReuse::BuildForReuse() : previous_(tBuildingForReuse) { tBuildingForReuse = true; }

BuildForReuse::~BuildForReuse() { tBuildingForReuse = previous_; }

bool buildingForReuse() { return tBuildingForReuse; }

std::unique_ptr<LayerExec> makeKernelExec(const Layer& layer) {
  return std::make_unique<KernelExec>(layer);
}

std::shared_ptr<PackedWeightCache> makePackedWeightCache() {
  return std::make_shared<PackedWeightCache>();
}

std::unique_ptr<LayerExec> makeLayerExec(const Layer& layer, const std::vector<IValue>& slots) {
  switch (layer.kind) {
    case LayerKind::Convolution:
      if (layer.quantized)
        return std::make_unique<QProductExec>(
            layer, slots[static_cast<size_t>(layer.inputs[0])].toTensor());
      return std::make_unique<ConvExec>(layer,
                                        slots[static_cast<size_t>(layer.inputs[0])].toTensor());
    case LayerKind::MatMul:
      if (layer.quantized)
        return std::make_unique<QProductExec>(
            layer, slots[static_cast<size_t>(layer.inputs[0])].toTensor());
      return std::make_unique<MatMulExec>(layer,
                                          slots[static_cast<size_t>(layer.inputs[0])].toTensor());
    case LayerKind::Shape:
      if (layer.op == "assert" || layer.op == "assert_false")
        return std::make_unique<AssertExec>(layer);
      return std::make_unique<KernelExec>(layer);
    case LayerKind::Plugin:
      if (auto e = makeSequenceLayerExec(layer, slots)) return e;
      return std::make_unique<KernelExec>(layer);
    default: return std::make_unique<KernelExec>(layer);
  }
}

}  // namespace torchless::engine
