// The interpreter oracle: runs every graph gen_graph_cases.py wrote (PyTorch's printed graph,
// inputs and outputs as .npy and manifest.json) through parseIR + Code and compares with
// PyTorch's outputs at the case's tolerance. The files live in the build dir
// (runtime_graph_cases/, written by the runtime_gen_graph_cases ctest fixture); without them
// the test skips. TORCHLESS_GRAPH_CASES=substring runs only matching cases.
//
// The same test runs the kernel cases (gen_kernel_cases.py) and the ops oracle
// (gen_op_cases.py), whose cases are keyed by schema: a case's "schemas" are what PyTorch's
// nodes called, and each of our nodes must match the same op-table entry before it runs (so
// the kernel registry's binding is tested with the kernel); a case with "error" must throw.

#include "core/npy.h"
#include "ir/ir_parser.h"
#include "ir/operator_registry.h"
#include "ops/shape.h"
#include "runtime/interpreter.h"
#include "runtime/kernel.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace torchless {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// TORCHLESS_GRAPH_CASES_DIR points at another generator's cases (runtime_kernel_oracle).
fs::path casesDir() {
  if (const char* d = std::getenv("TORCHLESS_GRAPH_CASES_DIR")) return fs::path(d);
  return fs::path(TORCHLESS_BINARY_DIR) / "runtime_graph_cases";
}

double jsonFloat(const json& v) {
  if (v.is_string()) return std::stod(v.get<std::string>());
  return v.get<double>();
}

// A tensor of the manifest: its .npy file, in its "dtype" when .npy cannot hold it (bfloat16).
Tensor loadTensor(const json& v, const fs::path& dir) {
  Tensor t = loadNpy((dir / v.at("file").get<std::string>()).string());
  if (v.contains("dtype")) {
    auto dtype = scalarTypeFromDtypeName(v.at("dtype").get<std::string>());
    if (!dtype) throw Error("unknown dtype " + v.at("dtype").dump());
    t = t.to(*dtype);
  }
  return t;
}

// The input value `v` as an IValue of graph input type `type`.
IValue toInput(const json& v, const TypePtr& type, const fs::path& dir) {
  const std::string t = v.at("t");
  if (t == "tensor") {
    Tensor x = loadTensor(v, dir);
    const std::string view =
        v.contains("view") && !v.at("view").is_null() ? v.at("view").get<std::string>() : "";
    if (view == "T")
      x = ops::transpose(x, -1, -2);  // the generator's views of its saved base
    else if (view == "S")
      x = ops::slice(x, -1, std::nullopt, std::nullopt, 2);
    return IValue(x);
  }
  if (t == "none") return IValue();
  if (t == "bool") return IValue(v.at("v").get<bool>());
  if (t == "int") return IValue(v.at("v").get<int64_t>());
  if (t == "float") return IValue(jsonFloat(v.at("v")));
  if (t == "str") return IValue(v.at("v").get<std::string>());
  TypePtr inner = type;
  if (const auto* o = type->cast<OptionalType>()) inner = o->getElementType();
  if (t == "list") {
    const auto* lt = inner->cast<ListType>();
    TypePtr elem = lt ? lt->getElementType() : AnyType::get();
    std::vector<IValue> values;
    for (const auto& e : v.at("v")) values.push_back(toInput(e, elem, dir));
    return IValue(ListImpl::create(elem, std::move(values)));
  }
  if (t == "tuple") {
    const auto* tt = inner->cast<TupleType>();
    std::vector<IValue> values;
    size_t i = 0;
    for (const auto& e : v.at("v"))
      values.push_back(toInput(e, tt ? tt->elements().at(i++) : AnyType::get(), dir));
    return IValue(TupleImpl::create(std::move(values)));
  }
  throw Error("unsupported input kind " + t);
}

// Compares `actual` with the expected value; appends mismatches to `errors`.
void compare(const IValue& actual, const json& expected, const fs::path& dir, double rtol,
             double atol, const std::string& where, std::vector<std::string>& errors) {
  const std::string t = expected.at("t");
  auto fail = [&](const std::string& what) { errors.push_back(where + ": " + what); };
  if (t == "tensor") {
    if (!actual.isTensor()) return fail(fmt::format("expected a Tensor, got {}", actual.tagName()));
    Tensor want = loadTensor(expected, dir);
    Tensor got = actual.toTensor();
    if (got.sizes() != want.sizes())
      return fail(fmt::format("shape {} != expected {}", sizesToString(got.sizes()),
                              sizesToString(want.sizes())));
    if (got.dtype() != want.dtype())
      return fail(
          fmt::format("dtype {} != expected {}", dtypeName(got.dtype()), dtypeName(want.dtype())));
    Tensor g = got.contiguous();
    double worst = 0;
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < want.numel(); ++i) {
      const double a = g.doubleAt(i), b = want.doubleAt(i);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (a == b) continue;
      const double err = std::fabs(a - b);
      if (!(err <= atol + rtol * std::fabs(b))) {
        if (first < 0) first = i;
        ++bad;
        worst = std::max(worst, std::isnan(err) ? INFINITY : err);
      }
    }
    if (bad)
      fail(fmt::format("{} of {} elements differ (max abs err {:.3g}; first at {}: {} vs {})", bad,
                       want.numel(), worst, first, g.doubleAt(first), want.doubleAt(first)));
    return;
  }
  if (t == "none") {
    if (!actual.isNone()) fail(fmt::format("expected None, got {}", actual.repr()));
    return;
  }
  if (t == "bool") {
    if (!actual.isBool() || actual.toBool() != expected.at("v").get<bool>())
      fail(fmt::format("expected {}, got {}", expected.at("v").dump(), actual.repr()));
    return;
  }
  if (t == "int") {
    if (!actual.isInt() || actual.toInt() != expected.at("v").get<int64_t>())
      fail(fmt::format("expected {}, got {}", expected.at("v").dump(), actual.repr()));
    return;
  }
  if (t == "float") {
    const double want = jsonFloat(expected.at("v"));
    if (!actual.isDouble())
      return fail(fmt::format("expected float {}, got {}", want, actual.repr()));
    const double got = actual.toDouble();
    if (std::isnan(want) && std::isnan(got)) return;
    if (!(std::fabs(got - want) <= atol + rtol * std::fabs(want)) && got != want)
      fail(fmt::format("expected {}, got {}", want, got));
    return;
  }
  if (t == "str") {
    if (!actual.isString() || actual.toStringRef() != expected.at("v").get<std::string>())
      fail(fmt::format("expected {}, got {}", expected.at("v").dump(), actual.repr()));
    return;
  }
  if (t == "complex") {
    if (!actual.isComplexDouble()) return fail("expected complex, got " + actual.repr());
    return;
  }
  if (t == "device") {
    if (!actual.isDevice() ||
        actual.repr().find(expected.at("v").get<std::string>()) == std::string::npos)
      fail(fmt::format("expected device {}, got {}", expected.at("v").dump(), actual.repr()));
    return;
  }
  if (t == "list" || t == "tuple") {
    std::vector<IValue> elems;
    if (actual.isList())
      elems = actual.toList()->list;
    else if (actual.isTuple())
      elems = actual.toTuple()->elements;
    else
      return fail(fmt::format("expected a {}, got {}", t, actual.tagName()));
    const auto& want = expected.at("v");
    if (elems.size() != want.size())
      return fail(fmt::format("{} of {} elements, expected {}", t, elems.size(), want.size()));
    for (size_t i = 0; i < elems.size(); ++i)
      compare(elems[i], want[i], dir, rtol, atol, fmt::format("{}[{}]", where, i), errors);
    return;
  }
  if (t == "dict") {
    if (!actual.isDict()) return fail(fmt::format("expected a dict, got {}", actual.tagName()));
    const auto& entries = actual.toDict()->entries();
    const auto& want = expected.at("v");
    if (entries.size() != want.size())
      return fail(fmt::format("dict of {} entries, expected {}", entries.size(), want.size()));
    for (size_t i = 0; i < entries.size(); ++i) {
      compare(entries[i].first, want[i][0], dir, rtol, atol, fmt::format("{}.key[{}]", where, i),
              errors);
      compare(entries[i].second, want[i][1], dir, rtol, atol, fmt::format("{}[{}]", where, i),
              errors);
    }
    return;
  }
  fail("unknown expected kind " + t);
}

/// "aten::add.Tensor" of "aten::add.Tensor(Tensor self, ...) -> Tensor".
std::string schemaName(const std::string& schema) { return schema.substr(0, schema.find('(')); }

// "" or why an operator node of `g` does not match the op-table entry of the schema PyTorch's
// node called (`schemas`, in node order).
std::string checkSchemas(const Graph& g, const json& schemas) {
  size_t k = 0;
  for (const Node* n : g.nodes()) {
    if (n->kind().is_prim()) continue;
    if (k >= schemas.size())
      return fmt::format("more operator nodes than the {} schemas PyTorch called", schemas.size());
    const std::string want = schemaName(schemas[k++].get<std::string>());
    const OpInfo* op = n->maybeOperator();
    if (!op)
      return fmt::format("{}: no op-table entry matches the node; PyTorch called {}", n->kind(),
                         want);
    if (schemaName(op->key) != want)
      return fmt::format("the node matched {}; PyTorch called {}", op->key, want);
  }
  return "";
}

// Runs one case; returns the mismatches (empty = pass).
std::vector<std::string> runCase(const json& c, const fs::path& dir) {
  std::vector<std::string> errors;
  std::ifstream in(dir / c.at("graph").get<std::string>());
  std::stringstream text;
  text << in.rdbuf();
  auto graph = std::make_shared<Graph>();
  parseIR(text.str(), graph.get());
  if (c.contains("schemas") && !c.at("schemas").empty()) {
    const std::string mismatch = checkSchemas(*graph, c.at("schemas"));
    if (!mismatch.empty()) return {mismatch};
  }
  const bool expectError =
      c.contains("error");  // PyTorch raised: so must we (an Error, not a crash)
  std::unique_ptr<Code> compiled;
  try {
    compiled = std::make_unique<Code>(graph, c.at("name").get<std::string>());
  } catch (const Error&) {
    if (expectError) return {};
    throw;
  }
  const Code& code = *compiled;
  Stack stack;
  const auto& inputs = c.at("inputs");
  const auto& gin = graph->inputs();
  if (gin.size() != inputs.size())
    return {fmt::format("graph has {} inputs, manifest {}", gin.size(), inputs.size())};
  for (size_t i = 0; i < inputs.size(); ++i)
    stack.push_back(toInput(inputs[i], gin[i]->type(), dir));
  if (expectError) {
    try {
      code.run(stack);
    } catch (const Error&) {
      return {};
    }
    return {fmt::format("PyTorch raised \"{}\", we did not", c.at("error").get<std::string>())};
  }
  code.run(stack);
  const auto& outputs = c.at("outputs");
  if (stack.size() != outputs.size())
    return {fmt::format("{} outputs, expected {}", stack.size(), outputs.size())};
  const double rtol = c.at("rtol"), atol = c.at("atol");
  for (size_t i = 0; i < outputs.size(); ++i)
    compare(stack[i], outputs[i], dir, rtol, atol, fmt::format("output {}", i), errors);
  return errors;
}

TEST(GraphOracle, AllCases) {
  initKernels();
  const fs::path dir = casesDir();
  if (!fs::exists(dir / "manifest.json"))
    GTEST_SKIP() << "no cases in " << dir << " (run the runtime_gen_graph_cases ctest)";
  json manifest;
  std::ifstream(dir / "manifest.json") >> manifest;
  const char* only = std::getenv("TORCHLESS_GRAPH_CASES");
  size_t passed = 0, total = 0;
  for (const auto& c : manifest.at("cases")) {
    const std::string name = c.at("name");
    if (only && name.find(only) == std::string::npos) continue;
    ++total;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::string> errors;
    try {
      errors = runCase(c, dir);
    } catch (const std::exception& e) {
      errors.push_back(e.what());
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (errors.empty()) {
      ++passed;
      std::cout << fmt::format("[ case ] {:<36} ok ({:.0f} ms)", name, ms) << std::endl;
    } else {
      std::string all;
      for (size_t i = 0; i < errors.size() && i < 8; ++i) all += "\n    " + errors[i];
      ADD_FAILURE() << name << ":" << all;
      std::cout << fmt::format("[ case ] {:<36} FAILED", name) << std::endl;
    }
  }
  std::cout << passed << " of " << total << " graph cases match PyTorch" << std::endl;
}

}  // namespace
}  // namespace torchless
