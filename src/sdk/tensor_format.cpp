#include "sdk/tensor_format.h"

#include "core/error.h"

#include <fmt/format.h>

#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

namespace torchless::sdk {
namespace {

// Note [libtorch's tensor printing]
// at::print writes into one stream and changes its float format per 2-d slice (fixed,
// scientific or default, precision 4) without resetting the precision between slices, so an
// integer slice printed after a fractional one uses precision 4 in default notation. The code
// below keeps one stream through the whole print for the same reason: every quirk of the
// stream state carries over as it does in libtorch. The rules (element width, scale, column
// blocks of an 80-character line, the order of the leading indices) follow what libtorch 1.13
// prints; tests/sdk compares the bytes with libtorch itself.

struct Layout {
  double scale = 1;
  int64_t width = 0;
};

void restoreFormat(std::ostream& out, const std::ios& saved) { out.copyfmt(saved); }

/// Chooses the notation for `n` doubles at `p` and sets it on `out`.
Layout chooseLayout(std::ostream& out, const double* p, int64_t n) {
  Layout l;
  if (n == 0) return l;
  bool integral = true;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(p[i]) && p[i] != std::ceil(p[i])) {
      integral = false;
      break;
    }
  int64_t first = 0;
  while (first < n && !std::isfinite(p[first])) ++first;
  double lo = 1, hi = 1;  // decimal exponents of the smallest and largest magnitudes
  if (first < n) {
    double minAbs = std::fabs(p[first]), maxAbs = minAbs;
    for (int64_t i = first; i < n; ++i) {
      double a = std::fabs(p[i]);
      if (!std::isfinite(a)) continue;
      if (a < minAbs) minAbs = a;
      if (p[i] > maxAbs) maxAbs = a;  // libtorch compares the signed value here
    }
    lo = minAbs != 0 ? std::floor(std::log10(minAbs)) + 1 : 1;
    hi = maxAbs != 0 ? std::floor(std::log10(maxAbs)) + 1 : 1;
  }
  if (integral) {
    if (hi > 9) {
      l.width = 11;
      out << std::scientific << std::setprecision(4);
    } else {
      l.width = static_cast<int64_t>(hi) + 1;
      out.unsetf(std::ios_base::floatfield);
    }
  } else if (hi - lo > 4) {
    l.width = (std::fabs(hi) > 99 || std::fabs(lo) > 99) ? 12 : 11;
    out << std::scientific << std::setprecision(4);
  } else if (hi > 5 || hi < 0) {
    l.width = 7;
    l.scale = std::pow(10, hi - 1);
    out << std::fixed << std::setprecision(4);
  } else {
    l.width = hi == 0 ? 7 : static_cast<int64_t>(hi) + 6;
    out << std::fixed << std::setprecision(4);
  }
  return l;
}

void spaces(std::ostream& out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out << ' ';
}

void printScale(std::ostream& out, double scale) {
  std::ios saved(nullptr);
  saved.copyfmt(out);
  out.unsetf(std::ios_base::floatfield);
  out << scale << " *" << std::endl;
  restoreFormat(out, saved);
}

/// A rows x cols row-major block at `p`, in column blocks that fit `lineWidth`.
void printMatrix(std::ostream& out, const double* p, int64_t rows, int64_t cols, int64_t lineWidth,
                 int64_t indent) {
  Layout l = chooseLayout(out, p, rows * cols);
  spaces(out, indent);
  const int64_t perLine = (lineWidth - indent) / (l.width + 1);
  int64_t firstCol = 0;
  while (firstCol < cols) {
    int64_t lastCol = firstCol + perLine <= cols ? firstCol + perLine - 1 : cols - 1;
    if (perLine < cols) {
      if (firstCol != 0) out << std::endl;
      out << "Columns " << firstCol + 1 << " to " << lastCol + 1;
      spaces(out, indent);
    }
    if (l.scale != 1) {
      printScale(out, l.scale);
      spaces(out, indent);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const double* row = p + r * cols;
      for (int64_t c = firstCol; c <= lastCol; ++c) {
        out << std::setw(static_cast<int>(l.width)) << row[c] / l.scale;
        if (c == lastCol) {
          out << std::endl;
          if (r != rows - 1) {
            spaces(out, indent);
            if (l.scale != 1) out << ' ';
          }
        } else {
          out << ' ';
        }
      }
    }
    firstCol = lastCol + 1;
  }
}

/// 3-d and more: each trailing 2-d slice under "(i,j,.,.) = ", the first index fastest.
void printSlices(std::ostream& out, const Tensor& t, const double* p, int64_t lineWidth) {
  const int64_t d = t.dim();
  const int64_t rows = t.size(d - 2), cols = t.size(d - 1);
  std::vector<int64_t> idx(static_cast<size_t>(d - 2), 0);
  idx[0] = -1;
  bool first = true;
  while (true) {
    bool done = false;
    for (int64_t i = 0;; ++i) {
      if (++idx[i] >= t.size(i)) {
        if (i == d - 3) {
          done = true;
          break;
        }
        idx[i] = 0;
      } else {
        break;
      }
    }
    if (done) break;
    if (!first) out << std::endl;
    first = false;
    out << "(";
    int64_t offset = 0;
    for (int64_t i = 0; i < d - 2; ++i) {
      offset += idx[i] * t.stride(i);
      out << idx[i] + 1 << ",";
    }
    out << ".,.) = " << std::endl;
    printMatrix(out, p + offset, rows, cols, lineWidth, 1);
  }
}

}  // namespace

std::string legacyTypeName(ScalarType t) {
  const char* name = nullptr;
  switch (t) {
    case ScalarType::Byte: name = "Byte"; break;
    case ScalarType::Char: name = "Char"; break;
    case ScalarType::Short: name = "Short"; break;
    case ScalarType::Int: name = "Int"; break;
    case ScalarType::Long: name = "Long"; break;
    case ScalarType::Half: name = "Half"; break;
    case ScalarType::Float: name = "Float"; break;
    case ScalarType::Double: name = "Double"; break;
    case ScalarType::ComplexHalf: name = "ComplexHalf"; break;
    case ScalarType::ComplexFloat: name = "ComplexFloat"; break;
    case ScalarType::ComplexDouble: name = "ComplexDouble"; break;
    case ScalarType::Bool: name = "Bool"; break;
    case ScalarType::QInt8: name = "QInt8"; break;
    case ScalarType::QUInt8: name = "QUInt8"; break;
    case ScalarType::QInt32: name = "QInt32"; break;
    case ScalarType::BFloat16: name = "BFloat16"; break;
    default: name = toString(t); break;
  }
  return fmt::format("CPU{}Type", name);
}

std::string formatTensor(const Tensor& t) {
  std::ostringstream out;
  if (!t.defined()) return "[ Tensor (undefined) ]";
  if (t.isQuantized())
    throw Error("printing a quantized tensor is not supported (dequantize it first)");
  if (isComplexType(t.dtype())) throw Error("printing a complex tensor is not supported");
  Tensor d = t.to(ScalarType::Double).contiguous();
  const double* p = d.data<double>();
  const std::string type = legacyTypeName(t.dtype());
  const int64_t lineWidth = 80;
  if (d.dim() == 0) {
    out.unsetf(std::ios_base::floatfield);
    out << p[0] << std::endl << "[ " << type << "{}";
  } else if (d.dim() == 1) {
    if (d.numel() > 0) {
      Layout l = chooseLayout(out, p, d.numel());
      if (l.scale != 1) printScale(out, l.scale);
      for (int64_t i = 0; i < d.size(0); ++i)
        out << std::setw(static_cast<int>(l.width)) << p[i] / l.scale << std::endl;
    }
    out << "[ " << type << "{" << d.size(0) << "}";
  } else if (d.dim() == 2) {
    if (d.numel() > 0) printMatrix(out, p, d.size(0), d.size(1), lineWidth, 0);
    out << "[ " << type << "{" << d.size(0) << "," << d.size(1) << "}";
  } else {
    if (d.numel() > 0) printSlices(out, d, p, lineWidth);
    out << "[ " << type << "{" << d.size(0);
    for (int64_t i = 1; i < d.dim(); ++i) out << "," << d.size(i);
    out << "}";
  }
  out << " ]";
  return out.str();
}

namespace {

void printValue(std::ostream& out, const IValue& v);

template <typename Range>
void printSeq(std::ostream& out, const Range& r, const char* open, const char* close) {
  out << open;
  bool first = true;
  for (const IValue& e : r) {
    if (!first) out << ", ";
    first = false;
    printValue(out, e);
  }
  out << close;
}

void printValue(std::ostream& out, const IValue& v) {
  if (v.isNone()) {
    out << "None";
  } else if (v.isTensor()) {
    out << formatTensor(v.toTensor());
  } else if (v.isDouble()) {
    double d = v.toDouble();
    int c = std::fpclassify(d);
    if ((c == FP_NORMAL || c == FP_ZERO) && std::fabs(d) < 1e10 &&
        static_cast<double>(static_cast<int64_t>(d)) == d) {
      int64_t i = static_cast<int64_t>(d);
      if (i == 0 && std::signbit(d)) out << "-";
      out << i << ".";
    } else {
      auto prec = out.precision();
      out << std::setprecision(std::numeric_limits<double>::max_digits10) << d
          << std::setprecision(static_cast<int>(prec));
    }
  } else if (v.isInt()) {
    out << v.toInt();
  } else if (v.isBool()) {
    out << (v.toBool() ? "True" : "False");
  } else if (v.isString()) {
    out << v.toStringRef();
  } else if (v.isTuple()) {
    const auto& e = v.toTuple()->elements;
    printSeq(out, e, "(", e.size() == 1 ? ",)" : ")");
  } else if (v.isList()) {
    printSeq(out, v.toList()->list, "[", "]");
  } else if (v.isDict()) {
    out << "{";
    bool first = true;
    for (const auto& [k, x] : v.toDict()->entries()) {
      if (!first) out << ", ";
      first = false;
      printValue(out, k);
      out << ": ";
      printValue(out, x);
    }
    out << "}";
  } else if (v.isDevice()) {
    out << v.toDevice().str();
  } else {
    out << v.repr();
  }
}

}  // namespace

std::string formatIValue(const IValue& v) {
  std::ostringstream out;
  printValue(out, v);
  return out.str();
}

}  // namespace torchless::sdk
