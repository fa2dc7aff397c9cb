// torchless::trace: the check-input comparisons of torch.jit.trace and the traced Module, on
// the tracer of frontend/tracer.h (Note [Tracing]) run by the interpreter (runObserved).
#include "api/trace.h"

#include "core/error.h"
#include "ir/operator_registry.h"
#include "runtime/kernel.h"
#include "runtime/observed_run.h"

#include <atomic>
#include <cmath>
#include <optional>
#include <sstream>

namespace torchless {

namespace {

/// A deep copy of tensors inside `v` (torch.jit._trace._clone_inputs).
IValue cloneValue(const IValue& v) {
  if (v.isTensor()) return IValue(v.toTensor().clone());
  if (v.isList()) {
    const auto& l = v.toList();
    std::vector<IValue> items;
    for (const auto& x : l->list) items.push_back(cloneValue(x));
    return IValue(ListImpl::create(l->elementType, std::move(items)));
  }
  if (v.isTuple()) {
    const auto& t = v.toTuple();
    std::vector<IValue> items;
    for (const auto& x : t->elements) items.push_back(cloneValue(x));
    return IValue(TupleImpl::create(std::move(items), t->type));
  }
  if (v.isDict()) {
    const auto& d = v.toDict();
    auto c = DictImpl::create(d->keyType, d->valueType);
    for (const auto& [k, x] : d->entries()) c->insertOrAssign(k, cloneValue(x));
    return IValue(c);
  }
  return v;
}

std::vector<IValue> cloneValues(const std::vector<IValue>& vs) {
  std::vector<IValue> out;
  for (const auto& v : vs) out.push_back(cloneValue(v));
  return out;
}

std::string indent(const std::string& s) {
  std::string out;
  std::istringstream in(s);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (!first) out += "\n";
    first = false;
    out += "\t" + line;
  }
  return out;
}

std::string pyFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string indexTuple(int64_t flat, const IntList& sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (size_t i = sizes.size(); i-- > 0;) {
    idx[i] = flat % sizes[i];
    flat /= sizes[i];
  }
  if (idx.size() == 1) return fmt::format("({},)", idx[0]);
  return fmt::format("({})", fmt::join(idx, ", "));
}

/// torch.testing.assert_close's message for `actual` vs `expected` (both compared as double),
/// or "" when they are close.
std::string compareTensors(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  if (actual.sizes() != expected.sizes())
    return fmt::format(
        "The values for attribute 'shape' do not match: torch.Size([{}]) != torch.Size([{}]).",
        fmt::join(actual.sizes(), ", "), fmt::join(expected.sizes(), ", "));
  Tensor a = actual.contiguous(), e = expected.contiguous();
  const int64_t n = a.numel();
  int64_t bad = 0, absIdx = 0, relIdx = 0;
  double maxAbs = 0, maxRel = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = a.doubleAt(i), y = e.doubleAt(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    const double d = std::fabs(x - y);
    if (x == y || d <= atol + rtol * std::fabs(y)) continue;
    ++bad;
    if (bad == 1 || d > maxAbs) maxAbs = d, absIdx = i;
    const double r = d / std::fabs(y);
    if (bad == 1 || r > maxRel) maxRel = r, relIdx = i;
  }
  if (bad == 0) return {};
  return fmt::format(
      "Tensor-likes are not close!\n\nMismatched elements: {} / {} ({:.1f}%)\n"
      "Greatest absolute difference: {} at index {} (up to {} allowed)\n"
      "Greatest relative difference: {} at index {} (up to {} allowed)",
      bad, n, 100.0 * static_cast<double>(bad) / static_cast<double>(n), pyFloat(maxAbs),
      indexTuple(absIdx, a.sizes()), fmt::format("{}", atol), pyFloat(maxRel),
      indexTuple(relIdx, a.sizes()), fmt::format("{}", rtol));
}

/// torch.jit._trace: `wrap_retval` then keep the tensors.
std::vector<Tensor> tensorOutputs(const IValue& v) {
  std::vector<Tensor> out;
  if (v.isTuple()) {
    for (const auto& e : v.toTuple()->elements)
      if (e.isTensor()) out.push_back(e.toTensor());
  } else if (v.isTensor()) {
    out.push_back(v.toTensor());
  }
  return out;
}

Module makeTracedModule(const Module& module, const std::shared_ptr<Graph>& graph) {
  static std::atomic<int> counter{0};
  const auto& old = module.object()->type;
  auto cls = ClassType::create(old->name(), true);
  for (const auto& a : old->attributes())
    cls->addAttribute(a.name, a.type, a.isParameter, a.isBuffer);
  auto obj = Object::create(cls);
  obj->slots = module.object()->slots;
  graph->inputs()[0]->setType(cls);
  FunctionSchema schema = GraphFunction::schemaFromGraph("forward", *graph);
  auto fn = std::make_unique<GraphFunction>(
      fmt::format("{}.___torchless_trace_{}.forward", old->name(), counter++), graph,
      std::move(schema));
  GraphFunction* f = module.unit()->addFunction(std::move(fn));
  cls->addMethod(f);
  return Module(obj, module.unit());
}

}  // namespace

TracedGraph traceGraph(const Module& module, const std::string& method,
                       std::vector<IValue> inputs) {
  TL_CHECK(module.defined(), "cannot trace an empty module");
  const GraphFunction* fn = module.findMethod(method);
  if (!fn) throw module.noSuchMethod(method);
  initOperatorRegistry();
  initKernels();
  std::unique_ptr<Tracer> tracer = Tracer::create(module.object());
  // `inputs` stay alive until the trace ends, as the example inputs of torch.jit.trace do (the
  // in-place warning counts the tensors that share storage).
  std::vector<IValue> args = tracer->begin(*fn, inputs);
  std::vector<IValue> outputs = runObserved(*fn, std::move(args), *tracer);
  return tracer->finish(outputs);
}

TraceResult trace(const Module& module, std::vector<IValue> inputs, const TraceOptions& options) {
  TracedGraph first = traceGraph(module, options.method, std::move(inputs));
  TraceResult result;
  result.graph = first.graph;
  result.warnings = std::move(first.warnings);
  result.module = makeTracedModule(module, result.graph);
  const std::string tracedText = canonicalGraphText(*result.graph);

  for (size_t c = 0; c < options.checkInputs.size(); ++c) {
    const auto& check = options.checkInputs[c];
    std::string extra, graphDiff;
    const std::string setName = fmt::format("check input set {}", c + 1);
    TracedGraph again;
    try {
      again = traceGraph(module, options.method, cloneValues(check));
    } catch (Error& e) {
      e.addContext(fmt::format("while tracing with {}", setName));
      throw;
    }
    const std::string checkText = canonicalGraphText(*again.graph);
    std::string diff =
        unifiedDiff(tracedText, checkText, "trace of the example inputs", "trace of " + setName);
    if (!diff.empty()) graphDiff = "Graph diff:\n" + indent(diff);

    auto runOrReport = [&](const Module& m, const std::string& methodName, const char* what,
                           std::optional<IValue>& out) {
      try {
        out = m.runMethod(methodName, cloneValues(check));
      } catch (const Error& e) {
        extra = fmt::format(
            "encountered an exception while running the {} with test inputs.\nException:\n{}", what,
            indent(e.what()));
      }
    };
    std::optional<IValue> tracedOut, fnOut;
    runOrReport(result.module, "forward", "trace", tracedOut);
    if (extra.empty()) runOrReport(module, options.method, "Python function", fnOut);
    std::string mismatches;
    if (tracedOut && fnOut) {
      std::vector<Tensor> a = tensorOutputs(*tracedOut), b = tensorOutputs(*fnOut);
      for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        std::string msg = compareTensors(a[i].to(ScalarType::Double), b[i].to(ScalarType::Double),
                                         options.checkRtol, options.checkAtol);
        if (!msg.empty())
          mismatches += fmt::format(
              "Output nr {}. of the traced function does not match the "
              "corresponding output of the Python function. Detailed error:\n{}\n",
              i + 1, msg);
      }
    }
    if (extra.empty() && graphDiff.empty() && mismatches.empty()) continue;
    std::string details = fmt::format("({} of {})\n", setName, options.checkInputs.size());
    if (!extra.empty()) details += extra + "\n";
    details += mismatches;
    if (!graphDiff.empty())
      details += "ERROR: Graphs differed across invocations!\n" + indent(graphDiff) + "\n";
    if (!details.empty() && details.back() == '\n') details.pop_back();
    throw TracingCheckError(details, result.warnings);
  }
  return result;
}

}  // namespace torchless
