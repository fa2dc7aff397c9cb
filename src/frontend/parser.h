#pragma once
// The TorchScript parser: tokens (lexer.h) to trees (tree.h).
//
// A recursive-descent parser for the Python 3 subset TorchScript accepts, with Python's
// precedence: ternary < or < and < not < comparisons (chained) < | < ^ < & < shifts < + - <
// * / // % @ < unary - + ~ < ** (right associative, binds tighter than a unary minus on its
// left) < calls, subscripts, attributes. Files may hold imports, `op_version_set = N`,
// classes, functions and any statement; deciding what is allowed where (e.g. only classes and
// defs at the top of an archive's code/ file) is the compiler's job.
//
// Errors are torchless::Error values with place "file:line:col" and the highlighted line:
//   expected ':' but found newline
//   expected an expression but found ')'
//   expected an indented block after 'if' statement on line 3
//   lambda expressions are not supported in TorchScript

#include "frontend/tree.h"

namespace torchless::frontend {

/// Parses a whole file.
Module parseFile(const SourcePtr& source);

/// Parses `text` as a file named `filename`.
Module parseFile(std::string filename, std::string text);

/// Parses one expression spanning the whole source (e.g. a type annotation `List[Tensor]`).
Expr parseExpression(const SourcePtr& source);

}  // namespace torchless::frontend
