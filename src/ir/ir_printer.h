#pragma once
// Pieces of PyTorch's graph text format that other printers and the IR parser share. The
// graph and node printers themselves are Graph::print / Node::print (ir.h).

#include "core/ivalue.h"
#include "core/tensor.h"

#include <string>
#include <string_view>

namespace torchless {

/// A float constant as the IR prints it (c10 IValue::repr): `1.`, `-0.`, `0.10000000000000001`,
/// `1e+20`, `inf`, `nan`.
std::string formatIRDouble(double d);

/// A string in double quotes with c10::printQuotedString's escapes (\n, \", \' ... and octal
/// escapes of other non-printable bytes).
std::string quoteIRString(std::string_view s);

/// A tensor attribute: `{1.5}` for one element, at::print's text with newlines turned into
/// spaces for up to 10 elements (` 1  2 [ CPULongType{2} ]`), `<Tensor>` beyond.
std::string formatIRTensor(const Tensor& t);

/// An IValue attribute as c10's IValue::repr prints it with the IR's formatter: `[1, 2]`,
/// `(1, "a", None)`, `annotate(List[int], [])`, `{"a": 1}`, `torch.device("cpu")`.
std::string formatIRIValue(const IValue& v);

}  // namespace torchless
