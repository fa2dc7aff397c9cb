// ONNX converters for spectral ops: aten::stft (torch.stft, torchaudio's Spectrogram and
// MelSpectrogram), and the ops that read its complex result.
//
// Note [Complex values]
// ONNX has no complex tensors (ONNX Runtime runs none of its ops on COMPLEX64). A complex
// tensor of the IR is exported as its real view (torch.view_as_real): a float tensor with a
// trailing axis of 2, real and imaginary parts, which is what ONNX's STFT and DFT return. The
// converter that makes one marks its output (OnnxCtx::markComplex); a node with a complex input
// is converted by complexConverter()'s table instead of the op's own converter (abs,
// reshape / view, view_as_real, real, imag), and any other op on one is an error naming it
// (export.cpp), as is a complex graph output: no op silently takes the pairs for a real
// tensor with one more axis.
//
// aten::stft (the op after torch.stft's center padding, which the graph does with aten::pad)
// is exported as a framed DFT in one Conv, at every opset: kernels w[n] * cos(2 pi k n / N) and
// -w[n] * sin(2 pi k n / N) per frequency k (k n taken mod N, so that the angles stay exact),
// the window centered in n_fft (ones when None) and the 1 / sqrt(N) of normalized folded in
// (a window that is a model buffer keeps its name and is multiplied in), stride hop_length; the
// result transposed to PyTorch's [B?, freq, frames, 2]. torch.onnx 1.13 has no stft symbolic;
// torch.onnx 2.x writes ONNX's STFT (opset 17), which is not used here: ONNX Runtime 1.20's STFT
// kernel was 2.1e-4 off PyTorch on kws_crnn_streaming's log-mel frames where this Conv is 2.9e-6
// off (microsoft/onnxruntime#16163 reports its drift from PyTorch since 1.15). The Conv takes
// float32 signals (ONNX Runtime's Conv has no float64 kernel).
#include "convert/onnx/onnx_ctx.h"
#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>

namespace torchless::onnx_export {

namespace {

// A tensor of `dt` (float or double) holding `v` (computed in double) with `sizes`.
Tensor fromDoubles(const std::vector<double>& v, const IntList& sizes, ScalarType dt) {
  Tensor t = Tensor::empty(sizes, ScalarType::Double);
  std::copy(v.begin(), v.end(), t.data<double>());
  return t.to(dt);
}

// The window [n_fft]: `window` (win_length long, or None: ones) centered with zeros, as
// PyTorch's stft pads it. Returns an initializer when the window is known, else Pad of it.
std::string centeredWindow(OnnxCtx& ctx, OnnxArgs& args, int64_t nFft, int64_t win, ScalarType dt,
                           std::vector<double>* known) {
  const int64_t left = (nFft - win) / 2, right = nFft - win - left;
  if (args[4].isNone() || args[4].isIValue()) {
    std::vector<double> w(static_cast<size_t>(nFft), 0.0);
    if (args[4].isNone()) {
      for (int64_t i = 0; i < win; ++i) w[static_cast<size_t>(left + i)] = 1.0;
    } else {
      const Tensor t = args[4].unwrapToWeights().tensor;
      if (t.dim() != 1 || t.size(0) != win)
        args[4].fail(fmt::format("a 1-d window of win_length={} values", win),
                     fmt::format("a tensor of sizes {}", sizesToString(t.sizes())));
      for (int64_t i = 0; i < win; ++i) w[static_cast<size_t>(left + i)] = t.doubleAt(i);
    }
    // A window of the model's (a buffer) keeps its name; the kernels then multiply it in
    // (ONNX Runtime folds that product at load), else it is folded into them here.
    const std::string name = args[4].isNone() ? "" : ctx.weightName(args[4].value());
    if (known && name.empty()) *known = w;
    return ctx.initializer(fromDoubles(w, {nFft}, dt), name);
  }
  if (auto s = ctx.sizesOf(args[4].value()); s && (s->size() != 1 || (*s)[0] != win))
    args[4].fail(fmt::format("a 1-d window of win_length={} values", win),
                 fmt::format("a tensor of sizes {}", sizesToString(*s)));
  std::string w = ctx.castTo(args[4].unwrapToTensor(), ctx.dtypeOf(args[4].value()), dt);
  if (left == 0 && right == 0) return w;
  return ctx.op("Pad", {w, ctx.constInt64s({left, right})});
}

// aten::stft(self, n_fft, hop_length?, win_length?, window?, normalized, onesided?,
// return_complex?) -> [B?, n_fft / 2 + 1 (onesided) or n_fft, frames] complex (Note [Complex
// values]: [..., 2] here), or with return_complex=False the real view itself.
void convertStft(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  const int64_t nFft = args[1].unwrapToInt();
  const int64_t hop = args[2].isNone() ? nFft / 4 : args[2].unwrapToInt();
  const int64_t win = args[3].isNone() ? nFft : args[3].unwrapToInt();
  const bool normalized = args[5].unwrapToBool();
  const bool onesided = args[6].isNone() || args[6].unwrapToBool();
  if (args[7].isNone())
    args[7].fail("True or False (PyTorch 1.13 requires return_complex for real inputs)", "None");
  const bool returnComplex = args[7].unwrapToBool();
  if (nFft <= 0) args[1].fail("n_fft > 0", std::to_string(nFft));
  if (hop <= 0) args[2].fail("hop_length > 0", std::to_string(hop));
  if (win <= 0 || win > nFft)
    args[3].fail(fmt::format("0 < win_length <= n_fft={}", nFft), std::to_string(win));
  const ScalarType dt = dtypeOr(ctx, args[0].value());
  if (dt != ScalarType::Float)
    args[0].fail("a float32 signal", fmt::format("a {} one", dtypeName(dt)));
  const int64_t rank = ctx.expectRank(n, args[0].value());
  if (rank != 1 && rank != 2) args[0].fail("a 1-d or 2-d signal", fmt::format("{}-d", rank));
  if (auto s = ctx.sizesOf(args[0].value()); s && nFft > s->back())
    args[1].fail(fmt::format("n_fft <= the signal's length {}", s->back()), std::to_string(nFft));
  const int64_t F = onesided ? nFft / 2 + 1 : nFft;
  std::string x = args[0].unwrapToTensor();
  if (rank == 1) x = unsqueeze(ctx, x, {0});  // [B, L]
  std::vector<double> known;
  const std::string w = centeredWindow(ctx, args, nFft, win, dt, &known);
  // Kernels [2F, 1, n_fft]: rows k < F the cosines, rows F + k minus the sines (e^-i...).
  const double kTwoPi = 6.283185307179586476925286766559;
  const double norm = normalized ? 1.0 / std::sqrt(static_cast<double>(nFft)) : 1.0;
  std::vector<double> basis(static_cast<size_t>(2 * F * nFft));
  for (int64_t k = 0; k < F; ++k)
    for (int64_t t = 0; t < nFft; ++t) {
      const double a = kTwoPi * static_cast<double>((k * t) % nFft) / static_cast<double>(nFft);
      const double wt = known.empty() ? norm : norm * known[static_cast<size_t>(t)];
      basis[static_cast<size_t>(k * nFft + t)] = wt * std::cos(a);
      basis[static_cast<size_t>((F + k) * nFft + t)] = -wt * std::sin(a);
    }
  std::string kernels = ctx.initializer(fromDoubles(basis, {2 * F, 1, nFft}, dt));
  if (known.empty())  // a named or run-time window
    kernels = ctx.op("Mul", {kernels, ctx.op("Reshape", {w, ctx.constInt64s({1, 1, nFft})})});
  std::string y = ctx.op("Conv", {unsqueeze(ctx, x, {1}), kernels},
                         {attrIs("kernel_shape", {nFft}), attrIs("strides", {hop})});
  y = ctx.op("Reshape", {y, ctx.constInt64s({0, 2, F, -1})});    // [B, 2, F, frames]
  y = ctx.op("Transpose", {y}, {attrIs("perm", {0, 2, 3, 1})});  // [B, F, frames, 2]
  if (rank == 1) y = squeeze(ctx, y, {0});
  ctx.setOutput(n, 0, y);
  if (returnComplex) ctx.markComplex(n.output());
}

// ---- ops on complex values (Note [Complex values]) ------------------------------------------

// abs(z) -> sqrt(re^2 + im^2): ReduceL2 over the pairs (a real result).
void complexAbs(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ctx.setOutput(n, 0, reduce(ctx, "L2", args[0].unwrapToTensor(), {-1}, false));
}

// reshape / view(z, shape) -> Reshape to shape + [2]; the shape must be known.
void complexReshape(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  if (!args[1].isIValue())
    args[1].fail("a shape known at export time (a complex tensor's reshape)",
                 "one computed at run time");
  std::vector<int64_t> shape = args[1].unwrapToIntList();
  shape.push_back(2);
  ctx.setOutput(n, 0, ctx.op("Reshape", {args[0].unwrapToTensor(), ctx.constInt64s(shape)}));
  ctx.markComplex(n.output());
}

// view_as_real(z) -> the pairs themselves (no longer complex).
void complexViewAsReal(OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
  ctx.setOutput(n, 0, args[0].unwrapToTensor());
}

// real / imag(z) -> Gather of the pair's first / second value.
OnnxConverter complexPart(int64_t part) {
  return [part](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(n, 0,
                  ctx.op("Gather",
                         {args[0].unwrapToTensor(),
                          ctx.constScalar(static_cast<double>(part), ScalarType::Long)},
                         {attrI("axis", -1)}));
  };
}

const std::map<std::string, OnnxConverter, std::less<>>& complexTable() {
  static const auto* table = new std::map<std::string, OnnxConverter, std::less<>>{
      {"aten::abs", complexAbs},      {"aten::reshape", complexReshape},
      {"aten::view", complexReshape}, {"aten::view_as_real", complexViewAsReal},
      {"aten::real", complexPart(0)}, {"aten::imag", complexPart(1)},
  };
  return *table;
}

}  // namespace

const OnnxConverter* complexConverter(std::string_view key) {
  const auto& t = complexTable();
  auto it = t.find(key);
  return it == t.end() ? nullptr : &it->second;
}

std::string complexOpsList() {
  std::string s;
  for (const auto& [k, fn] : complexTable()) s += (s.empty() ? "" : ", ") + k;
  return s;
}

void registerSpectralConverters(OnnxConverterRegistry& r) {
  r.addOverloads({"aten::stft"}, convertStft);
  // On real tensors: view_as_real is PyTorch's error, real the tensor itself; imag an error.
  r.addOverloads({"aten::view_as_real"}, [](OnnxCtx&, const Node&, OnnxArgs& args) {
    args[0].fail("a complex tensor", "a real one");
  });
  r.addOverloads({"aten::real"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(n, 0, args[0].unwrapToTensor());
  });
  r.addOverloads({"aten::imag"}, [](OnnxCtx&, const Node&, OnnxArgs& args) {
    args[0].fail("a complex tensor (imag is not implemented for real tensors)", "a real one");
  });
  // view_as_complex(x [..., 2]) -> the pairs, marked complex.
  r.addOverloads({"aten::view_as_complex"}, [](OnnxCtx& ctx, const Node& n, OnnxArgs& args) {
    ctx.setOutput(n, 0, args[0].unwrapToTensor());
    ctx.markComplex(n.output());
  });
}

}  // namespace torchless::onnx_export
