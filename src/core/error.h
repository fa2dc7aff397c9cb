#pragma once
// Errors. Note [Errors]
//
// Expected failures (bad files, bad source, bad inputs, unsupported operators) are values of
// type torchless::Error: a one-line message, an optional place ("record 'data.pkl'",
// "code/__torch__/m.py:12:5"), and context lines added by each layer it passes through
// ("while loading code/__torch__/m.py", "while compiling forward"). The CLI prints
// `place: message` as the first line on stderr, then the details and the context, and exits 1.
//
// Broken invariants are bugs, not errors: TL_INTERNAL_ASSERT aborts with file and line.

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace torchless {

/// A user-facing failure with a place and context. Thrown by every layer for bad input.
class Error : public std::exception {
 public:
  explicit Error(std::string message, std::string place = {}, std::string details = {});

  const std::string& message() const { return message_; }
  /// Where: an archive record, file:line:col, an operator schema. May be empty.
  const std::string& place() const { return place_; }
  /// Extra lines shown after the first (e.g. the source line with a caret).
  const std::string& details() const { return details_; }
  const std::vector<std::string>& context() const { return context_; }

  /// Sets the place if none is known yet (the innermost place wins).
  Error& withPlace(const std::string& place);
  /// Adds a context line, e.g. "while loading archive model.pt".
  Error& addContext(std::string line);

  /// "place: message" — the first line the CLI prints.
  std::string firstLine() const;
  /// Everything: first line, details, then context lines.
  const char* what() const noexcept override;

 private:
  void render();
  std::string message_;
  std::string place_;
  std::string details_;
  std::vector<std::string> context_;
  std::string what_;
};

/// The model itself raised (prim::RaiseException), e.g. "builtins.RuntimeError: bad flag 2".
class ModelError : public Error {
 public:
  using Error::Error;
};

/// An operator with no kernel / converter. place names the schema and where it is used.
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void internalAssertFail(const char* file, int line, const char* cond,
                                     const std::string& msg);

}  // namespace torchless

/// Throws torchless::Error(fmt::format(...)) unless cond holds. For user-facing checks.
#define TL_CHECK(cond, ...)                                          \
  do {                                                               \
    if (!(cond)) throw ::torchless::Error(fmt::format(__VA_ARGS__)); \
  } while (0)

/// Aborts with file:line when an internal invariant is broken (a bug in torchless).
#define TL_INTERNAL_ASSERT(cond, ...)                                                            \
  do {                                                                                           \
    if (!(cond))                                                                                 \
      ::torchless::internalAssertFail(__FILE__, __LINE__, #cond, ::fmt::format("" __VA_ARGS__)); \
  } while (0)
