// operator<< on tensors and IValues of every layout libtorch's printer distinguishes: integers,
// fractions, a common scale factor, scientific notation, non-finite values, 0-d, 1-d, wide
// matrices split into column blocks, 3-d and 4-d slices, empty tensors, dtypes.
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <tuple>

int main() {
  std::cout << torch::arange(6).reshape({2, 3}) << "\n";
  std::cout << torch::tensor({0.5, -1.25, 3.0}) << "\n";
  std::cout << torch::tensor({1000.5, 2000.25, 12345.0}) << "\n";
  std::cout << torch::tensor({123456.5, 0.001}) << "\n";
  std::cout << torch::tensor({1e-5, 2e-5, 3.5e-5}) << "\n";
  std::cout << torch::tensor({1e12, 3.0}) << "\n";
  std::cout << torch::tensor({int64_t(12345678901), int64_t(2)}) << "\n";
  const double inf = std::numeric_limits<double>::infinity();
  std::cout << torch::tensor({1.5, inf, -inf, std::nan("")}) << "\n";
  std::cout << torch::tensor(3.25) << "\n" << torch::tensor(7) << "\n";
  std::cout << torch::arange(30, torch::kFloat).div(7).reshape({2, 15}) << "\n";
  std::cout << torch::arange(24).reshape({2, 3, 4}) << "\n";
  std::cout << (torch::arange(16, torch::kFloat) - 8).div(3).reshape({2, 2, 2, 2}) << "\n";
  std::cout << torch::zeros({0}) << "\n" << torch::ones({2, 0}) << "\n";
  std::cout << (torch::arange(4) > 1) << "\n";
  std::cout << torch::arange(3, torch::kDouble) << "\n" << torch::arange(3, torch::kInt) << "\n";
  std::cout << torch::arange(4, torch::kByte) << "\n";
  std::cout << torch::full({2, 2}, -0.5) << "\n";
  std::cout << torch::arange(100, torch::kFloat).reshape({4, 25}).mul(1.5) << "\n";
  std::cout << torch::jit::IValue(3) << " " << torch::jit::IValue(2.5) << " "
            << torch::jit::IValue(2.0) << " " << torch::jit::IValue(true) << " "
            << torch::jit::IValue("text") << " " << torch::jit::IValue() << "\n";
  std::cout << torch::jit::IValue(std::make_tuple(1, 2.5, std::string("a"))) << "\n";
  std::cout << torch::jit::IValue(std::vector<int64_t>{1, 2, 3}) << "\n";
  std::cout << torch::jit::IValue(std::make_tuple(torch::ones({2}), 4)) << "\n";
  std::cout << torch::kFloat << " " << torch::ones({1}).dtype() << " "
            << torch::ones({1}, torch::kLong).dtype() << " " << torch::Device(torch::kCPU) << "\n";
  return 0;
}
