#!/usr/bin/python3
"""Writes the expected outputs of the pass golden cases with the installed PyTorch.

For every tests/passes/cases/<pass>/<case>.ir this parses the graph with torch._C.parse_ir,
runs PyTorch's pass of the same job and writes str(graph) to <case>.expected.ir. The golden
test (pass_cases_test.cpp) runs our pass on <case>.ir and compares with the expected text
after normalising value names, so the tests need no Python.

    /usr/bin/python3 tests/passes/gen_pass_cases.py        # rewrite all expected files
    /usr/bin/python3 tests/passes/gen_pass_cases.py --check  # fail if any would change

Passes without a PyTorch twin (inline: parse_ir cannot make function constants) and cases
where we deliberately differ are tested with hand-written expectations in the gtests.
"""
import argparse
import pathlib
import sys

import torch


def repeat_until_stable(fn):
    # Our eliminate_dead_code repeats mark-and-sweep until nothing more dies; PyTorch's DCE
    # may need several runs for the same result.
    def run(g):
        before = None
        while before != str(g):
            before = str(g)
            fn(g)
    return run


def lower_all_tuples(g):
    # PyTorch 1.13 gives the values it flattens out of If outputs and loop-carried tuples
    # the type Tensor whatever the element type; put the element types back (they are the
    # types of the values flowing in), so the expected text is what the lowering means.
    torch._C._jit_pass_lower_all_tuples(g)

    def fix(block):
        for n in block.nodes():
            for b in n.blocks():
                fix(b)
            if n.kind() == "prim::If":
                then_b, else_b = list(n.blocks())
                for out, t, e in zip(n.outputs(), then_b.outputs(), else_b.outputs()):
                    if t.type() == e.type():
                        out.setType(t.type())
            elif n.kind() == "prim::Loop":
                body = list(n.blocks())[0]
                inits = list(n.inputs())[2:]
                params = list(body.inputs())[1:]
                for out, init, param in zip(n.outputs(), inits, params):
                    out.setType(init.type())
                    param.setType(init.type())
    fix(g.block())


PASSES = {
    "eliminate_dead_code": repeat_until_stable(torch._C._jit_pass_dce),
    "constant_propagation": torch._C._jit_pass_constant_propagation,
    "common_subexpression_elimination": torch._C._jit_pass_cse,
    "peephole": lambda g: torch._C._jit_pass_peephole(g, False),
    "lower_tuples": lower_all_tuples,
    "unroll_loops": torch._C._jit_pass_loop_unrolling,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="only check, write nothing")
    args = ap.parse_args()
    root = pathlib.Path(__file__).resolve().parent / "cases"
    stale = []
    for case in sorted(root.glob("*/*.ir")):
        if case.name.endswith(".expected.ir"):
            continue
        pass_name = case.parent.name
        if pass_name not in PASSES:
            sys.exit(f"{case}: no PyTorch pass for '{pass_name}'")
        g = torch._C.parse_ir(case.read_text())
        PASSES[pass_name](g)
        out = str(g)
        target = case.with_name(case.stem + ".expected.ir")
        if not target.exists() or target.read_text() != out:
            stale.append(target)
            if not args.check:
                target.write_text(out)
    if args.check and stale:
        sys.exit("stale: " + ", ".join(map(str, stale)))
    print(f"{'stale' if args.check else 'wrote'} {len(stale)} file(s)")


if __name__ == "__main__":
    main()
