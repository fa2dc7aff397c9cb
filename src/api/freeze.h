#pragma once
// Freezing a loaded module, as torch.jit.freeze and torch.jit.optimize_for_inference do,
// without Python.
//
//   torchless::Module m = torchless::load("model.pt");
//   torchless::Module f = torchless::freeze(m);                 // parameters become constants
//   torchless::Module o = torchless::optimizeForInference(m);   // + peephole, CSE, folds
//   torchless::save(f, "frozen.pt");                            // torch.jit.load reads it
//
// The result is a new module; the original is untouched (its methods and objects are not
// changed; the frozen class and methods are added to the same CompilationUnit under a
// mangled name, `__torch__.___torch_mangle_N.M`, as PyTorch names frozen classes).

#include "api/module.h"

#include <string>
#include <vector>

namespace torchless {

/// What to keep and how much to optimize.
struct FreezeOptions {
  /// PyTorch's preserved_attrs: names of methods (kept besides `forward`) or attributes
  /// (dotted paths, kept as attributes and not folded).
  std::vector<std::string> preservedAttrs;
  /// PyTorch's optimize_numerics: run the folds (fold_conv_bn, fold_conv_add_mul,
  /// fold_linear_bn) and remove_dropout after freezing. TORCHLESS_JIT=0 turns them off too.
  bool optimizeNumerics = true;
};

/// A frozen copy of `module`: its `forward` (when it has one) and the methods named in
/// preservedAttrs, with every call inlined and every attribute the methods only read folded
/// into constants (parameters, buffers, ints, lists, `training`), training-only branches and
/// eval dropouts removed, then conv/linear + batch_norm and conv + add/mul folded, as
/// torch.jit.freeze. Attributes that some kept method writes stay attributes. The frozen
/// class has only the kept methods and attributes. Throws torchless::Error when the module is
/// in training mode (as torch.jit.freeze), a preserved name is neither a method nor an
/// attribute, or a method uses the module itself as a value.
Module freeze(const Module& module, const FreezeOptions& options = {});

/// freeze(module) followed by the inference pipeline (peephole, constant propagation,
/// common subexpression elimination, fold_linear_mul's layer-scale fold, dead code), as
/// torch.jit.optimize_for_inference; the
/// result uses only PyTorch operators (no MKLDNN conversion), so it saves and loads in
/// torch.jit.load.
Module optimizeForInference(const Module& module, const FreezeOptions& options = {});

/// A deep copy of `v` (objects, containers, tensors cloned), keeping the sharing inside `v`,
/// as copy.deepcopy: what freezing copies a kept attribute with.
IValue deepCopy(const IValue& v);

}  // namespace torchless
