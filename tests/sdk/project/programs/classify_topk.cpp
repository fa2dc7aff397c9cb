// softmax + topk on a scripted classifier, the way image classification demos do it.
#include <torch/script.h>
#include <torch/torch.h>

#include <iomanip>
#include <iostream>

int main(int argc, const char* argv[]) {
  torch::jit::script::Module model = torch::jit::load(argv[1]);
  model.eval();
  torch::NoGradGuard no_grad;

  torch::Tensor input = torch::linspace(-1, 1, 3 * 32 * 32).reshape({1, 3, 32, 32});
  torch::Tensor logits = model.forward({input}).toTensor();
  torch::Tensor probs = torch::softmax(logits, /*dim=*/1);
  auto top = probs.topk(3, 1);
  torch::Tensor values = std::get<0>(top);
  torch::Tensor indices = std::get<1>(top);
  std::cout << "logits:\n" << logits << "\n";
  std::cout << "top-3 probabilities:\n" << values << "\nindices:\n" << indices << "\n";
  for (int64_t i = 0; i < values.size(1); ++i) {
    std::cout << "class " << indices[0][i].item<int64_t>() << ": " << std::fixed
              << std::setprecision(4) << values[0][i].item<float>() * 100 << "%\n";
  }
  std::cout << "sum of probabilities " << probs.sum().item<double>() << "\n";
  std::cout << "argmax " << logits.argmax(1).item().toLong() << "\n";
  return 0;
}
