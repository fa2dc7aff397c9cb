// A forward taking Tuple[Tensor, Tensor], from std::tuple and from ivalue::Tuple::create.
#include <torch/script.h>

#include <iostream>
#include <tuple>

int main(int argc, const char* argv[]) {
  torch::jit::Module m = torch::jit::load(argv[1]);
  torch::Tensor a = torch::ones({2, 2});
  torch::Tensor b = torch::full({2, 2}, 0.25);
  std::cout << m.forward({std::make_tuple(a, b)}).toTensor() << "\n";
  auto tup = c10::ivalue::Tuple::create(b, a);
  torch::jit::IValue arg(tup);
  std::cout << "isTuple " << arg.isTuple() << "\n";
  std::cout << m.forward({arg}) << "\n";
  return 0;
}
