// Kernels of the pool family (ops/pool.h): max/avg pooling 1d/2d/3d (ceil_mode, dilation,
// divisor_override), with indices, adaptive average and max pooling.

#include "ops/pool.h"
#include "runtime/register_utils.h"

namespace torchless {

using namespace kreg;

void registerPoolKernels(KernelRegistry& r) {
  for (int64_t n = 1; n <= 3; ++n) {
    const auto nd = static_cast<size_t>(n);
    const std::string d = std::to_string(n) + "d";
    defFamily(r, "aten::max_pool" + d, [n, nd](const IValue* a) {
      return ops::maxPool(a[0].toTensor(), n, toIntList(a[1], nd), toIntList(a[2]),
                          toIntList(a[3], nd), toIntList(a[4], nd), a[5].toBool());
    });
    defN<6>(r, "aten::max_pool" + d + "_with_indices", [n, nd](const IValue* a) {
      return ops::maxPoolWithIndices(a[0].toTensor(), n, toIntList(a[1], nd), toIntList(a[2]),
                                     toIntList(a[3], nd), toIntList(a[4], nd), a[5].toBool());
    });
    if (n == 1) {
      defFamily(r, "aten::avg_pool1d", [](const IValue* a) {
        return ops::avgPool(a[0].toTensor(), 1, toIntList(a[1], 1), toIntList(a[2]),
                            toIntList(a[3], 1), a[4].toBool(), a[5].toBool());
      });
    } else {
      defFamily(r, "aten::avg_pool" + d, [n, nd](const IValue* a) {
        return ops::avgPool(a[0].toTensor(), n, toIntList(a[1], nd), toIntList(a[2]),
                            toIntList(a[3], nd), a[4].toBool(), a[5].toBool(), toOptInt(a[6]));
      });
    }
    defFamily(r, "aten::adaptive_avg_pool" + d, [n, nd](const IValue* a) {
      return ops::adaptiveAvgPool(a[0].toTensor(), n, toIntList(a[1], nd));
    });
    defN<2>(r, "aten::adaptive_max_pool" + d, [n, nd](const IValue* a) {
      return ops::adaptiveMaxPool(a[0].toTensor(), n, toIntList(a[1], nd));
    });
  }
  defFamily(r, "aten::_adaptive_avg_pool2d", [](const IValue* a) {
    return ops::adaptiveAvgPool(a[0].toTensor(), 2, toIntList(a[1], 2));
  });
}

}  // namespace torchless
