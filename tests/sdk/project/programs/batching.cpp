// Batching and post-processing helpers around a classifier: stack / cat a batch, chunk and
// split the outputs, sort, where, masked_select, nonzero, argmax, one-hot counts.
#include <torch/script.h>
#include <torch/torch.h>

#include <iostream>
#include <vector>

int main(int argc, const char* argv[]) {
  torch::jit::Module model = torch::jit::load(argv[1]);
  std::vector<torch::Tensor> images;
  for (int i = 0; i < 4; ++i)
    images.push_back(torch::linspace(-1 + 0.1 * i, 1 - 0.2 * i, 3 * 32 * 32).reshape({3, 32, 32}));
  torch::Tensor batch = torch::stack(images);
  std::cout << "batch " << batch.sizes() << "\n";
  torch::Tensor logits = model.forward({batch}).toTensor();
  torch::Tensor both = torch::cat({logits, logits.flip({0})}, 0);
  std::cout << "cat " << both.sizes() << "\n";
  for (const torch::Tensor& part : logits.chunk(2, 0))
    std::cout << "chunk " << part.sizes() << "\n";
  for (const torch::Tensor& part : logits.split({3, 7}, 1))
    std::cout << "split " << part.sizes() << "\n";
  auto sorted = logits.sort(1, /*descending=*/true);
  std::cout << "sorted indices\n" << std::get<1>(sorted) << "\n";
  torch::Tensor pred = logits.argmax(1);
  std::cout << "predictions " << pred << "\n";
  torch::Tensor probs = logits.softmax(1);
  torch::Tensor confident = std::get<0>(probs.max(1)) > 0.12;
  std::cout << "confident " << confident << "\n";
  std::cout << "where\n"
            << torch::where(probs > 0.1, probs, torch::zeros_like(probs)).slice(1, 0, 5) << "\n";
  std::cout << "masked_select " << probs.masked_select(probs > 0.13).numel() << "\n";
  std::cout << "nonzero\n" << (probs > 0.13).nonzero() << "\n";
  torch::Tensor counts = torch::zeros({10}, torch::kLong);
  for (int64_t i = 0; i < pred.size(0); ++i) counts[pred[i].item<int64_t>()] += 1;
  std::cout << "counts " << counts << "\n";
  std::cout << "mean logits " << logits.mean(0).slice(0, 0, 4) << "\n";
}
