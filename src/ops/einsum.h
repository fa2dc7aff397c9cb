#pragma once
// torch.einsum.

#include "core/tensor.h"

#include <string>
#include <vector>

namespace torchless::ops {

/// torch.einsum(equation, operands): subscripts a-z and A-Z, `...` for broadcast dims, an
/// optional `->output` (without it: the subscripts seen once, in order A-Z then a-z, after the
/// ellipsis dims); spaces are ignored. A repeated subscript in one operand takes the diagonal;
/// subscripts not in the output are summed. Operands are contracted left to right with bmm,
/// as PyTorch's sumproduct_pair does. Throws PyTorch's messages ("einsum(): subscript j has
/// size 4 for operand 1 which does not broadcast with previously seen size 3", ...).
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);

}  // namespace torchless::ops
