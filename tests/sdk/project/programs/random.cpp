// Random tensors as libtorch gives them: the default generator of a fresh process, then
// torch::manual_seed; rand / randn (short, 16-element blocks with a tail, float and double),
// randint, randperm, normal_ / uniform_ in place, rand_like / randn_like, bernoulli, and a
// scripted model that draws inside forward (argv[1]: the models directory).
#include <torch/script.h>
#include <torch/torch.h>

#include <iostream>
#include <string>

int main(int argc, const char* argv[]) {
  // A fresh process starts from a random seed (as libtorch): only the range can be printed.
  torch::Tensor fresh = torch::rand({100});
  std::cout << "fresh in [0, 1) "
            << (fresh.min().item<float>() >= 0 && fresh.max().item<float>() < 1) << "\n";
  torch::manual_seed(0);
  std::cout << torch::rand({2, 3}) << "\n";
  std::cout << torch::randn({5}) << "\n";
  std::cout << torch::randn({3, 7}) << "\n";  // 21 elements: blocks of 16 and a redrawn tail
  std::cout << torch::randn({4}, torch::kDouble) << "\n";
  std::cout << torch::randn({18}, torch::dtype(torch::kFloat64)) << "\n";
  std::cout << torch::rand({2, 2}, torch::kDouble) << "\n";
  torch::manual_seed(42);
  std::cout << torch::randint(10, {2, 4}) << "\n";
  std::cout << torch::randint(-5, 5, {6}) << "\n";
  std::cout << torch::randperm(8) << "\n";
  torch::Tensor t = torch::empty({2, 10});
  t.normal_(2.0, 0.5);
  std::cout << t << "\n";
  t.uniform_(-1.0, 1.0);
  std::cout << t << "\n";
  std::cout << torch::rand_like(t).sizes() << " " << torch::randn_like(t).mean().item<float>()
            << "\n";
  std::cout << torch::bernoulli(torch::empty({10}), 0.3) << "\n";
  std::cout << torch::bernoulli(torch::full({2, 5}, 0.5)) << "\n";
  std::cout
      << torch::empty({6}, torch::kDouble).bernoulli_(torch::linspace(0, 1, 6, torch::kDouble))
      << "\n";
  // The same seed gives the same numbers.
  torch::manual_seed(7);
  torch::Tensor a = torch::randn({100});
  torch::manual_seed(7);
  torch::Tensor b = torch::randn({100});
  std::cout << "same " << (a == b).all().item<bool>() << " mean " << a.mean().item<float>()
            << " std " << a.std().item<float>() << "\n";
  // A model drawing inside forward continues the same stream.
  torch::jit::Module noisy = torch::jit::load(std::string(argv[1]) + "/noisy.pt");
  torch::manual_seed(5);
  for (int i = 0; i < 2; ++i) {
    auto out = noisy.forward({torch::zeros({2, 3})}).toTuple();
    std::cout << out->elements()[0] << "\n" << out->elements()[1].toTensor().sum(1) << "\n";
  }
  std::cout << "big " << torch::randn({1000}).abs().max().item<float>() << " "
            << torch::rand({1000}).sum().item<double>() << "\n";
}
