// libFuzzer target: the IR text parser (ir/ir_parser.cpp) on arbitrary text, then the verifier
// and the printer on what it accepts, as `torchless graph` does. Only torchless::Error may
// escape; a crash, a sanitizer report, a hang (-timeout) or another exception is a bug.
#include "core/error.h"
#include "ir/ir.h"
#include "ir/ir_parser.h"
#include "ir/ir_printer.h"
#include "ir/operator_registry.h"
#include "ir/verifier.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool once = (torchless::initOperatorRegistry(), true);
  (void)once;
  auto graph = std::make_shared<torchless::Graph>();
  try {
    torchless::parseIR(std::string_view(reinterpret_cast<const char*>(data), size), graph.get());
    torchless::verify(*graph);
    (void)graph->toString();
  } catch (const torchless::Error&) {
  }
  return 0;
}
