#pragma once
// Writing the archives the commands make (freeze, trace, script).

#include "api/module.h"

#include <string>

namespace torchless::cli {

/// Writes `m` to a temporary name beside `path`, loads it back (what torchless writes, it must
/// read: a module whose archive would not load is an error, not an output), then renames it
/// into place. `what` names the module in messages ("frozen", "traced", "scripted"). Throws
/// torchless::Error placed at `path` (a directory, an unwritable place, a save or reload
/// failure); on any failure nothing is left at `path` or beside it.
void saveLoadable(const Module& m, const std::string& path, const char* what);

}  // namespace torchless::cli
