#include "ir/symbol.h"

#include "core/error.h"

#include <deque>
#include <mutex>
#include <unordered_map>

namespace torchless {
namespace {

struct Entry {
  std::string qual;  // "aten::add"
  size_t sep;        // position of "::"
  Symbol ns;         // namespaces::aten
};

/// The process-wide table. Builtins are interned first, in declaration order, so their ids
/// equal their detail::BuiltinSymbol values.
class SymbolTable {
 public:
  SymbolTable() {
#define TORCHLESS_INTERN(ns, s) internLocked(#ns, #s);
    TORCHLESS_FORALL_NS_SYMBOLS(TORCHLESS_INTERN)
#undef TORCHLESS_INTERN
    TL_INTERNAL_ASSERT(entries_.size() == static_cast<size_t>(detail::BuiltinSymbol::kNumBuiltins));
  }

  Symbol intern(std::string_view ns, std::string_view name) {
    std::lock_guard<std::mutex> guard(mutex_);
    return internLocked(ns, name);
  }

  const Entry& entry(Symbol s) {
    std::lock_guard<std::mutex> guard(mutex_);
    TL_INTERNAL_ASSERT(s.value() < entries_.size(), "unknown symbol id {}", s.value());
    return entries_[s.value()];  // deque: references stay valid
  }

 private:
  Symbol internLocked(std::string_view ns, std::string_view name) {
    std::string qual;
    qual.reserve(ns.size() + 2 + name.size());
    qual.append(ns).append("::").append(name);
    auto it = index_.find(qual);
    if (it != index_.end()) return it->second;
    // The namespace symbol itself lives in `namespaces::`. `namespaces::namespaces` is its
    // own namespace.
    Symbol nsSym;
    if (ns == "namespaces") {
      nsSym = Symbol(static_cast<Symbol::unique_t>(entries_.size()));
      if (name != "namespaces") nsSym = internLocked("namespaces", "namespaces");
    } else {
      nsSym = internLocked("namespaces", ns);
    }
    Symbol sym(static_cast<Symbol::unique_t>(entries_.size()));
    entries_.push_back(Entry{qual, ns.size(), nsSym});
    index_.emplace(std::move(qual), sym);
    return sym;
  }

  std::mutex mutex_;
  std::deque<Entry> entries_;
  std::unordered_map<std::string, Symbol> index_;
};

SymbolTable& table() {
  static SymbolTable* t = new SymbolTable();  // never destroyed: Symbols outlive statics
  return *t;
}

}  // namespace

Symbol Symbol::fromQualString(std::string_view qualString) {
  size_t sep = qualString.find("::");
  if (sep == std::string_view::npos || sep == 0 || sep + 2 >= qualString.size())
    throw Error(
        fmt::format("'{}' is not a qualified symbol (expected namespace::name)", qualString));
  return table().intern(qualString.substr(0, sep), qualString.substr(sep + 2));
}

Symbol Symbol::fromDomainAndUnqualString(std::string_view ns, std::string_view name) {
  return table().intern(ns, name);
}

const std::string& Symbol::toQualString() const { return table().entry(*this).qual; }

std::string_view Symbol::toUnqualString() const {
  const Entry& e = table().entry(*this);
  return std::string_view(e.qual).substr(e.sep + 2);
}

Symbol Symbol::ns() const { return table().entry(*this).ns; }

std::string_view Symbol::domainString() const {
  const Entry& e = table().entry(*this);
  return std::string_view(e.qual).substr(0, e.sep);
}

bool Symbol::is_prim() const { return ns() == namespaces::prim; }
bool Symbol::is_aten() const { return ns() == namespaces::aten; }
bool Symbol::is_attr() const { return ns() == namespaces::attr; }
bool Symbol::is_onnx() const { return ns() == namespaces::onnx; }

}  // namespace torchless
