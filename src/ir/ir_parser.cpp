// The graph text parser (torch/csrc/jit/ir/irparser.cpp in what it accepts, plus everything
// ir_printer.cpp writes). Grammar, whitespace and newlines being free between tokens except
// that a node's `# file:line:col` comment must follow its `)` on the same line:
//
//   graph     := 'graph' '(' [param {',' param}] ')' ':' stmt* 'return' '(' [var {',' var}] ')'
//                {'with' opname '=' graph}
//   param     := var [':' type]
//   stmt      := [out {',' out}] '=' opname ['[' attr {',' attr} ']'] '(' [var {',' var}] ')'
//                [', scope: ' names] [comment] block*
//              | opname ... (no outputs, no '=')
//   out       := var [':' type]
//   block     := ident '(' [param {',' param}] ')' ':' stmt* '->' '(' [var {',' var}] ')'
//   attr      := ident '=' literal
//   var       := '%' [A-Za-z0-9_.]+
//   opname    := ident '::' ident
//   literal   := number | complex | string | True | False | None | inf | nan
//              | '[' [literal {',' literal}] ']' | '(' [literal {',' literal} [',']] ')'
//              | '{' literal '}' | '{' [literal ':' literal {',' ...}] '}'
//              | 'annotate(' annotation ',' literal ')' | 'torch.device(' string ')'
//              | '<Tensor>' | '[<Tensors>]' | '<Graph>' | '[<Graphs>]' | at::print text | type
#include "ir/ir_parser.h"

#include "core/error.h"
#include "core/stack_guard.h"
#include "ir/type_parser.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace torchless {
namespace {

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isNameChar(char c) { return isIdentChar(c) || c == '.'; }

/// A parsed attribute literal, before it is given a type.
struct Lit {
  enum Kind {
    Int,
    Float,
    Complex,
    Str,
    Bool,
    None,
    List,
    Tuple,
    Dict,
    Device,
    Annotated,
    Type,
    ScalarTensor,  // {1.5}: one element; dtype and shape from the output's type
    OpaqueTensor,  // <Tensor>: data not printed; zeros of the output's type
    TensorValue,   // at::print text, dtype and shape included
    Tensors,
    Graph,
    Graphs,
  };
  Kind kind = None;
  int64_t i = 0;
  double f = 0;
  std::complex<double> c;
  std::string s;
  bool b = false;
  std::vector<Lit> elems;  // List / Tuple / Dict (k0, v0, k1, v1 ...) / Annotated (one)
  TypePtr type;            // Type, Annotated
  Tensor tensor;           // TensorValue
};

class IRParser {
 public:
  IRParser(std::string_view text, Graph* graph, std::unordered_map<std::string, Value*>& vmap,
           const ParseIROptions& options)
      : text_(text), graph_(graph), vmap_(vmap), options_(options) {
    resolver_ = [this](const std::string& name) -> TypePtr {
      if (options_.resolver)
        if (TypePtr t = options_.resolver(name)) return t;
      if (name.find('.') == std::string::npos) return nullptr;  // only qualified names
      auto it = classes_.find(name);
      if (it != classes_.end()) return it->second;
      TypePtr t = ClassType::create(name, /*isModule=*/false);
      classes_.emplace(name, t);
      return t;
    };
  }

  void parse() {
    parseGraph(graph_);
    skipWs();
    if (pos_ != text_.size()) fail(pos_, "expected the end of the graph text");
  }

 private:
  // ---- errors and lexing ----------------------------------------------------------------------

  [[noreturn]] void fail(size_t pos, const std::string& message) {
    pos = std::min(pos, text_.size());
    size_t lineStart = lineStartOf(pos);
    size_t lineEnd = text_.find('\n', lineStart);
    if (lineEnd == std::string_view::npos) lineEnd = text_.size();
    size_t line = 1;
    for (size_t i = 0; i < lineStart; ++i) line += text_[i] == '\n';
    size_t col = pos - lineStart + 1;
    std::string place = fmt::format("{}:{}", line, col);
    if (!options_.filename.empty()) place = options_.filename + ":" + place;
    std::string details(text_.substr(lineStart, lineEnd - lineStart));
    details += "\n" + std::string(col - 1, ' ') + "^";
    throw Error(message, place, details);
  }

  // The line parseType last looked at: [typeLineStart_, typeLineEnd_) ('\n' or the end).
  size_t typeLineStart_ = 1, typeLineEnd_ = 0;

  size_t lineStartOf(size_t pos) const {
    if (pos == 0) return 0;
    size_t nl = text_.rfind('\n', pos - 1);
    return nl == std::string_view::npos ? 0 : nl + 1;
  }

  std::string describeHere() const {
    if (pos_ >= text_.size()) return "the end of the text";
    size_t end = pos_;
    while (end < text_.size() && end - pos_ < 20 && text_[end] != '\n') ++end;
    return fmt::format("'{}'", text_.substr(pos_, std::max<size_t>(end - pos_, 1)));
  }

  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool startsWith(std::string_view s) const { return text_.substr(pos_).starts_with(s); }

  /// Skips spaces, newlines and comments.
  void skipWs() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  /// Skips spaces on the current line only.
  void skipInlineSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r'))
      ++pos_;
  }

  void expect(char c) {
    skipWs();
    if (peek() != c) fail(pos_, fmt::format("expected '{}' but found {}", c, describeHere()));
    ++pos_;
  }
  bool nextIf(char c) {
    skipWs();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  /// True (and consumed) if the next token is the word `w`.
  bool nextIfWord(std::string_view w) {
    skipWs();
    if (!startsWith(w) || isIdentChar(peek(w.size()))) return false;
    pos_ += w.size();
    return true;
  }
  bool atWord(std::string_view w) {
    skipWs();
    return startsWith(w) && !isIdentChar(peek(w.size()));
  }

  std::string parseIdent() {
    skipWs();
    if (!isIdentStart(peek()))
      fail(pos_, fmt::format("expected a name but found {}", describeHere()));
    size_t start = pos_;
    while (isIdentChar(peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  std::string parseVarName() {
    expect('%');
    size_t start = pos_;
    while (isNameChar(peek())) ++pos_;
    if (pos_ == start) fail(pos_, "expected a value name after '%'");
    return std::string(text_.substr(start, pos_ - start));
  }

  TypePtr parseType() {
    skipWs();
    // PyTorch's IR printer spells futures and rrefs `Future[T]` / `RRef[T]` (the schema
    // spelling is `Future(T)`); accept that form at the top of a type, with suffixes.
    for (std::string_view head : {"Future[", "RRef[", "Await["}) {
      if (!startsWith(head)) continue;
      pos_ += head.size();
      TypePtr elem = parseType();
      expect(']');
      TypePtr t = head[0] == 'F'   ? FutureType::create(elem)
                  : head[0] == 'R' ? RRefType::create(elem)
                                   : AwaitType::create(elem);
      while (true) {
        if (startsWith("[]")) {
          pos_ += 2;
          t = ListType::create(t);
        } else if (peek() == '?') {
          ++pos_;
          t = OptionalType::create(t);
        } else {
          break;
        }
      }
      skipInlineSpace();
      return t;
    }
    // The line around pos_, found once per line: a graph's inputs are all on its first line,
    // and scanning that line again for each of 100k inputs was quadratic (issue #18 part 6).
    if (pos_ < typeLineStart_ || pos_ > typeLineEnd_) {
      typeLineStart_ = lineStartOf(pos_);
      typeLineEnd_ = text_.find('\n', pos_);
      if (typeLineEnd_ == std::string_view::npos) typeLineEnd_ = text_.size();
    }
    const size_t lineStart = typeLineStart_;
    std::string_view line = text_.substr(lineStart, typeLineEnd_ - lineStart);
    size_t p = pos_ - lineStart;
    size_t start = pos_;
    try {
      TypePtr t = parseIRType(line, p, resolver_);
      pos_ = lineStart + p;
      return t;
    } catch (const Error& e) {
      fail(start, e.message());
    }
  }

  Value* findValue(const std::string& name, size_t at) {
    auto it = vmap_.find(name);
    if (it == vmap_.end()) fail(at, fmt::format("cannot find a value named '%{}'", name));
    return it->second;
  }

  void defineValue(const std::string& name, Value* v) {
    if (Value::isValidName(name)) v->setDebugName(name);
    vmap_[name] = v;
  }

  // ---- structure ------------------------------------------------------------------------------

  void parseGraph(Graph* g) {
    if (!nextIfWord("graph"))
      fail(pos_, fmt::format("expected 'graph' but found {}", describeHere()));
    expect('(');
    if (!nextIf(')')) {
      do {
        std::string name = parseVarName();
        Value* v = g->addInput();
        v->setType(nextIf(':') ? parseType() : TensorType::get());
        defineValue(name, v);
      } while (nextIf(','));
      expect(')');
    }
    expect(':');
    parseStatements(g->block(), /*topLevel=*/true);
    nextIfWord("return");
    for (Value* v : parseVarList()) g->registerOutput(v);
    // Subgraphs of fusion groups: `with prim::FusionGroup_0 = graph(...)`.
    while (atWord("with")) {
      nextIfWord("with");
      size_t at = pos_;
      std::string name = parseOpName();
      expect('=');
      auto it = groups_.find(name);
      if (it == groups_.end()) fail(at, fmt::format("no node is named {}", name));
      auto sub = std::make_shared<Graph>();
      std::unordered_map<std::string, Value*> subMap;
      IRParser inner(text_, sub.get(), subMap, options_);
      inner.pos_ = pos_;
      inner.parseGraph(sub.get());
      pos_ = inner.pos_;
      size_t us = name.rfind('_');
      Node* n = it->second->replaceWithNewSymbol(Symbol::fromQualString(name.substr(0, us)));
      n->g_(attr::Subgraph, sub);
    }
  }

  std::vector<Value*> parseVarList() {
    std::vector<Value*> vs;
    expect('(');
    if (nextIf(')')) return vs;
    do {
      skipWs();
      size_t at = pos_;
      vs.push_back(findValue(parseVarName(), at));
    } while (nextIf(','));
    expect(')');
    return vs;
  }

  void parseStatements(Block* b, bool topLevel) {
    while (true) {
      skipWs();
      if (pos_ >= text_.size())
        fail(pos_, topLevel ? "expected 'return' before the end of the text"
                            : "expected '->' before the end of the text");
      if (topLevel ? atWord("return") : startsWith("->")) return;
      parseStatement(b);
    }
  }

  std::string parseOpName() {
    std::string ns = parseIdent();
    if (!startsWith("::"))
      fail(pos_, fmt::format("expected '::' after '{}' in an operator name", ns));
    pos_ += 2;
    if (!isIdentStart(peek())) fail(pos_, "expected an operator name after '::'");
    return ns + "::" + parseIdent();
  }

  void parseStatement(Block* b) {
    struct Out {
      std::string name;
      TypePtr type;
    };
    std::vector<Out> outs;
    skipWs();
    if (peek() == '%') {
      do {
        Out o;
        o.name = parseVarName();
        if (nextIf(':')) o.type = parseType();
        outs.push_back(std::move(o));
      } while (nextIf(','));
      expect('=');
    } else {
      nextIf('=');  // a node without outputs prints as ` = prim::Print(...)`
    }
    skipWs();
    std::string opname = parseOpName();
    Node* n = graph_->create(Symbol::fromQualString(opname), outs.size());
    for (size_t i = 0; i < outs.size(); ++i)
      n->output(i)->setType(outs[i].type ? outs[i].type : TensorType::get());
    skipWs();
    if (peek() == '[') parseAttributes(n);
    expect('(');
    if (!nextIf(')')) {
      do {
        skipWs();
        size_t at = pos_;
        n->addInput(findValue(parseVarName(), at));
      } while (nextIf(','));
      expect(')');
    }
    for (size_t i = 0; i < outs.size(); ++i) defineValue(outs[i].name, n->output(i));
    b->appendNode(n);
    parseScope(n);
    parseLocationComment(n);
    // Fusion-group style names (`prim::FusionGroup_0`) may get a subgraph from a `with` clause.
    size_t us = opname.rfind('_');
    if (us != std::string::npos && us + 1 < opname.size() &&
        opname.find_first_not_of("0123456789", us + 1) == std::string::npos)
      groups_[opname] = n;
    // Nested blocks: `blockN(...):` lines.
    while (true) {
      skipWs();
      size_t save = pos_;
      if (!isIdentStart(peek())) break;
      std::string word = parseIdent();
      skipWs();
      if (peek() != '(' || !word.starts_with("block")) {
        pos_ = save;
        break;
      }
      parseBlock(n->addBlock());
    }
  }

  void parseBlock(Block* b) {
    // Note [Stack guard]: a count, so that every later walk of the graph (verifier, printer,
    // passes, export, destruction) stays well inside the stack, and the stack itself as a net.
    if (blockDepth_ >= kMaxBlockDepth || stackNearlyExhausted())
      fail(pos_, fmt::format("blocks nested too deeply (more than {} levels)", kMaxBlockDepth));
    ++blockDepth_;
    struct Leave {
      size_t& d;
      ~Leave() { --d; }
    } leave{blockDepth_};
    expect('(');
    if (!nextIf(')')) {
      do {
        std::string name = parseVarName();
        Value* v = b->addInput();
        v->setType(nextIf(':') ? parseType() : TensorType::get());
        defineValue(name, v);
      } while (nextIf(','));
      expect(')');
    }
    expect(':');
    parseStatements(b, /*topLevel=*/false);
    pos_ += 2;  // "->"
    for (Value* v : parseVarList()) b->registerOutput(v);
  }

  /// `, scope: __module.layer1/__module.layer1.0` after a node (traced graphs print it):
  /// the node's scope, one Scope per `/`-separated name.
  void parseScope(Node* n) {
    skipInlineSpace();
    if (text_.compare(pos_, 8, ", scope:") != 0) return;
    pos_ += 8;
    skipInlineSpace();
    size_t end = pos_;
    while (end < text_.size() && text_[end] != '#' && text_[end] != '\n') ++end;
    std::string_view names = text_.substr(pos_, end - pos_);
    while (!names.empty() && (names.back() == ' ' || names.back() == '\r')) names.remove_suffix(1);
    pos_ = end;
    ScopePtr scope = std::make_shared<Scope>();
    while (!names.empty()) {
      size_t slash = names.find('/');
      std::string_view part = names.substr(0, slash);
      if (!part.empty()) scope = scope->push(Symbol::scope(part));
      if (slash == std::string_view::npos) break;
      names.remove_prefix(slash + 1);
    }
    n->setScope(scope);
  }

  /// `# file:line:col` right after a node, on its line.
  void parseLocationComment(Node* n) {
    skipInlineSpace();
    if (peek() != '#') return;
    size_t start = pos_ + 1;
    size_t end = text_.find('\n', start);
    if (end == std::string_view::npos) end = text_.size();
    pos_ = end;
    std::string_view c = text_.substr(start, end - start);
    while (!c.empty() && (c.front() == ' ' || c.front() == '\t')) c.remove_prefix(1);
    while (!c.empty() && (c.back() == ' ' || c.back() == '\r' || c.back() == '\t'))
      c.remove_suffix(1);
    auto& cached = locations_[std::string(c)];
    if (!cached) {
      size_t c2 = c.rfind(':');
      if (c2 == std::string_view::npos || c2 == 0) return;
      size_t c1 = c.rfind(':', c2 - 1);
      if (c1 == std::string_view::npos || c1 == 0) return;
      auto digits = [](std::string_view s) {
        return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
      };
      std::string_view lineS = c.substr(c1 + 1, c2 - c1 - 1), colS = c.substr(c2 + 1);
      if (!digits(lineS) || !digits(colS)) return;
      // A number past 64 bits is no location either (std::stoull threw out_of_range: fuzz_ir).
      auto number = [](std::string_view s, decltype(SourceLocation::line)& out) {
        const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
        return r.ec == std::errc() && r.ptr == s.data() + s.size();
      };
      auto loc = std::make_shared<SourceLocation>();
      if (!number(lineS, loc->line) || !number(colS, loc->col)) return;
      loc->filename = std::string(c.substr(0, c1));
      cached = loc;
    }
    n->setSourceRange(cached);
  }

  // ---- attributes -------------------------------------------------------------------------------

  void parseAttributes(Node* n) {
    expect('[');
    if (nextIf(']')) return;
    do {
      skipWs();
      std::string name = parseIdent();
      expect('=');
      skipWs();
      size_t at = pos_;
      Lit lit = parseTopLiteral();
      TypePtr expected;
      if (n->kind() == prim::Constant && name == "value" && n->outputs().size() == 1)
        expected = n->output()->type();
      n->setAttribute(Symbol::attr(name), toAttribute(lit, expected, at));
    } while (nextIf(','));
    expect(']');
  }

  Lit parseTopLiteral() {
    if (looksLikeAtPrint()) return parseAtPrint();
    return parseLiteral();
  }

  Lit parseLiteral() {
    skipWs();
    size_t at = pos_;
    char c = peek();
    Lit r;
    if (c == '"' || c == '\'') {
      r.kind = Lit::Str;
      r.s = parseString();
      return r;
    }
    if (startsWith("[<Tensors>]")) {
      pos_ += 11;
      r.kind = Lit::Tensors;
      return r;
    }
    if (startsWith("[<Graphs>]")) {
      pos_ += 10;
      r.kind = Lit::Graphs;
      return r;
    }
    if (startsWith("<Tensor>")) {
      pos_ += 8;
      r.kind = Lit::OpaqueTensor;
      return r;
    }
    if (startsWith("<Graph>")) {
      pos_ += 7;
      r.kind = Lit::Graph;
      return r;
    }
    if (c == '[' || c == '(') {
      r.kind = c == '[' ? Lit::List : Lit::Tuple;
      char close = c == '[' ? ']' : ')';
      ++pos_;
      if (nextIf(close)) return r;
      do {
        skipWs();
        if (r.kind == Lit::Tuple && peek() == ')') break;  // `(1,)`
        r.elems.push_back(parseLiteral());
      } while (nextIf(','));
      expect(close);
      return r;
    }
    if (c == '{') {
      ++pos_;
      r.kind = Lit::Dict;
      if (nextIf('}')) return r;
      Lit first = parseLiteral();
      if (!nextIf(':')) {
        expect('}');
        if (first.kind != Lit::Int && first.kind != Lit::Float && first.kind != Lit::Bool)
          fail(at, "expected a number inside a one-element tensor constant {...}");
        first.kind = first.kind == Lit::Float ? Lit::Float : Lit::Int;
        Lit t;
        t.kind = Lit::ScalarTensor;
        t.elems.push_back(std::move(first));
        return t;
      }
      r.elems.push_back(std::move(first));
      r.elems.push_back(parseLiteral());
      while (nextIf(',')) {
        r.elems.push_back(parseLiteral());
        expect(':');
        r.elems.push_back(parseLiteral());
      }
      expect('}');
      return r;
    }
    if (c == '-' || c == '.' || isDigit(c)) return parseNumber();
    if (nextIfWord("True") || nextIfWord("False")) {
      r.kind = Lit::Bool;
      r.b = text_[at] == 'T';
      return r;
    }
    if (nextIfWord("None")) return r;
    if (atWord("inf") || atWord("nan")) return parseNumber();
    if (startsWith("annotate(")) {
      pos_ += 9;
      size_t typeStart = pos_;
      int depth = 0;
      while (pos_ < text_.size()) {
        char ch = text_[pos_];
        if (ch == '[' || ch == '(') ++depth;
        if (ch == ']' || ch == ')') --depth;
        if (ch == ',' && depth == 0) break;
        ++pos_;
      }
      if (peek() != ',') fail(typeStart, "expected ',' after the type in annotate(...)");
      std::string_view typeText = text_.substr(typeStart, pos_ - typeStart);
      ++pos_;
      r.kind = Lit::Annotated;
      try {
        r.type = parseTypeAnnotation(typeText, resolver_);
      } catch (const Error& e) {
        fail(typeStart, e.message());
      }
      r.elems.push_back(parseLiteral());
      expect(')');
      return r;
    }
    if (startsWith("torch.device(")) {
      pos_ += 13;
      skipWs();
      size_t sAt = pos_;
      std::string dev = parseString();
      expect(')');
      r.kind = Lit::Device;
      try {
        Device::parse(dev);
      } catch (const Error& e) {
        fail(sAt, e.message());
      }
      r.s = dev;
      return r;
    }
    if (isIdentStart(c)) {
      r.kind = Lit::Type;
      r.type = parseType();
      return r;
    }
    fail(at, fmt::format("could not parse a literal at {}", describeHere()));
  }

  std::string parseString() {
    char quote = peek();
    size_t at = pos_;
    ++pos_;
    std::string s;
    while (true) {
      if (pos_ >= text_.size() || text_[pos_] == '\n') fail(at, "unterminated string literal");
      char c = text_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        s += c;
        continue;
      }
      if (pos_ >= text_.size()) fail(at, "unterminated string literal");
      char e = text_[pos_++];
      switch (e) {
        case 'n': s += '\n'; break;
        case 't': s += '\t'; break;
        case 'r': s += '\r'; break;
        case 'a': s += '\a'; break;
        case 'b': s += '\b'; break;
        case 'f': s += '\f'; break;
        case 'v': s += '\v'; break;
        case '\\': s += '\\'; break;
        case '\'': s += '\''; break;
        case '"': s += '"'; break;
        default: {
          // c10's octal escape: three characters '0'+d, d possibly negative for bytes >= 0x80
          // (see quoteIRString).
          if (pos_ + 1 >= text_.size()) fail(pos_ - 2, "bad escape sequence");
          int d0 = e - '0', d1 = text_[pos_] - '0', d2 = text_[pos_ + 1] - '0';
          if (d0 < -2 || d0 > 3 || d1 < -7 || d1 > 7 || d2 < -7 || d2 > 7)
            fail(pos_ - 2, fmt::format("unknown escape sequence '\\{}'", e));
          pos_ += 2;
          s += static_cast<char>(static_cast<signed char>(d0 * 64 + d1 * 8 + d2));
        }
      }
    }
    return s;
  }

  /// A number: int, float (`1.`, `1e+20`, `inf`, `nan`), or complex (`2.+3.j`, `3.j`).
  Lit parseNumber() {
    skipWs();
    size_t at = pos_;
    auto scan = [&]() -> std::pair<std::string, bool> {
      size_t start = pos_;
      bool isFloat = false;
      if (peek() == '-' || peek() == '+') ++pos_;
      if (startsWith("inf") || startsWith("nan")) {
        pos_ += 3;
        return {std::string(text_.substr(start, pos_ - start)), true};
      }
      while (isDigit(peek())) ++pos_;
      if (peek() == '.') {
        isFloat = true;
        ++pos_;
        while (isDigit(peek())) ++pos_;
      }
      if ((peek() == 'e' || peek() == 'E') &&
          (isDigit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && isDigit(peek(2))))) {
        isFloat = true;
        pos_ += 2;
        while (isDigit(peek())) ++pos_;
      }
      std::string s(text_.substr(start, pos_ - start));
      if (s.empty() || s == "-" || s == "+" || s == "." || s == "-.")
        fail(start, fmt::format("expected a number but found {}", describeHere()));
      return {s, isFloat};
    };
    auto toDouble = [&](const std::string& s) {
      std::string t = s;
      if (!t.empty() && t[0] == '+') t.erase(0, 1);
      bool neg = !t.empty() && t[0] == '-';
      std::string_view body = neg ? std::string_view(t).substr(1) : std::string_view(t);
      if (body == "inf")
        return neg ? -std::numeric_limits<double>::infinity()
                   : std::numeric_limits<double>::infinity();
      if (body == "nan") return std::numeric_limits<double>::quiet_NaN();
      double d = 0;
      auto res = std::from_chars(t.data(), t.data() + t.size(), d);
      if (res.ec != std::errc() || res.ptr != t.data() + t.size())
        fail(at, fmt::format("bad number '{}'", s));
      return d;
    };
    auto [first, firstFloat] = scan();
    Lit r;
    if (peek() == 'j') {
      ++pos_;
      r.kind = Lit::Complex;
      r.c = {0, toDouble(first)};
      return r;
    }
    if ((peek() == '+' || peek() == '-') &&
        (isDigit(peek(1)) || peek(1) == '.' || text_.substr(pos_ + 1).starts_with("inf") ||
         text_.substr(pos_ + 1).starts_with("nan"))) {
      size_t save = pos_;
      auto [second, secondFloat] = scan();
      if (peek() == 'j') {
        ++pos_;
        r.kind = Lit::Complex;
        r.c = {toDouble(first), toDouble(second)};
        return r;
      }
      pos_ = save;
    }
    if (firstFloat) {
      r.kind = Lit::Float;
      r.f = toDouble(first);
      return r;
    }
    r.kind = Lit::Int;
    auto res = std::from_chars(first.data(), first.data() + first.size(), r.i);
    if (res.ec != std::errc() || res.ptr != first.data() + first.size())
      fail(at, fmt::format("integer '{}' is out of range", first));
    return r;
  }

  // ---- at::print tensors ------------------------------------------------------------------------

  /// Whether the attribute value at pos_ is at::print text: numbers and headers, then
  /// `[ CPUFloatType{2,3} ]`.
  bool looksLikeAtPrint() {
    skipInlineSpace();
    size_t i = pos_;
    while (i < text_.size()) {
      char c = text_[i];
      if (c == '[' || c == ']' || c == '"' || c == '\n' || c == '<' || c == '{') break;
      ++i;
    }
    if (i + 2 >= text_.size() || text_[i] != '[' || text_[i + 1] != ' ') return false;
    size_t j = i + 2;
    size_t nameStart = j;
    while (j < text_.size() && isIdentChar(text_[j])) ++j;
    std::string_view name = text_.substr(nameStart, j - nameStart);
    return name.ends_with("Type") && j < text_.size() && text_[j] == '{';
  }

  Lit parseAtPrint() {
    size_t at = pos_;
    size_t bracket = text_.find("[ ", pos_);
    std::string_view body = text_.substr(pos_, bracket - pos_);
    pos_ = bracket + 2;
    size_t nameStart = pos_;
    while (isIdentChar(peek())) ++pos_;
    std::string name(text_.substr(nameStart, pos_ - nameStart));
    name.resize(name.size() - 4);  // "Type"
    for (const char* dev : {"CPU", "CUDA", "MPS", "Meta", "XPU"}) {
      if (name.starts_with(dev) && scalarTypeFromString(name.substr(std::strlen(dev)))) {
        name = name.substr(std::strlen(dev));
        break;
      }
    }
    auto dtype = scalarTypeFromString(name);
    if (!dtype) fail(nameStart, fmt::format("unknown tensor type '{}Type'", name));
    expect('{');
    IntList sizes;
    if (!nextIf('}')) {
      do {
        Lit d = parseNumber();
        if (d.kind != Lit::Int || d.i < 0) fail(pos_, "expected a size");
        sizes.push_back(d.i);
      } while (nextIf(','));
      expect('}');
    }
    expect(']');

    // The body: [ "(i,j,.,.) =" ] [ "Columns a to b" ] [ scale "*" ] numbers ...
    std::vector<std::string> tokens;
    {
      size_t k = 0;
      while (k < body.size()) {
        while (k < body.size() && (body[k] == ' ' || body[k] == '\t')) ++k;
        size_t s = k;
        while (k < body.size() && body[k] != ' ' && body[k] != '\t') ++k;
        if (k > s) tokens.emplace_back(body.substr(s, k - s));
      }
    }
    // Issue #18: the size comes from the text, so it is checked before anything is allocated.
    // A constant may leave values out (they are zeros), but not more than kMaxUnbackedElements.
    int64_t numel = 1;
    for (int64_t s : sizes) {
      if (s != 0 && numel > std::numeric_limits<int64_t>::max() / s)
        fail(at, "tensor constant size overflows");
      numel *= s;
    }
    constexpr int64_t kMaxUnbackedElements = int64_t{1} << 24;
    if (numel > kMaxUnbackedElements && numel > static_cast<int64_t>(tokens.size()))
      fail(at, fmt::format("tensor constant of {} elements is larger than the {} values written "
                           "for it (the limit for unwritten values is {})",
                           numel, tokens.size(), kMaxUnbackedElements));
    std::vector<double> values(static_cast<size_t>(std::max<int64_t>(numel, 0)), 0.0);
    const bool integral = isIntegralType(*dtype, /*includeBool=*/false);
    std::vector<std::pair<size_t, int64_t>> exact;  // integers as written (makeTensor)
    int64_t rows = 1, cols = 1;
    if (sizes.size() == 1) cols = sizes[0];
    if (sizes.size() >= 2) {
      rows = sizes[sizes.size() - 2];
      cols = sizes[sizes.size() - 1];
    }
    int64_t sliceBase = 0, firstCol = 0, lastCol = cols - 1, idxInGroup = 0;
    double scale = 1;
    auto number = [&](const std::string& t) {
      try {
        size_t used = 0;
        double d = std::stod(t, &used);
        if (used != t.size()) fail(at, fmt::format("bad number '{}' in a tensor constant", t));
        return d;
      } catch (const std::logic_error&) {
        if (t == "inf") return std::numeric_limits<double>::infinity();
        if (t == "-inf") return -std::numeric_limits<double>::infinity();
        if (t == "nan" || t == "-nan") return std::numeric_limits<double>::quiet_NaN();
        fail(at, fmt::format("bad number '{}' in a tensor constant", t));
      }
    };
    // Indices in headers: a bad or 64-bit-overflowing one is an error (std::stoll threw).
    auto integer = [&](const std::string& t) {
      int64_t v = 0;
      const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
      if (r.ec != std::errc() || r.ptr != t.data() + t.size() || v > (int64_t{1} << 62))
        fail(at, fmt::format("bad index '{}' in a tensor constant", t));
      return v;
    };
    for (size_t k = 0; k < tokens.size(); ++k) {
      const std::string& t = tokens[k];
      if (t.front() == '(' && t.ends_with(".,.)")) {
        // Leading indices, 1-based, first dim fastest in print order; compute the offset.
        std::vector<int64_t> idx;
        size_t p = 1;
        while (p < t.size() && isDigit(t[p])) {
          size_t q = p;
          while (q < t.size() && isDigit(t[q])) ++q;
          idx.push_back(integer(t.substr(p, q - p)) - 1);
          p = q + 1;
        }
        if (idx.size() + 2 != sizes.size()) fail(at, "malformed tensor constant header");
        sliceBase = 0;
        int64_t stride = rows * cols;
        for (size_t d = idx.size(); d-- > 0;) {
          sliceBase += idx[d] * stride;
          stride *= sizes[d];
        }
        if (k + 1 < tokens.size() && tokens[k + 1] == "=") ++k;
        firstCol = 0;
        lastCol = cols - 1;
        idxInGroup = 0;
        scale = 1;
        continue;
      }
      if (t == "Columns" && k + 3 < tokens.size()) {
        firstCol = integer(tokens[k + 1]) - 1;
        lastCol = integer(tokens[k + 3]) - 1;
        idxInGroup = 0;
        k += 3;
        continue;
      }
      if (k + 1 < tokens.size() && tokens[k + 1] == "*") {
        scale = number(t);
        ++k;
        continue;
      }
      double v = number(t) * scale;
      int64_t width = lastCol - firstCol + 1;
      if (width <= 0) fail(at, "malformed tensor constant");
      int64_t r = idxInGroup / width, cc = firstCol + idxInGroup % width;
      int64_t flat = sizes.size() == 1 ? idxInGroup : sliceBase + r * cols + cc;
      if (flat < 0 || flat >= numel) fail(at, "too many values in a tensor constant");
      values[static_cast<size_t>(flat)] = v;
      int64_t iv = 0;
      if (integral && scale == 1) {
        const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), iv);
        if (ec == std::errc() && end == t.data() + t.size())
          exact.emplace_back(static_cast<size_t>(flat), iv);
      }
      ++idxInGroup;
    }
    Lit lit;
    lit.kind = Lit::TensorValue;
    lit.tensor = makeTensor(*dtype, sizes, values, at, exact);
    return lit;
  }

  /// `exact`: (index, value) of the values written as integers, kept exact for an integer
  /// dtype (a double holds int64 values only up to 2^53).
  Tensor makeTensor(ScalarType dtype, const IntList& sizes, const std::vector<double>& values,
                    size_t at, const std::vector<std::pair<size_t, int64_t>>& exact = {}) {
    try {
      Tensor t = Tensor::empty(sizes, dtype);
      dispatchDtype(dtype, [&](auto tag) {
        using T = decltype(tag);
        T* p = t.data<T>();
        const auto n = static_cast<size_t>(t.numel());  // empty() does not zero-fill
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          // A value the integer type cannot hold (1e+37 in a Long tensor, nan, 300 in a Byte
          // tensor) is the text's error; converting it would be undefined behaviour (found by
          // fuzz_ir).
          auto doesNotFit = [&](const auto& v) {
            fail(at, fmt::format("tensor value {} does not fit {}", v, toString(dtype)));
          };
          std::vector<char> isExact(exact.empty() ? 0 : n, 0);
          for (const auto& [k, v] : exact) {
            if (k >= n) continue;
            if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
              doesNotFit(v);
            p[k] = static_cast<T>(v);
            isExact[k] = 1;
          }
          const double lo = static_cast<double>(std::numeric_limits<T>::min()),
                       end = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
          for (size_t i = 0; i < n; ++i) {
            if (!isExact.empty() && isExact[i]) continue;
            const double v = i < values.size() ? values[i] : 0.0;
            if (!(v >= lo && v < end)) doesNotFit(v);
            p[i] = static_cast<T>(v);
          }
        } else {
          for (size_t i = 0; i < n; ++i) p[i] = i < values.size() ? static_cast<T>(values[i]) : T();
        }
      });
      return t;
    } catch (const Error& e) {
      fail(at, e.message());
    }
  }

  // ---- typing literals
  // ---------------------------------------------------------------------------

  TypePtr inferType(const Lit& l) {
    switch (l.kind) {
      case Lit::Int: return IntType::get();
      case Lit::Float: return FloatType::get();
      case Lit::Complex: return ComplexType::get();
      case Lit::Str: return StringType::get();
      case Lit::Bool: return BoolType::get();
      case Lit::None: return NoneType::get();
      case Lit::Device: return DeviceObjType::get();
      case Lit::Annotated: return l.type;
      case Lit::ScalarTensor:
      case Lit::OpaqueTensor:
      case Lit::TensorValue: return TensorType::get();
      case Lit::List: {
        if (l.elems.empty()) return ListType::ofInts();
        TypePtr t = inferType(l.elems[0]);
        for (size_t i = 1; i < l.elems.size(); ++i)
          if (auto u = unifyTypes(t, inferType(l.elems[i]))) t = *u;
        return ListType::create(t);
      }
      case Lit::Tuple: {
        std::vector<TypePtr> ts;
        for (const auto& e : l.elems) ts.push_back(inferType(e));
        return TupleType::create(std::move(ts));
      }
      case Lit::Dict:
        if (l.elems.empty()) return DictType::create(StringType::get(), TensorType::get());
        return DictType::create(inferType(l.elems[0]), inferType(l.elems[1]));
      default: return AnyType::get();
    }
  }

  Tensor scalarTensor(const Lit& l, const TypePtr& expected, size_t at) {
    const Lit& v = l.elems.at(0);
    double x = v.kind == Lit::Float ? v.f : static_cast<double>(v.kind == Lit::Bool ? v.b : v.i);
    const auto* tt = expected ? expected->cast<TensorType>() : nullptr;
    ScalarType dtype = v.kind == Lit::Float ? ScalarType::Double : ScalarType::Long;
    IntList sizes;
    if (tt && tt->scalarType()) dtype = *tt->scalarType();
    if (tt && tt->sizes()) {
      for (const auto& s : *tt->sizes()) sizes.push_back(s.value_or(1));
    }
    if (v.kind == Lit::Int) return makeTensor(dtype, sizes, {x}, at, {{0, v.i}});
    return makeTensor(dtype, sizes, {x}, at);
  }

  Tensor opaqueTensor(const TypePtr& expected, size_t at) {
    const auto* tt = expected ? expected->cast<TensorType>() : nullptr;
    if (!tt || !tt->scalarType() || !tt->sizes())
      fail(at, "<Tensor> needs the output to have a complete tensor type (dtype and sizes)");
    IntList sizes;
    for (const auto& s : *tt->sizes()) {
      if (!s) fail(at, "<Tensor> needs the output to have known sizes");
      sizes.push_back(*s);
    }
    return makeTensor(*tt->scalarType(), sizes, {}, at);
  }

  IValue toIValue(const Lit& l, const TypePtr& expected, size_t at) {
    TypeKind ek = expected ? expected->kind() : TypeKind::AnyType;
    if (ek == TypeKind::OptionalType && l.kind != Lit::None)
      return toIValue(l, expected->expect<OptionalType>().getElementType(), at);
    switch (l.kind) {
      case Lit::Int:
        if (ek == TypeKind::FloatType) return IValue(static_cast<double>(l.i));
        if (ek == TypeKind::BoolType) return IValue(l.i != 0);
        return IValue(l.i);
      case Lit::Float: return IValue(l.f);
      case Lit::Complex: return IValue(l.c);
      case Lit::Str:
        if (ek == TypeKind::DeviceObjType) return IValue(Device::parse(l.s));
        return IValue(l.s);
      case Lit::Bool: return IValue(l.b);
      case Lit::None: return IValue();
      case Lit::Device: return IValue(Device::parse(l.s));
      case Lit::Annotated: return toIValue(l.elems.at(0), l.type, at);
      case Lit::ScalarTensor: return IValue(scalarTensor(l, expected, at));
      case Lit::OpaqueTensor: return IValue(opaqueTensor(expected, at));
      case Lit::TensorValue: return IValue(l.tensor);
      case Lit::List: {
        TypePtr elem = ek == TypeKind::ListType ? expected->expect<ListType>().getElementType()
                                                : inferType(l)->expect<ListType>().getElementType();
        std::vector<IValue> xs;
        for (const auto& e : l.elems) xs.push_back(toIValue(e, elem, at));
        return IValue(ListImpl::create(elem, std::move(xs)));
      }
      case Lit::Tuple: {
        const auto* tt = ek == TypeKind::TupleType ? &expected->expect<TupleType>() : nullptr;
        if (tt && tt->elements().size() != l.elems.size()) tt = nullptr;
        std::vector<IValue> xs;
        for (size_t i = 0; i < l.elems.size(); ++i)
          xs.push_back(toIValue(l.elems[i], tt ? tt->elements()[i] : nullptr, at));
        return IValue(TupleImpl::create(std::move(xs), tt ? expected : nullptr));
      }
      case Lit::Dict: {
        TypePtr kt, vt;
        if (ek == TypeKind::DictType) {
          kt = expected->expect<DictType>().getKeyType();
          vt = expected->expect<DictType>().getValueType();
        } else {
          auto dt = inferType(l);
          kt = dt->expect<DictType>().getKeyType();
          vt = dt->expect<DictType>().getValueType();
        }
        auto d = DictImpl::create(kt, vt);
        for (size_t i = 0; i + 1 < l.elems.size(); i += 2)
          d->insertOrAssign(toIValue(l.elems[i], kt, at), toIValue(l.elems[i + 1], vt, at));
        return IValue(d);
      }
      default: fail(at, "this literal is not a constant value");
    }
  }

  AttributeValue toAttribute(const Lit& l, const TypePtr& expected, size_t at) {
    TypeKind ek = expected ? expected->kind() : TypeKind::AnyType;
    switch (l.kind) {
      case Lit::Int:
        if (ek == TypeKind::FloatType) return AttributeValue(static_cast<double>(l.i));
        return AttributeValue(l.i);
      case Lit::Bool: return AttributeValue(int64_t(l.b ? 1 : 0));
      case Lit::Float: return AttributeValue(l.f);
      case Lit::Complex: return AttributeValue(l.c);
      case Lit::Str: return AttributeValue(l.s);
      case Lit::Type: return AttributeValue(l.type);
      case Lit::Graph: return AttributeValue(std::shared_ptr<Graph>());
      case Lit::Graphs: return AttributeValue(std::vector<std::shared_ptr<Graph>>());
      case Lit::Tensors: return AttributeValue(std::vector<Tensor>());
      case Lit::ScalarTensor: return AttributeValue(scalarTensor(l, expected, at));
      case Lit::OpaqueTensor: return AttributeValue(opaqueTensor(expected, at));
      case Lit::TensorValue: return AttributeValue(l.tensor);
      case Lit::List: {
        if (l.elems.empty() && ek != TypeKind::ListType)
          return AttributeValue(std::vector<int64_t>());
        if (!l.elems.empty() && l.elems[0].kind == Lit::Type) {
          std::vector<TypePtr> tys;
          for (const auto& e : l.elems) {
            if (e.kind != Lit::Type) fail(at, "mixed list of types and values");
            tys.push_back(e.type);
          }
          return AttributeValue(std::move(tys));
        }
        return AttributeValue(toIValue(l, expected, at));
      }
      default: return AttributeValue(toIValue(l, expected, at));
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  static constexpr size_t kMaxBlockDepth = 5000;
  size_t blockDepth_ = 0;
  Graph* graph_;
  std::unordered_map<std::string, Value*>& vmap_;
  const ParseIROptions& options_;
  TypeResolver resolver_;
  std::unordered_map<std::string, TypePtr> classes_;
  std::unordered_map<std::string, SourceLocationPtr> locations_;
  std::unordered_map<std::string, Node*> groups_;
};

}  // namespace

void parseIR(std::string_view text, Graph* graph, std::unordered_map<std::string, Value*>& vmap,
             const ParseIROptions& options) {
  // Binary data (an ONNX model, a zip, an image) is refused before it is tokenized, so the
  // message does not quote its bytes.
  for (size_t i = 0; i < text.size() && i < 4096; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
      throw Error(fmt::format("not a graph in PyTorch's text format: byte {} is binary (0x{:02x}); "
                              "graph text starts with 'graph(' (an ONNX model or an archive?)",
                              i, c),
                  options.filename);
  }
  IRParser(text, graph, vmap, options).parse();
}

void parseIR(std::string_view text, Graph* graph, const ParseIROptions& options) {
  std::unordered_map<std::string, Value*> vmap;
  parseIR(text, graph, vmap, options);
}

}  // namespace torchless
