#pragma once
// torchless's public C++ API.
//
//   #include <torchless/torchless.h>
//
//   torchless::Module m = torchless::load("model.pt");     // a torch.jit.save archive
//   torchless::Tensor x = torchless::loadNpy("input.npy");
//   torchless::IValue y = m.forward({torchless::IValue(x)});
//   torchless::saveNpy("out.npy", y.toTensor());
//
// Errors are torchless::Error (bad files, bad inputs; the message names the place),
// torchless::ModelError (the model raised), torchless::UnsupportedError (operators without a
// kernel, all listed).

#include "api/freeze.h"   // IWYU pragma: export
#include "api/module.h"   // IWYU pragma: export
#include "core/error.h"   // IWYU pragma: export
#include "core/ivalue.h"  // IWYU pragma: export
#include "core/npy.h"     // IWYU pragma: export
#include "core/tensor.h"  // IWYU pragma: export
#include "ops/parallel.h" // IWYU pragma: export
