// A BERT-like model over int64 token ids returning a tuple (hidden states, pooled).
#include <torch/script.h>
#include <torch/torch.h>

#include <iostream>
#include <vector>

int main(int argc, const char* argv[]) {
  auto module = torch::jit::load(argv[1]);
  std::vector<int64_t> ids = {101, 759, 208, 999, 202, 200, 103, 323, 102};
  torch::Tensor input_ids = torch::tensor(ids, torch::dtype(torch::kInt64)).unsqueeze(0);
  std::cout << "ids " << input_ids.sizes() << " " << input_ids.dtype() << "\n" << input_ids << "\n";
  std::vector<torch::jit::IValue> inputs{input_ids};
  auto outputs = module.forward(inputs).toTuple();
  torch::Tensor hidden = outputs->elements()[0].toTensor();
  torch::Tensor pooled = outputs->elements()[1].toTensor();
  std::cout << "hidden " << hidden.sizes() << "\n" << hidden.select(1, 0).slice(1, 0, 6) << "\n";
  std::cout << "pooled\n" << pooled.slice(1, 0, 8) << "\n";
  std::cout << "norm " << hidden.pow(2).sum(-1).sqrt() << "\n";
}
