// Kernels of the nn family (ops/nn.h): embedding, dropout in eval mode, prelu, glu, threshold,
// upsampling; and the fused transformer ops PyTorch's nn.TransformerEncoderLayer and
// nn.MultiheadAttention call on their fast path in eval mode
// (aten::_transformer_encoder_layer_fwd, aten::_native_multi_head_attention), computed here
// from the ops:: kernels as the composite path computes them.

#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/nn.h"
#include "ops/norm.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "runtime/register_utils.h"

#include <cmath>
#include <limits>

namespace torchless {
namespace {

using namespace kreg;
using ops::Scalar;

Tensor dropoutEval(const IValue* a) {
  // Training-mode dropout is random: torchless runs inference only (ops::dropout throws).
  return ops::dropout(a[0].toTensor(), a[1].toDouble(), a[2].toBool());
}

// aten::_upsample_nearest_exact{1,2,3}d: source index floor((dst + 0.5) * in / out), one
// index_select per spatial dim.
Tensor upsampleNearestExact(const Tensor& x, const IntList& outputSize,
                            const std::vector<std::optional<double>>& scales) {
  ops::checkNearestDtype(x);
  Tensor y = x;
  const auto n = static_cast<int64_t>(outputSize.size());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t dim = x.dim() - n + i;
    const int64_t in = x.size(dim), out = outputSize[static_cast<size_t>(i)];
    const auto& sc =
        scales.size() > static_cast<size_t>(i) ? scales[static_cast<size_t>(i)] : std::nullopt;
    const double scale =
        sc && *sc > 0 ? 1.0 / *sc : static_cast<double>(in) / static_cast<double>(out);
    std::vector<int64_t> idx(static_cast<size_t>(out));
    for (int64_t d = 0; d < out; ++d)
      idx[static_cast<size_t>(d)] = std::min(
          static_cast<int64_t>(std::floor((static_cast<double>(d) + 0.5) * scale)), in - 1);
    y = ops::indexSelect(y, dim, Tensor::fromVector(idx, {out}));
  }
  return y;
}

// Multi-head self-attention as torch._native_multi_head_attention computes it: query, key,
// value [B, L, E]; qkv_weight [3E, E]; mask_type 0 = attn mask [L, S], 1 = key padding
// mask [B, S]. True is masked; a mask of another dtype is converted to bool first (nonzero is
// masked, -1.5 as -inf), as PyTorch 1.13's masked_softmax does (with a warning). Without
// need_weights the weights are absent (PyTorch returns an undefined tensor, None in TorchScript).
std::tuple<Tensor, std::optional<Tensor>> multiHeadAttention(
    const Tensor& query, const Tensor& key, const Tensor& value, int64_t embedDim, int64_t numHeads,
    const Tensor& qkvWeight, const Tensor& qkvBias, const Tensor& projWeight,
    const Tensor& projBias, const std::optional<Tensor>& mask, bool needWeights,
    bool averageWeights, std::optional<int64_t> maskType) {
  if (query.dim() != 3)
    throw Error(fmt::format("expected `query` to be a 3-D tensor, got a {}-D tensor", query.dim()));
  if (embedDim % numHeads != 0) throw Error("embed_dim must be divisible by num_heads");
  const int64_t B = query.size(0), L = query.size(1), S = key.size(1), D = embedDim / numHeads;
  auto wq = ops::chunk(qkvWeight, 3, 0);
  auto bq = ops::chunk(qkvBias, 3, 0);
  Tensor q = ops::linear(query, wq[0], bq[0]);
  Tensor k = ops::linear(key, wq[1], bq[1]);
  Tensor v = ops::linear(value, wq[2], bq[2]);
  auto heads = [&](const Tensor& t, int64_t len) {
    return ops::transpose(ops::reshape(t, {B, len, numHeads, D}), 1, 2);  // [B, H, len, D]
  };
  q = ops::div(heads(q, L), Scalar(std::sqrt(static_cast<double>(D))));
  k = heads(k, S);
  v = heads(v, S);
  Tensor scores = ops::matmul(q, ops::transpose(k, 2, 3));  // [B, H, L, S]
  if (mask) {
    Tensor m = *mask;
    if (maskType.value_or(m.dim() == 2 && m.size(0) == B && m.size(1) == S ? 1 : 0) == 1 &&
        m.dim() == 2)
      m = ops::reshape(m, {B, 1, 1, S});
    if (m.dtype() != ScalarType::Bool) m = ops::toDtype(m, ScalarType::Bool);
    scores = ops::maskedFill(scores, m, Scalar(-std::numeric_limits<double>::infinity()));
  }
  Tensor attn = ops::softmax(scores, -1);
  Tensor out = ops::matmul(attn, v);  // [B, H, L, D]
  out = ops::reshape(ops::transpose(out, 1, 2), {B, L, embedDim});
  out = ops::linear(out, projWeight, projBias);
  if (!needWeights) return {out, std::nullopt};
  return {out, averageWeights ? ops::mean(attn, {1}) : attn};
}

// torch._transformer_encoder_layer_fwd: one nn.TransformerEncoderLayer (post- or pre-norm).
Tensor transformerEncoderLayer(const IValue* a) {
  Tensor src = a[0].toTensor();
  const int64_t E = a[1].toInt(), H = a[2].toInt();
  const Tensor qkvW = a[3].toTensor(), qkvB = a[4].toTensor(), projW = a[5].toTensor(),
               projB = a[6].toTensor();
  const bool useGelu = a[7].toBool(), normFirst = a[8].toBool();
  const double eps = a[9].toDouble();
  const Tensor n1w = a[10].toTensor(), n1b = a[11].toTensor(), n2w = a[12].toTensor(),
               n2b = a[13].toTensor();
  const Tensor f1w = a[14].toTensor(), f1b = a[15].toTensor(), f2w = a[16].toTensor(),
               f2b = a[17].toTensor();
  const auto mask = toOptTensor(a[18]);
  const auto maskType = toOptInt(a[19]);
  const IntList normShape{E};
  auto selfAttention = [&](const Tensor& x) {
    return std::get<0>(
        multiHeadAttention(x, x, x, E, H, qkvW, qkvB, projW, projB, mask, false, false, maskType));
  };
  auto ffn = [&](const Tensor& x) {
    Tensor h = ops::linear(x, f1w, f1b);
    h = useGelu ? ops::gelu(h) : ops::relu(h);
    return ops::linear(h, f2w, f2b);
  };
  Tensor x = src;
  if (normFirst) {
    x = ops::add(x, selfAttention(ops::layerNorm(x, normShape, n1w, n1b, eps)));
    x = ops::add(x, ffn(ops::layerNorm(x, normShape, n2w, n2b, eps)));
  } else {
    x = ops::layerNorm(ops::add(x, selfAttention(x)), normShape, n1w, n1b, eps);
    x = ops::layerNorm(ops::add(x, ffn(x)), normShape, n2w, n2b, eps);
  }
  return x;
}

// ---- nested tensors from a padding mask (Note [Nested tensors] in core/tensor.h) -----------

// Positions j >= lengths[i] of the padded batch x [B, T, ...] set to `value`, in place.
void fillPadding(Tensor& x, const std::vector<int64_t>& lengths, const Scalar& value) {
  const int64_t B = x.size(0), T = x.size(1);
  for (int64_t i = 0; i < B; ++i) {
    const int64_t len = lengths[static_cast<size_t>(i)];
    if (len >= T) continue;
    Tensor tail = ops::slice(ops::select(x, 0, i), 0, len, T, 1);
    ops::fill_(tail, value);
  }
}

// aten::_nested_tensor_from_mask(t [B, T, E], mask Bool [B, T], mask_check): sequence i is
// t[i, :mask[i].sum()] (PyTorch takes the first rows whatever the mask's layout; mask_check
// raises for a mask that is not left-aligned).
// PyTorch's checks of a padding mask against its batch, with its messages
// (NestedTensor_nested_tensor_from_mask and _nested_tensor_from_mask_left_aligned).
void checkPaddingMask(const Tensor& t, const Tensor& mask) {
  TL_CHECK(mask.dtype() == ScalarType::Bool,
           "Expected mask to be of ScalarType Bool, but got {} instead.", toString(mask.dtype()));
  TL_CHECK(mask.dim() == 2, "Padding mask should be 2D");
  TL_CHECK(t.dim() == 3, "Input should be a 3D tensor, N * L * D");
  TL_CHECK(mask.size(0) == t.size(0) && mask.size(1) == t.size(1),
           "Mask size should match input size");
}

// aten::_nested_tensor_from_mask_left_aligned(t [B, T, E], mask Bool [B, T]) -> bool: true
// when every row of the mask is its trues followed by its falses (an empty row included), the
// layout nn.TransformerEncoder requires before packing the batch into a nested tensor.
bool nestedMaskLeftAligned(const IValue* a) {
  const Tensor t = a[0].toTensor();
  const Tensor mask = a[1].toTensor().contiguous();
  checkPaddingMask(t, mask);
  const int64_t B = mask.size(0), T = mask.size(1);
  const bool* m = mask.data<bool>();
  for (int64_t i = 0; i < B; ++i)
    for (int64_t j = 1; j < T; ++j)
      if (m[i * T + j] && !m[i * T + j - 1]) return false;
  return true;
}

Tensor nestedFromMask(const IValue* a) {
  const Tensor t = a[0].toTensor();
  const Tensor mask = a[1].toTensor().contiguous();
  checkPaddingMask(t, mask);
  const int64_t B = t.size(0), T = t.size(1);
  const bool* m = mask.data<bool>();
  auto lengths = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(B), 0);
  for (int64_t i = 0; i < B; ++i) {
    int64_t len = 0;
    for (int64_t j = 0; j < T; ++j) len += m[i * T + j] ? 1 : 0;
    (*lengths)[static_cast<size_t>(i)] = len;
    if (a[2].toBool())
      for (int64_t j = 0; j < T; ++j)
        TL_CHECK(m[i * T + j] == (j < len), "Mask must be left-aligned without gaps");
  }
  Tensor out = t.clone();
  fillPadding(out, *lengths, Scalar(0.0));
  out.setNestedLengths(std::move(lengths));
  return out;
}

// The key padding mask [B, T] (true where padded) of a nested tensor's lengths.
Tensor paddingMaskOf(const std::vector<int64_t>& lengths, int64_t T) {
  const int64_t B = static_cast<int64_t>(lengths.size());
  Tensor mask = Tensor::empty({B, T}, ScalarType::Bool);
  bool* m = mask.data<bool>();
  for (int64_t i = 0; i < B; ++i)
    for (int64_t j = 0; j < T; ++j) m[i * T + j] = j >= lengths[static_cast<size_t>(i)];
  return mask;
}

// _transformer_encoder_layer_fwd on a nested src: the layer on the padded batch with its key
// padding mask (each sequence attends to its own positions only), padded rows zero again.
Tensor nestedEncoderLayer(const IValue* a) {
  const Tensor src = a[0].toTensor();
  TL_CHECK(a[18].isNone(),
           "_transformer_encoder_layer_fwd: a mask with a nested tensor input is not supported");
  TL_CHECK(src.dim() == 3, "_transformer_encoder_layer_fwd: expected a nested batch [B, T, E]");
  std::vector<IValue> args(a, a + 20);
  args[18] = IValue(paddingMaskOf(*src.nestedLengths(), src.size(1)));
  args[19] = IValue(int64_t{1});
  Tensor out = transformerEncoderLayer(args.data());
  if (out.is(src)) out = out.clone();  // (the padding is written in place)
  fillPadding(out, *src.nestedLengths(), Scalar(0.0));
  out.setNestedLengths(src.nestedLengths());
  return out;
}

// aten::to_padded_tensor(self, padding, output_size): a nested tensor's sequences padded with
// `padding` to the longest length (or to output_size, which may only be larger).
Tensor toPaddedTensor(const IValue* a) {
  const Tensor x = a[0].toTensor();
  // PyTorch has no to_padded_tensor for a plain tensor. Here one also arrives when an op other
  // than the encoder layer ran on a nested tensor (which a plain kernel computes densely):
  // refused rather than returned with its padded rows.
  TL_CHECK(x.isNested(),
           "to_padded_tensor takes a nested tensor (made by _nested_tensor_from_mask and passed "
           "only through _transformer_encoder_layer_fwd here), got a plain tensor of size {}",
           sizesToString(x.sizes()));
  const std::vector<int64_t>& lengths = *x.nestedLengths();
  int64_t longest = 0;
  for (int64_t l : lengths) longest = std::max(longest, l);
  Tensor out = ops::slice(x, 1, 0, longest, 1).clone();
  const Scalar padding(a[1].toDouble());
  fillPadding(out, lengths, padding);
  if (a[2].isNone()) return out;
  const std::vector<int64_t> size = a[2].toIntVector();
  TL_CHECK(static_cast<int64_t>(size.size()) == out.dim(),
           "to_padded_tensor: output_size must have {} entries, got {}", out.dim(), size.size());
  std::vector<int64_t> widths;
  for (int64_t d = out.dim() - 1; d >= 0; --d) {
    TL_CHECK(size[static_cast<size_t>(d)] >= out.size(d),
             "Value in output_size is less than NestedTensor padded size. Truncation is not "
             "supported.");
    widths.push_back(0);
    widths.push_back(size[static_cast<size_t>(d)] - out.size(d));
  }
  return ops::constantPadNd(out, widths, padding);
}

}  // namespace

void registerNnKernels(KernelRegistry& r) {
  defFamily(r, "aten::embedding", [](const IValue* a) {
    return ops::embedding(a[0].toTensor(), a[1].toTensor(), a[2].toInt());
  });
  for (const char* name : {"aten::dropout", "aten::feature_dropout", "aten::alpha_dropout",
                           "aten::feature_alpha_dropout"})
    defFamily(r, name, dropoutEval);
  defN<3>(r, "aten::native_dropout", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    if (!a[2].isNone() && a[2].toBool()) ops::dropout(x, a[1].toDouble(), true);
    return std::make_tuple(x, ops::onesLike(x, ScalarType::Bool));
  });
  defFamily(r, "aten::im2col", [](const IValue* a) {
    return ops::im2col(a[0].toTensor(), toIntList(a[1], 2), toIntList(a[2], 2), toIntList(a[3], 2),
                       toIntList(a[4], 2));
  });
  defFamily(r, "aten::col2im", [](const IValue* a) {
    return ops::col2im(a[0].toTensor(), toIntList(a[1], 2), toIntList(a[2], 2), toIntList(a[3], 2),
                       toIntList(a[4], 2), toIntList(a[5], 2));
  });
  defFamily(r, "aten::prelu",
            [](const IValue* a) { return ops::prelu(a[0].toTensor(), a[1].toTensor()); });
  defFamily(r, "aten::glu",
            [](const IValue* a) { return ops::glu(a[0].toTensor(), a[1].toInt()); });
  defFamily(r, "aten::threshold", [](const IValue* a) {
    return ops::threshold(a[0].toTensor(), toScalar(a[1]), toScalar(a[2]));
  });
  defFamily(r, "aten::channel_shuffle", [](const IValue* a) {
    // [N, g * c, *] -> view [N, g, c, *] -> transpose(1, 2) -> [N, c * g, *]
    Tensor x = a[0].toTensor();
    const int64_t g = a[1].toInt();
    // ATen's channel_shuffle checks, in its order and words.
    TL_CHECK(x.dim() > 2,
             "channel_shuffle expects input with > 2 dims, but got input with sizes {}",
             sizesToString(x.sizes()));
    TL_CHECK(g > 0, "Number of groups to divide channels in must be positive. Value of groups:{}",
             g);
    TL_CHECK(x.size(1) % g == 0,
             "Number of channels must be divisible by groups. Got {} channels and {} groups.",
             x.size(1), g);
    IntList shape = x.sizes();
    IntList split{shape[0], g, shape[1] / g};
    split.insert(split.end(), shape.begin() + 2, shape.end());
    return ops::reshape(ops::contiguous(ops::transpose(ops::reshape(x, split), 1, 2)), shape);
  });

  // ---- upsampling ----
  for (int64_t n = 1; n <= 3; ++n) {
    const auto nd = static_cast<size_t>(n);
    const std::string name = "aten::upsample_nearest" + std::to_string(n) + "d";
    defFamily(r, name, [nd](const IValue* a) {
      std::vector<std::optional<double>> scales;
      for (size_t i = 0; i < nd; ++i) scales.push_back(toOptDouble(a[2 + i]));
      return ops::upsampleNearest(a[0].toTensor(), toIntList(a[1], nd), scales);
    });
    defFamily(r, name + ".vec", [nd](const IValue* a) {
      Tensor x = a[0].toTensor();
      return ops::upsampleNearest(x, vecOutputSize(x, a[1], a[2], nd), scalesOf(a[2], nd));
    });
  }
  defFamily(r, "aten::upsample_bilinear2d", [](const IValue* a) {
    return ops::upsampleBilinear2d(a[0].toTensor(), toIntList(a[1], 2), a[2].toBool(),
                                   toOptDouble(a[3]), toOptDouble(a[4]));
  });
  defFamily(r, "aten::upsample_bilinear2d.vec", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    auto scales = scalesOf(a[3], 2);
    return ops::upsampleBilinear2d(x, vecOutputSize(x, a[1], a[3], 2), a[2].toBool(), scales[0],
                                   scales[1]);
  });

  for (int64_t n = 1; n <= 3; ++n) {
    const auto nd = static_cast<size_t>(n);
    const std::string name = "aten::_upsample_nearest_exact" + std::to_string(n) + "d";
    defFamily(r, name, [nd](const IValue* a) {
      std::vector<std::optional<double>> scales;
      for (size_t i = 0; i < nd; ++i) scales.push_back(toOptDouble(a[2 + i]));
      return upsampleNearestExact(a[0].toTensor(), toIntList(a[1], nd), scales);
    });
    defFamily(r, name + ".vec", [nd](const IValue* a) {
      Tensor x = a[0].toTensor();
      return upsampleNearestExact(x, vecOutputSize(x, a[1], a[2], nd), scalesOf(a[2], nd));
    });
  }
  // linear 1-d is bilinear 2-d over a height of 1 (the height's source index is exact).
  defFamily(r, "aten::upsample_linear1d", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    Tensor y = ops::upsampleBilinear2d(ops::unsqueeze(x, -2), {1, toIntList(a[1], 1)[0]},
                                       a[2].toBool(), 1.0, toOptDouble(a[3]));
    return ops::squeeze(y, -2);
  });
  defFamily(r, "aten::upsample_linear1d.vec", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    auto scales = scalesOf(a[3], 1);
    Tensor y =
        ops::upsampleBilinear2d(ops::unsqueeze(x, -2), {1, vecOutputSize(x, a[1], a[3], 1)[0]},
                                a[2].toBool(), 1.0, scales[0]);
    return ops::squeeze(y, -2);
  });
  defFamily(r, "aten::upsample_bicubic2d", [](const IValue* a) {
    return ops::upsampleBicubic2d(a[0].toTensor(), toIntList(a[1], 2), a[2].toBool(),
                                  toOptDouble(a[3]), toOptDouble(a[4]));
  });
  defFamily(r, "aten::upsample_bicubic2d.vec", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    auto scales = scalesOf(a[3], 2);
    return ops::upsampleBicubic2d(x, vecOutputSize(x, a[1], a[3], 2), a[2].toBool(), scales[0],
                                  scales[1]);
  });
  defFamily(r, "aten::upsample_trilinear3d", [](const IValue* a) {
    return ops::upsampleTrilinear3d(a[0].toTensor(), toIntList(a[1], 3), a[2].toBool(),
                                    toOptDouble(a[3]), toOptDouble(a[4]), toOptDouble(a[5]));
  });
  defFamily(r, "aten::upsample_trilinear3d.vec", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    auto scales = scalesOf(a[3], 3);
    return ops::upsampleTrilinear3d(x, vecOutputSize(x, a[1], a[3], 3), a[2].toBool(), scales[0],
                                    scales[1], scales[2]);
  });
  // F.interpolate(antialias=True): Pillow's filters, stretched when shrinking.
  for (const bool cubic : {false, true}) {
    const std::string name =
        cubic ? "aten::_upsample_bicubic2d_aa" : "aten::_upsample_bilinear2d_aa";
    defFamily(r, name, [cubic](const IValue* a) {
      return ops::upsampleAntialias2d(a[0].toTensor(), toIntList(a[1], 2), a[2].toBool(),
                                      toOptDouble(a[3]), toOptDouble(a[4]), cubic);
    });
    defFamily(r, name + ".vec", [cubic](const IValue* a) {
      Tensor x = a[0].toTensor();
      auto scales = scalesOf(a[3], 2);
      return ops::upsampleAntialias2d(x, vecOutputSize(x, a[1], a[3], 2), a[2].toBool(), scales[0],
                                      scales[1], cubic);
    });
  }

  // ---- transformer fast path ----
  defN<13>(r, "aten::_native_multi_head_attention", [](const IValue* a) {
    auto [out, weights] = multiHeadAttention(
        a[0].toTensor(), a[1].toTensor(), a[2].toTensor(), a[3].toInt(), a[4].toInt(),
        a[5].toTensor(), a[6].toTensor(), a[7].toTensor(), a[8].toTensor(), toOptTensor(a[9]),
        a[10].toBool(), a[11].toBool(), toOptInt(a[12]));
    return std::make_tuple(IValue(std::move(out)),
                           weights ? IValue(std::move(*weights)) : IValue());
  });
  defN<20>(r, "aten::_transformer_encoder_layer_fwd", [](const IValue* a) {
    return a[0].toTensor().isNested() ? nestedEncoderLayer(a) : transformerEncoderLayer(a);
  });
  // A scripted encoder packs its batch into a nested tensor when this is true, and its
  // output then has zeros in the padded rows and dim 1 cut to the longest sequence
  // (Note [Nested tensors] in core/tensor.h; values that may be nested stay with the
  // interpreter, Note [Values that may be nested] in convert/engine/partition.cpp).
  defN<2>(r, "aten::_nested_tensor_from_mask_left_aligned",
          [](const IValue* a) { return IValue(nestedMaskLeftAligned(a)); });
  defN<3>(r, "aten::_nested_tensor_from_mask", nestedFromMask);
  defN<3>(r, "aten::to_padded_tensor", toPaddedTensor);
  // Inference only: no autograd, no autocast (as under torch.inference_mode()).
  defN<0>(r, "aten::is_grad_enabled", [](const IValue*) { return IValue(false); });
  defN<0>(r, "aten::is_autocast_enabled", [](const IValue*) { return IValue(false); });
}

}  // namespace torchless
