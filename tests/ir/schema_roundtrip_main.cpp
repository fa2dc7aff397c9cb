// schema_roundtrip: reads one schema a line on stdin, parses each with torchless's schema
// parser and prints it back, one a line. A schema that does not parse prints
// `ERROR: <message>` on its line. Driven by tests/ir/schema_oracle.py.
#include "core/error.h"
#include "ir/function_schema.h"

#include <iostream>
#include <string>

int main() {
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    try {
      std::cout << torchless::parseSchema(line).str() << "\n";
    } catch (const torchless::Error& e) {
      std::cout << "ERROR: " << e.firstLine() << "\n";
    }
  }
  return 0;
}
