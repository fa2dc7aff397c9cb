#include "frontend/lexer.h"

#include <array>
#include <cstring>
#include <string_view>
#include <unordered_map>

namespace torchless::frontend {

namespace {

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isIdentChar(char c) { return isIdentStart(c) || (c >= '0' && c <= '9'); }
bool isDec(char c) { return c >= '0' && c <= '9'; }
bool isHex(char c) { return isDec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool isOct(char c) { return c >= '0' && c <= '7'; }
bool isBin(char c) { return c == '0' || c == '1'; }
int hexValue(char c) {
  if (isDec(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

const std::unordered_map<std::string_view, TokenKind>& keywords() {
  static const std::unordered_map<std::string_view, TokenKind> map = {
      {"False", TokenKind::False},
      {"None", TokenKind::None},
      {"True", TokenKind::True},
      {"and", TokenKind::And},
      {"as", TokenKind::As},
      {"assert", TokenKind::Assert},
      {"async", TokenKind::Async},
      {"await", TokenKind::Await},
      {"break", TokenKind::Break},
      {"class", TokenKind::Class},
      {"continue", TokenKind::Continue},
      {"def", TokenKind::Def},
      {"del", TokenKind::Del},
      {"elif", TokenKind::Elif},
      {"else", TokenKind::Else},
      {"except", TokenKind::Except},
      {"finally", TokenKind::Finally},
      {"for", TokenKind::For},
      {"from", TokenKind::From},
      {"global", TokenKind::Global},
      {"if", TokenKind::If},
      {"import", TokenKind::Import},
      {"in", TokenKind::In},
      {"is", TokenKind::Is},
      {"lambda", TokenKind::Lambda},
      {"nonlocal", TokenKind::Nonlocal},
      {"not", TokenKind::Not},
      {"or", TokenKind::Or},
      {"pass", TokenKind::Pass},
      {"raise", TokenKind::Raise},
      {"return", TokenKind::Return},
      {"try", TokenKind::Try},
      {"while", TokenKind::While},
      {"with", TokenKind::With},
      {"yield", TokenKind::Yield},
  };
  return map;
}

struct Operator {
  const char* text;
  TokenKind kind;
};

// Longest first, so the first match is the longest.
// Python's limits; they also bound the parser's recursion.
constexpr size_t kMaxBrackets = 200;
constexpr size_t kMaxIndents = 100;

constexpr std::array kOperators = {
    Operator{"**=", TokenKind::PowEq},    Operator{"//=", TokenKind::FloorDivEq},
    Operator{">>=", TokenKind::RShiftEq}, Operator{"<<=", TokenKind::LShiftEq},
    Operator{"...", TokenKind::Ellipsis}, Operator{"**", TokenKind::Pow},
    Operator{"//", TokenKind::FloorDiv},  Operator{"<<", TokenKind::LShift},
    Operator{">>", TokenKind::RShift},    Operator{"<=", TokenKind::Le},
    Operator{">=", TokenKind::Ge},        Operator{"==", TokenKind::EqEq},
    Operator{"!=", TokenKind::NotEq},     Operator{"->", TokenKind::Arrow},
    Operator{"+=", TokenKind::PlusEq},    Operator{"-=", TokenKind::MinusEq},
    Operator{"*=", TokenKind::StarEq},    Operator{"/=", TokenKind::SlashEq},
    Operator{"%=", TokenKind::PercentEq}, Operator{"@=", TokenKind::AtEq},
    Operator{"&=", TokenKind::AmpEq},     Operator{"|=", TokenKind::PipeEq},
    Operator{"^=", TokenKind::CaretEq},   Operator{":=", TokenKind::Walrus},
    Operator{"+", TokenKind::Plus},       Operator{"-", TokenKind::Minus},
    Operator{"*", TokenKind::Star},       Operator{"/", TokenKind::Slash},
    Operator{"%", TokenKind::Percent},    Operator{"@", TokenKind::At},
    Operator{"&", TokenKind::Amp},        Operator{"|", TokenKind::Pipe},
    Operator{"^", TokenKind::Caret},      Operator{"~", TokenKind::Tilde},
    Operator{"<", TokenKind::Lt},         Operator{">", TokenKind::Gt},
    Operator{"(", TokenKind::LParen},     Operator{")", TokenKind::RParen},
    Operator{"[", TokenKind::LBracket},   Operator{"]", TokenKind::RBracket},
    Operator{"{", TokenKind::LBrace},     Operator{"}", TokenKind::RBrace},
    Operator{",", TokenKind::Comma},      Operator{":", TokenKind::Colon},
    Operator{";", TokenKind::Semicolon},  Operator{".", TokenKind::Dot},
    Operator{"=", TokenKind::Assign},     Operator{"!", TokenKind::Bang},
};

/// A printable description of the character at text[pos] for "invalid character" messages.
std::string describeChar(const std::string& text, size_t pos) {
  auto c = static_cast<unsigned char>(text[pos]);
  if (c < 0x20 || c == 0x7F) return fmt::format("'\\x{:02x}'", c);
  if (c < 0x80) return fmt::format("'{}'", static_cast<char>(c));
  // Decode one UTF-8 sequence for the U+XXXX form. An invalid sequence (a stray continuation
  // byte, a bad lead byte, a truncated or overlong sequence) is named by its byte and offset,
  // not by a made-up code point (issue #18).
  auto invalid = [&] {
    return fmt::format("invalid UTF-8 byte 0x{:02X} at byte offset {}", c, pos);
  };
  if (c < 0xC2 || c > 0xF4) return invalid();
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
  if (pos + n > text.size()) return invalid();
  uint32_t cp = c & (0x3F >> (n - 1));
  for (size_t i = 1; i < n; ++i) {
    auto b = static_cast<unsigned char>(text[pos + i]);
    if ((b & 0xC0) != 0x80) return invalid();
    cp = (cp << 6) | (b & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return invalid();
  return fmt::format("'{}' (U+{:04X})", text.substr(pos, n), cp);
}

}  // namespace

const char* tokenKindName(TokenKind kind) {
  switch (kind) {
#define TL_TOKEN_NAME(name, str) \
  case TokenKind::name: return str;
    TL_FORALL_TOKEN_KINDS(TL_TOKEN_NAME)
#undef TL_TOKEN_NAME
  }
  return "?";
}

void appendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string decodeStringBody(const SourcePtr& source, size_t begin, size_t end, bool raw) {
  const std::string& s = source->text();
  std::string out;
  out.reserve(end - begin);
  size_t i = begin;
  auto newlineAt = [&](size_t p) -> size_t {  // length of a line break at p, or 0
    if (p < end && s[p] == '\r') return p + 1 < end && s[p + 1] == '\n' ? 2 : 1;
    if (p < end && s[p] == '\n') return 1;
    return 0;
  };
  while (i < end) {
    char c = s[i];
    if (size_t nl = newlineAt(i)) {
      out += '\n';
      i += nl;
      continue;
    }
    if (c != '\\' || raw) {
      out += c;
      if (c == '\\' && i + 1 < end) {  // raw: a backslash still pairs with the next char
        if (size_t nl = newlineAt(i + 1)) {
          out += '\n';
          i += 1 + nl;
          continue;
        }
        out += s[i + 1];
        i += 2;
        continue;
      }
      ++i;
      continue;
    }
    size_t escStart = i;
    ++i;  // the backslash
    if (i >= end) break;
    if (size_t nl = newlineAt(i)) {  // backslash-newline: both vanish
      i += nl;
      continue;
    }
    char e = s[i++];
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
      case '0':
      case '1':
      case '2':
      case '3':
      case '4':
      case '5':
      case '6':
      case '7': {
        uint32_t v = static_cast<uint32_t>(e - '0');
        for (int k = 0; k < 2 && i < end && isOct(s[i]); ++k) v = v * 8 + (s[i++] - '0');
        appendUtf8(out, v);
        break;
      }
      case 'x':
      case 'u':
      case 'U': {
        int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t v = 0;
        for (int k = 0; k < digits; ++k) {
          if (i >= end || !isHex(s[i])) {
            throwErrorAt(SourceRange(source, escStart, std::min(i + (i < end), end)),
                         fmt::format("truncated \\{}{} escape in string literal", e,
                                     std::string(digits, 'X')));
          }
          v = v * 16 + static_cast<uint32_t>(hexValue(s[i++]));
        }
        if (v > 0x10FFFF) {
          throwErrorAt(SourceRange(source, escStart, i),
                       "illegal Unicode character in \\U escape in string literal");
        }
        appendUtf8(out, v);
        break;
      }
      case 'N':
        throwErrorAt(SourceRange(source, escStart, i),
                     "\\N{...} escapes are not supported in TorchScript string literals");
      default:  // unknown escapes keep their backslash, as in Python
        out += '\\';
        out += e;
        break;
    }
  }
  return out;
}

Lexer::Lexer(SourcePtr source)
    : source_(std::move(source)),
      text_(source_->text()),
      pos_(0),
      end_(text_.size()),
      expressionMode_(false) {
  TL_CHECK(text_.size() < UINT32_MAX, "source file '{}' is too large", source_->filename());
}

Lexer::Lexer(SourcePtr source, size_t begin, size_t end)
    : source_(std::move(source)),
      text_(source_->text()),
      pos_(begin),
      end_(end),
      expressionMode_(true) {
  atLineStart_ = false;
}

void Lexer::fail(size_t start, size_t end, const std::string& message) const {
  throwErrorAt(SourceRange(source_, start, std::min(std::max(end, start), text_.size())), message);
}

void Lexer::push(TokenKind kind, size_t start, size_t end, std::string text) {
  Token t;
  t.kind = kind;
  t.start = static_cast<uint32_t>(start);
  t.end = static_cast<uint32_t>(end);
  t.text = std::move(text);
  tokens_.push_back(std::move(t));
}

std::vector<Token> Lexer::tokenize() {
  while (true) {
    if (atLineStart_) {
      lexLineStart();
      if (atLineStart_) break;  // reached the end while skipping blank lines
    }
    if (pos_ >= end_) break;
    lexToken();
  }
  if (!brackets_.empty()) {
    const Bracket& b = brackets_.back();
    fail(b.pos, b.pos + 1, fmt::format("'{}' was never closed", b.open));
  }
  if (!expressionMode_) {
    if (!tokens_.empty() && tokens_.back().kind != TokenKind::Newline &&
        tokens_.back().kind != TokenKind::Dedent) {
      push(TokenKind::Newline, end_, end_);
    }
    for (size_t i = 1; i < indents_.size(); ++i) push(TokenKind::Dedent, end_, end_);
  }
  push(TokenKind::Eof, end_, end_);

  // Merge `is not` and `not in` into single operator tokens.
  std::vector<Token> out;
  out.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) {
    Token& t = tokens_[i];
    if (i + 1 < tokens_.size()) {
      TokenKind next = tokens_[i + 1].kind;
      TokenKind merged = TokenKind::Eof;
      if (t.kind == TokenKind::Is && next == TokenKind::Not) merged = TokenKind::IsNot;
      if (t.kind == TokenKind::Not && next == TokenKind::In) merged = TokenKind::NotIn;
      if (merged != TokenKind::Eof) {
        t.kind = merged;
        t.end = tokens_[i + 1].end;
        out.push_back(std::move(t));
        ++i;
        continue;
      }
    }
    out.push_back(std::move(t));
  }
  tokens_.clear();
  return out;
}

void Lexer::lexLineStart() {
  while (true) {
    size_t col8 = 0, col1 = 0;
    size_t lineBegin = pos_;
    while (pos_ < end_) {
      char c = text_[pos_];
      if (c == ' ') {
        ++col8;
        ++col1;
      } else if (c == '\t') {
        col8 = (col8 / 8 + 1) * 8;
        ++col1;
      } else if (c == '\f') {
        col8 = col1 = 0;
      } else {
        break;
      }
      ++pos_;
    }
    if (pos_ >= end_) return;  // trailing blank line
    char c = text_[pos_];
    if (c == '#') {
      while (pos_ < end_ && text_[pos_] != '\n' && text_[pos_] != '\r') ++pos_;
      c = peek();
    }
    if (c == '\n' || c == '\r') {  // blank or comment-only line
      pos_ += (c == '\r' && peek(1) == '\n') ? 2 : 1;
      continue;
    }
    if (pos_ >= end_) return;
    atLineStart_ = false;
    auto [top8, top1] = indents_.back();
    if (col8 == top8) {
      if (col1 != top1) fail(lineBegin, pos_, "inconsistent use of tabs and spaces in indentation");
      return;
    }
    if (col8 > top8) {
      if (col1 <= top1) fail(lineBegin, pos_, "inconsistent use of tabs and spaces in indentation");
      if (indents_.size() > kMaxIndents) fail(lineBegin, pos_, "too many levels of indentation");
      indents_.emplace_back(col8, col1);
      push(TokenKind::Indent, lineBegin, pos_);
      return;
    }
    while (indents_.size() > 1 && indents_.back().first > col8) {
      indents_.pop_back();
      push(TokenKind::Dedent, pos_, pos_);
    }
    if (indents_.back().first != col8) {
      fail(lineBegin, pos_, "unindent does not match any outer indentation level");
    }
    if (indents_.back().second != col1) {
      fail(lineBegin, pos_, "inconsistent use of tabs and spaces in indentation");
    }
    return;
  }
}

void Lexer::lexToken() {
  char c = text_[pos_];
  if (c == ' ' || c == '\t' || c == '\f') {
    ++pos_;
    return;
  }
  if (c == '#') {
    while (pos_ < end_ && text_[pos_] != '\n' && text_[pos_] != '\r') ++pos_;
    return;
  }
  if (c == '\n' || c == '\r') {
    size_t start = pos_;
    pos_ += (c == '\r' && peek(1) == '\n') ? 2 : 1;
    if (expressionMode_ || !brackets_.empty()) return;  // implicit line joining
    if (!tokens_.empty() && tokens_.back().kind != TokenKind::Newline) {
      push(TokenKind::Newline, start, pos_);
    }
    atLineStart_ = true;
    return;
  }
  if (c == '\\') {
    char n = peek(1);
    if (n == '\n' || n == '\r') {
      pos_ += (n == '\r' && peek(2) == '\n') ? 3 : 2;
      if (pos_ >= end_) fail(pos_ - 1, pos_, "unexpected end of file after line continuation");
      return;
    }
    fail(pos_, pos_ + 1, "unexpected character after line continuation character");
  }
  if (isDec(c) || (c == '.' && isDec(peek(1)))) {
    lexNumber();
    return;
  }
  if (c == '"' || c == '\'') {
    lexString(pos_, false, false);
    return;
  }
  if (isIdentStart(c)) {
    size_t start = pos_;
    while (pos_ < end_ && isIdentChar(text_[pos_])) ++pos_;
    std::string_view word(text_.data() + start, pos_ - start);
    char q = peek();
    if ((q == '"' || q == '\'') && word.size() <= 2) {
      bool raw = false, fstring = false, bytes = false, other = false;
      for (char p : word) {
        switch (p) {
          case 'r':
          case 'R': raw = true; break;
          case 'f':
          case 'F': fstring = true; break;
          case 'b':
          case 'B': bytes = true; break;
          case 'u':
          case 'U': break;
          default: other = true;
        }
      }
      bool uWithOthers = word.size() == 2 && (word.find_first_of("uU") != std::string_view::npos);
      if (!other && !uWithOthers && !(word.size() == 2 && word[0] == word[1])) {
        if (bytes) fail(start, pos_ + 1, "bytes literals are not supported in TorchScript");
        lexString(start, raw, fstring);
        return;
      }
    }
    auto it = keywords().find(word);
    if (it != keywords().end()) {
      push(it->second, start, pos_);
    } else {
      push(TokenKind::Ident, start, pos_, std::string(word));
    }
    return;
  }
  for (const Operator& op : kOperators) {
    size_t n = std::strlen(op.text);
    if (text_.compare(pos_, n, op.text) == 0 && pos_ + n <= end_) {
      size_t start = pos_;
      pos_ += n;
      if (op.kind == TokenKind::LParen || op.kind == TokenKind::LBracket ||
          op.kind == TokenKind::LBrace) {
        if (brackets_.size() >= kMaxBrackets) fail(start, pos_, "too many nested parentheses");
        brackets_.push_back({op.text[0], start});
      } else if (op.kind == TokenKind::RParen || op.kind == TokenKind::RBracket ||
                 op.kind == TokenKind::RBrace) {
        if (brackets_.empty()) fail(start, pos_, fmt::format("unmatched '{}'", op.text));
        char open = brackets_.back().open;
        char want = open == '(' ? ')' : open == '[' ? ']' : '}';
        if (want != op.text[0]) {
          fail(start, pos_,
               fmt::format("closing '{}' does not match opening '{}' at line {}", op.text, open,
                           source_->lineNumber(brackets_.back().pos)));
        }
        brackets_.pop_back();
      }
      push(op.kind, start, pos_);
      return;
    }
  }
  size_t n = 1;
  while (pos_ + n < end_ && (static_cast<unsigned char>(text_[pos_ + n]) & 0xC0) == 0x80) ++n;
  std::string what = describeChar(text_, pos_);
  if (what.starts_with("invalid UTF-8")) fail(pos_, pos_ + 1, what + " in source");
  fail(pos_, pos_ + n, fmt::format("invalid character {} in source", what));
}

void Lexer::lexNumber() {
  size_t start = pos_;
  auto badLiteral = [&](const char* what) {
    size_t e = pos_;
    while (e < end_ && isIdentChar(text_[e])) ++e;
    fail(start, std::max(e, pos_ + 1), fmt::format("invalid {} literal", what));
  };
  // Consumes digit ('_'? digit)*; returns the number of digits. A '_' must sit between digits.
  auto digits = [&](bool (*ok)(char), const char* what) {
    size_t count = 0;
    while (pos_ < end_) {
      if (ok(text_[pos_])) {
        ++pos_;
        ++count;
      } else if (text_[pos_] == '_' && count > 0 && pos_ + 1 < end_ && ok(text_[pos_ + 1])) {
        ++pos_;
      } else if (text_[pos_] == '_') {
        ++pos_;
        badLiteral(what);
      } else {
        break;
      }
    }
    return count;
  };
  char c = text_[pos_];
  char x = peek(1);
  if (c == '0' && (x == 'x' || x == 'X' || x == 'o' || x == 'O' || x == 'b' || x == 'B')) {
    pos_ += 2;
    bool (*ok)(char) = (x == 'x' || x == 'X') ? isHex : (x == 'o' || x == 'O') ? isOct : isBin;
    const char* what = (x == 'x' || x == 'X')   ? "hexadecimal"
                       : (x == 'o' || x == 'O') ? "octal"
                                                : "binary";
    if (peek() == '_') ++pos_;  // 0x_1f is valid
    size_t count = digits(ok, what);
    if (pos_ < end_ && isDec(text_[pos_])) {
      fail(pos_, pos_ + 1, fmt::format("invalid digit '{}' in {} literal", text_[pos_], what));
    }
    if (count == 0 || (pos_ < end_ && (isIdentChar(text_[pos_]) || text_[pos_] == '.'))) {
      badLiteral(what);
    }
    push(TokenKind::Number, start, pos_, text_.substr(start, pos_ - start));
    return;
  }
  bool isFloat = false;
  size_t intDigits = digits(isDec, "decimal");
  if (peek() == '.') {
    ++pos_;
    isFloat = true;
    digits(isDec, "decimal");
  }
  if (peek() == 'e' || peek() == 'E') {
    size_t save = pos_;
    ++pos_;
    if (peek() == '+' || peek() == '-') ++pos_;
    if (digits(isDec, "decimal") == 0) {
      pos_ = save;
      badLiteral("decimal");
    }
    isFloat = true;
  }
  if (peek() == 'j' || peek() == 'J') {
    ++pos_;
    isFloat = true;
  }
  if (pos_ < end_ && isIdentChar(text_[pos_])) badLiteral("decimal");
  if (!isFloat && intDigits > 1 && text_[start] == '0') {
    bool allZero = true;
    for (size_t i = start; i < pos_; ++i) allZero &= (text_[i] == '0' || text_[i] == '_');
    if (!allZero) {
      fail(start, pos_,
           "leading zeros in decimal integer literals are not permitted; use an 0o prefix for "
           "octal integers");
    }
  }
  push(TokenKind::Number, start, pos_, text_.substr(start, pos_ - start));
}

void Lexer::lexString(size_t prefixStart, bool raw, bool fstring) {
  char q = text_[pos_];
  bool triple = peek(1) == q && peek(2) == q;
  size_t quoteLen = triple ? 3 : 1;
  pos_ += quoteLen;
  size_t bodyStart = pos_;
  while (true) {
    if (pos_ >= end_) {
      fail(prefixStart, triple ? bodyStart : pos_,
           triple ? "unterminated triple-quoted string literal" : "unterminated string literal");
    }
    char c = text_[pos_];
    if (c == '\\') {
      pos_ += 2;
      if (pos_ <= end_ && text_[pos_ - 1] == '\r' && peek() == '\n') ++pos_;
      continue;
    }
    if ((c == '\n' || c == '\r') && !triple) {
      fail(prefixStart, pos_, "unterminated string literal");
    }
    if (c == q && (!triple || (peek(1) == q && peek(2) == q))) break;
    ++pos_;
  }
  size_t bodyEnd = pos_;
  pos_ += quoteLen;
  Token t;
  t.kind = fstring ? TokenKind::FString : TokenKind::String;
  t.start = static_cast<uint32_t>(prefixStart);
  t.end = static_cast<uint32_t>(pos_);
  if (fstring) {
    t.text = text_.substr(bodyStart, bodyEnd - bodyStart);
    t.bodyStart = static_cast<uint32_t>(bodyStart);
    t.raw = raw;
  } else {
    t.text = decodeStringBody(source_, bodyStart, bodyEnd, raw);
  }
  tokens_.push_back(std::move(t));
}

std::vector<Token> tokenize(const SourcePtr& source) { return Lexer(source).tokenize(); }

}  // namespace torchless::frontend
