#include "ops/dispatch.h"

namespace torchless::ops {

void notImplemented(const char* op, ScalarType dtype) {
  throw Error(fmt::format("\"{}\" not implemented for '{}'", op, toString(dtype)));
}

int64_t wrapDim(int64_t dim, int64_t ndim) {
  const int64_t n = ndim <= 0 ? 1 : ndim;
  if (dim < -n || dim >= n)
    throw Error(
        fmt::format("Dimension out of range (expected to be in range of [{}, {}], but got {})", -n,
                    n - 1, dim));
  return dim < 0 ? dim + n : dim;
}

bool canCast(ScalarType from, ScalarType to) {
  if (isComplexType(from) && !isComplexType(to)) return false;
  if (isFloatingType(from) && isIntegralType(to, false)) return false;
  if (from != ScalarType::Bool && to == ScalarType::Bool) return false;
  return true;
}

}  // namespace torchless::ops
