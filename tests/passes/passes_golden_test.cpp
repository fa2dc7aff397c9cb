// Hand-written golden cases: what PyTorch's passes do not do (our extras), where we
// deliberately differ from PyTorch, and inputs torch._C.parse_ir cannot read (tuple
// constants). The PyTorch-generated cases are in cases/ (pass_cases_test.cpp).
#include "pass_test_util.h"

#include <gtest/gtest.h>

namespace torchless::passes::testing {
namespace {

// ---- eliminate_dead_code ----

TEST(EliminateDeadCode, KeepsMutationOfDeadValues) {
  // PyTorch deletes the append (alias analysis shows the list is dead); we keep every
  // mutating op.
  const char* in = R"IR(
graph(%x : int):
  %l : int[] = prim::ListConstruct(%x)
  %l2 : int[] = aten::append(%l, %x)
  %u : int = aten::mul(%x, %x)
  return (%x)
)IR";
  const char* out = R"IR(
graph(%x : int):
  %l : int[] = prim::ListConstruct(%x)
  %l2 : int[] = aten::append(%l, %x)
  return (%x)
)IR";
  expectPass("eliminate_dead_code", in, out);
}

TEST(EliminateDeadCode, RemovesDeadChainsInOneRun) {
  const char* in = R"IR(
graph(%x : int, %n : int):
  %t : bool = prim::Constant[value=1]()
  %a : int, %b : int = prim::Loop(%n, %t, %x, %x)
    block0(%i : int, %a.1 : int, %b.1 : int):
      %a.2 : int = aten::add(%a.1, %i)
      %d : int = aten::mul(%b.1, %b.1)
      -> (%t, %a.2, %d)
  return (%a)
)IR";
  const char* out = R"IR(
graph(%x : int, %n : int):
  %t : bool = prim::Constant[value=1]()
  %a : int = prim::Loop(%n, %t, %x)
    block0(%i : int, %a.1 : int):
      %a.2 : int = aten::add(%a.1, %i)
      -> (%t, %a.2)
  return (%a)
)IR";
  expectPass("eliminate_dead_code", in, out);
}

TEST(EliminateDeadCode, CarriedValuesThatOnlyFeedThemselves) {
  // PyTorch keeps %b and %c: their body inputs have uses (by dead nodes).
  expectPass("eliminate_dead_code", R"IR(
graph(%x : int, %n : int):
  %t : bool = prim::Constant[value=1]()
  %1 : int = prim::Constant[value=1]()
  %a : int, %b : int, %c : int = prim::Loop(%n, %t, %x, %x, %x)
    block0(%i : int, %a.1 : int, %b.1 : int, %c.1 : int):
      %a.2 : int = aten::add(%a.1, %1)
      %b.2 : int = aten::mul(%b.1, %i)
      %c.2 : int = aten::add(%c.1, %b.1)
      -> (%t, %a.2, %b.2, %c.2)
  return (%a)
)IR",
             R"IR(
graph(%x : int, %n : int):
  %t : bool = prim::Constant[value=1]()
  %1 : int = prim::Constant[value=1]()
  %a : int = prim::Loop(%n, %t, %x)
    block0(%i : int, %a.1 : int):
      %a.2 : int = aten::add(%a.1, %1)
      -> (%t, %a.2)
  return (%a)
)IR");
}

TEST(EliminateDeadCode, DeadForLoopGoesWhileLoopStays) {
  expectPass("eliminate_dead_code", R"IR(
graph(%x : Tensor, %c : bool, %n : int):
  %t : bool = prim::Constant[value=1]()
  %1 : int = prim::Constant[value=1]()
  %y : Tensor = prim::If(%c)
    block0():
      %a : Tensor = aten::add(%x, %x, %1)
      -> (%a)
    block1():
      %b : Tensor = aten::neg(%x)
      -> (%b)
  %k : int = prim::Loop(%n, %t, %1)
    block0(%i : int, %k.1 : int):
      %k.2 : int = aten::add(%k.1, %1)
      -> (%t, %k.2)
  %w : int = prim::Loop(%n, %c, %1)
    block0(%j : int, %w.1 : int):
      %w.2 : int = aten::add(%w.1, %1)
      %go : bool = aten::lt(%w.2, %n)
      -> (%go, %w.2)
  return (%x)
)IR",
             R"IR(
graph(%x : Tensor, %c : bool, %n : int):
  %1 : int = prim::Constant[value=1]()
  %w : int = prim::Loop(%n, %c, %1)
    block0(%j : int, %w.1 : int):
      %w.2 : int = aten::add(%w.1, %1)
      %go : bool = aten::lt(%w.2, %n)
      -> (%go, %w.2)
  return (%x)
)IR");
}

// ---- constant_propagation ----

TEST(ConstantPropagation, DeadBranchWithSideEffectsGoes) {
  const char* in = R"IR(
graph(%x : int):
  %f : bool = prim::Constant[value=0]()
  %msg : str = prim::Constant[value="boom"]()
  %y : int = prim::If(%f)
    block0():
      prim::RaiseException(%msg)
      -> (%x)
    block1():
      %z : int = aten::mul(%x, %x)
      -> (%z)
  return (%y)
)IR";
  const char* out = R"IR(
graph(%x : int):
  %z : int = aten::mul(%x, %x)
  return (%z)
)IR";
  expectPass("constant_propagation", in, out);
}

TEST(ConstantPropagation, LeavesSideEffectsAndRandomness) {
  const char* in = R"IR(
graph():
  %n : NoneType = prim::Constant()
  %s : int[] = prim::Constant[value=[2]]()
  %r : Tensor = aten::rand(%s, %n, %n, %n, %n)
  %m : str = prim::Constant[value="hi"]()
  prim::Print(%m)
  return (%r)
)IR";
  expectPass("constant_propagation", in, in);
}

// ---- peephole: beyond PyTorch ----

TEST(Peephole, DoubleNegation) {
  expectPass("peephole", R"IR(
graph(%c : bool):
  %a : bool = aten::__not__(%c)
  %b : bool = aten::__not__(%a)
  return (%b)
)IR",
             R"IR(
graph(%c : bool):
  return (%c)
)IR");
}

TEST(Peephole, NoneIsNone) {
  expectPass("peephole", R"IR(
graph():
  %n : NoneType = prim::Constant()
  %m : NoneType = prim::Constant()
  %a : bool = aten::__is__(%n, %m)
  %b : bool = aten::__isnot__(%n, %m)
  return (%a, %b)
)IR",
             R"IR(
graph():
  %t : bool = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  return (%t, %f)
)IR");
}

TEST(Peephole, IsinstanceDecidedByTheStaticType) {
  // torchvision's roi_align inlined with a Tensor for its Union[Tensor, List[Tensor]] boxes.
  // An Optional input decides nothing (None or a tensor at run time). (Nor does a tuple, whose
  // run-time type is its elements': a (Tensor?, int) may hold a (Tensor, int); the IR parser
  // takes no tuple type in `types=[...]`.)
  expectPass("peephole", R"IR(
graph(%x : Tensor, %l : int[], %o : Tensor?):
  %a : bool = prim::isinstance[types=[list, tuple]](%x)
  %b : bool = prim::isinstance[types=[Tensor]](%x)
  %c : bool = prim::isinstance[types=[list]](%l)
  %d : bool = prim::isinstance[types=[Tensor]](%o)
  return (%a, %b, %c, %d)
)IR",
             R"IR(
graph(%x : Tensor, %l : int[], %o : Tensor?):
  %f : bool = prim::Constant[value=0]()
  %t : bool = prim::Constant[value=1]()
  %t2 : bool = prim::Constant[value=1]()
  %d : bool = prim::isinstance[types=[Tensor]](%o)
  return (%f, %t, %t2, %d)
)IR");
}

TEST(Peephole, IdenticalBranches) {
  expectPass("peephole", R"IR(
graph(%c : bool, %x : Tensor):
  %y : Tensor = prim::If(%c)
    block0():
      %a : Tensor = aten::relu(%x)
      %b : Tensor = aten::neg(%a)
      -> (%b)
    block1():
      %d : Tensor = aten::relu(%x)
      %e : Tensor = aten::neg(%d)
      -> (%e)
  return (%y)
)IR",
             R"IR(
graph(%c : bool, %x : Tensor):
  %a : Tensor = aten::relu(%x)
  %b : Tensor = aten::neg(%a)
  return (%b)
)IR");
  // Different branches stay.
  const char* different = R"IR(
graph(%c : bool, %x : Tensor):
  %y : Tensor = prim::If(%c)
    block0():
      %a : Tensor = aten::relu(%x)
      -> (%a)
    block1():
      %d : Tensor = aten::neg(%x)
      -> (%d)
  return (%y)
)IR";
  expectPass("peephole", different, different);
}

TEST(Peephole, ListLiteralIdioms) {
  expectPass("peephole", R"IR(
graph(%a : int, %b : int):
  %1 : int = prim::Constant[value=-1]()
  %l : int[] = prim::ListConstruct(%a, %b)
  %x : int = aten::__getitem__(%l, %1)
  %p : int, %q : int = prim::ListUnpack(%l)
  %s : int = aten::add(%x, %p)
  return (%s)
)IR",
             R"IR(
graph(%a : int, %b : int):
  %s : int = aten::add(%b, %a)
  return (%s)
)IR");
  // A list that is appended to keeps its len.
  const char* mutated = R"IR(
graph(%a : int):
  %l : int[] = prim::ListConstruct(%a)
  %l2 : int[] = aten::append(%l, %a)
  %n : int = aten::len(%l)
  return (%n)
)IR";
  expectPass("peephole", mutated, mutated);
}

TEST(Peephole, SizeOfOneDimAndNoIntDivision) {
  expectPass("peephole", R"IR(
graph(%x : Float(2, 5, strides=[5, 1], requires_grad=0, device=cpu), %k : int):
  %1 : int = prim::Constant[value=-1]()
  %one : int = prim::Constant[value=1]()
  %s : int = aten::size(%x, %1)
  %d : float = aten::div(%k, %one)
  return (%s, %d)
)IR",
             R"IR(
graph(%x : Float(2, 5, strides=[5, 1], requires_grad=0, device=cpu), %k : int):
  %one : int = prim::Constant[value=1]()
  %5 : int = prim::Constant[value=5]()
  %d : float = aten::div(%k, %one)
  return (%5, %d)
)IR");
}

// ---- lower_local_objects: torchvision's ImageList, and objects that must stay ----

TEST(LowerLocalObjects, ReadsTakeTheLastWriteBeforeThem) {
  // Written, read (also inside a branch), written again, read: each read is the value the
  // write before it stored; the object and its writes go. Tuples of it are lowered first.
  expectPass("lower_local_objects", R"IR(
graph(%x : Tensor, %c : bool):
  %o : __torch__.ImageList = prim::CreateObject()
   = prim::SetAttr[name="tensors"](%o, %x)
  %t : (__torch__.ImageList, Tensor) = prim::TupleConstruct(%o, %x)
  %o2 : __torch__.ImageList, %u : Tensor = prim::TupleUnpack(%t)
  %a : Tensor = prim::GetAttr[name="tensors"](%o2)
  %y : Tensor = aten::relu(%a)
   = prim::SetAttr[name="tensors"](%o, %y)
  %r : Tensor = prim::If(%c)
    block0():
      %b : Tensor = prim::GetAttr[name="tensors"](%o)
      -> (%b)
    block1():
      -> (%u)
  return (%r)
)IR",
             R"IR(
graph(%x : Tensor, %c : bool):
  %y : Tensor = aten::relu(%x)
  %r : Tensor = prim::If(%c)
    block0():
      -> (%y)
    block1():
      -> (%x)
  return (%r)
)IR");
}

TEST(LowerLocalObjects, KeepsObjectsThatEscapeOrAreWrittenInBranches) {
  // Returned; written in a branch (which write a later read sees depends on the condition);
  // read before any write (the class's default, not known here).
  const char* returned = R"IR(
graph(%x : Tensor):
  %o : __torch__.ImageList = prim::CreateObject()
   = prim::SetAttr[name="tensors"](%o, %x)
  return (%o)
)IR";
  expectPass("lower_local_objects", returned, returned);
  const char* branch = R"IR(
graph(%x : Tensor, %c : bool):
  %o : __torch__.ImageList = prim::CreateObject()
   = prim::SetAttr[name="tensors"](%o, %x)
   = prim::If(%c)
    block0():
      %y : Tensor = aten::relu(%x)
       = prim::SetAttr[name="tensors"](%o, %y)
      -> ()
    block1():
      -> ()
  %a : Tensor = prim::GetAttr[name="tensors"](%o)
  return (%a)
)IR";
  expectPass("lower_local_objects", branch, branch);
  const char* unset = R"IR(
graph(%x : Tensor):
  %o : __torch__.ImageList = prim::CreateObject()
  %a : Tensor = prim::GetAttr[name="tensors"](%o)
   = prim::SetAttr[name="tensors"](%o, %x)
  return (%a)
)IR";
  expectPass("lower_local_objects", unset, unset);
}

// ---- lower_tuples: what parse_ir cannot express, and what we keep ----

TEST(LowerTuples, TupleConstant) {
  expectPass("lower_tuples", R"IR(
graph(%a : int):
  %t : (int, float) = prim::Constant[value=(1, 2.5)]()
  %x : int, %y : float = prim::TupleUnpack(%t)
  %z : int = aten::add(%a, %x)
  return (%z)
)IR",
             R"IR(
graph(%a : int):
  %1 : int = prim::Constant[value=1]()
  %z : int = aten::add(%a, %1)
  return (%z)
)IR");
}

TEST(LowerTuples, KeepsGraphSignatureAndUnlowerableTuples) {
  // A tuple input, a tuple output, a tuple passed to a call-like op, a dynamic index.
  const char* in = R"IR(
graph(%t : (int, int), %i : int):
  %x : int = prim::TupleIndex(%t, %i)
  %u : (int, int) = prim::TupleConstruct(%x, %x)
  prim::Print(%u)
  return (%t, %u)
)IR";
  expectPass("lower_tuples", in, in);
}

TEST(LowerTuples, LoopWhoseBodyResultIsNotAConstruct) {
  const char* in = R"IR(
graph(%n : int, %a : int, %p : (int, int)):
  %true : bool = prim::Constant[value=1]()
  %init : (int, int) = prim::TupleConstruct(%a, %a)
  %res : (int, int) = prim::Loop(%n, %true, %init)
    block0(%i : int, %acc : (int, int)):
      -> (%true, %p)
  %r : int, %s : int = prim::TupleUnpack(%res)
  return (%r)
)IR";
  expectPass("lower_tuples", in, in);
}

TEST(LowerTuples, NestedIfOutputs) {
  expectPass("lower_tuples", R"IR(
graph(%c : bool, %a : int, %b : int):
  %t : ((int, int), int) = prim::If(%c)
    block0():
      %i1 : (int, int) = prim::TupleConstruct(%a, %b)
      %t1 : ((int, int), int) = prim::TupleConstruct(%i1, %a)
      -> (%t1)
    block1():
      %i2 : (int, int) = prim::TupleConstruct(%b, %a)
      %t2 : ((int, int), int) = prim::TupleConstruct(%i2, %b)
      -> (%t2)
  %p : (int, int), %q : int = prim::TupleUnpack(%t)
  %x : int, %y : int = prim::TupleUnpack(%p)
  %z : int = aten::mul(%y, %q)
  return (%z)
)IR",
             R"IR(
graph(%c : bool, %a : int, %b : int):
  %y : int, %q : int = prim::If(%c)
    block0():
      -> (%b, %a)
    block1():
      -> (%a, %b)
  %z : int = aten::mul(%y, %q)
  return (%z)
)IR");
}

// ---- unroll_loops ----

TEST(UnrollLoops, LeavesLargeBodies) {
  std::string body;
  for (int i = 0; i < 40; ++i)
    body += "      %a" + std::to_string(i + 1) + " : int = aten::add(%a" + std::to_string(i) +
            ", %one)\n";
  std::string in = R"IR(
graph(%x : int):
  %t : bool = prim::Constant[value=1]()
  %n : int = prim::Constant[value=3]()
  %one : int = prim::Constant[value=1]()
  %y : int = prim::Loop(%n, %t, %x)
    block0(%i : int, %a0 : int):
)IR" + body + R"IR(      -> (%t, %a40)
  return (%y)
)IR";
  expectPass("unroll_loops", in, in);
}

TEST(UnrollLoops, NestedConstantLoops) {
  expectPass("unroll_loops", R"IR(
graph(%x : int):
  %t : bool = prim::Constant[value=1]()
  %2 : int = prim::Constant[value=2]()
  %y : int = prim::Loop(%2, %t, %x)
    block0(%i : int, %c : int):
      %z : int = prim::Loop(%2, %t, %c)
        block0(%j : int, %d : int):
          %e : int = aten::mul(%d, %2)
          -> (%t, %e)
      -> (%t, %z)
  return (%y)
)IR",
             R"IR(
graph(%x : int):
  %2 : int = prim::Constant[value=2]()
  %a : int = aten::mul(%x, %2)
  %b : int = aten::mul(%a, %2)
  %c : int = aten::mul(%b, %2)
  %d : int = aten::mul(%c, %2)
  return (%d)
)IR");
}

// ---- common_subexpression_elimination ----

TEST(CommonSubexpressionElimination, ConstantsByValueAndType) {
  expectPass("common_subexpression_elimination", R"IR(
graph():
  %a : int = prim::Constant[value=1]()
  %b : bool = prim::Constant[value=1]()
  %c : int = prim::Constant[value=1]()
  %d : float = prim::Constant[value=1.]()
  %s : str = prim::Constant[value="x"]()
  %t : str = prim::Constant[value="x"]()
  return (%a, %b, %c, %d, %s, %t)
)IR",
             R"IR(
graph():
  %a : int = prim::Constant[value=1]()
  %b : bool = prim::Constant[value=1]()
  %d : float = prim::Constant[value=1.]()
  %s : str = prim::Constant[value="x"]()
  return (%a, %b, %a, %d, %s, %s)
)IR");
}

}  // namespace
}  // namespace torchless::passes::testing
