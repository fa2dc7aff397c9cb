#include "core/atomic_file.h"

#include "core/error.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace torchless {
namespace {

// ---- signal cleanup of named temporaries (Note [Atomic writes]) ------------------------------
// Fixed slots, so that the handler only reads memory that is never freed and calls only
// async-signal-safe functions (unlink, sigaction, raise).
constexpr int kSlots = 64;
constexpr size_t kSlotPath = 4096;
struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 holds a path to unlink
  char path[kSlotPath];
};
Slot g_slots[kSlots];
struct sigaction g_previous[2];
constexpr int kSignals[2] = {SIGINT, SIGTERM};

void onSignal(int sig) {
  const int saved = errno;
  for (auto& s : g_slots)
    if (s.state.load(std::memory_order_acquire) == 2) ::unlink(s.path);
  // Then what would have happened without us: the previous handler, or the default action
  // (the process dies of `sig`; SA_RESETHAND already restored SIG_DFL for this signal).
  for (int i = 0; i < 2; ++i) {
    if (kSignals[i] != sig) continue;
    const auto& prev = g_previous[i];
    if ((prev.sa_flags & SA_SIGINFO) == 0 && prev.sa_handler != SIG_DFL &&
        prev.sa_handler != SIG_IGN) {
      sigaction(sig, &prev, nullptr);
      prev.sa_handler(sig);
      errno = saved;
      return;
    }
    sigaction(sig, &prev, nullptr);
  }
  raise(sig);
  errno = saved;
}

void installHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int i = 0; i < 2; ++i) {
      struct sigaction current {};
      sigaction(kSignals[i], nullptr, &current);
      g_previous[i] = current;
      // An ignored signal stays ignored (nohup); a sigwait()ing thread (serve) still takes it
      // first because it keeps the signal blocked.
      if ((current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_IGN) continue;
      struct sigaction ours {};
      ours.sa_handler = onSignal;
      sigemptyset(&ours.sa_mask);
      ours.sa_flags = SA_RESETHAND;
      sigaction(kSignals[i], &ours, nullptr);
    }
  });
}

int registerTemporary(const std::string& path) {
  if (path.size() >= kSlotPath) return -1;
  installHandlers();
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (g_slots[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      g_slots[i].state.store(2, std::memory_order_release);
      return i;
    }
  }
  return -1;  // more than kSlots writes at once: no signal cleanup for this one
}

void unregisterTemporary(int& slot) {
  if (slot >= 0) g_slots[slot].state.store(0, std::memory_order_release);
  slot = -1;
}

std::string temporaryName(const std::string& path) {
  return path + ".tmp" + std::to_string(static_cast<long>(::getpid()));
}

constexpr size_t kBufferBytes = size_t{1} << 20;
}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path_, ec)) throw Error("cannot write the output: it is a directory", path_);
  std::string dir = fs::path(path_).parent_path().string();
  if (dir.empty()) dir = ".";
  const char* no = std::getenv("TORCHLESS_NO_O_TMPFILE");
  if (!(no && *no && std::strcmp(no, "0") != 0)) {
    fd_ = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    unnamed_ = fd_ >= 0;
  }
  if (!unnamed_) {
    // No O_TMPFILE here (EOPNOTSUPP, EISDIR on old kernels) or not allowed: a named temporary,
    // registered before it exists so that no signal can leave it behind.
    tmpPath_ = temporaryName(path_);
    tmpSlot_ = registerTemporary(tmpPath_);
    fd_ = ::open(tmpPath_.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0666);
    if (fd_ < 0) {
      const int err = errno;
      unregisterTemporary(tmpSlot_);
      tmpPath_.clear();
      throw Error(fmt::format("cannot open for writing: {}", std::strerror(err)), path_);
    }
  }
  buffer_.reserve(kBufferBytes);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmpPath_.empty()) ::unlink(tmpPath_.c_str());
  unregisterTemporary(tmpSlot_);
}

void AtomicFile::fail(const char* what, int err) {
  throw Error(fmt::format("{}: {}", what, std::strerror(err)), path_);
}

namespace {
bool writeAll(int fd, const char* p, size_t n, int& err) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::min<size_t>(n, size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      err = errno;
      return false;
    }
    if (w == 0) {
      err = EIO;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}
}  // namespace

void AtomicFile::write(const void* data, size_t n) {
  TL_INTERNAL_ASSERT(fd_ >= 0 && !committed_, "AtomicFile written after commit");
  if (buffer_.size() + n <= kBufferBytes) {
    buffer_.append(static_cast<const char*>(data), n);
    return;
  }
  flush();
  int err = 0;
  if (n >= kBufferBytes) {
    if (!writeAll(fd_, static_cast<const char*>(data), n, err))
      fail("cannot write the output", err);
  } else {
    buffer_.append(static_cast<const char*>(data), n);
  }
}

void AtomicFile::flush() {
  int err = 0;
  if (!buffer_.empty() && !writeAll(fd_, buffer_.data(), buffer_.size(), err)) {
    buffer_.clear();
    fail("cannot write the output", err);
  }
  buffer_.clear();
}

std::string AtomicFile::readablePath() {
  flush();
  return unnamed_ ? "/proc/self/fd/" + std::to_string(fd_) : tmpPath_;
}

void AtomicFile::commit() {
  TL_INTERNAL_ASSERT(fd_ >= 0 && !committed_, "AtomicFile committed twice");
  flush();
  if (!unnamed_) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("cannot write the output", errno);
    if (std::rename(tmpPath_.c_str(), path_.c_str()) != 0)
      fail("cannot rename the output into place", errno);
    committed_ = true;
    return;
  }
  // Give the unnamed file a name: at the path itself when it is free, else beside it and
  // renamed over it (linkat never replaces).
  const std::string self = "/proc/self/fd/" + std::to_string(fd_);
  auto link = [&](const std::string& to) {
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, to.c_str(), AT_SYMLINK_FOLLOW) == 0) return 0;
    if (errno == ENOENT && ::access("/proc/self/fd", F_OK) != 0 &&
        ::linkat(fd_, "", AT_FDCWD, to.c_str(), AT_EMPTY_PATH) == 0)  // no /proc (needs privilege)
      return 0;
    return errno;
  };
  int err = link(path_);
  if (err == EEXIST) {
    tmpPath_ = temporaryName(path_);
    tmpSlot_ = registerTemporary(tmpPath_);
    ::unlink(tmpPath_.c_str());  // a stale one from a process with our pid
    err = link(tmpPath_);
    if (err != 0) {
      tmpPath_.clear();
      fail("cannot link the output into place", err);
    }
    if (std::rename(tmpPath_.c_str(), path_.c_str()) != 0)
      fail("cannot rename the output into place", errno);
    tmpPath_.clear();
  } else if (err != 0) {
    fail("cannot link the output into place", err);
  }
  committed_ = true;
  ::close(fd_);
  fd_ = -1;
}

void writeFileAtomically(const std::string& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

}  // namespace torchless
