#include "tools/input_options.h"

#include "core/error.h"
#include "core/npy.h"

namespace torchless::cli {

void addInputOptions(CLI::App& cmd, InputOptions& o) {
  cmd.add_option(
         "--input", o.specs,
         "a tensor input by shape instead of a file, for the leading tensor arguments in "
         "order (repeatable): 1x3x224x224 (float32, random), 1x128:int64, 2x3:float32:zeros")
      ->check([](const std::string& spec) -> std::string {
        try {
          parseInputSpec(spec);
        } catch (const Error& e) {
          return e.what();
        }
        return "";
      })
      ->allow_extra_args(false);
  cmd.add_option("--seed", o.seed, "seed of the random --input tensors (default 0)");
}

std::vector<std::string> inputWords(const InputOptions& o, const std::vector<std::string>& words) {
  std::vector<std::string> out;
  for (size_t k = 0; k < o.specs.size(); ++k) out.push_back(inputSpecWord(k));
  out.insert(out.end(), words.begin(), words.end());
  return out;
}

std::vector<IValue> commandInputs(const InputOptions& o, const std::vector<std::string>& words,
                                  const std::vector<ParamSpec>& params, const std::string& model,
                                  const std::string& method) {
  try {
    return parseInputs(inputWords(o, words), params, inputLoader(o));
  } catch (Error& e) {
    e.withPlace(fmt::format("{}: method {}", model, method));
    throw;
  }
}

TensorLoader inputLoader(const InputOptions& o) {
  return [&o](const std::string& word) -> Tensor {
    for (size_t k = 0; k < o.specs.size(); ++k)
      if (word == inputSpecWord(k)) return tensorFromSpec(parseInputSpec(o.specs[k]), o.seed + k);
    return loadNpy(word);
  };
}

}  // namespace torchless::cli
