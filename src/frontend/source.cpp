#include "frontend/source.h"

#include <algorithm>

namespace torchless::frontend {

namespace {

/// True for the bytes that start a UTF-8 code point (everything but continuation bytes).
bool startsCodePoint(char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }

}  // namespace

Source::Source(std::string filename, std::string text, size_t startingLine)
    : filename_(std::move(filename)), text_(std::move(text)), startingLine_(startingLine) {
  lineStarts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    // "\r\n" and a lone "\r" both end a line.
    if (text_[i] == '\n' || (text_[i] == '\r' && (i + 1 >= text_.size() || text_[i + 1] != '\n'))) {
      if (i + 1 < text_.size()) lineStarts_.push_back(i + 1);
    }
  }
}

size_t Source::lineIndex(size_t offset) const {
  auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset);
  return static_cast<size_t>(it - lineStarts_.begin()) - 1;
}

std::string_view Source::lineText(size_t index) const {
  size_t begin = lineStarts_.at(index);
  size_t end = index + 1 < lineStarts_.size() ? lineStarts_[index + 1] : text_.size();
  while (end > begin && (text_[end - 1] == '\n' || text_[end - 1] == '\r')) --end;
  return std::string_view(text_).substr(begin, end - begin);
}

size_t Source::column(size_t offset) const {
  size_t begin = lineStarts_[lineIndex(offset)];
  size_t col = 1;
  for (size_t i = begin; i < offset && i < text_.size(); ++i) {
    if (startsCodePoint(text_[i])) ++col;
  }
  return col;
}

SourcePtr makeSource(std::string filename, std::string text, size_t startingLine) {
  return std::make_shared<const Source>(std::move(filename), std::move(text), startingLine);
}

SourceRange::SourceRange(SourcePtr source, size_t start, size_t end)
    : source_(std::move(source)), start_(start), end_(end) {
  TL_INTERNAL_ASSERT(start_ <= end_ && (!source_ || end_ <= source_->size()),
                     "bad source range [{}, {})", start_, end_);
}

size_t SourceRange::line() const { return source_ ? source_->lineNumber(start_) : 0; }

size_t SourceRange::col() const { return source_ ? source_->column(start_) : 0; }

size_t SourceRange::endLine() const {
  if (!source_) return 0;
  return source_->lineNumber(end_ > start_ ? end_ - 1 : start_);
}

std::string_view SourceRange::text() const {
  if (!source_) return {};
  return std::string_view(source_->text()).substr(start_, end_ - start_);
}

std::string SourceRange::place() const {
  if (!source_) return {};
  return fmt::format("{}:{}:{}", source_->filename(), line(), col());
}

SourceRange SourceRange::to(const SourceRange& other) const {
  if (!source_) return other;
  if (!other.source_) return *this;
  return SourceRange(source_, std::min(start_, other.start_), std::max(end_, other.end_));
}

std::string SourceRange::highlight(size_t context) const {
  if (!source_) return {};
  const Source& src = *source_;
  size_t first = src.lineIndex(start_);
  size_t last = src.lineIndex(end_ > start_ ? end_ - 1 : start_);
  std::string out = fmt::format("  File \"{}\", line {}", src.filename(), line());
  size_t ctxBegin = first >= context ? first - context : 0;
  for (size_t i = ctxBegin; i < first; ++i) {
    out += '\n';
    out += src.lineText(i);
  }
  for (size_t i = first; i <= last; ++i) {
    std::string_view lineText = src.lineText(i);
    size_t lineBegin = src.lineStart(i);
    size_t lineEnd = lineBegin + lineText.size();
    // Columns to mark on this line: [from, to) in bytes.
    size_t from = i == first ? start_ : lineBegin;
    if (i != first) {
      while (from < lineEnd && (src.text()[from] == ' ' || src.text()[from] == '\t')) ++from;
    }
    size_t to = std::min(i == last ? end_ : lineEnd, lineEnd);
    out += '\n';
    out += lineText;
    out += '\n';
    for (size_t p = lineBegin; p < from && p < lineEnd; ++p) {
      char c = src.text()[p];
      if (c == '\t') {
        out += '\t';
      } else if (startsCodePoint(c)) {
        out += ' ';
      }
    }
    size_t marks = 0;
    for (size_t p = from; p < to; ++p) {
      if (startsCodePoint(src.text()[p])) ++marks;
    }
    out.append(std::max<size_t>(marks, 1), '~');
    if (i == last) out += " <--- HERE";
  }
  for (size_t i = last + 1; i < src.numLines() && i <= last + context; ++i) {
    out += '\n';
    out += src.lineText(i);
  }
  return out;
}

Error errorAt(const SourceRange& range, std::string message) {
  return Error(std::move(message), range.place(), range.highlight());
}

void throwErrorAt(const SourceRange& range, std::string message) {
  throw errorAt(range, std::move(message));
}

}  // namespace torchless::frontend
