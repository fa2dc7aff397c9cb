// Kernels of the prepacked (mobile, xnnpack) ops and of the quantized packing ops, over the
// TorchBind objects of runtime/torchbind.h (Note [TorchBind objects]).
//
//   prepacked::conv2d_clamp_prepack / conv2d_transpose_clamp_prepack / linear_clamp_prepack
//       build an xnnpack context object from float tensors (as torch.utils.mobile_optimizer
//       bakes them into CONSTANTS);
//   prepacked::conv2d_clamp_run / conv2d_transpose_clamp_run / linear_clamp_run
//       run it: our conv / linear kernels (ops/conv.h, ops/linalg.h), then clamp to
//       [output_min, output_max] when they are set (xnnpack's fused clamp);
//   quantized::conv{1,2,3}d_prepack, conv_transpose{1,2,3}d_prepack, linear_prepack(_fp16)
//       and their unpack / stride / padding / ... accessors: what quantized modules' __setstate__
//       and _weight_bias() call. They keep the quantized weight as given (conv1d weights are
//       unsqueezed to 4-d, stride/padding/dilation prefixed with 1/0/1, as PyTorch does).
// The quantized compute ops (quantized::conv2d, quantized::linear, linear_dynamic ...) have no
// kernel yet: a model using them loads and then stops with the unsupported-operator error.

#include "ops/conv.h"
#include "ops/linalg.h"
#include "ops/shape.h"
#include "runtime/register_utils.h"
#include "runtime/torchbind.h"

namespace torchless {
namespace {

using namespace kreg;

constexpr const char* kConv2dCtx = "__torch__.torch.classes.xnnpack.Conv2dOpContext";
constexpr const char* kTConv2dCtx = "__torch__.torch.classes.xnnpack.TransposeConv2dOpContext";
constexpr const char* kLinearCtx = "__torch__.torch.classes.xnnpack.LinearOpContext";
constexpr const char* kConv2dPacked = "__torch__.torch.classes.quantized.Conv2dPackedParamsBase";
constexpr const char* kConv3dPacked = "__torch__.torch.classes.quantized.Conv3dPackedParamsBase";
constexpr const char* kLinearPacked = "__torch__.torch.classes.quantized.LinearPackedParamsBase";

IValue intList(const IntList& v) {
  std::vector<IValue> out(v.begin(), v.end());
  return IValue(ListImpl::create(IntType::get(), std::move(out)));
}

/// A Scalar? argument as float? (xnnpack keeps output_min/max as optional<double>).
IValue optFloat(const IValue& v) {
  if (v.isNone()) return v;
  return IValue(v.toScalarDouble());
}

/// The object behind a TorchBind argument, checked to be of class `cls`.
const Object& contextOf(const IValue& v, const char* cls, const char* op) {
  if (!v.isObject())
    throw Error(fmt::format("{}: expected a {} object, got {}", op, cls, v.tagName()));
  const Object& o = *v.toObject();
  if (o.type->name() != cls)
    throw Error(fmt::format("{}: expected a {} object, got {}", op, cls, o.type->name()));
  return o;
}

/// Clamps to the context's output_min / output_max (slots minSlot, minSlot + 1) when set.
Tensor clampOutput(Tensor y, const Object& ctx, size_t minSlot) {
  const IValue& lo = ctx.slots[minSlot];
  const IValue& hi = ctx.slots[minSlot + 1];
  if (lo.isNone() && hi.isNone()) return y;
  std::optional<Scalar> mn, mx;
  if (!lo.isNone()) mn = Scalar(lo.toDouble());
  if (!hi.isNone()) mx = Scalar(hi.toDouble());
  return ops::clamp(y, mn, mx);
}

void checkFloatWeight(const Tensor& w, int64_t dims, const char* op) {
  if (w.dim() != dims)
    throw Error(fmt::format("{}: weight must have {} dimensions, got {}", op, dims, w.dim()));
  if (w.dtype() != ScalarType::Float)
    throw Error(fmt::format("{}: weight must be float32, got {}", op, dtypeName(w.dtype())));
}

void checkNdInput(const Tensor& x, const char* op) {
  if (x.dim() != 4)
    throw Error(fmt::format("{}: input must be 4-d [N, C, H, W], got {}-d", op, x.dim()));
}

// ---- quantized packed params ------------------------------------------------------------------

/// Inserts a size-1 dim at 2 (conv1d weights become 4-d), keeping the quantizer.
Tensor unsqueeze2(const Tensor& w) {
  Tensor r = ops::unsqueeze(w, 2);
  if (w.isQuantized() && !r.isQuantized()) r.setQuantizer(w.quantizer());
  return r;
}
Tensor squeeze2(const Tensor& w) {
  Tensor r = ops::squeeze(w, 2);
  if (w.isQuantized() && !r.isQuantized()) r.setQuantizer(w.quantizer());
  return r;
}

/// quantized::conv{N}d_prepack / conv_transpose{N}d_prepack. `spatial` is 1, 2 or 3.
IValue convPrepack(const char* op, size_t spatial, bool transpose, const IValue& weightV,
                   const IValue& bias, IntList stride, IntList padding, IntList outputPadding,
                   IntList dilation, int64_t groups) {
  Tensor w = weightV.toTensor();
  if (!w.isQuantized())
    throw Error(fmt::format("{}: weight must be a quantized tensor (torch.qint8), got {}", op,
                            dtypeName(w.dtype())));
  if (w.dim() != static_cast<int64_t>(spatial) + 2)
    throw Error(fmt::format("{}: weights are expected to have {} dimensions, got {}", op,
                            spatial + 2, w.dim()));
  for (const auto* v : {&stride, &padding, &dilation, &outputPadding})
    if (v->size() != spatial)
      throw Error(
          fmt::format("{}: stride, padding, output_padding and dilation must have {} "
                      "values each",
                      op, spatial));
  if (groups < 1) throw Error(fmt::format("{}: groups must be positive, got {}", op, groups));
  if (!bias.isNone() && bias.toTensor().dtype() != ScalarType::Float)
    throw Error(fmt::format("{}: bias must be float32", op));
  if (spatial == 1) {  // PyTorch keeps conv1d as a 2-d conv over [N, C, 1, L]
    w = unsqueeze2(w);
    stride.insert(stride.begin(), 1);
    padding.insert(padding.begin(), 0);
    outputPadding.insert(outputPadding.begin(), 0);
    dilation.insert(dilation.begin(), 1);
  }
  return IValue(torchbind::makeObject(
      spatial == 3 ? kConv3dPacked : kConv2dPacked,
      {IValue(w), bias, intList(stride), intList(padding), intList(outputPadding),
       intList(dilation), IValue(groups), IValue(transpose)}));
}

void registerQuantizedPacking(KernelRegistry& r) {
  struct ConvOp {
    const char* prefix;  // "quantized::conv2d" -> _prepack, _unpack, _stride ...
    size_t spatial;
    bool transpose;
  };
  const ConvOp convs[] = {
      {"quantized::conv1d", 1, false},          {"quantized::conv2d", 2, false},
      {"quantized::conv3d", 3, false},          {"quantized::conv", 2, false},
      {"quantized::conv_transpose1d", 1, true}, {"quantized::conv_transpose2d", 2, true},
      {"quantized::conv_transpose3d", 3, true}};
  for (const ConvOp& c : convs) {
    const std::string p = c.prefix;
    const size_t nd = c.spatial;
    const bool tr = c.transpose;
    const std::string prepack = p + "_prepack";
    if (!tr) {
      defN<6>(r, prepack, [nd, prepack](const IValue* a) {
        return convPrepack(prepack.c_str(), nd, false, a[0], a[1], toIntList(a[2]), toIntList(a[3]),
                           IntList(nd, 0), toIntList(a[4]), a[5].toInt());
      });
    } else {
      defN<7>(r, prepack, [nd, prepack](const IValue* a) {
        return convPrepack(prepack.c_str(), nd, true, a[0], a[1], toIntList(a[2]), toIntList(a[3]),
                           toIntList(a[4]), toIntList(a[5]), a[6].toInt());
      });
    }
    const char* cls = nd == 3 ? kConv3dPacked : kConv2dPacked;
    const std::string unpack = p + "_unpack";
    defN<1>(r, unpack, [cls, nd, unpack](const IValue* a) {
      const Object& o = contextOf(a[0], cls, unpack.c_str());
      Tensor w = o.slots[0].toTensor();
      if (nd == 1) w = squeeze2(w);
      return std::make_tuple(IValue(w), o.slots[1]);
    });
    if (nd == 1 || p == "quantized::conv") continue;  // no accessors in the op table
    const std::pair<const char*, size_t> lists[] = {
        {"_stride", 2}, {"_padding", 3}, {"_output_padding", 4}, {"_dilation", 5}};
    for (const auto& [suffix, slot] : lists) {
      const std::string name = p + suffix;
      const size_t s = slot;
      defN<1>(r, name, [cls, s, name](const IValue* a) {
        return intList(contextOf(a[0], cls, name.c_str()).slots[s].toIntVector());
      });
    }
    const std::string groups = p + "_groups", transpose = p + "_transpose";
    defN<1>(r, groups, [cls, groups](const IValue* a) {
      return contextOf(a[0], cls, groups.c_str()).slots[6];
    });
    defN<1>(r, transpose, [cls, transpose](const IValue* a) {
      return IValue(
          static_cast<int64_t>(contextOf(a[0], cls, transpose.c_str()).slots[7].toBool()));
    });
  }

  defN<2>(r, "quantized::linear_prepack", [](const IValue* a) {
    Tensor w = a[0].toTensor();
    if (!w.isQuantized() || w.dtype() != ScalarType::QInt8)
      throw Error(
          fmt::format("quantized::linear_prepack: weight must be a torch.qint8 tensor, got {}",
                      dtypeName(w.dtype())));
    if (w.dim() != 2)
      throw Error(fmt::format("quantized::linear_prepack: weight must be 2-d, got {}-d", w.dim()));
    return IValue(torchbind::makeObject(kLinearPacked, {a[0], a[1]}));
  });
  defN<2>(r, "quantized::linear_prepack_fp16", [](const IValue* a) {
    Tensor w = a[0].toTensor();
    if (w.dtype() != ScalarType::Float || w.dim() != 2)
      throw Error("quantized::linear_prepack_fp16: weight must be a 2-d float32 tensor");
    // fbgemm packs the weight as fp16; unpack gives it back rounded.
    return IValue(torchbind::makeObject(
        kLinearPacked, {IValue(w.to(ScalarType::Half).to(ScalarType::Float)), a[1]}));
  });
  for (const char* name : {"quantized::linear_unpack", "quantized::linear_unpack_fp16"}) {
    defN<1>(r, name, [name](const IValue* a) {
      const Object& o = contextOf(a[0], kLinearPacked, name);
      return std::make_tuple(o.slots[0], o.slots[1]);
    });
  }
}

}  // namespace

void registerPrepackedKernels(KernelRegistry& r) {
  // ---- xnnpack contexts (torch.utils.mobile_optimizer) ----
  defN<8>(r, "prepacked::conv2d_clamp_prepack", [](const IValue* a) {
    const char* op = "prepacked::conv2d_clamp_prepack";
    checkFloatWeight(a[0].toTensor(), 4, op);
    return IValue(torchbind::makeObject(
        kConv2dCtx, {a[0], a[1], intList(toIntList(a[2], 2)), intList(toIntList(a[3], 2)),
                     intList(toIntList(a[4], 2)), a[5], optFloat(a[6]), optFloat(a[7])}));
  });
  defN<2>(r, "prepacked::conv2d_clamp_run", [](const IValue* a) {
    const char* op = "prepacked::conv2d_clamp_run";
    const Object& c = contextOf(a[1], kConv2dCtx, op);
    Tensor x = a[0].toTensor();
    checkNdInput(x, op);
    Tensor y =
        ops::convNd(x, c.slots[0].toTensor(), toOptTensor(c.slots[1]), c.slots[2].toIntVector(),
                    c.slots[3].toIntVector(), c.slots[4].toIntVector(), c.slots[5].toInt());
    return clampOutput(std::move(y), c, 6);
  });
  defN<9>(r, "prepacked::conv2d_transpose_clamp_prepack", [](const IValue* a) {
    const char* op = "prepacked::conv2d_transpose_clamp_prepack";
    checkFloatWeight(a[0].toTensor(), 4, op);
    return IValue(torchbind::makeObject(
        kTConv2dCtx, {a[0], a[1], intList(toIntList(a[2], 2)), intList(toIntList(a[3], 2)),
                      intList(toIntList(a[4], 2)), intList(toIntList(a[5], 2)), a[6],
                      optFloat(a[7]), optFloat(a[8])}));
  });
  defN<2>(r, "prepacked::conv2d_transpose_clamp_run", [](const IValue* a) {
    const char* op = "prepacked::conv2d_transpose_clamp_run";
    const Object& c = contextOf(a[1], kTConv2dCtx, op);
    Tensor x = a[0].toTensor();
    checkNdInput(x, op);
    Tensor y = ops::convTransposeNd(x, c.slots[0].toTensor(), toOptTensor(c.slots[1]),
                                    c.slots[2].toIntVector(), c.slots[3].toIntVector(),
                                    c.slots[4].toIntVector(), c.slots[6].toInt(),
                                    c.slots[5].toIntVector());
    return clampOutput(std::move(y), c, 7);
  });
  defN<4>(r, "prepacked::linear_clamp_prepack", [](const IValue* a) {
    checkFloatWeight(a[0].toTensor(), 2, "prepacked::linear_clamp_prepack");
    return IValue(torchbind::makeObject(kLinearCtx, {a[0], a[1], optFloat(a[2]), optFloat(a[3])}));
  });
  defN<2>(r, "prepacked::linear_clamp_run", [](const IValue* a) {
    const Object& c = contextOf(a[1], kLinearCtx, "prepacked::linear_clamp_run");
    Tensor y = ops::linear(a[0].toTensor(), c.slots[0].toTensor(), toOptTensor(c.slots[1]));
    return clampOutput(std::move(y), c, 2);
  });

  registerQuantizedPacking(r);
}

}  // namespace torchless
