#pragma once
// torchvision's detection ops on the CPU, ported from torchvision 0.14's CPU kernels
// (torchvision/csrc/ops/cpu/nms_kernel.cpp, roi_align_kernel.cpp): same loops, same
// arithmetic in the input's dtype, so results match torchvision's bit for bit.

#include "core/tensor.h"

namespace torchless::ops {

/// torchvision::nms(dets [N, 4] (x1, y1, x2, y2), scores [N], iou_threshold) -> Long [K]: the
/// indices kept, by decreasing score (ties keep the lower index first); a box is dropped when
/// its IoU with a kept box is > iou_threshold. Throws torchvision's messages on bad shapes.
Tensor nms(const Tensor& dets, const Tensor& scores, double iouThreshold);

/// torchvision::roi_align(input [N, C, H, W], rois [K, 5] (batch index, x1, y1, x2, y2),
/// spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned) -> [K, C, ph, pw]:
/// the average of bilinear samples per bin (sampling_ratio <= 0: ceil(roi size / bins)).
Tensor roiAlign(const Tensor& input, const Tensor& rois, double spatialScale, int64_t pooledHeight,
                int64_t pooledWidth, int64_t samplingRatio, bool aligned);

}  // namespace torchless::ops
