#include "tools/output_formats.h"

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/npy.h"
#include "serialize/zip_writer.h"

#include <nlohmann/json.hpp>

#include <unistd.h>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace torchless::cli {

namespace {

std::string keyText(const IValue& k) { return k.isString() ? k.toStringRef() : k.repr(); }

/// Calls fn(path, value) for every leaf of `v` (None skipped), depth first.
template <typename Fn>
void forEachLeaf(const IValue& v, const std::string& path, const Fn& fn) {
  auto child = [&](const std::string& k) { return path.empty() ? k : path + "/" + k; };
  switch (v.tag()) {
    case IValue::Tag::None: return;
    case IValue::Tag::List: {
      const auto& items = v.toList()->list;
      for (size_t i = 0; i < items.size(); ++i) forEachLeaf(items[i], child(std::to_string(i)), fn);
      return;
    }
    case IValue::Tag::Tuple: {
      const auto& items = v.toTuple()->elements;
      for (size_t i = 0; i < items.size(); ++i) forEachLeaf(items[i], child(std::to_string(i)), fn);
      return;
    }
    case IValue::Tag::Dict:
      for (const auto& [k, e] : v.toDict()->entries()) forEachLeaf(e, child(keyText(k)), fn);
      return;
    case IValue::Tag::Object: {
      const auto& obj = v.toObject();
      const auto& attrs = obj->type->attributes();
      for (size_t i = 0; i < attrs.size() && i < obj->slots.size(); ++i)
        forEachLeaf(obj->slots[i], child(attrs[i].name), fn);
      return;
    }
    default: fn(path.empty() ? std::string("output") : path, v);
  }
}

/// A 0-d numpy unicode array ('<U{n}', UTF-32 little endian) holding `s` (UTF-8).
std::string npyString(const std::string& s) {
  std::u32string wide;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n && i + static_cast<size_t>(k) < s.size(); ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + static_cast<size_t>(k)]) & 0x3F);
    wide.push_back(cp);
    i += static_cast<size_t>(n);
  }
  std::string header = fmt::format("{{'descr': '<U{}', 'fortran_order': False, 'shape': (), }}",
                                   std::max<size_t>(wide.size(), 1));
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  if (wide.empty()) wide.push_back(0);
  for (char32_t cp : wide)
    for (int b = 0; b < 4; ++b) out += static_cast<char>((cp >> (8 * b)) & 0xFF);
  return out;
}

nlohmann::ordered_json jsonNumber(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  return d;
}

nlohmann::ordered_json toJson(const IValue& v) {
  using J = nlohmann::ordered_json;
  switch (v.tag()) {
    case IValue::Tag::None: return nullptr;
    case IValue::Tag::Int: return v.toInt();
    case IValue::Tag::Double: return jsonNumber(v.toDouble());
    case IValue::Tag::Bool: return v.toBool();
    case IValue::Tag::String: return v.toStringRef();
    case IValue::Tag::List: {
      J a = J::array();
      for (const auto& e : v.toList()->list) a.push_back(toJson(e));
      return a;
    }
    case IValue::Tag::Tuple: {
      J a = J::array();
      for (const auto& e : v.toTuple()->elements) a.push_back(toJson(e));
      return a;
    }
    case IValue::Tag::Dict: {
      J o = J::object();
      for (const auto& [k, e] : v.toDict()->entries()) o[keyText(k)] = toJson(e);
      return o;
    }
    case IValue::Tag::Object: {
      J o = J::object();
      const auto& obj = v.toObject();
      const auto& attrs = obj->type->attributes();
      for (size_t i = 0; i < attrs.size() && i < obj->slots.size(); ++i)
        o[attrs[i].name] = toJson(obj->slots[i]);
      return o;
    }
    case IValue::Tag::Tensor: {
      const Tensor& t = v.toTensor();
      const ScalarType st = t.scalarType();
      J data = J::array();
      if (st == ScalarType::Bool) {
        Tensor c = t.contiguous();
        for (int64_t i = 0; i < c.numel(); ++i) data.push_back(c.data<bool>()[i]);
      } else if (isFloatingType(st)) {
        Tensor c = t.to(ScalarType::Double).contiguous();
        for (int64_t i = 0; i < c.numel(); ++i) data.push_back(jsonNumber(c.data<double>()[i]));
      } else if (isIntegralType(st, false)) {
        Tensor c = t.to(ScalarType::Long).contiguous();
        for (int64_t i = 0; i < c.numel(); ++i) data.push_back(c.data<int64_t>()[i]);
      } else {
        throw Error(fmt::format("cannot write a {} tensor as JSON", dtypeName(st)));
      }
      return J{{"dtype", dtypeName(st)}, {"shape", t.sizes()}, {"data", std::move(data)}};
    }
    default: throw Error(fmt::format("cannot write an output of kind {} as JSON", v.tagName()));
  }
}

}  // namespace

void writeNpz(const IValue& result, const std::string& path) {
  ZipWriter zip(path, "");
  forEachLeaf(result, "", [&](const std::string& key, const IValue& v) {
    std::string bytes;
    if (v.isTensor())
      bytes = npyBytes(v.toTensor().contiguous());
    else if (v.isInt())
      bytes = npyBytes(Tensor::scalar(v.toInt()));
    else if (v.isDouble())
      bytes = npyBytes(Tensor::scalar(v.toDouble()));
    else if (v.isBool())
      bytes = npyBytes(Tensor::scalarBool(v.toBool()));
    else if (v.isString())
      bytes = npyString(v.toStringRef());
    else
      throw Error(
          fmt::format("cannot write an output of kind {} into .npz ('{}')", v.tagName(), key));
    zip.writeRecord(key + ".npy", bytes.data(), bytes.size());
  });
  zip.finish();
}

void writeTextAtomically(const std::string& path, const std::string& text) {
  writeFileAtomically(path, text);
}

void writeJson(const IValue& result, const std::string& path) {
  writeTextAtomically(path, toJson(result).dump(1) + "\n");
}

}  // namespace torchless::cli
