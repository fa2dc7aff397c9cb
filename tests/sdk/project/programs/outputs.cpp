// Tuple, List[Tensor] and Dict[str, Tensor] outputs, run_method on an exported method,
// attributes read with attr, parameters and buffers.
#include <torch/script.h>

#include <iostream>

int main(int argc, const char* argv[]) {
  torch::jit::script::Module module = torch::jit::load(argv[1]);
  torch::Tensor x = torch::arange(8, torch::kFloat).reshape({2, 4}) / 4;

  torch::jit::IValue out = module.forward({x});
  std::cout << "isTuple " << out.isTuple() << "\n";
  auto elements = out.toTuple()->elements();
  std::cout << "elements " << elements.size() << "\n";
  torch::Tensor y = elements[0].toTensor();
  std::cout << "y\n" << y << "\n";

  c10::List<torch::Tensor> parts = elements[1].toTensorList();
  std::cout << "parts " << parts.size() << "\n";
  for (size_t i = 0; i < parts.size(); ++i)
    std::cout << i << ": " << parts.get(i).sizes() << "\n" << parts.get(i) << "\n";
  for (const torch::Tensor& p : elements[1].toTensorVector()) std::cout << p.dim() << " ";
  std::cout << "\n";

  auto dict = elements[2].toGenericDict();
  std::cout << "dict " << dict.size() << "\n";
  for (const auto& item : dict)
    std::cout << item.key().toStringRef() << " -> " << item.value().toTensor() << "\n";

  torch::Tensor scaled = module.run_method("scale_by", x, 2.0).toTensor();
  std::cout << "scale_by\n" << scaled << "\n";
  auto method = module.get_method("scale_by");
  std::cout << "get_method " << method({x, 0.5}).toTensor()[1] << "\n";

  std::cout << "scale " << module.attr("scale").toDouble() << "\n";
  std::cout << "name " << module.attr("name").toStringRef() << "\n";
  std::cout << "steps " << module.attr("steps").toInt() << "\n";
  std::cout << "offset " << module.attr("offset").toTensor() << "\n";
  for (const auto& p : module.named_parameters())
    std::cout << "param " << p.name << " " << p.value.sizes() << "\n";
  for (const auto& b : module.named_buffers())
    std::cout << "buffer " << b.name << " " << b.value.sizes() << "\n";
  return 0;
}
