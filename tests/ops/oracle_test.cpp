// The ops oracle: runs every case gen_op_cases.py wrote (inputs and PyTorch's outputs as
// .npy, arguments and tolerances in manifest.json) through our kernels and compares.

#include "core/npy.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/grid_sample.h"
#include "ops/linalg.h"
#include "ops/nn.h"
#include "ops/norm.h"
#include "ops/pool.h"
#include "ops/reduction.h"
#include "ops/shape.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

namespace torchless::ops {
namespace {

using json = nlohmann::json;
using Args = const json&;
using Ins = std::vector<Tensor>;
using Outs = std::vector<Tensor>;
using OpFn = std::function<Outs(const Ins&, Args)>;

Scalar scalarOf(const json& v) {
  if (v.is_boolean()) return Scalar(v.get<bool>());
  if (v.is_number_integer()) return Scalar(v.get<int64_t>());
  if (v.is_string()) return Scalar(std::stod(v.get<std::string>()));
  return Scalar(v.get<double>());
}
ScalarType dtypeOf(const json& v) {
  auto t = scalarTypeFromDtypeName(v.get<std::string>());
  if (!t) throw Error("unknown dtype " + v.get<std::string>());
  return *t;
}
std::optional<ScalarType> optDtype(Args a) {
  if (!a.contains("dtype")) return std::nullopt;
  return dtypeOf(a["dtype"]);
}
IntList ints(const json& v) { return v.get<IntList>(); }
template <typename T>
T get(Args a, const char* k, T dflt) {
  return a.contains(k) && !a[k].is_null() ? a[k].get<T>() : dflt;
}
std::optional<int64_t> optInt(const json& v) {
  if (v.is_null()) return std::nullopt;
  return v.get<int64_t>();
}
std::vector<std::optional<Tensor>> pattern(const Ins& in, Args a, size_t first, size_t* used) {
  std::vector<std::optional<Tensor>> idx;
  size_t k = first;
  for (int64_t p : a["pattern"].get<IntList>()) idx.push_back(p ? std::optional<Tensor>(in[k++]) : std::nullopt);
  if (used) *used = k;
  return idx;
}

using Unary = Tensor (*)(const Tensor&);
using Binary = Tensor (*)(const Tensor&, const Tensor&);
using BinaryS = Tensor (*)(const Tensor&, const Scalar&);

std::map<std::string, OpFn> makeTable() {
  std::map<std::string, OpFn> t;
  auto unary = [&](const char* name, Unary f) { t[name] = [f](const Ins& in, Args) { return Outs{f(in[0])}; }; };
  unary("abs", abs); unary("neg", neg); unary("sqrt", sqrt); unary("rsqrt", rsqrt); unary("exp", exp);
  unary("log", log); unary("log1p", log1p); unary("sin", sin); unary("cos", cos); unary("tan", tan);
  unary("asin", asin); unary("acos", acos); unary("atan", atan); unary("tanh", tanh);
  unary("sigmoid", sigmoid); unary("erf", erf); unary("reciprocal", reciprocal); unary("floor", floor);
  unary("ceil", ceil); unary("trunc", trunc); unary("sign", sign); unary("logical_not", logicalNot);
  unary("bitwise_not", bitwiseNot); unary("isnan", isnan); unary("isinf", isinf); unary("isfinite", isfinite);
  unary("log10", log10); unary("relu", relu); unary("relu6", relu6);
  unary("silu", silu); unary("hardswish", hardswish); unary("hardsigmoid", hardsigmoid); unary("selu", selu);
  unary("mish", mish);
  t["round"] = [](const Ins& in, Args a) { return Outs{round(in[0], get<int64_t>(a, "decimals", 0))}; };
  t["gelu"] = [](const Ins& in, Args) { return Outs{gelu(in[0])}; };
  t["gelu_tanh"] = [](const Ins& in, Args) { return Outs{gelu(in[0], "tanh")}; };
  t["hardtanh"] = [](const Ins& in, Args a) {
    return Outs{hardtanh(in[0], get<double>(a, "min", -1.0), get<double>(a, "max", 1.0))};
  };
  t["leaky_relu"] = [](const Ins& in, Args a) { return Outs{leakyRelu(in[0], get<double>(a, "slope", 0.01))}; };
  t["elu"] = [](const Ins& in, Args a) { return Outs{elu(in[0], get<double>(a, "alpha", 1.0))}; };
  t["softplus"] = [](const Ins& in, Args a) {
    return Outs{softplus(in[0], get<double>(a, "beta", 1.0), get<double>(a, "threshold", 20.0))};
  };

  auto binary = [&](const std::string& name, Binary f, BinaryS fs) {
    t[name] = [f](const Ins& in, Args) { return Outs{f(in[0], in[1])}; };
    if (fs) t[name + "_scalar"] = [fs](const Ins& in, Args a) { return Outs{fs(in[0], scalarOf(a["other"]))}; };
  };
  t["add"] = [](const Ins& in, Args a) { return Outs{add(in[0], in[1], a.contains("alpha") ? scalarOf(a["alpha"]) : Scalar(1))}; };
  t["add_scalar"] = [](const Ins& in, Args a) { return Outs{add(in[0], scalarOf(a["other"]))}; };
  t["sub"] = [](const Ins& in, Args a) { return Outs{sub(in[0], in[1], a.contains("alpha") ? scalarOf(a["alpha"]) : Scalar(1))}; };
  t["sub_scalar"] = [](const Ins& in, Args a) { return Outs{sub(in[0], scalarOf(a["other"]))}; };
  t["rsub_scalar"] = [](const Ins& in, Args a) { return Outs{rsub(in[0], scalarOf(a["other"]))}; };
  binary("mul", mul, mul);
  t["div"] = [](const Ins& in, Args) { return Outs{div(in[0], in[1])}; };
  t["div_scalar"] = [](const Ins& in, Args a) { return Outs{div(in[0], scalarOf(a["other"]))}; };
  t["div_trunc"] = [](const Ins& in, Args) { return Outs{div(in[0], in[1], "trunc")}; };
  t["div_trunc_scalar"] = [](const Ins& in, Args a) { return Outs{div(in[0], scalarOf(a["other"]), "trunc")}; };
  t["div_floor"] = [](const Ins& in, Args) { return Outs{div(in[0], in[1], "floor")}; };
  t["div_floor_scalar"] = [](const Ins& in, Args a) { return Outs{div(in[0], scalarOf(a["other"]), "floor")}; };
  binary("remainder", remainder, remainder);
  binary("fmod", fmod, fmod);
  binary("pow", pow, pow);
  binary("atan2", atan2, nullptr);
  binary("maximum", maximum, nullptr);
  binary("minimum", minimum, nullptr);
  binary("eq", eq, eq); binary("ne", ne, ne); binary("lt", lt, lt); binary("le", le, le);
  binary("gt", gt, gt); binary("ge", ge, ge);
  binary("logical_and", logicalAnd, nullptr); binary("logical_or", logicalOr, nullptr);
  binary("logical_xor", logicalXor, nullptr);
  binary("bitwise_and", bitwiseAnd, bitwiseAnd); binary("bitwise_or", bitwiseOr, bitwiseOr);
  binary("bitwise_xor", bitwiseXor, bitwiseXor);
  binary("lshift", lshift, lshift); binary("rshift", rshift, rshift);
  t["grid_sampler"] = [](const Ins& in, Args a) {
    return Outs{gridSampler(in[0], in[1], a["mode"].get<int64_t>(), a["padding"].get<int64_t>(),
                            a["align_corners"].get<bool>())};
  };

  t["where"] = [](const Ins& in, Args) { return Outs{where(in[0], in[1], in[2])}; };
  t["where_scalar"] = [](const Ins& in, Args a) { return Outs{where(in[0], in[1], scalarOf(a["other"]))}; };
  t["clamp"] = [](const Ins& in, Args a) {
    std::optional<Scalar> lo, hi;
    if (a.contains("min")) lo = scalarOf(a["min"]);
    if (a.contains("max")) hi = scalarOf(a["max"]);
    return Outs{clamp(in[0], lo, hi)};
  };
  t["clamp_tensor"] = [](const Ins& in, Args) {
    return Outs{clamp(in[0], std::optional<Tensor>(in[1]), std::optional<Tensor>(in[2]))};
  };
  t["masked_fill"] = [](const Ins& in, Args a) { return Outs{maskedFill(in[0], in[1], scalarOf(a["value"]))}; };
  t["lerp"] = [](const Ins& in, Args a) { return Outs{lerp(in[0], in[1], scalarOf(a["weight"]))}; };
  t["lerp_tensor"] = [](const Ins& in, Args) { return Outs{lerp(in[0], in[1], in[2])}; };
  t["addcmul"] = [](const Ins& in, Args a) { return Outs{addcmul(in[0], in[1], in[2], scalarOf(a["value"]))}; };
  t["addcdiv"] = [](const Ins& in, Args a) { return Outs{addcdiv(in[0], in[1], in[2], scalarOf(a["value"]))}; };

  // reductions
  t["sum"] = [](const Ins& in, Args a) {
    return Outs{sum(in[0], get<IntList>(a, "dims", {}), get<bool>(a, "keepdim", false), optDtype(a))};
  };
  t["mean"] = [](const Ins& in, Args a) {
    return Outs{mean(in[0], get<IntList>(a, "dims", {}), get<bool>(a, "keepdim", false), optDtype(a))};
  };
  t["prod"] = [](const Ins& in, Args a) {
    return Outs{prod(in[0], a.contains("dim") ? optInt(a["dim"]) : std::nullopt, get<bool>(a, "keepdim", false))};
  };
  t["max_all"] = [](const Ins& in, Args) { return Outs{max(in[0])}; };
  t["max_dim"] = [](const Ins& in, Args a) {
    auto [v, i] = max(in[0], a["dim"].get<int64_t>(), get<bool>(a, "keepdim", false));
    return Outs{v, i};
  };
  t["min_dim"] = [](const Ins& in, Args a) {
    auto [v, i] = min(in[0], a["dim"].get<int64_t>(), get<bool>(a, "keepdim", false));
    return Outs{v, i};
  };
  t["amax"] = [](const Ins& in, Args a) { return Outs{amax(in[0], ints(a["dims"]), get<bool>(a, "keepdim", false))}; };
  t["amin"] = [](const Ins& in, Args a) { return Outs{amin(in[0], ints(a["dims"]), get<bool>(a, "keepdim", false))}; };
  t["argmax"] = [](const Ins& in, Args a) {
    return Outs{argmax(in[0], a.contains("dim") ? optInt(a["dim"]) : std::nullopt, get<bool>(a, "keepdim", false))};
  };
  t["argmin"] = [](const Ins& in, Args a) {
    return Outs{argmin(in[0], a.contains("dim") ? optInt(a["dim"]) : std::nullopt, get<bool>(a, "keepdim", false))};
  };
  auto varLike = [](bool isStd) {
    return [isStd](const Ins& in, Args a) {
      std::optional<IntList> dims;
      if (a.contains("dims")) dims = ints(a["dims"]);
      std::optional<double> c;
      if (a.contains("correction")) c = a["correction"].get<double>();
      const bool k = get<bool>(a, "keepdim", false);
      return Outs{isStd ? std(in[0], dims, c, k) : var(in[0], dims, c, k)};
    };
  };
  t["var"] = varLike(false);
  t["std"] = varLike(true);
  t["norm"] = [](const Ins& in, Args a) {
    double p = 2;
    if (a.contains("p")) p = scalarOf(a["p"]).toDouble();
    return Outs{norm(in[0], p, get<IntList>(a, "dims", {}), get<bool>(a, "keepdim", false))};
  };
  t["all"] = [](const Ins& in, Args a) { return Outs{a.contains("dim") ? all(in[0], a["dim"].get<int64_t>()) : all(in[0])}; };
  t["any"] = [](const Ins& in, Args a) { return Outs{a.contains("dim") ? any(in[0], a["dim"].get<int64_t>()) : any(in[0])}; };
  t["cumsum"] = [](const Ins& in, Args a) { return Outs{cumsum(in[0], a["dim"].get<int64_t>(), optDtype(a))}; };
  t["softmax"] = [](const Ins& in, Args a) { return Outs{softmax(in[0], a["dim"].get<int64_t>(), optDtype(a))}; };
  t["log_softmax"] = [](const Ins& in, Args a) { return Outs{logSoftmax(in[0], a["dim"].get<int64_t>(), optDtype(a))}; };
  t["logsumexp"] = [](const Ins& in, Args a) { return Outs{logsumexp(in[0], ints(a["dims"]), get<bool>(a, "keepdim", false))}; };
  t["topk"] = [](const Ins& in, Args a) {
    auto [v, i] = topk(in[0], a["k"].get<int64_t>(), a["dim"].get<int64_t>(), a["largest"].get<bool>());
    return Outs{v, i};
  };
  t["sort"] = [](const Ins& in, Args a) {
    auto [v, i] = sort(in[0], a["dim"].get<int64_t>(), a["descending"].get<bool>(), true);
    return Outs{v, i};
  };

  // shape
  t["reshape"] = [](const Ins& in, Args a) { return Outs{reshape(in[0], ints(a["shape"]))}; };
  t["view"] = [](const Ins& in, Args a) { return Outs{view(in[0], ints(a["shape"]))}; };
  t["flatten"] = [](const Ins& in, Args a) { return Outs{flatten(in[0], a["start"].get<int64_t>(), a["end"].get<int64_t>())}; };
  t["unflatten"] = [](const Ins& in, Args a) { return Outs{unflatten(in[0], a["dim"].get<int64_t>(), ints(a["sizes"]))}; };
  t["permute"] = [](const Ins& in, Args a) { return Outs{permute(in[0], ints(a["dims"]))}; };
  t["expand"] = [](const Ins& in, Args a) { return Outs{expand(in[0], ints(a["sizes"]))}; };
  t["squeeze"] = [](const Ins& in, Args a) {
    return Outs{a.contains("dim") ? squeeze(in[0], a["dim"].get<int64_t>()) : squeeze(in[0])};
  };
  t["unsqueeze"] = [](const Ins& in, Args a) { return Outs{unsqueeze(in[0], a["dim"].get<int64_t>())}; };
  t["select"] = [](const Ins& in, Args a) { return Outs{select(in[0], a["dim"].get<int64_t>(), a["index"].get<int64_t>())}; };
  t["slice"] = [](const Ins& in, Args a) {
    return Outs{slice(in[0], a["dim"].get<int64_t>(), optInt(a["start"]), optInt(a["end"]), a["step"].get<int64_t>())};
  };
  t["narrow"] = [](const Ins& in, Args a) {
    return Outs{narrow(in[0], a["dim"].get<int64_t>(), a["start"].get<int64_t>(), a["length"].get<int64_t>())};
  };
  t["chunk"] = [](const Ins& in, Args a) { return chunk(in[0], a["chunks"].get<int64_t>(), a["dim"].get<int64_t>()); };
  t["split"] = [](const Ins& in, Args a) { return split(in[0], a["size"].get<int64_t>(), a["dim"].get<int64_t>()); };
  t["split_with_sizes"] = [](const Ins& in, Args a) { return splitWithSizes(in[0], ints(a["sizes"]), a["dim"].get<int64_t>()); };
  t["unbind"] = [](const Ins& in, Args a) { return unbind(in[0], a["dim"].get<int64_t>()); };
  t["cat"] = [](const Ins& in, Args a) { return Outs{cat(in, a["dim"].get<int64_t>())}; };
  t["stack"] = [](const Ins& in, Args a) { return Outs{stack(in, a["dim"].get<int64_t>())}; };
  t["index_select"] = [](const Ins& in, Args a) { return Outs{indexSelect(in[0], a["dim"].get<int64_t>(), in[1])}; };
  t["gather"] = [](const Ins& in, Args a) { return Outs{gather(in[0], a["dim"].get<int64_t>(), in[1])}; };
  t["index"] = [](const Ins& in, Args a) { return Outs{index(in[0], pattern(in, a, 1, nullptr))}; };
  t["index_put"] = [](const Ins& in, Args a) {
    size_t used = 0;
    auto idx = pattern(in, a, 1, &used);
    return Outs{indexPut(in[0], idx, in[used], a["accumulate"].get<bool>())};
  };
  t["repeat"] = [](const Ins& in, Args a) { return Outs{repeat(in[0], ints(a["repeats"]))}; };
  t["flip"] = [](const Ins& in, Args a) { return Outs{flip(in[0], ints(a["dims"]))}; };
  t["roll"] = [](const Ins& in, Args a) { return Outs{roll(in[0], ints(a["shifts"]), ints(a["dims"]))}; };
  t["constant_pad"] = [](const Ins& in, Args a) { return Outs{constantPadNd(in[0], ints(a["pad"]), scalarOf(a["value"]))}; };
  t["reflection_pad"] = [](const Ins& in, Args a) { return Outs{reflectionPad(in[0], ints(a["pad"]))}; };
  t["replication_pad"] = [](const Ins& in, Args a) { return Outs{replicationPad(in[0], ints(a["pad"]))}; };
  t["tril"] = [](const Ins& in, Args a) { return Outs{tril(in[0], a["diagonal"].get<int64_t>())}; };
  t["triu"] = [](const Ins& in, Args a) { return Outs{triu(in[0], a["diagonal"].get<int64_t>())}; };
  t["pixel_shuffle"] = [](const Ins& in, Args a) { return Outs{pixelShuffle(in[0], a["factor"].get<int64_t>())}; };
  t["pixel_unshuffle"] = [](const Ins& in, Args a) { return Outs{pixelUnshuffle(in[0], a["factor"].get<int64_t>())}; };
  t["one_hot"] = [](const Ins& in, Args a) { return Outs{oneHot(in[0], a["classes"].get<int64_t>())}; };
  t["arange"] = [](const Ins&, Args a) {
    return Outs{arange(scalarOf(a["start"]), scalarOf(a["end"]), scalarOf(a["step"]), optDtype(a))};
  };
  t["linspace"] = [](const Ins&, Args a) {
    return Outs{linspace(scalarOf(a["start"]), scalarOf(a["end"]), a["steps"].get<int64_t>(), optDtype(a))};
  };
  t["eye"] = [](const Ins&, Args a) { return Outs{eye(a["n"].get<int64_t>(), a["m"].get<int64_t>())}; };
  t["full"] = [](const Ins&, Args a) { return Outs{full(ints(a["sizes"]), scalarOf(a["value"]))}; };
  t["to"] = [](const Ins& in, Args a) { return Outs{toDtype(in[0], dtypeOf(a["dtype"]))}; };

  // linalg
  t["mm"] = [](const Ins& in, Args) { return Outs{mm(in[0], in[1])}; };
  t["bmm"] = [](const Ins& in, Args) { return Outs{bmm(in[0], in[1])}; };
  t["matmul"] = [](const Ins& in, Args) { return Outs{matmul(in[0], in[1])}; };
  t["addmm"] = [](const Ins& in, Args a) { return Outs{addmm(in[0], in[1], in[2], scalarOf(a["beta"]), scalarOf(a["alpha"]))}; };
  t["baddbmm"] = [](const Ins& in, Args a) { return Outs{baddbmm(in[0], in[1], in[2], scalarOf(a["beta"]), scalarOf(a["alpha"]))}; };
  t["linear"] = [](const Ins& in, Args) {
    return Outs{linear(in[0], in[1], in.size() > 2 ? std::optional<Tensor>(in[2]) : std::nullopt)};
  };
  t["dot"] = [](const Ins& in, Args) { return Outs{dot(in[0], in[1])}; };
  t["outer"] = [](const Ins& in, Args) { return Outs{outer(in[0], in[1])}; };

  // conv: runs the oneDNN path and, for float32, also the reference path
  t["convolution"] = [](const Ins& in, Args a) {
    std::optional<Tensor> bias;
    if (a["bias"].get<bool>()) bias = in[2];
    Outs o{convolution(in[0], in[1], bias, ints(a["stride"]), ints(a["padding"]), ints(a["dilation"]),
                       a["transposed"].get<bool>(), ints(a["output_padding"]), a["groups"].get<int64_t>())};
    return o;
  };
  t["max_pool"] = [](const Ins& in, Args a) {
    auto [v, i] = maxPoolWithIndices(in[0], a["k"].get<int64_t>(), ints(a["kernel"]), ints(a["stride"]),
                                     ints(a["padding"]), ints(a["dilation"]), a["ceil"].get<bool>());
    return Outs{v, i};
  };
  t["avg_pool"] = [](const Ins& in, Args a) {
    return Outs{avgPool(in[0], a["k"].get<int64_t>(), ints(a["kernel"]), ints(a["stride"]), ints(a["padding"]),
                        a["ceil"].get<bool>(), a["count_include_pad"].get<bool>(), optInt(a["divisor"]))};
  };
  t["adaptive_avg_pool"] = [](const Ins& in, Args a) {
    return Outs{adaptiveAvgPool(in[0], a["k"].get<int64_t>(), ints(a["out"]))};
  };
  t["adaptive_max_pool"] = [](const Ins& in, Args a) {
    auto [v, i] = adaptiveMaxPool(in[0], a["k"].get<int64_t>(), ints(a["out"]));
    return Outs{v, i};
  };

  t["batch_norm"] = [](const Ins& in, Args a) {
    return Outs{batchNorm(in[0], in[1], in[2], in[3], in[4], a["training"].get<bool>(), 0.1, a["eps"].get<double>())};
  };
  t["layer_norm"] = [](const Ins& in, Args a) {
    // Optional weight / bias: inputs 1 and 2 when given (a["affine"] = "none" / "weight").
    const std::string affine = a.contains("affine") ? a["affine"].get<std::string>() : "both";
    OptTensor w = affine == "none" ? OptTensor() : OptTensor(in[1]);
    OptTensor b = affine == "both" ? OptTensor(in[2]) : OptTensor();
    return Outs{layerNorm(in[0], ints(a["shape"]), w, b, a["eps"].get<double>())};
  };
  t["group_norm"] = [](const Ins& in, Args a) {
    return Outs{groupNorm(in[0], a["groups"].get<int64_t>(), in[1], in[2], a["eps"].get<double>())};
  };
  t["instance_norm"] = [](const Ins& in, Args a) {
    return Outs{instanceNorm(in[0], std::nullopt, std::nullopt, in[1], in[2], true, 0.1, a["eps"].get<double>())};
  };

  t["embedding"] = [](const Ins& in, Args a) { return Outs{embedding(in[1], in[0], a["padding_idx"].get<int64_t>())}; };
  t["prelu"] = [](const Ins& in, Args) { return Outs{prelu(in[0], in[1])}; };
  t["glu"] = [](const Ins& in, Args a) { return Outs{glu(in[0], a["dim"].get<int64_t>())}; };
  t["threshold"] = [](const Ins& in, Args a) { return Outs{threshold(in[0], scalarOf(a["threshold"]), scalarOf(a["value"]))}; };
  t["interpolate"] = [](const Ins& in, Args a) {
    std::optional<IntList> size;
    if (!a["size"].is_null()) size = ints(a["size"]);
    std::optional<std::vector<double>> scale;
    if (!a["scale"].is_null()) scale = a["scale"].get<std::vector<double>>();
    std::optional<bool> ac;
    if (!a["align_corners"].is_null()) ac = a["align_corners"].get<bool>();
    return Outs{interpolate(in[0], size, scale, a["mode"].get<std::string>(), ac)};
  };
  return t;
}

std::string casesDir() { return std::string(TORCHLESS_BINARY_DIR) + "/ops_cases"; }

// Compares actual with expected; returns "" or a description of the first mismatch.
std::string compare(const Tensor& actual, const Tensor& expected, ScalarType expectedDtype, double rtol, double atol) {
  if (actual.dtype() != expectedDtype)
    return fmt::format("dtype {} != expected {}", dtypeName(actual.dtype()), dtypeName(expectedDtype));
  if (actual.sizes() != expected.sizes())
    return fmt::format("shape {} != expected {}", sizesToString(actual.sizes()), sizesToString(expected.sizes()));
  const int64_t n = actual.numel();
  const bool fl = isFloatingType(expectedDtype);
  for (int64_t i = 0; i < n; ++i) {
    const double a = actual.doubleAt(i), e = expected.doubleAt(i);
    if (fl) {
      if (std::isnan(e) && std::isnan(a)) continue;
      if (std::isinf(e) && a == e) continue;
      if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e)))
        return fmt::format("element {}: {} != expected {} (rtol {}, atol {})", i, a, e, rtol, atol);
    } else if (a != e) {
      return fmt::format("element {}: {} != expected {}", i, a, e);
    }
  }
  return "";
}

TEST(OpsOracle, AllCases) {
  const std::string dir = casesDir();
  const std::string manifestPath = dir + "/manifest.json";
  if (!std::filesystem::exists(manifestPath)) GTEST_SKIP() << "no " << manifestPath << " (run ctest: ops_gen_cases)";
  std::ifstream f(manifestPath);
  const json manifest = json::parse(f);
  const auto table = makeTable();
  int run = 0, failed = 0;
  std::map<std::string, int> perOp;
  for (const auto& c : manifest["cases"]) {
    const std::string id = c["id"], op = c["op"];
    auto it = table.find(op);
    if (it == table.end()) {
      ADD_FAILURE() << id << ": no kernel in the test table for op " << op;
      ++failed;
      continue;
    }
    Ins ins;
    for (const auto& in : c["inputs"]) {
      Tensor t = loadNpy(dir + "/" + in["file"].get<std::string>());
      if (in.contains("dtype") && dtypeOf(in["dtype"]) != t.dtype()) t = t.to(dtypeOf(in["dtype"]));  // bfloat16
      const std::string view = in["view"].is_null() ? "" : in["view"].get<std::string>();
      if (view == "T") t = transpose(t, -1, -2);
      else if (view == "S") t = slice(t, -1, std::nullopt, std::nullopt, 2);
      ins.push_back(t);
    }
    ++run;
    ++perOp[op];
    if (c.contains("error")) {
      bool threw = false;
      try {
        it->second(ins, c["args"]);
      } catch (const Error&) {
        threw = true;
      }
      if (!threw) {
        ++failed;
        ADD_FAILURE() << id << ": PyTorch raised \"" << c["error"].get<std::string>() << "\" but we did not";
      }
      continue;
    }
    Outs outs;
    try {
      outs = it->second(ins, c["args"]);
    } catch (const std::exception& e) {
      ++failed;
      ADD_FAILURE() << id << ": threw " << e.what() << " (args " << c["args"].dump() << ")";
      continue;
    }
    if (outs.size() != c["outputs"].size()) {
      ++failed;
      ADD_FAILURE() << id << ": " << outs.size() << " outputs, expected " << c["outputs"].size();
      continue;
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      const auto& o = c["outputs"][k];
      const ScalarType edt = dtypeOf(o["dtype"]);
      Tensor expected = loadNpy(dir + "/" + o["file"].get<std::string>());
      if (expected.dtype() != edt) expected = expected.to(edt);  // bfloat16 travels as float32
      const std::string msg = compare(outs[k], expected, edt, c["rtol"].get<double>(), c["atol"].get<double>());
      if (!msg.empty()) {
        ++failed;
        ADD_FAILURE() << id << " output " << k << ": " << msg << " (args " << c["args"].dump() << ")";
        break;
      }
    }
  }
  std::cout << "ops oracle: " << run << " cases over " << perOp.size() << " ops, " << failed << " failed\n";
  EXPECT_GT(run, 100);
}

}  // namespace
}  // namespace torchless::ops
