#pragma once
// The pickler TorchScript archives use (torch/csrc/jit/serialization/pickler.cpp), writing
// protocol 2 with PyTorch's conventions (../shared/docs/torchscript-archive.md section 2.2):
// ints as K/M/J/LONG1, floats as big-endian BINFLOAT, every string memoized by value, every
// GLOBAL memoized, storages memoized by identity and written once, tensors through
// torch._utils._rebuild_tensor_v2, typed lists through build_intlist & co., other lists and
// all dicts through restore_type_tag, objects as GLOBAL + NEWOBJ + state dict + BUILD.

#include "core/ivalue.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace torchless {

/// A storage the pickle refers to: the record key and the bytes to write there.
struct PickledStorage {
  std::string key;  // "0", "1" ... (record data/<key> or constants/<key>)
  Storage storage;
  size_t nbytes = 0;
};

/// The state to pickle for an object instead of its attribute dict (PyTorch calls the class's
/// __getstate__ and writes GLOBAL, NEWOBJ, <state>, BUILD), or nullopt for a plain object.
using GetStateHook = std::function<std::optional<IValue>(const ObjectPtr& object)>;

/// Pickles one value. Storages are numbered from `firstKey` in the order met.
class Pickler {
 public:
  explicit Pickler(size_t firstKey = 0) : nextKey_(firstKey) {}
  /// Objects for which `hook` gives a state are written through it (TorchBind objects, classes
  /// with __getstate__); without a hook, an object whose class has __getstate__ is an error.
  void setGetStateHook(GetStateHook hook) { getState_ = std::move(hook); }
  /// Appends PROTO 2, the value, STOP. Throws torchless::Error for values an archive cannot
  /// hold (capsules, objects whose class has __getstate__ when no hook gives their state).
  void pickle(const IValue& value);
  const std::string& bytes() const { return out_; }
  /// Storages in key order.
  const std::vector<PickledStorage>& storages() const { return storages_; }

 private:
  void value(const IValue& v);
  void integer(int64_t i);
  void floating(double d);
  void string(const std::string& s);
  void global(const std::string& module, const std::string& name);
  void tensor(const Tensor& t);
  void list(const ListImpl& l);
  void dict(const DictImpl& d);
  void object(const ObjectPtr& obj);
  void tuple(const std::vector<IValue>& elems);
  void memoize();
  void get(uint32_t id);
  void typeTagged(const std::string& typeStr, const std::function<void()>& container);

  std::string out_;
  uint32_t nextMemo_ = 0;
  std::unordered_map<std::string, uint32_t> strings_;
  std::unordered_map<std::string, uint32_t> globals_;
  std::unordered_map<const StorageImpl*, uint32_t> storageMemo_;
  std::unordered_map<const void*, uint32_t> objectMemo_;  // tensors, lists, dicts by identity
  std::vector<PickledStorage> storages_;
  size_t nextKey_;
  int depth_ = 0;
  GetStateHook getState_;
};

}  // namespace torchless
