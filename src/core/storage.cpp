#include "core/storage.h"

#include "core/error.h"

#include <cstdlib>
#include <cstring>

namespace torchless {

Storage Storage::allocate(size_t nbytes) {
  Storage s;
  s.impl_ = std::make_shared<StorageImpl>();
  size_t rounded = (nbytes + kStorageAlignment - 1) / kStorageAlignment * kStorageAlignment;
  if (rounded == 0) rounded = kStorageAlignment;
  void* p = std::aligned_alloc(kStorageAlignment, rounded);
  if (!p) throw Error(fmt::format("out of memory allocating {} bytes", nbytes));
  std::memset(p, 0, rounded);
  s.impl_->data = static_cast<std::byte*>(p);
  s.impl_->nbytes = nbytes;
  s.impl_->owner = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  return s;
}

Storage Storage::wrap(void* data, size_t nbytes, std::shared_ptr<void> owner) {
  Storage s;
  s.impl_ = std::make_shared<StorageImpl>();
  s.impl_->data = static_cast<std::byte*>(data);
  s.impl_->nbytes = nbytes;
  s.impl_->owner = std::move(owner);
  return s;
}

}  // namespace torchless
