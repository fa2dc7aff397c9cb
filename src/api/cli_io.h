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
// and lists element by element (a List[str] is one outN.txt, a line per element); dicts by
// sorted key; int/float/bool as 0-d arrays; str as outN.txt; None skipped; script objects by
// attribute in declaration order.

#include "api/module.h"
#include "core/ivalue.h"
#include "core/type.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace torchless {

/// Reads a tensor from a .npy path (injected so this file does not depend on the reader).
using TensorLoader = std::function<Tensor(const std::string& path)>;

/// Converts INPUT words into arguments for `params`. Throws torchless::Error naming the
/// parameter for a wrong count, a literal of the wrong kind, or a malformed @list:/@dict:.
std::vector<IValue> parseInputs(const std::vector<std::string>& words,
                                const std::vector<ParamSpec>& params, const TensorLoader& load);

/// A tensor input given by its shape instead of a file (cli.md "Inputs"; trtexec's --shapes,
/// onnxruntime_perf_test's -I): `1x3x224x224`, `1x128:int64`, `2x3:float32:zeros`. Sizes are
/// non-negative ints separated by `x` (`scalar` is a 0-d tensor); the dtype is a Python dtype
/// name (float32 by default); the fill is `random` (default), `zeros` or `ones`.
struct InputSpec {
  std::vector<int64_t> sizes;
  ScalarType dtype = ScalarType::Float;
  enum class Fill { Random, Zeros, Ones } fill = Fill::Random;
};

/// Parses an input spec. Throws torchless::Error quoting the spec and what is wrong; refuses
/// more than 2^31 elements (a spec is typed by hand, so more is a typo, not a model).
InputSpec parseInputSpec(const std::string& spec);

/// The tensor of a spec. Random values come from std::mt19937_64 seeded with `seed`:
/// uniform in [0, 1) for floating dtypes (as torch.rand), integers in [0, 10) for integer
/// dtypes (valid ids for any embedding of 10 rows or more), 0/1 for bool.
Tensor tensorFromSpec(const InputSpec& spec, uint64_t seed);

/// The word standing for the k-th `--input` tensor among INPUT words ("@input:k");
/// parseInputs passes it to the TensorLoader like a .npy path.
std::string inputSpecWord(size_t k);

/// One flattened output value: a tensor, a 0-d number tensor, or a string.
struct FlatOutput {
  std::string fileName;  // out0.npy, out3.txt
  std::optional<Tensor> tensor;
  std::optional<std::string> text;
  /// The Python value an int / float / bool output came from (`--print` prints it as Python).
  std::optional<IValue> scalar;
};

/// Flattens a method result in cli.md's order and names the files.
std::vector<FlatOutput> flattenOutputs(const IValue& result);

/// "out0.npy: float32 [1, 4]" — the line `run` prints per output.
std::string describeOutput(const FlatOutput& out);

}  // namespace torchless
