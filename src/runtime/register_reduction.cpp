// Kernels of the reduction family (ops/reduction.h): sum/mean/prod, max/min, arg-reductions,
// var/std/norm, all/any, scans, softmax, sort/topk.

#include "ops/elementwise.h"
#include "ops/reduction.h"
#include "runtime/register_utils.h"

namespace torchless {
namespace {

using namespace kreg;

IntList dimsOrAll(const IValue& v) {
  if (v.isNone()) return {};
  return toIntList(v);
}

// unbiased flag -> correction.
std::optional<double> correctionOf(const IValue& unbiased) { return unbiased.toBool() ? 1.0 : 0.0; }
std::optional<double> optCorrection(const IValue& c) {
  if (c.isNone()) return 1.0;
  return c.toScalarDouble();
}
std::optional<IntList> optDims(const IValue& v) {
  if (v.isNone()) return std::nullopt;
  IntList d = toIntList(v);
  if (d.empty()) return std::nullopt;
  return d;
}

}  // namespace

void registerReductionKernels(KernelRegistry& r) {
  defFamily(r, "aten::sum",
            [](const IValue* a) { return ops::sum(a[0].toTensor(), {}, false, toOptDtype(a[1])); });
  defFamily(r, "aten::sum.dim_IntList", [](const IValue* a) {
    return ops::sum(a[0].toTensor(), dimsOrAll(a[1]), a[2].toBool(), toOptDtype(a[3]));
  });
  defFamily(r, "aten::mean", [](const IValue* a) {
    return ops::mean(a[0].toTensor(), {}, false, toOptDtype(a[1]));
  });
  defFamily(r, "aten::mean.dim", [](const IValue* a) {
    return ops::mean(a[0].toTensor(), dimsOrAll(a[1]), a[2].toBool(), toOptDtype(a[3]));
  });
  defFamily(r, "aten::prod", [](const IValue* a) {
    return ops::prod(a[0].toTensor(), std::nullopt, false, toOptDtype(a[1]));
  });
  defFamily(r, "aten::prod.dim_int", [](const IValue* a) {
    return ops::prod(a[0].toTensor(), a[1].toInt(), a[2].toBool(), toOptDtype(a[3]));
  });
  defFamily(r, "aten::max", [](const IValue* a) { return ops::max(a[0].toTensor()); });
  defFamily(r, "aten::min", [](const IValue* a) { return ops::min(a[0].toTensor()); });
  defN<3>(r, "aten::max.dim",
          [](const IValue* a) { return ops::max(a[0].toTensor(), a[1].toInt(), a[2].toBool()); });
  defN<3>(r, "aten::min.dim",
          [](const IValue* a) { return ops::min(a[0].toTensor(), a[1].toInt(), a[2].toBool()); });
  defFamily(r, "aten::amax", [](const IValue* a) {
    return ops::amax(a[0].toTensor(), toIntList(a[1]), a[2].toBool());
  });
  defFamily(r, "aten::amin", [](const IValue* a) {
    return ops::amin(a[0].toTensor(), toIntList(a[1]), a[2].toBool());
  });
  // aminmax(self, dim=None, keepdim=False) -> (amin, amax); an empty reduction is an error
  // (no identity), as PyTorch's.
  defN<3>(r, "aten::aminmax", [](const IValue* a) {
    const Tensor& x = a[0].toTensor();
    IntList dims;
    if (!a[1].isNone()) dims.push_back(a[1].toInt());
    if (a[1].isNone() && x.numel() == 0)
      throw Error(
          "aminmax(): cannot compute aminmax over an empty dimension as the operation "
          "has no identity.");
    if (!a[1].isNone() && x.dim() > 0) {
      const int64_t d = a[1].toInt() < 0 ? a[1].toInt() + x.dim() : a[1].toInt();
      if (d >= 0 && d < x.dim() && x.size(d) == 0)
        throw Error(fmt::format("aminmax: Expected reduction dim {} to have non-zero size.", d));
    }
    const bool keep = a[2].toBool();
    return std::make_tuple(ops::amin(x, dims, keep), ops::amax(x, dims, keep));
  });
  defFamily(r, "aten::argmax", [](const IValue* a) {
    return ops::argmax(a[0].toTensor(), toOptInt(a[1]), a[2].toBool());
  });
  defFamily(r, "aten::argmin", [](const IValue* a) {
    return ops::argmin(a[0].toTensor(), toOptInt(a[1]), a[2].toBool());
  });

  defFamily(r, "aten::var", [](const IValue* a) {
    return ops::var(a[0].toTensor(), std::nullopt, correctionOf(a[1]));
  });
  defFamily(r, "aten::var.dim", [](const IValue* a) {
    return ops::var(a[0].toTensor(), optDims(a[1]), correctionOf(a[2]), a[3].toBool());
  });
  defFamily(r, "aten::var.correction", [](const IValue* a) {
    return ops::var(a[0].toTensor(), optDims(a[1]), optCorrection(a[2]), a[3].toBool());
  });
  defFamily(r, "aten::std", [](const IValue* a) {
    return ops::std(a[0].toTensor(), std::nullopt, correctionOf(a[1]));
  });
  defFamily(r, "aten::std.dim", [](const IValue* a) {
    return ops::std(a[0].toTensor(), optDims(a[1]), correctionOf(a[2]), a[3].toBool());
  });
  defFamily(r, "aten::std.correction", [](const IValue* a) {
    return ops::std(a[0].toTensor(), optDims(a[1]), optCorrection(a[2]), a[3].toBool());
  });
  defN<4>(r, "aten::var_mean.dim", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    auto dims = optDims(a[1]);
    return std::make_tuple(ops::var(x, dims, correctionOf(a[2]), a[3].toBool()),
                           ops::mean(x, dims.value_or(IntList{}), a[3].toBool()));
  });
  defN<4>(r, "aten::std_mean.dim", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    auto dims = optDims(a[1]);
    return std::make_tuple(ops::std(x, dims, correctionOf(a[2]), a[3].toBool()),
                           ops::mean(x, dims.value_or(IntList{}), a[3].toBool()));
  });

  defFamily(r, "aten::norm.Scalar",
            [](const IValue* a) { return ops::norm(a[0].toTensor(), toScalar(a[1]).toDouble()); });
  defFamily(r, "aten::norm.ScalarOpt_dim", [](const IValue* a) {
    return ops::norm(a[0].toTensor(), a[1].isNone() ? 2.0 : toScalar(a[1]).toDouble(),
                     toIntList(a[2]), a[3].toBool());
  });
  // The dtype overloads compute in `dtype` (the input converted first), as torch.norm(x,
  // dtype=...) does; torch.norm's scripted body names them in branches a call may not take.
  defFamily(r, "aten::norm.ScalarOpt_dim_dtype", [](const IValue* a) {
    return ops::norm(a[0].toTensor().to(toDtype(a[4])),
                     a[1].isNone() ? 2.0 : toScalar(a[1]).toDouble(), toIntList(a[2]),
                     a[3].toBool());
  });
  defFamily(r, "aten::norm.ScalarOpt_dtype", [](const IValue* a) {
    return ops::norm(a[0].toTensor().to(toDtype(a[2])),
                     a[1].isNone() ? 2.0 : toScalar(a[1]).toDouble());
  });
  defFamily(r, "aten::frobenius_norm.dim", [](const IValue* a) {
    return ops::norm(a[0].toTensor(), 2.0, toIntList(a[1]), a[2].toBool());
  });
  defFamily(r, "aten::linalg_vector_norm", [](const IValue* a) {
    Tensor x = a[0].toTensor();
    if (auto dt = toOptDtype(a[4])) x = x.to(*dt);
    return ops::norm(x, toScalar(a[1]).toDouble(), dimsOrAll(a[2]), a[3].toBool());
  });

  // torch.norm's scripted body names nuclear_norm (it needs an SVD, which ops/ lacks).
  for (const char* name : {"aten::nuclear_norm", "aten::nuclear_norm.dim"})
    defFamily(r, name, [](const IValue*) -> Tensor {
      throw Error("torch.norm(p='nuc') is not supported yet (aten::nuclear_norm needs an SVD)");
    });
  defFamily(r, "aten::all", [](const IValue* a) { return ops::all(a[0].toTensor()); });
  defFamily(r, "aten::all.dim",
            [](const IValue* a) { return ops::all(a[0].toTensor(), a[1].toInt(), a[2].toBool()); });
  defFamily(r, "aten::any", [](const IValue* a) { return ops::any(a[0].toTensor()); });
  defFamily(r, "aten::any.dim",
            [](const IValue* a) { return ops::any(a[0].toTensor(), a[1].toInt(), a[2].toBool()); });
  defFamily(r, "aten::cumsum", [](const IValue* a) {
    return ops::cumsum(a[0].toTensor(), a[1].toInt(), toOptDtype(a[2]));
  });
  defFamily(r, "aten::cumprod", [](const IValue* a) {
    return ops::cumprod(a[0].toTensor(), a[1].toInt(), toOptDtype(a[2]));
  });

  defFamily(r, "aten::softmax.int", [](const IValue* a) {
    return ops::softmax(a[0].toTensor(), a[1].toInt(), toOptDtype(a[2]));
  });
  defFamily(r, "aten::log_softmax.int", [](const IValue* a) {
    return ops::logSoftmax(a[0].toTensor(), a[1].toInt(), toOptDtype(a[2]));
  });
  defFamily(r, "aten::_softmax",
            [](const IValue* a) { return ops::softmax(a[0].toTensor(), a[1].toInt()); });
  defFamily(r, "aten::_log_softmax",
            [](const IValue* a) { return ops::logSoftmax(a[0].toTensor(), a[1].toInt()); });
  defFamily(r, "aten::logsumexp", [](const IValue* a) {
    return ops::logsumexp(a[0].toTensor(), toIntList(a[1]), a[2].toBool());
  });
  defN<5>(r, "aten::topk", [](const IValue* a) {
    return ops::topk(a[0].toTensor(), a[1].toInt(), a[2].toInt(), a[3].toBool(), a[4].toBool());
  });
  defN<3>(r, "aten::sort",
          [](const IValue* a) { return ops::sort(a[0].toTensor(), a[1].toInt(), a[2].toBool()); });
  defN<4>(r, "aten::sort.stable", [](const IValue* a) {
    return ops::sort(a[0].toTensor(), a[2].toInt(), a[3].toBool(),
                     a[1].isNone() ? false : a[1].toBool());
  });
  defFamily(r, "aten::argsort", [](const IValue* a) {
    return ops::argsort(a[0].toTensor(), a[1].toInt(), a[2].toBool());
  });
}

}  // namespace torchless
