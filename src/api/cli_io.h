#pragma once
// Method inputs from command-line words and method outputs to files, as
// ../shared/docs/cli.md specifies for `torchless run` (and export/compile/bench/trace).
//
// Inputs: each word is one argument, in order: `x.npy` is a tensor; `13`, `-2.5`, `true`,
// `false`, `none` are literals; any other word is a str. A `Tuple[T1, ..., Tn]` parameter takes
// the next n words; `List[Tensor]` takes `@list:a.npy,b.npy`; `Dict[str, Tensor]` takes
// `@dict:name=a.npy,other=b.npy`. Missing trailing arguments take their defaults.
//
// Outputs: flattened depth-first into out0.npy, out1.npy ...: a tensor is one output; tuples
// and lists element by element; dicts by sorted key; int/float/bool as 0-d arrays; str as
// outN.txt; None skipped; script objects by attribute in declaration order.

#include "core/ivalue.h"
#include "core/type.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace torchless {

/// One parameter of the method being called (self excluded).
struct ParamSpec {
  std::string name;
  TypePtr type;
  std::optional<IValue> defaultValue;
};

/// Reads a tensor from a .npy path (injected so this file does not depend on the reader).
using TensorLoader = std::function<Tensor(const std::string& path)>;

/// Converts INPUT words into arguments for `params`. Throws torchless::Error naming the
/// parameter for a wrong count, a literal of the wrong kind, or a malformed @list:/@dict:.
std::vector<IValue> parseInputs(const std::vector<std::string>& words,
                                const std::vector<ParamSpec>& params, const TensorLoader& load);

/// One flattened output value: a tensor, a 0-d number tensor, or a string.
struct FlatOutput {
  std::string fileName;  // out0.npy, out3.txt
  std::optional<Tensor> tensor;
  std::optional<std::string> text;
};

/// Flattens a method result in cli.md's order and names the files.
std::vector<FlatOutput> flattenOutputs(const IValue& result);

/// "out0.npy: float32 [1, 4]" — the line `run` prints per output.
std::string describeOutput(const FlatOutput& out);

}  // namespace torchless
