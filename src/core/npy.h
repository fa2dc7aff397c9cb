#pragma once
// numpy .npy files (format versions 1.0, 2.0, 3.0) to and from Tensors.
//
// Reads dtypes <f2 <f4 <f8 <i1 <i2 <i4 <i8 |u1 |b1 <c8 <c16 (and '=' / '|' native markers);
// big-endian ('>') data is byte-swapped. C and Fortran order; 0-d arrays. Every size in the
// header is checked against the bytes actually present before anything is allocated.

#include "core/tensor.h"

#include <string>

namespace torchless {

/// Loads a .npy file as a contiguous tensor. Throws torchless::Error with the file as place on
/// a missing file, bad magic, a malformed header, an unsupported dtype or short data.
Tensor loadNpy(const std::string& path);

/// Parses .npy bytes already in memory; `name` is the place used in errors.
Tensor parseNpy(const void* data, size_t size, const std::string& name);

/// The .npy bytes (version 1.0 header, or 2.0 when the header needs it) of `t` in C order.
/// Throws for dtypes numpy has no equivalent of (BFloat16, quantized).
std::string npyBytes(const Tensor& t);

/// Writes `t` as a .npy file, atomically (Note [Atomic writes], core/atomic_file.h).
void saveNpy(const std::string& path, const Tensor& t);

}  // namespace torchless
