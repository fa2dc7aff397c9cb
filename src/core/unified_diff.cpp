#include "core/unified_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <utility>
#include <vector>

namespace torchless {

namespace {

std::vector<std::string> splitLines(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

}  // namespace

std::string unifiedDiff(const std::string& a, const std::string& b, const std::string& nameA,
                        const std::string& nameB) {
  if (a == b) return {};
  const std::vector<std::string> x = splitLines(a), y = splitLines(b);
  // Longest common subsequence over lines (graphs are small); ops: ' ', '-', '+'.
  const size_t n = x.size(), m = y.size();
  std::vector<std::pair<char, std::string>> ops;
  size_t pre = 0;
  while (pre < n && pre < m && x[pre] == y[pre]) ++pre;
  size_t suf = 0;
  while (suf < n - pre && suf < m - pre && x[n - 1 - suf] == y[m - 1 - suf]) ++suf;
  for (size_t i = 0; i < pre; ++i) ops.emplace_back(' ', x[i]);
  const size_t xn = n - pre - suf, yn = m - pre - suf;
  if (xn * yn <= 16'000'000) {
    std::vector<std::vector<uint32_t>> L(xn + 1, std::vector<uint32_t>(yn + 1, 0));
    for (size_t i = xn; i-- > 0;)
      for (size_t j = yn; j-- > 0;)
        L[i][j] =
            x[pre + i] == y[pre + j] ? L[i + 1][j + 1] + 1 : std::max(L[i + 1][j], L[i][j + 1]);
    size_t i = 0, j = 0;
    while (i < xn || j < yn) {
      if (i < xn && j < yn && x[pre + i] == y[pre + j]) {
        ops.emplace_back(' ', x[pre + i]);
        ++i, ++j;
      } else if (i < xn && (j == yn || L[i + 1][j] >= L[i][j + 1])) {
        ops.emplace_back('-', x[pre + i++]);
      } else {
        ops.emplace_back('+', y[pre + j++]);
      }
    }
  } else {
    for (size_t i = 0; i < xn; ++i) ops.emplace_back('-', x[pre + i]);
    for (size_t j = 0; j < yn; ++j) ops.emplace_back('+', y[pre + j]);
  }
  for (size_t i = n - suf; i < n; ++i) ops.emplace_back(' ', x[i]);

  std::string out = "--- " + nameA + "\n+++ " + nameB + "\n";
  constexpr size_t kContext = 3;
  size_t k = 0;
  while (k < ops.size()) {
    while (k < ops.size() && ops[k].first == ' ') ++k;
    if (k == ops.size()) break;
    size_t start = k >= kContext ? k - kContext : 0;
    size_t end = k;  // extend while changes are within 2*context of each other
    while (end < ops.size()) {
      if (ops[end].first != ' ') {
        ++end;
        continue;
      }
      size_t run = end;
      while (run < ops.size() && ops[run].first == ' ') ++run;
      if (run == ops.size() || run - end > 2 * kContext) {
        end = std::min(ops.size(), end + kContext);
        break;
      }
      end = run;
    }
    size_t aLine = 1, bLine = 1;
    for (size_t q = 0; q < start; ++q) {
      if (ops[q].first != '+') ++aLine;
      if (ops[q].first != '-') ++bLine;
    }
    size_t aCount = 0, bCount = 0;
    for (size_t q = start; q < end; ++q) {
      if (ops[q].first != '+') ++aCount;
      if (ops[q].first != '-') ++bCount;
    }
    out += fmt::format("@@ -{},{} +{},{} @@\n", aCount ? aLine : aLine - 1, aCount,
                       bCount ? bLine : bLine - 1, bCount);
    for (size_t q = start; q < end; ++q) out += std::string(1, ops[q].first) + ops[q].second + "\n";
    k = end;
  }
  return out;
}

}  // namespace torchless
