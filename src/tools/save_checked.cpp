#include "tools/save_checked.h"

#include "core/error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <unistd.h>

namespace torchless::cli {

void createOutputDirectory(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("cannot create the output directory: {}", ec.message()), dir);
}

void createParentDirectory(const std::string& file) {
  createOutputDirectory(std::filesystem::path(file).parent_path().string());
}

void saveLoadable(const Module& m, const std::string& path, const char* what) {
  if (std::filesystem::is_directory(path))
    throw Error("cannot write the output: it is a directory", path);
  createParentDirectory(path);
  // The archive is written under its own file name inside a temporary directory beside the
  // target, so that its records are named after the target ("model/data.pkl", as
  // torch.jit.save names them), then renamed into place.
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.parent_path() / (".torchless-tmp" + std::to_string(::getpid()));
  const std::string tmp = (dir / target.filename()).string();
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(dir, ec);
  };
  std::error_code mk;
  fs::create_directory(dir, mk);
  if (mk) throw Error(fmt::format("cannot create a temporary directory beside the output: {}", mk.message()), path);
  try {
    save(m, tmp);
  } catch (const Error& e) {
    cleanup();
    throw Error(e.message(), path, e.details());
  }
  try {
    (void)load(tmp);
  } catch (const Error& e) {
    cleanup();
    throw Error(fmt::format("the {} module's archive does not load back in torchless ({}); "
                            "nothing was written, please report this",
                            what, e.firstLine()),
                path, e.what());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    cleanup();
    throw Error(fmt::format("cannot rename into place: {}", std::strerror(err)), path);
  }
  cleanup();
}

}  // namespace torchless::cli
