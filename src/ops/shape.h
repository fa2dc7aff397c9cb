#pragma once
// Shape, view, indexing and factory ops. Views (view, reshape when possible, permute,
// transpose, expand, squeeze, unsqueeze, select, slice, narrow, split, unbind, diagonal-free
// ones) share the input's storage exactly as PyTorch's do; everything else returns a new
// contiguous tensor. Messages follow PyTorch's wording.

#include "core/tensor.h"
#include "ops/dispatch.h"

#include <optional>
#include <vector>

namespace torchless::ops {

// ---- views ----

/// Resolves one -1 in `shape` against numel ("only one dimension can be inferred", "shape
/// '[2, 5]' is invalid for input of size 6").
IntList inferSize(const IntList& shape, int64_t numel);
/// PyTorch's computeStride: strides that view (sizes, strides) as newShape without copying,
/// or nullopt when impossible.
std::optional<IntList> computeStride(const IntList& sizes, const IntList& strides,
                                     const IntList& newShape);
/// Tensor.view: a view or "view size is not compatible with input tensor's size and stride
/// (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."
Tensor view(const Tensor& x, const IntList& shape);
/// torch.reshape: a view when possible, else a contiguous copy.
Tensor reshape(const Tensor& x, const IntList& shape);
/// torch.flatten(x, start_dim, end_dim); a 0-dim tensor becomes [1].
Tensor flatten(const Tensor& x, int64_t startDim = 0, int64_t endDim = -1);
/// torch.unflatten(x, dim, sizes) (one -1 allowed).
Tensor unflatten(const Tensor& x, int64_t dim, const IntList& sizes);
Tensor permute(const Tensor& x, const IntList& dims);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
/// Tensor.t(): <= 2-D only.
Tensor t(const Tensor& x);
/// Tensor.expand(sizes): -1 keeps a size; new dims go in front.
Tensor expand(const Tensor& x, const IntList& sizes);
Tensor expandAs(const Tensor& x, const Tensor& other);
/// Removes all size-1 dims / dim `dim` if it has size 1.
Tensor squeeze(const Tensor& x);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor unsqueeze(const Tensor& x, int64_t dim);
/// x.select(dim, index); negative index wraps; "select(): index 5 out of range for tensor of
/// size [3] at dimension 0".
Tensor select(const Tensor& x, int64_t dim, int64_t index);
/// aten::slice.Tensor(self, dim, start=None, end=None, step=1): out-of-range bounds clamp.
Tensor slice(const Tensor& x, int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
             std::optional<int64_t> end = std::nullopt, int64_t step = 1);
/// torch.narrow(x, dim, start, length).
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t splitSize, int64_t dim = 0);
std::vector<Tensor> splitWithSizes(const Tensor& x, const IntList& sizes, int64_t dim = 0);
std::vector<Tensor> unbind(const Tensor& x, int64_t dim = 0);

// ---- copies ----

/// torch.cat with type promotion across inputs; legacy 1-d empty tensors are skipped.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
/// torch.index_select(x, dim, index): index 0/1-d Long or Int.
Tensor indexSelect(const Tensor& x, int64_t dim, const Tensor& index);
/// torch.gather(x, dim, index): out[i][j] = x[i][index[i][j]] (dim 1); index Long.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/// torch.nonzero: [n, ndim] Long.
Tensor nonzero(const Tensor& x);
/// aten::index.Tensor(self, Tensor?[] indices): advanced indexing with Long/Int indices and
/// Bool/Byte masks, broadcast together; the indexed dims go where the first one was when they
/// are adjacent, in front otherwise (NumPy's rule).
Tensor index(const Tensor& x, const std::vector<std::optional<Tensor>>& indices);
/// aten::index_put_(self, indices, values, accumulate): values broadcast to x[indices].
Tensor& indexPut_(Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                  const Tensor& values, bool accumulate = false);
Tensor indexPut(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                const Tensor& values, bool accumulate = false);
/// Tensor.repeat(repeats): repeats.size() >= x.dim().
Tensor repeat(const Tensor& x, const IntList& repeats);
Tensor flip(const Tensor& x, const IntList& dims);
/// torch.roll(x, shifts, dims): no dims rolls the flattened tensor.
Tensor roll(const Tensor& x, const IntList& shifts, const IntList& dims = {});
/// aten::constant_pad_nd(x, pad, value): pad pairs from the last dim; negative pads crop.
Tensor constantPadNd(const Tensor& x, const IntList& pad, const Scalar& value = 0);
/// reflection_pad{1,2,3}d / replication_pad{1,2,3}d: pad pairs for the last pad.size()/2 dims.
Tensor reflectionPad(const Tensor& x, const IntList& pad);
Tensor replicationPad(const Tensor& x, const IntList& pad);
/// F.pad(mode='circular') (aten::_pad_circular): x [N, C, *D] with 2 * len(D) padding values,
/// last dim first; each padded dim wraps around (x[..., -lo:], x, x[..., :hi]); negative values
/// crop first. Throws when a padding exceeds the dim (PyTorch: wrapping more than once).
Tensor circularPad(const Tensor& x, const IntList& pad);
Tensor clone(const Tensor& x);
Tensor contiguous(const Tensor& x);
/// at::Tensor::is_contiguous(ChannelsLast / ChannelsLast3d) of a 4-d / 5-d tensor: dims C, then
/// the spatial dims from the last, then N have dense strides (dims of size 1 are not checked).
/// False for other ranks.
bool isChannelsLastContiguous(const Tensor& x);
/// Tensor.contiguous(memory_format): x itself when already dense in that format, else a copy
/// with contiguous (row-major) or channels-last (NHWC / NDHWC) strides, quantizer kept. Throws
/// for preserve_format and for a channels-last format of another rank, as PyTorch does.
Tensor contiguous(const Tensor& x, MemoryFormat format);
/// Tensor.to(dtype, copy=False): x itself when the dtype already matches and !copy.
Tensor toDtype(const Tensor& x, ScalarType dtype, bool copy = false);
/// self.copy_(src): src broadcast to self's shape and cast; works on views. Returns self.
Tensor& copy_(Tensor& self, const Tensor& src);
Tensor& fill_(Tensor& self, const Scalar& value);
Tensor& fill_(Tensor& self, const Tensor& value);  // 0-dim value
Tensor& zero_(Tensor& self);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
/// F.pixel_shuffle: [*, C*r*r, H, W] -> [*, C, H*r, W*r]; pixel_unshuffle is the inverse.
Tensor pixelShuffle(const Tensor& x, int64_t upscaleFactor);
Tensor pixelUnshuffle(const Tensor& x, int64_t downscaleFactor);
/// F.one_hot(x, num_classes=-1): Long in, Long [*, num_classes] out.
Tensor oneHot(const Tensor& x, int64_t numClasses = -1);

// ---- factories ----

Tensor empty(const IntList& sizes, ScalarType dtype = kDefaultFloat);
Tensor zeros(const IntList& sizes, ScalarType dtype = kDefaultFloat);
Tensor ones(const IntList& sizes, ScalarType dtype = kDefaultFloat);
/// torch.full: without dtype, a bool value gives Bool, an int Long, a float Float.
Tensor full(const IntList& sizes, const Scalar& value,
            std::optional<ScalarType> dtype = std::nullopt);
Tensor zerosLike(const Tensor& x, std::optional<ScalarType> dtype = std::nullopt);
Tensor onesLike(const Tensor& x, std::optional<ScalarType> dtype = std::nullopt);
Tensor fullLike(const Tensor& x, const Scalar& value,
                std::optional<ScalarType> dtype = std::nullopt);
/// torch.arange(start, end, step, dtype): Long unless a bound or step is a float (-> Float).
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              std::optional<ScalarType> dtype = std::nullopt);
Tensor arange(const Scalar& end, std::optional<ScalarType> dtype = std::nullopt);
/// torch.linspace(start, end, steps, dtype=Float).
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps,
                std::optional<ScalarType> dtype = std::nullopt);
/// torch.tril_indices / triu_indices(row, col, offset): the [2, n] row and column indices of
/// the lower (upper) triangle in row-major order, dtype Long by default (int or long only).
/// Throws for negative sizes ("row must be non-negative").
Tensor triangleIndices(int64_t row, int64_t col, int64_t offset, bool lower,
                       std::optional<ScalarType> dtype = std::nullopt);
/// torch.eye(n, m=n, dtype=Float).
Tensor eye(int64_t n, int64_t m = -1, ScalarType dtype = kDefaultFloat);

}  // namespace torchless::ops
