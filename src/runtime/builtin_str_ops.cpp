// Kernels of TorchScript's str builtins (Python's str methods on byte strings): format with
// `{}` placeholders, str(), indexing and slicing, split/join/strip, case and class tests,
// search, comparison.

#include "core/error.h"
#include "core/memory_budget.h"
#include "runtime/register_utils.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace torchless {
namespace {

using namespace kreg;

const std::string& str(const IValue& v) { return v.toStringRef(); }

IValue strList(std::vector<std::string> parts) {
  std::vector<IValue> out;
  out.reserve(parts.size());
  for (auto& p : parts) out.emplace_back(std::move(p));
  return IValue(ListImpl::create(StringType::get(), std::move(out)));
}

// str(v) as TorchScript prints it into format strings.
std::string toStr(const IValue& v) { return v.isString() ? v.toStringRef() : v.repr(); }

// Python's [start:end] clamping for the search methods (find, count, startswith ...).
void searchRange(const std::string& s, int64_t start, int64_t end, size_t& b, size_t& e) {
  const auto n = static_cast<int64_t>(s.size());
  if (start < 0) start = std::max<int64_t>(start + n, 0);
  if (end < 0) end = std::max<int64_t>(end + n + 1, 0);  // TorchScript's end=-1 means "to the end"
  b = static_cast<size_t>(std::min(start, n));
  e = static_cast<size_t>(std::min(end, n));
}

std::vector<std::string> splitWhitespace(const std::string& s, int64_t max) {
  std::vector<std::string> out;
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    while (i < n && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= n) break;
    if (max >= 0 && static_cast<int64_t>(out.size()) == max) {
      size_t e = n;
      while (e > i && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
      out.push_back(s.substr(i, e - i));
      break;
    }
    size_t j = i;
    while (j < n && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::vector<std::string> splitSep(const std::string& s, const std::string& sep, int64_t max) {
  if (sep.empty()) throw ModelError("ValueError: empty separator");
  std::vector<std::string> out;
  size_t start = 0;
  while (max < 0 || static_cast<int64_t>(out.size()) < max) {
    size_t pos = s.find(sep, start);
    if (pos == std::string::npos) break;
    out.push_back(s.substr(start, pos - start));
    start = pos + sep.size();
  }
  out.push_back(s.substr(start));
  return out;
}

template <typename Pred>
bool allChars(const std::string& s, Pred p) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [&](char c) { return p(static_cast<unsigned char>(c)); });
}

std::string mapChars(const std::string& s, int (*f)(int)) {
  std::string out = s;
  for (auto& c : out) c = static_cast<char>(f(static_cast<unsigned char>(c)));
  return out;
}

int64_t normalizeStrIndex(int64_t i, size_t size) {
  const auto n = static_cast<int64_t>(size);
  if (i < 0) i += n;
  if (i < 0 || i >= n) throw ModelError("IndexError: string index out of range");
  return i;
}

/// One `%<key>` of aten::percentFormat, as PyTorch's addFormattedArg (vararg_functions.cpp):
/// d/i print an int (a float is truncated), e/E/f/F a float at precision 6 (through a C
/// float, as PyTorch does), c an int as a char or a 1-char string, s anything. Flags, widths
/// and precisions are not supported (PyTorch 1.13 rejects them the same way).
void appendPercentArg(char key, const IValue& v, std::string& out) {
  auto needNumber = [&] {
    if (!v.isInt() && !v.isDouble() && !v.isBool())
      throw ModelError(fmt::format("RuntimeError: %{} requires a number for formatting, but got {}",
                                   key, v.type()->annotationStr()));
  };
  switch (key) {
    case 'd':
    case 'i':
      needNumber();
      out += std::to_string(v.isDouble() ? static_cast<int64_t>(static_cast<int>(v.toDouble()))
                            : v.isBool() ? int64_t(v.toBool())
                                         : v.toInt());
      return;
    case 'e':
    case 'E':
    case 'f':
    case 'F': {
      needNumber();
      const double d = v.isDouble() ? v.toDouble()
                       : v.isBool() ? double(v.toBool())
                                    : double(v.toInt());
      const char spec[] = {'%', '.', '6', key, '\0'};
      char buf[512];
      std::snprintf(buf, sizeof buf, spec, static_cast<double>(static_cast<float>(d)));
      out += buf;
      return;
    }
    case 'c':
      if (v.isInt()) {
        out += static_cast<char>(v.toInt());
      } else if (v.isString() && v.toStringRef().size() == 1) {
        out += v.toStringRef();
      } else {
        throw ModelError(
            fmt::format("RuntimeError: %c requires an int or char for formatting, but got {}",
                        v.type()->annotationStr()));
      }
      return;
    case 's': out += toStr(v); return;
    default:
      throw ModelError(fmt::format(
          "RuntimeError: The specifier %{} is not supported in TorchScript format strings", key));
  }
}

// %-formatting, str.format and str().
void registerStrFormatKernels(KernelRegistry& r) {
  // aten::percentFormat(str self, ...): `"%s: %d" % (name, n)`; the one argument after the
  // format is a tuple of arguments or the single argument (PyTorch's percentFormat).
  defN<2>(r, "aten::percentFormat", [](const IValue* a) {
    const std::string& f = a[0].toStringRef();
    const bool isTuple = a[1].isTuple();
    const size_t count = isTuple ? a[1].toTuple()->elements.size() : 1;
    std::string out;
    size_t used = 0, begin = 0;
    while (true) {
      const size_t pct = f.find('%', begin);
      if (pct == std::string::npos) {
        out.append(f, begin, std::string::npos);
        break;
      }
      if (pct + 1 >= f.size()) throw ModelError("RuntimeError: Incomplete format specifier");
      out.append(f, begin, pct - begin);
      begin = pct + 2;
      if (f[pct + 1] == '%') {
        out += '%';
        continue;
      }
      if (used >= count) throw ModelError("RuntimeError: Too few arguments for format string");
      appendPercentArg(f[pct + 1], isTuple ? a[1].toTuple()->elements[used] : a[1], out);
      ++used;
    }
    if (used != count) throw ModelError("RuntimeError: Too many arguments for format string");
    return IValue(std::move(out));
  });
  // aten::format(str self, ...): each `{}` takes the next argument.
  defCreator(r, "aten::format", [](const Node& n) -> Operation {
    const size_t count = n.inputs().size();
    return [count](Stack& s) {
      const IValue* a = s.data() + (s.size() - count);
      const std::string& fmtStr = a[0].toStringRef();
      std::string out;
      size_t arg = 1, i = 0;
      while (i < fmtStr.size()) {
        if (fmtStr.compare(i, 2, "{}") == 0) {
          if (arg >= count)
            throw ModelError(
                "IndexError: Replacement index out of range for positional args tuple");
          out += toStr(a[arg++]);
          i += 2;
        } else {
          out += fmtStr[i++];
        }
      }
      drop(s, count);
      s.emplace_back(std::move(out));
    };
  });
  defN<1>(r, "aten::str", [](const IValue* a) { return IValue(toStr(a[0])); });
}

// Len, indexing, slicing, concatenation, comparison, join.
void registerStrBasicKernels(KernelRegistry& r) {
  defN<1>(r, "aten::len.str",
          [](const IValue* a) { return IValue(static_cast<int64_t>(str(a[0]).size())); });
  for (const char* name : {"aten::__getitem__.str", "prim::StringIndex"})
    defN<2>(r, name, [](const IValue* a) {
      const auto& s = str(a[0]);
      return IValue(
          std::string(1, s[static_cast<size_t>(normalizeStrIndex(a[1].toInt(), s.size()))]));
    });
  defN<4>(r, "aten::slice.str", [](const IValue* a) {
    const auto& s = str(a[0]);
    const auto n = static_cast<int64_t>(s.size());
    const int64_t step = a[3].toInt();
    if (step == 0) throw ModelError("ValueError: slice step cannot be zero");
    auto norm = [&](const IValue& v, int64_t dflt) {
      if (v.isNone()) return dflt;
      int64_t i = v.toInt();
      if (i < 0) i += n;
      return step > 0 ? std::clamp<int64_t>(i, 0, n) : std::clamp<int64_t>(i, -1, n - 1);
    };
    const int64_t b = norm(a[1], step > 0 ? 0 : n - 1), e = norm(a[2], step > 0 ? n : -1);
    std::string out;
    for (int64_t i = b; step > 0 ? i < e : i > e; i += step) out += s[static_cast<size_t>(i)];
    return IValue(out);
  });
  defN<2>(r, "aten::add.str", [](const IValue* a) { return IValue(str(a[0]) + str(a[1])); });
  defN<2>(r, "aten::eq.str", [](const IValue* a) { return IValue(str(a[0]) == str(a[1])); });
  defN<2>(r, "aten::ne.str", [](const IValue* a) { return IValue(str(a[0]) != str(a[1])); });
  defN<2>(r, "aten::lt.str", [](const IValue* a) { return IValue(str(a[0]) < str(a[1])); });
  defN<2>(r, "aten::le.str", [](const IValue* a) { return IValue(str(a[0]) <= str(a[1])); });
  defN<2>(r, "aten::gt.str", [](const IValue* a) { return IValue(str(a[0]) > str(a[1])); });
  defN<2>(r, "aten::ge.str", [](const IValue* a) { return IValue(str(a[0]) >= str(a[1])); });
  defN<2>(r, "aten::join", [](const IValue* a) {
    std::string out;
    const auto& l = a[1].toList()->list;
    for (size_t i = 0; i < l.size(); ++i) {
      if (i) out += str(a[0]);
      out += str(l[i]);
    }
    return IValue(out);
  });
}

// Split, strip and case mapping.
void registerStrSplitAndCaseKernels(KernelRegistry& r) {
  defN<3>(r, "aten::split.str", [](const IValue* a) {
    const int64_t max = a[2].toInt();
    return strList(a[1].isNone() ? splitWhitespace(str(a[0]), max)
                                 : splitSep(str(a[0]), str(a[1]), max));
  });
  defN<3>(r, "aten::rsplit", [](const IValue* a) {
    // Right split with a separator; max splits counted from the right.
    const std::string& s = str(a[0]);
    const std::string& sep = str(a[1]);
    int64_t max = a[2].toInt();
    if (sep == " ") {
      auto all = splitWhitespace(s, -1);
      if (max < 0 || static_cast<int64_t>(all.size()) <= max + 1) return strList(all);
    }
    std::vector<std::string> out;
    size_t end = s.size();
    while (max < 0 || static_cast<int64_t>(out.size()) < max) {
      if (end < sep.size()) break;
      size_t pos = s.rfind(sep, end - sep.size());
      if (pos == std::string::npos) break;
      out.push_back(s.substr(pos + sep.size(), end - pos - sep.size()));
      end = pos;
    }
    out.push_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return strList(out);
  });
  defN<2>(r, "aten::splitlines", [](const IValue* a) {
    const std::string& s = str(a[0]);
    const bool keep = a[1].toBool();
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\n' || s[i] == '\r') {
        size_t e = i;
        if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
        out.push_back(s.substr(start, (keep ? i + 1 : e) - start));
        start = i + 1;
      }
    }
    if (start < s.size()) out.push_back(s.substr(start));
    return strList(out);
  });
  auto strip = [](const std::string& s, const std::string& chars, bool left, bool right) {
    size_t b = 0, e = s.size();
    if (left)
      while (b < e && chars.find(s[b]) != std::string::npos) ++b;
    if (right)
      while (e > b && chars.find(s[e - 1]) != std::string::npos) --e;
    return s.substr(b, e - b);
  };
  defN<2>(r, "aten::strip",
          [strip](const IValue* a) { return IValue(strip(str(a[0]), str(a[1]), true, true)); });
  defN<2>(r, "aten::lstrip",
          [strip](const IValue* a) { return IValue(strip(str(a[0]), str(a[1]), true, false)); });
  defN<2>(r, "aten::rstrip",
          [strip](const IValue* a) { return IValue(strip(str(a[0]), str(a[1]), false, true)); });
  defN<1>(r, "aten::lower", [](const IValue* a) { return IValue(mapChars(str(a[0]), ::tolower)); });
  defN<1>(r, "aten::upper", [](const IValue* a) { return IValue(mapChars(str(a[0]), ::toupper)); });
  defN<1>(r, "aten::swapcase", [](const IValue* a) {
    std::string out = str(a[0]);
    for (auto& c : out) {
      const auto u = static_cast<unsigned char>(c);
      c = static_cast<char>(std::islower(u) ? std::toupper(u) : std::tolower(u));
    }
    return IValue(out);
  });
  defN<1>(r, "aten::capitalize", [](const IValue* a) {
    std::string out = mapChars(str(a[0]), ::tolower);
    if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
    return IValue(out);
  });
  defN<1>(r, "aten::title", [](const IValue* a) {
    std::string out = str(a[0]);
    bool prevCased = false;
    for (auto& c : out) {
      const auto u = static_cast<unsigned char>(c);
      c = static_cast<char>(prevCased ? std::tolower(u) : std::toupper(u));
      prevCased = std::isalpha(u);
    }
    return IValue(out);
  });
}

// Character classes, prefix / suffix tests, find, count, replace.
void registerStrSearchKernels(KernelRegistry& r) {
  defN<1>(r, "aten::isdigit",
          [](const IValue* a) { return IValue(allChars(str(a[0]), ::isdigit)); });
  defN<1>(r, "aten::isdecimal",
          [](const IValue* a) { return IValue(allChars(str(a[0]), ::isdigit)); });
  defN<1>(r, "aten::isnumeric",
          [](const IValue* a) { return IValue(allChars(str(a[0]), ::isdigit)); });
  defN<1>(r, "aten::isalpha",
          [](const IValue* a) { return IValue(allChars(str(a[0]), ::isalpha)); });
  defN<1>(r, "aten::isalnum",
          [](const IValue* a) { return IValue(allChars(str(a[0]), ::isalnum)); });
  defN<1>(r, "aten::isspace",
          [](const IValue* a) { return IValue(allChars(str(a[0]), ::isspace)); });
  defN<1>(r, "aten::isprintable", [](const IValue* a) {
    const auto& s = str(a[0]);
    return IValue(std::all_of(s.begin(), s.end(), [](char c) {
      return std::isprint(static_cast<unsigned char>(c)) != 0;
    }));
  });
  defN<1>(r, "aten::islower", [](const IValue* a) {
    const auto& s = str(a[0]);
    bool cased = false;
    for (char c : s) {
      const auto u = static_cast<unsigned char>(c);
      if (std::isupper(u)) return IValue(false);
      cased = cased || std::islower(u);
    }
    return IValue(cased);
  });
  defN<1>(r, "aten::isupper", [](const IValue* a) {
    const auto& s = str(a[0]);
    bool cased = false;
    for (char c : s) {
      const auto u = static_cast<unsigned char>(c);
      if (std::islower(u)) return IValue(false);
      cased = cased || std::isupper(u);
    }
    return IValue(cased);
  });
  defN<4>(r, "aten::startswith", [](const IValue* a) {
    size_t b, e;
    searchRange(str(a[0]), a[2].toInt(), a[3].toInt(), b, e);
    const auto& sub = str(a[1]);
    return IValue(e >= b && e - b >= sub.size() && str(a[0]).compare(b, sub.size(), sub) == 0);
  });
  defN<4>(r, "aten::endswith", [](const IValue* a) {
    size_t b, e;
    searchRange(str(a[0]), a[2].toInt(), a[3].toInt(), b, e);
    const auto& sub = str(a[1]);
    return IValue(e >= b && e - b >= sub.size() &&
                  str(a[0]).compare(e - sub.size(), sub.size(), sub) == 0);
  });
  auto find = [](const IValue* a, bool reverse) -> int64_t {
    size_t b, e;
    const std::string& s = str(a[0]);
    searchRange(s, a[2].toInt(), a[3].toInt(), b, e);
    if (e < b) return -1;
    const std::string window = s.substr(b, e - b);
    const size_t pos = reverse ? window.rfind(str(a[1])) : window.find(str(a[1]));
    return pos == std::string::npos ? -1 : static_cast<int64_t>(pos + b);
  };
  defN<4>(r, "aten::find", [find](const IValue* a) { return IValue(find(a, false)); });
  defN<4>(r, "aten::rfind", [find](const IValue* a) { return IValue(find(a, true)); });
  defN<4>(r, "aten::index.str", [find](const IValue* a) {
    int64_t i = find(a, false);
    if (i < 0) throw ModelError("ValueError: substring not found");
    return IValue(i);
  });
  defN<4>(r, "aten::rindex", [find](const IValue* a) {
    int64_t i = find(a, true);
    if (i < 0) throw ModelError("ValueError: substring not found");
    return IValue(i);
  });
  defN<4>(r, "aten::count", [](const IValue* a) {
    size_t b, e;
    const std::string& s = str(a[0]);
    searchRange(s, a[2].toInt(), a[3].toInt(), b, e);
    const std::string& sub = str(a[1]);
    if (e < b) return IValue(int64_t{0});
    if (sub.empty()) return IValue(static_cast<int64_t>(e - b + 1));
    int64_t n = 0;
    for (size_t pos = s.find(sub, b); pos != std::string::npos && pos + sub.size() <= e;
         pos = s.find(sub, pos + sub.size()))
      ++n;
    return IValue(n);
  });
  defN<4>(r, "aten::replace", [](const IValue* a) {
    const std::string& s = str(a[0]);
    const std::string &from = str(a[1]), &to = str(a[2]);
    int64_t max = a[3].toInt();
    std::string out;
    size_t start = 0;
    int64_t done = 0;
    if (from.empty()) {
      // Python inserts `to` between characters.
      for (size_t i = 0; i <= s.size(); ++i) {
        if (max < 0 || done < max) {
          out += to;
          ++done;
        }
        if (i < s.size()) out += s[i];
      }
      return IValue(out);
    }
    while (max < 0 || done < max) {
      size_t pos = s.find(from, start);
      if (pos == std::string::npos) break;
      out += s.substr(start, pos - start) + to;
      start = pos + from.size();
      ++done;
    }
    out += s.substr(start);
    return IValue(out);
  });
}

// List, ord / chr, padding, partition, devices.
void registerStrConversionKernels(KernelRegistry& r) {
  defN<1>(r, "aten::list", [](const IValue* a) {
    std::vector<std::string> out;
    for (char c : str(a[0])) out.emplace_back(1, c);
    return strList(out);
  });
  defN<1>(r, "aten::ord", [](const IValue* a) {
    const auto& s = str(a[0]);
    if (s.size() != 1)
      throw ModelError(fmt::format(
          "TypeError: ord() expected a character, but string of length {} found", s.size()));
    return IValue(static_cast<int64_t>(static_cast<unsigned char>(s[0])));
  });
  defN<1>(r, "aten::chr", [](const IValue* a) {
    const int64_t c = a[0].toInt();
    if (c < 0 || c > 255) throw ModelError("ValueError: chr() arg not in range(256)");
    return IValue(std::string(1, static_cast<char>(c)));
  });
  defN<2>(r, "aten::zfill", [](const IValue* a) {
    std::string s = str(a[0]);
    const auto width = static_cast<size_t>(std::max<int64_t>(a[1].toInt(), 0));
    if (s.size() >= width) return IValue(s);
    checkAllocation(width, fmt::format("str.zfill({})", width));  // Note [Memory budget]
    const size_t sign = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    s.insert(sign, width - s.size(), '0');
    return IValue(s);
  });
  auto pad = [](const IValue* a, int where) {
    const std::string& s = str(a[0]);
    const auto width = static_cast<size_t>(std::max<int64_t>(a[1].toInt(), 0));
    const std::string& fill = str(a[2]);
    if (fill.size() != 1)
      throw ModelError("TypeError: The fill character must be exactly one character long");
    if (s.size() >= width) return IValue(s);
    checkAllocation(width, fmt::format("str.{}({})",
                                       where < 0   ? "ljust"
                                       : where > 0 ? "rjust"
                                                   : "center",
                                       width));
    const size_t total = width - s.size();
    size_t left = where < 0 ? 0 : where > 0 ? total : total / 2 + (total & width & 1);
    return IValue(std::string(left, fill[0]) + s + std::string(total - left, fill[0]));
  };
  defN<3>(r, "aten::ljust", [pad](const IValue* a) { return pad(a, -1); });
  defN<3>(r, "aten::rjust", [pad](const IValue* a) { return pad(a, 1); });
  defN<3>(r, "aten::center", [pad](const IValue* a) { return pad(a, 0); });
  defN<2>(r, "aten::partition", [](const IValue* a) {
    const std::string& s = str(a[0]);
    size_t pos = s.find(str(a[1]));
    if (pos == std::string::npos)
      return std::make_tuple(IValue(s), IValue(std::string()), IValue(std::string()));
    return std::make_tuple(IValue(s.substr(0, pos)), IValue(str(a[1])),
                           IValue(s.substr(pos + str(a[1]).size())));
  });
  defN<2>(r, "aten::rpartition", [](const IValue* a) {
    const std::string& s = str(a[0]);
    size_t pos = s.rfind(str(a[1]));
    if (pos == std::string::npos)
      return std::make_tuple(IValue(std::string()), IValue(std::string()), IValue(s));
    return std::make_tuple(IValue(s.substr(0, pos)), IValue(str(a[1])),
                           IValue(s.substr(pos + str(a[1]).size())));
  });
  defN<1>(r, "aten::device", [](const IValue* a) { return IValue(Device::parse(str(a[0]))); });
  defN<1>(r, "prim::type", [](const IValue* a) {
    return IValue(std::string(deviceTypeName(a[0].toDevice().type)));
  });
  defN<1>(r, "prim::index", [](const IValue* a) {
    const Device d = a[0].toDevice();
    return d.index < 0 ? IValue() : IValue(static_cast<int64_t>(d.index));
  });
  // An enum member's .name and .value (torchvision's InterpolationMode.value is a str).
  defN<1>(r, "prim::EnumName", [](const IValue* a) { return IValue(a[0].toEnum()->name); });
  for (const char* k : {"prim::EnumValue.int", "prim::EnumValue.float", "prim::EnumValue.str"})
    defN<1>(r, k, [](const IValue* a) { return a[0].toEnum()->value; });
}

}  // namespace

void registerBuiltinStrKernels(KernelRegistry& r) {
  registerStrFormatKernels(r);
  registerStrBasicKernels(r);
  registerStrSplitAndCaseKernels(r);
  registerStrSearchKernels(r);
  registerStrConversionKernels(r);
}

}  // namespace torchless
