#pragma once
// TorchBind classes (PyTorch's custom C++ classes, `__torch__.torch.classes.<ns>.<Name>`) that
// mobile-optimized and quantized archives hold, rebuilt from their pickled state.
//
// Note [TorchBind objects]
// PyTorch pickles a TorchBind object like a script class with __getstate__: GLOBAL
// '__torch__.torch.classes.xnnpack Conv2dOpContext', EMPTY_TUPLE, NEWOBJ, <state>, BUILD; the
// archive's code/__torch__/torch/classes/<ns>.py is empty. We represent such an object as a
// plain Object whose ClassType has one slot per field of the state, holding the *unpacked*
// tensors (float weights for xnnpack contexts, the quantized weight for quantized packed
// params). Code that uses the objects is compiled against classes declared by
// namespaceSource(): TorchScript source with those slots and the methods PyTorch's classes
// expose (`unpack()`, `stride()`, ... for conv packed params; `unpack()`, `bias()` for linear
// packed params). setState() is __setstate__ (every historical state format PyTorch reads),
// getState() is __getstate__ (the format PyTorch 1.13 writes). Kernels that make such objects
// (prepacked::conv2d_clamp_prepack, quantized::linear_prepack ...) use makeObject(), whose
// process-wide ClassType has the same slot layout (attribute access and method calls are
// bound by slot index from the static type, so both kinds of object work everywhere).
//
// Supported classes and their slots:
//   xnnpack.Conv2dOpContext          weight, bias, stride, padding, dilation, groups,
//                                    output_min, output_max            (state: the same 8)
//   xnnpack.TransposeConv2dOpContext weight, bias, stride, padding, output_padding, dilation,
//                                    groups, output_min, output_max    (state: the same 9)
//   xnnpack.LinearOpContext          weight, bias, output_min, output_max (state: the same 4)
//   quantized.Conv2dPackedParamsBase weight_, bias_, stride_, padding_, output_padding_,
//   quantized.Conv3dPackedParamsBase dilation_, groups_, transpose_    (state: v1, v2 or v3 of
//                                    conv_serialization.h; written as v2, as 1.13 does)
//   quantized.LinearPackedParamsBase weight_, bias_                    (state: (weight, bias))
//   torchless.Engine                 version, network, graph, weights, profiles (our compiled
//                                    engines, convert/engine/engine_record.h; state: the same 5)
//   rnn.CellParamsBase               type_, tensors_, doubles_, longs_, packed_
//                                    (state: (str, Tensor[], float[], int[], packed params[]))

#include "core/ivalue.h"
#include "core/type.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace torchless::torchbind {

/// Every TorchBind class name starts with this.
inline constexpr std::string_view kPrefix = "__torch__.torch.classes.";

/// True when `qualname` is a TorchBind class listed above.
bool isKnownClass(std::string_view qualname);
/// TorchScript source declaring the known classes of namespace `qualifier`
/// ("__torch__.torch.classes.quantized"), as an archive's code/ file would; nullopt when the
/// namespace has none.
std::optional<std::string> namespaceSource(const std::string& qualifier);
/// The process-wide ClassType of a known class (slots as above, no methods). Throws
/// torchless::Error for an unknown name.
ClassTypePtr classType(std::string_view qualname);
/// A new object of classType(qualname) with `slots` (checked: count and value kinds).
ObjectPtr makeObject(std::string_view qualname, std::vector<IValue> slots);

/// __setstate__: fills `obj`'s slots from a pickled state. Throws torchless::Error naming the
/// class and the field when the state does not have the layout PyTorch writes.
void setState(Object& obj, const IValue& state);
/// __getstate__: the state PyTorch 1.13 pickles for `obj`.
IValue getState(const Object& obj);

}  // namespace torchless::torchbind
