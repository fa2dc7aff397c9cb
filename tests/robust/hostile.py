"""Hostile inputs for torchless, built in the test (issue #18).

Small helpers that write minimal TorchScript archives, pickles and IR text, plus
`run_limited`, which runs the CLI under an address-space limit and a timeout so that
a regression shows as a failed test instead of an exhausted machine.
"""
import os
import resource
import struct
import subprocess
import zipfile

MEMORY_LIMIT = 3 << 30  # bytes of address space per CLI run
TIMEOUT = 60  # seconds per CLI run


def run_limited(args, memory=MEMORY_LIMIT, timeout=TIMEOUT, env=None):
    """Runs args with RLIMIT_AS=memory and a timeout. Returns (status, stdout, stderr);
    status is -SIGNAL for a signal and 'timeout' for a hang."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    e = dict(os.environ)
    e.setdefault("OMP_NUM_THREADS", "1")
    if env:
        e.update(env)
    try:
        p = subprocess.run(args, capture_output=True, timeout=timeout, preexec_fn=limit, env=e)
    except subprocess.TimeoutExpired:
        return "timeout", "", ""
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


# ---- pickles ---------------------------------------------------------------------------------

def _unicode(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


class Pickle:
    """Protocol-2 pickle bytes built opcode by opcode."""

    def __init__(self):
        self.b = bytearray(b"\x80\x02")

    def op(self, raw):
        self.b += raw
        return self

    def global_(self, module, name):
        return self.op(b"c" + module.encode() + b"\n" + name.encode() + b"\n")

    def str_(self, s):
        return self.op(_unicode(s))

    def int_(self, i):
        return self.op(b"J" + struct.pack("<i", i))

    def put(self, i):
        return self.op(b"r" + struct.pack("<I", i))

    def get(self, i):
        return self.op(b"j" + struct.pack("<I", i))

    def bytes(self):
        return bytes(self.b) + b"."


def module_pickle(cls, attrs):
    """data.pkl of one `__torch__.<cls>` object; attrs: list of (name, emit(p)) pairs."""
    p = Pickle()
    p.global_("__torch__", cls).op(b")\x81").op(b"}(")
    p.str_("training").op(b"\x88")
    for name, emit in attrs:
        p.str_(name)
        emit(p)
    p.op(b"ub")
    return p.bytes()


def shared_tuples(levels, memo_base=1000):
    """An emitter for a tuple DAG: t0 = (0, 0), t(k+1) = (tk, tk) with the second tk a memo
    reference to the first, so `levels` levels expand to 2**levels leaves in ~12 bytes each."""
    def emit(p):
        p.int_(0).int_(0).op(b"\x86")  # TUPLE2
        for k in range(levels):
            p.put(memo_base + k).get(memo_base + k).op(b"\x86")
    return emit


def shared_lists(levels, memo_base=1000):
    """As shared_tuples, with lists: l(k+1) = [lk, lk] (EMPTY_LIST MARK lk PUT GET APPENDS)."""
    def emit(p):
        p.op(b"](" * levels)
        p.op(b"](").int_(0).op(b"e")  # l0 = [0]
        for k in range(levels):
            p.put(memo_base + k).get(memo_base + k).op(b"e")
    return emit


def write_archive(path, code, data_pkl, name="m", extra=None, compress=True):
    """A TorchScript archive: `code` maps paths under code/ to source; data.pkl as given."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}/data.pkl", data_pkl, zipfile.ZIP_STORED)
        for rel, src in code.items():
            z.writestr(f"{name}/code/{rel}", src,
                       zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED)
        z.writestr(f"{name}/constants.pkl", b"\x80\x02).", zipfile.ZIP_STORED)
        z.writestr(f"{name}/version", b"3\n", zipfile.ZIP_STORED)
        for rel, data in (extra or {}).items():
            z.writestr(f"{name}/{rel}", data, zipfile.ZIP_STORED)


def module_source(cls, attrs, body):
    """code/__torch__.py of one module class: attrs is [(name, annotation)], body the methods."""
    lines = [f"class {cls}(Module):", "  __parameters__ = []", "  __buffers__ = []",
             "  training : bool"]
    lines += [f"  {n} : {t}" for n, t in attrs]
    return "\n".join(lines) + "\n" + body
