#pragma once
// libtorch's <c10/util/irange.h>, served by torchless (include/torchless/compat is on the include
// path through the CMake target torchless::compat). See <torchless/cxx/core.h> for what is
// provided.
#include <torchless/cxx/core.h>
