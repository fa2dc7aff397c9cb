#pragma once
// Every file torchless writes goes through AtomicFile. Note [Atomic writes]
//
// A write either puts the complete new file at its path or leaves the path as it was (the old
// file intact, or nothing), and never leaves a temporary file behind, even when the process is
// killed (issue #18 part 8):
//
//  - Where the file system has O_TMPFILE (ext4, xfs, btrfs, tmpfs), the bytes go to an unnamed
//    file in the target's directory. A SIGKILL at any point before commit() leaves nothing: the
//    kernel frees the unnamed inode. commit() gives it a name with linkat(): straight at the
//    path when nothing is there; otherwise at `<path>.tmp<pid>` renamed over the path at once
//    (the one window in which a kill can leave a named temporary, a few system calls long).
//  - Elsewhere (or with TORCHLESS_NO_O_TMPFILE=1 in the environment, for tests) the bytes go to
//    `<path>.tmp<pid>`, renamed over the path on commit(). The temporary name is registered
//    with a SIGINT / SIGTERM handler that unlinks it and then dies of the same signal, so only
//    SIGKILL can leave it.
//
// Errors are torchless::Error placed at the target path (never at the temporary name), with the
// system's reason ("No space left on device").

#include <cstddef>
#include <string>
#include <string_view>

namespace torchless {

class AtomicFile {
 public:
  /// Opens the temporary file for `path` (which must not be a directory; its parent must
  /// exist). Throws torchless::Error naming `path` and the reason.
  explicit AtomicFile(std::string path);
  /// Discards everything written unless commit() succeeded: nothing is left behind.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Appends bytes (buffered). Throws torchless::Error on a write failure (disk full, ...).
  void write(const void* data, size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }
  /// Flushes and returns a path through which the bytes written so far can be read before
  /// commit(): /proc/self/fd/N for an unnamed file, the temporary name otherwise.
  std::string readablePath();
  /// Flushes, closes and puts the file at its path (replacing what was there). Throws
  /// torchless::Error; the old file at the path is then untouched.
  void commit();

  const std::string& path() const { return path_; }
  /// Whether the bytes go to an unnamed O_TMPFILE file (for tests and messages).
  bool unnamed() const { return unnamed_; }

 private:
  void flush();
  [[noreturn]] void fail(const char* what, int err);

  std::string path_;
  std::string tmpPath_;  // the named temporary (fallback, or commit's replace step)
  int fd_ = -1;
  bool unnamed_ = false;
  bool committed_ = false;
  int tmpSlot_ = -1;  // signal-cleanup registration of tmpPath_
  std::string buffer_;
};

/// Writes `bytes` to `path` through an AtomicFile.
void writeFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace torchless
