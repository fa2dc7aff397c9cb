#include "serialize/python_print.h"

#include "core/error.h"
#include "core/stack_guard.h"
#include "ir/operator_matching.h"
#include "ir/operator_registry.h"

#include <cmath>
#include <set>
#include <sstream>
#include <unordered_map>

namespace torchless {
namespace {

const std::set<std::string>& reservedNames() {
  static const std::set<std::string> names = {"False",
                                              "None",
                                              "True",
                                              "and",
                                              "as",
                                              "assert",
                                              "async",
                                              "await",
                                              "break",
                                              "class",
                                              "continue",
                                              "def",
                                              "del",
                                              "elif",
                                              "else",
                                              "except",
                                              "finally",
                                              "for",
                                              "from",
                                              "global",
                                              "if",
                                              "import",
                                              "in",
                                              "is",
                                              "lambda",
                                              "nonlocal",
                                              "not",
                                              "or",
                                              "pass",
                                              "raise",
                                              "return",
                                              "try",
                                              "while",
                                              "with",
                                              "yield",
                                              "torch",
                                              "ops",
                                              "CONSTANTS",
                                              "annotate",
                                              "unchecked_cast",
                                              "uninitialized",
                                              "fork",
                                              "inf",
                                              "nan",
                                              "print",
                                              "range",
                                              "len",
                                              "int",
                                              "float",
                                              "bool",
                                              "str",
                                              "isinstance",
                                              "getattr",
                                              "list",
                                              "dict",
                                              "tuple",
                                              "math",
                                              "__torch__",
                                              "self",
                                              "Tensor",
                                              "List",
                                              "Dict",
                                              "Tuple",
                                              "Optional",
                                              "Union",
                                              "Any",
                                              "NoneType",
                                              "Device",
                                              "infj",
                                              "nanj",
                                              "awaitable",
                                              "complex",
                                              "min",
                                              "max",
                                              "abs",
                                              "sum",
                                              "enumerate",
                                              "zip"};
  return names;
}

bool isIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// 17 significant digits with a '.' when the result has neither '.' nor an exponent
// (torchscript-archive.md 3.6): 0.10000000000000001, 3., -0., 1e+20, inf.
std::string printFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{:.17g}", d);
  if (s.find_first_of(".e") == std::string::npos) s += ".";
  return s;
}

// Double-quoted with \t \n \" \' \\ escapes and 3-digit octal for other control bytes.
std::string printString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '"': out += "\\\""; break;
      case '\'': out += "\\'"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c < 0x20 || c == 0x7f)
          out += fmt::format("\\{:03o}", c);
        else
          out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

bool isAscii(const std::string& s) {
  for (unsigned char c : s)
    if (c > 0x7f) return false;
  return true;
}

std::string annotation(const TypePtr& t) { return unshapedType(t)->annotationStr(); }

// Operators whose meaning changed with the file-format version (upgraders).
uint64_t versionBump(Symbol kind) {
  const std::string& k = kind.toQualString();
  if (k == "aten::div" || k == "aten::div_") return 4;
  if (k == "aten::full") return 5;
  if (k == "aten::linspace") return 8;
  if (k == "aten::logspace") return 9;
  if (k == "aten::gelu") return 10;
  return 3;
}

class FunctionPrinter {
 public:
  FunctionPrinter(PrintedCode& out, std::function<void(const TypePtr&)> noteType,
                  std::function<void(const GraphFunction&)> noteFunction)
      : out_(out), noteType_(std::move(noteType)), noteFunction_(std::move(noteFunction)) {}

  std::string print(const GraphFunction& fn, int indent) {
    const Graph& g = *fn.graph();
    const auto& args = fn.schema().arguments();
    std::string sig = fmt::format("def {}(", fn.name());
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      const Value* v = g.inputs()[i];
      std::string name =
          i < args.size() && isIdentifier(args[i].name()) ? args[i].name() : freshName(v);
      if (!bind(v, name)) name = bindFresh(v);
      noteType_(v->type());
      std::string param = fmt::format("{}: {}", name, annotation(v->type()));
      if (i < args.size() && args[i].defaultValue())
        param += "=" + literal(*args[i].defaultValue(), v->type());
      sig += (i == 0 ? "" : ",\n" + pad(indent + 2)) + param;
    }
    TL_CHECK(g.outputs().size() == 1,
             "cannot print {}: a TorchScript function returns one value, the graph has {}",
             fn.qualname(), g.outputs().size());
    sig += ") -> " + annotation(g.outputs()[0]->type()) + ":\n";
    std::string body;
    level_ = indent + 1;
    printBlockBody(g.block(), body);
    body += pad(level_) + "return " + expr(g.outputs()[0]) + "\n";
    return pad(indent) + sig + body;
  }

 private:
  static std::string pad(int level) { return std::string(static_cast<size_t>(level) * 2, ' '); }

  bool bind(const Value* v, const std::string& name) {
    if (reservedNames().count(name) && name != "self") return false;
    if (!used_.insert(name).second) return false;
    names_[v] = name;
    return true;
  }
  std::string freshName(const Value* v) {
    std::string base = v->hasDebugName() ? v->debugNameBase() : "";
    for (char& c : base)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
    if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "_";
    return base;
  }
  std::string bindFresh(const Value* v) {
    std::string base = freshName(v);
    if (base != "_" && bind(v, base)) return base;
    for (size_t k = 0;; ++k) {
      std::string name = base == "_" ? fmt::format("_{}", k) : fmt::format("{}{}", base, k);
      if (bind(v, name)) return name;
    }
  }

  std::string constantRef(const IValue& v) {
    out_.constants.push_back(v);
    return fmt::format("CONSTANTS.c{}", out_.constants.size() - 1);
  }

  std::string literal(const IValue& v, const TypePtr& type) {
    switch (v.tag()) {
      case IValue::Tag::None: return "None";
      case IValue::Tag::Bool: return v.toBool() ? "True" : "False";
      case IValue::Tag::Int: return std::to_string(v.toInt());
      case IValue::Tag::Double: return printFloat(v.toDouble());
      case IValue::Tag::String:
        return isAscii(v.toStringRef()) ? printString(v.toStringRef()) : constantRef(v);
      case IValue::Tag::Device: return fmt::format("torch.device(\"{}\")", v.toDevice().str());
      case IValue::Tag::Tensor: return constantRef(v);
      case IValue::Tag::List: {
        const auto& l = *v.toList();
        std::string s = "[";
        for (size_t i = 0; i < l.list.size(); ++i)
          s += (i ? ", " : "") + literal(l.list[i], l.elementType);
        s += "]";
        if (l.list.empty())
          return fmt::format("annotate({}, {})", annotation(ListType::create(l.elementType)), s);
        return s;
      }
      case IValue::Tag::Tuple: {
        const auto& e = v.toTuple()->elements;
        std::string s = "(";
        for (size_t i = 0; i < e.size(); ++i) s += (i ? ", " : "") + literal(e[i], AnyType::get());
        return s + (e.size() == 1 ? ",)" : ")");
      }
      case IValue::Tag::Enum: {
        const auto& e = *v.toEnum();
        noteType_(e.type);
        return e.type->name() + "." + e.name;
      }
      default: (void)type; return constantRef(v);
    }
  }

  std::string expr(const Value* v) {
    if (v->node()->kind() == prim::Constant) {
      auto c = toIValue(v);
      TL_INTERNAL_ASSERT(c.has_value(), "constant without value");
      // A None typed Optional[T] (annotate(Optional[T], None) in the source) keeps its
      // annotation, as PyTorch prints it: `ops.prim.unchecked_unwrap_optional(None)` has no T.
      if (c->isNone())
        return v->type()->kind() == TypeKind::OptionalType
                   ? fmt::format("annotate({}, None)", annotation(v->type()))
                   : "None";
      return literal(*c, v->type());
    }
    auto it = names_.find(v);
    TL_INTERNAL_ASSERT(it != names_.end(), "value %{} printed before it is named", v->debugName());
    return it->second;
  }

  std::string exprList(const std::vector<Value*>& vs, size_t from = 0) {
    std::string s;
    for (size_t i = from; i < vs.size(); ++i) s += (i > from ? ", " : "") + expr(vs[i]);
    return s;
  }

  // `a = e`, `a, b = e1, e2` (parallel assignment), or nothing.
  /// `targetValue`: the value a single target names (an if's output). As PyTorch's printer
  /// (printAssignment), a Union or Optional one is annotated at its first assignment, so that a
  /// branch assigning a member type (`x : Union[List[int], int] = a_list`) reloads with the
  /// if's type instead of a type mismatch between the branches.
  void assignAll(const std::vector<std::string>& targets, const std::vector<Value*>& values,
                 std::string& out, const Value* targetValue = nullptr) {
    if (targets.empty()) return;
    std::string lhs, rhs;
    for (size_t i = 0; i < targets.size(); ++i) {
      lhs += (i ? ", " : "") + targets[i];
      rhs += (i ? ", " : "") + expr(values[i]);
    }
    if (targets.size() == 1 && targetValue &&
        (targetValue->type()->kind() == TypeKind::UnionType ||
         targetValue->type()->kind() == TypeKind::OptionalType) &&
        annotatedUnions_.insert(targetValue).second)
      lhs += " : " + annotation(targetValue->type());
    out += pad(level_) + lhs + " = " + rhs + "\n";
  }

  void printBlockBody(const Block* b, std::string& out) {
    checkStack("code printer: blocks");  // Note [Stack guard]
    size_t before = out.size();
    for (const Node* n : b->nodes()) printNode(n, out);
    (void)before;
  }

  [[noreturn]] void unsupported(const Node* n, const std::string& why) {
    std::string place = n->sourceRange() ? n->sourceRange()->str() : "";
    throw Error(fmt::format("cannot print {} as TorchScript: {}", n->kind().toQualString(), why),
                place);
  }

  // Outputs of a node: one name each; `_` style names for unused ones keep the code valid.
  std::vector<std::string> bindOutputs(const Node* n) {
    std::vector<std::string> names;
    for (const Value* o : n->outputs()) names.push_back(bindFresh(o));
    return names;
  }

  std::string joinNames(const std::vector<std::string>& names) {
    std::string s;
    for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
    return s;
  }

  void statement(const Node* n, const std::string& rhs, std::string& out) {
    if (n->outputs().empty()) {
      out += pad(level_) + rhs + "\n";
      return;
    }
    auto names = bindOutputs(n);
    std::string lhs = joinNames(names);
    if (names.size() > 1) lhs += ",";
    out += pad(level_) + lhs + " = " + rhs + "\n";
  }

  std::string callArgs(const Node* n) {
    const OpInfo* op = matchOperator(n, OperatorRegistry::global());
    const auto& inputs = n->inputs();
    if (!op || op->schema.isVararg()) return exprList(inputs);
    const auto& args = op->schema.arguments();
    auto isDefault = [&](size_t i) {
      if (!args[i].defaultValue() || inputs[i]->node()->kind() != prim::Constant) return false;
      auto c = toIValue(inputs[i]);
      const IValue& d = *args[i].defaultValue();
      if (!c) return false;
      if (c->isNone() || d.isNone()) return c->isNone() && d.isNone();
      if (c->tag() != d.tag() && !(c->isScalar() && d.isScalar())) return false;
      return c->equals(d) && (c->isDouble() == d.isDouble());
    };
    size_t lastPositional = 0;  // one past the last positional argument to print
    for (size_t i = 0; i < args.size(); ++i)
      if (!args[i].kwargOnly() && !isDefault(i)) lastPositional = i + 1;
    std::string s;
    for (size_t i = 0; i < lastPositional; ++i) s += (i ? ", " : "") + expr(inputs[i]);
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i].kwargOnly() || isDefault(i)) continue;
      s += (s.empty() ? "" : ", ") + args[i].name() + "=" + expr(inputs[i]);
    }
    return s;
  }

  std::string opName(Symbol kind) {
    std::string ns(kind.domainString());
    std::string name(kind.toUnqualString());
    if (ns == "aten") return "torch." + name;
    return "ops." + ns + "." + name;
  }

  void printNode(const Node* n, std::string& out) {
    out_.minVersion = std::max(out_.minVersion, versionBump(n->kind()));
    switch (n->kind()) {
      case prim::Constant: return;  // printed inline at each use
      case prim::If: return printIf(n, out);
      case prim::Loop: return printLoop(n, out);
      case prim::GetAttr: {
        const std::string& field = n->s(attr::name);
        std::string e = isIdentifier(field) && !reservedNames().count(field)
                            ? fmt::format("{}.{}", expr(n->input(0)), field)
                            : fmt::format("getattr({}, \"{}\")", expr(n->input(0)), field);
        noteType_(n->output()->type());
        return statement(n, e, out);
      }
      case prim::SetAttr: {
        const std::string& field = n->s(attr::name);
        if (!isIdentifier(field)) unsupported(n, "attribute name is not an identifier");
        out +=
            pad(level_) + fmt::format("{}.{} = {}\n", expr(n->input(0)), field, expr(n->input(1)));
        return;
      }
      case prim::CallMethod: {
        noteType_(n->input(0)->type());
        return statement(
            n,
            fmt::format("({}).{}({})", expr(n->input(0)), n->s(attr::name),
                        exprList(n->inputs(), 1) + (n->inputs().size() > 1 ? ", " : "")),
            out);
      }
      case prim::CallFunction: {
        const auto* ft = n->input(0)->type()->cast<FunctionType>();
        const auto* fn = ft ? dynamic_cast<const GraphFunction*>(ft->function()) : nullptr;
        if (!fn) unsupported(n, "the callee is not a known function");
        noteFunction_(*fn);
        return statement(n, fmt::format("{}({})", fn->qualname(), exprList(n->inputs(), 1)), out);
      }
      case prim::ListConstruct: {
        const auto& lt = n->output()->type()->expect<ListType>();
        std::string items = "[" + exprList(n->inputs()) + "]";
        bool exact = !n->inputs().empty();
        for (const Value* v : n->inputs())
          exact = exact && *unshapedType(v->type()) == *unshapedType(lt.getElementType());
        return statement(
            n,
            exact ? items : fmt::format("annotate({}, {})", annotation(n->output()->type()), items),
            out);
      }
      case prim::TupleConstruct: {
        const auto* tt = n->output()->type()->cast<TupleType>();
        if (tt && tt->isNamed()) {
          noteType_(n->output()->type());
          return statement(n, fmt::format("{}({})", tt->name(), exprList(n->inputs())), out);
        }
        std::string e = "(" + exprList(n->inputs()) + (n->inputs().size() == 1 ? ",)" : ")");
        return statement(n, e, out);
      }
      case prim::TupleUnpack:
      case prim::ListUnpack: {
        auto names = bindOutputs(n);
        if (names.empty()) return;
        out += pad(level_) + joinNames(names) + ", = " + expr(n->input(0)) + "\n";
        return;
      }
      case prim::TupleIndex:
        return statement(n, fmt::format("{}[{}]", expr(n->input(0)), expr(n->input(1))), out);
      case prim::DictConstruct: {
        std::string items = "{";
        for (size_t i = 0; i + 1 < n->inputs().size(); i += 2)
          items += (i ? ", " : "") + expr(n->input(i)) + ": " + expr(n->input(i + 1));
        items += "}";
        return statement(n, fmt::format("annotate({}, {})", annotation(n->output()->type()), items),
                         out);
      }
      case prim::RaiseException:
        out += pad(level_) + fmt::format("ops.prim.RaiseException({})\n", exprList(n->inputs()));
        return;
      case prim::Print:
        out += pad(level_) + fmt::format("print({})\n", exprList(n->inputs()));
        return;
      case prim::unchecked_cast:
        return statement(n,
                         fmt::format("unchecked_cast({}, {})", annotation(n->output()->type()),
                                     expr(n->input(0))),
                         out);
      case prim::Uninitialized:
        return statement(n, fmt::format("uninitialized({})", annotation(n->output()->type())), out);
      case prim::EnumValue:
      case prim::EnumName:
        // `(m).value`, as PyTorch prints it: reloaded, it is typed by the enum's values
        // (`ops.prim.EnumValue(m)` would pick the first overload, float).
        return statement(n,
                         fmt::format("({}).{}", expr(n->input(0)),
                                     n->kind() == prim::EnumValue ? "value" : "name"),
                         out);
      case prim::tolist:  // the dimension and element type come back from the annotation
        return statement(n,
                         fmt::format("annotate({}, {}.tolist())", annotation(n->output()->type()),
                                     expr(n->input(0))),
                         out);
      case prim::CreateObject: {
        const auto& name = n->output()->type()->str();
        noteType_(n->output()->type());
        return statement(n, fmt::format("{}.__new__({})", name, name), out);
      }
      case prim::isinstance: {
        const auto& types = n->tys(attr::types);
        std::string t;
        for (size_t i = 0; i < types.size(); ++i) t += (i ? ", " : "") + annotation(types[i]);
        if (types.size() != 1) t = "(" + t + ")";
        return statement(n, fmt::format("isinstance({}, {})", expr(n->input(0)), t), out);
      }
      case prim::Enter:
      case prim::Exit:
      case prim::fork: unsupported(n, "with-statements and fork are not printed yet");
      default: break;
    }
    if (!n->blocks().empty()) unsupported(n, "nodes with blocks other than if and loop");
    if (n->kind().is_aten()) {
      const std::string name(n->kind().toUnqualString());
      if (name == "__getitem__" && n->inputs().size() == 2 &&
          !n->input(0)->type()->cast<TensorType>())
        return statement(n, fmt::format("{}[{}]", expr(n->input(0)), expr(n->input(1))), out);
    }
    statement(n, fmt::format("{}({})", opName(n->kind()), callArgs(n)), out);
  }

  void printBranch(const Block* b, const std::vector<std::string>& targets, std::string& out) {
    const size_t start = out.size();
    printBlockBody(b, out);
    const Node* ifNode = b->owningNode();
    assignAll(targets, b->outputs(), out,
              targets.size() == 1 && ifNode ? ifNode->output(0) : nullptr);
    if (out.size() == start) out += pad(level_) + "pass\n";
  }

  void printIf(const Node* n, std::string& out) {
    auto targets = bindOutputs(n);
    out += pad(level_) + "if " + expr(n->input(0)) + ":\n";
    ++level_;
    printBranch(n->blocks()[0], targets, out);
    --level_;
    out += pad(level_) + "else:\n";
    ++level_;
    printBranch(n->blocks()[1], targets, out);
    --level_;
  }

  static bool isConstantTrue(const Value* v) {
    auto c = toIValue(v);
    return c && c->isBool() && c->toBool();
  }

  void printLoop(const Node* n, std::string& out) {
    const Block* body = n->blocks()[0];
    const size_t carried = n->outputs().size();
    // One variable per carried slot, shared by the initial value, the body input and the
    // loop's output.
    std::vector<std::string> vars;
    for (size_t k = 0; k < carried; ++k) {
      const Value* output = n->outputs()[k];
      std::string name = bindFresh(output);
      names_[body->inputs()[k + 1]] = name;
      vars.push_back(name);
      const Value* init = n->input(2 + k);
      const bool sameType = *unshapedType(init->type()) == *unshapedType(output->type());
      out += pad(level_) + (sameType ? fmt::format("{} = {}\n", name, expr(init))
                                     : fmt::format("{} : {} = {}\n", name,
                                                   annotation(output->type()), expr(init)));
    }
    const Value* counter = body->inputs()[0];
    const bool forLoop = isConstantTrue(n->input(1)) && isConstantTrue(body->outputs()[0]);
    if (forLoop) {
      std::string i = bindFresh(counter);
      out += pad(level_) + fmt::format("for {} in range({}):\n", i, expr(n->input(0)));
      ++level_;
      const size_t start = out.size();
      printBlockBody(body, out);
      std::vector<Value*> outs(body->outputs().begin() + 1, body->outputs().end());
      assignAll(vars, outs, out);
      if (out.size() == start) out += pad(level_) + "pass\n";
      --level_;
      return;
    }
    auto maxTrip = toIValue(n->input(0));
    const bool unbounded = maxTrip && maxTrip->isInt() && maxTrip->toInt() == INT64_MAX;
    std::string cond = "_cond";
    for (size_t k = 0;; ++k) {
      cond = fmt::format("_cond{}", k);
      if (used_.insert(cond).second) break;
    }
    out += pad(level_) + fmt::format("{} = {}\n", cond, expr(n->input(1)));
    std::string i = bindFresh(counter);
    out += pad(level_) + fmt::format("{} = 0\n", i);
    if (unbounded)
      out += pad(level_) + fmt::format("while {}:\n", cond);
    else
      out += pad(level_) + fmt::format("while torch.__and__(torch.lt({}, {}), {}):\n", i,
                                       expr(n->input(0)), cond);
    ++level_;
    printBlockBody(body, out);
    std::vector<std::string> targets = {cond};
    targets.insert(targets.end(), vars.begin(), vars.end());
    assignAll(targets, body->outputs(), out);
    out += pad(level_) + fmt::format("{} = torch.add({}, 1)\n", i, i);
    --level_;
  }

  PrintedCode& out_;
  std::function<void(const TypePtr&)> noteType_;
  std::function<void(const GraphFunction&)> noteFunction_;
  std::unordered_map<const Value*, std::string> names_;
  std::set<std::string> used_;
  std::set<const Value*> annotatedUnions_;  // assignAll's annotated if outputs
  int level_ = 0;
};

}  // namespace

std::string PythonPrinter::qualifierOf(const std::string& qualname) const {
  auto dot = qualname.rfind('.');
  return dot == std::string::npos ? "__torch__" : qualname.substr(0, dot);
}

void PythonPrinter::noteType(const TypePtr& t) {
  if (!t) return;
  if (const auto* c = t->cast<ClassType>()) {
    addClass(t->castPtr<ClassType>());
    (void)c;
    return;
  }
  if (const auto* e = t->cast<EnumType>()) {
    // `class Color(Enum):` with one `NAME = value` line per member, as PyTorch prints enums.
    if (!seen_.count(e->name())) {
      seen_[e->name()] = true;
      std::string s = fmt::format("class {}(Enum):\n", e->name().substr(e->name().rfind('.') + 1));
      for (size_t i = 0; i < e->names().size(); ++i) {
        const IValue& v = *e->values()[i];
        std::string text =
            v.isInt()      ? std::to_string(v.toInt())
            : v.isDouble() ? printFloat(v.toDouble())
            : v.isString()
                ? printString(v.toStringRef())
                : throw Error(fmt::format("enum {} member {} has a value of type {}, which "
                                          "an archive cannot hold",
                                          e->name(), e->names()[i], v.type()->str()));
        s += fmt::format("  {} = {}\n", e->names()[i], text);
      }
      out_.sources[qualifierOf(e->name())] += s;
    }
    return;
  }
  if (const auto* it = t->cast<InterfaceType>()) {
    // `class I(Interface):` / `(ModuleInterface)` with each method's signature and `pass`, as
    // PyTorch prints interfaces. The classes implementing it are printed from the objects
    // that hold them (save() adds them).
    if (!seen_.count(it->name())) {
      seen_[it->name()] = true;
      std::string s = fmt::format("class {}({}):\n", it->name().substr(it->name().rfind('.') + 1),
                                  it->isModule() ? "ModuleInterface" : "Interface");
      for (const auto& [name, schema] : it->methods) {
        std::string sig = fmt::format("  def {}(", name);
        const auto& args = schema->arguments();
        for (size_t i = 0; i < args.size(); ++i) {
          noteType(args[i].type());
          sig += i == 0 ? std::string("self")
                        : fmt::format(", {}: {}", args[i].name(), annotation(args[i].type()));
        }
        std::string ret;
        if (schema->returns().size() == 1) {
          noteType(schema->returns()[0].type());
          ret = annotation(schema->returns()[0].type());
        } else {
          ret = "Tuple[";
          for (size_t i = 0; i < schema->returns().size(); ++i) {
            noteType(schema->returns()[i].type());
            ret += (i ? ", " : "") + annotation(schema->returns()[i].type());
          }
          ret += "]";
        }
        s += sig + ") -> " + ret + ":\n    pass\n";
      }
      if (it->methods.empty()) s += "  pass\n";
      out_.sources[qualifierOf(it->name())] += s;
    }
    return;
  }
  if (const auto* tt = t->cast<TupleType>()) {
    if (tt->isNamed() && !seen_.count(tt->name())) {
      seen_[tt->name()] = true;
      std::string s =
          fmt::format("class {}(NamedTuple):\n", tt->name().substr(tt->name().rfind('.') + 1));
      for (size_t i = 0; i < tt->elements().size(); ++i)
        s += fmt::format("  {} : {}\n", tt->fieldNames()[i], annotation(tt->elements()[i]));
      out_.sources[qualifierOf(tt->name())] += s;
    }
  }
  for (const auto& sub : t->containedTypes()) noteType(sub);
}

void PythonPrinter::addClass(const std::shared_ptr<const ClassType>& cls) {
  if (seen_.count(cls->name())) return;
  seen_[cls->name()] = true;
  // TorchBind classes (`__torch__.torch.classes.*`) are C++ classes in PyTorch: torch.jit.load
  // resolves them itself and an archive carries no code for them.
  if (cls->name().rfind("__torch__.torch.classes.", 0) == 0) return;
  classes_.push_back(cls);
  for (const auto& a : cls->attributes()) noteType(a.type);
}

void PythonPrinter::addFunction(const GraphFunction& fn) {
  if (seen_.count(fn.qualname())) return;
  seen_[fn.qualname()] = true;
  functions_.push_back(&fn);
}

std::string PythonPrinter::printFunction(const GraphFunction& fn, int indent) {
  FunctionPrinter p(
      out_, [this](const TypePtr& t) { noteType(t); },
      [this](const GraphFunction& f) { addFunction(f); });
  return p.print(fn, indent);
}

std::string PythonPrinter::printClass(const ClassType& cls) {
  const std::string shortName = cls.name().substr(cls.name().rfind('.') + 1);
  std::string s = fmt::format("class {}{}:\n", shortName, cls.isModule() ? "(Module)" : "");
  std::string params, buffers;
  for (const auto& a : cls.attributes()) {
    if (a.isParameter) params += fmt::format("\"{}\", ", a.name);
    if (a.isBuffer) buffers += fmt::format("\"{}\", ", a.name);
  }
  if (cls.isModule()) {
    s += fmt::format("  __parameters__ = [{}]\n",
                     params.empty() ? "" : params.substr(0, params.size() - 1) + " ");
    s += fmt::format("  __buffers__ = [{}]\n",
                     buffers.empty() ? "" : buffers.substr(0, buffers.size() - 1) + " ");
  }
  for (const auto& a : cls.attributes()) {
    if (isIdentifier(a.name))
      s += fmt::format("  {} : {}\n", a.name, annotation(a.type));
    else
      s += fmt::format("  __annotations__[\"{}\"] = {}\n", a.name, annotation(a.type));
  }
  for (Function* f : cls.methods()) {
    const auto* gf = dynamic_cast<const GraphFunction*>(f);
    if (!gf)
      throw Error(fmt::format("method {} of {} has no graph to print", f->name(), cls.name()));
    s += printFunction(*gf, 1);
  }
  if (cls.attributes().empty() && cls.methods().empty()) s += "  pass\n";
  return s;
}

PrintedCode PythonPrinter::finish() {
  // Printing a class can reach more classes and functions: loop until nothing new appears.
  size_t classesDone = 0, functionsDone = 0;
  while (classesDone < classes_.size() || functionsDone < functions_.size()) {
    if (classesDone < classes_.size()) {
      auto cls = classes_[classesDone++];
      out_.sources[qualifierOf(cls->name())] += printClass(*cls);
    } else {
      const GraphFunction* fn = functions_[functionsDone++];
      out_.sources[qualifierOf(fn->qualname())] += printFunction(*fn, 0);
    }
  }
  return out_;
}

}  // namespace torchless
