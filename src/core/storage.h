#pragma once
// Storage: a reference-counted byte buffer, 64-byte aligned when we allocate it, or a view of
// memory owned elsewhere (an archive record kept alive by `owner`). Tensors that share a
// storage share its bytes, as in PyTorch.

#include <cstddef>
#include <cstdint>
#include <memory>

namespace torchless {

/// The shared state behind Storage. Not used directly.
struct StorageImpl {
  std::byte* data = nullptr;
  size_t nbytes = 0;
  std::shared_ptr<void> owner;  // keeps `data` alive (our allocation or an archive buffer)
};

/// c10::Storage: bytes shared by tensors (views). Copying a Storage shares the bytes.
class Storage {
 public:
  Storage() = default;
  /// Allocates `nbytes` uninitialized, 64-byte aligned bytes (as PyTorch's empty: callers
  /// write every byte or use allocateZeroed). Blocks of 64 KiB and more come from a cache of
  /// freed blocks (Note [Caching allocator] in storage.cpp). Throws torchless::Error when the
  /// allocation fails.
  static Storage allocate(size_t nbytes);
  /// allocate() followed by zero-filling the bytes.
  static Storage allocateZeroed(size_t nbytes);
  /// Returns the idle cached blocks to the system; returns how many bytes that freed.
  static size_t releaseCachedBlocks();
  /// Bytes held idle by the allocation cache.
  static size_t cachedBytes();
  /// Wraps `nbytes` at `data` without copying; `owner` keeps that memory alive.
  static Storage wrap(void* data, size_t nbytes, std::shared_ptr<void> owner);

  bool defined() const { return impl_ != nullptr; }
  std::byte* data() const { return impl_ ? impl_->data : nullptr; }
  size_t nbytes() const { return impl_ ? impl_->nbytes : 0; }
  /// Identity: two Storages are the same when they share one StorageImpl.
  const StorageImpl* unsafeGetImpl() const { return impl_.get(); }
  bool isAlias(const Storage& o) const { return impl_ && impl_ == o.impl_; }
  long useCount() const { return impl_.use_count(); }

 private:
  std::shared_ptr<StorageImpl> impl_;
};

constexpr size_t kStorageAlignment = 64;

}  // namespace torchless
