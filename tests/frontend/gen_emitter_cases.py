#!/usr/bin/python3
"""Writes the emitter's golden cases (tests/frontend/emitter_cases/<case>/) from PyTorch 1.13.

For each case, a small Python source defines `fn` (a free function, scripted) or `M` (a
module, scripted from an instance). We record:

  source.py     the original TorchScript source (what a user's .py holds)
  graph.txt     str(fn.graph): PyTorch's graph of source.py
  code/...      the printed TorchScript (fn.code and its helpers, or the module's code/
                files from torch.jit.save), i.e. what archives hold
  code_graph.txt  PyTorch's graph of the printed code: the saved archive, without its
                .debug_pkl records, imported with torch._C.import_ir_module (for free
                functions the archive is fn.save()'s PlaceholderModule; its unused %self
                input is dropped by the test)
  meta.txt      kind (function|module) and the case's comparison mode

Run: /usr/bin/python3 tests/frontend/gen_emitter_cases.py [outdir]
"""
import inspect, io, os, shutil, sys, textwrap, zipfile
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "emitter_cases")

PRELUDE = """\
import math
import torch
from torch import Tensor
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union
from torch.jit import annotate
"""

# name -> (source, mode). mode: "exact" compares normalised graph text; "kinds" compares the
# multiset of node kinds (constants aside) and the output types; a third word "source-kinds"
# / "source-skip" sets the mode for compiling source.py (default: same as for code).
CASES = {}

def case(name, src, mode="exact", source_mode=None):
    CASES[name] = (textwrap.dedent(src), mode, source_mode or mode)

case("arith_int_float", """
def fn(a: int, b: float) -> float:
    c = a * 2 + 1
    d = c / 3
    e = b - d
    f = a // 2 % 3
    return e * f + 2 ** a
""")
case("tensor_scalar_ops", """
def fn(x: Tensor, y: Tensor) -> Tensor:
    z = x + y * 2
    w = z - 1.5
    return torch.relu(w @ y) / x
""")
case("tensor_methods", """
def fn(x: Tensor) -> Tensor:
    y = x.view(-1, 4)
    z = y.transpose(0, 1).contiguous()
    return z.sum(dim=0, keepdim=True).unsqueeze(0)
""")
case("kwargs_defaults", """
def fn(x: Tensor) -> Tensor:
    a = torch.sum(x, dim=[0, 1])
    b = torch.softmax(x, 1)
    c = torch.cat([x, b], 0)
    return torch.flatten(c, start_dim=1) + a
""")
case("if_else_var", """
def fn(x: Tensor, flag: bool) -> Tensor:
    if flag:
        y = x + 1
    else:
        y = x - 1
    return y
""")
case("if_no_else_mutation", """
def fn(x: int, n: int) -> int:
    y = x
    if n > 2:
        y = y * 2
        x = 3
    return x + y
""")
case("if_elif_chain", """
def fn(n: int) -> str:
    if n < 0:
        s = "neg"
    elif n == 0:
        s = "zero"
    else:
        s = "pos"
    return s
""")
case("optional_refine", """
def fn(x: Tensor, y: Optional[Tensor]) -> Tensor:
    if y is not None:
        x = x + y
    return x
""")
case("optional_refine_is_none", """
def fn(x: Optional[int]) -> int:
    if x is None:
        r = 0
    else:
        r = x + 1
    return r
""")
case("optional_and_refine", """
def fn(a: Optional[int], b: Optional[int]) -> int:
    if a is not None and b is not None:
        return a + b
    return 0
""", mode="kinds")
case("optional_default_none", """
def fn(x: Tensor, scale: Optional[float] = None) -> Tensor:
    if scale is None:
        scale = 1.0
    return x * scale
""")
case("for_range", """
def fn(n: int) -> int:
    s = 0
    for i in range(n):
        s += i * i
    return s
""")
case("for_range_start_step", """
def fn(n: int) -> int:
    s = 0
    for i in range(2, n, 3):
        s = s + i
    return s
""")
case("while_loop", """
def fn(n: int) -> int:
    i = 0
    acc = 1
    while i < n:
        acc = acc * 2
        i += 1
    return acc
""")
case("nested_loops", """
def fn(n: int, m: int) -> int:
    t = 0
    for i in range(n):
        for j in range(m):
            t = t + i * j
    return t
""")
case("for_list", """
def fn(xs: List[int]) -> int:
    s = 0
    for v in xs:
        s = s + v
    return s
""", source_mode="kinds")
case("for_tuple_unrolled", """
def fn(x: Tensor) -> Tensor:
    for k in (1, 2, 3):
        x = x * k
    return x
""")
case("enumerate_zip", """
def fn(xs: List[int], ys: List[float]) -> float:
    s = 0.0
    for i, v in enumerate(xs):
        s = s + i * v
    for a, b in zip(xs, ys):
        s = s + a * b
    return s
""", mode="kinds")
case("dict_iteration", """
def fn(d: Dict[str, int]) -> int:
    s = 0
    for k in d:
        s = s + d[k]
    for k2, v in d.items():
        s = s + v + len(k2)
    for v2 in d.values():
        s = s - v2
    return s
""", mode="kinds")
case("break_continue", """
def fn(xs: List[int]) -> int:
    s = 0
    for v in xs:
        if v < 0:
            continue
        if v > 100:
            break
        s += v
    return s
""", mode="kinds", source_mode="skip")  # source: PyTorch's exit transform turns the for-in-list
                                        # with break into a counter loop; we carry a flag
case("early_return", """
def fn(x: int) -> int:
    if x < 0:
        return -x
    y = x * 2
    return y
""", mode="kinds")
case("tuple_unpack", """
def fn(x: Tensor, n: int) -> Tuple[Tensor, Tensor]:
    a, b = x.chunk(2)
    c, (d, e) = n, (n + 1, n + 2)
    return a + c * d, b * e
""", mode="kinds")
case("tuple_return_index", """
def fn(x: Tensor) -> Tensor:
    t = (x, x + 1, 2)
    u = t[1]
    return u * t[2]
""", mode="kinds")
case("starred_unpack", """
def fn(xs: Tuple[int, int, int]) -> int:
    a, *rest = xs
    return a + rest[0] + rest[1]
""", mode="kinds")
case("aug_assign_tensor", """
def fn(x: Tensor, y: Tensor) -> Tensor:
    x += y
    x *= 2
    x -= 1
    return x
""")
case("list_ops", """
def fn(n: int) -> List[int]:
    l = annotate(List[int], [])
    for i in range(n):
        l.append(i)
    l2 = [1, 2, 3]
    l2.extend(l)
    return l2[1:]
""", source_mode="skip")
case("list_literal_typed", """
def fn(x: Tensor) -> List[Tensor]:
    l: List[Tensor] = []
    l.append(x)
    m = [x, x * 2]
    return l + m
""")
case("list_comprehension", """
def fn(xs: List[int]) -> List[int]:
    return [v * 2 for v in xs]
""", mode="kinds")
case("dict_literal_ops", """
def fn(k: str) -> Dict[str, int]:
    d = {"a": 1, "b": 2}
    d[k] = 3
    if "a" in d:
        d["c"] = d["a"]
    return d
""")
case("dict_comprehension", """
def fn(xs: List[int]) -> Dict[int, int]:
    return {v: v * v for v in xs}
""", mode="kinds")
case("compare_chain", """
def fn(a: int, b: int, c: int) -> bool:
    return a < b <= c
""", mode="kinds")
case("bool_ops", """
def fn(a: bool, b: bool, c: int) -> bool:
    return (a and b) or not (c > 2)
""")
case("is_isnot_in", """
def fn(xs: List[int], y: Optional[int]) -> bool:
    return (y is None) or (3 in xs) or (4 not in xs)
""", mode="kinds")
case("ternary", """
def fn(x: int) -> int:
    return x if x > 0 else -x
""")
case("fstring_format", """
def fn(x: int, y: float) -> str:
    a = f"x={x} y={y}"
    b = "{} and {}".format(x, a)
    return a + b
""")
case("string_ops", """
def fn(s: str) -> str:
    t = s.upper()
    if s.startswith("a"):
        t = t + s[1:]
    return t + str(len(s))
""")
case("print_raise", """
def fn(x: int) -> int:
    print("x is", x)
    if x < 0:
        raise ValueError("negative")
    return x
""")
case("assert_stmt", """
def fn(x: int) -> int:
    assert x > 0, "must be positive"
    assert x < 100
    return x
""")
case("casts_builtins", """
def fn(x: float, y: int) -> float:
    a = int(x)
    b = float(y)
    c = bool(y)
    d = min(a, y)
    e = max(x, b)
    f = abs(x)
    g = round(x)
    if c:
        a = a + 1
    return a + b + d + e + f + g
""")
case("math_module", """
def fn(x: float, n: int) -> float:
    return math.sqrt(x) + math.exp(x) + math.log(x) + math.floor(x) + math.pi + n
""")
case("isinstance_refine", """
def fn(x: Optional[Tensor]) -> Tensor:
    if isinstance(x, Tensor):
        return x
    return torch.zeros(1)
""", mode="kinds")
case("isinstance_builtin_list_tuple", """
def fn(boxes: Union[Tensor, List[Tensor]]) -> int:
    if isinstance(boxes, (list, tuple)):
        return 1
    return 3
""", mode="kinds")
case("unchecked_annotate", """
def fn(x: Optional[int]) -> int:
    y = annotate(Optional[int], x)
    z = torch.jit._unwrap_optional(y)
    return z
""", source_mode="skip")
case("tensor_subscript", """
def fn(x: Tensor) -> Tensor:
    a = x[0]
    b = x[:, 1]
    c = x[1:3:2]
    d = x[..., None]
    e = x[None, :, 0]
    return a + b.sum() + c.sum() + d.sum() + e.sum()
""")
case("tensor_index_tensor", """
def fn(x: Tensor, idx: Tensor) -> Tensor:
    return x[idx] + x[idx, 0]
""")
case("tensor_setitem", """
def fn(x: Tensor, y: Tensor) -> Tensor:
    x[0] = y
    x[1:3] = 2.0
    x[y > 0] = 1.0
    return x
""", mode="kinds")
case("list_subscripts", """
def fn(xs: List[int], t: Tuple[int, str], s: str) -> int:
    a = xs[0] + xs[-1]
    b = xs[1:3]
    c = t[0]
    d = s[0]
    return a + len(b) + c + len(d)
""")
case("free_function_calls", """
def helper(x: int, y: int = 3) -> int:
    return x * y

def fn(a: int) -> int:
    return helper(a) + helper(a, y=2)
""")
case("tensor_props", """
def fn(x: Tensor) -> int:
    s = x.shape
    d = x.dim()
    n = x.size(0)
    t = x.dtype
    dev = x.device
    return s[0] + d + n + x.numel()
""", mode="kinds")
case("dtype_device_consts", """
def fn(x: Tensor) -> Tensor:
    y = x.to(torch.float64)
    z = torch.zeros([2, 2], dtype=torch.float32, device=torch.device("cpu"))
    return y.sum() + z.sum() + math.inf
""", mode="kinds")
case("del_stmt", """
def fn(xs: List[int]) -> List[int]:
    del xs[0]
    return xs
""")
case("max_min_lists_tensor", """
def fn(x: Tensor, xs: List[int]) -> Tensor:
    v, i = torch.max(x, 1)
    return v + i + max(xs)
""", mode="kinds")
# Issue 4's language gaps.
case("neg_literals", """
def fn(x: Tensor, n: int) -> Tensor:
    y = x.masked_fill(x > 0, -math.inf) + (-1.0)
    return y * -n + -(2)
""")
case("static_if_scripting", """
def fn(x: Tensor) -> Tensor:
    if torch.jit.is_scripting():
        y = x + 1
    else:
        y = x - 1
    if True:
        y = y * 2
    return y
""")
case("return_in_loop", """
def fn(xs: List[int], t: int) -> int:
    for i in range(len(xs)):
        if xs[i] == t:
            return i
    return -1
""", mode="kinds", source_mode="kinds")
case("return_in_while", """
def fn(n: int) -> int:
    i = 0
    while i < n:
        i += 3
        if i > 10:
            return i * 2
    return i
""", mode="kinds", source_mode="kinds")

# ---- modules
MODULE_CASES = {}

def module_case(name, src, mode="exact", source_mode="skip"):
    MODULE_CASES[name] = (textwrap.dedent(src), mode, source_mode)

module_case("module_attrs", """
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(3))
        self.count = 2
        self.scale = 0.5
    def forward(self, x: Tensor) -> Tensor:
        y = x * self.w
        for i in range(self.count):
            y = y + self.scale
        return y
""")
module_case("module_submodules", """
class Sub(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.b = torch.nn.Parameter(torch.zeros(3))
    def forward(self, x: Tensor) -> Tensor:
        return x + self.b
    @torch.jit.export
    def twice(self, x: Tensor, k: int = 2) -> Tensor:
        return x * k

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Sub()
        self.c = Sub()
    def forward(self, x: Tensor) -> Tensor:
        return self.c(self.a(x)) + self.a.twice(x)
""")
module_case("module_setattr", """
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = 0
    def forward(self, x: Tensor) -> Tensor:
        self.steps = self.steps + 1
        return x * self.steps
""")
module_case("module_list_iter", """
class Sub(torch.nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x + 1
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Sub(), Sub()])
    def forward(self, x: Tensor) -> Tensor:
        for l in self.layers:
            x = l(x)
        return x
""")
module_case("module_optional_attr", """
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bias: Optional[Tensor] = None
    def forward(self, x: Tensor) -> Tensor:
        b = self.bias
        if b is not None:
            x = x + b
        return x
""")


def strip_debug(src_path, dst_path):
    with zipfile.ZipFile(src_path) as zin, zipfile.ZipFile(dst_path, "w") as zout:
        for item in zin.infolist():
            if item.filename.endswith(".debug_pkl"):
                continue
            zout.writestr(item, zin.read(item.filename))


def code_files(archive):
    out = {}
    with zipfile.ZipFile(archive) as z:
        for n in z.namelist():
            parts = n.split("/")
            if len(parts) >= 2 and parts[1] == "code" and n.endswith(".py"):
                out["/".join(parts[2:])] = z.read(n).decode()
    return out


def imported_graph(archive, method="forward"):
    stripped = archive + ".nodebug.pt"
    strip_debug(archive, stripped)
    cu = torch._C.CompilationUnit()
    m = torch._C.import_ir_module(cu, stripped, None, {})
    return str(m._get_method(method).graph)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def split_defs(text):
    """Top-level `def` blocks of a code file."""
    blocks, cur = [], None
    for line in text.splitlines(keepends=True):
        if line.startswith("def ") or line.startswith("class "):
            cur = [line]
            blocks.append(cur)
        elif cur is not None:
            cur.append(line)
    return ["".join(b) for b in blocks]


def load_module(name, src, tmp):
    """Imports PRELUDE + src as module `name` (TorchScript needs inspect.getsource)."""
    import importlib.util
    path = os.path.join(tmp, name + ".py")
    write(path, PRELUDE + src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def gen_function(name, src, mode, source_mode, tmp):
    fn = torch.jit.script(load_module(name, src, tmp).fn)
    d = os.path.join(OUT, name)
    write(os.path.join(d, "source.py"), src.lstrip("\n"))
    write(os.path.join(d, "graph.txt"), str(fn.graph).replace(tmp + "/", ""))
    archive = os.path.join(tmp, name + ".pt")
    fn.save(archive)
    files = code_files(archive)
    helpers = [b for text in files.values() for b in split_defs(text) if b.startswith("def ")]
    write(os.path.join(d, "code", "__torch__.py"), fn.code.rstrip("\n") + "\n" + "".join(helpers))
    write(os.path.join(d, "code_graph.txt"), imported_graph(archive))
    write(os.path.join(d, "meta.txt"), f"function {mode} {source_mode}\n")


def gen_module(name, src, mode, source_mode, tmp):
    m = torch.jit.script(load_module(name, src, tmp).M())
    d = os.path.join(OUT, name)
    write(os.path.join(d, "source.py"), src.lstrip("\n"))
    write(os.path.join(d, "graph.txt"), str(m.graph).replace(tmp + "/", ""))
    archive = os.path.join(tmp, name + ".pt")
    torch.jit.save(m, archive)
    for rel, text in code_files(archive).items():
        write(os.path.join(d, "code", rel), text)
    write(os.path.join(d, "code_graph.txt"), imported_graph(archive))
    write(os.path.join(d, "meta.txt"), f"module {mode} {source_mode}\n")


def main():
    import tempfile
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (src, mode, smode) in CASES.items():
            gen_function(name, src, mode, smode, tmp)
        for name, (src, mode, smode) in MODULE_CASES.items():
            gen_module(name, src, mode, smode, tmp)
    print(f"wrote {len(CASES) + len(MODULE_CASES)} cases to {OUT}")


if __name__ == "__main__":
    main()
