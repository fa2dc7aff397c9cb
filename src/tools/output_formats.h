#pragma once
// `run --output-format npz|json`: a method's result as one file that keeps its structure
// (issue #17 part 8), beside the default of one out<k>.npy / .txt per value (cli.md).

#include "core/ivalue.h"

#include <string>

namespace torchless::cli {

/// Writes `text` to a temporary file beside `path` and renames it into place, so a reader
/// never sees half of it. Throws torchless::Error placed at `path` when it cannot be written.
void writeTextAtomically(const std::string& path, const std::string& text);

/// Writes `result` to `path` as numpy's .npz (a zip of .npy records, np.load reads it): one
/// array per value, named by its path in the result: tuple and list indices, dict keys and
/// object attribute names joined by '/' ("0", "1/2", "2/logits"); a result that is not a
/// container is "output". A str is a 0-d unicode array; None is left out. Written to a
/// temporary file and renamed. Throws torchless::Error for values numpy cannot hold.
void writeNpz(const IValue& result, const std::string& path);

/// Writes `result` to `path` as JSON keeping its structure: tuples and lists are arrays, dicts
/// objects (keys as strings, insertion order), script objects objects of their attributes,
/// None null; a tensor is {"dtype", "shape", "data"} with data flat in C order (NaN and
/// infinities as the strings "nan", "inf", "-inf"). Written to a temporary file and renamed.
void writeJson(const IValue& result, const std::string& path);

}  // namespace torchless::cli
