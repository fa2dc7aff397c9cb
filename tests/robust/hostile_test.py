"""Issue #18 regression tests: each hostile file is generated here, and `torchless` must give
its stated exit code and message within a memory limit and a timeout (hostile.run_limited).

    hostile_test.py TORCHLESS_BIN WORK_DIR [CASE_SUBSTRING]

Prints one line per case and exits 1 when any case fails.
"""
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile  # noqa: E402
from hostile import (module_pickle, module_source, run_limited, shared_lists,  # noqa: E402
                     shared_tuples, write_archive)

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


class Ctx:
    def __init__(self, bin_, work):
        self.bin = bin_
        self.work = work

    def path(self, name):
        return os.path.join(self.work, name)

    def cli(self, *args, **kw):
        return run_limited([self.bin, *args], **kw)

    def expect(self, args, status, message=None, stdout=None, **kw):
        """Runs the CLI; checks the status, that `message` is in stderr's first line, and that
        `stdout` (if given) is in stdout."""
        r, out, err = self.cli(*args, **kw)
        first = err.split("\n", 1)[0]
        what = " ".join(os.path.basename(a) for a in args)
        if r != status:
            raise AssertionError(f"`{what}`: status {r}, expected {status}; stderr: {err[-600:]}")
        if message is not None and message not in first:
            raise AssertionError(f"`{what}`: first stderr line {first!r} lacks {message!r}")
        if stdout is not None and stdout not in out:
            raise AssertionError(f"`{what}`: stdout lacks {stdout!r}: {out[-600:]}")
        return out, err


FORWARD = "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return x\n"


def npy_ones(ctx):
    """A 2x3 float32 .npy, written by hand (no numpy needed)."""
    p = ctx.path("x.npy")
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    header += " " * (63 - len(header) % 64) + "\n"
    import struct
    with open(p, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<6f", *([1.0] * 6)))
    return p


# ---- part 1: shared pickle values ------------------------------------------------------------

def bomb_archive(ctx, name, emit, annotation="Any", training=True, body=FORWARD):
    p = ctx.path(name)
    data = module_pickle("M", [("v", emit(100))])
    if not training:
        data = data.replace(b"training\x88", b"training\x89", 1)
    write_archive(p, {"__torch__.py": module_source("M", [("v", annotation)], body)}, data)
    return p


@case
def shared_tuple_attribute(ctx):
    """2^100 leaves as a tuple DAG in an `Any` attribute: every command is linear in the DAG."""
    p = bomb_archive(ctx, "bomb_tuple.pt", shared_tuples)
    ctx.expect(["info", p], 0, stdout="__torch__.M")
    ctx.expect(["code", p], 0, stdout="v : Any")
    ctx.expect(["graph", p], 0, stdout="graph(")
    x = npy_ones(ctx)
    ctx.expect(["run", p, x, "--output-dir", ctx.path("out_tuple")], 0)
    q = bomb_archive(ctx, "bomb_tuple_eval.pt", shared_tuples, training=False)
    ctx.expect(["freeze", q, "-o", ctx.path("frozen_tuple.pt")], 0)


@case
def shared_list_attribute(ctx):
    """The same with lists."""
    p = bomb_archive(ctx, "bomb_list.pt", shared_lists)
    ctx.expect(["info", p], 0, stdout="__torch__.M")
    ctx.expect(["code", p], 0)
    ctx.expect(["graph", p], 0)
    x = npy_ones(ctx)
    ctx.expect(["run", p, x, "--output-dir", ctx.path("out_list")], 0)
    q = bomb_archive(ctx, "bomb_list_eval.pt", shared_lists, training=False)
    ctx.expect(["freeze", q, "-o", ctx.path("frozen_list.pt")], 0)


@case
def shared_list_constant_used_twice(ctx):
    """A list DAG (2^60 leaves) in a typed attribute that forward reads twice: freezing makes
    it a constant, which is checked (insertable) and compared with the other (deduplication)
    once per shared node, not once per path (Note [Shared values])."""
    levels = 60
    ann = "List[" * (levels + 1) + "int" + "]" * (levels + 1)
    body = ("  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
            "    a = self.v\n    b = self.v\n"
            "    return torch.add(x, torch.add(torch.len(a), torch.len(b)))\n")
    data = module_pickle("M", [("v", shared_lists(levels))])
    data = data.replace(b"training\x88", b"training\x89", 1)
    p = ctx.path("dag_twice.pt")
    write_archive(p, {"__torch__.py": module_source("M", [("v", ann)], body)}, data)
    ctx.expect(["freeze", p, "-o", ctx.path("dag_twice_frozen.pt")], 0)
    x = npy_ones(ctx)
    ctx.expect(["run", ctx.path("dag_twice_frozen.pt"), x, "--output-dir", ctx.path("out_dag")], 0)


@case
def shared_tuple_dict_key(ctx):
    """The shared tuple as a dict key: hashing and comparing it is linear in the DAG."""
    def emit(levels):
        def e(p):
            p.op(b"}(")  # EMPTY_DICT MARK
            shared_tuples(levels)(p)
            p.int_(1)
            shared_tuples(levels, memo_base=5000)(p)  # an equal key built apart: compared
            p.int_(2)
            p.op(b"u")  # SETITEMS
        return e
    p = bomb_archive(ctx, "bomb_dict.pt", emit)
    ctx.expect(["info", p], 0, stdout="__torch__.M")
    x = npy_ones(ctx)
    ctx.expect(["run", p, x, "--output-dir", ctx.path("out_dict")], 0, stdout="out0.npy")


# ---- part 2: recursion ----------------------------------------------------------------------

def write_text(ctx, name, text):
    p = ctx.path(name)
    with open(p, "w") as f:
        f.write(text)
    return p


@case
def deep_call_chain_in_code(ctx):
    """forward calls f0, f0 calls f1, ... 3000 methods deep: compiled, or a clean error."""
    n = 3000
    body = "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return (self).f0(x, )\n"
    for i in range(n):
        nxt = f"(self).f{i + 1}(x, )" if i + 1 < n else "x"
        body += f"  def f{i}(self: __torch__.M, x: Tensor) -> Tensor:\n    return {nxt}\n"
    p = ctx.path("deep_calls.pt")
    write_archive(p, {"__torch__.py": module_source("M", [], body)}, module_pickle("M", []))
    x = npy_ones(ctx)
    for cmd in (["code", p], ["graph", p], ["graph", p, "--inline"],
                ["run", p, x, "--output-dir", ctx.path("out_calls")]):
        r, out, err = ctx.cli(*cmd)
        first = err.split("\n", 1)[0]
        if r == 0:
            continue
        if r != 1 or "nested too deeply" not in first:
            raise AssertionError(f"{cmd[0]}: status {r}, stderr {err[-400:]!r}")


def nested_if_ir(depth):
    lines = ["graph(%x : Tensor):", "  %c : bool = prim::Constant[value=1]()"]
    ind = "  "
    for i in range(depth):
        lines.append(f"{ind}%y{i} : Tensor = prim::If(%c)")
        lines.append(f"{ind}  block0():")
        ind += "    "
    lines.append(f"{ind}-> (%x)")
    for i in reversed(range(depth)):
        ind = ind[:-4]
        lines.append(f"{ind}  block1():")
        lines.append(f"{ind}    -> (%x)")
        if i > 0:
            lines.append(f"{ind}-> (%y{i})")
    lines.append("  return (%y0)")
    return "\n".join(lines) + "\n"


@case
def ir_blocks_nested_deep(ctx):
    """IR text with prim::If blocks nested 20,000 deep: a clean error naming the place."""
    p = write_text(ctx, "deep_blocks.ir", nested_if_ir(20000))
    ctx.expect(["graph", p], 1, message="nested too deeply")
    ctx.expect(["export", p, "-o", ctx.path("deep_blocks.onnx")], 1, message="nested too deeply")
    # 50 deep is fine
    q = write_text(ctx, "ok_blocks.ir", nested_if_ir(50))
    ctx.expect(["graph", q], 0, stdout="prim::If")


@case
def ir_if_without_blocks(ctx):
    """`prim::If` with no blocks: graph and export both reject it cleanly."""
    p = write_text(ctx, "if_no_blocks.ir",
                   "graph(%x : Tensor):\n  %c : bool = prim::Constant[value=1]()\n"
                   "  %y : Tensor = prim::If(%c)\n  return (%y)\n")
    ctx.expect(["graph", p], 1)
    ctx.expect(["export", p, "-o", ctx.path("if_no_blocks.onnx")], 1, message="prim::If")
    if os.path.exists(ctx.path("if_no_blocks.onnx")):
        raise AssertionError("export left a file behind")


@case
def ir_text_with_100k_parameters(ctx):
    """Part 6: IR text with 100,000 parameters, all on the graph's first line, each feeding an
    add that also reads one shared constant. Parsing and verifying it was quadratic (the first
    line scanned again for each parameter's type, the constant's 100k uses searched for each
    add): minutes. Linear, it takes seconds; the timeout is generous (no timing asserted)."""
    n = 100_000
    params = ", ".join(f"%p{i} : Float(2, strides=[1], requires_grad=0, device=cpu)"
                       for i in range(n))
    lines = [f"graph(%x : Tensor, {params}):", "  %one : int = prim::Constant[value=1]()"]
    prev = "%x"
    for i in range(n):
        lines.append(f"  %y{i} : Tensor = aten::add({prev}, %p{i}, %one) # m.py:{i + 1}:3")
        prev = f"%y{i}"
    lines.append(f"  return ({prev})")
    p = write_text(ctx, "params_100k.ir", "\n".join(lines) + "\n")
    ctx.expect(["graph", p], 0, stdout=f"return (%y{n - 1})", timeout=300)


@case
def recursive_calls_are_named(ctx):
    """Part 7: TorchScript has no recursion. A method or function that calls itself (directly
    or through another) is refused with PyTorch's message at the call, not "has no attribute
    'forward'"."""
    direct = "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return (self).forward(x, )\n"
    mutual = ("  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return (self).g(x, )\n"
              "  def g(self: __torch__.M, x: Tensor) -> Tensor:\n    return (self).forward(x, )\n")
    x = npy_ones(ctx)
    for name, body, extra, what in (
            ("rec_direct.pt", direct, "", "method 'forward'"),
            ("rec_mutual.pt", mutual, "", "method 'forward'"),
            ("rec_function.pt", "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
             "    return __torch__.f(x)\n", "def f(x: Tensor) -> Tensor:\n  return __torch__.f(x)\n",
             "function 'f'")):
        p = ctx.path(name)
        write_archive(p, {"__torch__.py": module_source("M", [], body) + extra}, module_pickle("M", []))
        ctx.expect(["run", p, x, "--output-dir", ctx.path("out_rec")], 1,
                   message=f"{what} is called recursively. Recursive calls are not supported")
    src = write_text(ctx, "rec_user.py", "import torch\nclass M(torch.nn.Module):\n"
                     "    def forward(self, x):\n        return self.forward(x)\n")
    ctx.expect(["script", src, "-o", ctx.path("rec_user.pt")], 1,
               message="rec_user.py:4:16: method 'forward' is called recursively")


@case
def ir_numbers_past_64_bits(ctx):
    """fuzz_ir found it: a `# file:line:col` comment whose number does not fit 64 bits threw
    std::out_of_range out of the parser. It is no location, as other odd comments are."""
    p = write_text(ctx, "loc_overflow.ir",
                   "graph(%x : Tensor):\n  %one : int = prim::Constant[value=1]()\n"
                   "  %y : Tensor = aten::add(%x, %x, %one) # m.py:7555555555555555555555555:3\n"
                   "  return (%y)\n")
    ctx.expect(["graph", p], 0, stdout="aten::add")


@case
def onnx_export_of_constants_without_value(ctx):
    """fuzz_onnx found it: IR text whose int constant lost its value attribute
    (`prim::Constant[valDue=1]()`) aborted `export` on an internal assertion. It is the
    input's fault, named as the interpreter names it."""
    p = write_text(ctx, "const_novalue.ir",
                   "graph(%x : Float(2, 3)):\n"
                   "  %0 : int = prim::Constant[value=0]()\n"
                   "  %1 : int = prim::Constant[valDue=1]()\n"
                   "  %y : Tensor = aten::transpose(%x, %0, %1)\n"
                   "  return (%y)\n")
    ctx.expect(["export", p, "--input", "2x3", "-o", ctx.path("const_novalue.onnx")], 1,
               message="(prim::Constant): constant %2 of type int has no value")
    if os.path.exists(ctx.path("const_novalue.onnx")):
        raise AssertionError("export left a file behind")


@case
def ir_tensor_values_that_do_not_fit(ctx):
    """fuzz_ir found it: a Long tensor constant printed with the value 1e+37 was converted to
    int64 (undefined behaviour: garbage, or a UBSan report). A value its integer dtype cannot
    hold, or nan, is an error at its column."""
    for value, dtype in (("1e+37", "Long"), ("nan", "Int"), ("300", "Byte"), ("-1", "Byte")):
        cpu = {"Long": "CPULongType", "Int": "CPUIntType", "Byte": "CPUByteType"}[dtype]
        p = write_text(ctx, f"tensor_{dtype}.ir",
                       "graph(%x : Tensor):\n"
                       f"  %c : {dtype}(3, strides=[1], requires_grad=0, device=cpu) = "
                       f"prim::Constant[value= 1  {value}  3 [ {cpu}{{3}} ]]()\n"
                       "  return (%c)\n")
        ctx.expect(["graph", p], 1, message=f"tensor value {value} does not fit {dtype}")
    ok = write_text(ctx, "tensor_ok.ir",
                    "graph(%x : Tensor):\n"
                    "  %c : Byte(2, strides=[1], requires_grad=0, device=cpu) = "
                    "prim::Constant[value= 0  255 [ CPUByteType{2} ]]()\n"
                    "  return (%c)\n")
    ctx.expect(["graph", ok], 0, stdout="prim::Constant")
    # int64's extremes are written as integers and read exactly (not through a double, whose
    # 2^63 would not fit).
    ext = write_text(ctx, "tensor_int64.ir",
                     "graph(%x : Tensor):\n"
                     "  %c : Long(2, strides=[1], requires_grad=0, device=cpu) = "
                     "prim::Constant[value= 9223372036854775807 -9223372036854775808 "
                     "[ CPULongType{2} ]]()\n"
                     "  %d : Tensor = prim::Constant[value={9223372036854775807}]()\n"
                     "  return (%c, %d)\n")
    ctx.expect(["graph", ext], 0, stdout="CPULongType{2}")


DEEP_WORDS = ("nested too deeply", "too deeply nested", "too many nested")


@case
def deep_expressions(ctx):
    """Deeply nested expressions in code/ and in a script file: a clean error or success."""
    for depth in (5000, 100000):
        expr = "(" * depth + "x" + ")" * depth
        chain = " + ".join(["x"] * depth)
        call = "torch.neg(" * depth + "x" + ")" * depth
        for name, e in (("parens", expr), ("chain", chain), ("calls", call)):
            body = f"  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return {e}\n"
            p = ctx.path(f"deep_{name}_{depth}.pt")
            write_archive(p, {"__torch__.py": module_source("M", [], body)},
                          module_pickle("M", []))
            for cmd in (["code", p], ["graph", p]):
                r, out, err = ctx.cli(*cmd)
                first = err.split("\n", 1)[0]
                if r == 0:
                    continue
                if r != 1 or not any(w in first for w in DEEP_WORDS):
                    raise AssertionError(f"{name} {depth} {cmd[0]}: status {r}, {first!r}")
            src = write_text(ctx, f"deep_{name}_{depth}.py",
                             f"import torch\ndef f(x: torch.Tensor) -> torch.Tensor:\n"
                             f"    return {e}\n")
            r, out, err = ctx.cli("script", src, "--function", "f", "-o",
                                  ctx.path(f"deep_{name}_{depth}_s.pt"))
            first = err.split("\n", 1)[0]
            if r != 0 and (r != 1 or not any(w in first for w in DEEP_WORDS)):
                raise AssertionError(f"script {name} {depth}: status {r}, {first!r}")


# ---- part 4: allocations sized from files --------------------------------------------------

def code_archive(ctx, name, body):
    p = ctx.path(name)
    write_archive(p, {"__torch__.py": module_source("M", [], body)}, module_pickle("M", []))
    return p


@case
def ir_tensor_constant_size(ctx):
    """A 2^31-element tensor constant in 100 bytes of IR text is refused before allocating."""
    p = write_text(ctx, "big_const.ir",
                   "graph(%x : Tensor):\n"
                   "  %c : Tensor = prim::Constant[value= 1 [ CPUBoolType{2147483648} ]]()\n"
                   "  return (%c)\n")
    ctx.expect(["graph", p], 1, message="tensor constant of 2147483648 elements")
    ctx.expect(["export", p, "-o", ctx.path("big_const.onnx")], 1,
               message="tensor constant of 2147483648 elements")


@case
def inflated_code_record(ctx):
    """A small zip whose code record inflates to 200 MiB: refused before inflating."""
    import zipfile
    p = ctx.path("inflated.pt")
    src = module_source("M", [], FORWARD) + "#" + " " * (200 << 20) + "\n"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("m/data.pkl", module_pickle("M", []), zipfile.ZIP_STORED)
        z.writestr("m/code/__torch__.py", src, zipfile.ZIP_DEFLATED)
        z.writestr("m/constants.pkl", b"\x80\x02).", zipfile.ZIP_STORED)
        z.writestr("m/version", b"3\n", zipfile.ZIP_STORED)
    if os.path.getsize(p) > (1 << 20):
        raise AssertionError("the generated archive is not small")
    for cmd in ("info", "code", "graph"):
        ctx.expect([cmd, p], 1, message="code record declares 209715")


@case
def list_times_huge(ctx):
    """`[0] * 10**12` is refused before it allocates, naming the list and its size."""
    body = ("  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
            "    l = torch.mul([0], 1000000000000)\n"
            "    return torch.add(x, torch.len(l))\n")
    p = code_archive(ctx, "list_mul.pt", body)
    x = npy_ones(ctx)
    ctx.expect(["run", p, x, "--output-dir", ctx.path("out_listmul")], 1,
               message="list * 1000000000000")


@case
def string_padding_huge(ctx):
    """`"x".ljust(10**12)` (and rjust, center, zfill) is refused before it allocates, naming
    the call and its width."""
    x = npy_ones(ctx)
    for call, what in (('torch.ljust("x", 1000000000000)', "str.ljust(1000000000000)"),
                       ('torch.center("x", 1000000000000)', "str.center(1000000000000)"),
                       ('torch.zfill("7", 1000000000000)', "str.zfill(1000000000000)")):
        body = ("  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
                f"    s = {call}\n"
                "    return torch.add(x, torch.len(s))\n")
        p = code_archive(ctx, "str_pad.pt", body)
        ctx.expect(["run", p, x, "--output-dir", ctx.path("out_strpad")], 1, message=what)


@case
def max_memory_option(ctx):
    """--max-memory bounds tensor allocations; a malformed value is a usage error."""
    body = ("  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
            "    y = torch.zeros([1000, 1000])\n"
            "    return torch.add(x, torch.sum(y))\n")
    p = code_archive(ctx, "zeros.pt", body)
    x = npy_ones(ctx)
    ctx.expect(["run", p, x, "--output-dir", ctx.path("out_mm"), "--max-memory", "1M"], 1,
               message="more than the memory budget of 1048576 bytes")
    ctx.expect(["run", p, x, "--output-dir", ctx.path("out_mm2"), "--max-memory", "1G"], 0)
    ctx.expect(["run", p, x, "--max-memory", "lots"], 2)


@case
def bad_alloc_names_the_op(ctx):
    """A string doubled 40 times passes every size check step by step, then exhausts the
    address space (RLIMIT_AS): the error names the operator and its line, not a bare
    std::bad_alloc (Note [Naming out of memory])."""
    body = ("  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
            "    s = \"x\"\n"
            "    for _0 in range(40):\n"
            "      s = torch.add(s, s)\n"
            "    return torch.add(x, torch.len(s))\n")
    p = code_archive(ctx, "str_doubling.pt", body)
    x = npy_ones(ctx)
    # 1 GiB of address space: the string runs out after ~28 doublings, in seconds.
    _, err = ctx.expect(["run", p, x, "--output-dir", ctx.path("out_doubling")], 1,
                        message="out of memory while running aten::add", memory=1 << 30)
    first = err.split("\n", 1)[0]
    if ".py:" not in first:
        raise AssertionError(f"the error gives no file:line: {first!r}")


# ---- part 3: 64 or more dimensions -----------------------------------------------------------

@case
def sixty_four_dimensions(ctx):
    """A 64-dim tensor from a .npy or from reshape is refused where it enters, not asserted."""
    import struct
    p = ctx.path("dims64.npy")
    shape = "(" + ", ".join(["1"] * 64) + ")"
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
    header += " " * (63 - len(header) % 64) + "\n"
    with open(p, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<f", 1.0))
    m = code_archive(ctx, "ident.pt", FORWARD)
    ctx.expect(["run", m, p, "--output-dir", ctx.path("out_d64")], 1,
               message="more than 63 dimensions")
    ones = ", ".join(["1"] * 64)
    body = ("  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
            f"    return torch.reshape(torch.sum(x), [{ones}])\n")
    r = code_archive(ctx, "reshape64.pt", body)
    ctx.expect(["run", r, npy_ones(ctx), "--output-dir", ctx.path("out_r64")], 1,
               message="more than 63 dimensions")


# ---- part 5: INT_MIN // -1 ------------------------------------------------------------------

def read_npy_ints(path):
    """The values of a small little-endian int32/int64 .npy file written by `torchless run`."""
    import ast
    import struct
    with open(path, "rb") as f:
        data = f.read()
    hlen = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10:10 + hlen].decode())
    code = {"<i8": "q", "<i4": "i"}[header["descr"]]
    body = data[10 + hlen:]
    return list(struct.unpack(f"<{len(body) // struct.calcsize(code)}{code}", body))


@case
def int_min_divided_by_minus_one(ctx):
    """INT_MIN // -1 and % -1 wrap as NumPy does (no SIGFPE): ints, int64 and int32 tensors."""
    body = ("  def forward(self: __torch__.M, x: Tensor) -> Tuple[Tensor, Tensor]:\n"
            "    m = torch.sub(-9223372036854775807, 1)\n"
            "    q = torch.floordiv(m, -1)\n"
            "    r = torch.remainder(m, -1)\n"
            "    t = torch.tensor([m, m, m, m, m])\n"
            "    a = torch.floor_divide(t, -1)\n"
            "    b = torch.div(t, -1, rounding_mode=\"trunc\")\n"
            "    c = torch.remainder(t, -1)\n"
            "    d = torch.fmod(t, -1)\n"
            "    e = torch.div(t, -1, rounding_mode=\"floor\")\n"
            "    s = torch.tensor([-2147483648, 7], dtype=3)\n"
            "    i32 = torch.cat([torch.floor_divide(s, -1), torch.remainder(s, -1),\n"
            "                     torch.div(s, -1, rounding_mode=\"trunc\"), torch.fmod(s, -1)])\n"
            "    return (torch.cat([torch.tensor([q, r]), a, b, c, d, e]), i32)\n")
    p = code_archive(ctx, "intmin.pt", body)
    x = npy_ones(ctx)
    out = ctx.path("out_intmin")
    ctx.expect(["run", p, x, "--output-dir", out], 0)
    m = -(1 << 63)
    got = read_npy_ints(os.path.join(out, "out0.npy"))
    want = [m, 0, m, m, m, m, m, m, m, m, m, m, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, m, m, m, m, m]
    if got != want:
        raise AssertionError(f"int64 results {got}, expected {want}")
    got32 = read_npy_ints(os.path.join(out, "out1.npy"))
    n = -(1 << 31)
    if got32 != [n, -7, 0, 0, n, -7, 0, 0]:
        raise AssertionError(f"int32 results {got32}")


# ---- part 7: exit codes and messages -------------------------------------------------------

@case
def info_of_unloadable_archive(ctx):
    """`info` prints what it could read, then exits 1 with the compile error on stderr."""
    body = "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return torch.no_such_op(x)\n"
    p = code_archive(ctx, "no_compile.pt", body)
    ctx.expect(["info", p], 1, message="no_such_op")


@case
def invalid_utf8_in_code(ctx):
    """A byte that is not UTF-8 is reported with its value and byte offset."""
    p = ctx.path("bad_utf8.pt")
    src = module_source("M", [], FORWARD).encode() + b"# ok\n  x = \xff\n"
    write_archive(p, {"__torch__.py": src}, module_pickle("M", []))
    off = src.index(b"\xff")
    ctx.expect(["graph", p], 1, message=f"invalid UTF-8 byte 0xFF at byte offset {off}")


@case
def malformed_dynamic_axes(ctx):
    """A malformed --dynamic-axes is a usage error (exit 2), before anything is loaded."""
    p = code_archive(ctx, "dyn.pt", FORWARD)
    x = npy_ones(ctx)
    for spec in ("x", "x:", ":0", "x:zero"):
        ctx.expect(["export", p, x, "-o", ctx.path("dyn.onnx"), "--dynamic-axes", spec], 2)


def main():
    bin_, work = sys.argv[1], sys.argv[2]
    only = sys.argv[3] if len(sys.argv) > 3 else ""
    os.makedirs(work, exist_ok=True)
    ctx = Ctx(bin_, work)
    failed = 0
    for fn in CASES:
        if only and only not in fn.__name__:
            continue
        try:
            fn(ctx)
            print(f"PASS {fn.__name__}")
        except Exception as e:  # noqa: BLE001 - report every case
            failed += 1
            print(f"FAIL {fn.__name__}: {e}")
            if not isinstance(e, AssertionError):
                traceback.print_exc()
    print(f"{failed} failed" if failed else "all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
