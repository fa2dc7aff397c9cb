// torch.einsum (see einsum.h).
//
// Every operand is first brought to one canonical layout with a dim per label (ellipsis dims
// first, then A-Z, a-z), size 1 where it lacks the label; repeated subscripts become diagonals
// (an as_strided view). Labels only one operand uses and the output does not are summed in
// that operand; then operands are contracted left to right: labels both have and that are
// still needed (output or later operands) are bmm's batch, labels both have and nobody needs
// later are its reduction dim.
#include "ops/einsum.h"

#include "ops/dispatch.h"
#include "ops/linalg.h"
#include "ops/reduction.h"
#include "ops/shape.h"

#include <algorithm>
#include <numeric>

namespace torchless::ops {

namespace {

constexpr int kLetters = 52;
constexpr int kEllipsis = -1;

int labelOf(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c - 'a' + 26; }
char charOf(int l) { return static_cast<char>(l < 26 ? 'A' + l : 'a' + (l - 26)); }
bool isSubscript(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// One side of the equation: the labels of a term, kEllipsis for `...`.
std::vector<int> parseTerm(const std::string& eq, size_t begin, size_t end, bool& hasEllipsis) {
  std::vector<int> labels;
  hasEllipsis = false;
  for (size_t i = begin; i < end; ++i) {
    const char c = eq[i];
    if (c == ' ') continue;
    if (c == '.') {
      TL_CHECK(!hasEllipsis && i + 2 < end && eq[i + 1] == '.' && eq[i + 2] == '.',
               "einsum(): found '.' for operand that is not part of any ellipsis");
      hasEllipsis = true;
      labels.push_back(kEllipsis);
      i += 2;
      continue;
    }
    TL_CHECK(isSubscript(c),
             "einsum(): invalid subscript given at index {} in the equation string, subscripts "
             "must be in [a-zA-Z]",
             i);
    labels.push_back(labelOf(c));
  }
  return labels;
}

int64_t product(const IntList& s, const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= s[static_cast<size_t>(d)];
  return p;
}

/// out dim i = x dim of label order[i]; x has a dim per label.
Tensor permuteToOrder(const Tensor& x, const std::vector<int64_t>& order) {
  return permute(x, IntList(order.begin(), order.end()));
}

/// Contracts aligned A and B (a dim per label, sizes equal or 1) keeping `keep` labels.
Tensor contractPair(Tensor a, Tensor b, const std::vector<bool>& keep) {
  const int64_t L = a.dim();
  std::vector<int64_t> batch, onlyA, onlyB, summed, rest;
  for (int64_t l = 0; l < L; ++l) {
    const int64_t sa = a.size(l), sb = b.size(l);
    const bool inA = sa != 1, inB = sb != 1;
    if (!keep[static_cast<size_t>(l)]) {
      if (inA && inB) {
        summed.push_back(l);
        continue;
      }
      if (inA) a = sum(a, {l}, true);
      if (inB) b = sum(b, {l}, true);
      rest.push_back(l);
      continue;
    }
    if (inA && inB)
      batch.push_back(l);
    else if (inA)
      onlyA.push_back(l);
    else if (inB)
      onlyB.push_back(l);
    else
      rest.push_back(l);
  }
  auto concat = [](std::initializer_list<const std::vector<int64_t>*> parts) {
    std::vector<int64_t> out;
    for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
    return out;
  };
  std::vector<int64_t> bOnly = onlyB, aOnly = onlyA;
  // b's rest: every label neither in batch, summed nor onlyB (size 1 in b).
  std::vector<int64_t> restA = concat({&onlyB, &rest}), restB = concat({&onlyA, &rest});
  std::sort(restA.begin(), restA.end());
  std::sort(restB.begin(), restB.end());
  const IntList& sa = a.sizes();
  const IntList& sb = b.sizes();
  const int64_t Bt = product(sa, batch), M = product(sa, onlyA), K = product(sa, summed),
                N = product(sb, onlyB);
  Tensor a3 = reshape(permuteToOrder(a, concat({&batch, &onlyA, &summed, &restA})), {Bt, M, K});
  Tensor b3 = reshape(permuteToOrder(b, concat({&batch, &summed, &onlyB, &restB})), {Bt, K, N});
  Tensor r = bmm(a3, b3);  // [Bt, M, N]
  IntList shape;
  for (int64_t l : batch) shape.push_back(sa[static_cast<size_t>(l)]);
  for (int64_t l : onlyA) shape.push_back(sa[static_cast<size_t>(l)]);
  for (int64_t l : onlyB) shape.push_back(sb[static_cast<size_t>(l)]);
  std::vector<int64_t> others = concat({&summed, &rest});
  std::sort(others.begin(), others.end());
  for (size_t i = 0; i < others.size(); ++i) shape.push_back(1);
  r = reshape(r, shape);
  const std::vector<int64_t> order = concat({&batch, &onlyA, &onlyB, &others});
  std::vector<int64_t> perm(static_cast<size_t>(L));
  for (size_t i = 0; i < order.size(); ++i)
    perm[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  return permuteToOrder(r, perm);
}

}  // namespace

Tensor einsum(const std::string& eq, const std::vector<Tensor>& operands) {
  TL_CHECK(!operands.empty(), "einsum(): must provide at least one operand");
  const size_t arrow = eq.find("->");
  const size_t lhsEnd = arrow == std::string::npos ? eq.size() : arrow;
  // Operand terms.
  std::vector<std::vector<int>> terms;
  std::vector<bool> termEllipsis;
  size_t start = 0;
  while (true) {
    const size_t comma = eq.find(',', start);
    const size_t end = comma == std::string::npos || comma > lhsEnd ? lhsEnd : comma;
    bool ell = false;
    terms.push_back(parseTerm(eq, start, end, ell));
    termEllipsis.push_back(ell);
    if (end == lhsEnd) break;
    start = end + 1;
  }
  TL_CHECK(terms.size() >= operands.size(),
           "einsum(): more operands were provided than specified in the equation");
  TL_CHECK(terms.size() <= operands.size(),
           "einsum(): fewer operands were provided than specified in the equation");
  for (size_t i = 1; i < operands.size(); ++i)
    TL_CHECK(operands[i].dtype() == operands[0].dtype(), "expected scalar type {} but found {}",
             toString(operands[0].dtype()), toString(operands[i].dtype()));

  // Ellipsis dims: as many as the widest operand covers.
  int64_t ellDims = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t letters = static_cast<int64_t>(terms[i].size()) - (termEllipsis[i] ? 1 : 0);
    const int64_t nd = operands[i].dim();
    if (termEllipsis[i]) {
      TL_CHECK(letters <= nd,
               "einsum(): the number of subscripts in the equation ({}) is more than the number of "
               "dimensions ({}) "
               "for operand {}",
               letters, nd, i);
      ellDims = std::max(ellDims, nd - letters);
    } else {
      TL_CHECK(letters == nd,
               "einsum(): the number of subscripts in the equation ({}) does not match the number "
               "of dimensions "
               "({}) for operand {} and no ellipsis was given",
               letters, nd, i);
    }
  }
  // Canonical label index: ellipsis dims 0..E-1, then the letters used, in order A-Z, a-z.
  std::vector<int64_t> labelCount(kLetters, 0);
  for (const auto& t : terms)
    for (int l : t)
      if (l != kEllipsis) ++labelCount[static_cast<size_t>(l)];
  std::vector<int64_t> slot(kLetters, -1);
  int64_t L = ellDims;
  for (int l = 0; l < kLetters; ++l)
    if (labelCount[static_cast<size_t>(l)] > 0) slot[static_cast<size_t>(l)] = L++;
  std::vector<int> letterOfSlot(static_cast<size_t>(L), 0);
  for (int l = 0; l < kLetters; ++l)
    if (slot[static_cast<size_t>(l)] >= 0)
      letterOfSlot[static_cast<size_t>(slot[static_cast<size_t>(l)])] = l;

  // Output labels (canonical indices).
  std::vector<int64_t> outLabels;
  if (arrow != std::string::npos) {
    bool ell = false;
    const std::vector<int> out = parseTerm(eq, arrow + 2, eq.size(), ell);
    std::vector<bool> seen(kLetters, false);
    for (int l : out) {
      if (l == kEllipsis) {
        for (int64_t e = 0; e < ellDims; ++e) outLabels.push_back(e);
        continue;
      }
      TL_CHECK(
          labelCount[static_cast<size_t>(l)] > 0,
          "einsum(): output subscript {} does not appear in the equation for any input operand",
          charOf(l));
      TL_CHECK(!seen[static_cast<size_t>(l)],
               "einsum(): output subscript {} appears more than once in the output", charOf(l));
      seen[static_cast<size_t>(l)] = true;
      outLabels.push_back(slot[static_cast<size_t>(l)]);
    }
  } else {
    for (int64_t e = 0; e < ellDims; ++e) outLabels.push_back(e);
    for (int l = 0; l < kLetters; ++l)
      if (labelCount[static_cast<size_t>(l)] == 1)
        outLabels.push_back(slot[static_cast<size_t>(l)]);
  }

  // Align every operand to [L] dims.
  std::vector<int64_t> labelSize(static_cast<size_t>(L), 1);
  std::vector<Tensor> aligned;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Tensor& x = operands[i];
    // Per dim of x, its canonical label.
    std::vector<int64_t> dimLabel;
    const int64_t letters = static_cast<int64_t>(terms[i].size()) - (termEllipsis[i] ? 1 : 0);
    for (int l : terms[i]) {
      if (l == kEllipsis) {
        const int64_t covered = x.dim() - letters;
        for (int64_t e = ellDims - covered; e < ellDims; ++e) dimLabel.push_back(e);
      } else {
        dimLabel.push_back(slot[static_cast<size_t>(l)]);
      }
    }
    // Diagonals for repeated labels.
    IntList sizes = x.sizes(), strides = x.strides();
    std::vector<int64_t> labels;
    IntList dsizes, dstrides;
    for (size_t d = 0; d < dimLabel.size(); ++d) {
      auto it = std::find(labels.begin(), labels.end(), dimLabel[d]);
      if (it == labels.end()) {
        labels.push_back(dimLabel[d]);
        dsizes.push_back(sizes[d]);
        dstrides.push_back(strides[d]);
        continue;
      }
      const size_t k = static_cast<size_t>(it - labels.begin());
      TL_CHECK(
          dsizes[k] == sizes[d],
          "einsum(): subscript {} is repeated for operand {} but the sizes don't match, {} != {}",
          charOf(letterOfSlot[static_cast<size_t>(dimLabel[d])]), i, sizes[d], dsizes[k]);
      dstrides[k] += strides[d];
    }
    Tensor v = x.asStrided(dsizes, dstrides, x.storageOffset());
    // Sizes and broadcasting.
    for (size_t k = 0; k < labels.size(); ++k) {
      int64_t& seen = labelSize[static_cast<size_t>(labels[k])];
      const int64_t s = dsizes[k];
      if (s == 1 || s == seen) continue;
      if (seen == 1) {
        seen = s;
        continue;
      }
      if (labels[k] >= ellDims)
        throw Error(
            fmt::format("einsum(): subscript {} has size {} for operand {} which does not "
                        "broadcast with previously seen size {}",
                        charOf(letterOfSlot[static_cast<size_t>(labels[k])]), s, i, seen));
      throw Error(fmt::format(
          "einsum(): operands do not broadcast with remapped shapes (original->remapped): "
          "size {} against {} in an ellipsis dimension",
          s, seen));
    }
    // Unsqueeze missing labels and permute to canonical order.
    IntList shape = dsizes;
    std::vector<int64_t> order(labels.begin(), labels.end());
    for (int64_t l = 0; l < L; ++l)
      if (std::find(labels.begin(), labels.end(), l) == labels.end()) {
        order.push_back(l);
        shape.push_back(1);
      }
    v = reshape(v, shape);
    std::vector<int64_t> perm(static_cast<size_t>(L));
    for (size_t p = 0; p < order.size(); ++p)
      perm[static_cast<size_t>(order[p])] = static_cast<int64_t>(p);
    aligned.push_back(permute(v, IntList(perm.begin(), perm.end())));
  }

  std::vector<bool> inOutput(static_cast<size_t>(L), false);
  for (int64_t l : outLabels) inOutput[static_cast<size_t>(l)] = true;
  // Labels only one operand has and the output does not: summed there first.
  std::vector<int> users(static_cast<size_t>(L), 0);
  for (const auto& a : aligned)
    for (int64_t l = 0; l < L; ++l) users[static_cast<size_t>(l)] += a.size(l) != 1 ? 1 : 0;
  for (auto& a : aligned) {
    IntList dims;
    for (int64_t l = 0; l < L; ++l)
      if (!inOutput[static_cast<size_t>(l)] && a.size(l) != 1 && users[static_cast<size_t>(l)] == 1)
        dims.push_back(l);
    if (!dims.empty()) a = sum(a, dims, true);
  }
  Tensor result = aligned[0];
  for (size_t i = 1; i < aligned.size(); ++i) {
    std::vector<bool> keep = inOutput;
    for (size_t j = i + 1; j < aligned.size(); ++j)
      for (int64_t l = 0; l < L; ++l)
        if (aligned[j].size(l) != 1) keep[static_cast<size_t>(l)] = true;
    result = contractPair(result, aligned[i], keep);
  }
  // Remaining non-output labels (one operand: repeated or broadcast ones) are summed.
  IntList dims;
  for (int64_t l = 0; l < L; ++l)
    if (!inOutput[static_cast<size_t>(l)] && result.size(l) != 1) dims.push_back(l);
  if (!dims.empty()) result = sum(result, dims, true);
  // Output order, then drop the size-1 non-output dims.
  std::vector<int64_t> order(outLabels.begin(), outLabels.end());
  for (int64_t l = 0; l < L; ++l)
    if (!inOutput[static_cast<size_t>(l)]) order.push_back(l);
  IntList outShape;
  for (int64_t l : outLabels) outShape.push_back(result.size(l));
  result = permute(result, IntList(order.begin(), order.end()));
  return reshape(result, outShape);
}

}  // namespace torchless::ops
