// Failures caught as libtorch users catch them: c10::Error for loading and API misuse,
// a std::runtime_error (torch::jit::JITException) for the model's own `raise` (messages
// differ between runtimes; what is caught must not).
#include <torch/script.h>

#include <iostream>
#include <stdexcept>
#include <string>

int main(int argc, const char* argv[]) {
  std::string dir = argv[1];
  try {
    torch::jit::load(dir + "/does_not_exist.pt");
    std::cout << "loaded?\n";
  } catch (const c10::Error& e) {
    std::cout << "load failed: c10::Error, message empty " << std::string(e.what()).empty() << "\n";
  }
  auto m = torch::jit::load(dir + "/raises.pt");
  try {
    m.forward({torch::ones({2, 2})});
    std::cout << "ran?\n";
  } catch (const c10::Error& e) {
    std::cout << "model raised: c10::Error\n";
  } catch (const std::runtime_error& e) {  // libtorch: a torch::jit::JITException
    std::cout << "model raised: std::runtime_error, mentions the message "
              << (std::string(e.what()).find("expected a 4-d input") != std::string::npos) << "\n";
  }
  std::cout << m.forward({torch::zeros({1, 1, 1, 2})}) << "\n";
  torch::Tensor t = torch::ones({2});
  try {
    t.data_ptr<int64_t>();
  } catch (const torch::Error& e) {
    std::cout << "wrong data_ptr type: torch::Error " << e.msg().empty() << "\n";
  }
  try {
    torch::jit::IValue(3).toTensor();
  } catch (const c10::Error&) {
    std::cout << "IValue(3).toTensor(): c10::Error\n";
  }
  try {
    m.run_method("no_such_method", t);
  } catch (const c10::Error&) {
    std::cout << "no such method: c10::Error\n";
  }
  std::cout << "cuda available " << torch::cuda::is_available() << "\n";
  return 3;
}
