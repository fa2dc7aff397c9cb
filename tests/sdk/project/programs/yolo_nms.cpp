// YOLO-style post-processing: loops over an accessor, score threshold, NMS by hand.
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <vector>

struct Box {
  float x1, y1, x2, y2, score;
  int64_t index;
};

static float iou(const Box& a, const Box& b) {
  float ix = std::max(0.f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  float iy = std::max(0.f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  float inter = ix * iy;
  float uni = (a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter;
  return uni > 0 ? inter / uni : 0.f;
}

int main(int argc, const char* argv[]) {
  torch::jit::script::Module det = torch::jit::load(argv[1]);
  torch::Tensor image = torch::linspace(0, 1, 3 * 32 * 32).reshape({1, 3, 32, 32});
  torch::Tensor pred = det.forward({image}).toTensor().squeeze(0).contiguous();  // [64, 6]
  std::cout << "pred " << pred.sizes() << "\n";
  auto a = pred.accessor<float, 2>();
  std::vector<Box> boxes;
  for (int64_t i = 0; i < a.size(0); ++i) {
    float score = a[i][4] * a[i][5];
    if (score < 0.2f) continue;
    float cx = a[i][0], cy = a[i][1], w = a[i][2], h = a[i][3];
    boxes.push_back({cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, score, i});
  }
  std::sort(boxes.begin(), boxes.end(),
            [](const Box& l, const Box& r) { return l.score > r.score; });
  std::vector<Box> kept;
  for (const Box& b : boxes) {
    bool keep = true;
    for (const Box& k : kept)
      if (iou(b, k) > 0.45f) keep = false;
    if (keep) kept.push_back(b);
  }
  std::printf("candidates %zu kept %zu\n", boxes.size(), kept.size());
  for (const Box& b : kept)
    std::printf("#%lld [%.2f %.2f %.2f %.2f] %.3f\n", static_cast<long long>(b.index), b.x1, b.y1,
                b.x2, b.y2, b.score);
  torch::Tensor scores = pred.select(1, 4) * pred.select(1, 5);
  torch::Tensor mask = scores > 0.2;
  std::cout << "mask count " << mask.sum().item<int64_t>() << "\n";
  return 0;
}
