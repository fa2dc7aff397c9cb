// AtomicFile (Note [Atomic writes], core/atomic_file.h): the file appears whole or not at all,
// errors name the target and the system's reason, nothing is left beside the target.
#include "core/atomic_file.h"

#include "core/error.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

namespace torchless {
namespace {
namespace fs = std::filesystem;

fs::path freshDir(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("torchless_atomic_" + name + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

size_t entries(const fs::path& d) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(d), fs::directory_iterator()));
}

void checkModes(const std::function<void(const fs::path&)>& body) {
  for (const char* mode : {"0", "1"}) {
    SCOPED_TRACE(std::string("TORCHLESS_NO_O_TMPFILE=") + mode);
    ::setenv("TORCHLESS_NO_O_TMPFILE", mode, 1);
    body(freshDir(std::string("m") + mode));
  }
  ::unsetenv("TORCHLESS_NO_O_TMPFILE");
}

TEST(AtomicFile, AppearsOnlyOnCommitAndReplacesTheOldFile) {
  checkModes([](const fs::path& d) {
    const fs::path target = d / "out.bin";
    writeFileAtomically(target.string(), "old");
    {
      AtomicFile f(target.string());
      f.write(std::string(3 << 20, 'x'));  // past the buffer
      f.write("tail");
      EXPECT_EQ(slurp(target), "old");
      EXPECT_EQ(slurp(f.readablePath()).size(), (3u << 20) + 4);
      f.commit();
    }
    EXPECT_EQ(slurp(target).size(), (3u << 20) + 4);
    EXPECT_EQ(entries(d), 1u);
    fs::remove_all(d);
  });
}

TEST(AtomicFile, AbandonedWriteLeavesNothing) {
  checkModes([](const fs::path& d) {
    const fs::path target = d / "out.bin";
    {
      AtomicFile f(target.string());
      f.write(std::string(100, 'x'));
    }
    EXPECT_EQ(entries(d), 0u);
    fs::remove_all(d);
  });
}

TEST(AtomicFile, ErrorsNameTheTargetAndTheReason) {
  checkModes([](const fs::path& d) {
    // A directory in the way, a missing parent.
    try {
      AtomicFile f(d.string());
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.firstLine(), d.string() + ": cannot write the output: it is a directory");
    }
    const fs::path missing = d / "no" / "such" / "x.bin";
    try {
      AtomicFile f(missing.string());
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.firstLine(),
                missing.string() + ": cannot open for writing: No such file or directory");
    }
    // A write failure (the file size limit: EFBIG) names the target, not a temporary, with the
    // reason; nothing is left. In a child, so the limit does not outlive the test.
    const fs::path target = d / "big.bin";
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::signal(SIGXFSZ, SIG_IGN);
      rlimit lim{1 << 16, 1 << 16};
      ::setrlimit(RLIMIT_FSIZE, &lim);
      try {
        writeFileAtomically(target.string(), std::string(1 << 20, 'x'));
        ::_exit(2);
      } catch (const Error& e) {
        ::_exit(e.firstLine() == target.string() + ": cannot write the output: File too large" ? 0
                                                                                               : 3);
      }
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    EXPECT_EQ(entries(d), 0u);
    fs::remove_all(d);
  });
}

}  // namespace
}  // namespace torchless
