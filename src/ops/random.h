#pragma once
// Random sampling with PyTorch's numbers: the default CPU generator (at::CPUGeneratorImpl,
// an mt19937 seeded from the OS at start-up, as libtorch's, or by torch.manual_seed) and the
// CPU kernels' transforms of PyTorch 1.13 (ATen/core/DistributionsHelper.h,
// TransformationHelper.h, native/cpu/DistributionTemplates.h). After the same manual_seed,
// torch.rand / randn / randint / randperm / normal_ / uniform_ / bernoulli give the same
// tensors as PyTorch.
//
// Note [CPU capability of normal_]
// normal_ on a contiguous float tensor of >= 16 elements transforms uniforms by Box-Muller,
// 16 at a time. PyTorch compiles that loop once per CPU capability and the results differ in
// the last bits: AVX2 (its default when the CPU has AVX2 and FMA) uses avx_mathfun's log and
// sincos; "default" uses libm's. We choose as PyTorch chooses (the ATEN_CPU_CAPABILITY
// environment variable, else AVX2 when the CPU has AVX2 and FMA). Both are bit-exact with
// PyTorch 1.13 (tests/sdk). Known difference: PyTorch's opt-in AVX512 build vectorizes that
// loop differently, so with ATEN_CPU_CAPABILITY=avx512 float randn of >= 16 elements differs
// in the last bit or two (we use the "default" code there).
//
// All sampling holds the generator's mutex for the whole tensor, as PyTorch does, so tensors
// drawn from several threads get disjoint parts of the stream.

#include "core/tensor.h"

#include <cstdint>
#include <optional>

namespace torchless::ops {

/// torch.manual_seed(seed): reseeds the default generator and drops its cached normal sample.
void manualSeed(uint64_t seed);
/// torch.initial_seed(): the seed the default generator was last seeded with.
uint64_t initialSeed();

/// Tensor.uniform_(from, to) on a Float or Double tensor (others: torchless::Error).
void uniform_(const Tensor& self, double from, double to);
/// Tensor.normal_(mean, std) on a Float or Double tensor; std >= 0.
void normal_(const Tensor& self, double mean, double std);
/// Tensor.random_(from, to): integers in [from, to) (to = nullopt: up to the dtype's largest
/// exact integer + 1, as PyTorch). Any real dtype but Bool/Half/BFloat16 keep PyTorch's checks.
void random_(const Tensor& self, int64_t from, std::optional<int64_t> to);
/// Tensor.random_(): integers in [0, 2^mantissa] for floats, [0, max] for integers.
void random_(const Tensor& self);
/// torch.randperm(n, dtype): a permutation of 0..n-1 (PyTorch's CPU algorithm).
Tensor randperm(int64_t n, ScalarType dtype);
/// Tensor.bernoulli_(p) with a float probability (PyTorch's CPU kernel without MKL).
void bernoulli_(const Tensor& self, double p);
/// Tensor.bernoulli_(p) with a Float or Double tensor of probabilities broadcast to self
/// (torch.bernoulli(p) is bernoulli_ of an empty tensor shaped as p).
void bernoulli_(const Tensor& self, const Tensor& p);

}  // namespace torchless::ops
