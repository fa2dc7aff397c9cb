#!/usr/bin/env python3
"""The layer check (scripts/check_layers.py) fails on planted bad includes and passes on good
ones, against the README's layer table (the one ctest's layers.includes uses)."""

import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "scripts", "check_layers.py")
README = os.path.join(ROOT, "README.md")


def tree(files):
    """A temporary repository holding `files` ({path: text})."""
    d = tempfile.TemporaryDirectory()
    for path, text in files.items():
        full = os.path.join(d.name, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    return d


def check(root, *extra, design=README):
    p = subprocess.run([sys.executable, CHECK, "--design", design, "--root", root, *extra],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


GOOD = {
    "src/core/tensor.h": "#pragma once\n",
    "src/ir/ir.h": '#include "core/tensor.h"\n#include <vector>\n#include "ir_local.h"\n',
    "src/frontend/parser.cpp": '#include "ir/ir.h"\n#include "core/tensor.h"\n',
    "src/passes/fold.cpp": '#include "runtime/kernel.h"\n#include "ops/conv.h"\n',
    "src/api/module.h": '#include "convert/engine/partition.h"\n#include "frontend/parser.h"\n',
    "src/tools/main.cpp": '#include "api/module.h"\n#include <CLI/CLI.hpp>\n',
    "src/sdk/c_api.cpp": '#include "torchless/c_api.h"\n#include "runtime/kernel.h"\n',
}


class LayerCheck(unittest.TestCase):
    def test_downward_includes_pass(self):
        with tree(GOOD) as root:
            code, out = check(root)
            self.assertEqual(code, 0, out)

    def test_an_upward_include_fails_with_file_line_and_edge(self):
        with tree({**GOOD, "src/core/tensor.h": '#pragma once\n// x\n#include "ir/ir.h"\n'}) as root:
            code, out = check(root)
            self.assertEqual(code, 1, out)
            self.assertIn('src/core/tensor.h:3: layer core includes "ir/ir.h" of layer ir (up;', out)

    def test_an_include_past_the_declared_layers_fails(self):
        # tools/ uses api/ only: api "may use all" is a facade, not a door to ir/.
        with tree({**GOOD, "src/tools/cmd_graph.cpp": '#include "ir/ir.h"\n'}) as root:
            code, out = check(root)
            self.assertEqual(code, 1, out)
            self.assertIn('layer tools includes "ir/ir.h" of layer ir', out)
        # serialize/ may use frontend/ (and below), not runtime/.
        with tree({**GOOD, "src/serialize/pickler.cpp": '#include "runtime/kernel.h"\n'}) as root:
            self.assertEqual(check(root)[0], 1)

    def test_public_headers_and_sdk_are_the_api_layer(self):
        with tree({**GOOD, "src/ir/ir.cpp": '#include <torchless/c_api.h>\n'}) as root:
            code, out = check(root)
            self.assertEqual(code, 1, out)
            self.assertIn("of layer api (up;", out)
        with tree({**GOOD, "src/runtime/kernel.cpp": '#include "sdk/tensor_format.h"\n'}) as root:
            self.assertEqual(check(root)[0], 1)

    def test_known_edges_must_still_occur(self):
        with tree(GOOD) as root:
            code, out = check(root, "--known-edges")
            self.assertEqual(code, 1, out)
            self.assertIn("which no longer occurs: remove the entry", out)

    def test_tables_that_disagree_fail(self):
        with open(README) as f:
            text = f.read()
        changed = text.replace("| `frontend/` | TorchScript", "| `frontend/` | TorchScript", 1)
        changed = changed.replace("IR -> TorchScript | frontend |", "IR -> TorchScript | ir |", 1)
        self.assertNotEqual(text, changed)
        with tree({**GOOD, "design.md": changed}) as root:
            code, out = check(root, "--compare", os.path.join(root, "design.md"))
            self.assertEqual(code, 1, out)
            self.assertIn("disagree", out)

    def test_a_missing_table_is_an_error(self):
        with tree({**GOOD, "design.md": "# no table here\n"}) as root:
            code, out = check(root, design=os.path.join(root, "design.md"))
            self.assertEqual(code, 2, out)
            self.assertIn("no '## Layers' section", out)


if __name__ == "__main__":
    unittest.main()
