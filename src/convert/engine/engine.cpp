// Engine: plans per input signature and runs them (Note [Engine plans] in engine.h).
#include "convert/engine/engine.h"

#include "convert/engine/layer_exec.h"
#include "core/error.h"
#include "ops/parallel.h"
#include "ops/shape.h"
#include "ops/tensor_iterator.h"
#include "ops/thread_budget.h"
#include "runtime/op_observer.h"

#include <omp.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <unordered_map>

namespace torchless::engine {

std::string InputProfile::str() const {
  auto tuple = [](const IntList& v) {
    std::string s = "(";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + ")";
  };
  if (empty()) return "[any]";
  return "[" + tuple(min) + ";" + tuple(opt) + ";" + tuple(max) + "]";
}

// One input signature's prepared layers and memory (Note [Engine plans]).
struct Plan {
  std::vector<IValue> key;
  bool busy = false;
  bool prepared = false;
  uint64_t lastUse = 0;
  std::vector<IValue> slots;                      // one per network value
  std::vector<bool> persistent;                   // slot keeps its value across calls
  std::vector<std::unique_ptr<LayerExec>> execs;  // one per layer; null: nothing to run
  Storage arena;
  size_t arenaBytes = 0;
  int runs = 0;   // calls completed
  int bands = 0;  // Note [Row bands]: 0 not tried yet, -1 none, else the bands (threads)
  std::vector<size_t> segmentEnd;  // per layer: the end of the band segment it starts, or 0
};

namespace {

// The signature of a call: each input's dtype and sizes (tensors), or value (others).
// The thread count is part of it: oneDNN primitives run with the threads they were created
// for (and the default thread count follows the machine's load, ops/parallel.h); so is the
// part of the network the plan runs (`stage`, a Stage of Note [Batch split]).
std::vector<IValue> signatureOf(const std::vector<IValue>& inputs, int64_t stage) {
  std::vector<IValue> key;
  key.reserve(inputs.size() * 6 + 2);
  key.emplace_back(static_cast<int64_t>(ops::getNumThreads()));
  key.emplace_back(stage);
  for (const IValue& v : inputs) {
    if (v.isTensor()) {
      const Tensor& t = v.toTensor();
      key.emplace_back(static_cast<int64_t>(t.dtype()));
      key.emplace_back(static_cast<int64_t>(t.dim()));
      for (int64_t s : t.sizes()) key.emplace_back(s);
      key.emplace_back(t.isContiguous());
    } else {
      key.push_back(v);
    }
  }
  return key;
}

// True when `inputs` have the signature `key` (signatureOf), without building theirs.
bool sameSignature(const std::vector<IValue>& key, const std::vector<IValue>& inputs,
                   int64_t stage) {
  if (key.size() < 2 || key[0].toInt() != ops::getNumThreads() || key[1].toInt() != stage)
    return false;
  size_t k = 2;
  for (const IValue& v : inputs) {
    if (v.isTensor()) {
      const Tensor& t = v.toTensor();
      if (k + 3 + static_cast<size_t>(t.dim()) > key.size()) return false;
      if (!key[k].isInt() || key[k].toInt() != static_cast<int64_t>(t.dtype())) return false;
      if (!key[k + 1].isInt() || key[k + 1].toInt() != t.dim()) return false;
      k += 2;
      for (int64_t s : t.sizes())
        if (key[k++].toInt() != s) return false;
      if (!key[k].isBool() || key[k].toBool() != t.isContiguous()) return false;
      ++k;
      continue;
    }
    if (k >= key.size()) return false;
    const IValue& x = key[k++];
    if (x.tag() != v.tag()) return false;
    if (v.isInt() && x.toInt() != v.toInt()) return false;
    if (v.isBool() && x.toBool() != v.toBool()) return false;
    if (v.isDouble() && x.toDouble() != v.toDouble()) return false;
    if (!v.isInt() && !v.isBool() && !v.isDouble() && !v.isNone()) return false;  // lists: no reuse
  }
  return k == key.size();
}

// The memory plan: native layers' outputs that nothing returns get arena offsets, reused by
// liveness. A value read by a plugin may be aliased by that plugin's outputs (views), so a
// buffer lives until the last reader of anything that may alias it.
void planMemory(const NetworkDefinition& net, Plan& plan) {
  const auto& layers = net.layers();
  const size_t nv = net.values().size();
  std::vector<std::vector<ValueId>> roots(nv);
  std::vector<int> def(nv, -1);
  for (size_t li = 0; li < layers.size(); ++li) {
    const Layer& l = layers[li];
    for (ValueId o : l.outputs) {
      def[static_cast<size_t>(o)] = static_cast<int>(li);
      if (plan.execs[li] && plan.execs[li]->ownsOutput()) {
        roots[static_cast<size_t>(o)] = {o};
      } else {
        // A set: with repeats, channel shuffles (split, cat, view, ...) doubled the list at
        // every block (int8 shufflenet_v2: 40 s in this loop and its page faults).
        std::vector<ValueId>& ro = roots[static_cast<size_t>(o)];
        for (ValueId in : l.inputs)
          for (ValueId r : roots[static_cast<size_t>(in)]) ro.push_back(r);
        std::sort(ro.begin(), ro.end());
        ro.erase(std::unique(ro.begin(), ro.end()), ro.end());
      }
    }
  }
  std::vector<int> lastUse(nv, -1);
  std::vector<bool> escapes(nv, false);
  for (size_t li = 0; li < layers.size(); ++li)
    for (ValueId in : layers[li].inputs)
      for (ValueId r : roots[static_cast<size_t>(in)])
        lastUse[static_cast<size_t>(r)] =
            std::max(lastUse[static_cast<size_t>(r)], static_cast<int>(li));
  for (ValueId o : net.outputs())
    for (ValueId r : roots[static_cast<size_t>(o)]) escapes[static_cast<size_t>(r)] = true;

  // Note [Residual in place]
  // A product layer with a fused residual (sum post-op) copies the residual into its output
  // before oneDNN adds to it. When the residual is an arena buffer's own value (not a view)
  // that nothing reads after this layer, of the output's sizes, strides and dtype, and not
  // what the layer reads as its input, the output takes the residual's buffer and the copy is
  // skipped (ResNet's blocks: every residual add). Chains share one buffer.
  auto sameLayout = [&](ValueId a, ValueId b) {
    const IValue& x = plan.slots[static_cast<size_t>(a)];
    const IValue& y = plan.slots[static_cast<size_t>(b)];
    if (!x.isTensor() || !y.isTensor()) return false;
    const Tensor& u = x.toTensor();
    const Tensor& v = y.toTensor();
    return u.dtype() == ScalarType::Float && v.dtype() == ScalarType::Float &&
           u.sizes() == v.sizes() && u.strides() == v.strides() && u.storageOffset() == 0;
  };
  std::vector<ValueId> aliasOf(nv, ValueId(-1));
  auto baseOf = [&](ValueId v) {
    while (aliasOf[static_cast<size_t>(v)] != ValueId(-1)) v = aliasOf[static_cast<size_t>(v)];
    return v;
  };
  for (size_t li = 0; li < layers.size(); ++li) {
    const Layer& l = layers[li];
    LayerExec* e = plan.execs[li].get();
    if (!e || !e->ownsOutput() || !e->sumsIntoOutput() || l.inputs.size() < 2) continue;
    const ValueId o = l.outputs[0], r = l.inputs.back(), x = l.inputs[0];
    const auto ri = static_cast<size_t>(r);
    if (escapes[static_cast<size_t>(o)] || roots[ri].size() != 1 || roots[ri][0] != r ||
        escapes[ri])
      continue;
    const int d = def[ri];
    if (d < 0 || !plan.execs[static_cast<size_t>(d)] ||
        !plan.execs[static_cast<size_t>(d)]->ownsOutput())
      continue;
    if (lastUse[ri] != static_cast<int>(li)) continue;
    const auto& xr = roots[static_cast<size_t>(x)];
    if (std::find(xr.begin(), xr.end(), r) != xr.end() || x == r) continue;
    if (e->outputBytes() != plan.execs[static_cast<size_t>(d)]->outputBytes() || !sameLayout(o, r))
      continue;
    aliasOf[static_cast<size_t>(o)] = r;
  }

  struct Buf {
    ValueId v;
    int begin, end;
    size_t bytes, offset = 0;
  };
  std::vector<Buf> bufs;
  std::unordered_map<ValueId, size_t> bufOf;  // base value -> index in bufs
  for (size_t li = 0; li < layers.size(); ++li) {
    if (!plan.execs[li] || !plan.execs[li]->ownsOutput()) continue;
    ValueId o = layers[li].outputs[0];
    const IValue& s = plan.slots[static_cast<size_t>(o)];
    if (escapes[static_cast<size_t>(o)] || !s.isTensor()) continue;
    const size_t bytes = plan.execs[li]->outputBytes();
    if (bytes == 0) continue;
    int end = std::max(lastUse[static_cast<size_t>(o)], static_cast<int>(li));
    if (aliasOf[static_cast<size_t>(o)] != ValueId(-1)) {
      auto it = bufOf.find(baseOf(o));
      if (it != bufOf.end()) {
        bufs[it->second].end = std::max(bufs[it->second].end, end);
        continue;
      }
      aliasOf[static_cast<size_t>(o)] = ValueId(-1);  // the residual got no buffer: one of its own
    }
    bufOf[o] = bufs.size();
    bufs.push_back({o, static_cast<int>(li), end, (bytes + 63) / 64 * 64});
  }
  // Greedy: largest first, lowest offset that overlaps no live buffer placed before.
  std::vector<size_t> order(bufs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return bufs[a].bytes > bufs[b].bytes; });
  std::vector<size_t> placed;
  size_t total = 0;
  for (size_t i : order) {
    Buf& b = bufs[i];
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed) {
      const Buf& p = bufs[j];
      if (p.end < b.begin || b.end < p.begin) continue;
      busy.emplace_back(p.offset, p.offset + p.bytes);
    }
    std::sort(busy.begin(), busy.end());
    size_t off = 0;
    for (const auto& [lo, hi] : busy) {
      if (off + b.bytes <= lo) break;
      off = std::max(off, hi);
    }
    b.offset = off;
    total = std::max(total, off + b.bytes);
    placed.push_back(i);
  }
  if (total == 0) return;
  plan.arena = Storage::allocate(total);
  plan.arenaBytes = total;
  for (const Buf& b : bufs)
    plan.execs[static_cast<size_t>(b.begin)]->useOutputBuffer(plan.arena, b.offset);
  for (size_t li = 0; li < layers.size(); ++li) {
    if (!plan.execs[li] || layers[li].outputs.empty()) continue;
    const ValueId o = layers[li].outputs[0];
    if (aliasOf[static_cast<size_t>(o)] == ValueId(-1)) continue;
    plan.execs[li]->useOutputBuffer(plan.arena, bufs[bufOf.at(baseOf(o))].offset);
  }
}

// Note [Batch split]
// A convolutional net computes each sample of its batch on its own, and oneDNN's convolutions
// run faster per sample at batch 1 than at batch 8 (resnet50's 1x1 convolutions 15-40% per
// image, 1 thread: a sample's activations stay in the core's cache from layer to layer). And
// at batch 8 with 2 threads, every layer is a parallel region ending on a barrier. So when
// every layer of the network keeps dim 0 as a batch of independent samples, a call of batch
// N >= 2 runs sample by sample on plans of batch 1 (Note [Engine plans]), the threads of the
// call splitting the samples between them (each runs its primitives on 1 thread: no barrier
// but the one at the end), and the outputs are stacked along dim 0.
//
// Which layers keep the samples apart is decided by kind, conservatively: convolutions,
// linear matmuls (a weight, rows independent), batch norm (eval), activations, 2-d pools,
// binary ops between two batched values, and the plugins below; a Shape layer, a matmul of two
// values, softmax, layer_norm, quantized layers or any other plugin keep the whole batch. What
// only shapes can tell (a convolution or pool given an unbatched input, a binary op that
// broadcasts a batched value against another rank) is checked on the first sample's plan when
// it is made (sliceShapesOk); if that fails, the engine never splits again.
// TORCHLESS_BATCH_SPLIT=0 turns it off (to compare).
//
// The cut. Sample by sample, a layer reads its weights once per sample; whole, once per batch.
// Early layers (large activations, small weights) gain from the split, late ones (resnet50's
// last stage: 60 MB of weights, 100-400 KB of activations per sample) and the classifier (a
// [1000, 2048] matrix read for a row at a time) lose: resnet50 at batch 8, 1 thread, per-layer
// minima (`bench --profile`, load 5): layer1-2 117.5 ms split against 135.4 whole, layer3
// 106.8 / 102.2, layer4 79.3 / 63.4, fc 2.99 / 0.43. So the samples run only up to the cut:
// the latest point, at or before the first product layer whose weights take
// kWholeBatchWeightBytes or more, where one value crosses from the layers before to the layers
// after (a block's input); each sample's plan (a Head plan) writes that value into one
// tensor of the whole batch, and a plan of the whole batch (the Tail) runs the layers from the
// cut on it. A network with no such layer runs sample by sample to the end, as before.
// TORCHLESS_BATCH_SPLIT=samples takes no cut (to compare).

bool pluginKeepsSamples(const Layer& l) {
  static const std::vector<std::string> kUnary = {"aten::relu",
                                                  "aten::relu_",
                                                  "aten::sigmoid",
                                                  "aten::sigmoid_",
                                                  "aten::silu",
                                                  "aten::silu_",
                                                  "aten::hardswish",
                                                  "aten::hardswish_",
                                                  "aten::hardtanh",
                                                  "aten::hardtanh_",
                                                  "aten::tanh",
                                                  "aten::gelu",
                                                  "aten::max_pool2d",
                                                  "aten::avg_pool2d",
                                                  "aten::adaptive_avg_pool2d",
                                                  "aten::adaptive_max_pool2d",
                                                  "aten::contiguous"};
  static const std::vector<std::string> kBinary = {"aten::mul",  "aten::mul_", "aten::add",
                                                   "aten::add_", "aten::sub",  "aten::div"};
  if (!l.node) return false;
  const std::string k = l.node->kind().toQualString();
  // Static tensors among the arguments could carry a batch dimension of their own.
  for (const auto& a : l.args)
    if (a && a->isTensor()) return false;
  if (std::find(kUnary.begin(), kUnary.end(), k) != kUnary.end()) return true;
  if (std::find(kBinary.begin(), kBinary.end(), k) != kBinary.end()) return true;
  if (k == "aten::flatten")  // flatten(x, start_dim >= 1, end_dim)
    return l.args.size() >= 2 && l.args[1] && l.args[1]->isInt() && l.args[1]->toInt() >= 1;
  return false;
}

bool isBinaryLayer(const Layer& l) {
  if (l.kind == LayerKind::Binary) return true;
  if (l.kind != LayerKind::Plugin || !l.node) return false;
  const std::string k = l.node->kind().toQualString();
  return k == "aten::mul" || k == "aten::mul_" || k == "aten::add" || k == "aten::add_" ||
         k == "aten::sub" || k == "aten::div";
}

// Note [Batch split]: whether every layer keeps dim 0's samples apart, and which values carry
// that dim (`batch`).
bool keepsSamplesApart(const NetworkDefinition& net, std::vector<bool>& batch) {
  batch.assign(net.values().size(), false);
  if (net.inputs().empty() || net.outputs().empty()) return false;
  for (ValueId v : net.inputs()) {
    if (net.values()[static_cast<size_t>(v)].kind != ValueKind::Tensor) return false;
    batch[static_cast<size_t>(v)] = true;
  }
  bool anyProduct = false;
  for (const Layer& l : net.layers()) {
    if (l.kind == LayerKind::Constant) continue;
    bool ok = false;
    switch (l.kind) {
      case LayerKind::Convolution: ok = !l.quantized; break;
      case LayerKind::MatMul: ok = !l.quantized && l.weight.defined(); break;
      case LayerKind::Eltwise:
      case LayerKind::Binary:
      case LayerKind::Pooling:
      case LayerKind::BatchNorm: ok = true; break;
      case LayerKind::Plugin: ok = pluginKeepsSamples(l); break;
      default: ok = false;
    }
    if (!ok) return false;
    anyProduct = anyProduct || l.kind == LayerKind::Convolution;
    // Every value the layer reads is batched (weights live in the layer, not in values).
    for (ValueId in : l.inputs)
      if (!batch[static_cast<size_t>(in)]) return false;
    for (ValueId o : l.outputs) batch[static_cast<size_t>(o)] = true;
  }
  for (ValueId o : net.outputs())
    if (!batch[static_cast<size_t>(o)]) return false;
  return anyProduct;
}

// Note [Batch split]: weights of this size or more make a layer run on the whole batch.
constexpr size_t kWholeBatchWeightBytes = size_t{2} << 20;

// Note [Batch split]: the cut (the first layer that runs on the whole batch; 0: none) and the
// one value `crossing` from the layers before it to the layers from it on.
size_t chooseCut(const NetworkDefinition& net, std::vector<ValueId>& crossing) {
  crossing.clear();
  const auto& layers = net.layers();
  size_t big = layers.size();
  for (size_t li = 0; li < layers.size() && big == layers.size(); ++li) {
    const Layer& l = layers[li];
    if ((l.kind == LayerKind::Convolution || l.kind == LayerKind::MatMul) && l.weight.defined() &&
        l.weight.nbytes() >= kWholeBatchWeightBytes)
      big = li;
  }
  if (big == layers.size()) return 0;
  const size_t nv = net.values().size();
  std::vector<int> def(nv, -1), last(nv, -1);  // -1: an input or a constant; never read
  for (size_t li = 0; li < layers.size(); ++li) {
    const Layer& l = layers[li];
    for (ValueId in : l.inputs)
      last[static_cast<size_t>(in)] = std::max(last[static_cast<size_t>(in)], static_cast<int>(li));
    if (l.kind != LayerKind::Constant)
      for (ValueId o : l.outputs) def[static_cast<size_t>(o)] = static_cast<int>(li);
  }
  for (ValueId o : net.outputs()) last[static_cast<size_t>(o)] = static_cast<int>(layers.size());
  for (size_t k = big; k >= 1; --k) {
    crossing.clear();
    for (size_t v = 0; v < nv && crossing.size() < 2; ++v)
      if (def[v] >= 0 && def[v] < static_cast<int>(k) && last[v] >= static_cast<int>(k))
        crossing.push_back(static_cast<ValueId>(v));
    if (crossing.size() == 1) return k;
  }
  crossing.clear();
  return 0;
}

}  // namespace

// Note [Row bands]
// At batch 1 on 2 threads, each layer is a parallel region of its own, in which oneDNN splits
// the layer's work; a region wakes the other thread and ends on a barrier, and a small layer
// splits badly (mobilenet_v2: 2 threads ran no faster than 1, 3.70 against 3.74 ms; Note
// [Thread budget] keeps its smallest layers on 1 thread). So where consecutive convolutions
// write channels-last batch-1 activations into the plan's arena (reading such activations, or
// the contiguous input of the network), they run as one parallel region for the lot: each
// thread computes a band of every layer's output rows (its own 1-thread primitive: the band's
// input rows, with the padding of the band's edges; a Winograd layer's bands are Winograd too,
// when they have 28 rows or more, else the layer runs whole) and the threads meet on a barrier
// between layers (a band reads its neighbours' rows of the layer before). A fused residual is
// added row by row in the same way. Plugins, matmuls and convolutions that do not fit end a
// segment and run as before. Bands are prepared once the plan runs again (or when it is prepared
// for reuse) and its convolutions are settled (Note [Winograd after reuse]); a band whose input
// differs from the prepared one (not seen: the plan's values keep their layout) is computed whole
// by the reference kernel and the plan stops using bands. Layers of few pixels per band with
// large weights run whole (oneDNN splits them by output channels, half the weights per thread).
// Bands are made for 2 to kMaxRowBands threads (measured on 2 cores only; more threads run a
// layer per region). The segments run once when the bands are made, so that the next call does
// not pay the other threads' first touches of their scratchpads. TORCHLESS_ROW_BANDS=0 turns
// bands off, =N makes N bands whatever the threads (to compare).

// The part of the network a plan runs (Note [Batch split]): all of it; a sample's layers
// before the cut (Head), writing the crossing value into sample `sample` of `stack`; or the
// whole batch's layers from the cut on (Tail), reading it from `stack`.
enum Stage : int64_t { kAll = 0, kHead = 1, kTail = 2 };

// The crossing value of a split batch, stacked along dim 0 as the samples' Head plans write it.
struct CutStack {
  int64_t n = 0;
  std::mutex mu;  // guards the allocation by the first sample done
  Tensor value;

  // Copies sample `i` (sizes [1, ...], strides as its plan laid it out) into the stack, made
  // with the same strides (channels-last stays so) on first use.
  void put(int64_t i, const Tensor& t) {
    const bool dense = t.dim() >= 1 && t.sizes()[0] == 1 && nonOverlappingAndDense(t);
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!value.defined()) {
        IntList sizes = t.sizes(), strides = dense ? t.strides() : contiguousStrides(t.sizes());
        sizes[0] = n;
        if (!strides.empty()) strides[0] = t.numel();
        value = Tensor::fromStorage(Storage::allocate(static_cast<size_t>(n) * t.nbytes()), 0,
                                    sizes, strides, t.dtype());
      }
    }
    Tensor dst = ops::narrow(value, 0, i, 1);
    bool sameLayout = dense;
    for (int64_t d = 1; d < t.dim() && sameLayout; ++d)
      sameLayout = dst.strides()[d] == t.strides()[d];
    if (sameLayout)
      std::memcpy(dst.rawData(), t.rawData(), t.nbytes());
    else
      ops::copyInto(dst, t);
  }

  // PyTorch's is_non_overlapping_and_dense: ordered by stride, each dim of size > 1 steps over
  // exactly the ones before it (contiguous, channels-last and any other permutation).
  static bool nonOverlappingAndDense(const Tensor& t) {
    std::array<int64_t, 8> dims{};
    size_t k = 0;
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (t.sizes()[d] == 1) continue;
      if (k == dims.size()) return false;
      dims[k++] = d;
    }
    std::sort(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(k),
              [&](int64_t a, int64_t b) { return t.strides()[a] < t.strides()[b]; });
    int64_t expected = 1;
    for (size_t j = 0; j < k; ++j) {
      if (t.strides()[dims[j]] != expected) return false;
      expected *= t.sizes()[dims[j]];
    }
    return true;
  }
};

struct PlanCall {
  Stage stage = kAll;
  bool slice = false;  // a sample of a split batch (Note [Batch split])
  CutStack* stack = nullptr;
  int64_t sample = 0;
};

bool Engine::sliceShapesOk(const std::vector<IValue>& slots, size_t numLayers) const {
  // A batched value of a sample's plan: a tensor whose dim 0 has size 1.
  auto sample = [&](ValueId v, Tensor& t) {
    const IValue& x = slots[static_cast<size_t>(v)];
    if (!x.isTensor()) return false;
    t = x.toTensor();
    return t.dim() >= 1 && t.sizes()[0] == 1;
  };
  std::vector<Tensor> ins;
  Tensor t;
  for (size_t li = 0; li < numLayers; ++li) {
    const Layer& l = network_.layers()[li];
    if (l.kind == LayerKind::Constant) continue;
    ins.clear();
    for (ValueId v : l.inputs) {
      if (!sample(v, t)) return false;
      ins.push_back(t);
    }
    for (ValueId v : l.outputs)
      if (!sample(v, t)) return false;
    if (ins.empty()) return false;
    const int64_t d = ins[0].dim();
    // A fused residual of another rank broadcasts across the samples' dims.
    if (l.hasResidual && ins.back().dim() != t.dim()) return false;
    if (l.kind == LayerKind::Convolution && d != l.weight.dim()) return false;
    if ((l.kind == LayerKind::MatMul || l.kind == LayerKind::BatchNorm) && d < 2) return false;
    if (l.kind == LayerKind::Pooling && d != 4) return false;
    if (l.kind == LayerKind::Plugin && l.node) {
      const std::string k = l.node->kind().toQualString();
      if (k.size() > 2 && k.compare(k.size() - 2, 2, "2d") == 0 && d != 4) return false;
    }
    if (isBinaryLayer(l))
      for (const Tensor& x : ins)
        if (x.dim() != d) return false;
  }
  return true;
}

Engine::Engine(NetworkDefinition network, EngineOptions options, bool fused)
    : network_(std::move(network)), options_(std::move(options)) {
  if (!fused) fuseNetwork(network_);
  batchSplit_ = keepsSamplesApart(network_, batchValue_);
  if (batchSplit_) splitCut_ = chooseCut(network_, cutValues_);
  for (Layer& l : network_.layers())
    if (l.kind == LayerKind::Convolution || l.kind == LayerKind::MatMul) {
      l.packed = makePackedWeightCache();
      if (options_.bf16) l.bf16 = true;
    } else if (l.kind == LayerKind::Plugin) {
      l.packed = makePackedWeightCache();  // fused plugin executors (seq_layers.h)
    }
}

Engine::~Engine() = default;

size_t Engine::arenaBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t m = 0;
  for (const auto& p : plans_) m = std::max(m, p->arenaBytes);
  return m;
}

size_t Engine::numPlans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.size();
}

void Engine::checkProfiles(const std::vector<IValue>& inputs) const {
  const auto& ins = network_.inputs();
  if (inputs.size() != ins.size())
    throw Error(fmt::format("the engine takes {} inputs, got {}", ins.size(), inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const NetworkValue& nv = network_.values()[static_cast<size_t>(ins[i])];
    const IValue& v = inputs[i];
    if (nv.kind == ValueKind::Tensor && !v.isTensor())
      throw Error(
          fmt::format("engine input {} (%{}): expected a Tensor, got {}", i, nv.name, v.tagName()));
    if (v.isTensor() && v.toTensor().isNested())  // Note [Nested tensors] in core/tensor.h
      throw Error(
          fmt::format("engine input {} (%{}): a nested tensor cannot enter an engine "
                      "(compile with --torch-executed-op for the ops that take it)",
                      i, nv.name));
    if (!v.isTensor() || i >= options_.profiles.size() || options_.profiles[i].empty()) continue;
    const InputProfile& p = options_.profiles[i];
    const Tensor& t = v.toTensor();
    bool ok = t.dim() == static_cast<int64_t>(p.min.size());
    for (size_t d = 0; ok && d < p.min.size(); ++d)
      ok = p.min[d] <= t.sizes()[d] && t.sizes()[d] <= p.max[d];
    if (!ok)
      throw Error(fmt::format("engine input {} (%{}): size {} is outside the profile {}", i,
                              nv.name, sizesToString(t.sizes()), p.str()));
  }
}

std::shared_ptr<Plan> Engine::acquirePlan(const std::vector<IValue>& inputs, int64_t stage) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& p : plans_) {
    if (p->busy || !sameSignature(p->key, inputs, stage)) continue;
    p->busy = true;
    p->lastUse = ++clock_;
    return p;
  }
  if (plans_.size() >= kMaxPlans) {
    auto lru = std::min_element(plans_.begin(), plans_.end(), [](const auto& a, const auto& b) {
      return (a->busy ? UINT64_MAX : a->lastUse) < (b->busy ? UINT64_MAX : b->lastUse);
    });
    if (!(*lru)->busy) plans_.erase(lru);
  }
  auto p = std::make_shared<Plan>();
  p->key = signatureOf(inputs, stage);
  p->busy = true;
  p->lastUse = ++clock_;
  plans_.push_back(p);
  return p;
}

void Engine::releasePlan(std::shared_ptr<Plan> plan) const {
  std::lock_guard<std::mutex> lock(mu_);
  plan->busy = false;
}

std::vector<IValue> Engine::run(const std::vector<IValue>& inputs) const {
  checkProfiles(inputs);
  if (auto outs = runSplit(inputs)) return std::move(*outs);
  return runPlan(inputs, PlanCall{});
}

std::optional<std::vector<IValue>> Engine::runSplit(const std::vector<IValue>& inputs) const {
  static const char* mode = std::getenv("TORCHLESS_BATCH_SPLIT");
  static const bool enabled = mode == nullptr || std::string(mode) != "0";
  static const bool cutAllowed = mode == nullptr || std::string(mode) != "samples";
  if (!enabled || !batchSplit_ || splitRefused_.load(std::memory_order_relaxed) ||
      omp_in_parallel() || inputs.empty())
    return std::nullopt;
  int64_t n = -1;
  for (const IValue& v : inputs) {
    if (!v.isTensor() || v.toTensor().dim() < 1) return std::nullopt;
    const int64_t b = v.toTensor().sizes()[0];
    if (n >= 0 && b != n) return std::nullopt;
    n = b;
  }
  if (n < 2) return std::nullopt;
  const int threads = static_cast<int>(std::min<int64_t>(ops::getNumThreads(), n));
  std::vector<std::vector<IValue>> outs(static_cast<size_t>(n));
  const bool cut = cutAllowed && splitCut_ > 0;
  CutStack stack;
  stack.n = n;
  std::exception_ptr err;
  std::mutex errMu;
  // Each thread takes the next sample not yet taken and runs it on a plan of batch 1, 1 thread
  // (taken in turn, not in fixed shares: a thread whose core another process holds takes fewer).
  std::atomic<int64_t> next{0};
  auto work = [&] {
    try {
      ops::ThreadLimit one(1);
      std::vector<IValue> in(inputs.size());
      for (int64_t i = next++; i < n; i = next++) {
        for (size_t k = 0; k < inputs.size(); ++k)
          in[k] = IValue(ops::narrow(inputs[k].toTensor(), 0, i, 1));
        outs[static_cast<size_t>(i)] =
            runPlan(in, PlanCall{cut ? kHead : kAll, true, cut ? &stack : nullptr, i});
        if (splitRefused_.load(std::memory_order_relaxed)) return;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(errMu);
      if (!err) err = std::current_exception();
    }
  };
  if (threads <= 1) {
    work();
  } else {
#pragma omp parallel num_threads(threads)
    work();
  }
  // A sample that fails (an unbatched input taken for a batch: a convolution's [C, H, W] is
  // not C samples) or a refusal runs the whole batch instead, which reports its own errors.
  if (err) {
    if (!splitWorked_.load(std::memory_order_relaxed))
      splitRefused_.store(true, std::memory_order_relaxed);
    return std::nullopt;
  }
  if (splitRefused_.load(std::memory_order_relaxed)) return std::nullopt;
  splitWorked_.store(true, std::memory_order_relaxed);
  if (cut) return runPlan(inputs, PlanCall{kTail, false, &stack, 0});
  std::vector<IValue> result;
  for (size_t k = 0; k < outs[0].size(); ++k) {
    const Tensor& first = outs[0][k].toTensor();
    IntList sizes = first.sizes();
    sizes[0] = n;
    Tensor y = Tensor::empty(sizes, first.dtype());
    const size_t bytes = first.nbytes();
    for (size_t i = 0; i < outs.size(); ++i) {
      const Tensor& t = outs[i][k].toTensor();
      TL_INTERNAL_ASSERT(t.sizes() == first.sizes() && t.isContiguous(),
                         "batch split: sample outputs differ in shape");
      std::memcpy(static_cast<char*>(y.rawData()) + i * bytes, t.rawData(), bytes);
    }
    result.emplace_back(std::move(y));
  }
  return result;
}

std::vector<IValue> Engine::runPlan(const std::vector<IValue>& inputs, const PlanCall& call) const {
  std::shared_ptr<Plan> plan = acquirePlan(inputs, call.stage);
  struct Release {
    const Engine* e;
    std::shared_ptr<Plan>& p;
    ~Release() {
      // Drop this call's tensors (inputs, plugin outputs) so nothing outlives the call.
      for (size_t i = 0; i < p->slots.size(); ++i)
        if (!p->persistent[i]) p->slots[i] = IValue();
      e->releasePlan(p);
    }
  } release{this, plan};

  const auto& layers = network_.layers();
  const auto& ins = network_.inputs();
  // The layers this plan runs (Note [Batch split]); constants are set in every plan.
  const size_t from = call.stage == kTail ? splitCut_ : 0;
  const size_t to = call.stage == kHead ? splitCut_ : layers.size();
  auto seed = [&] {
    if (call.stage == kTail) plan->slots[static_cast<size_t>(cutValues_[0])] = call.stack->value;
  };
  OpObserver* obs = opObserver();
  using Clock = std::chrono::steady_clock;
  // "Convolution at code/m.py:3:4", "Plugin aten::mul at ...": the kind (a plugin's op), the
  // executor's fused path when it has one ("Plugin aten::lstm (fused lstm)") and place.
  auto spanDetail = [](const Layer& l, const LayerExec* e) {
    std::string d = toString(l.kind);
    if (l.node && (l.kind == LayerKind::Plugin || l.kind == LayerKind::Shape))
      d += " " + l.node->kind().toQualString();
    if (const char* f = e ? e->fusedPath() : nullptr) d += fmt::format(" ({})", f);
    return l.place.empty() ? d : fmt::format("{} at {}", d, l.place);
  };
  if (!plan->prepared) {
    BuildSpan planSpan("engine plan", fmt::format("{} layers", layers.size()));
    plan->slots.assign(network_.values().size(), IValue());
    plan->persistent.assign(network_.values().size(), false);
    plan->execs.clear();
    plan->execs.resize(layers.size());
    for (size_t i = 0; i < ins.size(); ++i) plan->slots[static_cast<size_t>(ins[i])] = inputs[i];
    seed();
    for (size_t li = 0; li < layers.size(); ++li) {
      const Layer& l = layers[li];
      try {
        if (l.kind == LayerKind::Constant) {
          plan->slots[static_cast<size_t>(l.outputs[0])] = l.constant;
          plan->persistent[static_cast<size_t>(l.outputs[0])] = true;
          continue;
        }
        if (li < from || li >= to) continue;
        const Clock::time_point t0 = obs ? Clock::now() : Clock::time_point();
        std::unique_ptr<LayerExec> e = makeLayerExec(l, plan->slots);
        e->run(plan->slots);
        if (obs) obs->onSpan("build", l.name, spanDetail(l, e.get()), t0, Clock::now());
        if (l.kind == LayerKind::Shape) {  // evaluated once per signature
          for (ValueId o : l.outputs) plan->persistent[static_cast<size_t>(o)] = true;
          continue;
        }
        plan->execs[li] = std::move(e);
      } catch (Error& err) {
        err.withPlace(l.place);
        err.addContext(fmt::format("in engine layer '{}' ({})", l.name, toString(l.kind)));
        throw;
      }
    }
    if (call.slice && !sliceShapesOk(plan->slots, to))
      splitRefused_.store(true, std::memory_order_relaxed);  // Note [Batch split]
    planMemory(network_, *plan);
    plan->prepared = true;
  } else {
    for (size_t i = 0; i < ins.size(); ++i) plan->slots[static_cast<size_t>(ins[i])] = inputs[i];
    seed();
    for (size_t li = from; li < to; ++li) {
      LayerExec* e = plan->execs[li].get();
      if (!e) continue;
      if (plan->bands > 0 && plan->segmentEnd[li] > li) {
        li = runBands(*plan, li, obs != nullptr) - 1;
        continue;
      }
      try {
        if (obs) [[unlikely]] {
          const Clock::time_point t0 = Clock::now();
          e->run(plan->slots);
          obs->onSpan("layer", layers[li].name, spanDetail(layers[li], e), t0, Clock::now());
        } else {
          e->run(plan->slots);
        }
      } catch (Error& err) {
        const Layer& l = layers[li];
        err.withPlace(l.place);
        err.addContext(fmt::format("in engine layer '{}' ({})", l.name, toString(l.kind)));
        throw;
      }
    }
  }
  if (call.stage == kHead) {  // the crossing value leaves before the plan is free again
    call.stack->put(call.sample, plan->slots[static_cast<size_t>(cutValues_[0])].toTensor());
    return {};
  }
  ++plan->runs;
  std::vector<IValue> outs;
  outs.reserve(network_.outputs().size());
  for (ValueId o : network_.outputs()) {
    IValue v = plan->slots[static_cast<size_t>(o)];
    if (v.isTensor()) {
      const Tensor& t = v.toTensor();
      // The one reorder of the engine: channels-last intermediates leave contiguous; nothing
      // returned may point into the arena or at a constant.
      const bool inArena =
          plan->arena.nbytes() > 0 && t.storage().unsafeGetImpl() == plan->arena.unsafeGetImpl();
      const bool isConstant = plan->persistent[static_cast<size_t>(o)];
      if (inArena || isConstant)
        v = IValue(t.clone());
      else if (!t.isContiguous())
        v = IValue(t.contiguous());
    }
    outs.push_back(std::move(v));
  }
  if (plan->bands == 0 && call.stage == kAll && !call.slice) {
    prepareBands(*plan);
    // Note [Row bands]: the segments run once more here (the call's outputs are taken), so that
    // the next call does not pay the other threads' first touches of their scratchpads and
    // buffers (resnet50: its first call in bands took 2x the next). Their values are dropped.
    try {
      for (size_t li = 0; plan->bands > 0 && li < layers.size(); ++li)
        if (plan->segmentEnd[li] > li) li = runBands(*plan, li, false) - 1;
    } catch (const std::exception&) {
      plan->bands = -1;
    }
  }
  return outs;
}

// Note [Row bands]: measured on 2 cores only; with more threads than this, a layer per region.
constexpr int kMaxRowBands = 4;

void Engine::prepareBands(Plan& plan) const {
  // TORCHLESS_ROW_BANDS: 0 none; N >= 2 that many bands whatever the threads (to compare).
  static const int forced = [] {
    const char* v = std::getenv("TORCHLESS_ROW_BANDS");
    return v == nullptr ? -1 : std::atoi(v);
  }();
  const int threads = ops::getNumThreads();
  const int bands = forced >= 2 ? forced : threads;
  if (forced == 0 || bands < 2 || (forced < 2 && threads > kMaxRowBands) || omp_in_parallel()) {
    plan.bands = -1;
    return;
  }
  if (plan.runs < 2 && !buildingForReuse()) return;  // a one-shot call pays nothing
  for (const auto& e : plan.execs)
    if (e && !e->settled()) return;  // again after the next call
  const auto& layers = network_.layers();
  plan.segmentEnd.assign(layers.size(), 0);
  bool any = false;
  size_t start = layers.size();  // the open segment's first layer
  for (size_t li = 0; li <= layers.size(); ++li) {
    LayerExec* e = li < layers.size() ? plan.execs[li].get() : nullptr;
    if (li < layers.size() && !e) continue;  // constants, shapes: nothing runs
    const bool banded = e && e->prepareBands(plan.slots, bands);
    if (banded && start == layers.size()) start = li;
    if (!banded && start != layers.size()) {
      plan.segmentEnd[start] = li;
      any = true;
      start = layers.size();
    }
  }
  plan.bands = any ? bands : -1;
}

size_t Engine::runBands(Plan& plan, size_t begin, bool observe) const {
  const size_t end = plan.segmentEnd[begin];
  const auto& layers = network_.layers();
  OpObserver* obs = observe ? opObserver() : nullptr;
  using Clock = std::chrono::steady_clock;
  const int bands = plan.bands;
  std::exception_ptr err;
  size_t errLayer = begin;
  std::atomic<bool> failed{false};
#pragma omp parallel num_threads(std::min(bands, ops::getNumThreads()))
  {
    // Fewer threads than bands (a nested or limited team): each takes every nt-th band.
    const int nt = omp_get_num_threads(), tid = omp_get_thread_num();
    Clock::time_point t0 = obs && tid == 0 ? Clock::now() : Clock::time_point();
    for (size_t li = begin; li < end; ++li) {
      LayerExec* e = plan.execs[li].get();
      if (!e) continue;
      if (!failed.load(std::memory_order_relaxed)) {
        try {
          for (int b = tid; b < bands; b += nt) e->runBand(plan.slots, b);
        } catch (...) {
#pragma omp critical(torchless_row_bands)
          if (!failed.exchange(true)) {
            err = std::current_exception();
            errLayer = li;
          }
        }
      }
#pragma omp barrier
      if (obs && tid == 0) {
        const Clock::time_point t1 = Clock::now();
        const Layer& l = layers[li];
        std::string d = toString(l.kind);
        if (const char* f = e->fusedPath()) d += fmt::format(" ({})", f);
        d += " (row bands)";
        obs->onSpan("layer", l.name, l.place.empty() ? d : d + " at " + l.place, t0, t1);
        t0 = t1;
      }
    }
  }
  for (size_t li = begin; li < end; ++li)
    if (plan.execs[li] && plan.execs[li]->bandsMissed()) plan.bands = -1;
  if (err) {
    const Layer& l = layers[errLayer];
    try {
      std::rethrow_exception(err);
    } catch (Error& e) {
      e.withPlace(l.place);
      e.addContext(fmt::format("in engine layer '{}' ({})", l.name, toString(l.kind)));
      throw;
    }
  }
  return end;
}

}  // namespace torchless::engine
