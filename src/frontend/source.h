#pragma once
// Source text and byte ranges into it. Note [Source ranges]
//
// Every token and every tree carries a SourceRange: the Source it came from and a half-open
// byte range [start, end). Lines and columns are 1-based and computed on demand; a column
// counts UTF-8 code points, so it matches what an editor shows. A Source may start at a line
// other than 1 (a function cut out of a larger file, as .debug_pkl records describe them).
//
// Compile errors are rendered the TorchScript way (torch/csrc/jit/frontend/source_range.cpp):
//
//   code/__torch__/m.py:3:10: unknown name 'foo'
//     File "code/__torch__/m.py", line 3
//       return foo(x)
//              ~~~ <--- HERE
//
// errorAt() builds that torchless::Error: place = "file:line:col", details = highlight().

#include "core/error.h"

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace torchless::frontend {

/// A named text: a file of TorchScript source. Immutable; shared by all ranges into it.
class Source {
 public:
  /// `startingLine` is the line number of the first line of `text` (1 for a whole file).
  Source(std::string filename, std::string text, size_t startingLine = 1);

  const std::string& filename() const { return filename_; }
  const std::string& text() const { return text_; }
  size_t size() const { return text_.size(); }
  size_t startingLine() const { return startingLine_; }

  /// Index (0-based, into the text's own lines) of the line holding byte `offset`.
  size_t lineIndex(size_t offset) const;
  /// Byte offset where the line with 0-based index `index` starts.
  size_t lineStart(size_t index) const { return lineStarts_.at(index); }
  /// Number of lines (a final line without '\n' counts).
  size_t numLines() const { return lineStarts_.size(); }
  /// The text of line `index` (0-based) without its line terminator ("\n" or "\r\n").
  std::string_view lineText(size_t index) const;
  /// 1-based line number (startingLine applied) of byte `offset`.
  size_t lineNumber(size_t offset) const { return lineIndex(offset) + startingLine_; }
  /// 1-based column of byte `offset`, in UTF-8 code points.
  size_t column(size_t offset) const;

 private:
  std::string filename_;
  std::string text_;
  size_t startingLine_;
  std::vector<size_t> lineStarts_;
};

using SourcePtr = std::shared_ptr<const Source>;

/// Makes a shared Source.
SourcePtr makeSource(std::string filename, std::string text, size_t startingLine = 1);

/// A half-open byte range [start, end) of a Source. A default-constructed range has no source
/// and renders as nothing.
class SourceRange {
 public:
  SourceRange() = default;
  SourceRange(SourcePtr source, size_t start, size_t end);

  const SourcePtr& source() const { return source_; }
  size_t start() const { return start_; }
  size_t end() const { return end_; }
  size_t size() const { return end_ - start_; }
  bool valid() const { return source_ != nullptr; }

  /// 1-based line of the start.
  size_t line() const;
  /// 1-based column (code points) of the start.
  size_t col() const;
  /// 1-based line of the last byte of the range (== line() for an empty range).
  size_t endLine() const;
  /// The covered text.
  std::string_view text() const;
  /// "file:line:col", the place torchless::Error shows first.
  std::string place() const;
  /// The smallest range covering this one and `other` (same source).
  SourceRange to(const SourceRange& other) const;

  /// The TorchScript rendering: `  File "f", line N` and the lines of the range, each followed
  /// by a line of '~' under the covered columns, the last ending in " <--- HERE". `context`
  /// extra lines are shown before and after (TorchScript itself uses 3).
  std::string highlight(size_t context = 0) const;

 private:
  SourcePtr source_;
  size_t start_ = 0;
  size_t end_ = 0;
};

/// A compile error at `range`: place "file:line:col", details = range.highlight().
Error errorAt(const SourceRange& range, std::string message);

/// Throws errorAt(range, message).
[[noreturn]] void throwErrorAt(const SourceRange& range, std::string message);

}  // namespace torchless::frontend
