// torchless::save: a module we loaded, printed from our IR and written back, loads again in
// torchless and in real PyTorch (torch.jit.load) and computes PyTorch's outputs.
#include "api/module.h"
#include "core/error.h"
#include "core/npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

using namespace torchless;
namespace fs = std::filesystem;

namespace {

struct SaveCase {
  const char* name;
  std::string model, input, expected;
};

std::vector<SaveCase> cases() {
  const std::string src = TORCHLESS_SOURCE_DIR;
  const std::string wild = src + "/../shared/wild/";
  std::vector<SaveCase> out = {{"tiny_cnn", src + "/examples/tiny_cnn.pt",
                                src + "/examples/input.npy", src + "/examples/expected.npy"}};
  for (const char* w : {"tiny_nerf_traced", "cms_jetmatcher", "torchserve_dummy"})
    out.push_back({w, wild + w + "/model.pt", wild + w + "/in0.npy", wild + w + "/out0.npy"});
  return out;
}

double maxAbsDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(a.doubleAt(i) - b.doubleAt(i)));
  return m;
}

TEST(Save, ReloadsInTorchlessAndInPyTorch) {
  const fs::path out = fs::path(TORCHLESS_BINARY_DIR) / "save_test";
  fs::create_directories(out);
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    Module m = load(c.model);
    const std::string saved = (out / (std::string(c.name) + ".pt")).string();
    save(m, saved);
    Tensor x = loadNpy(c.input);
    Tensor expected = loadNpy(c.expected);
    Module again = load(saved);
    Tensor y = again.forward({IValue(x)}).toTensor();
    EXPECT_LE(maxAbsDiff(y, expected), 1e-4);
    const std::string cmd = "/usr/bin/python3 " + std::string(TORCHLESS_SOURCE_DIR) +
                            "/tests/serialize/check_torch_loads.py " + saved + " " + c.input + " " +
                            c.expected;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
}

TEST(Save, NothingWrittenForAnEmptyModule) {
  const fs::path p = fs::path(TORCHLESS_BINARY_DIR) / "save_test" / "empty.pt";
  fs::remove(p);
  EXPECT_THROW(save(Module(), p.string()), Error);
  EXPECT_FALSE(fs::exists(p));
}

}  // namespace
