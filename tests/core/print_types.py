# Prints how PyTorch spells the types used in tests/core/type_test.cpp (IR graph and code).
# Run: /usr/bin/python3 tests/core/print_types.py
import torch
from typing import List, Dict, Tuple, Optional, Union, Any
@torch.jit.script
def f(a: List[int], b: Dict[str, Tuple[int, float]], c: Optional[List[torch.Tensor]], d: Tuple[()], e: Union[int, str], g: Any, h: List[Optional[torch.Tensor]], i: Dict[int, List[str]], j: Optional[Tuple[int, str]], k: torch.device, l: complex, m: Union[int, float, None], n: float):
    return a
print(f.graph)
print(f.code)
t = torch._C.ListType(torch._C.IntType.get()); print(str(t), t.annotation_str, repr(t))
