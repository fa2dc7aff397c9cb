# Prints PyTorch's isSubtypeOf for the rows of kSubtypes in tests/core/type_test.cpp.
# Run: /usr/bin/python3 tests/core/check_subtypes.py
import torch
from typing import *
from torch._C import _jit_get_all_schemas
from torch.jit.annotations import ann_to_type
from torch._sources import fake_range
rows = [("int","float"),("int","number"),("float","number"),("complex","number"),("bool","int"),("int","Optional[int]"),("NoneType","Optional[Tensor]"),("Optional[int]","int"),("List[int]","List[number]"),("List[int]","List[int]"),("Tuple[int, int]","Tuple[number, Optional[int]]"),("Tuple[int]","Tuple[int, int]"),("Dict[str, int]","Dict[str, number]"),("Tensor","Any"),("List[Tensor]","Any"),("int","Union[int, str]"),("Union[int, str]","Union[int, str, float]"),("Union[int, str]","int"),("Optional[int]","Union[int, None, str]"),("Optional[int]","Optional[number]")]
env = dict(globals()); env['Tensor']=torch.Tensor; env['NoneType']=type(None); env['number']=torch._C.NumberType.get()
def T(s):
    if s=='number': return torch._C.NumberType.get()
    s2 = s.replace('number','float')
    t = ann_to_type(eval(s2, env), fake_range())
    return t
for a,b in rows:
    ta = T(a); 
    if 'number' in b:
        if b=='number': tb=torch._C.NumberType.get()
        elif b=='List[number]': tb=torch._C.ListType(torch._C.NumberType.get())
        elif b=='Dict[str, number]': tb=torch._C.DictType(torch._C.StringType.get(), torch._C.NumberType.get())
        elif b=='Tuple[number, Optional[int]]': tb=torch._C.TupleType([torch._C.NumberType.get(), T('Optional[int]')])
        elif b=='Optional[number]': tb=torch._C.OptionalType(torch._C.NumberType.get())
    else: tb=T(b)
    print(a, b, ta.isSubtypeOf(tb))
