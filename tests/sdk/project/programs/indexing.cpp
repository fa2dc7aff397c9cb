// at::indexing, the C++ spelling of Python's indexing: Slice, None, Ellipsis ("..."), integers,
// bools, index and mask tensors; reads with index() and writes with index_put_().
#include <torch/torch.h>

#include <iostream>

using namespace torch::indexing;

int main() {
  torch::Tensor x = torch::arange(24).reshape({2, 3, 4});
  std::cout << x.index({0}) << "\n";
  std::cout << x.index({Slice(), 1}) << "\n";
  std::cout << x.index({"...", -1}) << "\n";
  std::cout << x.index({Ellipsis, Slice(1, None, 2)}) << "\n";
  std::cout << x.index({None, 1, Slice(None, 2)}).sizes() << "\n";
  std::cout << x.index({Slice(), None, Slice(), 0}).sizes() << "\n";
  std::cout << x.index({1, 2, 3}) << "\n";
  std::cout << x.index({torch::tensor({1, 0}), Slice(), torch::tensor({3, 0})}) << "\n";
  std::cout << x.index({x > 20}) << "\n";
  std::cout << x.index({Slice(), torch::tensor({true, false, true})}) << "\n";
  std::cout << x.index({true}).sizes() << " " << x.index({false}).sizes() << "\n";
  std::cout << x.index({torch::tensor(1)}).sizes() << "\n";
  std::cout << Slice(1, None, 2) << " " << Slice() << "\n";

  torch::Tensor y = torch::zeros({3, 4});
  y.index_put_({0}, 1.5);
  y.index_put_({Slice(1, None), Slice(None, 2)}, torch::ones({2, 2}) * 3);
  y.index_put_({"...", -1}, torch::arange(3, torch::kFloat));
  y.index_put_({y == 0}, -1);
  y.index_put_({2, torch::tensor({1, 2})}, torch::tensor({7.0f, 8.0f}));
  std::cout << y << "\n";
  torch::Tensor& same = y.index_put_({Slice(), 0}, torch::tensor({9.0f}));
  std::cout << "returns itself " << (&same == &y) << "\n" << y << "\n";
  try {
    x.index({0, 0, 0, 0});
  } catch (const c10::Error&) {
    std::cout << "too many indices: c10::Error\n";
  }
  try {
    x.index({5});
  } catch (const c10::Error&) {
    std::cout << "out of range: c10::Error\n";
  }
}
