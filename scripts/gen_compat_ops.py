#!/usr/bin/env python3
"""Writes the op-table part of torchless's libtorch-compatible C++ API.

    gen_compat_ops.py KERNEL_SCHEMAS.txt OUT_DIR

KERNEL_SCHEMAS.txt is `torchless ops --kernels` (every schema with a CPU kernel, one a line).
For each aten schema whose types map to libtorch's C++ types, as PyTorch's own codegen maps
them (Tensor -> const Tensor&, int[] -> IntArrayRef, int? -> optional<int64_t>, Scalar ->
const Scalar&, ScalarType? dtype ... pin_memory -> TensorOptions, ...), it writes
  OUT_DIR/ops_methods.inc    Tensor method declarations (first argument `self`), included in
                             class at::Tensor by torchless/cxx/core.h
  OUT_DIR/ops_generated.h    at:: free functions and the methods' definitions, each calling
                             its op-table entry through the C API (looked up once, by its
                             exact name and overload)
In-place schemas (`Tensor(a!) self ... -> Tensor(a!)`) return Tensor& as libtorch's do: methods
a reference to the tensor they were called on, functions the Tensor& they were given.
Out variants, Dimname/Generator/complex/str-list arguments and schemas whose C++ signature
repeats an earlier one (int vs SymInt overloads) are left out; what is left out does not
compile in a user's program, as the issue asks.
"""
import re
import sys
from pathlib import Path

KEYWORDS = set("""and or not xor bitor bitand compl delete new default int float bool char double long
short signed unsigned void auto register operator template this class struct union enum namespace
return if else for while do switch case break continue goto try catch throw const volatile static
extern inline virtual public private protected friend typedef typename using sizeof true false
nullptr export mutable explicit asm""".split())
# Members and functions written by hand in core.h.
HANDWRITTEN = {"to", "contiguous", "item", "size", "stride", "dim", "numel", "sizes", "strides", "data_ptr",
               "defined", "reset", "dtype", "device", "is_contiguous", "is_floating_point", "requires_grad",
               "options", "toString", "element_size", "nbytes", "itemsize", "ndimension", "is_cuda", "is_cpu",
               "cpu", "cuda", "detach", "requires_grad_", "is_same", "scalar_type", "accessor", "tensor",
               "from_blob", "print", "layout", "is_quantized", "output_nr", "data", "len", "format",
               "list", "str", "dict", "keys", "values", "items", "append", "is_nonzero"}
FACTORY_ARGS = ["dtype", "layout", "device", "pin_memory"]


def split_top(s, sep=","):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse(schema):
    m = re.match(r"^([\w:]+)(?:\.(\w+))?\((.*)\) -> (.*)$", schema)
    if not m:
        return None
    name, overload, args, rets = m.groups()
    parsed, kwonly = [], False
    for a in split_top(args):
        if a == "*":
            kwonly = True
            continue
        default = None
        if "=" in a:
            a, default = a.split("=", 1)
        if " " not in a.strip():
            return None  # `...` (varargs)
        t, n = a.strip().rsplit(" ", 1)
        parsed.append({"type": t, "name": n, "default": default, "kwonly": kwonly})
    rets = rets.strip()
    if rets.startswith("(") and rets.endswith(")"):
        rets = rets[1:-1]
    ret_types = [r.rsplit(" ", 1)[0] if " " in r.strip() and not r.strip().endswith("]") else r.strip()
                 for r in split_top(rets)] if rets else []
    return {"name": name, "overload": overload or "", "args": parsed, "rets": ret_types}


def base_type(t):
    # Drop alias annotations: Tensor(a!) -> Tensor, Tensor(a)[] -> Tensor[]
    return re.sub(r"\([a-z!|*\s>-]*\)", "", t)


def cpp_type(t):
    t = base_type(t)
    t = re.sub(r"\[\d+\]", "[]", t)
    m = {
        "Tensor": "const Tensor&", "Tensor?": "const std::optional<Tensor>&", "Tensor[]": "TensorList",
        "Tensor?[]": "ArrayRef<std::optional<Tensor>>",
        "int": "int64_t", "SymInt": "int64_t", "int?": "std::optional<int64_t>", "SymInt?": "std::optional<int64_t>",
        "int[]": "IntArrayRef", "SymInt[]": "IntArrayRef", "int[]?": "OptionalIntArrayRef", "SymInt[]?": "OptionalIntArrayRef",
        "float": "double", "float?": "std::optional<double>", "float[]": "ArrayRef<double>",
        "float[]?": "std::optional<ArrayRef<double>>",
        "bool": "bool", "bool?": "std::optional<bool>",
        "Scalar": "const Scalar&", "Scalar?": "const std::optional<Scalar>&",
        "ScalarType": "ScalarType", "ScalarType?": "std::optional<ScalarType>",
        "MemoryFormat": "MemoryFormat", "MemoryFormat?": "std::optional<MemoryFormat>",
        "Layout?": "std::optional<Layout>", "Device?": "std::optional<Device>",
        "str": "std::string_view", "str?": "std::optional<std::string_view>",
    }
    return m.get(t)


def ret_type(rets):
    m = {"Tensor": "Tensor", "int": "int64_t", "SymInt": "int64_t", "float": "double", "bool": "bool",
         "Scalar": "Scalar", "Tensor[]": "std::vector<Tensor>"}
    if not rets:
        return "void"
    mapped = [m.get(base_type(r)) for r in rets]
    if any(x is None for x in mapped):
        return None
    if len(mapped) == 1:
        return mapped[0]
    if any(x != "Tensor" for x in mapped):
        return None
    return "std::tuple<" + ", ".join(mapped) + ">"


def cpp_default(d, t):
    bt = re.sub(r"\[\d+\]", "[]", base_type(t))
    if d == "None":
        return "std::nullopt"
    if d == "True":
        return "true"
    if d == "False":
        return "false"
    if d.startswith("[") and d.endswith("]"):
        return "{" + d[1:-1] + "}" if d != "[]" else "{}"
    if d.startswith('"') or d.startswith("'"):
        return '"' + d[1:-1] + '"'
    if bt in ("MemoryFormat", "MemoryFormat?"):
        return "static_cast<MemoryFormat>(%s)" % d
    if bt in ("ScalarType", "ScalarType?"):
        return "static_cast<ScalarType>(%s)" % d
    if d in ("inf", "-inf"):
        return ("-" if d[0] == "-" else "") + "std::numeric_limits<double>::infinity()"
    if re.match(r"^-?[\d.]+(e[-+]?\d+)?$", d):
        if bt.startswith("float") and re.match(r"^-?\d+$", d):
            return d + ".0"
        if d.endswith("."):
            return d + "0"
        return d
    return None


def pname(n):
    return n + "_" if n in KEYWORDS else n


def build(schema):
    s = parse(schema)
    if not s or not s["name"].startswith("aten::"):
        return None
    fname = s["name"][len("aten::"):]
    ov = s["overload"]
    if fname in HANDWRITTEN or fname in KEYWORDS or fname.startswith("__") or fname[:1].isupper():
        return None
    if ov == "out" or ov.endswith("_out") or ov.startswith("out_") or "Dimname" in schema:
        return None
    if any(a["kwonly"] and "!" in a["type"] for a in s["args"]):
        return None
    rt = ret_type(s["rets"])
    if rt is None:
        return None
    args = s["args"]
    names = [a["name"] for a in args]
    factory = all(f in names for f in FACTORY_ARGS)
    params, call_args = [], []
    # A `Generator? generator=None` argument is left out (always None): torchless has only the
    # default generator, and a call that passes one does not compile.
    is_gen = lambda a: base_type(a["type"]) == "Generator?" and a["default"] == "None"
    for a in args:
        if factory and a["name"] == "dtype":
            # TensorOptions stands where dtype stood (before memory_format), as in libtorch.
            dflt = a["default"]
            opt_default = "{}" if dflt in (None, "None") else "TensorOptions(static_cast<ScalarType>(%s))" % dflt
            params.append({"ctype": "const TensorOptions&", "name": "options", "default": opt_default})
            continue
        if (factory and a["name"] in FACTORY_ARGS) or is_gen(a):
            continue
        ct = cpp_type(a["type"])
        if ct is None:
            return None
        p = {"ctype": ct, "name": pname(a["name"]), "default": None}
        if a["default"] is not None:
            p["default"] = cpp_default(a["default"], a["type"])
            if p["default"] is None:
                return None
        params.append(p)
    # Trailing defaults only (C++ needs every parameter after a defaulted one defaulted).
    seen_default = False
    for p in reversed(params):
        if p["default"] is None:
            seen_default = True
        elif seen_default:
            p["default"] = None
    for a in args:
        if factory and a["name"] in FACTORY_ARGS:
            call_args.append({"dtype": "options.dtype_opt()", "layout": "std::nullopt",
                              "device": "detail::checkedCpu(options)", "pin_memory": "std::nullopt"}[a["name"]])
        elif is_gen(a):
            call_args.append("std::nullopt")
        else:
            call_args.append(pname(a["name"]))
    has_tensor = any(base_type(a["type"]).startswith("Tensor") for a in args) or rt != "void" and "Tensor" in rt
    if not has_tensor:
        return None
    key = s["name"] + ("." + ov if ov else "")
    method = bool(args) and args[0]["name"] == "self" and base_type(args[0]["type"]) == "Tensor" and not factory
    # In-place (`Tensor(a!) self ... -> Tensor(a!)`): as libtorch, the method returns a
    # reference to the tensor it was called on, and the function takes and returns Tensor&.
    inplace = (method and "!" in args[0]["type"] and len(s["rets"]) == 1 and "!" in s["rets"][0]
               and rt == "Tensor")
    if inplace:
        rt = "Tensor&"
        params[0]["ctype"] = "Tensor&"
    return {"fname": fname, "key": key, "ret": rt, "params": params, "call_args": call_args, "method": method,
            "inplace": inplace}


def disambiguate(entries, params_of):
    """Overloads of one name that a call could match equally (`arange(0, 10)` fits
    arange.start(start, end, options={}) and arange.start_step(start, end, step=1, options={}))
    lose defaults on the longer one's extra parameters, so each call has one match (libtorch's
    own arange(start, end, step, options) has no default step either)."""
    by_name = {}
    for b in entries:
        by_name.setdefault(b["fname"], []).append(b)
    for group in by_name.values():
        for x in group:
            for y in group:
                if x is y:
                    continue
                px, py = params_of(x), params_of(y)
                if len(py) <= len(px):
                    continue
                req = lambda ps: next((i + 1 for i in range(len(ps) - 1, -1, -1) if ps[i]["default"] is None), 0)
                worst = -1
                for k in range(max(req(px), req(py)), len(px) + 1):
                    if [p["ctype"] for p in px[:k]] == [p["ctype"] for p in py[:k]]:
                        worst = k
                # A call with `worst` arguments fits both: y must require one more.
                if worst >= 0:
                    for p in py[:worst + 1]:
                        p["default"] = None


def sig(params, with_defaults):
    out = []
    for p in params:
        x = "%s %s" % (p["ctype"], p["name"])
        if with_defaults and p["default"] is not None:
            x += " = " + p["default"]
        out.append(x)
    return ", ".join(out)


def main():
    schemas = [l.strip() for l in Path(sys.argv[1]).read_text().splitlines() if l.strip()]
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    funcs, methods = [], []
    fsigs, msigs = set(), set()
    for schema in schemas:
        b = build(schema)
        if not b:
            continue
        ftypes = (b["fname"], tuple(p["ctype"] for p in b["params"]))
        if ftypes not in fsigs:
            fsigs.add(ftypes)
            funcs.append(b)
        if b["method"]:
            mtypes = (b["fname"], tuple(p["ctype"] for p in b["params"][1:]))
            if mtypes not in msigs:
                msigs.add(mtypes)
                methods.append(b)
    disambiguate(funcs, lambda b: b["params"])
    disambiguate(methods, lambda b: b["params"][1:])
    header = "// Generated by scripts/gen_compat_ops.py from `torchless ops --kernels`; do not edit.\n"
    decls = [header]
    for b in methods:
        decls.append("  %s %s(%s) const;\n" % (b["ret"], b["fname"], sig(b["params"][1:], True)))
    (out / "ops_methods.inc").write_text("".join(decls))

    body = [header, "#pragma once\n#include <limits>\n\nnamespace at {\nnamespace detail {\n",
            "inline std::optional<Device> checkedCpu(const TensorOptions& o) {\n"
            "  checkDevice(o.device());\n  return std::nullopt;\n}\n}  // namespace detail\n\n"]
    for b in funcs:
        if b["inplace"]:
            body.append("/// %s\ninline Tensor& %s(%s) {\n  static const tl_op* op = detail::findOp(\"%s\");\n"
                        "  detail::call<void>(op, %s);\n  return %s;\n}\n" % (
                            b["key"], b["fname"], sig(b["params"], True), b["key"], ", ".join(b["call_args"]),
                            b["call_args"][0]))
            continue
        ret = "" if b["ret"] == "void" else "return "
        body.append("/// %s\ninline %s %s(%s) {\n  static const tl_op* op = detail::findOp(\"%s\");\n"
                    "  %sdetail::call<%s>(op, %s);\n}\n" % (
                        b["key"], b["ret"], b["fname"], sig(b["params"], True), b["key"], ret, b["ret"],
                        ", ".join(b["call_args"])))
    for b in methods:
        call = ["*this"] + b["call_args"][1:]
        if b["inplace"]:
            body.append("inline Tensor& Tensor::%s(%s) const {\n  static const tl_op* op = detail::findOp(\"%s\");\n"
                        "  detail::call<void>(op, %s);\n  return const_cast<Tensor&>(*this);\n}\n" % (
                            b["fname"], sig(b["params"][1:], False), b["key"], ", ".join(call)))
            continue
        ret = "" if b["ret"] == "void" else "return "
        body.append("inline %s Tensor::%s(%s) const {\n  static const tl_op* op = detail::findOp(\"%s\");\n"
                    "  %sdetail::call<%s>(op, %s);\n}\n" % (
                        b["ret"], b["fname"], sig(b["params"][1:], False), b["key"], ret, b["ret"], ", ".join(call)))
    body.append("}  // namespace at\n")
    (out / "ops_generated.h").write_text("".join(body))
    print("gen_compat_ops: %d functions, %d methods from %d schemas" % (len(funcs), len(methods), len(schemas)))


if __name__ == "__main__":
    main()
