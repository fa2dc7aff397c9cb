#include "tools/save_checked.h"

#include "core/error.h"

#include <filesystem>

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
  // The archive's records are named after the target ("model/data.pkl", as torch.jit.save
  // names them); it is loaded back before it is put in place (Note [Atomic writes]).
  save(m, path, [&](const std::string& written) {
    try {
      (void)load(written);
    } catch (const Error& e) {
      throw Error(fmt::format("the {} module's archive does not load back in torchless ({}); "
                              "nothing was written, please report this",
                              what, e.firstLine()),
                  path, e.what());
    }
  });
}

}  // namespace torchless::cli
