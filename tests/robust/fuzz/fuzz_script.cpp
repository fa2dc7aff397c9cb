// libFuzzer target: TorchScript source through the lexer, the parser, the importer and the IR
// emitter (frontend/), as code/__torch__.py of an archive (first byte even) or as a user's
// source file (odd). Only torchless::Error may escape; a crash, a sanitizer report, a hang
// (-timeout) or another exception is a bug.
#include "core/error.h"
#include "frontend/script_importer.h"
#include "ir/operator_registry.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool once = (torchless::initOperatorRegistry(), true);
  (void)once;
  if (size == 0) return 0;
  const bool user = data[0] & 1;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto unit = std::make_shared<torchless::CompilationUnit>();
  std::vector<torchless::IValue> constants;
  try {
    torchless::frontend::ScriptImporter importer(
        unit,
        [&](const std::string& q) -> std::optional<torchless::frontend::SourceFile> {
          if (q != "__torch__") return std::nullopt;
          return torchless::frontend::SourceFile{"code/__torch__.py", text};
        },
        &constants);
    if (user) importer.setUserSource("__torch__");
    importer.importAll("__torch__");
  } catch (const torchless::Error&) {
  }
  return 0;
}
