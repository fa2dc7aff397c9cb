#pragma once
// A file mapped copy-on-write, whose shrinking underneath names the file instead of killing
// the process with a bare SIGBUS (Note [Mapped archives]).

#include <cstddef>
#include <memory>
#include <string>

namespace torchless {

/// Note [Mapped archives]
/// `torchless run` reads a 100 MB archive to make one call: copying its stored records out of
/// the page cache (pread) into fresh buffers and clearing those buffers' pages first was a
/// third of the run's CPU time (issue 13, cold start). Mapped instead, the tensors point into
/// the page cache's own pages, MAP_PRIVATE and writable: a write (an in-place op on a
/// parameter) copies the page it touches and never reaches the file.
///
/// A mapping reads the file as it is *now*. If the file is truncated while mapped, touching a
/// page past its new end raises SIGBUS. Two guards:
///   - MappedFile::populate() maps a range with madvise(MADV_POPULATE_READ), which returns
///     EFAULT instead of raising SIGBUS; the archive reader populates every record it hands
///     out (and checks its CRC-32 over the mapped bytes), so a file shorter than its zip
///     directory says is a clean torchless::Error at load, as a read would be.
///   - Past the load (the file shrinks while the call runs), a SIGBUS handler installed with
///     the first mapping looks the faulting address up in the live mappings (a fixed table
///     of atomics: async-signal-safe); when it lies in one, it writes "FILE: the file shrank
///     while torchless had it mapped ..." to stderr and ends the process with _exit(1), the
///     status of a user error. Any other SIGBUS goes to the handler that was installed before
///     (or, when that was the default, is raised again with the default action).
/// A file replaced by rename (how model repositories are updated) keeps the old inode mapped
/// and is not affected. Mapping is opt-in (LoadOptions::mapRecords): a long-lived process
/// (serve) reads its archives instead, so that a model file rewritten in place can never end
/// it or change its weights.
class MappedFile {
 public:
  /// Maps `size` bytes of the open file `fd` (MAP_PRIVATE, readable and writable; the fd may
  /// be closed afterwards). `path` names the file in the SIGBUS message. Returns nullptr when
  /// the mapping cannot be made (the caller reads the file instead).
  static std::shared_ptr<MappedFile> map(int fd, size_t size, const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  /// Maps the pages of [offset, offset + n) now, in one call; false when a page cannot be
  /// read (the file is shorter than that now), without raising SIGBUS.
  bool populate(size_t offset, size_t n) const;

 private:
  MappedFile() = default;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  int slot_ = -1;  // the entry in the SIGBUS handler's table
  std::unique_ptr<char[]> message_;
};

}  // namespace torchless
