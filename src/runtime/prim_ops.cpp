// Kernels of the structural prim:: nodes the interpreter does not compile itself: container
// construction and unpacking, casts, exceptions, printing (torch/csrc/jit/runtime/
// register_prim_ops.cpp in spirit).

#include "core/error.h"
#include "runtime/kernel.h"

#include <functional>
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

// prim::tolist(x, dims, element type) -> a nested list (or a number when dims is 0), typed as
// the annotation it was compiled from (Emitter::emitToList): PyTorch's prim::tolist
// (torch/csrc/jit/runtime/register_prim_ops.cpp), its checks and messages included: int needs
// an int64 tensor, float a float32 or float64 one, bool a bool one; dims must be x.dim().
Operation toList(const Node& n) {
  TypePtr type = n.output()->type();
  return [type](Stack& s) {
    const int64_t code = pop(s).toInt();
    const int64_t dims = pop(s).toInt();
    Tensor t = pop(s).toTensor();
    const ScalarType st = t.dtype();
    if (code < 0 || code > 3)
      throw Error(
          "Unsupported element type for tolist; only int, float, complex and bool are supported");
    if (code == 3) throw Error("tolist() of complex tensors is not supported yet");
    const bool matches = code == 1   ? isFloatingType(st)
                         : code == 0 ? st == ScalarType::Long
                                     : st == ScalarType::Bool;
    if (!matches)
      throw Error(
          "Output annotation element type and runtime tensor element type must match for "
          "tolist()");
    if (dims != t.dim())
      throw Error(
          "Output annotation list dimension and runtime tensor dimension must match for "
          "tolist()");
    if (code == 1 && st != ScalarType::Float && st != ScalarType::Double)
      throw Error(
          fmt::format("Unexpected scalar type for Tensor: {} (tolist() reads float32 "
                      "and float64 tensors as float)",
                      toString(st)));
    Tensor c = t.contiguous();
    const IntList& sizes = c.sizes();
    auto number = [&](int64_t i) -> IValue {
      if (code == 0) return IValue(c.data<int64_t>()[i]);
      if (code == 2) return IValue(c.data<bool>()[i]);
      return IValue(st == ScalarType::Float ? static_cast<double>(c.data<float>()[i])
                                            : c.data<double>()[i]);
    };
    // Rows of dimension d starting at flat index `at` (`stride` elements per row of d).
    std::function<IValue(int64_t, int64_t, const TypePtr&)> build =
        [&](int64_t d, int64_t at, const TypePtr& ty) -> IValue {
      if (d == dims) return number(at);
      const TypePtr elem = ty->expect<ListType>().getElementType();
      int64_t stride = 1;
      for (int64_t k = d + 1; k < dims; ++k) stride *= sizes[static_cast<size_t>(k)];
      std::vector<IValue> items;
      items.reserve(static_cast<size_t>(sizes[static_cast<size_t>(d)]));
      for (int64_t i = 0; i < sizes[static_cast<size_t>(d)]; ++i)
        items.push_back(build(d + 1, at + i * stride, elem));
      return IValue(ListImpl::create(elem, std::move(items)));
    };
    s.push_back(build(0, 0, type));
  };
}

void registerPrimKernels(KernelRegistry& r) {
  r.registerNodeKernel(prim::tolist, toList);
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
