#pragma once
// The rewrite PyTorch's graph executor requires before it runs any graph (CanonicalizeOps in
// torch/csrc/jit/passes/canonicalize_graph_fuser_ops.cpp, one of the "required passes" of the
// profiling executor): a 0-dim tensor constant given as `other` of
//   aten::add.Tensor, aten::sub.Tensor, aten::mul.Tensor, aten::div.Tensor
// becomes a number constant, so the node calls the Scalar overload.
//
// Note [0-dim tensor constants]
// It changes numbers: a traced `x + 2.5` records 2.5 as a 0-dim double tensor constant, which
// in eager mode was a "wrapped number" (it promotes like a Python float); the flag is not
// saved, so an int64 `x` plus the reloaded constant gives float64 by type promotion, but
// PyTorch's executor runs the Scalar overload and gives float32 (the default dtype). Ops outside
// the four (`div.Tensor_mode`, comparisons ...) keep the tensor and its promotion, as in
// PyTorch. The interpreter applies this to every graph it compiles (Code's constructor).

#include "ir/ir.h"

#include <memory>

namespace torchless {

/// `graph` itself when no node has a 0-dim tensor constant to canonicalize, else a copy of it
/// with those constants turned into number constants (float for floating dtypes, int for
/// integral ones, bool for bool). Never edits `graph`.
std::shared_ptr<Graph> canonicalizeOps(const std::shared_ptr<Graph>& graph);

}  // namespace torchless
