// A std::chrono timing loop (the times are printed to stderr: they differ run to run).
#include <torch/script.h>
#include <torch/torch.h>

#include <chrono>
#include <iostream>

int main(int argc, const char* argv[]) {
  torch::jit::Module model = torch::jit::load(argv[1]);
  c10::InferenceMode guard;
  torch::Tensor input = torch::ones({4, 3, 32, 32});
  torch::Tensor out;
  const int warmup = 2, runs = 5;
  for (int i = 0; i < warmup; ++i) out = model.forward({input}).toTensor();
  auto start = std::chrono::steady_clock::now();
  for (const auto i : c10::irange(runs)) {
    (void)i;
    out = model.forward({input}).toTensor();
  }
  auto end = std::chrono::steady_clock::now();
  double ms = std::chrono::duration<double, std::milli>(end - start).count() / runs;
  std::cerr << "mean latency " << ms << " ms\n";
  std::cout << "runs " << runs << " output " << out.sizes() << "\n" << out.argmax(1) << "\n";
}
