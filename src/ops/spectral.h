#pragma once
// Spectral ops: aten::stft (what torchaudio's Spectrogram / MelSpectrogram call).

#include "core/tensor.h"

#include <optional>

namespace torchless::ops {

/// torch.stft without centering (aten::stft; torch.functional.stft pads for center=True before
/// calling it). x: float [L] or [B, L]; window: [win_length] (default: ones), centered in n_fft
/// when shorter. Returns complex64 [B?, n_fft/2+1 (onesided) or n_fft, frames] with
/// frames = 1 + (L - n_fft) / hop, or with return_complex=false the real view [..., 2].
/// normalized scales by n_fft^-1/2. The DFT is computed directly in double precision.
/// Throws torchless::Error for n_fft <= 0 or > L, hop <= 0, win_length out of (0, n_fft], a
/// window of the wrong length, or complex input.
Tensor stft(const Tensor& x, int64_t nFft, std::optional<int64_t> hop,
            std::optional<int64_t> winLength, const std::optional<Tensor>& window, bool normalized,
            std::optional<bool> onesided, std::optional<bool> returnComplex);

}  // namespace torchless::ops
