// libFuzzer target: the type-string parsers. The first byte picks one: Python annotations as
// archives and pickles spell them (`Dict[str, List[Tensor]]`, core/type.h parseTypeAnnotation),
// IR types (`Float(3, 4, strides=[4, 1])`, ir/type_parser.h) or whole schemas
// (`aten::add.Tensor(Tensor self, ...) -> Tensor`, ir/function_schema.h). Only torchless::Error
// may escape; a crash, a sanitizer report or another exception is a bug.
#include "core/error.h"
#include "core/type.h"
#include "ir/function_schema.h"
#include "ir/type_parser.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0: (void)torchless::parseTypeAnnotation(text)->str(); break;
      case 1: {
        size_t pos = 0;
        while (pos < text.size()) {
          const size_t before = pos;
          (void)torchless::parseIRType(text, pos)->str();
          if (pos == before) break;
          if (pos < text.size() && text[pos] == ',') ++pos;
        }
        break;
      }
      default: (void)torchless::parseSchema(text); break;
    }
  } catch (const torchless::Error&) {
  }
  return 0;
}
