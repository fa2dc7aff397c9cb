#pragma once
// Helpers of the api tests: comparing tensors with PyTorch's, running the CLI.
#include "api/cli_io.h"
#include "api/module.h"
#include "core/npy.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace torchless::testing {

/// Elementwise |a - e| <= atol + rtol * |e| (NaN equals NaN), same shape and dtype.
inline ::testing::AssertionResult allClose(const Tensor& actual, const Tensor& expected,
                                           double rtol, double atol) {
  if (actual.sizes() != expected.sizes())
    return ::testing::AssertionFailure()
           << "shape " << fmt::format("[{}]", fmt::join(actual.sizes(), ", ")) << " != expected "
           << fmt::format("[{}]", fmt::join(expected.sizes(), ", "));
  if (actual.dtype() != expected.dtype())
    return ::testing::AssertionFailure() << "dtype " << dtypeName(actual.dtype()) << " != expected "
                                         << dtypeName(expected.dtype());
  Tensor a = actual.contiguous(), e = expected.contiguous();
  int64_t bad = 0, firstBad = -1;
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.doubleAt(i), y = e.doubleAt(i);
    if ((std::isnan(x) && std::isnan(y)) || x == y) continue;  // equal infinities match
    double d = std::fabs(x - y);
    if (!(d <= atol + rtol * std::fabs(y))) {
      if (firstBad < 0) firstBad = i;
      ++bad;
      worst = std::max(worst, d);
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << a.numel() << " elements differ (max abs diff " << worst
         << "); first at flat index " << firstBad << ": " << a.doubleAt(firstBad) << " vs "
         << e.doubleAt(firstBad);
}

inline std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// An input word with file names made absolute against `dir` (x.npy, @list:a,b, @dict:k=a).
inline std::string resolveWord(const std::string& w, const std::filesystem::path& dir) {
  auto isFile = [](const std::string& s) { return s.size() > 4 && s.ends_with(".npy"); };
  for (const char* prefix : {"@list:", "@dict:"}) {
    if (w.rfind(prefix, 0) != 0) continue;
    std::string out = prefix;
    std::stringstream items(w.substr(6));
    std::string item;
    bool first = true;
    while (std::getline(items, item, ',')) {
      if (!first) out += ",";
      first = false;
      size_t eq = item.find('=');
      if (eq != std::string::npos)
        out += item.substr(0, eq + 1) + (dir / item.substr(eq + 1)).string();
      else
        out += (dir / item).string();
    }
    return out;
  }
  return isFile(w) ? (dir / w).string() : w;
}

/// Loads `model`, runs `method` on CLI words, flattens the result as `torchless run` does.
inline std::vector<FlatOutput> runFlat(const std::string& model, const std::string& method,
                                       const std::vector<std::string>& words) {
  Module m = load(model);
  std::vector<IValue> args =
      parseInputs(words, m.methodParams(method), [](const std::string& p) { return loadNpy(p); });
  return flattenOutputs(m.runMethod(method, std::move(args)));
}

/// Result of running the CLI.
struct CliResult {
  int status = -1;
  std::string out, err;
  std::string firstErrLine() const { return err.substr(0, err.find('\n')); }
};

/// A fresh empty directory under the system temp dir for one test's outputs
/// (`torchless_<prefix>_<name>_<pid>`).
inline std::filesystem::path freshDir(const std::string& prefix, const std::string& name) {
  std::filesystem::path d = std::filesystem::temp_directory_path() /
                            ("torchless_" + prefix + "_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline std::string shellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// The torchless binary (TORCHLESS_BIN, else the build tree's bin/torchless).
inline std::string torchlessBin() {
  const char* b = std::getenv("TORCHLESS_BIN");
  return b ? b : std::string(TORCHLESS_BINARY_DIR) + "/bin/torchless";
}

/// Runs `torchless ARGS...`, capturing stdout, stderr and the exit status.
inline CliResult runCli(const std::vector<std::string>& args) {
  static int counter = 0;
  auto tmp = std::filesystem::temp_directory_path() /
             fmt::format("torchless_api_cli_{}_{}", ::getpid(), counter++);
  std::string cmd = shellQuote(torchlessBin());
  for (const auto& a : args) cmd += " " + shellQuote(a);
  cmd += " >" + shellQuote(tmp.string() + ".out") + " 2>" + shellQuote(tmp.string() + ".err");
  int raw = std::system(cmd.c_str());
  CliResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = readFile(tmp.string() + ".out");
  r.err = readFile(tmp.string() + ".err");
  std::filesystem::remove(tmp.string() + ".out");
  std::filesystem::remove(tmp.string() + ".err");
  return r;
}

}  // namespace torchless::testing
