// The IR / schema type grammar. Two flavours share one recursive-descent parser:
//   IR      (parseIRType): tensor details `Float(3, *, strides=[4, 1], requires_grad=0,
//           device=cpu)`, `FloatTensor`, `Tensor(requires_grad=0)`, `Enum<__torch__.E>`;
//           follows torch/csrc/jit/ir/irparser.cpp + SchemaTypeParser(complete_tensor_types).
//   schema  (detail::parseSchemaType): alias annotations `Tensor(a!)`, `Tensor(a)[]`,
//           `Dict(str, t)(a!)`, `t(*)`; follows SchemaTypeParser::parseType.

#include "ir/type_parser.h"

#include "core/error.h"
#include "ir/function_schema.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>
#include <unordered_map>

namespace torchless {

namespace detail {

void throwSyntaxError(std::string_view kind, std::string_view text, size_t pos,
                      const std::string& what) {
  pos = std::min(pos, text.size());
  std::string details(text);
  details += "\n";
  details += std::string(pos, ' ') + "^";
  throw Error(fmt::format("{}: {} at column {}", kind, what, pos + 1), {}, std::move(details));
}

}  // namespace detail

namespace {

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isIdentChar(char c) { return isIdentStart(c) || (c >= '0' && c <= '9'); }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

/// Base types by their schema spelling (SchemaTypeParser::parseBaseType's table).
const TypePtr* lookupBaseType(std::string_view name) {
  static const std::unordered_map<std::string_view, TypePtr> table = {
      {"Generator", GeneratorType::get()},
      {"Dimname", StringType::get()},
      {"ScalarType", ScalarTypeType::get()},
      {"Layout", LayoutType::get()},
      {"MemoryFormat", MemoryFormatType::get()},
      {"Storage", StorageType::get()},
      {"QScheme", QSchemeType::get()},
      {"Quantizer", QuantizerType::get()},
      {"ConstQuantizerPtr", IntType::get()},
      {"Device", DeviceObjType::get()},
      {"Stream", StreamObjType::get()},
      {"Scalar", NumberType::get()},
      {"str", StringType::get()},
      {"float", FloatType::get()},
      {"complex", ComplexType::get()},
      {"int", IntType::get()},
      {"SymInt", SymIntType::get()},
      {"SymFloat", SymFloatType::get()},
      {"bool", BoolType::get()},
      {"None", NoneType::get()},
      {"NoneType", NoneType::get()},
      {"Capsule", CapsuleType::get()},
      {"Any", AnyType::get()},
      {"AnyClassType", AnyClassType::get()},
      {"AnyEnumType", AnyEnumType::get()},
      {"PyObject", PyObjectType::get()},
      // How core prints the untyped list / tuple (AnyListType, AnyTupleType).
      {"list", AnyListType::get()},
      {"tuple", AnyTupleType::get()},
  };
  auto it = table.find(name);
  return it == table.end() ? nullptr : &it->second;
}

class TypeGrammar {
 public:
  TypeGrammar(std::string_view text, size_t pos, const TypeResolver& resolver, bool schemaMode,
              int* nextAliasId)
      : text_(text),
        pos_(pos),
        resolver_(resolver),
        schemaMode_(schemaMode),
        nextAliasId_(nextAliasId) {}

  size_t pos() const { return pos_; }

  /// IR flavour: base type, suffixes.
  TypePtr parseIR(bool stopBeforeAlias) {
    skipSpace();
    TypePtr t = parseBase(stopBeforeAlias);
    skipSpace();
    if (stopBeforeAlias && peek() == '(') return t;
    return parseSuffixes(std::move(t), nullptr);
  }

  /// Schema flavour: base type with alias annotation, suffixes with container annotations.
  TypePtr parseSchema(std::optional<AliasInfo>& alias) {
    skipSpace();
    alias.reset();
    TypePtr t;
    size_t start = pos_;
    if (peek() == '(') {
      t = parseTuple();
    } else {
      std::string name = parseTypeName();
      if (name == "Future" || name == "RRef" || name == "Await") {
        t = parseSingleElement(name);
      } else if (name == "Tensor") {
        t = TensorType::get();
        alias = parseAlias();
      } else if (name == "Dict" || name == "Union") {
        t = parseDictOrUnion(name);
        alias = parseAlias();
      } else {
        t = resolveNamed(name, start);
        alias = parseAlias();
      }
    }
    skipSpace();
    return parseSuffixes(std::move(t), &alias);
  }

  /// `(a!)`, `(a|b -> *)`, `!`, or nothing.
  std::optional<AliasInfo> parseAlias() {
    skipSpace();
    AliasInfo info;
    if (accept('(')) {
      auto parseSets = [&](bool before) {
        do {
          skipSpace();
          bool wildcard = before ? info.isWildcardBefore() : info.isWildcardAfter();
          std::string set;
          if (accept('*')) {
            set = std::string(AliasInfo::kWildcard);
          } else if (wildcard) {
            // PyTorch ignores names after a wildcard, and then fails at the name.
            return;
          } else if (!before && peek() == ')' && info.beforeSets().size() == 1 &&
                     info.beforeSets()[0][0] == '$') {
            // `Tensor($0! -> )`: how PyTorch prints the `Tensor!` shorthand; read it back.
            return;
          } else if (peek() == '$' && isDigit(peek(1))) {
            size_t s = pos_++;
            while (isDigit(peek())) ++pos_;
            set = std::string(text_.substr(s, pos_ - s));
            // Ids past int are kept as names but do not move the counter (stoi threw).
            int id = 0;
            const auto r = std::from_chars(set.data() + 1, set.data() + set.size(), id);
            if (r.ec == std::errc() && id < std::numeric_limits<int>::max())
              *nextAliasId_ = std::max(*nextAliasId_, id + 1);
          } else {
            set = expectIdent("alias set name");
          }
          if (before)
            info.addBeforeSet(std::move(set));
          else
            info.addAfterSet(std::move(set));
          skipSpace();
        } while (accept('|'));
      };
      parseSets(true);
      skipSpace();
      if (accept('!')) info.setIsWrite(true);
      skipSpace();
      if (acceptStr("->")) {
        parseSets(false);
      } else {
        for (const auto& s : info.beforeSets()) info.addAfterSet(s);
      }
      skipSpace();
      expect(')');
    } else if (accept('!')) {
      info.addBeforeSet("$" + std::to_string((*nextAliasId_)++));
      info.setIsWrite(true);
    } else {
      return std::nullopt;
    }
    return info;
  }

 private:
  // ---- scanning -------------------------------------------------------------------------------
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   (schemaMode_ && (text_[pos_] == '\n' || text_[pos_] == '\r'))))
      ++pos_;
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  bool acceptStr(std::string_view s) {
    if (text_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }
  [[noreturn]] void fail(const std::string& what) const { failAt(pos_, what); }
  [[noreturn]] void failAt(size_t pos, const std::string& what) const {
    detail::throwSyntaxError(schemaMode_ ? "invalid schema" : "invalid type", text_, pos, what);
  }
  std::string describeHere() const {
    if (pos_ >= text_.size()) return "end of input";
    if (isIdentStart(peek())) {
      size_t e = pos_;
      while (e < text_.size() && isIdentChar(text_[e])) ++e;
      return fmt::format("'{}'", text_.substr(pos_, e - pos_));
    }
    return fmt::format("'{}'", peek());
  }
  void expect(char c) {
    skipSpace();
    if (!accept(c)) fail(fmt::format("expected '{}' but found {}", c, describeHere()));
  }
  std::string expectIdent(const char* what) {
    skipSpace();
    if (!isIdentStart(peek())) fail(fmt::format("expected {} but found {}", what, describeHere()));
    size_t s = pos_;
    while (pos_ < text_.size() && isIdentChar(text_[pos_])) ++pos_;
    return std::string(text_.substr(s, pos_ - s));
  }
  int64_t expectInt(const char* what) {
    skipSpace();
    size_t s = pos_;
    if (peek() == '-') ++pos_;
    while (isDigit(peek())) ++pos_;
    int64_t v = 0;
    auto [p, ec] = std::from_chars(text_.data() + s, text_.data() + pos_, v);
    if (s == pos_ || ec != std::errc() || p != text_.data() + pos_) {
      pos_ = s;
      fail(fmt::format("expected {} but found {}", what, describeHere()));
    }
    return v;
  }

  /// An identifier, or a dotted qualified name (`__torch__.torch.classes.ns.C`).
  std::string parseTypeName() {
    std::string name = expectIdent("a type");
    while (peek() == '.' && isIdentStart(peek(1))) {
      ++pos_;
      name += ".";
      name += expectIdent("a name");
    }
    return name;
  }

  // ---- grammar --------------------------------------------------------------------------------
  TypePtr parseNested() {
    if (schemaMode_) {
      // PyTorch drops alias annotations inside tuples, Dict, Future and Union.
      std::optional<AliasInfo> ignored;
      return parseSchema(ignored);
    }
    return parseIR(false);
  }

  TypePtr parseTuple() {
    expect('(');
    std::vector<TypePtr> elems;
    skipSpace();
    if (!accept(')')) {
      do {
        elems.push_back(parseNested());
        skipSpace();
      } while (accept(','));
      expect(')');
    }
    return TupleType::create(std::move(elems));
  }

  TypePtr parseSingleElement(const std::string& name) {
    expect('(');
    TypePtr elem = parseNested();
    expect(')');
    if (name == "Future") return FutureType::create(std::move(elem));
    if (name == "RRef") return RRefType::create(std::move(elem));
    return AwaitType::create(std::move(elem));
  }

  TypePtr parseDictOrUnion(const std::string& name) {
    size_t start = pos_ - name.size();
    expect('(');
    std::vector<TypePtr> elems;
    do {
      elems.push_back(parseNested());
      skipSpace();
    } while (accept(','));
    expect(')');
    if (name == "Dict") {
      if (elems.size() != 2) failAt(start, fmt::format("Dict takes 2 types, got {}", elems.size()));
      return DictType::create(elems[0], elems[1]);
    }
    return UnionType::create(std::move(elems));
  }

  /// IR flavour base type.
  TypePtr parseBase(bool stopBeforeAlias) {
    size_t start = pos_;
    if (peek() == '(') return parseTuple();
    std::string name = parseTypeName();
    if ((name == "Future" || name == "RRef") && peek() == '[') {
      // The IR printer's spelling (operator<<): Future[int], RRef[Tensor].
      ++pos_;
      TypePtr elem = parseNested();
      expect(']');
      return name == "Future" ? FutureType::create(std::move(elem))
                              : RRefType::create(std::move(elem));
    }
    if (name == "Future" || name == "RRef" || name == "Await") return parseSingleElement(name);
    if (name == "Dict" || name == "Union") return parseDictOrUnion(name);
    if (name == "NamedTuple" && peek() == '(') {
      // `NamedTuple(x : int, y : float)`: the IR printer drops the tuple's qualified name, so
      // the type comes back named "NamedTuple" with its fields.
      ++pos_;
      std::vector<std::string> fields;
      std::vector<TypePtr> types;
      skipSpace();
      if (!accept(')')) {
        do {
          skipSpace();
          fields.push_back(parseTypeName());
          skipSpace();
          expect(':');
          types.push_back(parseNested());
          skipSpace();
        } while (accept(','));
        expect(')');
      }
      return TupleType::createNamed("NamedTuple", std::move(fields), std::move(types));
    }
    if (name == "Optional") {  // not printed by PyTorch, but cheap to accept
      expect('(');
      TypePtr elem = parseNested();
      expect(')');
      return OptionalType::create(std::move(elem));
    }
    if (name == "Enum" && peek() == '<') {
      ++pos_;
      skipSpace();
      size_t at = pos_;
      std::string qual = parseTypeName();
      expect('>');
      TypePtr t = resolver_ ? resolver_(qual) : nullptr;
      if (!t) failAt(at, fmt::format("unknown enum type '{}'", qual));
      return t;
    }
    // Tensor, Float(...), FloatTensor, FloatTensor(...), Tensor(...)
    std::optional<ScalarType> dtype;
    bool refined = false;  // `Float(` : sizes are always known
    bool isTensor = false;
    if (name == "Tensor") {
      isTensor = true;
    } else if (name.size() > 6 && name.ends_with("Tensor")) {
      if (auto st = scalarTypeFromString(std::string_view(name).substr(0, name.size() - 6))) {
        dtype = st;
        isTensor = true;
      }
    } else if (peek() == '(') {
      if (auto st = scalarTypeFromString(name)) {
        dtype = st;
        isTensor = refined = true;
      }
    }
    if (isTensor) {
      if (peek() != '(' || (stopBeforeAlias && !refined)) {
        if (!dtype) return TensorType::get();
        return TensorType::create(dtype, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
      }
      return parseTensorDetails(dtype, refined);
    }
    return resolveNamed(name, start);
  }

  /// Plain base types, type variables and class names.
  TypePtr resolveNamed(const std::string& name, size_t start) {
    if (name.find('.') != std::string::npos) {
      if (resolver_) {
        if (TypePtr t = resolver_(name)) return t;
      }
      return ClassType::create(name, /*isModule=*/false);
    }
    if (!schemaMode_ && name == "Tensor") return TensorType::get();
    if (const TypePtr* t = lookupBaseType(name)) return *t;
    if (resolver_) {
      if (TypePtr t = resolver_(name)) return t;
    }
    // Lower-case identifiers that are not otherwise types are type variables.
    if (name[0] >= 'a' && name[0] <= 'z') return VarType::create(name);
    failAt(start, fmt::format("unknown type specifier '{}'", name));
  }

  /// After `Float` / `Tensor` / `FloatTensor`, at '(':
  ///   (3, *, 4, strides=[12, 4, 1], requires_grad=0, device=cpu)
  TypePtr parseTensorDetails(std::optional<ScalarType> dtype, bool refined) {
    expect('(');
    std::vector<std::optional<int64_t>> dims;
    std::optional<std::vector<std::optional<int64_t>>> strides;
    std::optional<bool> requiresGrad;
    std::optional<Device> device;
    bool undefined = false;
    skipSpace();
    bool empty = peek() == ')';
    if (!accept(')')) {
      do {
        skipSpace();
        if (isIdentStart(peek()) && !(peek() == 'S' && peek(1) == 'S' && peek(2) == '(')) {
          size_t at = pos_;
          std::string field = expectIdent("a tensor property");
          skipSpace();
          expect('=');
          skipSpace();
          if (field == "requires_grad") {
            if (acceptStr("True"))
              requiresGrad = true;
            else if (acceptStr("False"))
              requiresGrad = false;
            else
              requiresGrad = expectInt("0 or 1 after requires_grad=") != 0;
          } else if (field == "device") {
            size_t s = pos_;
            while (isIdentChar(peek()) || peek() == ':') ++pos_;
            try {
              device = Device::parse(text_.substr(s, pos_ - s));
            } catch (const Error& e) {
              failAt(s, e.message());
            }
          } else if (field == "strides") {
            expect('[');
            strides.emplace();
            skipSpace();
            if (!accept(']')) {
              do {
                strides->push_back(expectInt("a stride"));
                skipSpace();
              } while (accept(','));
              expect(']');
            }
          } else {
            failAt(at, fmt::format("unexpected tensor property '{}'", field));
          }
        } else {
          if (requiresGrad || device || strides)
            fail("tensor sizes must come before strides, requires_grad and device");
          if (accept('*')) {
            dims.emplace_back(std::nullopt);
          } else if (acceptStr("SS(")) {
            // A symbolic size `SS(-3)`: kept as unknown.
            expectInt("a symbolic shape id");
            expect(')');
            dims.emplace_back(std::nullopt);
          } else {
            dims.emplace_back(expectInt("a size, '*' or a tensor property"));
          }
        }
        skipSpace();
      } while (accept(','));
      expect(')');
    }
    if (acceptStr("[Undefined]")) undefined = true;
    bool sizesKnown = refined || !dims.empty() || empty;
    if (strides && strides->size() != dims.size())
      fail("strides are given for some but not all dimensions");
    std::optional<std::vector<std::optional<int64_t>>> sizes;
    if (sizesKnown) {
      sizes = dims;
      if (!strides) strides.emplace(dims.size());
    }
    return TensorType::create(dtype, std::move(sizes), std::move(strides), requiresGrad, device,
                              undefined ? std::optional<bool>(true) : std::nullopt);
  }

  /// `[]` and `?` suffixes. In schema mode, an annotation after `[]` is the list's own, and
  /// the element's annotation becomes a contained type (SchemaTypeParser::parseType).
  TypePtr parseSuffixes(TypePtr t, std::optional<AliasInfo>* alias) {
    while (true) {
      skipSpace();
      if (peek() == '[') {
        size_t save = pos_;
        ++pos_;
        skipSpace();
        if (!accept(']')) {  // `[2]` (fixed-size list) belongs to the argument parser
          pos_ = save;
          break;
        }
        t = ListType::create(std::move(t));
        if (alias) {
          std::optional<AliasInfo> container = parseAlias();
          if (*alias) {
            if (!container) {
              container.emplace();
              container->setIsWrite((*alias)->isWrite());
            }
            container->addContainedType(std::move(**alias));
          }
          *alias = std::move(container);
        }
      } else if (accept('?')) {
        t = OptionalType::create(std::move(t));
        // PyTorch prints `Tensor(a)?[]` as `Tensor?(a)[]`; read that back too.
        if (alias && !*alias && peek() == '(') *alias = parseAlias();
      } else {
        break;
      }
    }
    return t;
  }

  std::string_view text_;
  size_t pos_;
  const TypeResolver& resolver_;
  bool schemaMode_;
  int* nextAliasId_;
};

}  // namespace

TypePtr parseIRType(std::string_view text, size_t& pos, const TypeResolver& resolver,
                    bool stopBeforeAlias) {
  int unusedAliasId = 0;
  TypeGrammar g(text, pos, resolver, /*schemaMode=*/false, &unusedAliasId);
  TypePtr t = g.parseIR(stopBeforeAlias);
  pos = g.pos();
  return t;
}

namespace detail {

TypePtr parseSchemaType(std::string_view text, size_t& pos, std::optional<AliasInfo>& alias,
                        const TypeResolver& resolver, int& nextAliasId) {
  TypeGrammar g(text, pos, resolver, /*schemaMode=*/true, &nextAliasId);
  TypePtr t = g.parseSchema(alias);
  pos = g.pos();
  return t;
}

std::optional<AliasInfo> parseAliasAnnotation(std::string_view text, size_t& pos,
                                              int& nextAliasId) {
  static const TypeResolver noResolver;
  TypeGrammar g(text, pos, noResolver, /*schemaMode=*/true, &nextAliasId);
  auto info = g.parseAlias();
  pos = g.pos();
  return info;
}

}  // namespace detail

}  // namespace torchless
