#pragma once
// The TorchScript lexer: Python 3's tokens.
//
// Produces the whole token stream of a Source at once:
// - NEWLINE at the end of each logical line, INDENT/DEDENT when the indentation of a logical
//   line changes (tabs advance to the next multiple of 8; mixing tabs and spaces ambiguously is
//   an error, as in Python), nothing for blank or comment-only lines. The stream ends with a
//   NEWLINE (if the last line has tokens), the pending DEDENTs and EOF.
// - Inside (), [] and {} newlines and indentation are ignored; a backslash at the end of a line
//   joins it to the next. "\r\n" and "\r" end lines like "\n".
// - Strings in every form: '...', "...", '''...''', """...""", prefixes r/u/f/rf (any case),
//   escapes (\n \t \\ \' \" \a \b \f \v \r, octal \0-\377, \xHH, \uXXXX, \UXXXXXXXX, a
//   backslash-newline); Token::text holds the decoded UTF-8 value. Adjacent literals are
//   concatenated by the parser. f-strings are one token (kind FString) whose text is the raw
//   body; the parser splits it into parts. Byte strings are rejected.
// - Numbers keep their spelling in Token::text (Const trees parse it): decimal, 0x, 0o, 0b,
//   '_' separators, floats (`1.`, `.5`, `1e-3`), imaginary `2j`.
// - Identifiers are ASCII ([A-Za-z_][A-Za-z0-9_]*), as in TorchScript's own lexer; keywords
//   are Python 3's.
// - `is not` and `not in` become single tokens (IsNot, NotIn), as in TorchScript's lexer.
//
// Errors (bad characters, unterminated strings, bad numbers, bad indentation, unbalanced
// brackets, more than 200 nested brackets or 100 indentation levels) throw torchless::Error at
// the offending range (see errorAt in source.h).

#include "frontend/source.h"

#include <cstdint>
#include <string>
#include <vector>

namespace torchless::frontend {

// clang-format off
#define TL_FORALL_TOKEN_KINDS(_)                                                      \
  _(Eof, "eof") _(Newline, "newline") _(Indent, "indent") _(Dedent, "dedent")           \
  _(Ident, "identifier") _(Number, "number") _(String, "string") _(FString, "f-string")  \
  /* keywords */                                                                      \
  _(False, "False") _(None, "None") _(True, "True") _(And, "and") _(As, "as")           \
  _(Assert, "assert") _(Async, "async") _(Await, "await") _(Break, "break")             \
  _(Class, "class") _(Continue, "continue") _(Def, "def") _(Del, "del") _(Elif, "elif") \
  _(Else, "else") _(Except, "except") _(Finally, "finally") _(For, "for")               \
  _(From, "from") _(Global, "global") _(If, "if") _(Import, "import") _(In, "in")       \
  _(Is, "is") _(Lambda, "lambda") _(Nonlocal, "nonlocal") _(Not, "not") _(Or, "or")     \
  _(Pass, "pass") _(Raise, "raise") _(Return, "return") _(Try, "try")                   \
  _(While, "while") _(With, "with") _(Yield, "yield")                                   \
  _(IsNot, "is not") _(NotIn, "not in")                                                 \
  /* operators and delimiters */                                                      \
  _(Plus, "+") _(Minus, "-") _(Star, "*") _(Slash, "/") _(FloorDiv, "//")               \
  _(Percent, "%") _(Pow, "**") _(At, "@") _(LShift, "<<") _(RShift, ">>")               \
  _(Amp, "&") _(Pipe, "|") _(Caret, "^") _(Tilde, "~") _(Lt, "<") _(Gt, ">")            \
  _(Le, "<=") _(Ge, ">=") _(EqEq, "==") _(NotEq, "!=") _(Arrow, "->")                   \
  _(LParen, "(") _(RParen, ")") _(LBracket, "[") _(RBracket, "]") _(LBrace, "{")        \
  _(RBrace, "}") _(Comma, ",") _(Colon, ":") _(Semicolon, ";") _(Dot, ".")              \
  _(Ellipsis, "...") _(Assign, "=") _(Walrus, ":=") _(Bang, "!")                        \
  _(PlusEq, "+=") _(MinusEq, "-=") _(StarEq, "*=") _(SlashEq, "/=")                     \
  _(FloorDivEq, "//=") _(PercentEq, "%=") _(PowEq, "**=") _(AtEq, "@=")                 \
  _(LShiftEq, "<<=") _(RShiftEq, ">>=") _(AmpEq, "&=") _(PipeEq, "|=") _(CaretEq, "^=")
// clang-format on

enum class TokenKind : uint8_t {
#define TL_DEFINE_TOKEN(name, str) name,
  TL_FORALL_TOKEN_KINDS(TL_DEFINE_TOKEN)
#undef TL_DEFINE_TOKEN
};

/// The spelling of a token kind as diagnostics show it: "eof", "newline", "identifier", "+=".
const char* tokenKindName(TokenKind kind);

/// One token: its kind, byte range in the Source and payload.
struct Token {
  TokenKind kind = TokenKind::Eof;
  uint32_t start = 0;  ///< first byte
  uint32_t end = 0;    ///< one past the last byte
  /// Ident: the name. Number: the spelling. String: the decoded value. FString: the raw body
  /// between the quotes (its first byte is at bodyStart). Empty for other kinds.
  std::string text;
  uint32_t bodyStart = 0;  ///< FString only: offset of the body in the Source
  bool raw = false;        ///< FString only: an rf-string (no escape processing)
};

/// Splits `source` (or its bytes [begin, end)) into tokens.
class Lexer {
 public:
  /// Lexes the whole Source as a file (statements, indentation).
  explicit Lexer(SourcePtr source);
  /// Lexes bytes [begin, end) of `source` as a bracketed expression: no NEWLINE, INDENT or
  /// DEDENT tokens are produced (used for the {expressions} inside f-strings).
  Lexer(SourcePtr source, size_t begin, size_t end);

  /// Produces every token; the last one is Eof.
  std::vector<Token> tokenize();

  /// The range of a token of this lexer's source.
  SourceRange range(const Token& t) const { return SourceRange(source_, t.start, t.end); }

 private:
  [[noreturn]] void fail(size_t start, size_t end, const std::string& message) const;
  void lexLineStart();
  void lexToken();
  void lexNumber();
  void lexString(size_t prefixStart, bool raw, bool fstring);
  void push(TokenKind kind, size_t start, size_t end, std::string text = {});
  char peek(size_t ahead = 0) const { return pos_ + ahead < end_ ? text_[pos_ + ahead] : '\0'; }

  SourcePtr source_;
  const std::string& text_;
  size_t pos_;
  size_t end_;
  bool expressionMode_;
  std::vector<Token> tokens_;
  struct Bracket {
    char open;
    size_t pos;
  };
  std::vector<Bracket> brackets_;
  // Indentation stack, measured with tabs to multiples of 8 and with tabs as 1 (to catch
  // ambiguous mixes, as Python's TabError does).
  std::vector<std::pair<size_t, size_t>> indents_{{0, 0}};
  bool atLineStart_ = true;
};

/// Convenience: Lexer(source).tokenize().
std::vector<Token> tokenize(const SourcePtr& source);

/// Decodes the backslash escapes of the string-literal body at bytes [begin, end) of `source`
/// (see above). Newlines in the body ("\r\n", "\r") become "\n". With `raw`, only the
/// newlines are normalized. Bad escapes throw torchless::Error at their range.
std::string decodeStringBody(const SourcePtr& source, size_t begin, size_t end, bool raw);

/// Appends the UTF-8 encoding of code point `cp` to `out`.
void appendUtf8(std::string& out, uint32_t cp);

}  // namespace torchless::frontend
