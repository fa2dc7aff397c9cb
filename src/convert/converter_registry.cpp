// Backend-neutral parts of the conversion layer: places of nodes, Args' error messages and
// unwrapping helpers, the pre-flight. The registry itself is a template (converter_registry.h).
#include "convert/converter_registry.h"

#include "convert/conversion_ctx.h"
#include "convert/preflight.h"
#include "ir/operator_matching.h"

#include <algorithm>

namespace torchless::convert {

std::string nodePlace(const Node& n) {
  if (n.sourceRange() && !n.sourceRange()->filename.empty()) return n.sourceRange()->str();
  std::string scope = n.scopeName();
  if (!scope.empty()) return scope;
  // Position in the top block, for graphs without locations (parsed IR, traced graphs).
  size_t index = 0;
  const Block* b = n.owningBlock();
  if (b)
    for (const Node* m : b->nodes()) {
      if (m == &n) break;
      ++index;
    }
  return fmt::format("graph node #{} ({})", index, n.kind().toQualString());
}

std::string nodeNameHint(const Node& n) {
  std::string scope = n.scopeName();
  if (!scope.empty()) {
    // "__module.layer1/__module.layer1.0.conv1" -> "layer1.0.conv1"
    auto slash = scope.rfind('/');
    std::string last = slash == std::string::npos ? scope : scope.substr(slash + 1);
    if (last.rfind("__module.", 0) == 0) last = last.substr(9);
    if (last == "__module") last.clear();
    if (!last.empty()) return last;
  }
  if (n.sourceRange() && !n.sourceRange()->filename.empty()) {
    std::string f = n.sourceRange()->filename;
    auto slash = f.rfind('/');
    if (slash != std::string::npos) f = f.substr(slash + 1);
    return fmt::format("{}:{}", f, n.sourceRange()->line);
  }
  return {};
}

namespace detail {

void throwArgError(const Node& node, const OpInfo* op, size_t index, const std::string& what,
                   const std::string& got) {
  std::string who = op ? op->key : node.kind().toQualString();
  std::string arg;
  if (op && index < op->schema.arguments().size())
    arg = fmt::format("argument '{}' ({})", op->schema.arguments()[index].name(), index);
  else
    arg = fmt::format("input {}", index);
  throw Error(fmt::format("{}: {} must be {}, got {}", who, arg, what, got), nodePlace(node));
}

std::string describeIValue(const IValue& v) {
  if (v.isTensor()) {
    const Tensor t = v.toTensor();
    return fmt::format("a constant Tensor of {} [{}]", dtypeName(t.dtype()),
                       fmt::join(t.sizes(), ", "));
  }
  if (v.isNone()) return "None";
  return fmt::format("{} {}", v.tagName(), v.repr());
}

std::optional<IValue> asScalar(const IValue& v) {
  if (v.isInt() || v.isDouble() || v.isBool() || v.isComplexDouble()) return v;
  if (v.isTensor()) {
    const Tensor t = v.toTensor();
    if (t.numel() != 1 || isComplexType(t.dtype())) return std::nullopt;
    return itemIValue(t);
  }
  return std::nullopt;
}

std::optional<std::vector<int64_t>> asIntList(const IValue& v) {
  if (v.isInt()) return std::vector<int64_t>{v.toInt()};
  if (v.isList()) {
    std::vector<int64_t> out;
    for (const auto& e : v.toList()->list) {
      if (!e.isInt()) return std::nullopt;
      out.push_back(e.toInt());
    }
    return out;
  }
  if (v.isTuple()) {
    std::vector<int64_t> out;
    for (const auto& e : v.toTuple()->elements) {
      if (!e.isInt()) return std::nullopt;
      out.push_back(e.toInt());
    }
    return out;
  }
  if (v.isTensor()) {
    const Tensor t = v.toTensor();
    if (t.dim() != 1 || !isIntegralType(t.dtype(), false)) return std::nullopt;
    std::vector<int64_t> out;
    for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.intAt(i));
    return out;
  }
  return std::nullopt;
}

}  // namespace detail

// ---- pre-flight -------------------------------------------------------------------------------

std::string UnsupportedOp::str() const {
  return fmt::format("unsupported operator {}{}", op, place.empty() ? "" : " used at " + place);
}

namespace {
void collect(const Block* b, const SupportPredicate& supported, std::vector<UnsupportedOp>& out) {
  for (const Node* n : b->nodes()) {
    const OpInfo* op = matchOperator(n, OperatorRegistry::global());
    if (!supported(*n, op)) {
      std::string what =
          op ? op->key : fmt::format("{} (no schema matches its inputs)", n->kind().toQualString());
      out.push_back({what, nodePlace(*n)});
    }
    for (const Block* sub : n->blocks()) collect(sub, supported, out);
  }
}
}  // namespace

std::vector<UnsupportedOp> findUnsupported(const Graph& graph, const SupportPredicate& supported) {
  std::vector<UnsupportedOp> out;
  collect(graph.block(), supported, out);
  return out;
}

void checkSupported(const Graph& graph, const std::string& what,
                    const SupportPredicate& supported) {
  auto missing = findUnsupported(graph, supported);
  if (missing.empty()) return;
  std::string details;
  for (const auto& m : missing) details += "  " + m.str() + "\n";
  details.pop_back();
  // cli.md's first line: "unsupported operator aten::foo(...) used at PLACE".
  std::string first = missing.front().str();
  if (missing.size() > 1)
    first += fmt::format(" (and {} more for {}, listed below)", missing.size() - 1, what);
  else
    first += fmt::format(" (for {})", what);
  throw UnsupportedError(first, "", details);
}

}  // namespace torchless::convert
