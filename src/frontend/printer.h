#pragma once
// Printing trees back to TorchScript (Python) source.
//
// The output parses back to an equal tree (treeEqual): parentheses are added where Python's
// precedence needs them, tuples are always parenthesized, strings are double-quoted with
// escapes, an `elif` chain is printed as elif. Used for round-trip tests and by tools that
// rewrite source; PyTorch's own code/ printing of IR is a different printer (serialize/).

#include "frontend/tree.h"

#include <string>

namespace torchless::frontend {

/// Prints a Module, a statement or an expression. Blocks are indented by `indentWidth`
/// spaces per level; a Module or statement ends with a newline.
std::string printSource(const TreeRef& tree, int indentWidth = 2);

/// A string literal in TorchScript's spelling: double quotes, `\n \t \r \" \\` and 3-digit
/// octal for other control bytes (`\001`); bytes >= 0x80 are copied.
std::string quoteString(const std::string& value, char quote = '"');

}  // namespace torchless::frontend
