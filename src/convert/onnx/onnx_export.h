#pragma once
// ONNX export of torchless graphs, and the extension point for operators torchless lacks.
//
//   #include "convert/onnx/onnx_export.h"   (internal: not installed)
//
//   torchless::onnx_export::ExportOptions o;
//   o.opset = 17;
//   o.inputNames = {"x"};
//   o.dynamicAxes["x"] = {0};                      // batch size free
//   ::onnx::ModelProto m = torchless::onnx_export::exportGraph(*graph, {IValue(x)}, o);
//   torchless::onnx_export::saveModel(m, "model.onnx");   // checked, written atomically
//
// Registering a converter for an operator we lack (as torch.onnx's
// register_custom_op_symbolic). The key is the operator's exact schema string, as
// `torchless ops` prints it; the converter maps the node's outputs from its inputs. Call it
// once at start-up, before the first export; registering a schema twice throws
// torchless::Error.
//
//   // aten::logit(x, eps) -> Log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps is given
//   torchless::onnx_export::registerConverter(
//       "aten::logit(Tensor self, float? eps=None) -> Tensor",
//       [](torchless::onnx_export::OnnxCtx& ctx, const torchless::Node& n,
//       torchless::onnx_export::OnnxArgs& args) {
//         std::string x = args[0].unwrapToTensor();          // an ONNX value name
//         if (!args[1].isNone()) {                           // a constant, or None
//           double eps = args[1].unwrapToDouble();
//           x = ctx.op("Clip", {x, ctx.constScalar(eps, torchless::ScalarType::Float),
//                               ctx.constScalar(1 - eps, torchless::ScalarType::Float)});
//         }
//         std::string one = ctx.constScalar(1.0, torchless::ScalarType::Float);
//         ctx.setOutput(n, 0, ctx.op("Log", {ctx.op("Div", {x, ctx.op("Sub", {one, x})})}));
//       });
//
// Inside a converter: args[i].isIValue() tells a constant (or a value folded from known
// shapes) from a run-time tensor; unwrapToInt / unwrapToIntList / unwrapToScalar /
// unwrapToTensor / unwrapToWeights unwrap with errors naming the schema and argument;
// ctx.op / ctx.opN add ONNX nodes; ctx.constInt64s adds shape constants; ctx.dtypeOf /
// ctx.sizesOf give what the example run observed; ctx.opset() selects opset-dependent forms.

#include "convert/onnx/onnx_ctx.h"  // IWYU pragma: export
#include "core/ivalue.h"
#include "ir/ir.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace torchless::onnx_export {

/// Opsets the exporter writes.
constexpr int kMinOpset = 13;
constexpr int kMaxOpset = 18;
constexpr int kDefaultOpset = 17;

struct ExportOptions {
  /// ONNX opset of the default domain, kMinOpset..kMaxOpset.
  int opset = kDefaultOpset;
  /// Names of the model's tensor inputs / outputs, in order; missing ones are derived from
  /// the graph's value names ("input_0", "output_0" when unnamed).
  std::vector<std::string> inputNames;
  std::vector<std::string> outputNames;
  /// Axes free in size, by input or output name ("x" -> {0}); written as dim_params.
  std::map<std::string, std::vector<int64_t>> dynamicAxes;
  /// Graph inputs (by index) that are parameters: exported as initializers with this name.
  std::map<size_t, std::string> constantInputs;
  /// Module state (module_state.h): graph input index -> index of the graph output holding its
  /// value after the call (the example run's second call, Note [State by a second call]).
  std::map<size_t, size_t> stateOutputs;
  /// Names of whole graph outputs by graph output index (a state's "_h.out"); a name in
  /// outputNames for the same flattened output wins.
  std::map<size_t, std::string> graphOutputNames;
  /// Written to the model's metadata_props.
  std::map<std::string, std::string> metadata;
  /// Fold eval-mode batch norms into the convolution or linear before them, as torch.onnx
  /// does (false: export the graph's batch norms as BatchNormalization).
  bool fold = true;
  /// Export quantized convs and linears as ONNX Runtime's fused int8 operators QLinearConv (linears
  /// as 1x1 ones; within one quantum of PyTorch's integers per layer: an int32 bias and the
  /// output zero point added after rounding) instead of ConvInteger / MatMulInteger and
  /// PyTorch's requantization in float steps (its integers exactly). convert/onnx/quantized.cpp.
  bool qlinearOps = false;
  /// Run the ONNX checker and strict shape inference on the result (checkModel).
  bool check = true;
  std::string producerName = "torchless";
  /// Called with a short line as each step starts ("preparing: example run, folding",
  /// "converting 1234 nodes", "checking"), for progress on long exports; may be empty.
  std::function<void(const std::string&)> progress;
};

/// What an export produced, for reports and tests.
struct ExportReport {
  /// ONNX nodes per op type (main graph and subgraphs).
  std::map<std::string, int> opCounts;
  size_t numInitializers = 0;
  /// True when checkModel ran (false with check off, or for an opset newer than the
  /// installed ONNX library knows: see checkerMaxOpset).
  bool checked = false;
  /// Why the example run failed, when it did (then sizes come from IR types only).
  std::string runError;
  /// Module state inputs (by graph input index) exported with another example than given: an
  /// empty state of the rank it has after a call (PreparedGraph::stateInitial).
  std::map<size_t, Tensor> stateInitial;
};

/// Exports `graph` (inlined; parameters as constants or named in options.constantInputs),
/// specialized to `inputs` (one example per graph input). Throws torchless::UnsupportedError
/// listing every operator without a converter, torchless::Error for anything else (the node's
/// place first).
::onnx::ModelProto exportGraph(const Graph& graph, const std::vector<IValue>& inputs,
                               const ExportOptions& options = {}, ExportReport* report = nullptr);

/// The ONNX checker (onnx::checker::check_model) and shape inference with type checks and
/// errors on (what onnx.checker.check_model(full_check=True) does). Throws torchless::Error,
/// also for an opset newer than checkerMaxOpset().
void checkModel(const ::onnx::ModelProto& model);

/// The newest default-domain opset the installed ONNX library (checker, shape inference)
/// knows: 17 for Debian's libonnx 1.12. exportGraph skips checking newer opsets.
int checkerMaxOpset();

/// Protobuf cannot write messages of 2 GB: models from just under that size are written with
/// external data (see SaveOptions).
constexpr size_t kDefaultExternalDataThreshold = (size_t(2) << 30) - (size_t(64) << 20);

struct SaveOptions {
  /// A model whose serialized size reaches this many bytes keeps its large initializers in
  /// PATH + ".data" (ONNX's external data format: location, offset, length; offsets aligned to
  /// 4 KiB). 0 always writes external data (the tests lower it to exercise the path).
  size_t externalDataThreshold = kDefaultExternalDataThreshold;
  /// With external data, initializers of at least this many bytes go to the data file.
  size_t externalTensorMinBytes = 1024;
};

/// Writes `model` to `path` atomically (Note [Atomic writes], core/atomic_file.h: nothing is
/// left on failure or a kill); with external data (options.externalDataThreshold) also PATH.data,
/// the same way. Returns true when external data was written. Throws torchless::Error (placed at
/// `path`) when a file cannot be written.
bool saveModel(const ::onnx::ModelProto& model, const std::string& path,
               const SaveOptions& options = {});

/// The opsets the converter of op-table key `schema` writes, as {first, last}: kMinOpset..kMaxOpset
/// unless its registration raised the first (setConverterMinOpset; e.g. grid_sampler needs
/// GridSample, opset 16). Exporting at an older opset is an error naming the operator.
std::pair<int, int> converterOpsets(std::string_view schema);
/// Declares that the converter of op-table key `schema` needs `opset` or newer.
void setConverterMinOpset(std::string_view schema, int opset);

/// ONNX nodes per op type in `model` (subgraphs included).
std::map<std::string, int> countOps(const ::onnx::ModelProto& model);

/// Registers a converter for an operator with the exact schema string `schema` (see the
/// example at the top of this file). Throws torchless::Error when the op table does not know
/// the schema or it has a converter already.
void registerConverter(std::string_view schema, OnnxConverter converter);

}  // namespace torchless::onnx_export
