#pragma once
// The serialized form of an engine, as a compiled archive holds it (the state of the TorchBind
// object `__torch__.torch.classes.torchless.Engine`, runtime/torchbind.h):
//   version   kEngineRecordVersion when written;
//   network   the fused network definition as JSON: values, layers with their parameters,
//             weights as indices into `weights`, plugin layers as indices of their nodes;
//   graph     the segment's graph as PyTorch's graph text, its tensor constants turned into
//             trailing graph inputs `%weight_<k>` (the graph the engine was converted from);
//   weights   the tensors: the graph's constants first, then the layers' own (folded) ones.
// Loading rebuilds the layers from `network` without running the converters again. A record
// of another version, or one whose network does not parse, is rebuilt from `graph` with a
// warning: the graph is kept for exactly that.

#include "convert/engine/engine.h"

#include <memory>
#include <string>
#include <vector>

namespace torchless::engine {

/// Bumped whenever the meaning of `network` changes; records of earlier versions still read.
/// 2: int8 layers (`quantized`, `out_scale`, `out_zero_point`), packed params in the graph.
inline constexpr int64_t kEngineRecordVersion = 2;

/// See the header comment.
struct EngineRecord {
  int64_t version = kEngineRecordVersion;
  std::string network;
  std::string graph;
  std::vector<Tensor> weights;
  /// The profiles, one per input: "[(1,3,224,224);(4,3,224,224);(8,3,224,224)]" or "[any]".
  std::vector<std::string> profiles;
};

/// The record of a built engine.
EngineRecord serializeEngine(const Engine& engine);

/// Rebuilds an engine from its record. A stale version or a network that does not parse
/// falls back to converting `graph` again, and `warning` (when given) says why. Throws
/// torchless::Error naming the problem when the graph itself cannot be read or converted.
std::shared_ptr<Engine> deserializeEngine(const EngineRecord& record,
                                          std::string* warning = nullptr);

/// Parses a profile as InputProfile::str() writes it, or Torch-TensorRT's spelling
/// "[(1,3,224,224);(4,3,224,224);(8,3,224,224)]" (min;opt;max); "[any]" is empty. Throws
/// torchless::Error saying what is wrong ("min 8 > max 4 in dimension 0").
InputProfile parseProfile(const std::string& text);

}  // namespace torchless::engine
