#pragma once
// oneDNN's int8 convolution as the quantized kernels (ops/quantized.cpp) and the engine's int8
// Convolution / MatMul layers (convert/engine/layer_exec.cpp) both configure it: one place for
// the attributes that make oneDNN give PyTorch's integers (Note [oneDNN int8 accumulators] in
// ops/quantized.cpp).
#include <oneapi/dnnl/dnnl.hpp>

#include <optional>
#include <vector>

namespace torchless::ops {

/// What an int8 convolution does after the u8 x s8 sums (the input's zero point is always a
/// run-time argument: DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, one s32).
struct Int8ConvAttrs {
  /// Per-output-channel output scales (QConvScales::mult): oneDNN requantizes, u8 out, with
  /// the output zero point as a run-time argument (DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST).
  /// Null: the exact s32 sums out.
  const std::vector<float>* mult = nullptr;
  /// With mult: a bias (f32 [OC], accumulator units: QConvScales::bias) and a relu post-op.
  bool hasBias = false, relu = false;
  /// The caller passes the scratchpad (DNNL_ARG_SCRATCHPAD, pd.scratchpad_desc()); with the
  /// library's, oneDNN may allocate one per execution.
  bool userScratchpad = false;
};

/// The primitive descriptor of oneDNN's direct forward-inference convolution of u8 `src` and
/// s8 `weights` into `dst` (u8 with attrs.mult, else s32) with `attrs`; dilation counts from 0
/// as oneDNN's does; padding is symmetric. Returns nullopt when oneDNN has only its reference
/// implementation for the problem (the kernel's own loops are faster) or none.
std::optional<dnnl::convolution_forward::primitive_desc> int8ConvPrimitiveDesc(
    const dnnl::memory::desc& src, const dnnl::memory::desc& weights, const dnnl::memory::desc& dst,
    const dnnl::memory::dims& strides, const dnnl::memory::dims& dilation,
    const dnnl::memory::dims& pads, const Int8ConvAttrs& attrs);

}  // namespace torchless::ops
