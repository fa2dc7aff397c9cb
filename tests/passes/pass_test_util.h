#pragma once
// Helpers for the pass tests: parse, run a pass with verification, print with names
// normalised so that outputs compare across value numbering.

#include "core/error.h"
#include "ir/ir.h"
#include "ir/ir_parser.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <unordered_map>

namespace torchless::passes::testing {

/// Renames every `%name` to `%v0`, `%v1` ... in order of first appearance, drops
/// trailing spaces and joins continuation lines of the graph's parameter list.
inline std::string normalizeNames(const std::string& text) {
  std::string out;
  std::unordered_map<std::string, std::string> names;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '%') {
      size_t j = i + 1;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) ||
                                 text[j] == '_' || text[j] == '.'))
        ++j;
      std::string name = text.substr(i + 1, j - i - 1);
      auto [it, inserted] = names.emplace(name, "v" + std::to_string(names.size()));
      out += "%" + it->second;
      i = j;
    } else {
      out += text[i++];
    }
  }
  return out;
}

inline std::shared_ptr<Graph> parseGraph(const std::string& text) {
  auto g = std::make_shared<Graph>();
  parseIR(text, g.get());
  verify(*g);
  return g;
}

/// Our printer's text of `text` with names normalised (so expected text written by PyTorch
/// and our output go through the same printer).
inline std::string canonical(const std::string& text) {
  return normalizeNames(parseGraph(text)->toString(false));
}

/// Runs the passes on `g` with verification after each; returns whether anything changed.
inline bool runPasses(Graph& g, const std::vector<std::string>& names) {
  registerPasses();
  PassManagerOptions o;
  o.verify = true;
  PassManager pm(names, o);
  return pm.run(g);
}

}  // namespace torchless::passes::testing

namespace torchless::passes::testing {

/// Runs `pass` on `input` (verifying after it) and compares the result with `expected`
/// (names normalised). An expected text equal to the input means "must report unchanged".
inline void expectPass(const std::string& pass, const std::string& input,
                       const std::string& expected) {
  auto g = parseGraph(input);
  bool changed = runPasses(*g, {pass});
  std::string got = normalizeNames(g->toString(false));
  std::string want = canonical(expected);
  EXPECT_EQ(got, want) << "pass " << pass << " on:\n" << input;
  EXPECT_EQ(changed, canonical(input) != want) << "pass " << pass << " change report";
}

}  // namespace torchless::passes::testing
