#pragma once
// Partitioning (Torch-TensorRT's core/partitioning): the runs of nodes an engine can take
// become engines, called from the graph by one `torchless::execute_engine` node each; the rest
// stays in the interpreter. prim::If and prim::Loop run in the interpreter, their bodies are
// partitioned in turn.
//
//   %y = aten::_convolution(%x, ...)              %y = torchless::execute_engine[engine=...](%x)
//   %z = aten::relu_(%y)                  ==>
//   %r = aten::add(%z, %x, %one)                  (the segment's graph is kept in the engine)
//
// A segment is a run of consecutive nodes of one block that all have engine converters (or
// only constant inputs), minus the ops the user keeps in the interpreter. Its inputs are the
// values it reads from outside (tensors, ints, floats, bools; constants are copied in), its
// outputs the values it defines that are read after it. A run is cut where a node would read a
// value of another kind from outside, and a node whose list or dict result is read outside the
// run stays in the interpreter (containers are shared, engines never hand them out). Runs with
// fewer than min_block_size nodes stay in the interpreter.

#include "convert/engine/engine.h"
#include "convert/preflight.h"
#include "ir/ir.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace torchless::engine {

/// Torch-TensorRT's partitioning options.
struct PartitionOptions {
  /// Runs with fewer nodes (constants not counted) stay in the interpreter.
  size_t minBlockSize = 3;
  /// Ops kept in the interpreter: full schemas or names with overload ("aten::add.Tensor") or
  /// bare names ("aten::add", every overload).
  std::vector<std::string> torchExecutedOps;
  /// Throw (listing every node the engine cannot take, with its place) unless the whole
  /// graph becomes one engine.
  bool requireFullCompilation = false;
  /// Only tensors cross engine boundaries (what a compiled archive's Tensor[] -> Tensor[]
  /// execute_engine can carry); otherwise ints, floats and bools may too.
  bool tensorBoundaries = false;
  /// Engines run convolutions and matrix products in bfloat16 (EngineOptions::bf16).
  bool bf16 = false;
  /// Shape profiles of graph inputs (by graph input index); engines reading them check them.
  std::unordered_map<size_t, InputProfile> inputProfiles;
};

/// One segment of the partitioned graph.
struct SegmentReport {
  bool engine = false;
  size_t numNodes = 0;
  std::string place;   // where its first node is
  std::string reason;  // why it stays in the interpreter ("" for engines)
  std::string layers;  // the engine's layer summary ("Convolution 53, Plugin 4")
  size_t fusedAway = 0;
  size_t numInputs = 0, numOutputs = 0;
  std::shared_ptr<Engine> built;  // the engine (engines only)
};

/// What partitionGraph did.
struct PartitionReport {
  std::vector<SegmentReport> segments;
  /// Nodes the engine cannot take, with their places (for --check-method-support).
  std::vector<convert::UnsupportedOp> unsupported;
  /// Nodes that only pack the method's outputs or unpack its tuple inputs: they run in the
  /// interpreter as the calling convention, not as a segment.
  size_t packingNodes = 0;
  size_t numEngines() const;
  size_t numInterpreterSegments() const;
  /// A human-readable report: one line per segment, then the unsupported ops.
  std::string str() const;
};

/// The nodes of `graph` (nested blocks included) the engine cannot take, under `options`.
std::vector<convert::UnsupportedOp> findEngineUnsupported(const Graph& graph,
                                                          const PartitionOptions& options);

/// Rewrites `graph` in place: each engine segment becomes a torchless::execute_engine node.
/// Throws torchless::UnsupportedError with every unsupported node when
/// options.requireFullCompilation and something stays in the interpreter. A segment whose
/// conversion fails stays in the interpreter with the error as its reason.
PartitionReport partitionGraph(Graph& graph, const PartitionOptions& options = {});

/// The Symbol of the engine node and its attribute.
Symbol executeEngineSymbol();
Symbol engineAttribute();
/// The engine an execute_engine node runs (null when the node has none).
std::shared_ptr<Engine> engineOf(const Node& node);

/// Registers the interpreter's kernel for torchless::execute_engine nodes (once).
void registerEngineKernel();

}  // namespace torchless::engine
