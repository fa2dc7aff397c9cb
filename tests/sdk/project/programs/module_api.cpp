// The module object: submodules through attr() and named_children(), named_attributes,
// parameters; train() / eval() / is_training(); Module::to(dtype) with double inputs.
#include <torch/script.h>

#include <iostream>

int main(int argc, const char* argv[]) {
  torch::jit::script::Module m = torch::jit::load(argv[1]);
  std::cout << "training " << m.is_training() << "\n";
  m.eval();
  std::cout << "after eval " << m.is_training() << "\n";

  torch::jit::IValue head = m.attr("head");
  std::cout << "head isModule " << head.isModule() << "\n";
  torch::jit::Module lin = head.toModule();
  std::cout << "head.weight " << lin.attr("weight").toTensor().sizes() << "\n";
  std::cout << lin.attr("bias").toTensor().slice(0, 0, 4) << "\n";
  torch::Tensor feats = torch::ones({2, 16});
  std::cout << "head.forward\n" << lin.forward({feats}).toTensor() << "\n";

  for (const auto& c : m.named_children()) std::cout << "child " << c.name << "\n";
  for (const auto& sub : m.named_modules()) std::cout << "module '" << sub.name << "'\n";
  for (const auto& a : m.named_attributes()) {
    std::cout << "attr " << a.name << " " << a.value.tagKind();
    if (a.value.isTensor()) std::cout << " " << a.value.toTensor().sizes();
    if (a.value.isBool()) std::cout << " " << a.value.toBool();
    std::cout << "\n";
  }
  for (const auto& p : m.named_parameters(/*recurse=*/false))
    std::cout << "own parameter " << p.name << "\n";
  std::cout << "parameters " << m.parameters().size() << " buffers " << m.buffers().size() << "\n";

  torch::Tensor x = torch::linspace(-1, 1, 3 * 32 * 32).reshape({1, 3, 32, 32});
  torch::Tensor y = m.forward({x}).toTensor();
  std::cout << "float " << y.dtype() << "\n" << y << "\n";

  m.train();
  std::cout << "after train " << m.is_training() << " head "
            << m.attr("head").toModule().is_training() << "\n";
  m.eval();
  std::cout << "eval again " << m.is_training() << "\n";

  m.to(torch::kDouble);
  for (const auto& p : m.named_parameters()) std::cout << p.name << " " << p.value.dtype() << "\n";
  for (const auto& b : m.named_buffers()) std::cout << b.name << " " << b.value.dtype() << "\n";
  torch::Tensor yd = m.forward({x.to(torch::kDouble)}).toTensor();
  std::cout << "double " << yd.dtype() << "\n" << yd << "\n";
  std::cout << "close to float " << ((yd - y.to(torch::kDouble)).abs().max().item<double>() < 1e-5)
            << "\n";
}
