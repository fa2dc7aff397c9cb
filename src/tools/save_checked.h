#pragma once
// Writing the files the commands make: output directories, and the archives of freeze,
// trace, script and compile.

#include "api/module.h"

#include <string>

namespace torchless::cli {

/// Creates `dir` and its missing parents (every command treats a missing output directory the
/// same way: it is made, as `run --output-dir` always did). Throws torchless::Error placed at
/// `dir` with the system's reason when it cannot be made (a parent is a file, no permission).
void createOutputDirectory(const std::string& dir);
/// createOutputDirectory() of `file`'s parent directory, if it has one.
void createParentDirectory(const std::string& file);

/// Writes `m` to an unnamed file beside `path`, loads it back (what torchless writes, it must
/// read: a module whose archive would not load is an error, not an output), then puts it in
/// place (Note [Atomic writes], core/atomic_file.h). `what` names the module in messages ("frozen",
/// "traced", "scripted"). Throws torchless::Error placed at `path` (a directory, an unwritable
/// place, a save or reload failure); on any failure, or a kill, nothing is left at `path` or beside
/// it.
void saveLoadable(const Module& m, const std::string& path, const char* what);

}  // namespace torchless::cli
