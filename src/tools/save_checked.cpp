#include "tools/save_checked.h"

#include "core/error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <unistd.h>

namespace torchless::cli {

void saveLoadable(const Module& m, const std::string& path, const char* what) {
  if (std::filesystem::is_directory(path))
    throw Error("cannot write the output: it is a directory", path);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid()) + ".pt";
  try {
    save(m, tmp);
  } catch (const Error& e) {
    std::remove(tmp.c_str());
    throw Error(e.message(), path, e.details());
  }
  try {
    (void)load(tmp);
  } catch (const Error& e) {
    std::remove(tmp.c_str());
    throw Error(fmt::format("the {} module's archive does not load back in torchless ({}); "
                            "nothing was written, please report this",
                            what, e.firstLine()),
                path, e.what());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw Error(fmt::format("cannot rename into place: {}", std::strerror(err)), path);
  }
}

}  // namespace torchless::cli
