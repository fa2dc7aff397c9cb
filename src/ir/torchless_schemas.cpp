// Operators of our own (`torchless::` namespace) that runtime-only passes create. They never
// appear in graphs that are saved or exported: passes that emit them run only on the copy of a
// graph compiled for execution (Note [Execution rewrites] in passes/fuse_conv_activation.cpp).
#include "ir/operator_registry.h"

namespace torchless {

namespace {
const char* const kTorchlessSchemas[] = {
    // act(conv(input) + residual): ops::convolutionFused (ops/conv.h).
    "torchless::conv_fused(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
    "int[] dilation, int groups, Tensor? residual, str activation, float alpha, float beta, "
    "bool constant_weight, bool channels_last) -> Tensor",
    // Runs a compiled engine (convert/engine/partition.h), as Torch-TensorRT's
    // tensorrt::execute_engine: the archives `torchless compile` writes call it.
    "torchless::execute_engine(Tensor[] inputs, __torch__.torch.classes.torchless.Engine engine) "
    "-> Tensor[]",
};
}  // namespace

void registerTorchlessSchemas(OperatorRegistry& registry) {
  for (const char* s : kTorchlessSchemas) registry.registerSchema(s);
}

}  // namespace torchless
