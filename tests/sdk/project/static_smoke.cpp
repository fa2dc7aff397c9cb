// <torchless/torchless.h> linked statically (libtorchless.a): the classifier's output printed.
#include <torchless/torchless.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: static_smoke MODEL.pt\n";
    return 2;
  }
  torch::jit::Module m = torch::jit::load(argv[1]);
  at::Tensor x = torch::linspace(-1, 1, 3 * 32 * 32).reshape({1, 3, 32, 32});
  at::Tensor y = m.forward({x}).toTensor();
  std::cout << y.sizes() << " argmax " << y.argmax(1).item<int64_t>() << "\n";
  return y.numel() == 10 ? 0 : 1;
}
