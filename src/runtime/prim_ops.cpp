// Kernels of the structural prim:: nodes the interpreter does not compile itself: container
// construction and unpacking, casts, exceptions, printing (torch/csrc/jit/runtime/
// register_prim_ops.cpp in spirit).

#include "core/error.h"
#include "runtime/kernel.h"

#include <iostream>

namespace torchless {
namespace {

TypePtr listElementType(const Node& n) {
  const auto* l = n.output()->type()->cast<ListType>();
  return l ? l->getElementType() : AnyType::get();
}

Operation listConstruct(const Node& n) {
  const size_t count = n.inputs().size();
  TypePtr elem = listElementType(n);
  return [count, elem](Stack& s) {
    std::vector<IValue> values(
        std::make_move_iterator(s.end() - static_cast<std::ptrdiff_t>(count)),
        std::make_move_iterator(s.end()));
    drop(s, count);
    s.emplace_back(ListImpl::create(elem, std::move(values)));
  };
}

Operation listUnpack(const Node& n) {
  const size_t count = n.outputs().size();
  return [count](Stack& s) {
    IValue v = pop(s);
    const auto& list = v.toList()->list;
    if (list.size() != count)
      throw Error(fmt::format("Expected {} elements in a list but found {}", count, list.size()));
    for (const auto& e : list) s.push_back(e);
  };
}

Operation tupleConstruct(const Node& n) {
  const size_t count = n.inputs().size();
  TypePtr type = n.output()->type();
  const bool named = type->kind() == TypeKind::TupleType && type->expect<TupleType>().isNamed();
  return [count, type, named](Stack& s) {
    std::vector<IValue> values(
        std::make_move_iterator(s.end() - static_cast<std::ptrdiff_t>(count)),
        std::make_move_iterator(s.end()));
    drop(s, count);
    s.emplace_back(TupleImpl::create(std::move(values), named ? type : nullptr));
  };
}

Operation tupleUnpack(const Node& n) {
  const size_t count = n.outputs().size();
  return [count](Stack& s) {
    IValue v = pop(s);
    const auto& elems = v.toTuple()->elements;
    if (elems.size() != count)
      throw Error(fmt::format("Expected a tuple of {} elements but found {}", count, elems.size()));
    for (const auto& e : elems) s.push_back(e);
  };
}

Operation tupleIndex(const Node&) {
  return [](Stack& s) {
    int64_t i = pop(s).toInt();
    IValue t = pop(s);
    const auto& elems = t.toTuple()->elements;
    const auto n = static_cast<int64_t>(elems.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) throw Error("tuple index out of range");
    s.push_back(elems[static_cast<size_t>(i)]);
  };
}

Operation tupleSlice(const Node& n) {
  const int64_t beg = n.i(Symbol::attr("beg"));
  const int64_t end = n.i(Symbol::attr("end"));
  return [beg, end](Stack& s) {
    IValue t = pop(s);
    const auto& elems = t.toTuple()->elements;
    std::vector<IValue> out(elems.begin() + beg, elems.begin() + end);
    s.emplace_back(TupleImpl::create(std::move(out)));
  };
}

Operation dictConstruct(const Node& n) {
  const size_t count = n.inputs().size();
  const auto* dt = n.output()->type()->cast<DictType>();
  TypePtr key = dt ? dt->getKeyType() : AnyType::get();
  TypePtr value = dt ? dt->getValueType() : AnyType::get();
  return [count, key, value](Stack& s) {
    auto dict = DictImpl::create(key, value);
    const size_t base = s.size() - count;
    for (size_t i = 0; i < count; i += 2) dict->insertOrAssign(s[base + i], s[base + i + 1]);
    drop(s, count);
    s.emplace_back(dict);
  };
}

Operation identity(const Node&) {
  return [](Stack&) {};
}

Operation uninitialized(const Node&) {
  return [](Stack& s) { s.push_back(IValue::uninitialized()); };
}

// prim::RaiseException(str msg, str? cls=None): the model's own error.
Operation raiseException(const Node& n) {
  const size_t count = n.inputs().size();
  return [count](Stack& s) {
    std::string cls;
    if (count > 1) {
      IValue c = pop(s);
      if (c.isString()) cls = c.toStringRef();
    }
    std::string msg = pop(s).toStringRef();
    // "builtins.RuntimeError" -> "RuntimeError"
    auto dot = cls.rfind('.');
    std::string shortCls = dot == std::string::npos ? cls : cls.substr(dot + 1);
    throw ModelError(shortCls.empty() ? msg : shortCls + ": " + msg);
  };
}

// prim::Print(...): values separated by spaces, as TorchScript's print.
Operation print(const Node& n) {
  const size_t count = n.inputs().size();
  return [count](Stack& s) {
    std::string line;
    for (size_t i = s.size() - count; i < s.size(); ++i) {
      if (!line.empty()) line += ' ';
      line += s[i].isString() ? s[i].toStringRef() : s[i].repr();
    }
    drop(s, count);
    std::cout << line << std::endl;
  };
}

Operation uncheckedUnwrapOptional(const Node&) {
  return [](Stack& s) {
    if (s.back().isNone()) throw Error("Expected a value, got None (unwrapping an Optional)");
  };
}

Operation enterExit(const Node& n) {
  // prim::Enter/Exit of context managers (torch.no_grad): no effect at inference.
  const bool isEnter = n.kind() == prim::Enter;
  return [isEnter](Stack& s) {
    if (!isEnter) {
      s.pop_back();
      s.emplace_back();
    }
  };
}

Operation createObject(const Node& n) {
  auto cls = n.output()->type()->castPtr<ClassType>();
  TL_CHECK(cls != nullptr, "prim::CreateObject of a non-class type {}", n.output()->type()->str());
  auto mutableCls = std::const_pointer_cast<ClassType>(cls);
  return [mutableCls](Stack& s) { s.emplace_back(Object::create(mutableCls)); };
}

// prim::isinstance[types=[...]](Any v) -> bool: true when v's run-time type is a subtype of one
// of the types (PyTorch's isinstance op; `list` / `tuple` are AnyListType / AnyTupleType, which
// every list / tuple type is a subtype of).
Operation isinstance(const Node& n) {
  std::vector<TypePtr> types = n.tys(attr::types);
  return [types](Stack& s) {
    IValue v = pop(s);
    TypePtr t = v.type();
    bool result = false;
    for (const auto& candidate : types)
      if (t->isSubtypeOf(*candidate)) {
        result = true;
        break;
      }
    s.emplace_back(result);
  };
}

}  // namespace

void registerPrimKernels(KernelRegistry& r) {
  r.registerNodeKernel(prim::isinstance, isinstance);
  r.registerNodeKernel(prim::ListConstruct, listConstruct);
  r.registerNodeKernel(prim::ListUnpack, listUnpack);
  r.registerNodeKernel(prim::TupleConstruct, tupleConstruct);
  r.registerNodeKernel(prim::TupleUnpack, tupleUnpack);
  r.registerNodeKernel(prim::TupleIndex, tupleIndex);
  r.registerNodeKernel(prim::TupleSlice, tupleSlice);
  r.registerNodeKernel(prim::DictConstruct, dictConstruct);
  r.registerNodeKernel(prim::unchecked_cast, identity);
  r.registerNodeKernel(prim::unchecked_unwrap_optional, uncheckedUnwrapOptional);
  r.registerNodeKernel(prim::Uninitialized, uninitialized);
  r.registerNodeKernel(prim::RaiseException, raiseException);
  r.registerNodeKernel(prim::Print, print);
  r.registerNodeKernel(prim::Enter, enterExit);
  r.registerNodeKernel(prim::Exit, enterExit);
  r.registerNodeKernel(prim::CreateObject, createObject);
}

}  // namespace torchless
