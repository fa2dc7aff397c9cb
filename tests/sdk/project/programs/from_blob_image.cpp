// An image buffer (HWC, uint8) wrapped with from_blob, turned into a normalized NCHW batch.
#include <torch/script.h>
#include <torch/torch.h>

#include <cstdint>
#include <iostream>
#include <vector>

int main(int argc, const char* argv[]) {
  torch::jit::Module model = torch::jit::load(argv[1]);
  const int H = 32, W = 32, C = 3;
  std::vector<uint8_t> pixels(H * W * C);
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<uint8_t>((i * 37 + i / 96) % 256);

  torch::Tensor image = torch::from_blob(pixels.data(), {H, W, C}, torch::kByte);
  std::cout << "image " << image.sizes() << " " << image.dtype() << " contiguous "
            << image.is_contiguous() << "\n";
  torch::Tensor chw = image.permute({2, 0, 1});
  std::cout << "permuted " << chw.sizes() << " strides " << chw.strides() << " contiguous "
            << chw.is_contiguous() << "\n";
  torch::Tensor batch = chw.to(torch::kFloat).div(255).unsqueeze(0);
  torch::Tensor mean = torch::tensor({0.485, 0.456, 0.406}).view({1, 3, 1, 1});
  torch::Tensor stdv = torch::tensor({0.229, 0.224, 0.225}).view({1, 3, 1, 1});
  batch = (batch - mean) / stdv;
  std::cout << "batch " << batch.sizes() << " min " << batch.min().item<float>() << " max "
            << batch.max().item<float>() << "\n";
  std::cout << batch[0][1].slice(0, 0, 2).slice(1, 0, 4) << "\n";

  // The buffer is shared, not copied.
  pixels[0] = 255;
  std::cout << "shared first pixel " << image[0][0][0].item<int>() << "\n";

  // A deleter runs when the last tensor handle goes away.
  float* owned = new float[4]{1, 2, 3, 4};
  {
    torch::Tensor t = torch::from_blob(owned, {2, 2}, [](void* p) {
      std::cout << "deleter called\n";
      delete[] static_cast<float*>(p);
    });
    std::cout << t << "\n";
  }
  std::cout << "after scope\n";

  at::Tensor out = model.forward({batch}).toTensor();
  std::cout << "prediction " << out.argmax(1).item<int64_t>() << "\n" << out << "\n";
}
