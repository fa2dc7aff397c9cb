#pragma once
// libtorch's <torch/torch.h>, served by torchless (include/torchless/compat is on the include path
// through the CMake target torchless::compat). See <torchless/cxx/core.h> for what is provided.
#include <torchless/cxx/core.h>
