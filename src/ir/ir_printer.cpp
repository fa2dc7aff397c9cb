// PyTorch's graph text format (torch/csrc/jit/ir/ir.cpp: Node::print, Graph::print,
// printAttributes; c10 IValue::repr; at::print for small tensor constants). Note [IR text]
//
//   graph(%x.1 : Tensor,
//         %n.1 : int):
//     %5 : int = prim::Constant[value=1]()
//     %y : Tensor = prim::Loop(%n.1, %6, %x.1) # /tmp/t.py:6:4
//       block0(%i.1 : int, %y.27 : Tensor):
//         %y.3 : Tensor = aten::add(%y.27, %5, %5) # /tmp/t.py:8:16
//         -> (%6, %y.3)
//      = prim::Print(%y)
//     return (%y)
//
// A node line is `<outputs with types> = <kind>[<attributes>](<inputs>)` plus
// `# file:line:col` when the node has a source location with a file name; nodes without
// outputs print an empty left side (" = prim::Print(...)"). The parser (ir_parser.cpp) reads
// exactly this, and ir_printer.h's helpers are shared with it.
#include "ir/ir_printer.h"

#include "core/error.h"
#include "core/stack_guard.h"
#include "ir/ir.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <ostream>
#include <sstream>

namespace torchless {

// ---- scalars ----------------------------------------------------------------------------------

std::string formatIRDouble(double d) {
  // c10's IValue::repr: integral values below 1e10 print as `1.` / `-0.`; the rest with
  // max_digits10 (17) significant digits in the default float format.
  int c = std::fpclassify(d);
  if ((c == FP_NORMAL || c == FP_ZERO) && std::abs(d) < 1e10) {
    auto i = static_cast<int64_t>(d);
    if (static_cast<double>(i) == d) {
      if (i == 0 && std::signbit(d)) return "-0.";
      return std::to_string(i) + ".";
    }
  }
  std::ostringstream ss;
  ss << std::setprecision(17) << d;
  return ss.str();
}

std::string quoteIRString(std::string_view s) {
  // c10::printQuotedString, including its octal escape of non-printable (and non-ASCII)
  // bytes, which works on signed chars: é (0xC3 0xA9) prints as "\0)+\/.)". The parser
  // inverts it.
  std::string out = "\"";
  for (char ch : s) {
    switch (ch) {
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '"': out += "\\\""; break;
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\v': out += "\\v"; break;
      default:
        if (ch > 0x1f && ch < 0x7f) {
          out += ch;
        } else {
          int v = static_cast<signed char>(ch);
          char buf[4] = "000";
          buf[2] = static_cast<char>(buf[2] + v % 8);
          v /= 8;
          buf[1] = static_cast<char>(buf[1] + v % 8);
          v /= 8;
          buf[0] = static_cast<char>(buf[0] + v);
          out += '\\';
          out += buf;
        }
    }
  }
  out += '"';
  return out;
}

// ---- tensors ----------------------------------------------------------------------------------

namespace {

/// at::print's choice of number format for a set of values: returns (scale, width) and sets
/// the stream's flags (aten/src/ATen/core/Formatting.cpp, __printFormat).
std::pair<double, int64_t> printFormat(std::ostream& stream, const std::vector<double>& v) {
  if (v.empty()) return {1., 0};
  bool intMode = true;
  for (double z : v) {
    if (std::isfinite(z) && z != std::ceil(z)) {
      intMode = false;
      break;
    }
  }
  size_t offset = 0;
  while (offset < v.size() && !std::isfinite(v[offset])) ++offset;
  double expMin = 1, expMax = 1;
  if (offset != v.size()) {
    expMin = std::fabs(v[offset]);
    expMax = std::fabs(v[offset]);
    for (size_t i = offset; i < v.size(); ++i) {
      double z = std::fabs(v[i]);
      if (std::isfinite(z)) {
        if (z < expMin) expMin = z;
        if (v[i] > expMax) expMax = z;  // sic: PyTorch compares the signed value
      }
    }
    expMin = expMin != 0 ? std::floor(std::log10(expMin)) + 1 : 1;
    expMax = expMax != 0 ? std::floor(std::log10(expMax)) + 1 : 1;
  }
  double scale = 1;
  int64_t sz = 11;
  if (intMode) {
    if (expMax > 9) {
      sz = 11;
      stream << std::scientific << std::setprecision(4);
    } else {
      sz = static_cast<int64_t>(expMax) + 1;
      stream << std::defaultfloat;
    }
  } else {
    if (expMax - expMin > 4) {
      sz = 11;
      if (std::fabs(expMax) > 99 || std::fabs(expMin) > 99) sz = sz + 1;
      stream << std::scientific << std::setprecision(4);
    } else {
      if (expMax > 5 || expMax < 0) {
        sz = 7;
        scale = std::pow(10, expMax - 1);
        stream << std::fixed << std::setprecision(4);
      } else {
        sz = expMax == 0 ? 7 : static_cast<int64_t>(expMax) + 6;
        stream << std::fixed << std::setprecision(4);
      }
    }
  }
  return {scale, sz};
}

void printScale(std::ostream& stream, double scale) {
  // PyTorch guards the stream's format here: the numbers after it keep theirs.
  std::ios_base::fmtflags flags = stream.flags();
  std::streamsize precision = stream.precision();
  stream << std::defaultfloat << scale << " *\n";
  stream.flags(flags);
  stream.precision(precision);
}

void printIndent(std::ostream& stream, int64_t indent) {
  for (int64_t i = 0; i < indent; ++i) stream << " ";
}

/// __printMatrix: rows x cols values (row-major), wrapped in column groups of linesize.
void printMatrix(std::ostream& stream, const std::vector<double>& v, int64_t rows, int64_t cols,
                 int64_t linesize, int64_t indent) {
  auto [scale, sz] = printFormat(stream, v);
  printIndent(stream, indent);
  int64_t perLine = (linesize - indent) / (sz + 1);
  int64_t first = 0, last = -1;
  while (first < cols) {
    last = first + perLine <= cols ? first + perLine - 1 : cols - 1;
    if (perLine < cols) {
      if (first != 0) stream << "\n";
      stream << "Columns " << first + 1 << " to " << last + 1;
      printIndent(stream, indent);
    }
    if (scale != 1) {
      printScale(stream, scale);
      printIndent(stream, indent);
    }
    for (int64_t l = 0; l < rows; ++l) {
      for (int64_t c = first; c <= last; ++c) {
        stream << std::setw(static_cast<int>(sz)) << v[static_cast<size_t>(l * cols + c)] / scale;
        if (c == last) {
          stream << "\n";
          if (l != rows - 1) {
            printIndent(stream, indent);
            if (scale != 1) stream << " ";
          }
        } else {
          stream << " ";
        }
      }
    }
    first = last + 1;
  }
}

/// at::print(stream, tensor, 80) for a CPU tensor of at most a few elements.
std::string atPrint(const Tensor& t) {
  std::ostringstream stream;
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.doubleAt(static_cast<int64_t>(i));
  const auto& sizes = t.sizes();
  std::string typeName = std::string(deviceTypeName(t.device().type));
  for (auto& ch : typeName) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  typeName += std::string(toString(t.dtype())) + "Type";
  const int64_t linesize = 80;
  if (t.dim() == 0) {
    stream << std::defaultfloat << v[0] << "\n";
    stream << "[ " << typeName << "{}";
  } else if (t.dim() == 1) {
    if (!v.empty()) {
      auto [scale, sz] = printFormat(stream, v);
      if (scale != 1) printScale(stream, scale);
      for (double x : v) stream << std::setw(static_cast<int>(sz)) << x / scale << "\n";
    }
    stream << "[ " << typeName << "{" << sizes[0] << "}";
  } else if (t.dim() == 2) {
    if (!v.empty()) printMatrix(stream, v, sizes[0], sizes[1], linesize, 0);
    stream << "[ " << typeName << "{" << sizes[0] << "," << sizes[1] << "}";
  } else {
    if (!v.empty()) {
      // __printTensor: one matrix per index of the leading dims, headed "(i,j,.,.) = ".
      size_t lead = sizes.size() - 2;
      int64_t rows = sizes[lead], cols = sizes[lead + 1];
      std::vector<int64_t> counter(lead, 0);
      int64_t slices = 1;
      for (size_t i = 0; i < lead; ++i) slices *= sizes[i];
      for (int64_t s = 0; s < slices; ++s) {
        // Counter order: the first leading dim varies fastest (as PyTorch's loop does).
        int64_t rem = s;
        for (size_t i = 0; i < lead; ++i) {
          counter[i] = rem % sizes[i];
          rem /= sizes[i];
        }
        if (s > 0) stream << "\n";
        stream << "(";
        int64_t base = 0, stride = rows * cols;
        for (size_t i = lead; i-- > 0;) {
          base += counter[i] * stride;
          stride *= sizes[i];
        }
        for (size_t i = 0; i < lead; ++i) stream << counter[i] + 1 << ",";
        stream << ".,.) = \n";
        std::vector<double> m(v.begin() + base, v.begin() + base + rows * cols);
        printMatrix(stream, m, rows, cols, linesize, 1);
      }
    }
    stream << "[ " << typeName << "{" << sizes[0];
    for (size_t i = 1; i < sizes.size(); ++i) stream << "," << sizes[i];
    stream << "}";
  }
  stream << " ]";
  std::string s = stream.str();
  for (auto& ch : s)
    if (ch == '\n') ch = ' ';
  return s;
}

}  // namespace

std::string formatIRTensor(const Tensor& t) {
  // 1-element tensors are usually boxed scalars: `{1.5}`, `{3}`.
  if (t.numel() == 1) {
    std::ostringstream out;
    out << "{";
    if (isComplexType(t.dtype())) {
      // Not reachable through doubleAt for complex storage; print the real part as PyTorch
      // prints c10::complex: (re,im).
      out << "(" << t.doubleAt(0) << ",0)";
    } else if (isFloatingType(t.dtype())) {
      out << t.doubleAt(0);
    } else {
      out << t.intAt(0);
    }
    out << "}";
    return out.str();
  }
  if (t.numel() <= 10) return atPrint(t);
  return "<Tensor>";
}

// ---- IValues --------------------------------------------------------------------------------

namespace {

bool elementTypeCanBeInferredFromMembers(const TypePtr& t) {
  switch (t->kind()) {
    case TypeKind::UnionType:
    case TypeKind::OptionalType:
    case TypeKind::NumberType:
    case TypeKind::InterfaceType:
    case TypeKind::AnyType: return false;
    default: return true;
  }
}

void printIValue(std::ostream& out, const IValue& v) {
  switch (v.tag()) {
    case IValue::Tag::None: out << "None"; return;
    case IValue::Tag::Tensor: out << formatIRTensor(v.toTensor()); return;
    case IValue::Tag::Double: out << formatIRDouble(v.toDouble()); return;
    case IValue::Tag::ComplexDouble: {
      auto c = v.toComplexDouble();
      out << formatIRDouble(c.real()) << (c.imag() >= 0 ? "+" : "-")
          << formatIRDouble(std::abs(c.imag())) << "j";
      return;
    }
    case IValue::Tag::Int: out << v.toInt(); return;
    case IValue::Tag::Bool: out << (v.toBool() ? "True" : "False"); return;
    case IValue::Tag::String: out << quoteIRString(v.toStringRef()); return;
    case IValue::Tag::Tuple: {
      const auto& e = v.toTuple()->elements;
      out << "(";
      for (size_t i = 0; i < e.size(); ++i) {
        if (i > 0) out << ", ";
        printIValue(out, e[i]);
      }
      out << (e.size() == 1 ? ",)" : ")");
      return;
    }
    case IValue::Tag::List: {
      auto l = v.toList();
      if (l->elementType && l->elementType->kind() == TypeKind::TensorType) {
        out << "[<Tensors>]";
        return;
      }
      bool annotate = l->list.empty() || !l->elementType ||
                      !elementTypeCanBeInferredFromMembers(l->elementType);
      if (annotate) out << "annotate(" << v.type()->annotationStr() << ", ";
      out << "[";
      for (size_t i = 0; i < l->list.size(); ++i) {
        if (i > 0) out << ", ";
        printIValue(out, l->list[i]);
      }
      out << "]";
      if (annotate) out << ")";
      return;
    }
    case IValue::Tag::Dict: {
      auto d = v.toDict();
      bool annotate =
          d->size() == 0 || !d->valueType || !elementTypeCanBeInferredFromMembers(d->valueType);
      if (annotate) out << "annotate(" << v.type()->annotationStr() << ",";
      out << "{";
      size_t i = 0;
      for (const auto& [k, x] : d->entries()) {
        if (i++ > 0) out << ", ";
        printIValue(out, k);
        out << ": ";
        printIValue(out, x);
      }
      out << "}";
      if (annotate) out << ")";
      return;
    }
    case IValue::Tag::Device:
      out << "torch.device(" << quoteIRString(v.toDevice().str()) << ")";
      return;
    case IValue::Tag::Enum: {
      auto e = v.toEnum();
      out << (e->type ? e->type->name() : std::string("Enum")) << "." << e->name;
      return;
    }
    case IValue::Tag::Object:
      out << "object(" << static_cast<const void*>(v.toObject().get()) << ")";
      return;
    default: out << "<" << v.tagName() << ">"; return;
  }
}

template <typename T, typename F>
void printList(std::ostream& out, const std::vector<T>& xs, F&& each) {
  out << "[";
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i > 0) out << ", ";
    each(xs[i]);
  }
  out << "]";
}

void printValueRef(std::ostream& out, const Value* v) { out << "%" << v->debugName(); }

void printValueRefs(std::ostream& out, const std::vector<Value*>& vs) {
  for (size_t i = 0; i < vs.size(); ++i) {
    if (i > 0) out << ", ";
    printValueRef(out, vs[i]);
  }
}

void printValuesWithTypes(std::ostream& out, const std::vector<Value*>& vs,
                          const char* delim = ", ") {
  for (size_t i = 0; i < vs.size(); ++i) {
    if (i > 0) out << delim;
    printValueRef(out, vs[i]);
    out << " : ";
    if (vs[i]->type())
      out << *vs[i]->type();
    else
      out << "<unknown>";
  }
}

std::ostream& indent(std::ostream& out, size_t level) {
  for (size_t i = 0; i < level; ++i) out << "  ";
  return out;
}

}  // namespace

std::string formatIRIValue(const IValue& v) {
  std::ostringstream ss;
  printIValue(ss, v);
  return ss.str();
}

// ---- nodes and graphs -------------------------------------------------------------------------

void Node::printAttrValue(std::ostream& out, Symbol name) const {
  const AttributeValue& a = attribute(name);
  switch (static_cast<AttributeKind>(a.index())) {
    case AttributeKind::f: out << formatIRDouble(std::get<double>(a)); break;
    case AttributeKind::fs:
      printList(out, std::get<std::vector<double>>(a), [&](double x) { out << formatIRDouble(x); });
      break;
    case AttributeKind::c: printIValue(out, IValue(std::get<std::complex<double>>(a))); break;
    case AttributeKind::i: out << std::get<int64_t>(a); break;
    case AttributeKind::is:
      printList(out, std::get<std::vector<int64_t>>(a), [&](int64_t x) { out << x; });
      break;
    case AttributeKind::s: out << quoteIRString(std::get<std::string>(a)); break;
    case AttributeKind::ss:
      printList(out, std::get<std::vector<std::string>>(a),
                [&](const std::string& x) { out << quoteIRString(x); });
      break;
    case AttributeKind::t: out << formatIRTensor(std::get<Tensor>(a)); break;
    case AttributeKind::ts: out << "[<Tensors>]"; break;
    case AttributeKind::g: out << "<Graph>"; break;
    case AttributeKind::gs: out << "[<Graphs>]"; break;
    case AttributeKind::ty: out << *std::get<TypePtr>(a); break;
    case AttributeKind::tys:
      printList(out, std::get<std::vector<TypePtr>>(a), [&](const TypePtr& x) { out << *x; });
      break;
    case AttributeKind::ival: printIValue(out, std::get<IValue>(a)); break;
  }
}

void Node::printAttributes(std::ostream& out, bool ignoreSubgraph) const {
  out << "[";
  size_t i = 0;
  for (const auto& [name, value] : attributes_) {
    if (ignoreSubgraph && name == attr::Subgraph) continue;
    if (i++ > 0) out << ", ";
    out << name.toUnqualString() << "=";
    printAttrValue(out, name);
  }
  out << "]";
}

std::ostream& Node::print(std::ostream& out, size_t level, std::vector<const Node*>* groups,
                          bool printSourceLocations, bool printAttributes, bool printScopes,
                          bool printBody) const {
  indent(out, level);
  printValuesWithTypes(out, outputs_);
  out << " = ";
  if (hasAttribute(attr::Subgraph) && groups) {
    out << kind_.toQualString() << "_" << groups->size();
    if (printAttributes && numAttributes() > 1 && kind_ != prim::DifferentiableGraph)
      this->printAttributes(out, /*ignoreSubgraph=*/true);
    groups->push_back(this);
  } else {
    out << kind_.toQualString();
    if (printAttributes && hasAttributes()) this->printAttributes(out);
  }
  out << "(";
  printValueRefs(out, inputs_);
  out << ")";
  if (printScopes) {
    std::string sc = scopeName();
    if (!sc.empty()) out << ", scope: " << sc;
  }
  if (printSourceLocations && sourceRange_ && !sourceRange_->filename.empty())
    out << " # " << sourceRange_->str();
  if (!printBody) return out;
  out << "\n";
  if (!blocks_.empty()) checkStack("print: blocks");  // Note [Stack guard]
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block* b = blocks_[i];
    indent(out, level + 1) << "block" << i << "(";
    printValuesWithTypes(out, b->inputs());
    out << "):\n";
    for (const Node* nested : b->nodes())
      nested->print(out, level + 2, groups, printSourceLocations, printAttributes, printScopes);
    indent(out, level + 2) << "-> (";
    printValueRefs(out, b->outputs());
    out << ")\n";
  }
  return out;
}

std::ostream& Graph::print(std::ostream& out, bool printSourceLocations) const {
  out << "graph(";
  printValuesWithTypes(out, inputs(), ",\n      ");
  out << "):\n";
  std::vector<const Node*> groups;
  for (const Node* n : nodes()) n->print(out, 1, &groups, printSourceLocations);
  out << "  return (";
  printValueRefs(out, outputs());
  out << ")\n";
  size_t i = 0;
  for (const Node* fg : groups) {
    out << "with " << fg->kind().toQualString() << "_" << i++ << " = ";
    const auto& sub = fg->g(attr::Subgraph);
    if (sub) sub->print(out, printSourceLocations);
  }
  out.flush();
  return out;
}

std::string Graph::toString(bool printSourceLocations) const {
  std::ostringstream ss;
  print(ss, printSourceLocations);
  return ss.str();
}

std::ostream& operator<<(std::ostream& out, const Graph& g) { return g.print(out, true); }

std::ostream& operator<<(std::ostream& out, const Node& n) { return n.print(out, 0, nullptr); }

}  // namespace torchless
