#pragma once
// What a layer becomes for one input signature (Note [Engine plans] in engine.h): oneDNN
// primitives with their memory objects for native layers, the node's kernel for plugin and
// shape layers.

#include "convert/engine/network.h"
#include "core/ivalue.h"
#include "core/storage.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <vector>

namespace torchless::engine {

/// One prepared layer. run() reads its inputs from `slots` (one IValue per network value) and
/// writes its outputs there; after the first run it allocates nothing but what a plugin's
/// kernel allocates, or the layer's output when no arena buffer was given.
class LayerExec {
 public:
  virtual ~LayerExec() = default;
  virtual void run(std::vector<IValue>& slots) = 0;
  /// True when the output is a fresh tensor this layer writes (arena-plannable).
  virtual bool ownsOutput() const { return false; }
  /// Bytes of the output's storage (valid after the first run) when ownsOutput().
  virtual size_t outputBytes() const { return 0; }
  /// From now on, write the output into `arena` at byte `offset` (same sizes and strides as
  /// the first run's output).
  virtual void useOutputBuffer(const Storage& arena, size_t offset) { (void)arena, (void)offset; }
  /// True when the output starts as a copy of the residual input (a oneDNN sum post-op), so
  /// that the output may be given the residual's own buffer when nothing reads the residual
  /// afterwards (Note [Residual in place] in engine.cpp): the copy is then skipped.
  virtual bool sumsIntoOutput() const { return false; }
  /// What runs the layer when it is not the layer kind's usual path ("fused attention",
  /// "fused lstm"): reported beside the layer's kind in profiles; null otherwise.
  virtual const char* fusedPath() const { return nullptr; }
  /// False while the layer may still change how it runs (a Winograd primitive still to be
  /// built: Note [Winograd after reuse] in layer_exec.cpp); row bands wait for that.
  virtual bool settled() const { return true; }
  /// Note [Row bands] in engine.cpp: prepares the layer to run as `bands` bands of its output
  /// rows, each on its own thread, for the values its inputs have now in `slots` (after the
  /// memory plan). False when it cannot (the layer then runs whole).
  virtual bool prepareBands(const std::vector<IValue>& slots, int bands) {
    (void)slots, (void)bands;
    return false;
  }
  /// Runs band `band` of the layer (after prepareBands); called at once on distinct threads for
  /// distinct bands, which together do what run() does. Band 0 stores the output in `slots`.
  /// Changes nothing the other bands read: inputs unlike the prepared ones are computed whole
  /// by band 0 and reported by bandsMissed().
  virtual void runBand(std::vector<IValue>& slots, int band) {
    if (band == 0) run(slots);
  }
  /// True when a runBand() since prepareBands() found inputs unlike the prepared ones.
  virtual bool bandsMissed() const { return false; }
};

/// True on a thread making plans for calls that will come again (BuildForReuse is alive).
bool buildingForReuse();

/// While one is alive on a thread, engine plans made on that thread are for calls that will
/// come again (Module::prepare): Winograd convolutions are built at once rather than after
/// the plan's reuse (Note [Winograd after reuse] in layer_exec.cpp).
class BuildForReuse {
 public:
  BuildForReuse();
  ~BuildForReuse();
  BuildForReuse(const BuildForReuse&) = delete;
  BuildForReuse& operator=(const BuildForReuse&) = delete;

 private:
  bool previous_;
};

/// An empty cache of reordered weights for one Convolution or MatMul layer.
std::shared_ptr<PackedWeightCache> makePackedWeightCache();

/// The node's CPU kernel as an executor (plugin layers). Throws torchless::Error when the
/// node has no kernel.
std::unique_ptr<LayerExec> makeKernelExec(const Layer& layer);

/// Weights `w` (plain, described by `userMd`) reordered into `md` (a primitive's chosen
/// layout) once per layer, `slot` (which of the layer's weights) and layout, shared by all
/// plans of the engine (layer.packed, which must be set).
dnnl::memory packedWeights(const Layer& layer, int slot, const dnnl::memory::desc& userMd,
                           const dnnl::memory::desc& md, const void* w);

/// Prepares `layer` against the values its inputs have now in `slots`. Throws
/// torchless::Error when a plugin's node has no kernel.
std::unique_ptr<LayerExec> makeLayerExec(const Layer& layer, const std::vector<IValue>& slots);

}  // namespace torchless::engine
