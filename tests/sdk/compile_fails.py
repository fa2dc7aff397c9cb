"""What the libtorch-compatible headers do not provide must fail at compile time, never at run
time (issue 19). Each snippet below is valid libtorch code (or misuse libtorch also rejects);
compiled against the installed compat headers it must not compile, and the compiler's message
must name the reason.

    compile_fails.py CXX INSTALL_PREFIX
"""
import subprocess
import sys
import tempfile
from pathlib import Path

cxx, prefix = sys.argv[1], Path(sys.argv[2])
includes = ["-I", str(prefix / "include/torchless/compat"), "-I", str(prefix / "include")]

# (what, body of main, a word the compiler's error must contain)
CASES = [
    ("keyword arguments", 'torch::jit::Module m; torch::jit::Kwargs kw; m.forward({torch::ones({1})}, kw);',
     "deleted"),
    ("Method::num_inputs", 'torch::jit::Module m; m.get_method("forward").num_inputs();', "deleted"),
    ("data_ptr of an unknown element type", 'torch::ones({1}).data_ptr<std::string>();', "torchless: data_ptr"),
    ("an accessor of a temporary", 'torch::ones({2}).accessor<float, 1>();', "deleted"),
    ("IValue::to of an unknown type", 'torch::jit::IValue(1).to<std::vector<std::string>>();', "torchless: IValue::to"),
    ("an explicit generator", 'auto g = at::detail::createCPUGenerator(0); torch::rand({2}, g);', "createCPUGenerator"),
    ("an in-place function on a temporary", 'torch::relu_(torch::ones({2}));', "Tensor&"),
]

failures = []
with tempfile.TemporaryDirectory() as d:
    for what, body, needle in CASES:
        src = Path(d) / "case.cpp"
        src.write_text("#include <torch/script.h>\n#include <torch/torch.h>\n#include <string>\n#include <vector>\n"
                       "int main() {\n  " + body + "\n  return 0;\n}\n")
        p = subprocess.run([cxx, "-std=c++17", "-fsyntax-only", *includes, str(src)], capture_output=True, text=True)
        if p.returncode == 0:
            failures.append(f"{what}: compiled, but must not")
        elif needle not in p.stderr:
            failures.append(f"{what}: failed without mentioning {needle!r}:\n{p.stderr[:1500]}")
        else:
            print(f"ok: {what} does not compile")
if failures:
    print("\n".join(failures))
    sys.exit(1)
