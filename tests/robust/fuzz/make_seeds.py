"""Seeds for the libFuzzer targets of issue #18 part 9 (tests/robust/fuzz/CMakeLists.txt).

    make_seeds.py SOURCE_DIR OUT_DIR

Writes OUT_DIR/<target>/ for script, ir, npy, types and unpickler, from the test corpora
(emitter cases' code/ and sources, the script cases, tests/ir/corpus, op schemas) plus
generated hostile shapes: shared-value pickles (billion laughs), deep nestings in source,
IR blocks and types, odd .npy headers. Only the standard library is used.
"""
import glob
import os
import re
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hostile  # noqa: E402


def write(d, name, data):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def npy(descr, shape, body=b"", fortran=False, major=1, header=None):
    h = header or f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}"
    h += " " * ((63 - len(h) % 64) % 64) + "\n"
    size = struct.pack("<H", len(h)) if major == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([major, 0]) + size + h.encode() + body


def main():
    src, out = sys.argv[1], sys.argv[2]
    # script: first byte 0 = archive code/, 1 = a user's source.
    d = os.path.join(out, "script")
    for p in sorted(glob.glob(f"{src}/tests/frontend/emitter_cases/*/code/*.py")):
        write(d, "code_" + p.split("/")[-3], b"\0" + open(p, "rb").read())
    for p in sorted(glob.glob(f"{src}/tests/frontend/emitter_cases/*/source.py")
                    + glob.glob(f"{src}/tests/frontend/script_cases/*.py")):
        write(d, "user_" + os.path.basename(os.path.dirname(p)) + "_" + os.path.basename(p),
              b"\1" + open(p, "rb").read())
    deep = "def f(x: int) -> int:\n  return " + "(" * 300 + "x" + ")" * 300 + "\n"
    write(d, "deep_parens", b"\1" + deep.encode())
    body = "".join("  " * (i + 1) + "if x > 0:\n" for i in range(100)) + "  " * 101 + "x = x + 1\n"
    write(d, "deep_ifs", b"\1def f(x: int) -> int:\n" + body.encode() + b"  return x\n")
    chain = "".join(f"def f{i}(x: int) -> int:\n  return f{i + 1}(x)\n" for i in range(200))
    write(d, "call_chain", b"\1" + (chain + "def f200(x: int) -> int:\n  return x\n").encode())
    # ir: the IR corpus, the emitter cases' graphs, deep blocks.
    d = os.path.join(out, "ir")
    for p in sorted(glob.glob(f"{src}/tests/ir/corpus/*.ir")):
        write(d, os.path.basename(p), open(p, "rb").read())
    for p in sorted(glob.glob(f"{src}/tests/frontend/emitter_cases/*/graph.txt"))[:40]:
        write(d, "case_" + p.split("/")[-2], open(p, "rb").read())
    lines = ["graph(%x : Tensor):", "  %c : bool = prim::Constant[value=1]()"]
    for i in range(60):
        lines.append("  " * (i + 1) + f"%y{i} : Tensor = prim::If(%c)")
        lines.append("  " * (i + 2) + f"block0():")
    lines.append("  " * 62 + "-> (%x)")
    for i in reversed(range(60)):
        lines.append("  " * (i + 2) + "block1():")
        lines.append("  " * (i + 3) + "-> (%x)")
        lines.append("  " * (i + 2) + ("-> (%y{})".format(i) if i else ""))
    write(d, "deep_blocks", "\n".join(lines) + "\n  return (%y0)\n")
    write(d, "tensor_constant", "graph():\n  %t : Tensor = prim::Constant[value= 1  2 [ CPULongType{2} ]]()\n"
          "  %b : Tensor = prim::Constant[value={1}]()\n  return (%t)\n")
    # npy: dtypes, orders, versions, odd headers.
    d = os.path.join(out, "npy")
    write(d, "f4", npy("<f4", "(2, 3)", struct.pack("<6f", *range(6))))
    write(d, "i8_fortran", npy("<i8", "(2, 2)", struct.pack("<4q", 1, 2, 3, 4), fortran=True))
    write(d, "bool_scalar", npy("|b1", "()", b"\1"))
    write(d, "f2_v2", npy("<f2", "(1,)", b"\0<", major=2))
    write(d, "big_endian", npy(">f8", "(1,)", struct.pack(">d", 1.5)))
    write(d, "huge_shape", npy("<f4", "(4294967296, 4294967296)"))
    write(d, "sixty_four_dims", npy("<f4", "(" + "1, " * 64 + ")", b"\0" * 4))
    write(d, "unicode", npy("<U3", "(1,)", "abc".encode("utf-32-le")))
    write(d, "structured", npy("", "", header="{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }"))
    # types: first byte % 3 = 0 annotation, 1 IR types, 2 schema.
    d = os.path.join(out, "types")
    for i, t in enumerate(["Dict[str, List[Tensor]]", "Optional[Tuple[int, float, str]]",
                           "List[" * 50 + "int" + "]" * 50, "Union[int, Tensor, None]",
                           "__torch__.a.B", "Tuple[()]", "NamedTuple"]):
        write(d, f"ann{i}", b"\0" + t.encode())
    for i, t in enumerate(["Float(3, 4, strides=[4, 1], requires_grad=0, device=cpu)",
                           "Tensor?[], int[2], Dict(str, Tensor), (int, float), Future(int)",
                           "Long(*, 3), Tensor(requires_grad=0), Enum<__torch__.E>",
                           "(" * 60 + "int" + ")" * 60]):
        write(d, f"ir{i}", b"\1" + t.encode())
    schemas = []
    inc = os.path.join(src, "src/ir/op_schemas_generated.inc")
    if os.path.exists(inc):
        schemas = re.findall(r'"((?:aten|prim|quantized)::[^"]+)"', open(inc).read())[::97][:60]
    for i, t in enumerate(schemas):
        write(d, f"schema{i}", b"\2" + t.encode())
    # a finding of fuzz_types (a sized list's default repeated 40M times), kept as a seed
    write(d, "schema_sized_list", b"\2foo::bar(int[39999999] padding=0, int[2] s=1) -> ()")
    # unpickler: shared values (2^100 leaves in a few hundred bytes) and deep nestings.
    d = os.path.join(out, "unpickler")
    for name, emit in (("shared_tuples", hostile.shared_tuples(100)),
                       ("shared_lists", hostile.shared_lists(60))):
        p = hostile.Pickle()
        emit(p)
        write(d, name, p.bytes())
    write(d, "deep_lists", b"\x80\x02" + b"](" * 500 + b"e" * 500 + b".")
    write(d, "deep_tuples", b"\x80\x02" + b"(" * 300 + b"t" * 300 + b".")
    write(d, "module", hostile.module_pickle("M", [("v", hostile.shared_tuples(30))]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
