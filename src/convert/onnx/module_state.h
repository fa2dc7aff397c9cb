#pragma once
// Module state for export: attributes a method writes (prim::SetAttr) become values.
//
// A streaming model keeps its state in the module (silero_vad_v4's `self._h = h`, a keyword
// spotter's `self.frame_buffer.append(frame)`); torch.onnx 1.13 refuses such modules. ONNX
// graphs hold no state, so, as streaming models' own ONNX files do (silero's `h`, `c` inputs and
// `hn`, `cn` outputs), each written tensor attribute becomes one more graph input (its value
// before the call) and one more graph output (its value after the call): feeding the outputs of
// one call as the inputs of the next computes what PyTorch's consecutive calls compute, and the
// attribute's current value is what a fresh module starts from.
//
//   Tensor                the input is the tensor;
//   List[Tensor]          the input is its elements stacked on a new first axis (aten::unbind
//                         makes the list again, aten::stack the output); the elements must
//                         share one shape and the list may not be empty;
//   int / float / bool /  not an input or output: each call starts from the attribute's value
//   str / None            at export time (reads after a write in the call see the write).
//
//   %h : Tensor = prim::GetAttr[name="_h"](%self)       %h_in : Tensor  (graph input "_h")
//   %y : Tensor = aten::tanh(%h)                  ==>   %y : Tensor = aten::tanh(%h_in)
//   prim::SetAttr[name="_h"](%self, %y)                 return (..., %y)  (output "_h.out")
//
// Writes inside prim::If / prim::Loop make the state an If output / a loop-carried value.
#include "core/ivalue.h"
#include "ir/ir.h"

#include <string>
#include <vector>

namespace torchless::onnx_export {

/// One attribute the method writes.
struct ModuleStateSlot {
  enum class Kind { Tensor, TensorList, Scalar };
  /// The attribute's path from the module ("_h", "base_model.last_hidden_state").
  std::string path;
  Kind kind = Kind::Tensor;
  /// Its value before the call (for TensorList: the elements stacked, the input's value).
  IValue initial;
  /// Graph input and graph output indices (Tensor and TensorList only).
  size_t input = 0, output = 0;
};

/// Lowers prim::GetAttr / prim::SetAttr of the attributes that inlined method graph `g` writes
/// (input 0 is `self`, the module object `self`) into values as described above: state inputs
/// are appended after the method's inputs, state outputs after its outputs. Returns the
/// attributes written, in the order of their inputs (scalars last). Throws torchless::Error
/// naming the node and its line for a write to an object not reached from `self` by attribute
/// reads, an attribute of another type (Optional, Dict ...), or an empty or ragged tensor list.
std::vector<ModuleStateSlot> lowerModuleState(Graph& g, const ObjectPtr& self);

}  // namespace torchless::onnx_export
