#include "ir/function_schema.h"

#include "ir/ir_printer.h"

#include "core/error.h"
#include "ir/type_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <complex>
#include <limits>
#include <unordered_map>

namespace torchless {

// ---- AliasInfo --------------------------------------------------------------------------------

bool AliasInfo::isWildcardBefore() const {
  return std::find(before_.begin(), before_.end(), kWildcard) != before_.end();
}

bool AliasInfo::isWildcardAfter() const {
  return std::find(after_.begin(), after_.end(), kWildcard) != after_.end();
}

void AliasInfo::addBeforeSet(std::string set) {
  if (std::find(before_.begin(), before_.end(), set) == before_.end())
    before_.push_back(std::move(set));
}

void AliasInfo::addAfterSet(std::string set) {
  if (std::find(after_.begin(), after_.end(), set) == after_.end())
    after_.push_back(std::move(set));
}

namespace {

bool sameSets(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return false;
  return std::all_of(a.begin(), a.end(), [&](const std::string& s) {
    return std::find(b.begin(), b.end(), s) != b.end();
  });
}

std::string joinSets(const std::vector<std::string>& sets) {
  std::string s;
  for (size_t i = 0; i < sets.size(); ++i) s += (i ? "|" : "") + sets[i];
  return s;
}

}  // namespace

std::string AliasInfo::str() const {
  std::string s = "(" + joinSets(before_);
  if (isWrite_) s += "!";
  if (!sameSets(before_, after_)) s += " -> " + joinSets(after_);
  return s + ")";
}

bool AliasInfo::operator==(const AliasInfo& o) const {
  return isWrite_ == o.isWrite_ && sameSets(before_, o.before_) && sameSets(after_, o.after_) &&
         contained_ == o.contained_;
}

// ---- Argument ---------------------------------------------------------------------------------

namespace {

/// PyTorch's "fake" type: what values of a schema type carry (ScalarType, Layout, MemoryFormat
/// and SymInt are ints), as SchemaTypeParser::parseFakeAndRealType.
TypePtr fakeType(const TypePtr& t) {
  switch (t->kind()) {
    case TypeKind::ScalarTypeType:
    case TypeKind::LayoutType:
    case TypeKind::MemoryFormatType:
    case TypeKind::SymIntType: return IntType::get();
    case TypeKind::ListType: {
      const TypePtr& e = t->expect<ListType>().getElementType();
      TypePtr f = fakeType(e);
      return f == e ? t : ListType::create(std::move(f));
    }
    case TypeKind::OptionalType: {
      const TypePtr& e = t->expect<OptionalType>().getElementType();
      TypePtr f = fakeType(e);
      return f == e ? t : OptionalType::create(std::move(f));
    }
    default: return t;
  }
}

std::string printDouble(double d) {
  int c = std::fpclassify(d);
  if ((c == FP_NORMAL || c == FP_ZERO) && std::abs(d) < 1e10) {
    auto i = static_cast<int64_t>(d);
    if (static_cast<double>(i) == d) return fmt::format("{}.", i);
  }
  return fmt::format("{:.17g}", d);
}

}  // namespace

std::string printSchemaValue(const IValue& v) {
  switch (v.tag()) {
    case IValue::Tag::None: return "None";
    case IValue::Tag::Bool: return v.toBool() ? "True" : "False";
    case IValue::Tag::Int: return std::to_string(v.toInt());
    case IValue::Tag::Double: return printDouble(v.toDouble());
    case IValue::Tag::ComplexDouble: {
      auto c = v.toComplexDouble();
      return printDouble(c.real()) + (c.imag() >= 0 ? "+" : "-") + printDouble(std::abs(c.imag())) +
             "j";
    }
    case IValue::Tag::String: return quoteIRString(v.toStringRef());
    case IValue::Tag::Device: return v.toDevice().str();
    case IValue::Tag::List: {
      std::string s = "[";
      const auto& l = v.toList()->list;
      for (size_t i = 0; i < l.size(); ++i) s += (i ? ", " : "") + printSchemaValue(l[i]);
      return s + "]";
    }
    case IValue::Tag::Tuple: {
      std::string s = "(";
      const auto& e = v.toTuple()->elements;
      for (size_t i = 0; i < e.size(); ++i) s += (i ? ", " : "") + printSchemaValue(e[i]);
      return s + (e.size() == 1 ? ",)" : ")");
    }
    default: return v.repr();
  }
}

Argument::Argument(std::string name, TypePtr realType, std::optional<int32_t> N,
                   std::optional<IValue> defaultValue, bool kwargOnly,
                   std::optional<AliasInfo> aliasInfo)
    : name_(std::move(name)),
      type_(fakeType(realType)),
      realType_(std::move(realType)),
      N_(N),
      defaultValue_(std::move(defaultValue)),
      kwargOnly_(kwargOnly),
      aliasInfo_(std::move(aliasInfo)) {}

std::string Argument::str() const {
  const TypePtr& type = realType_;
  const bool isOpt = type->kind() == TypeKind::OptionalType;
  const TypePtr& unopt = isOpt ? type->expect<OptionalType>().getElementType() : type;
  std::string out;
  if (const auto* list = unopt->cast<ListType>()) {
    // Sized lists get N from the argument, not the type.
    out += list->getElementType()->str();
    if (aliasInfo_ && !aliasInfo_->containedTypes().empty())
      out += aliasInfo_->containedTypes()[0].str();
    out += "[" + (N_ ? std::to_string(*N_) : std::string()) + "]";
  } else {
    out += unopt->str();
  }
  if (aliasInfo_ && !aliasInfo_->beforeSets().empty()) out += aliasInfo_->str();
  if (isOpt) out += "?";
  if (!name_.empty()) out += " " + name_;
  if (defaultValue_) {
    out += "=";
    const IValue& d = *defaultValue_;
    const auto* list = type->cast<ListType>();
    if (list && list->getElementType()->kind() == TypeKind::IntType && d.isList()) {
      // native_functions.yaml writes `int[2] stride=1`, not `int[2] stride=[1, 1]`.
      const auto& l = d.toList()->list;
      bool allSame = l.size() > 1 && std::all_of(l.begin(), l.end(),
                                                 [&](const IValue& x) { return x.equals(l[0]); });
      out += allSame ? printSchemaValue(l[0]) : printSchemaValue(d);
    } else {
      out += printSchemaValue(d);
    }
  }
  return out;
}

// ---- FunctionSchema ---------------------------------------------------------------------------

FunctionSchema::FunctionSchema(std::string name, std::string overloadName,
                               std::vector<Argument> arguments, std::vector<Argument> returns,
                               bool isVararg, bool isVarret)
    : name_{std::move(name), std::move(overloadName)},
      arguments_(std::move(arguments)),
      returns_(std::move(returns)),
      isVararg_(isVararg),
      isVarret_(isVarret) {}

std::string FunctionSchema::ns() const {
  auto p = name_.name.find("::");
  return p == std::string::npos ? std::string() : name_.name.substr(0, p);
}

std::optional<size_t> FunctionSchema::argumentIndexWithName(std::string_view name) const {
  for (size_t i = 0; i < arguments_.size(); ++i)
    if (arguments_[i].name() == name) return i;
  return std::nullopt;
}

bool FunctionSchema::isMutable() const {
  return std::any_of(arguments_.begin(), arguments_.end(),
                     [](const Argument& a) { return a.aliasInfo() && a.aliasInfo()->isWrite(); });
}

bool FunctionSchema::argumentMayAliasReturn(size_t i) const {
  if (i >= arguments_.size()) return true;
  if (!arguments_[i].aliasInfo()) return false;
  const AliasInfo& a = *arguments_[i].aliasInfo();
  for (const auto& r : returns_) {
    if (!r.aliasInfo()) continue;
    const AliasInfo& ra = *r.aliasInfo();
    if (ra.isWildcardBefore() || ra.isWildcardAfter() || a.isWildcardBefore() ||
        a.isWildcardAfter())
      return true;
    for (const auto& set : ra.beforeSets())
      if (std::find(a.beforeSets().begin(), a.beforeSets().end(), set) != a.beforeSets().end())
        return true;
  }
  return false;
}

std::string FunctionSchema::str() const {
  std::string out = name_.str() + "(";
  bool seenKwargOnly = false;
  for (size_t i = 0; i < arguments_.size(); ++i) {
    if (i > 0) out += ", ";
    if (arguments_[i].kwargOnly() && !seenKwargOnly) {
      out += "*, ";
      seenKwargOnly = true;
    }
    out += arguments_[i].str();
  }
  if (isVararg_) {
    if (!arguments_.empty()) out += ", ";
    out += "...";
  }
  out += ") -> ";
  // No parentheses around a single return (unless it starts with '(') or a lone `...`.
  bool needParen = !((returns_.size() == 1 && !isVarret_) || (returns_.empty() && isVarret_));
  std::vector<std::string> rets;
  for (const auto& r : returns_) rets.push_back(r.str());
  if (returns_.size() == 1 && !isVarret_ && !rets[0].empty() && rets[0].front() == '(')
    needParen = true;
  if (needParen) out += "(";
  for (size_t i = 0; i < rets.size(); ++i) out += (i ? ", " : "") + rets[i];
  if (isVarret_) {
    if (!returns_.empty()) out += ", ";
    out += "...";
  }
  if (needParen) out += ")";
  return out;
}

// ---- parser -----------------------------------------------------------------------------------

namespace {

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isIdentChar(char c) { return isIdentStart(c) || (c >= '0' && c <= '9'); }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

/// Identifiers PyTorch accepts as numeric defaults (function_schema_parser.cpp
/// parseSingleConstant), plus a few newer spellings of the same enums.
const std::unordered_map<std::string_view, int64_t>& enumDefaults() {
  static const std::unordered_map<std::string_view, int64_t> table = {
      // ScalarType
      {"float", 6},
      {"complex", 9},
      {"long", 4},
      {"double", 7},
      {"int", 3},
      {"half", 5},
      {"bool", 11},
      // Layout
      {"strided", 0},
      // at::Reduction
      {"Mean", 1},
      {"Sum", 2},
      // MemoryFormat
      {"contiguous_format", 0},
      {"preserve_format", 1},
      {"channels_last", 2},
      {"channels_last_3d", 3},
  };
  return table;
}

class SchemaParser {
 public:
  SchemaParser(std::string_view text, const TypeResolver& resolver)
      : text_(text), resolver_(resolver) {}

  std::variant<OperatorName, FunctionSchema> parseSchemaOrName() {
    OperatorName name = parseOperatorName();
    skipSpace();
    if (atEnd()) return name;
    FunctionSchema s = parseRest(std::move(name));
    return s;
  }

  FunctionSchema parseSchema() {
    OperatorName name = parseOperatorName();
    skipSpace();
    if (atEnd()) fail("tried to parse a function schema but only the operator name was given");
    return parseRest(std::move(name));
  }

  OperatorName parseNameOnly() {
    OperatorName name = parseOperatorName();
    skipSpace();
    if (!atEnd()) fail(fmt::format("expected end of name but found {}", describeHere()));
    return name;
  }

 private:
  // ---- scanning -------------------------------------------------------------------------------
  bool atEnd() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void skipSpace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      ++pos_;
  }
  bool accept(char c) {
    skipSpace();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  bool acceptStr(std::string_view s) {
    skipSpace();
    if (text_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }
  /// Accepts a whole identifier equal to `word`.
  bool acceptWord(std::string_view word) {
    skipSpace();
    if (text_.substr(pos_, word.size()) != word || isIdentChar(peek(word.size()))) return false;
    pos_ += word.size();
    return true;
  }
  [[noreturn]] void fail(const std::string& what) const { failAt(pos_, what); }
  [[noreturn]] void failAt(size_t pos, const std::string& what) const {
    detail::throwSyntaxError("invalid schema", text_, pos, what);
  }
  std::string describeHere() const {
    if (atEnd()) return "end of schema";
    if (isIdentStart(peek())) {
      size_t e = pos_;
      while (e < text_.size() && isIdentChar(text_[e])) ++e;
      return fmt::format("'{}'", text_.substr(pos_, e - pos_));
    }
    return fmt::format("'{}'", peek());
  }
  void expect(char c) {
    if (!accept(c)) fail(fmt::format("expected '{}' but found {}", c, describeHere()));
  }
  std::string expectIdent(const char* what) {
    skipSpace();
    if (!isIdentStart(peek())) fail(fmt::format("expected {} but found {}", what, describeHere()));
    size_t s = pos_;
    while (!atEnd() && isIdentChar(peek())) ++pos_;
    return std::string(text_.substr(s, pos_ - s));
  }

  // ---- declaration ----------------------------------------------------------------------------
  OperatorName parseOperatorName() {
    OperatorName n;
    n.name = expectIdent("an operator name");
    if (peek() == ':' && peek(1) == ':') {
      pos_ += 2;
      n.name += "::" + expectIdent("an operator name after '::'");
    }
    if (peek() == '.') {
      ++pos_;
      n.overloadName = expectIdent("an overload name after '.'");
    }
    return n;
  }

  FunctionSchema parseRest(OperatorName name) {
    expect('(');
    std::vector<Argument> args;
    bool kwargOnly = false, isVararg = false;
    if (!accept(')')) {
      do {
        skipSpace();
        if (isVararg) fail("'...' must be the last element of the argument list");
        if (acceptStr("...")) {
          isVararg = true;
        } else if (accept('*')) {
          kwargOnly = true;
        } else {
          args.push_back(parseArgument(/*isReturn=*/false, kwargOnly));
        }
      } while (accept(','));
      expect(')');
    }
    if (!acceptStr("->")) fail(fmt::format("expected '->' but found {}", describeHere()));
    std::vector<Argument> returns;
    bool isVarret = false;
    skipSpace();
    if (acceptStr("...")) {
      isVarret = true;
    } else if (accept('(')) {
      if (!accept(')')) {
        do {
          skipSpace();
          if (isVarret) fail("'...' must be the last element of the return list");
          if (acceptStr("..."))
            isVarret = true;
          else
            returns.push_back(parseArgument(/*isReturn=*/true, false));
        } while (accept(','));
        expect(')');
      }
    } else {
      returns.push_back(parseArgument(/*isReturn=*/true, false));
    }
    skipSpace();
    if (!atEnd()) fail(fmt::format("expected end of schema but found {}", describeHere()));

    // FunctionSchema::checkSchema (lists are exempt for backward compatibility).
    bool seenDefault = false;
    for (const auto& a : args) {
      if (a.defaultValue()) {
        seenDefault = true;
      } else if (seenDefault && !a.kwargOnly() && a.type()->kind() != TypeKind::ListType) {
        throw Error(fmt::format("invalid schema: non-default positional argument '{}' follows a "
                                "default argument",
                                a.name()),
                    {}, std::string(text_));
      }
    }
    return FunctionSchema(std::move(name.name), std::move(name.overloadName), std::move(args),
                          std::move(returns), isVararg, isVarret);
  }

  Argument parseArgument(bool isReturn, bool kwargOnly) {
    skipSpace();
    std::optional<AliasInfo> alias;
    TypePtr type = detail::parseSchemaType(text_, pos_, alias, resolver_, nextAliasId_);
    std::optional<int32_t> N;
    skipSpace();
    if (accept('[')) {
      // A size hint can only occur at the argument level: `int[2]`.
      skipSpace();
      size_t s = pos_;
      while (isDigit(peek())) ++pos_;
      int32_t n = 0;
      auto [p, ec] = std::from_chars(text_.data() + s, text_.data() + pos_, n);
      if (s == pos_ || ec != std::errc()) {
        pos_ = s;
        fail(fmt::format("expected a list size but found {}", describeHere()));
      }
      // A default of a sized list is repeated N times (`int[2] stride=1` is [1, 1]): the size
      // is checked before that list is built (the types fuzzer's `int[39999999] padding=0`).
      constexpr int32_t kMaxListSize = 1 << 16;
      if (n > kMaxListSize) {
        pos_ = s;
        fail(fmt::format("list size {} is over the limit of {}", n, kMaxListSize));
      }
      N = n;
      expect(']');
      type = ListType::create(std::move(type));
      std::optional<AliasInfo> container = detail::parseAliasAnnotation(text_, pos_, nextAliasId_);
      if (alias) {
        if (!container) {
          container.emplace();
          container->setIsWrite(alias->isWrite());
        }
        container->addContainedType(std::move(*alias));
      }
      alias = std::move(container);
      if (accept('?')) type = OptionalType::create(std::move(type));
    }
    skipSpace();
    std::string name;
    std::optional<IValue> defaultValue;
    if (isReturn) {
      if (isIdentStart(peek())) name = expectIdent("a return name");
    } else {
      name = expectIdent("an argument name");
      if (accept('=')) {
        skipSpace();
        defaultValue = parseDefaultValue(fakeType(type), N);
      }
    }
    return Argument(std::move(name), std::move(type), N, std::move(defaultValue),
                    !isReturn && kwargOnly, std::move(alias));
  }

  // ---- default values (function_schema_parser.cpp parseDefaultValue) --------------------------
  IValue parseDefaultValue(const TypePtr& type, std::optional<int32_t> N) {
    size_t start = pos_;
    switch (type->kind()) {
      case TypeKind::TensorType:
      case TypeKind::GeneratorType:
      case TypeKind::QuantizerType: return parseNoneDefault();
      case TypeKind::StringType:
      case TypeKind::OptionalType:
      case TypeKind::NumberType:
      case TypeKind::IntType:
      case TypeKind::BoolType:
      case TypeKind::FloatType:
      case TypeKind::ComplexType: return parseSingleConstant(type->kind());
      case TypeKind::DeviceObjType: {
        skipSpace();
        size_t at = pos_;
        if (peek() != '"' && peek() != '\'') fail("expected a device string");
        std::string s = parseStringLiteral();
        try {
          return IValue(Device::parse(s));
        } catch (const Error& e) {
          failAt(at, e.message());
        }
      }
      case TypeKind::ListType: {
        const TypePtr& elem = type->expect<ListType>().getElementType();
        skipSpace();
        if (isIdentStart(peek())) return parseNoneDefault();
        if (N && peek() != '[') {
          IValue v = parseSingleConstant(elem->kind());
          return convertToList(elem, std::vector<IValue>(static_cast<size_t>(*N), v), start);
        }
        return parseConstantList(elem);
      }
      default:
        failAt(start, fmt::format("a default value for type {} is not supported", type->str()));
    }
  }

  IValue parseNoneDefault() {
    if (!acceptWord("None")) fail(fmt::format("expected None but found {}", describeHere()));
    return IValue();
  }

  IValue parseConstantList(const TypePtr& elem) {
    size_t start = pos_;
    expect('[');
    std::vector<IValue> values;
    if (!accept(']')) {
      do {
        values.push_back(parseSingleConstant(elem->kind()));
      } while (accept(','));
      expect(']');
    }
    return convertToList(elem, std::move(values), start);
  }

  IValue convertToList(const TypePtr& elem, std::vector<IValue> values, size_t at) {
    TypePtr listElem;
    switch (elem->kind()) {
      case TypeKind::IntType:
        for (const auto& v : values)
          if (!v.isInt()) failAt(at, "expected a list of ints");
        listElem = IntType::get();
        break;
      case TypeKind::FloatType:
        for (auto& v : values) {
          if (v.isInt()) v = IValue(static_cast<double>(v.toInt()));
          if (!v.isDouble()) failAt(at, "expected a list of floats");
        }
        listElem = FloatType::get();
        break;
      case TypeKind::ComplexType:
        for (auto& v : values) {
          if (v.isInt()) v = IValue(std::complex<double>(static_cast<double>(v.toInt()), 0));
          if (v.isDouble()) v = IValue(std::complex<double>(v.toDouble(), 0));
          if (!v.isComplexDouble()) failAt(at, "expected a list of complex numbers");
        }
        listElem = ComplexType::get();
        break;
      case TypeKind::BoolType:  // an extension: PyTorch refuses bool lists
        for (const auto& v : values)
          if (!v.isBool()) failAt(at, "expected a list of bools");
        listElem = BoolType::get();
        break;
      default: failAt(at, "lists are only supported for float, int and complex types");
    }
    return IValue(ListImpl::create(std::move(listElem), std::move(values)));
  }

  IValue parseSingleConstant(TypeKind kind) {
    skipSpace();
    size_t start = pos_;
    if (acceptWord("True")) return IValue(true);
    if (acceptWord("False")) return IValue(false);
    if (acceptWord("None")) return IValue();
    if (peek() == '"' || peek() == '\'') return IValue(parseStringLiteral());
    if (isIdentStart(peek())) {
      std::string id = expectIdent("a default value");
      if (id == "inf") return IValue(std::numeric_limits<double>::infinity());
      if (id == "nan") return IValue(std::numeric_limits<double>::quiet_NaN());
      const auto& table = enumDefaults();
      auto it = table.find(id);
      if (it == table.end()) failAt(start, fmt::format("invalid numeric default value '{}'", id));
      return IValue(it->second);
    }
    bool negative = false;
    if (peek() == '-') {
      ++pos_;
      negative = true;
      if (acceptWord("inf")) return IValue(-std::numeric_limits<double>::infinity());
    }
    std::string n = scanNumber();
    if (n.empty()) {
      pos_ = start;
      fail(fmt::format("expected a default value but found {}", describeHere()));
    }
    if (negative) n = "-" + n;
    const bool isImag = n.back() == 'j';
    if (isImag) return IValue(std::complex<double>(0, toDouble(n.substr(0, n.size() - 1), start)));
    // `a+bj` (how complex values print): a real part followed by an imaginary one.
    if (peek() == '+' || peek() == '-') {
      size_t save = pos_;
      bool neg = peek() == '-';
      ++pos_;
      std::string im = scanNumber();
      if (!im.empty() && im.back() == 'j') {
        double b = toDouble(im.substr(0, im.size() - 1), save);
        return IValue(std::complex<double>(toDouble(n, start), neg ? -b : b));
      }
      pos_ = save;
    }
    if (kind == TypeKind::ComplexType) return IValue(std::complex<double>(toDouble(n, start), 0));
    if (kind == TypeKind::FloatType || n.find_first_of(".eE") != std::string::npos)
      return IValue(toDouble(n, start));
    int64_t v = 0;
    auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
    if (ec != std::errc() || p != n.data() + n.size())
      failAt(start, fmt::format("invalid integer default value '{}'", n));
    return IValue(v);
  }

  /// digits [. digits] [e [+-] digits] [j]
  std::string scanNumber() {
    size_t s = pos_;
    while (isDigit(peek())) ++pos_;
    if (peek() == '.') {
      ++pos_;
      while (isDigit(peek())) ++pos_;
    }
    if (pos_ == s || (pos_ == s + 1 && text_[s] == '.')) {
      pos_ = s;
      return {};
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (isDigit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && isDigit(peek(2))))) {
      pos_ += 2;
      while (isDigit(peek())) ++pos_;
    }
    if (peek() == 'j') ++pos_;
    if (isIdentChar(peek())) {
      pos_ = s;
      return {};
    }
    return std::string(text_.substr(s, pos_ - s));
  }

  double toDouble(const std::string& n, size_t at) const {
    double v = 0;
    auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
    if (ec != std::errc() || p != n.data() + n.size())
      failAt(at, fmt::format("invalid float default value '{}'", n));
    return v;
  }

  /// A quoted string with C escapes (the TorchScript lexer's string literal).
  std::string parseStringLiteral() {
    size_t start = pos_;
    char quote = peek();
    ++pos_;
    std::string out;
    while (true) {
      if (atEnd()) failAt(start, "unterminated string literal");
      char c = text_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (atEnd()) failAt(start, "unterminated string literal");
      char e = text_[pos_++];
      switch (e) {
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case '\n': break;  // line continuation
        case 'x': {
          int v = 0, digits = 0;
          while (digits < 2 && std::isxdigit(static_cast<unsigned char>(peek()))) {
            char h = text_[pos_++];
            v = v * 16 + (isDigit(h) ? h - '0' : (std::tolower(h) - 'a' + 10));
            ++digits;
          }
          if (digits == 0) failAt(pos_ - 2, "invalid \\x escape");
          out += static_cast<char>(v);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            int v = e - '0', digits = 1;
            while (digits < 3 && peek() >= '0' && peek() <= '7') {
              v = v * 8 + (text_[pos_++] - '0');
              ++digits;
            }
            out += static_cast<char>(v);
          } else {
            failAt(pos_ - 2, fmt::format("invalid escape '\\{}'", e));
          }
      }
    }
    return out;
  }

  std::string_view text_;
  size_t pos_ = 0;
  const TypeResolver& resolver_;
  int nextAliasId_ = 0;
};

}  // namespace

FunctionSchema parseSchema(std::string_view text, const TypeResolver& resolver) {
  return SchemaParser(text, resolver).parseSchema();
}

OperatorName parseName(std::string_view text) {
  static const TypeResolver noResolver;
  return SchemaParser(text, noResolver).parseNameOnly();
}

std::variant<OperatorName, FunctionSchema> parseSchemaOrName(std::string_view text,
                                                             const TypeResolver& resolver) {
  return SchemaParser(text, resolver).parseSchemaOrName();
}

}  // namespace torchless
