#pragma once
// `--input SPEC` and `--seed N` for the commands that take a method's inputs (run, bench,
// export, trace): tensors described by shape instead of a .npy file (cli.md "Inputs",
// api/cli_io.h InputSpec). The specs give the leading tensor arguments, in order; INPUT words
// follow them for the remaining arguments.

#include "api/cli_io.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace torchless::cli {

struct InputOptions {
  std::vector<std::string> specs;  // as given, validated by CLI11 (a bad spec is exit 2)
  uint64_t seed = 0;
};

/// Adds --input (repeatable) and --seed to `cmd`.
void addInputOptions(CLI::App& cmd, InputOptions& o);

/// The INPUT words with the specs in front (as "@input:k" words).
std::vector<std::string> inputWords(const InputOptions& o, const std::vector<std::string>& words);

/// The arguments of `method` of `model` from the specs and words (api/cli_io.h parseInputs);
/// errors get "MODEL: method METHOD" as their place.
std::vector<IValue> commandInputs(const InputOptions& o, const std::vector<std::string>& words,
                                  const std::vector<ParamSpec>& params, const std::string& model,
                                  const std::string& method);

/// Loads .npy paths, and makes the tensor of "@input:k" from spec k with seed `o.seed + k`.
TensorLoader inputLoader(const InputOptions& o);

}  // namespace torchless::cli
