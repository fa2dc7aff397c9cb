// Kernels of TorchScript's list builtins (Python list semantics: negative indices, slices with
// steps, IndexError/ValueError as the model's own errors), following
// torch/csrc/jit/runtime/register_prim_ops.cpp.

#include "core/error.h"
#include "core/memory_budget.h"
#include "runtime/register_utils.h"

#include <algorithm>

namespace torchless {
namespace {

using namespace kreg;

int64_t normalizeIndex(int64_t i, size_t size, const char* what) {
  const auto n = static_cast<int64_t>(size);
  if (i < 0) i += n;
  if (i < 0 || i >= n) throw ModelError(fmt::format("IndexError: {} index out of range", what));
  return i;
}

ListPtr newList(const ListPtr& like, std::vector<IValue> values) {
  return ListImpl::create(like->elementType, std::move(values));
}

// Python's slice bounds: clamps start/end for a sequence of length n and step.
void sliceIndices(int64_t n, const IValue& startV, const IValue& endV, int64_t step, int64_t& start,
                  int64_t& end) {
  if (step == 0) throw ModelError("ValueError: slice step cannot be zero");
  auto norm = [&](const IValue& v, int64_t dflt, bool isStart) {
    if (v.isNone()) return dflt;
    int64_t i = v.toInt();
    if (i < 0) i += n;
    if (step > 0) return std::clamp<int64_t>(i, 0, n);
    (void)isStart;
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  start = norm(startV, step > 0 ? 0 : n - 1, true);
  end = norm(endV, step > 0 ? n : -1, false);
}

// Python's ordering of list elements (ints, floats, bools, strs; tensors by their value).
bool lessThan(const IValue& a, const IValue& b) {
  if (a.isString() && b.isString()) return a.toStringRef() < b.toStringRef();
  if (a.isTensor() && b.isTensor()) return a.toTensor().itemDouble() < b.toTensor().itemDouble();
  return a.toScalarDouble() < b.toScalarDouble();
}

void sortList(std::vector<IValue>& l, bool reverse) {
  if (reverse)
    std::stable_sort(l.begin(), l.end(),
                     [](const IValue& a, const IValue& b) { return lessThan(b, a); });
  else
    std::stable_sort(l.begin(), l.end(), lessThan);
}

bool truthy(const IValue& v) {
  if (v.isString()) return !v.toStringRef().empty();
  return v.toScalarDouble() != 0.0;
}

}  // namespace

void registerBuiltinListKernels(KernelRegistry& r) {
  for (const char* name : {"aten::len.t", "aten::len.any"})
    defN<1>(r, name, [](const IValue* a) {
      return IValue(static_cast<int64_t>(a[0].toList()->list.size()));
    });
  defN<2>(r, "aten::append.t", [](const IValue* a) {
    a[0].toList()->list.push_back(a[1]);
    return a[0];
  });
  defN<2>(r, "aten::extend.t", [](const IValue* a) {
    auto self = a[0].toList();
    const auto other = a[1].toList()->list;  // copy: l.extend(l) is allowed
    self->list.insert(self->list.end(), other.begin(), other.end());
  });
  defN<3>(r, "aten::insert.t", [](const IValue* a) {
    auto& l = a[0].toList()->list;
    const auto n = static_cast<int64_t>(l.size());
    int64_t i = a[1].toInt();
    if (i < 0) i = std::max<int64_t>(i + n, 0);
    i = std::min(i, n);
    l.insert(l.begin() + i, a[2]);
  });
  defN<2>(r, "aten::pop.t", [](const IValue* a) {
    auto& l = a[0].toList()->list;
    if (l.empty()) throw ModelError("IndexError: pop from empty list");
    const int64_t i = normalizeIndex(a[1].toInt(), l.size(), "pop");
    IValue v = l[static_cast<size_t>(i)];
    l.erase(l.begin() + i);
    return v;
  });
  for (const char* name : {"aten::remove.int", "aten::remove.float", "aten::remove.bool",
                           "aten::remove.str", "aten::remove.Tensor"})
    defN<2>(r, name, [](const IValue* a) {
      auto& l = a[0].toList()->list;
      auto it = std::find_if(l.begin(), l.end(), [&](const IValue& v) { return v.equals(a[1]); });
      if (it == l.end()) throw ModelError("ValueError: list.remove(x): x not in list");
      l.erase(it);
    });
  defN<1>(r, "aten::clear.t", [](const IValue* a) { a[0].toList()->list.clear(); });
  defN<1>(r, "aten::reverse.t", [](const IValue* a) {
    auto& l = a[0].toList()->list;
    std::reverse(l.begin(), l.end());
  });
  defN<2>(r, "aten::Delete.t", [](const IValue* a) {
    auto& l = a[0].toList()->list;
    l.erase(l.begin() + normalizeIndex(a[1].toInt(), l.size(), "list assignment"));
  });
  for (const char* name : {"aten::copy.t", "aten::list.t", "aten::Size"})
    defN<1>(r, name, [](const IValue* a) {
      auto l = a[0].toList();
      return IValue(newList(l, l->list));
    });
  for (const char* name : {"aten::__getitem__.t", "aten::select.t"})
    defN<2>(r, name, [](const IValue* a) {
      const auto& l = a[0].toList()->list;
      return l[static_cast<size_t>(normalizeIndex(a[1].toInt(), l.size(), "list"))];
    });
  defN<3>(r, "aten::_set_item.t", [](const IValue* a) {
    auto& l = a[0].toList()->list;
    l[static_cast<size_t>(normalizeIndex(a[1].toInt(), l.size(), "list assignment"))] = a[2];
    return a[0];
  });
  defN<4>(r, "aten::slice.t", [](const IValue* a) {
    auto l = a[0].toList();
    const int64_t step = a[3].toInt();
    int64_t start = 0, end = 0;
    sliceIndices(static_cast<int64_t>(l->list.size()), a[1], a[2], step, start, end);
    std::vector<IValue> out;
    for (int64_t i = start; step > 0 ? i < end : i > end; i += step)
      out.push_back(l->list[static_cast<size_t>(i)]);
    return IValue(newList(l, std::move(out)));
  });
  for (const char* name : {"aten::__contains__.int_list", "aten::__contains__.float_list",
                           "aten::__contains__.str_list"})
    defN<2>(r, name, [](const IValue* a) {
      const auto& l = a[0].toList()->list;
      return IValue(
          std::any_of(l.begin(), l.end(), [&](const IValue& v) { return v.equals(a[1]); }));
    });
  for (const char* name :
       {"aten::index.list_int", "aten::index.list_float", "aten::index.list_bool",
        "aten::index.list_str", "aten::index.list_Tensor"})
    defN<2>(r, name, [](const IValue* a) {
      const auto& l = a[0].toList()->list;
      for (size_t i = 0; i < l.size(); ++i)
        if (l[i].equals(a[1])) return IValue(static_cast<int64_t>(i));
      throw ModelError(fmt::format("ValueError: {} is not in list", a[1].repr()));
    });
  for (const char* name : {"aten::count.int", "aten::count.float", "aten::count.bool",
                           "aten::count.str", "aten::count.Tensor"})
    if (OperatorRegistry::global().findOverload(name))
      defN<2>(r, name, [](const IValue* a) {
        const auto& l = a[0].toList()->list;
        return IValue(static_cast<int64_t>(
            std::count_if(l.begin(), l.end(), [&](const IValue& v) { return v.equals(a[1]); })));
      });
  for (const char* name : {"aten::sort.int", "aten::sort.float", "aten::sort.bool",
                           "aten::sort.str", "aten::sort.Tensor", "aten::sort.any"})
    defN<2>(r, name, [](const IValue* a) { sortList(a[0].toList()->list, a[1].toBool()); });
  for (const char* name : {"aten::sorted.int", "aten::sorted.float", "aten::sorted.bool",
                           "aten::sorted.str", "aten::sorted.Tensor", "aten::sorted.any"})
    defN<1>(r, name, [](const IValue* a) {
      auto l = a[0].toList();
      auto out = newList(l, l->list);
      sortList(out->list, false);
      return IValue(out);
    });
  defN<1>(r, "aten::sum.int", [](const IValue* a) {
    int64_t s = 0;
    for (const auto& v : a[0].toList()->list) s += v.toInt();
    return IValue(s);
  });
  defN<1>(r, "aten::sum.bool", [](const IValue* a) {
    int64_t s = 0;
    for (const auto& v : a[0].toList()->list) s += v.toBool() ? 1 : 0;
    return IValue(s);
  });
  defN<1>(r, "aten::sum.float", [](const IValue* a) {
    double s = 0;
    for (const auto& v : a[0].toList()->list) s += v.toDouble();
    return IValue(s);
  });
  for (const char* name : {"aten::all.int", "aten::all.float", "aten::all.bool"})
    defN<1>(r, name, [](const IValue* a) {
      const auto& l = a[0].toList()->list;
      return IValue(std::all_of(l.begin(), l.end(), truthy));
    });
  for (const char* name : {"aten::any.int", "aten::any.float", "aten::any.bool", "aten::any.str"})
    defN<1>(r, name, [](const IValue* a) {
      const auto& l = a[0].toList()->list;
      return IValue(std::any_of(l.begin(), l.end(), truthy));
    });
  // max(list) / min(list).
  for (const char* name : {"prim::max.self_int", "prim::max.self_float", "prim::max.self_bool"})
    defN<1>(r, name, [](const IValue* a) {
      const auto& l = a[0].toList()->list;
      if (l.empty()) throw ModelError("ValueError: max() arg is an empty sequence");
      return *std::max_element(l.begin(), l.end(), lessThan);
    });
  for (const char* name : {"prim::min.self_int", "prim::min.self_float", "prim::min.self_bool"})
    defN<1>(r, name, [](const IValue* a) {
      const auto& l = a[0].toList()->list;
      if (l.empty()) throw ModelError("ValueError: min() arg is an empty sequence");
      return *std::min_element(l.begin(), l.end(), lessThan);
    });
  // max(l, r) / min(l, r) of two lists: lexicographic.
  auto lexLess = [](const IValue& x, const IValue& y) {
    const auto &a = x.toList()->list, &b = y.toList()->list;
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), lessThan);
  };
  for (const char* name : {"prim::max.int_list", "prim::max.float_list", "prim::max.bool_list"})
    defN<2>(r, name, [lexLess](const IValue* a) { return lexLess(a[0], a[1]) ? a[1] : a[0]; });
  for (const char* name : {"prim::min.int_list", "prim::min.float_list", "prim::min.bool_list"})
    defN<2>(r, name, [lexLess](const IValue* a) { return lexLess(a[1], a[0]) ? a[1] : a[0]; });

  defN<2>(r, "aten::add.t", [](const IValue* a) {
    auto l = a[0].toList();
    std::vector<IValue> out = l->list;
    const auto& b = a[1].toList()->list;
    out.insert(out.end(), b.begin(), b.end());
    return IValue(newList(l, std::move(out)));
  });
  defN<2>(r, "aten::add_.t", [](const IValue* a) {
    auto self = a[0].toList();
    const auto other = a[1].toList()->list;
    self->list.insert(self->list.end(), other.begin(), other.end());
    return a[0];
  });
  auto repeat = [](const ListPtr& l, int64_t n) {
    std::vector<IValue> out;
    if (n > 0 && !l->list.empty()) {  // Note [Memory budget]: `[0] * 10**12`
      size_t count = l->list.size();
      if (static_cast<uint64_t>(n) > SIZE_MAX / sizeof(IValue) / count)
        throw Error(fmt::format("list * {}: the result's size overflows", n));
      checkAllocation(count * static_cast<size_t>(n) * sizeof(IValue),
                      fmt::format("list * {} ({} elements)", n, count * static_cast<size_t>(n)));
      out.reserve(count * static_cast<size_t>(n));
    }
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), l->list.begin(), l->list.end());
    return out;
  };
  defN<2>(r, "aten::mul.left_t", [repeat](const IValue* a) {
    auto l = a[0].toList();
    return IValue(newList(l, repeat(l, a[1].toInt())));
  });
  defN<2>(r, "aten::mul.right_", [repeat](const IValue* a) {
    auto l = a[1].toList();
    return IValue(newList(l, repeat(l, a[0].toInt())));
  });
  defN<2>(r, "aten::mul_.t", [repeat](const IValue* a) {
    auto l = a[0].toList();
    l->list = repeat(l, a[1].toInt());
    return a[0];
  });
  for (const char* name :
       {"aten::eq.int_list", "aten::eq.float_list", "aten::eq.bool_list", "aten::eq.str_list"})
    defN<2>(r, name, [](const IValue* a) { return IValue(a[0].equals(a[1])); });
  for (const char* name :
       {"aten::ne.int_list", "aten::ne.float_list", "aten::ne.bool_list", "aten::ne.str_list"})
    defN<2>(r, name, [](const IValue* a) { return IValue(!a[0].equals(a[1])); });
  defN<1>(r, "prim::rangelist", [](const IValue* a) {
    std::vector<IValue> out;
    for (int64_t i = 0; i < a[0].toInt(); ++i) out.emplace_back(i);
    return IValue(ListImpl::create(IntType::get(), std::move(out)));
  });
}

}  // namespace torchless
