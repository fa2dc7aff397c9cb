#include "api/cli_io.h"

#include "core/error.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <random>

namespace torchless {
namespace {

bool endsWith(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::optional<int64_t> asInt(const std::string& w) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
  if (ec == std::errc() && p == w.data() + w.size() && !w.empty()) return v;
  return std::nullopt;
}

std::optional<double> asDouble(const std::string& w) {
  if (w.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(w.c_str(), &end);
  if (end == w.c_str() + w.size()) return v;
  return std::nullopt;
}

bool isTensorWord(const std::string& w) {
  return endsWith(w, ".npy") || w.rfind("@input:", 0) == 0;
}

// The value of one word with no type to guide it (the cli.md literal rules).
IValue literal(const std::string& w, const TensorLoader& load) {
  if (isTensorWord(w)) return IValue(load(w));
  if (w == "true") return IValue(true);
  if (w == "false") return IValue(false);
  if (w == "none") return IValue();
  if (auto i = asInt(w)) return IValue(*i);
  if (auto d = asDouble(w)) return IValue(*d);
  return IValue(w);
}

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

[[noreturn]] void bad(const ParamSpec& p, const std::string& what) {
  throw Error(fmt::format("argument '{}' ({}): {}", p.name, p.type->annotationStr(), what));
}

// Converts a word to the parameter's type.
IValue convert(const ParamSpec& p, const TypePtr& type, const std::string& w,
               const TensorLoader& load) {
  const Type& t = *type;
  if (const auto* opt = t.cast<OptionalType>()) {
    if (w == "none") return IValue();
    return convert(p, opt->getElementType(), w, load);
  }
  switch (t.kind()) {
    case TypeKind::TensorType:
      if (w.rfind("@list:", 0) == 0 || w.rfind("@dict:", 0) == 0)
        bad(p,
            fmt::format("expected a .npy file, got the {} '{}'", w[1] == 'l' ? "list" : "dict", w));
      if (!isTensorWord(w)) bad(p, fmt::format("expected a .npy file, got '{}'", w));
      return IValue(load(w));
    case TypeKind::IntType:
      if (auto i = asInt(w)) return IValue(*i);
      bad(p, fmt::format("expected an int, got '{}'", w));
    case TypeKind::FloatType:
      if (auto d = asDouble(w)) return IValue(*d);
      bad(p, fmt::format("expected a float, got '{}'", w));
    case TypeKind::BoolType:
      if (w == "true") return IValue(true);
      if (w == "false") return IValue(false);
      bad(p, fmt::format("expected true or false, got '{}'", w));
    case TypeKind::StringType: return IValue(w);
    case TypeKind::NoneType:
      if (w == "none") return IValue();
      bad(p, fmt::format("expected none, got '{}'", w));
    case TypeKind::NumberType:
      if (auto i = asInt(w)) return IValue(*i);
      if (auto d = asDouble(w)) return IValue(*d);
      bad(p, fmt::format("expected a number, got '{}'", w));
    case TypeKind::ListType: {
      const auto& elem = t.expect<ListType>().getElementType();
      if (w.rfind("@list:", 0) != 0) bad(p, fmt::format("expected @list:a,b,... got '{}'", w));
      auto list = ListImpl::create(elem);
      std::string body = w.substr(6);
      if (!body.empty())
        for (const auto& item : splitComma(body))
          list->list.push_back(convert(p, elem, item, load));
      return IValue(list);
    }
    case TypeKind::DictType: {
      const auto& d = t.expect<DictType>();
      if (w.rfind("@dict:", 0) != 0) bad(p, fmt::format("expected @dict:k=v,... got '{}'", w));
      auto dict = DictImpl::create(d.getKeyType(), d.getValueType());
      std::string body = w.substr(6);
      if (!body.empty()) {
        for (const auto& item : splitComma(body)) {
          auto eq = item.find('=');
          if (eq == std::string::npos) bad(p, fmt::format("dict entry '{}' has no '='", item));
          IValue key = convert(p, d.getKeyType(), item.substr(0, eq), load);
          dict->insertOrAssign(key, convert(p, d.getValueType(), item.substr(eq + 1), load));
        }
      }
      return IValue(dict);
    }
    case TypeKind::AnyType: return literal(w, load);
    case TypeKind::UnionType: {
      // The first member the word converts to, the narrowest first whatever order the
      // annotation (or the archive's sorted union) gives: a number is an int before a float,
      // and a str takes the word only when nothing else does.
      auto rank = [](const TypePtr& m) {
        switch (m->kind()) {
          case TypeKind::NoneType: return 0;
          case TypeKind::BoolType: return 1;
          case TypeKind::IntType: return 2;
          case TypeKind::FloatType: return 3;
          case TypeKind::NumberType: return 4;
          case TypeKind::StringType: return 6;
          default: return 5;
        }
      };
      std::vector<TypePtr> members = t.expect<UnionType>().types();
      std::stable_sort(members.begin(), members.end(),
                       [&](const TypePtr& a, const TypePtr& b) { return rank(a) < rank(b); });
      for (const TypePtr& member : members) {
        try {
          return convert(p, member, w, load);
        } catch (const Error&) {
        }
      }
      bad(p, fmt::format("'{}' is none of the union's types", w));
    }
    default: bad(p, fmt::format("cannot be given on the command line (got '{}')", w));
  }
}

}  // namespace

InputSpec parseInputSpec(const std::string& spec) {
  auto fail = [&](const std::string& what) -> InputSpec {
    throw Error(
        fmt::format("input spec '{}': {} (expected SIZExSIZE...[:DTYPE[:random|zeros|ones]], "
                    "e.g. 1x3x224x224 or 1x128:int64)",
                    spec, what));
  };
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t colon = spec.find(':', start);
    parts.push_back(
        spec.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3) return fail("too many ':' fields");
  InputSpec out;
  if (parts[0] != "scalar") {
    double elements = 1;
    for (size_t start = 0;;) {
      size_t x = parts[0].find('x', start);
      std::string d =
          parts[0].substr(start, x == std::string::npos ? std::string::npos : x - start);
      auto v = asInt(d);
      if (!v || *v < 0) return fail(fmt::format("'{}' is not a size", d));
      out.sizes.push_back(*v);
      elements *= static_cast<double>(*v);
      if (x == std::string::npos) break;
      start = x + 1;
    }
    if (out.sizes.size() > 16) return fail("more than 16 dimensions");
    if (elements > 2147483648.0) return fail("more than 2^31 elements");
  }
  if (parts.size() > 1) {
    auto t = scalarTypeFromDtypeName(parts[1]);
    if (!t) return fail(fmt::format("unknown dtype '{}'", parts[1]));
    out.dtype = *t;
  }
  if (parts.size() > 2) {
    if (parts[2] == "random")
      out.fill = InputSpec::Fill::Random;
    else if (parts[2] == "zeros")
      out.fill = InputSpec::Fill::Zeros;
    else if (parts[2] == "ones")
      out.fill = InputSpec::Fill::Ones;
    else
      return fail(fmt::format("unknown fill '{}'", parts[2]));
  }
  return out;
}

Tensor tensorFromSpec(const InputSpec& spec, uint64_t seed) {
  // Generated in float64 / int64 and converted, so every dtype gets the same values.
  const bool floating = isFloatingType(spec.dtype);
  Tensor t = Tensor::empty(spec.sizes, floating ? ScalarType::Double : ScalarType::Long);
  std::mt19937_64 gen(seed);
  const int64_t n = t.numel();
  if (floating) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    double* p = t.data<double>();
    for (int64_t i = 0; i < n; ++i)
      p[i] = spec.fill == InputSpec::Fill::Random ? u(gen)
             : spec.fill == InputSpec::Fill::Ones ? 1.0
                                                  : 0.0;
  } else {
    const int64_t hi = spec.dtype == ScalarType::Bool ? 1 : 9;
    std::uniform_int_distribution<int64_t> u(0, hi);
    int64_t* p = t.data<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      p[i] = spec.fill == InputSpec::Fill::Random ? u(gen)
             : spec.fill == InputSpec::Fill::Ones ? 1
                                                  : 0;
  }
  return t.to(spec.dtype);
}

std::string inputSpecWord(size_t k) { return "@input:" + std::to_string(k); }

std::vector<IValue> parseInputs(const std::vector<std::string>& words,
                                const std::vector<ParamSpec>& params, const TensorLoader& load) {
  std::vector<IValue> args;
  size_t next = 0;
  for (const auto& p : params) {
    const auto* tuple = p.type->cast<TupleType>();
    // Optional[Tuple[...]] takes the tuple's n inputs like a Tuple, or one `none`.
    if (const auto* opt = p.type->cast<OptionalType>()) {
      tuple = opt->getElementType()->cast<TupleType>();
      if (tuple && next < words.size() && words[next] == "none") {
        args.emplace_back();
        ++next;
        continue;
      }
    }
    const size_t needed = tuple ? tuple->elements().size() : 1;
    if (next >= words.size()) {
      if (p.defaultValue) {
        args.push_back(*p.defaultValue);
        continue;
      }
      size_t required = 0;
      for (const auto& q : params) required += q.defaultValue ? 0 : 1;
      const size_t optional = params.size() - required;
      throw Error(fmt::format(
          "missing input for argument '{}' ({}): {} input{} given, the method takes {}{}", p.name,
          p.type->annotationStr(), words.size(), words.size() == 1 ? "" : "s", required,
          optional ? fmt::format(" (and {} optional)", optional) : std::string()));
    }
    if (tuple) {
      if (next + needed > words.size())
        bad(p, fmt::format("a tuple of {} takes {} inputs, only {} left", needed, needed,
                           words.size() - next));
      std::vector<IValue> elems;
      for (size_t i = 0; i < needed; ++i)
        elems.push_back(convert(p, tuple->elements()[i], words[next + i], load));
      const TypePtr& tupleType = p.type->kind() == TypeKind::OptionalType
                                     ? p.type->expect<OptionalType>().getElementType()
                                     : p.type;
      args.emplace_back(
          TupleImpl::create(std::move(elems), tuple->isNamed() ? tupleType : nullptr));
    } else {
      args.push_back(convert(p, p.type, words[next], load));
    }
    next += needed;
  }
  if (next < words.size())
    throw Error(fmt::format("too many inputs: the method takes {} argument{}, {} input{} given",
                            params.size(), params.size() == 1 ? "" : "s", words.size(),
                            words.size() == 1 ? "" : "s"));
  return args;
}

namespace {

void flatten(const IValue& v, std::vector<FlatOutput>& out) {
  auto add = [&](std::optional<Tensor> t, std::optional<std::string> text) {
    FlatOutput o;
    o.fileName = fmt::format("out{}.{}", out.size(), text ? "txt" : "npy");
    o.tensor = std::move(t);
    o.text = std::move(text);
    out.push_back(std::move(o));
  };
  switch (v.tag()) {
    case IValue::Tag::None: return;
    case IValue::Tag::Tensor: add(v.toTensor(), std::nullopt); return;
    case IValue::Tag::Int:
      add(Tensor::scalar(v.toInt()), std::nullopt);
      out.back().scalar = v;
      return;
    case IValue::Tag::Double:
      add(Tensor::scalar(v.toDouble()), std::nullopt);
      out.back().scalar = v;
      return;
    case IValue::Tag::Bool:
      add(Tensor::scalarBool(v.toBool()), std::nullopt);
      out.back().scalar = v;
      return;
    case IValue::Tag::String: add(std::nullopt, v.toStringRef()); return;
    case IValue::Tag::List: {
      // A List[str] is one text output, one line per element (not a file per word).
      const auto& items = v.toList()->list;
      const bool strings =
          !items.empty() &&
          std::all_of(items.begin(), items.end(), [](const IValue& e) { return e.isString(); });
      if (strings) {
        std::string text;
        for (const auto& e : items) text += e.toStringRef() + "\n";
        text.pop_back();
        add(std::nullopt, std::move(text));
        return;
      }
      for (const auto& e : items) flatten(e, out);
      return;
    }
    case IValue::Tag::Tuple:
      for (const auto& e : v.toTuple()->elements) flatten(e, out);
      return;
    case IValue::Tag::Dict: {
      std::vector<std::pair<IValue, IValue>> entries = v.toDict()->entries();
      std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
        const IValue &x = a.first, &y = b.first;
        if (x.isString() && y.isString()) return x.toStringRef() < y.toStringRef();
        if (x.isScalar() && y.isScalar()) return x.toScalarDouble() < y.toScalarDouble();
        return false;
      });
      for (const auto& [k, e] : entries) flatten(e, out);
      return;
    }
    case IValue::Tag::Object:
      for (const auto& slot : v.toObject()->slots) flatten(slot, out);
      return;
    default: throw Error(fmt::format("cannot write an output of kind {}", v.tagName()));
  }
}

}  // namespace

std::vector<FlatOutput> flattenOutputs(const IValue& result) {
  std::vector<FlatOutput> out;
  flatten(result, out);
  return out;
}

std::string describeOutput(const FlatOutput& out) {
  if (out.text) return fmt::format("{}: str (len {})", out.fileName, out.text->size());
  const Tensor& t = *out.tensor;
  return fmt::format("{}: {} {}", out.fileName, dtypeName(t.dtype()), sizesToString(t.sizes()));
}

}  // namespace torchless
