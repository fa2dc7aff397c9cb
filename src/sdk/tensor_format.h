#pragma once
// Printing as libtorch's C++ prints: `std::cout << tensor` (at::print, linesize 80) and
// `std::cout << ivalue`. The compat headers and the C API print through these, so that a
// program's stdout is the same bytes with torchless as with libtorch.

#include "core/ivalue.h"
#include "core/tensor.h"

#include <string>

namespace torchless::sdk {

/// libtorch's type string of a CPU tensor: "CPUFloatType", "CPULongType", ...
std::string legacyTypeName(ScalarType t);

/// The tensor as libtorch's operator<<(std::ostream&, const at::Tensor&) prints it into a
/// stream in its default state: the elements (per 2-d slice, scaled or scientific as
/// at::print chooses), then "[ CPUFloatType{2,3} ]". No trailing newline. Quantized tensors
/// throw torchless::Error.
std::string formatTensor(const Tensor& t);

/// The value as libtorch's operator<<(std::ostream&, const c10::IValue&) prints it: tensors
/// as formatTensor, floats with a trailing "." when integral, tuples "(a, b)" / "(a,)",
/// lists "[a, b]", dicts "{k: v}", bools "True" / "False", None "None", strings bare.
std::string formatIValue(const IValue& v);

}  // namespace torchless::sdk
