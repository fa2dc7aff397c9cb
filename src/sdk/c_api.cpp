// The C API (include/torchless/c_api.h) over the C++ API (api/module.h, core/).
#include "torchless/c_api.h"

#include "api/module.h"
#include "core/error.h"
#include "core/ivalue.h"
#include "core/tensor.h"
#include "ir/ir.h"
#include "ir/operator_registry.h"
#include "ops/parallel.h"
#include "ops/shape.h"
#include "runtime/kernel.h"
#include "sdk/tensor_format.h"

#include <fmt/format.h>

#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

struct tl_module {
  torchless::Module module;
  std::vector<std::string> methods;
};
struct tl_tensor {
  torchless::Tensor tensor;
};
struct tl_value {
  torchless::IValue value;
  /// Keeps a submodule's code alive (set for module objects read from a module).
  std::shared_ptr<torchless::CompilationUnit> unit;
};
/// One op-table entry made callable: a one-node graph whose node the kernel was made for.
struct tl_op {
  const torchless::OpInfo* info = nullptr;
  std::shared_ptr<torchless::Graph> graph;
  torchless::Operation operation;
  size_t numArguments = 0;
  size_t numReturns = 0;
};

namespace {

using namespace torchless;

thread_local std::string tlsError;

/// A misuse of the API (NULL handle, wrong kind of value): TL_ERROR_INVALID_ARGUMENT.
struct InvalidArgument : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename F>
tl_status guarded(F&& f) {
  try {
    f();
    return TL_OK;
  } catch (const InvalidArgument& e) {
    tlsError = e.what();
    return TL_ERROR_INVALID_ARGUMENT;
  } catch (const ModelError& e) {
    tlsError = e.what();
    return TL_ERROR_MODEL;
  } catch (const UnsupportedError& e) {
    tlsError = e.what();
    return TL_ERROR_UNSUPPORTED;
  } catch (const std::exception& e) {
    tlsError = e.what();
    return TL_ERROR;
  } catch (...) {
    tlsError = "unknown error";
    return TL_ERROR;
  }
}

template <typename T>
T& need(T* p, const char* what) {
  if (!p) throw InvalidArgument(fmt::format("{} is NULL", what));
  return *p;
}
template <typename T>
const T& need(const T* p, const char* what) {
  if (!p) throw InvalidArgument(fmt::format("{} is NULL", what));
  return *p;
}
void needOut(const void* p) {
  if (!p) throw InvalidArgument("the output pointer is NULL");
}

ScalarType checkedDtype(tl_dtype d) {
  switch (d) {
    case TL_UINT8:
    case TL_INT8:
    case TL_INT16:
    case TL_INT32:
    case TL_INT64:
    case TL_FLOAT16:
    case TL_FLOAT32:
    case TL_FLOAT64:
    case TL_BOOL:
    case TL_BFLOAT16: return static_cast<ScalarType>(d);
  }
  throw InvalidArgument(fmt::format("unknown dtype code {}", static_cast<int>(d)));
}

IntList checkedSizes(const int64_t* sizes, size_t ndim) {
  if (ndim > 0 && !sizes) throw InvalidArgument("sizes is NULL");
  if (ndim > 64) throw InvalidArgument(fmt::format("{} dimensions (at most 64)", ndim));
  IntList s(sizes, sizes + ndim);
  for (size_t i = 0; i < ndim; ++i)
    if (s[i] < 0) throw InvalidArgument(fmt::format("negative size {} in dimension {}", s[i], i));
  return s;
}

std::vector<IValue> argsOf(tl_value* const* args, size_t n) {
  if (n > 0 && !args) throw InvalidArgument("args is NULL");
  std::vector<IValue> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!args[i]) throw InvalidArgument(fmt::format("argument {} is NULL", i));
    out.push_back(args[i]->value);
  }
  return out;
}

tl_value* newValue(IValue v) { return new tl_value{std::move(v), nullptr}; }

char* dupString(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

/// The element type of a list made of `elems` (List[Tensor] when empty).
TypePtr listElementType(const std::vector<IValue>& elems) {
  if (elems.empty()) return TensorType::get();
  auto kindOf = [](const IValue& v) -> TypePtr {
    if (v.isTensor()) return TensorType::get();
    if (v.isInt()) return IntType::get();
    if (v.isDouble()) return FloatType::get();
    if (v.isBool()) return BoolType::get();
    if (v.isString()) return StringType::get();
    return v.type();
  };
  TypePtr t = kindOf(elems[0]);
  for (size_t i = 1; i < elems.size(); ++i)
    if (*kindOf(elems[i]) != *t) return AnyType::get();
  return t;
}

const OpInfo* findOverloadWithKernel(const std::string& key) {
  initKernels();
  const OpInfo* info = OperatorRegistry::global().findOverload(key);
  if (!info) throw Error(fmt::format("unknown operator '{}' (see `torchless ops`)", key));
  if (!info->kernel)
    throw UnsupportedError(fmt::format("unsupported operator {} (no CPU kernel)", info->key));
  return info;
}

}  // namespace

namespace {
tl_value* moduleValue(const tl_module& m, IValue v) {
  auto* out = newValue(std::move(v));
  if (out->value.isObject() && out->value.toObject()->type->isModule()) out->unit = m.module.unit();
  return out;
}
void collectAttributes(const ObjectPtr& obj, const std::string& prefix, bool recurse,
                       std::vector<IValue>& out) {
  const auto& attrs = obj->type->attributes();
  for (size_t i = 0; i < attrs.size() && i < obj->slots.size(); ++i) {
    const IValue& v = obj->slots[i];
    out.emplace_back(TupleImpl::create({IValue(prefix + attrs[i].name), v}));
    if (recurse && v.isObject() && v.toObject()->type->isModule())
      collectAttributes(v.toObject(), prefix + attrs[i].name + ".", recurse, out);
  }
}
template <typename F>
void forEachModuleObject(const ObjectPtr& obj, F&& f) {
  f(obj);
  for (const IValue& v : obj->slots)
    if (v.isObject() && v.toObject()->type->isModule()) forEachModuleObject(v.toObject(), f);
}
/// A fresh Module over the same object: its methods are planned again on their next call.
void replan(tl_module& m) { m.module = Module(m.module.object(), m.module.unit()); }
}  // namespace

extern "C" {

const char* tl_last_error(void) { return tlsError.c_str(); }

const char* tl_version(void) { return TORCHLESS_VERSION; }

void tl_set_num_threads(int n) { ops::setNumThreads(n); }

// ---- modules ----

tl_status tl_module_load(const char* path, tl_module** out) {
  return guarded([&] {
    need(path, "path");
    needOut(out);
    auto m = std::make_unique<tl_module>();
    m->module = load(path);
    m->methods = m->module.methodNames();
    *out = m.release();
  });
}

void tl_module_free(tl_module* m) { delete m; }

tl_status tl_module_run_method(const tl_module* m, const char* name, tl_value* const* args,
                               size_t nargs, tl_value** out) {
  return guarded([&] {
    const tl_module& mod = need(m, "module");
    need(name, "method name");
    needOut(out);
    IValue r = mod.module.runMethod(name, argsOf(args, nargs));
    *out = newValue(std::move(r));
  });
}

tl_status tl_module_forward(const tl_module* m, tl_value* const* args, size_t nargs,
                            tl_value** out) {
  return tl_module_run_method(m, "forward", args, nargs, out);
}

size_t tl_module_num_methods(const tl_module* m) { return m ? m->methods.size() : 0; }

const char* tl_module_method_name(const tl_module* m, size_t i) {
  if (!m || i >= m->methods.size()) return nullptr;
  return m->methods[i].c_str();
}

int tl_module_has_method(const tl_module* m, const char* name) {
  return m && name && m->module.findMethod(name) != nullptr;
}

tl_status tl_module_attr(const tl_module* m, const char* name, tl_value** out) {
  return guarded([&] {
    const tl_module& mod = need(m, "module");
    need(name, "attribute name");
    needOut(out);
    const ObjectPtr& obj = mod.module.object();
    if (!obj || !obj->type->findAttributeSlot(name))
      throw Error(fmt::format("module '{}' has no attribute '{}'",
                              obj ? obj->type->name() : "<empty>", name));
    *out = moduleValue(mod, obj->getAttr(name));
  });
}

tl_status tl_module_named_attributes(const tl_module* m, int recurse, tl_value** out) {
  return guarded([&] {
    const tl_module& mod = need(m, "module");
    needOut(out);
    std::vector<IValue> items;
    if (mod.module.object()) collectAttributes(mod.module.object(), "", recurse != 0, items);
    TypePtr tt = TupleType::create({StringType::get(), AnyType::get()});
    *out = newValue(IValue(ListImpl::create(tt, std::move(items))));
    (*out)->unit = mod.module.unit();
  });
}

int tl_value_is_module(const tl_value* v) {
  return v && v->value.isObject() && v->value.toObject()->type->isModule() && v->unit != nullptr;
}

tl_status tl_value_to_module(const tl_value* v, tl_module** out) {
  return guarded([&] {
    const tl_value& val = need(v, "value");
    needOut(out);
    if (!val.value.isObject() || !val.value.toObject()->type->isModule())
      throw InvalidArgument(fmt::format("expected a module, got {}", val.value.tagName()));
    if (!val.unit)
      throw InvalidArgument(
          "this module value was not read from a module (use attr() or named_attributes())");
    auto m = std::make_unique<tl_module>();
    m->module = Module(val.value.toObject(), val.unit);
    m->methods = m->module.methodNames();
    *out = m.release();
  });
}

tl_status tl_module_to_dtype(tl_module* m, tl_dtype dtype) {
  return guarded([&] {
    tl_module& mod = need(m, "module");
    const auto t = static_cast<ScalarType>(dtype);
    if (tl_dtype_size(dtype) == 0)
      throw InvalidArgument(fmt::format("unknown dtype {}", static_cast<int>(dtype)));
    if (!mod.module.object()) throw InvalidArgument("the module is empty");
    forEachModuleObject(mod.module.object(), [&](const ObjectPtr& obj) {
      const auto& attrs = obj->type->attributes();
      for (size_t i = 0; i < attrs.size() && i < obj->slots.size(); ++i)
        if ((attrs[i].isParameter || attrs[i].isBuffer) && obj->slots[i].isTensor() &&
            obj->slots[i].toTensor().dtype() != t)
          obj->slots[i] = IValue(ops::toDtype(obj->slots[i].toTensor(), t));
    });
    replan(mod);
  });
}

tl_status tl_module_set_training(tl_module* m, int training) {
  return guarded([&] {
    tl_module& mod = need(m, "module");
    if (!mod.module.object()) throw InvalidArgument("the module is empty");
    mod.module.train(training != 0);
  });
}

int tl_module_is_training(const tl_module* m) {
  if (!m || !m->module.object()) return 1;
  return m->module.isTraining() ? 1 : 0;
}

tl_status tl_module_named_tensors(const tl_module* m, int which, tl_value** out) {
  return guarded([&] {
    const tl_module& mod = need(m, "module");
    needOut(out);
    if (which != 0 && which != 1)
      throw InvalidArgument(fmt::format("which is {} (0 parameters, 1 buffers)", which));
    auto named = which == 0 ? mod.module.namedParameters() : mod.module.namedBuffers();
    std::vector<IValue> items;
    for (auto& [n, t] : named) items.emplace_back(TupleImpl::create({IValue(n), IValue(t)}));
    TypePtr tt = TupleType::create({StringType::get(), TensorType::get()});
    *out = newValue(IValue(ListImpl::create(tt, std::move(items))));
  });
}

// ---- tensors ----

tl_status tl_tensor_from_buffer(void* data, tl_dtype dtype, const int64_t* sizes, size_t ndim,
                                const int64_t* strides, void (*deleter)(void*, void*), void* ctx,
                                tl_tensor** out) {
  return guarded([&] {
    needOut(out);
    ScalarType st = checkedDtype(dtype);
    IntList sz = checkedSizes(sizes, ndim);
    IntList str(ndim);
    if (strides) {
      str.assign(strides, strides + ndim);
      for (size_t i = 0; i < ndim; ++i)
        if (str[i] < 0)
          throw InvalidArgument(fmt::format("negative stride {} in dimension {}", str[i], i));
    } else {
      int64_t s = 1;
      for (size_t i = ndim; i-- > 0;) {
        str[i] = s;
        s *= std::max<int64_t>(sz[i], 1);
      }
    }
    // Elements reachable: 1 + sum((size-1)*stride); none when some size is 0.
    int64_t span = 1;
    for (size_t i = 0; i < ndim; ++i) {
      if (sz[i] == 0) {
        span = 0;
        break;
      }
      span += (sz[i] - 1) * str[i];
    }
    if (span > 0 && !data) throw InvalidArgument("data is NULL");
    std::shared_ptr<void> owner;
    if (deleter) owner = std::shared_ptr<void>(data, [deleter, ctx](void* p) { deleter(p, ctx); });
    Storage storage =
        Storage::wrap(data, static_cast<size_t>(span) * elementSize(st), std::move(owner));
    *out = new tl_tensor{Tensor::fromStorage(std::move(storage), 0, sz, str, st)};
  });
}

tl_status tl_tensor_copy_from(const void* data, tl_dtype dtype, const int64_t* sizes, size_t ndim,
                              tl_tensor** out) {
  return guarded([&] {
    needOut(out);
    Tensor t = Tensor::empty(checkedSizes(sizes, ndim), checkedDtype(dtype));
    if (t.nbytes() > 0) {
      if (!data) throw InvalidArgument("data is NULL");
      std::memcpy(t.rawData(), data, t.nbytes());
    }
    *out = new tl_tensor{std::move(t)};
  });
}

tl_status tl_tensor_zeros(tl_dtype dtype, const int64_t* sizes, size_t ndim, tl_tensor** out) {
  return guarded([&] {
    needOut(out);
    Tensor t = Tensor::empty(checkedSizes(sizes, ndim), checkedDtype(dtype));
    if (t.nbytes() > 0) std::memset(t.rawData(), 0, t.nbytes());
    *out = new tl_tensor{std::move(t)};
  });
}

tl_tensor* tl_tensor_share(const tl_tensor* t) { return t ? new tl_tensor{t->tensor} : nullptr; }
void tl_tensor_free(tl_tensor* t) { delete t; }
tl_dtype tl_tensor_dtype(const tl_tensor* t) { return static_cast<tl_dtype>(t->tensor.dtype()); }
size_t tl_tensor_dim(const tl_tensor* t) { return static_cast<size_t>(t->tensor.dim()); }
const int64_t* tl_tensor_sizes(const tl_tensor* t) { return t->tensor.sizes().data(); }
const int64_t* tl_tensor_strides(const tl_tensor* t) { return t->tensor.strides().data(); }
int64_t tl_tensor_numel(const tl_tensor* t) { return t->tensor.numel(); }
void* tl_tensor_data(const tl_tensor* t) { return t->tensor.rawData(); }
int tl_tensor_is_contiguous(const tl_tensor* t) { return t->tensor.isContiguous(); }

tl_status tl_tensor_contiguous(const tl_tensor* t, tl_tensor** out) {
  return guarded([&] {
    const tl_tensor& x = need(t, "tensor");
    needOut(out);
    *out = new tl_tensor{x.tensor.contiguous()};
  });
}

tl_status tl_tensor_copy_to(const tl_tensor* t, void* buf, size_t nbytes) {
  return guarded([&] {
    const tl_tensor& x = need(t, "tensor");
    if (nbytes != x.tensor.nbytes())
      throw InvalidArgument(
          fmt::format("the buffer has {} bytes, the tensor {}", nbytes, x.tensor.nbytes()));
    if (nbytes == 0) return;
    if (!buf) throw InvalidArgument("buf is NULL");
    Tensor c = x.tensor.contiguous();
    std::memcpy(buf, c.rawData(), nbytes);
  });
}

size_t tl_dtype_size(tl_dtype dtype) {
  try {
    return elementSize(checkedDtype(dtype));
  } catch (...) {
    return 0;
  }
}

char* tl_tensor_to_string(const tl_tensor* t) {
  if (!t) return nullptr;
  try {
    return dupString(sdk::formatTensor(t->tensor));
  } catch (const std::exception& e) {
    tlsError = e.what();
    return nullptr;
  }
}

void tl_string_free(char* s) { std::free(s); }

// ---- values ----

tl_value* tl_value_none(void) { return newValue(IValue()); }
tl_value* tl_value_from_tensor(const tl_tensor* t) {
  return t ? newValue(IValue(t->tensor)) : nullptr;
}
tl_value* tl_value_from_int(int64_t v) { return newValue(IValue(v)); }
tl_value* tl_value_from_double(double v) { return newValue(IValue(v)); }
tl_value* tl_value_from_bool(int v) { return newValue(IValue(v != 0)); }
tl_value* tl_value_from_string(const char* s) {
  return s ? newValue(IValue(std::string(s))) : nullptr;
}

tl_status tl_value_tuple(tl_value* const* elems, size_t n, tl_value** out) {
  return guarded([&] {
    needOut(out);
    *out = newValue(IValue(TupleImpl::create(argsOf(elems, n))));
  });
}

tl_status tl_value_list(tl_value* const* elems, size_t n, tl_value** out) {
  return guarded([&] {
    needOut(out);
    std::vector<IValue> v = argsOf(elems, n);
    TypePtr et = listElementType(v);
    *out = newValue(IValue(ListImpl::create(std::move(et), std::move(v))));
  });
}

tl_status tl_value_dict(tl_value* const* keys, tl_value* const* values, size_t n, tl_value** out) {
  return guarded([&] {
    needOut(out);
    std::vector<IValue> k = argsOf(keys, n), v = argsOf(values, n);
    for (size_t i = 0; i < n; ++i)
      if (!k[i].isString() && !k[i].isInt() && !k[i].isTensor() && !k[i].isDouble() &&
          !k[i].isBool())
        throw InvalidArgument(fmt::format("dict key {} is a {} (str, int, float, bool or Tensor)",
                                          i, k[i].tagName()));
    DictPtr d =
        DictImpl::create(n ? listElementType({k[0]}) : StringType::get(), listElementType(v));
    for (size_t i = 0; i < n; ++i) d->insertOrAssign(k[i], v[i]);
    *out = newValue(IValue(std::move(d)));
  });
}

tl_value* tl_value_share(const tl_value* v) {
  return v ? new tl_value{v->value, v->unit} : nullptr;
}
void tl_value_free(tl_value* v) { delete v; }

tl_value_kind tl_value_get_kind(const tl_value* v) {
  if (!v) return TL_VALUE_NONE;
  const IValue& x = v->value;
  if (x.isNone()) return TL_VALUE_NONE;
  if (x.isTensor()) return TL_VALUE_TENSOR;
  if (x.isDouble()) return TL_VALUE_DOUBLE;
  if (x.isInt()) return TL_VALUE_INT;
  if (x.isBool()) return TL_VALUE_BOOL;
  if (x.isString()) return TL_VALUE_STRING;
  if (x.isList()) return TL_VALUE_LIST;
  if (x.isTuple()) return TL_VALUE_TUPLE;
  if (x.isDict()) return TL_VALUE_DICT;
  return TL_VALUE_OTHER;
}

namespace {
const IValue& kindChecked(const tl_value* v, bool ok, const char* want) {
  const IValue& x = need(v, "value").value;
  if (!ok) throw InvalidArgument(fmt::format("expected a {} value, got {}", want, x.tagName()));
  return x;
}
}  // namespace

tl_status tl_value_to_tensor(const tl_value* v, tl_tensor** out) {
  return guarded([&] {
    needOut(out);
    const IValue& x = kindChecked(v, v && v->value.isTensor(), "Tensor");
    *out = new tl_tensor{x.toTensor()};
  });
}

tl_status tl_value_to_int(const tl_value* v, int64_t* out) {
  return guarded([&] {
    needOut(out);
    *out = kindChecked(v, v && v->value.isInt(), "int").toInt();
  });
}

tl_status tl_value_to_double(const tl_value* v, double* out) {
  return guarded([&] {
    needOut(out);
    const IValue& x = kindChecked(v, v && (v->value.isDouble() || v->value.isInt()), "float");
    *out = x.isInt() ? static_cast<double>(x.toInt()) : x.toDouble();
  });
}

tl_status tl_value_to_bool(const tl_value* v, int* out) {
  return guarded([&] {
    needOut(out);
    *out = kindChecked(v, v && v->value.isBool(), "bool").toBool() ? 1 : 0;
  });
}

tl_status tl_value_to_string(const tl_value* v, const char** out, size_t* len) {
  return guarded([&] {
    needOut(out);
    const std::string& s = kindChecked(v, v && v->value.isString(), "str").toStringRef();
    *out = s.c_str();
    if (len) *len = s.size();
  });
}

tl_status tl_value_length(const tl_value* v, size_t* out) {
  return guarded([&] {
    needOut(out);
    const IValue& x =
        kindChecked(v, v && (v->value.isTuple() || v->value.isList() || v->value.isDict()),
                    "tuple, list or dict");
    *out = x.isTuple()  ? x.toTuple()->elements.size()
           : x.isList() ? x.toList()->list.size()
                        : x.toDict()->size();
  });
}

namespace {
void checkIndex(size_t i, size_t n) {
  if (i >= n) throw InvalidArgument(fmt::format("index {} out of range for {} elements", i, n));
}
}  // namespace

tl_status tl_value_element(const tl_value* v, size_t i, tl_value** out) {
  return guarded([&] {
    needOut(out);
    const IValue& x =
        kindChecked(v, v && (v->value.isTuple() || v->value.isList()), "tuple or list");
    const auto& elems = x.isTuple() ? x.toTuple()->elements : x.toList()->list;
    checkIndex(i, elems.size());
    *out = newValue(elems[i]);
    (*out)->unit = v->unit;  // modules inside a value read from a module stay convertible
  });
}

tl_status tl_value_dict_key(const tl_value* v, size_t i, tl_value** out) {
  return guarded([&] {
    needOut(out);
    DictPtr d = kindChecked(v, v && v->value.isDict(), "dict").toDict();
    checkIndex(i, d->size());
    *out = newValue(d->entries()[i].first);
  });
}

tl_status tl_value_dict_value(const tl_value* v, size_t i, tl_value** out) {
  return guarded([&] {
    needOut(out);
    DictPtr d = kindChecked(v, v && v->value.isDict(), "dict").toDict();
    checkIndex(i, d->size());
    *out = newValue(d->entries()[i].second);
  });
}

char* tl_value_to_string_repr(const tl_value* v) {
  if (!v) return nullptr;
  try {
    return dupString(sdk::formatIValue(v->value));
  } catch (const std::exception& e) {
    tlsError = e.what();
    return nullptr;
  }
}

// ---- operators ----

tl_status tl_op_find(const char* name_dot_overload, const tl_op** out) {
  // Ops are made once per name and kept for the process (their graphs own the nodes the
  // kernels were made for).
  static std::mutex mu;
  static std::unordered_map<std::string, std::unique_ptr<tl_op>> ops;
  return guarded([&] {
    need(name_dot_overload, "operator name");
    needOut(out);
    std::lock_guard<std::mutex> lock(mu);
    auto it = ops.find(name_dot_overload);
    if (it != ops.end()) {
      *out = it->second.get();
      return;
    }
    const OpInfo* info = findOverloadWithKernel(name_dot_overload);
    auto op = std::make_unique<tl_op>();
    op->info = info;
    op->graph = std::make_shared<Graph>();
    std::vector<Value*> inputs;
    for (const Argument& a : info->schema.arguments())
      inputs.push_back(op->graph->addInput(a.name())->setType(a.type()));
    const auto& rets = info->schema.returns();
    Node* n = op->graph->create(Symbol::fromQualString(info->schema.name()), inputs, rets.size());
    op->graph->block()->appendNode(n);
    for (size_t i = 0; i < rets.size(); ++i) {
      n->output(i)->setType(rets[i].type());
      op->graph->registerOutput(n->output(i));
    }
    op->operation = KernelRegistry::global().operationFor(*n, info);
    if (!op->operation)
      throw UnsupportedError(fmt::format("unsupported operator {} (no CPU kernel)", info->key));
    op->numArguments = inputs.size();
    op->numReturns = rets.size();
    *out = op.get();
    ops.emplace(name_dot_overload, std::move(op));
  });
}

tl_status tl_op_call(const tl_op* op, tl_value* const* args, size_t nargs, tl_value** out) {
  return guarded([&] {
    const tl_op& o = need(op, "operator");
    needOut(out);
    if (nargs != o.numArguments)
      throw InvalidArgument(
          fmt::format("{} takes {} arguments, {} given", o.info->key, o.numArguments, nargs));
    Stack stack = argsOf(args, nargs);
    o.operation(stack);
    if (stack.size() != o.numReturns)
      throw Error(
          fmt::format("{} left {} values, expected {}", o.info->key, stack.size(), o.numReturns));
    if (o.numReturns == 1) {
      *out = newValue(std::move(stack[0]));
    } else {
      *out = newValue(IValue(TupleImpl::create(std::move(stack))));
    }
  });
}

const char* tl_op_schema(const tl_op* op) { return op ? op->info->key.c_str() : nullptr; }
size_t tl_op_num_arguments(const tl_op* op) { return op ? op->numArguments : 0; }

}  // extern "C"
