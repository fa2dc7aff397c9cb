#include "ops/spectral.h"

#include "core/error.h"
#include "ops/parallel.h"

#include <cmath>
#include <complex>
#include <vector>

namespace torchless::ops {

Tensor stft(const Tensor& x, int64_t nFft, std::optional<int64_t> hop,
            std::optional<int64_t> winLength, const std::optional<Tensor>& window, bool normalized,
            std::optional<bool> onesided, std::optional<bool> returnComplex) {
  const char* op = "stft";
  if (isComplexType(x.dtype())) throw Error(fmt::format("{}: complex input is not supported", op));
  if (x.dim() != 1 && x.dim() != 2)
    throw Error(fmt::format("{}: expected a 1-D or 2-D tensor, got {}-D", op, x.dim()));
  if (!returnComplex.has_value())
    throw Error(
        fmt::format("{}: requires the return_complex parameter be given for real inputs "
                    "(as PyTorch 1.13 does)",
                    op));
  const bool batched = x.dim() == 2;
  const int64_t B = batched ? x.size(0) : 1, L = x.size(-1);
  const int64_t hopLen = hop.value_or(nFft / 4);
  const int64_t win = winLength.value_or(nFft);
  if (nFft <= 0 || nFft > L)
    throw Error(fmt::format("{}: expected 0 < n_fft <= {}, but got n_fft={}", op, L, nFft));
  if (hopLen <= 0) throw Error(fmt::format("{}: expected hop_length > 0, but got {}", op, hopLen));
  if (win <= 0 || win > nFft)
    throw Error(
        fmt::format("{}: expected 0 < win_length <= n_fft, but got win_length={}", op, win));
  std::vector<double> w(static_cast<size_t>(nFft), 0.0);
  const int64_t left = (nFft - win) / 2;
  if (window) {
    if (window->dim() != 1 || window->size(0) != win)
      throw Error(
          fmt::format("{}: expected a 1-D window tensor of size equal to win_length={}, but "
                      "got window with size {}",
                      op, win, sizesToString(window->sizes())));
    for (int64_t i = 0; i < win; ++i) w[static_cast<size_t>(left + i)] = window->doubleAt(i);
  } else {
    for (int64_t i = 0; i < win; ++i) w[static_cast<size_t>(left + i)] = 1.0;
  }
  const bool oneSided = onesided.value_or(true);
  const int64_t F = oneSided ? nFft / 2 + 1 : nFft;
  const int64_t frames = 1 + (L - nFft) / hopLen;
  Tensor xc = x.to(ScalarType::Double).contiguous();
  const double* xp = xc.data<double>();
  std::vector<double> cosT(static_cast<size_t>(nFft)), sinT(static_cast<size_t>(nFft));
  const double kTwoPi = 6.283185307179586476925286766559;
  for (int64_t i = 0; i < nFft; ++i) {
    cosT[static_cast<size_t>(i)] =
        std::cos(kTwoPi * static_cast<double>(i) / static_cast<double>(nFft));
    sinT[static_cast<size_t>(i)] =
        std::sin(kTwoPi * static_cast<double>(i) / static_cast<double>(nFft));
  }
  const double norm = normalized ? 1.0 / std::sqrt(static_cast<double>(nFft)) : 1.0;
  IntList sizes;
  if (batched) sizes.push_back(B);
  sizes.push_back(F);
  sizes.push_back(frames);
  Tensor out = Tensor::empty(sizes, ScalarType::ComplexFloat);
  auto* op_ = out.data<std::complex<float>>();
  parallelFor(B * frames, 4, [&](int64_t b0, int64_t b1) {
    std::vector<double> seg(static_cast<size_t>(nFft));
    for (int64_t bf = b0; bf < b1; ++bf) {
      const int64_t b = bf / frames, t = bf % frames;
      const double* src = xp + b * L + t * hopLen;
      for (int64_t n = 0; n < nFft; ++n)
        seg[static_cast<size_t>(n)] = src[n] * w[static_cast<size_t>(n)];
      for (int64_t k = 0; k < F; ++k) {
        double re = 0, im = 0;
        int64_t idx = 0;
        for (int64_t n = 0; n < nFft; ++n) {
          re += seg[static_cast<size_t>(n)] * cosT[static_cast<size_t>(idx)];
          im -= seg[static_cast<size_t>(n)] * sinT[static_cast<size_t>(idx)];
          idx += k;
          if (idx >= nFft) idx -= nFft;
        }
        op_[(b * F + k) * frames + t] =
            std::complex<float>(static_cast<float>(re * norm), static_cast<float>(im * norm));
      }
    }
  });
  if (*returnComplex) return out;
  // The real view: [..., 2] float.
  IntList rs = sizes;
  rs.push_back(2);
  return Tensor::fromStorage(out.storage(), 0, rs, contiguousStrides(rs), ScalarType::Float);
}

}  // namespace torchless::ops
