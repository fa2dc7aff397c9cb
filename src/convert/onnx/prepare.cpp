// Graph preparation for export; see prepare.h for the steps.
#include "convert/onnx/prepare.h"

#include "convert/conversion_ctx.h"
#include "core/error.h"
#include "ir/operator_matching.h"
#include "ir/walk.h"
#include "passes/passes.h"
#include "runtime/canonicalize_ops.h"
#include "runtime/interpreter.h"
#include "runtime/kernel.h"
#include "runtime/observed_run.h"

#include <cstring>
#include <functional>

namespace torchless::onnx_export {

namespace {

bool isRecordable(const TypePtr& t) {
  if (!t) return false;
  switch (t->kind()) {
    case TypeKind::TensorType:
    case TypeKind::IntType:
    case TypeKind::FloatType:
    case TypeKind::BoolType:
    case TypeKind::NumberType:
    case TypeKind::DeviceObjType:  // x.device, for torch.zeros(..., device=x.device)
    case TypeKind::StringType:     // dict keys looked up (IntermediateLayerGetter.return_layers)
      return true;
    case TypeKind::ListType: {
      auto k = t->expect<ListType>().getElementType()->kind();
      return k == TypeKind::IntType || k == TypeKind::FloatType || k == TypeKind::BoolType;
    }
    default: return false;
  }
}

bool isFoldableType(const TypePtr& t) {
  return isRecordable(t) && t->kind() != TypeKind::TensorType;
}

// Ops whose result depends on a tensor's shape, dtype or device but not on its data.
bool readsOnlyMetadata(Symbol k) {
  static const std::unordered_set<Symbol> kinds = {
      Symbol::aten("size"),
      Symbol::aten("dim"),
      Symbol::aten("numel"),
      prim::shape,
      prim::dtype,
      prim::device,
      prim::layout,
      prim::is_cuda,
      prim::requires_grad,
      Symbol::aten("len"),
      Symbol::aten("__is__"),
      Symbol::aten("__isnot__"),
      Symbol::aten("is_floating_point"),
      Symbol::aten("zeros_like"),
      Symbol::aten("ones_like"),
      Symbol::prim("is_nested"),
      Symbol::prim("is_sparse"),
      Symbol::prim("is_quantized"),
      Symbol::prim("is_mkldnn"),
      Symbol::prim("is_meta"),
      Symbol::aten("is_complex"),
      // The run-time type of an input is fixed by the exported signature (torchvision's
      // roi_align: `isinstance(boxes, (list, tuple))` of a tensor input).
      prim::isinstance,
  };
  return kinds.count(k) > 0;
}

// A tensor like `t` grown along each of `axes` by `by`, or doubled when `by` is 0 (elements
// repeat cyclically; an empty `t` grows into zeros).
Tensor growAlong(const Tensor& t, const std::vector<int64_t>& axes, int64_t by) {
  Tensor src = t.contiguous();
  std::vector<int64_t> sizes = src.sizes();
  for (int64_t a : axes) {
    int64_t d = a < 0 ? a + src.dim() : a;
    TL_CHECK(d >= 0 && d < src.dim(), "dynamic axis {} is out of range for an input of rank {}", a,
             src.dim());
    sizes[d] += by > 0 ? by : std::max<int64_t>(sizes[d], 1);
  }
  Tensor out = Tensor::empty(sizes, src.dtype());
  const size_t item = src.itemsize();
  auto* o = static_cast<char*>(out.rawData());
  const int64_t n = out.numel();
  if (src.numel() == 0) {  // nothing to repeat (a dynamic axis of size 0): zeros
    if (n > 0) std::memset(o, 0, static_cast<size_t>(n) * item);
    return out;
  }
  const auto* in = static_cast<const char*>(src.rawData());
  const int64_t rank = src.dim();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t srcFlat = 0;
    for (int64_t d = 0; d < rank; ++d) srcFlat = srcFlat * src.sizes()[d] + idx[d] % src.sizes()[d];
    std::memcpy(o + flat * item, in + srcFlat * item, item);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Runs `graph` on `inputs`, returning the value of each of `values` (top-level values).
std::vector<IValue> observe(const std::shared_ptr<Graph>& graph, const std::vector<Value*>& values,
                            std::vector<IValue> inputs) {
  const size_t numOutputs = graph->outputs().size();
  for (Value* v : values) graph->registerOutput(v);
  std::vector<IValue> result;
  try {
    Code code(graph, "export example run");
    Stack stack = std::move(inputs);
    code.run(stack);
    result.assign(stack.end() - static_cast<std::ptrdiff_t>(values.size()), stack.end());
  } catch (...) {
    while (graph->outputs().size() > numOutputs) graph->eraseOutput(graph->outputs().size() - 1);
    throw;
  }
  while (graph->outputs().size() > numOutputs) graph->eraseOutput(graph->outputs().size() - 1);
  return result;
}

// Note [Example run past kernel-less branches]
// The interpreter compiles every node, also those in branches the example never takes
// (torch.norm's `out=` calls, F.interpolate's nearest-exact modes in scripted code): one
// without a kernel would stop the run, and with it the specialization that drops those
// branches. The run therefore goes on a copy of the graph in which such nodes inside blocks
// raise instead (prim::RaiseException; their outputs prim::Uninitialized): a branch the run
// takes still fails it, one it skips is folded away in the graph itself. Top-level nodes are
// left: they always run.
bool stubKernellessNodes(Block* b, bool nested) {
  bool stubbed = false;
  for (auto it = b->nodes().begin(); it != b->nodes().end(); ++it) {
    Node* n = *it;
    for (Block* sub : n->blocks()) stubbed |= stubKernellessNodes(sub, true);
    if (!nested || !n->blocks().empty() || !n->kind().is_aten()) continue;
    const OpInfo* op = matchOperator(n, OperatorRegistry::global());
    if (KernelRegistry::global().hasKernel(*n, op)) continue;
    Graph& g = *n->owningGraph();
    WithInsertPoint guard(n);
    Value* msg = g.insertConstant(IValue(fmt::format("{} has no kernel for the export example run",
                                                     op ? op->key : n->kind().toQualString())));
    g.insertNode(g.create(prim::RaiseException, {msg}, 0));
    for (Value* out : n->outputs()) {
      Node* u = g.insertNode(g.create(prim::Uninitialized));
      u->output()->setType(out->type());
      out->replaceAllUsesWith(u->output());
    }
    it.destroyCurrent();
    stubbed = true;
  }
  return stubbed;
}

// observe() on a copy of `graph` whose kernel-less nested nodes are stubbed (see the Note);
// `graph` itself when there are none. Top-level nodes correspond one to one.
std::vector<IValue> observeStubbed(const std::shared_ptr<Graph>& graph,
                                   const std::vector<Value*>& values, std::vector<IValue> inputs) {
  std::shared_ptr<Graph> copy = graph->copy();
  if (!stubKernellessNodes(copy->block(), false)) return observe(graph, values, std::move(inputs));
  std::unordered_map<const Value*, Value*> map;
  for (size_t i = 0; i < graph->inputs().size(); ++i) map[graph->inputs()[i]] = copy->inputs()[i];
  auto a = graph->nodes().begin();
  auto b = copy->nodes().begin();
  for (; a != graph->nodes().end() && b != copy->nodes().end(); ++a, ++b) {
    TL_INTERNAL_ASSERT(
        (*a)->kind() == (*b)->kind() && (*a)->outputs().size() == (*b)->outputs().size(),
        "graph copy differs at the top level");
    for (size_t i = 0; i < (*a)->outputs().size(); ++i) map[(*a)->output(i)] = (*b)->output(i);
  }
  std::vector<Value*> mapped;
  for (Value* v : values) mapped.push_back(map.at(v));
  return observe(copy, mapped, std::move(inputs));
}

// Whether no value of `b` (its inputs, its nodes' outputs, nested blocks too) may hold a tensor.
bool computesNoTensor(const Block* b) {
  for (const Value* v : b->inputs())
    if (mayHoldTensor(v->type())) return false;
  for (const Node* m : b->nodes()) {
    for (const Value* v : m->outputs())
      if (mayHoldTensor(v->type())) return false;
    for (const Block* sub : m->blocks())
      if (!computesNoTensor(sub)) return false;
  }
  return true;
}

// Unrolls top-level prim::Loops that run a constant number of times (at most 16) with the
// constant true condition and compute no tensor in their body (ifs within it neither; they
// read sizes of tensors from outside, as ConvTranspose's _output_padding): the body, nested
// blocks included, is copied once per iteration with the iteration number as a constant.
// Returns whether any loop went.
bool unrollScalarLoops(Graph& g) {
  bool changed = false;
  for (auto it = g.block()->nodes().begin(); it != g.block()->nodes().end(); ++it) {
    Node* loop = *it;
    if (loop->kind() != prim::Loop) continue;
    auto trip = toIValue(loop->input(0));
    auto cond = toIValue(loop->input(1));
    Block* body = loop->blocks()[0];
    auto again = toIValue(body->outputs()[0]);
    if (!trip || !trip->isInt() || trip->toInt() > 16 || !cond || !cond->isBool() ||
        !cond->toBool() || !again || !again->isBool() || !again->toBool())
      continue;
    if (!computesNoTensor(body)) continue;
    WithInsertPoint guard(loop);
    std::vector<Value*> carried(loop->inputs().begin() + 2, loop->inputs().end());
    for (int64_t k = 0; k < trip->toInt(); ++k) {
      std::unordered_map<const Value*, Value*> map;
      map[body->inputs()[0]] = g.insertConstant(IValue(k));
      for (size_t i = 0; i < carried.size(); ++i) map[body->inputs()[i + 1]] = carried[i];
      auto get = [&](Value* v) {
        auto found = map.find(v);
        return found == map.end() ? v : found->second;
      };
      for (const Node* m : body->nodes()) {
        Node* copy = g.insertNode(g.createClone(m, get));
        for (size_t i = 0; i < m->outputs().size(); ++i) map[m->output(i)] = copy->output(i);
      }
      for (size_t i = 0; i < carried.size(); ++i) carried[i] = get(body->outputs()[i + 1]);
    }
    for (size_t i = 0; i < loop->outputs().size(); ++i)
      loop->output(i)->replaceAllUsesWith(carried[i]);
    it.destroyCurrent();
    changed = true;
  }
  return changed;
}

// Whether any node of `b` (nested blocks too) writes one of its inputs.
bool hasWrites(const Block* b) {
  for (const Node* n : b->nodes()) {
    if (const OpInfo* op = matchOperator(n, OperatorRegistry::global()); op && op->mutates)
      return true;
    for (const Block* s : n->blocks())
      if (hasWrites(s)) return true;
  }
  return false;
}

// An execution observer that looks at ops only (afterOp); the other steps pass.
class OpObserver : public ExecutionObserver {
 public:
  void enterCall(const Node*, const Graph&, const IValue*, size_t) override {}
  void exitCall(const Node*, const Graph&, const IValue*, size_t) override {}
  void enterIf(const Node&, size_t) override {}
  void exitIf(const Node&, size_t) override {}
  void enterLoop(const Node&) override {}
  void endIteration(const Node&) override {}
  void exitLoop(const Node&) override {}
  void afterGetAttr(const Node&, const IValue&) override {}
  void beforeSetAttr(const Node&, const IValue&, const IValue&) override {}
};

// Note [Views that may copy]
// contiguous(x, memory_format) returns x itself when x already is contiguous in that format,
// else a copy; reshape / flatten / reshape_as return a view when the strides allow one, else
// a copy. Mutation removal (passes/remove_mutation.cpp) treats them as views, so a write
// through one reaches the base: right for a view, wrong for a copy (`y = x.t().contiguous();
// y[0] = 1` leaves x alone in PyTorch). When the graph writes anything, an observed example
// run (runtime/observed_run.h) tells, for every such node, at the top level and inside Loop /
// If bodies alike, whether each of its runs copied (its output's storage is not its input's);
// those that copied on every run become aten::clone (contiguous keeps its memory format), a
// fresh tensor for mutation removal. Nodes that never ran (a branch the example does not take)
// and nodes that copied on some runs only (a loop whose input becomes contiguous on the way)
// stay views.
class CopyObserver final : public OpObserver {
 public:
  static constexpr int kViewed = 1, kCopied = 2;
  explicit CopyObserver(const std::vector<Node*>& nodes) : seen(nodes.size(), 0) {
    for (size_t i = 0; i < nodes.size(); ++i) index_[nodes[i]] = i;
  }
  void afterOp(const Node& node, const OpInfo*, const std::vector<IValue>& inputs,
               const IValue* outputs, size_t n) override {
    auto it = index_.find(&node);
    if (it == index_.end() || inputs.empty() || n != 1) return;
    if (!inputs[0].isTensor() || !outputs[0].isTensor()) return;
    const Tensor a = inputs[0].toTensor(), b = outputs[0].toTensor();
    const bool view = a.storage().isAlias(b.storage()) && a.storageOffset() == b.storageOffset();
    seen[it->second] |= view ? kViewed : kCopied;
  }

  /// Per node (in the order given): kViewed and / or kCopied, 0 when it never ran.
  std::vector<int> seen;

 private:
  std::unordered_map<const Node*, size_t> index_;
};

/// The contiguous / reshape / flatten / reshape_as nodes of `b` and its nested blocks, in
/// pre-order.
void collectViewsThatMayCopy(Block* b, std::vector<Node*>& out) {
  static const std::unordered_set<Symbol> kinds = {Symbol::aten("contiguous"),
                                                   Symbol::aten("reshape"), Symbol::aten("flatten"),
                                                   Symbol::aten("reshape_as")};
  for (Node* n : b->nodes()) {
    if (kinds.count(n->kind()) && n->outputs().size() == 1) out.push_back(n);
    for (Block* s : n->blocks()) collectViewsThatMayCopy(s, out);
  }
}

void resolveCopyingViews(const std::shared_ptr<Graph>& graph,
                         const std::vector<IValue>& runInputs) {
  std::vector<Node*> nodes;
  collectViewsThatMayCopy(graph->block(), nodes);
  if (nodes.empty() || !hasWrites(graph->block())) return;
  // The run goes on a copy whose kernel-less nested nodes are stubbed (Note [Example run past
  // kernel-less branches]); stubbing leaves these nodes, so the copy's correspond in order.
  initKernels();
  std::shared_ptr<Graph> copy = graph->copy();
  stubKernellessNodes(copy->block(), false);
  std::vector<Node*> copied;
  collectViewsThatMayCopy(copy->block(), copied);
  TL_INTERNAL_ASSERT(copied.size() == nodes.size(), "graph copy differs in its views");
  CopyObserver observer(copied);
  try {
    GraphFunction fn("export_example_run", copy,
                     GraphFunction::schemaFromGraph("export_example_run", *copy));
    runObserved(fn, runInputs, observer);
  } catch (const Error&) {
    return;  // the run after step 3 reports what fails
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (observer.seen[i] != CopyObserver::kCopied) continue;
    Node* n = nodes[i];
    Graph& g = *n->owningGraph();
    WithInsertPoint guard(n);
    std::vector<Value*> inputs{n->input(0)};
    if (n->kind() == Symbol::aten("contiguous") && n->inputs().size() > 1)
      inputs.push_back(n->input(1));
    else
      inputs.push_back(g.insertConstant(IValue()));
    Node* clone = g.create(Symbol::aten("clone"), inputs);
    clone->output()->setType(n->output()->type());
    clone->setSourceRange(n->sourceRange());
    clone->setScope(n->scope());
    g.insertNode(clone);
    if (n->kind() != Symbol::aten("contiguous")) {
      // The copy keeps the new shape: clone, then a view of the fresh tensor.
      n->replaceInput(0, clone->output());
      continue;
    }
    n->output()->replaceAllUsesWith(clone->output());
    n->destroy();
  }
}

// A scripted nn.TransformerEncoder packs its batch into a nested tensor when its padding mask
// is left-aligned, a fact of the mask's values that an ONNX graph would have to branch on
// around the whole encoder. The export takes the dense path for every mask: each layer with
// the key padding mask, which gives PyTorch's numbers in every position that is not padding
// (PyTorch's nested path has zeros in the padded rows and cuts dim 1 to the longest sequence).
void takeDenseEncoderPath(Graph& g) {
  static const Symbol kLeftAligned = Symbol::aten("_nested_tensor_from_mask_left_aligned");
  std::vector<Node*> found;
  visitNodes(g.block(), [&](Node* n) {
    if (n->kind() == kLeftAligned) found.push_back(n);
    return false;
  });
  for (Node* n : found) {
    WithInsertPoint at(n);
    Value* no = g.insertConstant(IValue(false));
    n->output()->replaceAllUsesWith(no);
    n->destroy();
  }
}

// Replaces prim::If nodes with a constant condition by the nodes of the branch taken.
void inlineConstantIfs(Block* block) {
  for (auto it = block->nodes().begin(); it != block->nodes().end(); ++it) {
    Node* n = *it;
    for (Block* b : n->blocks()) inlineConstantIfs(b);
    if (n->kind() != prim::If) continue;
    auto cond = toIValue(n->input(0));
    if (!cond || !cond->isBool()) continue;
    Block* taken = n->blocks()[cond->toBool() ? 0 : 1];
    // Move the branch's nodes before the If, then route its outputs.
    std::vector<Node*> inner;
    for (Node* m : taken->nodes()) inner.push_back(m);
    for (Node* m : inner) m->moveBefore(n);
    for (size_t i = 0; i < n->outputs().size(); ++i)
      n->output(i)->replaceAllUsesWith(taken->outputs()[i]);
    it.destroyCurrent();
  }
}

// prim::If nodes in `block` and its nested blocks.
size_t countIfs(const Block* block) {
  size_t n = 0;
  for (const Node* m : block->nodes()) {
    n += m->kind() == prim::If;
    for (const Block* b : m->blocks()) n += countIfs(b);
  }
  return n;
}

// Folds eval-mode batch norms into the conv / linear before them (passes/fold_conv_bn.cpp,
// fold_linear_bn.cpp) and returns names for the constants the folds made, after the
// parameters they replace: a folded weight keeps the weight's name ("layer1.0.conv1.weight"),
// its bias the bias's name, or the weight's with ".bias" for a convolution that had none.
std::unordered_map<const Value*, std::string> foldBatchNorms(
    Graph& g, const std::unordered_map<const Value*, std::string>& weightNames) {
  struct Before {
    size_t weight, bias;  // unique ids of the inputs before folding
    std::string weightName, biasName;
  };
  // Convolutions and linears stay (the batch norms after them go).
  static const std::unordered_set<Symbol> kinds = {
      Symbol::aten("conv1d"), Symbol::aten("conv2d"), Symbol::aten("conv3d"),
      Symbol::aten("_convolution"), Symbol::aten("linear")};
  std::unordered_map<Node*, Before> before;
  for (Node* n : g.nodes())
    if (n->inputs().size() >= 3 && kinds.count(n->kind()))
      if (auto w = weightNames.find(n->input(1)); w != weightNames.end()) {
        Before b{n->input(1)->unique(), n->input(2)->unique(), w->second, ""};
        if (auto bias = weightNames.find(n->input(2)); bias != weightNames.end())
          b.biasName = bias->second;
        else if (b.weightName.ends_with(".weight"))
          b.biasName = b.weightName.substr(0, b.weightName.size() - 7) + ".bias";
        before[n] = b;
      }
  std::unordered_map<const Value*, std::string> names;
  bool folded = passes::foldConvBn(g);
  folded |= passes::foldLinearBn(g);
  if (!folded) return names;
  for (Node* n : g.nodes()) {
    auto it = before.find(n);
    if (it == before.end() || !kinds.count(n->kind())) continue;
    if (n->input(1)->unique() != it->second.weight) names[n->input(1)] = it->second.weightName;
    if (n->input(2)->unique() != it->second.bias && !it->second.biasName.empty())
      names[n->input(2)] = it->second.biasName;
  }
  return names;
}

// Every value of g: graph inputs, node outputs and block parameters, nested blocks included.
std::vector<Value*> allValues(Graph& g) {
  std::vector<Value*> out(g.inputs().begin(), g.inputs().end());
  std::function<void(Block*)> walk = [&](Block* b) {
    for (Node* n : b->nodes()) {
      out.insert(out.end(), n->outputs().begin(), n->outputs().end());
      for (Block* s : n->blocks()) {
        out.insert(out.end(), s->inputs().begin(), s->inputs().end());
        walk(s);
      }
    }
  };
  walk(g.block());
  return out;
}

bool inside(const Block* b, const Node* n) {
  for (const Node* cur = n; cur;
       cur = cur->owningBlock() ? cur->owningBlock()->owningNode() : nullptr)
    if (cur->owningBlock() == b) return true;
  return false;
}

// An element a list appended to in a block carries: a tensor, or a number (a List[int] of
// sizes built in a loop, which the converters hold as a 1-d tensor, Concat per append).
bool carriedElement(const Value* v) {
  if (!v->type()) return false;
  const TypeKind k = v->type()->kind();
  return k == TypeKind::TensorType || k == TypeKind::IntType || k == TypeKind::FloatType ||
         k == TypeKind::BoolType;
}

// Lists of tensors (or numbers) grown by aten::append inside a prim::Loop or prim::If (a list
// literal filled in a loop) become values that flow: loop-carried through each Loop and an output
// of each If between the list's block and the append, and the append's result (the list) is what
// later readers in its block see. The interpreter computes the same (append still appends to
// the one list); the ONNX converters see sequences (SequenceInsert, ConcatFromSequence ...),
// or for numbers 1-d tensors.
// `rebinds` (Note [List writes]) are carried the same way.
void carryListAppends(Graph& g, const std::unordered_set<const Node*>& rebinds) {
  const Symbol append = Symbol::aten("append");
  std::vector<Node*> appends;
  std::function<void(Block*, bool)> collect = [&](Block* b, bool nested) {
    for (Node* n : b->nodes()) {
      for (Block* s : n->blocks()) collect(s, true);
      if (nested &&
          ((n->kind() == append && n->inputs().size() == 2 && carriedElement(n->input(1))) ||
           rebinds.count(n)))
        appends.push_back(n);
    }
  };
  collect(g.block(), false);
  for (Node* a : appends) {
    Value* list = a->input(0);
    const Block* home = list->node()->owningBlock();
    std::vector<Node*> owners;
    for (Block* b = a->owningBlock(); b != home && b->owningNode();
         b = b->owningNode()->owningBlock())
      owners.insert(owners.begin(), b->owningNode());
    Value* cur = list;
    for (Node* n : owners) {
      Value* after = n->addOutput();
      after->setType(cur->type());
      if (n->kind() == prim::Loop) {
        n->addInput(cur);
        Block* body = n->blocks()[0];
        Value* carried = body->addInput();
        carried->setType(cur->type());
        body->registerOutput(carried);
        std::vector<Use> uses = cur->uses();
        for (const Use& u : uses) {
          if (u.user == n) continue;
          if (u.user->isAfter(n))
            u.user->replaceInput(u.offset, after);
          else if (inside(body, u.user))
            u.user->replaceInput(u.offset, carried);
        }
        cur = carried;
      } else if (n->kind() == prim::If) {
        for (Block* b : n->blocks()) b->registerOutput(cur);
        std::vector<Use> uses = cur->uses();
        for (const Use& u : uses)
          if (u.user->isAfter(n)) u.user->replaceInput(u.offset, after);
      } else {
        throw Error(fmt::format("a list appended to inside {} cannot be exported",
                                n->kind().toQualString()),
                    convert::nodePlace(*a));
      }
    }
    a->output()->setType(cur->type());
    cur->replaceAllUsesAfterNodeWith(a, a->output());
  }
}

// Note [List writes]
// aten::insert.t, pop.t, _set_item.t and Delete.t change a list of tensors in place; ONNX
// sequences are values (SequenceInsert / SequenceErase return a new one), as torch.onnx's
// scripting export treats them. _set_item.t of a list of numbers is treated the same way: the
// new list is a value known now, or a 1-d tensor (ScatterElements). Each such write gets an
// `aten::list.t` copy of the list right after it, and later readers (in its block, and through
// carryListAppends out of Loop / If bodies) read that copy: the write's converter leaves the new
// sequence with OnnxCtx (setListAfterWrite) and the copy's converter takes it. The interpreter
// computes the same.
//   aten::insert(%l, %i, %x)                aten::insert(%l, %i, %x)
//   %n : int = aten::len(%l)       ==>      %l2 : Tensor[] = aten::list(%l)
//                                           %n : int = aten::len(%l2)
// Returns the copies made inside blocks (for carryListAppends).
std::unordered_set<const Node*> rebindListWrites(Graph& g) {
  static const std::unordered_set<Symbol> writes = {Symbol::aten("insert"), Symbol::aten("pop"),
                                                    Symbol::aten("_set_item"),
                                                    Symbol::aten("Delete")};
  std::vector<Node*> found;
  std::function<void(Block*)> collect = [&](Block* b) {
    for (Node* n : b->nodes()) {
      for (Block* s : n->blocks()) collect(s);
      if (!writes.count(n->kind()) || n->inputs().empty()) continue;
      const TypePtr& t = n->input(0)->type();
      if (!t || t->kind() != TypeKind::ListType) continue;
      const TypeKind e = t->expect<ListType>().getElementType()->kind();
      // Lists of numbers are 1-d tensors (or values known now): only item writes
      // (swin's `shift_size[i] = 0`) have converters.
      const bool number =
          e == TypeKind::IntType || e == TypeKind::FloatType || e == TypeKind::BoolType;
      if (e == TypeKind::TensorType || (number && n->kind() == Symbol::aten("_set_item")))
        found.push_back(n);
    }
  };
  collect(g.block());
  std::unordered_set<const Node*> nested;
  for (Node* w : found) {
    Value* list = w->input(0);
    WithInsertPoint guard(w->next());
    Node* copy = g.insertNode(g.create(Symbol::aten("list"), {list}));
    copy->output()->setType(list->type());
    copy->setSourceRange(w->sourceRange());
    copy->setScope(w->scope());
    if (list->node()->owningBlock() == w->owningBlock() || !w->owningBlock()->owningNode())
      list->replaceAllUsesAfterNodeWith(copy, copy->output());
    else
      nested.insert(copy);
  }
  return nested;
}

// Note [Packed batch sizes read as the batch]
// In the export a PackedSequence's batch_sizes are the sequence lengths (Note [Packed
// sequences] in rnn.cpp), but scripted nn.GRU / LSTM / RNN read `batch_sizes[0]` as the
// batch (`max_batch_size`, the size of the zero initial state). PyTorch's batch_sizes[0] is
// the number of sequences longer than 0, which is every sequence (pack_padded_sequence
// refuses an empty one): each `select(batch_sizes, 0, 0)` of a value that is output 1 of
// aten::_pack_padded_sequence (through unchecked casts, tuples and If outputs) becomes the
// number of lengths, NumToTensor(size(lengths, 0)); and `batch_sizes.size(0)`, the number of
// steps (pad_packed_sequence's length without total_length), int(max(lengths)).
void readPackedBatchSizesAsBatch(Graph& g) {
  std::vector<Node*> packs;
  std::function<void(Block*)> collect = [&](Block* b) {
    for (Node* n : b->nodes()) {
      for (Block* sub : n->blocks()) collect(sub);
      if (n->kind() == Symbol::aten("_pack_padded_sequence") && n->outputs().size() == 2)
        packs.push_back(n);
    }
  };
  collect(g.block());
  auto isInt = [](const Value* v, int64_t want) {
    auto c = toIValue(v);
    return c && c->isInt() && c->toInt() == want;
  };
  for (Node* pack : packs) {
    std::vector<Value*> work{pack->output(1)};
    std::unordered_set<Value*> seen;
    std::vector<Node*> reads, steps;
    while (!work.empty()) {
      Value* v = work.back();
      work.pop_back();
      if (!seen.insert(v).second || seen.size() > 256) continue;
      for (const Use& u : v->uses()) {
        Node* user = u.user;
        if (user->kind() == prim::unchecked_cast) {
          work.push_back(user->output());
        } else if (user->kind() == prim::TupleConstruct) {
          for (const Use& t : user->output()->uses())
            if (t.user->kind() == prim::TupleUnpack)
              work.push_back(t.user->output(u.offset));
            else if (t.user->kind() == prim::Return && t.user->owningBlock()->owningNode() &&
                     t.user->owningBlock()->owningNode()->kind() == prim::If) {
              // the tuple leaves an If: its unpacking after the If
              Value* out = t.user->owningBlock()->owningNode()->output(t.offset);
              for (const Use& o : out->uses())
                if (o.user->kind() == prim::TupleUnpack) work.push_back(o.user->output(u.offset));
            }
        } else if (user->kind() == prim::Return && user->owningBlock()->owningNode() &&
                   user->owningBlock()->owningNode()->kind() == prim::If) {
          work.push_back(user->owningBlock()->owningNode()->output(u.offset));
        } else if (user->kind() == Symbol::aten("select") && u.offset == 0 &&
                   user->inputs().size() == 3 && isInt(user->input(1), 0) &&
                   isInt(user->input(2), 0)) {
          reads.push_back(user);
        } else if (user->kind() == Symbol::aten("size") && u.offset == 0 &&
                   user->inputs().size() == 2 && isInt(user->input(1), 0)) {
          steps.push_back(user);
        }
      }
    }
    // `old`'s result becomes second(first(inputs)), placed and attributed as `old` was.
    auto replaceWithChain = [&](Node* old, Symbol first, const std::vector<Value*>& inputs,
                                TypePtr firstType, Symbol second, TypePtr secondType) {
      WithInsertPoint guard(old);
      Node* a = g.insertNode(g.create(first, inputs));
      a->output()->setType(std::move(firstType));
      Node* b = g.insertNode(g.create(second, {a->output()}));
      b->output()->setType(std::move(secondType));
      for (Node* c : {a, b}) {
        c->setSourceRange(old->sourceRange());
        c->setScope(old->scope());
      }
      old->output()->replaceAllUsesWith(b->output());
      old->destroy();
    };
    for (Node* read : reads) {
      Value* zero = nullptr;
      {
        WithInsertPoint guard(read);
        zero = g.insertConstant(IValue(int64_t{0}));
      }
      replaceWithChain(read, Symbol::aten("size"), {pack->input(1), zero}, IntType::get(),
                       prim::NumToTensor, TensorType::get());
    }
    // len(batch_sizes) is the number of time steps: the longest length (pad_packed_sequence's
    // max_seq_length without total_length), computed from this call's lengths.
    for (Node* step : steps)
      replaceWithChain(step, Symbol::aten("max"), {pack->input(1)}, TensorType::get(),
                       Symbol::aten("Int"), IntType::get());
  }
}

// Lists built at the top level by prim::ListConstruct and grown only by aten::append there
// (densenet's `features.append(new_features)`) become one prim::ListConstruct per reader,
// holding what the list holds at that point. Lists used in nested blocks or changed any other
// way stay.
void lowerListAppends(Graph& g) {
  const Symbol append = Symbol::aten("append");
  std::vector<Node*> lists;
  for (Node* n : g.nodes())
    if (n->kind() == prim::ListConstruct && n->output()->type() &&
        n->output()->type()->kind() == TypeKind::ListType)
      lists.push_back(n);
  for (Node* l : lists) {
    Value* lv = l->output();
    bool appended = false, ok = true;
    for (const Use& u : lv->uses()) {
      const Node* user = u.user;
      ok &= user->owningBlock() == g.block() && user->kind() != prim::Return;
      if (user->kind() == append) {
        appended = true;
        // (append returns the list; a use of that result would see it change as well)
        ok &= u.offset == 0 && !user->output()->hasUses();
        continue;
      }
      if (const OpInfo* op = matchOperator(user, OperatorRegistry::global()); !op || op->mutates)
        ok = false;
    }
    if (!ok || !appended) continue;
    std::vector<Value*> items(l->inputs().begin(), l->inputs().end());
    std::vector<Node*> users;
    for (Node* n : g.nodes())
      for (const Value* in : n->inputs())
        if (in == lv) {
          users.push_back(n);
          break;
        }
    TypePtr elem = lv->type()->expect<ListType>().getElementType();
    for (Node* n : users) {
      if (n->kind() == append) {
        items.push_back(n->input(1));
        n->destroy();
        continue;
      }
      WithInsertPoint guard(n);
      Node* snapshot = g.insertNode(g.createList(elem, items));
      n->replaceInputWith(lv, snapshot->output());
    }
    if (!lv->hasUses()) l->destroy();
  }
}

// Dicts built at the top level with constant keys (aten::dict() or `{}`, then aten::_set_item, as
// torchvision's IntermediateLayerGetter and segmentation heads do) become plain values: each
// __getitem__ takes the value last set under its key, and a dict returned (itself, or packed
// into a returned list or tuple after its last write, as detectron2's `[res]`) becomes a
// prim::DictConstruct of its entries in insertion order. Dicts used any other way stay.
void lowerDicts(Graph& g) {
  const Symbol dictK = Symbol::aten("dict"), setItem = Symbol::aten("_set_item"),
               getItem = Symbol::aten("__getitem__");
  std::vector<Node*> dicts;
  for (Node* n : g.nodes())
    if ((n->kind() == dictK || n->kind() == prim::DictConstruct) && n->inputs().empty() &&
        n->output()->type() && n->output()->type()->kind() == TypeKind::DictType)
      dicts.push_back(n);
  for (Node* d : dicts) {
    Value* dv = d->output();
    bool ok = true;
    Node* firstPack = nullptr;  // the first use that is not a read or a write
    for (const Use& u : dv->uses()) {
      Node* user = u.user;
      ok &= user->owningBlock() == g.block();
      if (user->kind() == setItem || user->kind() == getItem) {
        auto key = toIValue(user->input(1));
        ok &= u.offset == 0 && key && key->isString();
        ok &= !firstPack || user->isBefore(firstPack);
      } else {
        ok &= user->kind() == prim::Return || user->kind() == prim::ListConstruct ||
              user->kind() == prim::TupleConstruct;
        for (const Use& w : dv->uses())  // no write or read after it is packed
          if (w.user->kind() == setItem || w.user->kind() == getItem)
            ok &= w.user->owningBlock() != g.block() || w.user->isBefore(user);
        if (!firstPack || user->isBefore(firstPack)) firstPack = user;
      }
    }
    if (!ok) continue;
    std::vector<std::pair<std::string, Value*>> entries;
    std::vector<Node*> users;
    for (Node* n : g.nodes())
      if (n->inputs().size() >= 1 && n->input(0) == dv &&
          (n->kind() == setItem || n->kind() == getItem))
        users.push_back(n);
    for (Node* n : users) {
      const std::string key = toIValue(n->input(1))->toStringRef();
      auto it = std::find_if(entries.begin(), entries.end(),
                             [&](const auto& e) { return e.first == key; });
      if (n->kind() == setItem) {
        if (it == entries.end())
          entries.emplace_back(key, n->input(2));
        else
          it->second = n->input(2);
        n->destroy();
      } else {
        if (it == entries.end())
          throw Error(fmt::format("the model reads key '{}' of a dict that has no such key", key),
                      convert::nodePlace(*n));
        n->output()->replaceAllUsesWith(it->second);
        n->destroy();
      }
    }
    if (dv->hasUses()) {
      const auto& dt = dv->type()->expect<DictType>();
      WithInsertPoint guard(firstPack ? firstPack : g.returnNode());
      std::vector<Value*> keys, values;
      for (const auto& [k, v] : entries) {
        keys.push_back(g.insertConstant(IValue(k)));
        values.push_back(v);
      }
      Node* c = g.insertNode(g.createDict(dt.getKeyType(), dt.getValueType(), keys, values));
      dv->replaceAllUsesWith(c->output());
    }
    d->destroy();
  }
}

}  // namespace

// Whether a value of type t may hold a tensor (prepare.h).
bool mayHoldTensor(const TypePtr& t) {
  if (!t) return true;
  switch (t->kind()) {
    case TypeKind::TensorType: return true;
    case TypeKind::ListType: return mayHoldTensor(t->expect<ListType>().getElementType());
    case TypeKind::OptionalType: return mayHoldTensor(t->expect<OptionalType>().getElementType());
    case TypeKind::TupleType:
      for (const auto& e : t->expect<TupleType>().elements())
        if (mayHoldTensor(e)) return true;
      return false;
    case TypeKind::IntType:
    case TypeKind::FloatType:
    case TypeKind::BoolType:
    case TypeKind::StringType:
    case TypeKind::NoneType:
    case TypeKind::NumberType:
    case TypeKind::DeviceObjType:
    case TypeKind::ScalarTypeType:
    case TypeKind::LayoutType:
    case TypeKind::MemoryFormatType: return false;
    default: return true;
  }
}

void removeDeadNodes(Block* block) {
  // Walk backwards so a chain of dead nodes goes in one sweep.
  for (auto it = block->nodes().reverse().begin(); it != block->nodes().reverse().end(); ++it) {
    Node* n = *it;
    for (Block* b : n->blocks()) removeDeadNodes(b);
    if (n->hasUses() || n->hasSideEffects()) continue;
    if (n->kind() == prim::Loop || n->kind() == prim::If) {
      // Control flow may hold side effects in its blocks.
      bool effects = false;
      std::function<void(const Block*)> scan = [&](const Block* b) {
        for (const Node* m : b->nodes()) {
          if (m->hasSideEffects()) effects = true;
          for (const Block* s : m->blocks()) scan(s);
        }
      };
      for (const Block* b : n->blocks()) scan(b);
      if (effects) continue;
    } else if (const OpInfo* op = matchOperator(n, OperatorRegistry::global());
               op && (op->hasSideEffects || op->mutates)) {
      continue;
    }
    it.destroyCurrent();
  }
}

namespace {

/// The example run's inputs and the dynamic axes of each, by run input index.
// Whether graph input type `t` with example `x` is a dict of tensors with str keys (flattened
// into one input per entry). Throws for a dict of tensors with other keys.
bool isDictOfTensors(const TypePtr& t, const IValue& x) {
  if (!x.isDict() || !t || t->kind() != TypeKind::DictType) return false;
  const auto& dt = t->expect<DictType>();
  if (dt.getValueType()->kind() != TypeKind::TensorType) return false;
  TL_CHECK(dt.getKeyType()->kind() == TypeKind::StringType,
           "a dict input of tensors exports with str keys only (one ONNX input per key), not "
           "{} keys",
           dt.getKeyType()->str());
  return true;
}

struct RunInputs {
  std::vector<IValue> values;
  std::map<size_t, std::vector<int64_t>> dynamicAxes;
  /// Module state: run input index -> graph output index of its value after the call.
  std::map<size_t, size_t> stateOutputs;
};

/// The inputs of a second call (Note [State by a second call]): the example inputs with each
/// state input replaced by the state output of a run on them.
std::vector<IValue> secondCallInputs(const std::shared_ptr<Graph>& graph, const RunInputs& run) {
  std::vector<Value*> finals;
  for (const auto& [i, o] : run.stateOutputs) finals.push_back(graph->outputs()[o]);
  std::vector<IValue> after = observeStubbed(graph, finals, run.values);
  std::vector<IValue> second = run.values;
  size_t k = 0;
  for (const auto& [i, o] : run.stateOutputs) {
    TL_CHECK(after[k].isTensor(), "the module state output {} is not a tensor", o);
    second[i] = after[k++];
  }
  return second;
}

// Whether a and b hold the same values: tensors by dtype, sizes and bytes; lists and tuples
// element by element; the rest by IValue::equals.
bool sameValues(const IValue& a, const IValue& b) {
  if (a.isTensor() && b.isTensor()) {
    const Tensor x = a.toTensor().contiguous(), y = b.toTensor().contiguous();
    return x.dtype() == y.dtype() && x.sizes() == y.sizes() &&
           std::memcmp(x.rawData(), y.rawData(), x.nbytes()) == 0;
  }
  if ((a.isList() && b.isList()) || (a.isTuple() && b.isTuple())) {
    const std::vector<IValue>& xs = a.isList() ? a.toList()->list : a.toTuple()->elements;
    const std::vector<IValue>& ys = b.isList() ? b.toList()->list : b.toTuple()->elements;
    if (xs.size() != ys.size()) return false;
    for (size_t k = 0; k < xs.size(); ++k)
      if (!sameValues(xs[k], ys[k])) return false;
    return true;
  }
  return a.equals(b);
}

/// An empty state input whose rank differs from the state output's (a state made on the first
/// call) gets, as its example, an empty tensor of the output's rank ([0, rest of the output's
/// sizes]) when every graph output comes out the same with it; else the export fails naming
/// the state: an ONNX input has one rank (PreparedGraph::stateInitial).
void reshapeEmptyStates(PreparedGraph& out, RunInputs& run) {
  std::vector<IValue> second;
  try {
    second = secondCallInputs(out.graph, run);
  } catch (const Error&) {
    return;  // the example run reports what fails
  }
  std::vector<IValue> candidate = run.values;
  std::vector<size_t> changed;
  for (const auto& [i, o] : run.stateOutputs) {
    const Tensor& before = run.values[i].toTensor();
    const Tensor& after = second[i].toTensor();
    if (before.dim() == after.dim()) continue;
    const Value* in = out.graph->inputs()[i];
    TL_CHECK(before.numel() == 0 && after.dim() > 0,
             "the module state '{}' changes rank from {} to {} in a call; an ONNX input has one "
             "rank",
             in->debugName(), before.dim(), after.dim());
    std::vector<int64_t> sizes = after.sizes();
    sizes[0] = 0;
    candidate[i] = IValue(Tensor::empty(sizes, before.dtype()));
    changed.push_back(i);
  }
  if (changed.empty()) return;
  std::vector<Value*> outs(out.graph->outputs().begin(), out.graph->outputs().end());
  const std::vector<IValue> a = observeStubbed(out.graph, outs, run.values);
  const std::vector<IValue> b = observeStubbed(out.graph, outs, candidate);
  for (size_t k = 0; k < a.size(); ++k)
    TL_CHECK(sameValues(a[k], b[k]),
             "the module state '{}' is empty with another rank before the first call, and the "
             "method computes otherwise when given it with the rank it has later; an ONNX input "
             "has one rank",
             out.graph->inputs()[changed[0]]->debugName());
  for (size_t i : changed) {
    run.values[i] = candidate[i];
    out.stateInitial[out.inputOrigin[i]] = candidate[i].toTensor();
  }
}

/// Step 1: parameters and non-tensor inputs become constants (named by `constantInputs` or
/// the input's debug name); tensor inputs stay and are returned as the run's inputs.
/// Throws torchless::Error for a module object input or dynamic axes on a folded input.
RunInputs bindConstantInputs(Graph& g, const std::vector<IValue>& inputs,
                             const PrepareOptions& options, PreparedGraph& out) {
  RunInputs run;
  WithInsertPoint guard(g.nodes().empty() ? g.returnNode() : g.nodes().front());
  size_t k = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Value* in = g.inputs()[k];
    const IValue& x = inputs[i];
    if (x.isObject())
      throw Error(
          fmt::format("graph input %{} is a module object; freeze the module (parameters "
                      "and attributes as constants) before export",
                      in->debugName()));
    auto named = options.constantInputs.find(i);
    if (named == options.constantInputs.end() && x.isList() && in->type() &&
        in->type()->kind() == TypeKind::ListType &&
        in->type()->expect<ListType>().getElementType()->kind() == TypeKind::TensorType) {
      // A List[Tensor] input: one tensor input per element, in order (as torch.onnx flattens
      // it), gathered by a ListConstruct where the list was used.
      const std::vector<Tensor> elements = x.toTensorVector();
      std::vector<Value*> values;
      for (size_t e = 0; e < elements.size(); ++e) {
        values.push_back(g.insertInput(k + e)->setType(TensorType::get()));
        out.inputOrigin.push_back(i);
        if (auto d = options.elementDynamicAxes.find({i, e}); d != options.elementDynamicAxes.end())
          run.dynamicAxes[run.values.size()] = d->second;
        run.values.push_back(IValue(elements[e]));
      }
      Value* list = g.insertNode(g.createList(TensorType::get(), values))->output();
      k += elements.size();
      g.inputs()[k]->replaceAllUsesWith(list);
      g.eraseInput(k);
      continue;
    }
    if (named == options.constantInputs.end() && isDictOfTensors(in->type(), x)) {
      // A Dict[str, Tensor] input: one tensor input per entry, in insertion order (as
      // torch.onnx flattens it), filled into an aten::dict() where the dict was used; lowerDicts
      // (step 6) turns its reads into the inputs themselves.
      const auto& entries = x.toDict()->entries();
      Node* d = g.insertNode(g.create(Symbol::aten("dict"), {}, 1));
      d->output()->setType(in->type());
      for (size_t e = 0; e < entries.size(); ++e) {
        Value* v = g.insertInput(k + e)->setType(TensorType::get());
        out.inputOrigin.push_back(i);
        if (auto d = options.elementDynamicAxes.find({i, e}); d != options.elementDynamicAxes.end())
          run.dynamicAxes[run.values.size()] = d->second;
        run.values.push_back(entries[e].second);
        g.insertNode(g.create(Symbol::aten("_set_item"),
                              {d->output(), g.insertConstant(entries[e].first), v}, 0));
      }
      k += entries.size();
      g.inputs()[k]->replaceAllUsesWith(d->output());
      g.eraseInput(k);
      continue;
    }
    if (named == options.constantInputs.end() && x.isTensor()) {
      out.inputOrigin.push_back(i);
      if (auto d = options.dynamicAxes.find(i); d != options.dynamicAxes.end())
        run.dynamicAxes[run.values.size()] = d->second;
      if (auto s = options.stateOutputs.find(i); s != options.stateOutputs.end())
        run.stateOutputs[run.values.size()] = s->second;
      run.values.push_back(x);
      ++k;
      continue;
    }
    TL_CHECK(!options.dynamicAxes.count(i), "input {} has dynamic axes but is folded to a constant",
             i);
    IValue constant = x;
    if (x.isTensor() && x.toTensor().requiresGrad()) {
      // Parameters of a loaded module require grad; the constant shares their storage.
      Tensor t = x.toTensor().alias();
      t.setRequiresGrad(false);
      constant = IValue(t);
    }
    Value* c = g.insertConstant(constant);
    if (named != options.constantInputs.end())
      out.weightNames[c] = named->second;
    else if (x.isTensor() && in->hasDebugName())
      out.weightNames[c] = in->debugNameBase();
    in->replaceAllUsesWith(c);
    g.eraseInput(k);
  }
  return run;
}

/// Step 4: runs the graph on the examples and records facts of every top-level value: dtype,
/// sizes, and (Note [Dynamic axes by grown runs]) which follow a dynamic axis. Values the run
/// saw are returned by value (tensors up to `foldTensorLimit` elements). Sets
/// `out.specialized`, or `out.runError` when the run fails.
std::unordered_map<const Value*, IValue> observeFacts(PreparedGraph& out, const RunInputs& run,
                                                      const PrepareOptions& options) {
  Graph& g = *out.graph;
  out.facts.clear();
  out.dynamic.clear();
  out.specialized = false;
  std::unordered_map<const Value*, IValue> known;
  std::vector<Value*> recorded;
  // Lists of tensors are recorded for their elements' facts (a Loop's carried list: its
  // sequence's dtype), never folded.
  auto tensorList = [](const TypePtr& t) {
    return t && t->kind() == TypeKind::ListType &&
           t->expect<ListType>().getElementType()->kind() == TypeKind::TensorType;
  };
  // Optional tensors too, for facts only (MultiheadAttention's weights, an output typed
  // Tensor? that the graph returns): never folded.
  auto optionalTensor = [](const TypePtr& t) {
    return t && t->kind() == TypeKind::OptionalType &&
           t->expect<OptionalType>().getElementType()->kind() == TypeKind::TensorType;
  };
  for (Node* n : g.nodes()) {
    if (n->kind() == prim::Constant) continue;
    for (Value* v : n->outputs())
      if (isRecordable(v->type()) || tensorList(v->type()) || optionalTensor(v->type()))
        recorded.push_back(v);
  }
  std::vector<IValue> seen;
  try {
    initKernels();
    seen = observeStubbed(out.graph, recorded, run.values);
    out.specialized = true;
  } catch (const Error& e) {
    out.runError = e.firstLine();
    return known;
  }
  // Note [Dynamic axes by grown runs]
  // A value follows a dynamic axis when it differs in a run on inputs grown along those axes.
  // One run grows each axis by 1, a second doubles it: either alone can miss a dependence
  // (a size halved five times is the same for 80 and 81, or a parity for 80 and 160), the
  // pair rarely does. The doubled run may fail (a position table shorter than twice the
  // sequence): then the first run decides alone. A model may take only multiples of some size
  // (a U-Net's skip connections, Swin's windows): when growing by 1 fails, growing by 2, 4 ...
  // 64 is tried; when every grown run fails, the doubled one decides alone, and when that
  // fails too the export stops with the first error.
  //
  // Both runs keep the ratios of an input's axes, and a model that resizes its input to a size
  // of its own keeping the aspect ratio (torchvision's detection transform: the longer side to
  // max_size, then padded to a multiple of 32) computes the same sizes in all of them. So for
  // an input with several dynamic axes, one more run per axis but the batch (0) grows that axis
  // alone, by half its size and one: values that differ in any follow the axes too. One per axis,
  // as the longer side is always max_size: a 320x320 example tells the padding of H from a 320x481
  // run and that of W from a 481x320 one. Not by doubling: 320x640 resizes to 160x320, padded
  // by 0 again. When the model cannot take a skewed run (a square mask), it tells nothing.
  std::vector<IValue> grown, doubled;
  std::vector<char> skewDynamic(recorded.size(), 0);
  std::vector<std::vector<int64_t>> skewDims(recorded.size());
  if (!run.dynamicAxes.empty()) {
    std::vector<IValue> bigger = run.values;
    std::optional<Error> grownError;
    for (int64_t by = 1; by <= 64 && grown.empty(); by *= 2) {
      for (const auto& [i, axes] : run.dynamicAxes)
        bigger[i] = growAlong(run.values[i].toTensor(), axes, by);
      try {
        grown = observeStubbed(out.graph, recorded, bigger);
      } catch (const Error& e) {
        if (!grownError) grownError = e;
      }
    }
    // Skewed runs (compared at once, not kept: a detector's activations are large). Axis 0
    // (the batch, which no resize keeps a ratio with) is not skewed.
    for (const auto& [i, axes] : run.dynamicAxes) {
      if (axes.size() < 2) continue;
      const Tensor& t = run.values[i].toTensor();
      for (int64_t axis : axes) {
        const int64_t a = axis < 0 ? axis + t.dim() : axis;
        if (a <= 0 || a >= t.dim()) continue;  // the grown runs reported a bad axis
        std::vector<IValue> skewedInputs = run.values;
        skewedInputs[i] = growAlong(t, {a}, t.sizes()[a] / 2 + 1);
        std::vector<IValue> skewed;
        try {
          skewed = observeStubbed(out.graph, recorded, skewedInputs);
        } catch (const Error&) {
          continue;
        }
        for (size_t j = 0; j < recorded.size(); ++j) {
          const IValue& x = seen[j];
          const IValue& y = skewed[j];
          if (x.isTensor() != y.isTensor()) {
            skewDynamic[j] = 1;
          } else if (x.isTensor()) {
            const IntList& xs = x.toTensor().sizes();
            const IntList& ys = y.toTensor().sizes();
            if (xs.size() != ys.size()) {
              skewDynamic[j] = 1;
              continue;
            }
            for (size_t d = 0; d < xs.size(); ++d)
              if (xs[d] != ys[d]) skewDims[j].push_back(static_cast<int64_t>(d));
          } else if (x.tag() != IValue::Tag::Uninitialized && !y.equals(x)) {
            skewDynamic[j] = 1;
          }
        }
      }
    }
    for (const auto& [i, axes] : run.dynamicAxes)
      bigger[i] = growAlong(run.values[i].toTensor(), axes, 0);
    try {
      doubled = observeStubbed(out.graph, recorded, bigger);
    } catch (const Error&) {
      doubled.clear();
    }
    if (grown.empty() && doubled.empty()) {
      grownError->addContext(
          "in the export's run on the example inputs grown along their dynamic axes (by 1), "
          "which tells the values that follow those axes");
      throw *grownError;
    }
  }
  // Note [State by a second call]
  // A state input (module_state.h) holds, on later calls, what the call before left: silero's
  // `_h` is empty on the first call (`if len(h): lstm(x, (h, c)) else: lstm(x)`) and [2, 1, 64]
  // after. One more run, on the state outputs of the first, is a second call: values that
  // differ in it follow the state as values that differ in a grown run follow a dynamic axis
  // (they stay computed, the If on `len(h)` stays an If), and the state inputs' dims that differ
  // are dynamic. A state whose rank changes gets no shape at all.
  std::vector<IValue> next;
  std::map<size_t, Tensor> stateNext;
  if (!run.stateOutputs.empty()) {
    const std::vector<IValue> second = secondCallInputs(out.graph, run);
    next = observeStubbed(out.graph, recorded, second);
    for (const auto& [i, o] : run.stateOutputs) stateNext[i] = second[i].toTensor();
  }
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    ValueFacts f;
    const Tensor& t = run.values[i].toTensor();
    f.dtype = t.dtype();
    f.sizes = t.sizes();
    f.dynamicDims.assign(t.dim(), false);
    if (auto d = run.dynamicAxes.find(i); d != run.dynamicAxes.end())
      for (int64_t a : d->second) f.dynamicDims[a < 0 ? a + t.dim() : a] = true;
    if (auto s = stateNext.find(i); s != stateNext.end()) {
      bool stateDynamic = false;
      if (s->second.dim() != t.dim()) {
        f.sizes.reset();
        f.dynamicDims.clear();
      } else {
        for (int64_t d = 0; d < t.dim(); ++d)
          f.dynamicDims[d] = f.dynamicDims[d] || s->second.sizes()[d] != t.sizes()[d];
      }
      for (bool b : f.dynamicDims) stateDynamic |= b;
      if (!f.sizes || stateDynamic) out.dynamic.insert(g.inputs()[i]);
    }
    out.facts[g.inputs()[i]] = f;
    if (run.dynamicAxes.count(i)) out.dynamic.insert(g.inputs()[i]);
  }
  for (size_t i = 0; i < recorded.size(); ++i) {
    const Value* v = recorded[i];
    const IValue& x = seen[i];
    if (tensorList(v->type())) {
      // The elements' dtype, and their sizes when they all share them (ValueFacts).
      if (!x.isList() || x.toList()->list.empty()) continue;
      ValueFacts f;
      const auto& items = x.toList()->list;
      bool same = true;
      for (const IValue& e : items)
        same = same && e.isTensor() && e.toTensor().dtype() == items[0].toTensor().dtype();
      if (!same) continue;
      f.dtype = items[0].toTensor().dtype();
      f.rank = items[0].toTensor().dim();
      out.facts[v] = f;
      continue;
    }
    if (optionalTensor(v->type()) && !x.isTensor()) continue;
    if (x.isTensor()) {
      const Tensor t = x.toTensor();
      ValueFacts f;
      f.dtype = t.dtype();
      f.sizes = t.sizes();
      f.strides = t.strides();
      f.storageOffset = t.storageOffset();
      f.dynamicDims.assign(t.dim(), false);
      if (skewDynamic[i]) out.dynamic.insert(v);
      for (int64_t d : skewDims[i])
        if (d < t.dim()) f.dynamicDims[d] = true;
      for (const std::vector<IValue>* other : {&grown, &doubled, &next}) {
        if (other->empty()) continue;
        if (!(*other)[i].isTensor()) {
          out.dynamic.insert(v);
          continue;
        }
        const Tensor u = (*other)[i].toTensor();
        if (u.dim() == t.dim())
          for (int64_t d = 0; d < t.dim(); ++d)
            f.dynamicDims[d] = f.dynamicDims[d] || u.sizes()[d] != t.sizes()[d];
        else
          out.dynamic.insert(v);
      }
      for (bool b : f.dynamicDims)
        if (b) out.dynamic.insert(v);
      out.facts[v] = f;
      if (t.numel() <= options.foldTensorLimit && !optionalTensor(v->type()))
        known[v] = IValue(t.clone());
    } else if (x.tag() != IValue::Tag::Uninitialized) {
      if ((!grown.empty() && !grown[i].equals(x)) || (!doubled.empty() && !doubled[i].equals(x)) ||
          skewDynamic[i] || (!next.empty() && !next[i].equals(x)))
        out.dynamic.insert(v);
      known[v] = x;
    }
  }
  return known;
}

// Whether a value of type `t` can never be None (`x is None` of it is decided by the type).
bool neverNone(const TypePtr& t) {
  return t && t->kind() != TypeKind::OptionalType && t->kind() != TypeKind::NoneType &&
         t->kind() != TypeKind::AnyType && t->kind() != TypeKind::UnionType;
}

bool isNumberType(const TypePtr& t) {
  return t && (t->kind() == TypeKind::IntType || t->kind() == TypeKind::FloatType ||
               t->kind() == TypeKind::BoolType);
}

/// Step 5: replaces by constants the outputs whose value the run saw and that depend on neither
/// tensor data nor a dynamic axis; values computed from dynamic ones join `out.dynamic`.
void foldKnown(PreparedGraph& out, const std::unordered_map<const Value*, IValue>& known) {
  Graph& g = *out.graph;
  std::unordered_set<const Value*> dataDependent;
  for (const Value* v : g.inputs()) dataDependent.insert(v);
  for (auto it = g.nodes().begin(); it != g.nodes().end(); ++it) {
    Node* n = *it;
    if (n->kind() == prim::Constant) continue;
    bool dataIn = false, allConst = true;
    for (const Value* v : n->inputs()) {
      if (dataDependent.count(v)) dataIn = true;
      if (v->node()->kind() != prim::Constant) allConst = false;
    }
    const OpInfo* op = matchOperator(n, OperatorRegistry::global());
    bool pure = !n->hasSideEffects() && n->blocks().empty() &&
                !(op && (op->nondeterministic || op->mutates || op->hasSideEffects));
    // Blocks (prim::Loop, prim::If) read outer values that are not among the node's inputs:
    // their outputs count as data-dependent.
    bool dataOut = (dataIn || !n->blocks().empty()) && !readsOnlyMetadata(n->kind());
    // A number that follows a dynamic axis makes every output follow it: `size(x, 2) <= 4`
    // may give the same answer in the grown runs and another at other sizes (swin's shift
    // zeroed for small maps). Lists and tensors follow it only in part: their outputs are
    // judged by the runs (`n, c, h, w = x.size()` with a dynamic n keeps c, h and w).
    // Except `x is None` of a value that is never None, whose answer its type gives
    // (F.interpolate's `scale_factor is not None` of a scale computed from a dynamic size
    // guards the loop that repeats it).
    const bool noneTest =
        n->kind() == Symbol::aten("__is__") || n->kind() == Symbol::aten("__isnot__");
    for (const Value* in : n->inputs())
      if (out.dynamic.count(in) && isNumberType(in->type()) && !noneTest)
        for (const Value* v : n->outputs()) out.dynamic.insert(v);
    // Per output: known, not following a dynamic axis, of a type constants hold.
    std::vector<bool> outFoldable;
    for (const Value* v : n->outputs()) {
      bool ok = known.count(v) && !out.dynamic.count(v);
      // A list that is appended to later (an unrolled list comprehension's) holds its final
      // value in `known`, and a constant would be appended to on every run: not folded.
      if (v->type() && v->type()->kind() == TypeKind::ListType)
        for (const Use& u : v->uses())
          if (const OpInfo* uop = matchOperator(u.user, OperatorRegistry::global());
              uop && uop->mutates)
            ok = false;
      ok &= isFoldableType(v->type()) ||
            (v->type() && v->type()->kind() == TypeKind::TensorType && allConst);
      outFoldable.push_back(ok);
    }
    for (const Value* v : n->outputs()) {
      if (dataOut) dataDependent.insert(v);
      // A value computed from a dynamic one is dynamic too (those folded below go).
      for (const Value* in : n->inputs())
        if (out.dynamic.count(in) && !(noneTest && neverNone(in->type()))) out.dynamic.insert(v);
    }
    // Outputs fold one by one: `n, c, h, w = x.size()` with a dynamic n keeps c, h and w
    // constants (the grown runs tell which follow the axis).
    if (!pure || dataOut || n->outputs().empty()) continue;
    WithInsertPoint guard(n);
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      Value* v = n->output(i);
      if (!outFoldable[i] || !v->hasUses()) continue;
      Value* c = g.insertConstant(known.at(v), n->sourceRange(), n->scope());
      if (v->type()->kind() == TypeKind::TensorType) out.facts[c] = out.facts[v];
      v->replaceAllUsesWith(c);
    }
  }
}

/// Steps 4-5, repeated while they inline branches: the nodes of an inlined branch were not
/// top-level values when the graph ran, so one more run observes and folds them (an early
/// `return` nests the rest of a function in an If; torchvision's stochastic_depth).
/// Returns false when the example run failed.
bool specialize(PreparedGraph& out, const RunInputs& run, const PrepareOptions& options) {
  Graph& g = *out.graph;
  for (int round = 0;; ++round) {
    std::unordered_map<const Value*, IValue> known = observeFacts(out, run, options);
    if (!out.specialized) return false;
    foldKnown(out, known);
    // Folding may have made conditions constant (`if x.dim() != 4: raise ...`).
    const size_t ifsBefore = countIfs(g.block());
    inlineConstantIfs(g.block());
    const bool unrolled = unrollScalarLoops(g);
    // Scripted nn.TransformerEncoderLayer computes its fast path's flags (use_gelu, the mask)
    // through ifs: they are constants only now, and the decomposed ops run in the next round.
    const bool decomposed = decomposeFastPaths(g, [&](const Value* v) -> const ValueFacts* {
      auto it = out.facts.find(v);
      return it == out.facts.end() ? nullptr : &it->second;
    });
    // An unrolled list comprehension appends at the top level now (its readers may reach the
    // top level only once the branches around them are inlined): one list per reader.
    lowerListAppends(g);
    removeDeadNodes(g.block());
    if ((countIfs(g.block()) == ifsBefore && !unrolled && !decomposed) || round == 31) return true;
  }
}

// Note [Facts inside blocks]
// The example runs record top-level values only (they fold, and follow dynamic axes). Values
// inside If branches and Loop bodies get their dtype and rank (never sizes: they may change
// from one iteration to the next) from one more observed run, on the final graph, and, with
// module state, one on the state a first call leaves (a branch the first call skips, as
// silero's `if len(h)`, runs on the second): converters inside blocks (an LSTM in a branch, a
// quantized GRU in a streaming model's loop) see ranks that the scripted graph's types lack.
// A value whose runs disagree (a rank that changes) gets nothing; so does a graph whose run
// cannot compile (a kernel-less node left in a branch).
class NestedFactsObserver final : public OpObserver {
 public:
  explicit NestedFactsObserver(const Block* top) : top_(top) {}
  void afterOp(const Node& node, const OpInfo*, const std::vector<IValue>&, const IValue* outputs,
               size_t n) override {
    if (node.owningBlock() == top_) return;
    for (size_t i = 0; i < n && i < node.outputs().size(); ++i) {
      const IValue& x = outputs[i];
      std::optional<Tensor> t;
      if (x.isTensor()) {
        t = x.toTensor();
      } else if (x.isList() && !x.toList()->list.empty() && x.toList()->list[0].isTensor()) {
        t = x.toList()->list[0].toTensor();  // a list's facts describe its elements
      }
      if (!t) continue;
      const Value* v = node.output(i);
      auto [it, fresh] = seen.try_emplace(v);
      ValueFacts& f = it->second;
      if (fresh) {
        f.dtype = t->dtype();
        f.rank = t->dim();
        continue;
      }
      if (f.dtype && *f.dtype != t->dtype()) f.dtype.reset();
      if (f.rank && *f.rank != t->dim()) f.rank.reset();
    }
  }

  std::unordered_map<const Value*, ValueFacts> seen;

 private:
  const Block* top_;
};

bool hasBlocks(const Block* b) {
  for (const Node* n : b->nodes())
    if (!n->blocks().empty()) return true;
  return false;
}

/// Note [Facts inside blocks]: dtype and rank of the values inside blocks, from observed runs
/// on `runs` (each one set of graph inputs).
void observeNestedFacts(PreparedGraph& out, const std::vector<std::vector<IValue>>& runs) {
  Graph& g = *out.graph;
  if (!hasBlocks(g.block())) return;
  NestedFactsObserver observer(g.block());
  try {
    initKernels();
    GraphFunction fn("export_example_run", out.graph,
                     GraphFunction::schemaFromGraph("export_example_run", g));
    for (const auto& inputs : runs) runObserved(fn, inputs, observer);
  } catch (const Error&) {
    return;
  }
  for (auto& [v, f] : observer.seen)
    if ((f.dtype || f.rank) && !out.facts.count(v)) out.facts[v] = f;
}

// Whether block `b` only checks: it computes nothing but what prim::RaiseException / warnings
// use (string formatting, comparisons), and nested Ifs of the same kind.
bool onlyRaises(const Block* b) {
  for (const Node* n : b->nodes()) {
    if (n->kind() == prim::RaiseException || n->kind() == prim::Constant ||
        n->kind() == Symbol::aten("warn") || n->kind() == prim::Uninitialized)
      continue;
    if (n->kind() == prim::If && n->outputs().empty()) {
      for (const Block* s : n->blocks())
        if (!onlyRaises(s)) return false;
      continue;
    }
    if (!n->blocks().empty() || n->hasSideEffects()) return false;
    const OpInfo* op = matchOperator(n, OperatorRegistry::global());
    if (!op || op->mutates || op->hasSideEffects) return false;
  }
  return true;
}

// Drops prim::If nodes without outputs whose branches only raise or warn (input checks such
// as nn.LSTM's check_hidden_size on values known at run time only): ONNX has no exceptions,
// so, as torch.onnx does, the checks go, and the conditions with them (dead code after).
void dropRaiseOnlyIfs(Block* b) {
  for (auto it = b->nodes().begin(); it != b->nodes().end(); ++it) {
    Node* n = *it;
    if (n->kind() == prim::If && n->outputs().empty() && onlyRaises(n->blocks()[0]) &&
        onlyRaises(n->blocks()[1])) {
      it.destroyCurrent();
      continue;
    }
    for (Block* s : n->blocks()) dropRaiseOnlyIfs(s);
  }
}

/// Drops what `out` knows of values no longer in its graph (their addresses may be reused).
void forgetDestroyed(PreparedGraph& out) {
  std::vector<Value*> values = allValues(*out.graph);
  std::unordered_set<const Value*> live(values.begin(), values.end());
  std::erase_if(out.facts, [&](const auto& kv) { return !live.count(kv.first); });
  std::erase_if(out.weightNames, [&](const auto& kv) { return !live.count(kv.first); });
  std::erase_if(out.dynamic, [&](const Value* v) { return !live.count(v); });
}

/// Folds batch norms into the convolutions and linears before them, carrying facts, dynamic
/// marks and weight names across by unique id.
void foldBatchNormsKeepingFacts(PreparedGraph& out) {
  Graph& g = *out.graph;
  // The folds destroy values and make new ones, which may reuse destroyed values' addresses:
  // what is known about values is carried across by their unique ids, never by address.
  // (forgetDestroyed ran first: only live values are looked up, never a destroyed one's id.)
  std::unordered_map<size_t, ValueFacts> factsById;
  std::unordered_set<size_t> dynamicById;
  std::unordered_map<size_t, std::string> namesById;
  std::vector<Value*> values = allValues(g);
  for (Value* v : values) {
    if (auto it = out.facts.find(v); it != out.facts.end()) factsById[v->unique()] = it->second;
    if (out.dynamic.count(v)) dynamicById.insert(v->unique());
    if (auto it = out.weightNames.find(v); it != out.weightNames.end())
      namesById[v->unique()] = it->second;
  }
  std::unordered_map<const Value*, std::string> named;
  for (Value* v : values)
    if (auto it = namesById.find(v->unique()); it != namesById.end()) named[v] = it->second;
  for (const auto& [v, name] : foldBatchNorms(g, named)) namesById[v->unique()] = name;
  out.facts.clear();
  out.dynamic.clear();
  out.weightNames.clear();
  for (Value* v : allValues(g)) {
    if (auto it = factsById.find(v->unique()); it != factsById.end()) out.facts[v] = it->second;
    if (dynamicById.count(v->unique())) out.dynamic.insert(v);
    if (auto it = namesById.find(v->unique()); it != namesById.end())
      out.weightNames[v] = it->second;
  }
}

}  // namespace

void carryListWrites(Graph& g) { carryListAppends(g, rebindListWrites(g)); }

PreparedGraph prepareForExport(const Graph& source, const std::vector<IValue>& inputs,
                               const PrepareOptions& options) {
  PreparedGraph out;
  // PyTorch's executor runs CanonicalizeOps on every graph before it runs it (Note [0-dim
  // tensor constants]): the exported graph computes what that run computes.
  out.graph = canonicalizeOps(source.copy());
  Graph& g = *out.graph;
  TL_CHECK(inputs.size() == g.inputs().size(),
           "the graph takes {} inputs but {} example inputs were given", g.inputs().size(),
           inputs.size());

  // 1. constants for parameters and non-tensor inputs.
  RunInputs run = bindConstantInputs(g, inputs, options, out);
  if (!run.stateOutputs.empty()) reshapeEmptyStates(out, run);

  // 2-3. constant branches, functional form (batch norms fold after step 5). Tuples only
  // packed and unpacked go first (passes/lower_tuples.cpp, as torch.onnx's LowerAllTuples): an
  // inlined method's `return (x, sr)` would hide the constant `sr` from folding.
  passes::lowerTuples(g);
  passes::lowerLocalObjects(g);  // torchvision's ImageList: its attributes' values
  takeDenseEncoderPath(g);
  inlineConstantIfs(g.block());
  readPackedBatchSizesAsBatch(g);
  resolveCopyingViews(out.graph, run.values);
  passes::lowerNestedTensors(g);  // traced nn.TransformerEncoder with a key padding mask
  decomposeFastPaths(g);
  // Lenient here: a write in a branch that specialization drops (stochastic depth's
  // bernoulli_ under `if not training`) must not stop the export; step 6 insists.
  passes::removeMutation(g, /*strict=*/false);
  removeDeadNodes(g.block());
  carryListWrites(g);
  lowerListAppends(g);

  // 4-5. specialize by running on the examples, and fold what the runs show is constant.
  if (!specialize(out, run, options)) {
    removeDeadNodes(g.block());
    return out;
  }
  forgetDestroyed(out);
  // 6. Writes left by step 3 that survived specialization cannot be made functional: the
  // error names the op and its place.
  passes::removeMutation(g, /*strict=*/true);
  // Batch norms fold once the specialization made their `training` flags and parameters
  // constants (scripted modules compute them: `bn_training`, running stats through ifs).
  if (options.foldBatchNorm) foldBatchNormsKeepingFacts(out);
  lowerDicts(g);
  dropRaiseOnlyIfs(g.block());
  removeDeadNodes(g.block());
  forgetDestroyed(out);
  std::vector<std::vector<IValue>> runs{run.values};
  if (!run.stateOutputs.empty()) runs.push_back(secondCallInputs(out.graph, run));
  observeNestedFacts(out, runs);
  inferUnobservedFacts(out);
  return out;
}

}  // namespace torchless::onnx_export
