#pragma once
// torchless's public C++ API: C++17, needs only the standard library and libtorchless.
//
//   #include <torchless/torchless.h>
//
//   torch::jit::Module m = torch::jit::load("model.pt");     // a torch.jit.save archive
//   at::Tensor y = m.forward({torch::ones({1, 3, 224, 224})}).toTensor();
//   std::cout << y.softmax(1).topk(5) ...
//
// The C++ API is libtorch's inference surface (torchless/cxx/core.h): programs written for
// libtorch include <torch/script.h> from include/torchless/compat (CMake target
// torchless::compat) and compile unchanged. Bindings for other languages use the C API
// (torchless/c_api.h), which this API is built on. Errors are c10::Error.
#include <torchless/c_api.h>
#include <torchless/cxx/core.h>
