// In-place methods and functions: they return the tensor they changed (a reference, as in
// libtorch), so they chain and bind to references.
#include <torch/torch.h>

#include <iostream>

int main() {
  torch::Tensor t = torch::arange(6, torch::kFloat).reshape({2, 3});
  torch::Tensor& r = t.add_(1);
  std::cout << "same object " << (&r == &t) << "\n";
  t.mul_(2).sub_(3).div_(2);
  std::cout << t << "\n";
  t.clamp_(0, 3).neg_();
  std::cout << t << "\n";
  torch::relu_(t);
  std::cout << t << "\n";
  auto& z = t.zero_();
  z.fill_(0.5);
  std::cout << t << "\n";
  torch::Tensor u = torch::linspace(-2, 2, 5);
  u.abs_().sqrt_().exp_();
  std::cout << u << "\n";
  u += 1;
  u *= torch::full({5}, 2.0);
  u -= 0.5;
  u /= 4;
  std::cout << u << "\n";
  torch::Tensor v = u.slice(0, 1, 3);
  v.copy_(torch::tensor({10.0f, 20.0f}));
  std::cout << "view writes through " << u << "\n";
  torch::Tensor m = torch::ones({2, 2});
  m.masked_fill_(torch::eye(2).to(torch::kBool), -1).t_();
  std::cout << m << "\n";
  torch::Tensor idx = torch::zeros({3});
  idx.index_fill_(0, torch::tensor({0, 2}), 4).unsqueeze_(0);
  std::cout << idx << "\n";
  torch::Tensor s = torch::tensor({3, 1, 2});
  torch::Tensor sf = s.to(torch::kFloat);
  torch::Tensor& s2 = torch::sigmoid_(sf);
  std::cout << s2 << "\n";
}
