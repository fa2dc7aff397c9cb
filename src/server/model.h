#pragma once
// A served model: its configuration (Triton's model configuration, as config.json), its
// instances (one loaded, optionally compiled, torchless::Module each), and the conversion of
// v2 tensors into forward's arguments and of forward's result into v2 outputs.
//
// Note [Model repository]
// The repository is laid out as Triton's:
//   REPOSITORY/NAME/config.json      optional
//   REPOSITORY/NAME/VERSION/model.pt VERSION a positive integer; the highest is served
// config.json uses Triton's field names (its model configuration in JSON):
//   {"max_batch_size": 8,                 0: no batch dimension (the default)
//    "input":  [{"name": "x", "data_type": "TYPE_FP32", "dims": [3, 224, 224]}],
//    "output": [{"name": "logits", "data_type": "TYPE_FP32", "dims": [1000]}],
//    "instance_group": [{"count": 2}],    model instances (default 1)
//    "dynamic_batching": {"max_queue_delay_microseconds": 500,
//                         "default_queue_policy": {"default_timeout_microseconds": 100000,
//                                                  "allow_timeout_override": true}},
//    "threads": 1,                        per instance (default: the budget shared out)
//    "max_queue_size": 64,                requests waiting (default: --max-queue)
//    "compile": {"precision": "fp32", "min_block_size": 3}}   torchless::compile at load
// data_type takes Triton's TYPE_FP32 or the protocol's FP32 (TYPE_STRING is BYTES); dims
// exclude the batch dimension when max_batch_size > 0, and -1 marks a free dimension. Input
// names are forward's parameters in order (the config may rename them); outputs are the result
// flattened as `torchless run` writes them, named output__0, output__1 ... unless configured.
// default_queue_policy follows Triton: requests time out after default_timeout_microseconds
// (Note [Serving execution]); a request's own `timeout` parameter may shorten it only when
// allow_timeout_override is true. Without a default, a request's `timeout` applies as given.
// Without config.json nothing declares dtypes or shapes (TorchScript keeps neither): any
// datatype is accepted and metadata says FP32 with shape [-1].

#include "api/module.h"
#include "server/protocol.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torchless::serve {

/// One input or output as the configuration declares it (or as forward's types give it).
struct TensorSpec {
  std::string name;
  std::string datatype;       // "" when not declared
  std::vector<int64_t> dims;  // without the batch dimension; empty + !hasDims: not declared
  bool hasDims = false;
};

/// A model's configuration (Note [Model repository]).
struct ModelConfig {
  int64_t maxBatchSize = 0;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  int instances = 1;
  int threads = 0;
  bool dynamicBatching = false;
  int64_t maxQueueDelayUs = 0;
  int64_t defaultTimeoutUs = 0;  // 0: none
  bool allowTimeoutOverride = false;
  int64_t maxQueueSize = 0;
  bool compile = false;
  std::string precision = "fp32";
  int64_t minBlockSize = 3;
};

/// Parses config.json's text. Throws torchless::Error naming `place` and the key for
/// malformed JSON, unknown keys, wrong types and out-of-range values.
ModelConfig parseModelConfig(const std::string& text, const std::string& place);

/// Where one model comes from.
struct ModelSource {
  std::string name;
  std::string version;  // "1" for --model NAME=path.pt
  std::string path;     // the .pt archive
  ModelConfig config;
};

/// Finds the models of a Triton-style repository (Note [Model repository]). Throws
/// torchless::Error naming the directory or file for a missing repository, a model with no
/// version holding model.pt, or a bad config.json.
std::vector<ModelSource> scanRepository(const std::string& repository);
/// One model directory of a repository (its highest version, its config.json). Throws
/// torchless::Error naming the directory or file, as scanRepository.
ModelSource scanModel(const std::string& dir);
/// The model directories of a repository with their highest version holding model.pt ("" when
/// none), without reading configs. Throws nothing; an unreadable repository lists nothing.
std::vector<std::pair<std::string, std::string>> listRepository(const std::string& repository);

/// A loaded model: its instances and its calling convention.
class ServedModel {
 public:
  /// Loads `threads`-thread instances... (the instances are loaded by load()).
  explicit ServedModel(ModelSource source);

  /// Loads config.instances instances (compiling each when configured). Throws torchless::Error.
  void load();
  /// When every input is a tensor of declared datatype and fixed dims (Triton's model_warmup,
  /// implied), runs each instance once on zeros of batch 1 (of every batch size up to
  /// max_batch_size, at most 16, with dynamic batching), so that the first request does
  /// not pay for building the execution plan. The calls run on `threads` threads, the count
  /// requests run with (the calling thread keeps it): engines plan per thread count, and a
  /// warm-up at the loading thread's count left the first request to plan again.
  /// Returns "" or why a warm-up call failed (the model may refuse zeros; that is not a load
  /// error). Returns "" at once when it cannot.
  std::string warmUp(int threads);

  const std::string& name() const { return source_.name; }
  const std::string& version() const { return source_.version; }
  const ModelConfig& config() const { return source_.config; }
  const std::string& path() const { return source_.path; }
  bool ready() const { return ready_.load(); }
  void setReady(bool r) { ready_ = r; }
  size_t instanceCount() const { return instances_.size(); }
  const Module& instance(size_t i) const { return instances_[i]; }
  /// True when requests may be batched together: max_batch_size > 0, dynamic_batching, the
  /// first parameter a tensor and the others tensors, numbers, bools or None.
  bool batchable() const;

  ModelMetadata metadata() const;

  /// forward's arguments from a request's inputs: by name, each checked against its
  /// parameter's type and the declared datatype and shape. Throws ServeError(BadRequest)
  /// naming the input.
  std::vector<IValue> bindInputs(const InferRequest& request) const;
  /// The batch size of bound arguments (dim 0 of the first tensor), 0 when not batchable.
  int64_t batchSize(const std::vector<IValue>& args) const;
  /// The rows of one request's bound arguments (dim 0 of the first tensor) when the model has
  /// a batch dimension (max_batch_size > 0), batched or not; else 0. For the request log.
  int64_t requestRows(const std::vector<IValue>& args) const;
  /// forward's result as named outputs (all, or the requested ones in request order).
  /// Throws ServeError(BadRequest) for an unknown requested output, (Internal) for a result
  /// v2 cannot carry.
  std::vector<WireTensor> outputsOf(const IValue& result, const InferRequest& request) const;

 private:
  void resolveSignature();
  ModelSource source_;
  std::vector<Module> instances_;
  std::vector<ParamSpec> params_;
  std::vector<TensorSpec> inputs_;   // one per parameter, in order
  std::vector<TensorSpec> outputs_;  // as far as the return type tells
  std::atomic<bool> ready_{false};
};

}  // namespace torchless::serve
