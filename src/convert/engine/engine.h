#pragma once
// Engine: a fused NetworkDefinition ready to run (TensorRT's ICudaEngine + execution context,
// on the CPU with oneDNN).
//
// Note [Engine plans]
// An engine is built for a family of input shapes (the profiles). Each distinct input
// signature (dtypes, sizes, and the values of non-tensor inputs) gets a Plan, made on the first
// call with that signature ("build on the first call"): every layer is prepared with the
// shapes it actually sees (oneDNN primitives created, constant weights reordered into the
// primitive's layout once and shared by all plans), shape values are evaluated once, and the
// intermediates of native layers are placed in one arena, buffers reused by liveness. A later
// call with the same signature only executes the prepared layers: it allocates nothing but
// the outputs it returns (plugin layers allocate what their kernels allocate). Plans are cached
// (at most kMaxPlans signatures, least recently used dropped); calls from several threads at
// once each take a free plan of their signature or make one.
//
// Activations between convolutions stay channels-last (NHWC strides, a valid strided Tensor
// that every kernel reads); outputs are made contiguous, the engine's one reorder.

#include "convert/engine/network.h"
#include "core/ivalue.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace torchless::engine {

/// The allowed sizes of one tensor input: min <= sizes <= max dimension by dimension; opt is
/// the shape a build favours. An empty profile (no dims) accepts any shape.
struct InputProfile {
  IntList min, opt, max;
  bool empty() const { return min.empty(); }
  /// "[(1,3,224,224);(4,3,224,224);(8,3,224,224)]", Torch-TensorRT's spelling.
  std::string str() const;
};

/// Engine options (Torch-TensorRT's CompileSpec, the parts that shape an engine).
struct EngineOptions {
  /// One profile per engine input (empty profiles accept any shape).
  std::vector<InputProfile> profiles;
  /// Convolutions and matrix products in bfloat16 (CPUs with AVX512-BF16 or AMX); the
  /// other layers and every result between layers stay float32.
  bool bf16 = false;
};

struct Plan;
struct PlanCall;

/// A built engine. Thread-safe: run() may be called from several threads at once.
class Engine {
 public:
  /// Takes a converted network; fuses it (fuse.cpp) unless `fused` (a network read back from
  /// an engine record, engine_record.h).
  Engine(NetworkDefinition network, EngineOptions options = {}, bool fused = false);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Runs the network on `inputs` (one per network input: tensors, or ints/floats/bools for
  /// shape values) and returns one value per network output (contiguous tensors, or shape
  /// values). Throws torchless::Error for a wrong input count or kind, or a shape outside an
  /// input's profile ("engine input 0 (%x.1): size [9, 3, 224, 224] is outside the profile
  /// [(1,3,224,224);(4,3,224,224);(8,3,224,224)]"); kernel errors carry the layer's name.
  std::vector<IValue> run(const std::vector<IValue>& inputs) const;

  const NetworkDefinition& network() const { return network_; }
  const EngineOptions& options() const { return options_; }
  /// Bytes of the largest arena any plan made so far uses (the memory plan's size).
  size_t arenaBytes() const;
  /// Number of cached plans.
  size_t numPlans() const;

  /// At most this many input signatures keep a plan.
  static constexpr size_t kMaxPlans = 16;

 private:
  void checkProfiles(const std::vector<IValue>& inputs) const;
  std::shared_ptr<Plan> acquirePlan(const std::vector<IValue>& inputs, int64_t stage) const;
  std::vector<IValue> runPlan(const std::vector<IValue>& inputs, const PlanCall& call) const;
  std::optional<std::vector<IValue>> runSplit(const std::vector<IValue>& inputs) const;
  bool sliceShapesOk(const std::vector<IValue>& slots, size_t numLayers) const;
  // Note [Row bands] in engine.cpp: prepares the plan's band segments (after a call, with its
  // values in the slots), and runs the segment starting at `begin` (its layers reported to the
  // op observer when `observe`), returning its end.
  void prepareBands(Plan& plan) const;
  size_t runBands(Plan& plan, size_t begin, bool observe) const;
  void releasePlan(std::shared_ptr<Plan> plan) const;

  NetworkDefinition network_;
  EngineOptions options_;
  mutable std::mutex mu_;
  mutable std::vector<std::shared_ptr<Plan>> plans_;  // most recently used last
  mutable uint64_t clock_ = 0;
  // Note [Batch split] in engine.cpp: every layer computes each sample of dim 0 on its own
  // (by kind; checked again on the first sample's plan), and which values carry that dim.
  bool batchSplit_ = false;
  std::vector<bool> batchValue_;
  // Note [Batch split]: layers from splitCut_ on run on the whole batch, given the samples'
  // cutValues_ stacked (0: every layer runs sample by sample).
  size_t splitCut_ = 0;
  std::vector<ValueId> cutValues_;
  mutable std::atomic<bool> splitRefused_{false}, splitWorked_{false};
};

/// Folds and fuses a converted network in place (fuse.cpp): batch_norm into the convolution
/// before it, then a residual add and one activation into convolutions and matmuls whose
/// intermediate result has no other reader. Returns the number of layers fused away.
size_t fuseNetwork(NetworkDefinition& network);

}  // namespace torchless::engine
