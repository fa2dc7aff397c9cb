// Kernels of the linalg family (ops/linalg.h): mm, bmm, matmul, mv, addmm, baddbmm, linear,
// dot, outer.

#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "runtime/register_utils.h"

namespace torchless {

using namespace kreg;

void registerLinalgKernels(KernelRegistry& r) {
  defFamily(r, "aten::cdist", [](const IValue* a) {
    return ops::cdist(a[0].toTensor(), a[1].toTensor(), a[2].toDouble(), toOptInt(a[3]));
  });
  defFamily(r, "aten::_cdist_forward", [](const IValue* a) {
    return ops::cdist(a[0].toTensor(), a[1].toTensor(), a[2].toDouble(), toOptInt(a[3]));
  });
  defFamily(r, "aten::pairwise_distance", [](const IValue* a) {
    return ops::pairwiseDistance(a[0].toTensor(), a[1].toTensor(), a[2].toDouble(), a[3].toDouble(),
                                 a[4].toBool());
  });
  defFamily(r, "aten::affine_grid_generator", [](const IValue* a) {
    return ops::affineGridGenerator(a[0].toTensor(), a[1].toIntVector(), a[2].toBool());
  });
  defFamily(r, "aten::mm",
            [](const IValue* a) { return ops::mm(a[0].toTensor(), a[1].toTensor()); });
  defFamily(r, "aten::bmm",
            [](const IValue* a) { return ops::bmm(a[0].toTensor(), a[1].toTensor()); });
  defFamily(r, "aten::matmul",
            [](const IValue* a) { return ops::matmul(a[0].toTensor(), a[1].toTensor()); });
  defFamily(r, "aten::mv",
            [](const IValue* a) { return ops::mv(a[0].toTensor(), a[1].toTensor()); });
  defFamily(r, "aten::dot",
            [](const IValue* a) { return ops::dot(a[0].toTensor(), a[1].toTensor()); });
  defFamily(r, "aten::outer",
            [](const IValue* a) { return ops::outer(a[0].toTensor(), a[1].toTensor()); });
  defFamily(r, "aten::ger",
            [](const IValue* a) { return ops::outer(a[0].toTensor(), a[1].toTensor()); });
  defFamily(r, "aten::addmm", [](const IValue* a) {
    return ops::addmm(a[0].toTensor(), a[1].toTensor(), a[2].toTensor(), toScalar(a[3]),
                      toScalar(a[4]));
  });
  defFamily(r, "aten::baddbmm", [](const IValue* a) {
    return ops::baddbmm(a[0].toTensor(), a[1].toTensor(), a[2].toTensor(), toScalar(a[3]),
                        toScalar(a[4]));
  });
  defFamily(r, "aten::addmv", [](const IValue* a) {
    // beta * self + alpha * (mat @ vec)
    Tensor prod = ops::mv(a[1].toTensor(), a[2].toTensor());
    return ops::add(ops::mul(a[0].toTensor(), toScalar(a[3])), prod, toScalar(a[4]));
  });
  defFamily(r, "aten::linear", [](const IValue* a) {
    return ops::linear(a[0].toTensor(), a[1].toTensor(), toOptTensor(a[2]));
  });
}

}  // namespace torchless
