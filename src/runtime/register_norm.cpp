// Kernels of the norm family (ops/norm.h): batch_norm, layer_norm, group_norm, instance_norm.

#include "ops/norm.h"
#include "runtime/register_utils.h"

namespace torchless {

using namespace kreg;

void registerNormKernels(KernelRegistry& r) {
  // (input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
  defFamily(r, "aten::batch_norm", [](const IValue* a) {
    return ops::batchNorm(a[0].toTensor(), toOptTensor(a[3]), toOptTensor(a[4]), toOptTensor(a[1]),
                          toOptTensor(a[2]), a[5].toBool(), a[6].toDouble(), a[7].toDouble());
  });
  defN<8>(r, "aten::native_batch_norm", [](const IValue* a) {
    Tensor y =
        ops::batchNorm(a[0].toTensor(), toOptTensor(a[3]), toOptTensor(a[4]), toOptTensor(a[1]),
                       toOptTensor(a[2]), a[5].toBool(), a[6].toDouble(), a[7].toDouble());
    return std::make_tuple(y, Tensor::empty({0}, y.dtype()), Tensor::empty({0}, y.dtype()));
  });
  defFamily(r, "aten::layer_norm", [](const IValue* a) {
    return ops::layerNorm(a[0].toTensor(), toIntList(a[1]), toOptTensor(a[2]), toOptTensor(a[3]),
                          a[4].toDouble());
  });
  defFamily(r, "aten::group_norm", [](const IValue* a) {
    return ops::groupNorm(a[0].toTensor(), a[1].toInt(), toOptTensor(a[2]), toOptTensor(a[3]),
                          a[4].toDouble());
  });
  // (input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn)
  defFamily(r, "aten::instance_norm", [](const IValue* a) {
    return ops::instanceNorm(a[0].toTensor(), toOptTensor(a[3]), toOptTensor(a[4]),
                             toOptTensor(a[1]), toOptTensor(a[2]), a[5].toBool(), a[6].toDouble(),
                             a[7].toDouble());
  });
}

}  // namespace torchless
