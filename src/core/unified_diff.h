#pragma once
// A unified diff of two texts, as `diff -u` prints it (torch.jit.trace's check inputs show
// the two graphs' difference this way, api/trace.h).

#include <string>

namespace torchless {

/// A unified diff (`--- a`, `+++ b`, `@@ -l,n +l,n @@` hunks with 3 lines of context) of two
/// texts split at newlines; "" when they are equal.
std::string unifiedDiff(const std::string& a, const std::string& b, const std::string& nameA,
                        const std::string& nameB);

}  // namespace torchless
