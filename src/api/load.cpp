// torchless::load: archive records -> CompilationUnit (code/ compiled by the frontend) ->
// objects rebuilt from data.pkl. See api/module.h.
#include "api/module.h"
#include "core/error.h"

namespace torchless {

Module load(const std::string& path, const LoadOptions& options) {
  (void)options;
  throw Error("loading modules with code is not implemented yet", path);
}

}  // namespace torchless
