// The ONNX export driver: prepare, pre-flight, convert node by node (prim::If / prim::Loop to
// ONNX If / Loop), name inputs and outputs, check, write.
#include "convert/onnx/prepare.h"
#include "convert/preflight.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/out_of_memory.h"
#include "core/stack_guard.h"
#include "ir/operator_matching.h"
#include "runtime/kernel.h"

#include "convert/onnx/onnx_export.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>

namespace torchless::onnx_export {

namespace {

bool isStructural(Symbol k) { return k == prim::Constant || k == prim::If || k == prim::Loop; }

bool isTensorListType(const Value* v) {
  if (!v->type() || v->type()->kind() != TypeKind::ListType) return false;
  return v->type()->expect<ListType>().getElementType()->kind() == TypeKind::TensorType;
}

bool hasTensorOutput(const Node& n) {
  for (const Value* v : n.outputs())
    if (mayHoldTensor(v->type())) return true;
  return false;
}

void setValueInfo(::onnx::ValueInfoProto* vi, const std::string& name,
                  std::optional<ScalarType> dtype, const std::optional<std::vector<int64_t>>& sizes,
                  const std::vector<bool>& dynamicDims, const std::string& dimPrefix) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnxDataType(dtype.value_or(ScalarType::Float)));
  if (!sizes) return;
  auto* shape = tt->mutable_shape();
  for (size_t d = 0; d < sizes->size(); ++d) {
    auto* dim = shape->add_dim();
    if (d < dynamicDims.size() && dynamicDims[d])
      dim->set_dim_param(fmt::format("{}_dim{}", dimPrefix, d));
    else
      dim->set_dim_value((*sizes)[d]);
  }
}

std::string sanitize(std::string s) {
  for (char& c : s)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) c = '_';
  return s;
}

class Exporter {
 public:
  Exporter(OnnxCtx& ctx, const OnnxConverterRegistry& registry) : ctx_(ctx), registry_(registry) {}

  void convertBlock(const Block* b) {
    checkStack("export: blocks");  // Note [Stack guard]
    for (const Node* n : b->nodes()) convertNode(*n);
  }

 private:
  void convertNode(const Node& n) {
    ctx_.setCurrentNode(&n);
    if (n.kind() == prim::Constant) {
      auto v = toIValue(n.output());
      // IR text can hold a constant whose value is missing (`prim::Constant[valDue=1]()` for
      // an int, a tensor printed as <Tensor>): the input's fault, as in the interpreter.
      if (!v)
        throw Error(fmt::format("constant %{} of type {} has no value", n.output()->debugName(),
                                n.output()->type()->str()),
                    convert::nodePlace(n));
      ctx_.setStatic(n.output(), *v);
      return;
    }
    try {
      if (n.kind() == prim::If) return convertIf(n);
      if (n.kind() == prim::Loop) return convertLoop(n);
      const OpInfo* op = matchOperator(&n, OperatorRegistry::global());
      const OnnxConverter* fn = registry_.findFor(n, op);
      // Constant inputs: compute the outputs now with the runtime's kernel when there is no
      // converter or nothing here is a tensor (list indexing, int arithmetic in blocks).
      if ((!fn || !hasTensorOutput(n)) && tryEvaluate(n, op)) return;
      // A complex input (Note [Complex values] in spectral.cpp): the complex table's converter.
      if (std::any_of(n.inputs().begin(), n.inputs().end(),
                      [&](const Value* v) { return ctx_.isComplex(v); })) {
        fn = op ? complexConverter(op->overloadKey) : nullptr;
        if (!fn)
          throw Error(fmt::format("{} takes a complex tensor here, which ONNX cannot hold "
                                  "(complex tensors are exported as pairs of reals for {})",
                                  op ? op->key : n.kind().toQualString(), complexOpsList()),
                      convert::nodePlace(n));
      }
      if (!fn)
        throw Error(
            fmt::format("{} has no ONNX converter and its inputs are not known at export time",
                        op ? op->key : n.kind().toQualString()),
            convert::nodePlace(n));
      if (op) {
        const int first = converterOpsets(op->key).first;
        if (ctx_.opset() < first)
          throw Error(fmt::format("{} is exported from opset {} on; this export writes opset {}",
                                  op->key, first, ctx_.opset()),
                      convert::nodePlace(n));
      }
      OnnxArgs args(ctx_, n, op);
      (*fn)(ctx_, n, args);
      for (size_t i = 0; i < n.outputs().size(); ++i)
        if (!ctx_.isConverted(n.output(i)) && n.output(i)->hasUses())
          throw Error(fmt::format("the ONNX converter of {} left output {} unmapped",
                                  op ? op->key : n.kind().toQualString(), i),
                      convert::nodePlace(n));
    } catch (Error& e) {
      e.withPlace(convert::nodePlace(n));
      throw;
    }
  }

  bool tryEvaluate(const Node& n, const OpInfo* op) {
    if (!n.blocks().empty() || n.hasSideEffects()) return false;
    if (op && (op->nondeterministic || op->hasSideEffects || op->mutates)) return false;
    for (const Value* v : n.inputs())  // (a list's copy after a write takes the write's list)
      if (!ctx_.isStatic(v) || ctx_.hasListAfterWrite(v)) return false;
    const KernelRegistry& kernels = KernelRegistry::global();
    if (!kernels.hasKernel(n, op)) return false;
    Operation f = kernels.operationFor(n, op);
    Stack stack;
    for (const Value* v : n.inputs()) stack.push_back(ctx_.staticValue(v));
    f(stack);
    TL_INTERNAL_ASSERT(stack.size() >= n.outputs().size(), "kernel left too few outputs");
    const size_t base = stack.size() - n.outputs().size();
    for (size_t i = 0; i < n.outputs().size(); ++i) ctx_.setStatic(n.output(i), stack[base + i]);
    return true;
  }

  // A subgraph output must be produced inside it, and once (ONNX's shape inference loses the
  // types of a branch that names one value as two outputs): outer values and repeats go through
  // Identity. Identity takes sequences from opset 14; before, a sequence is copied by inserting
  // a 0-d element of its dtype and erasing it again.
  std::string subgraphOutput(::onnx::GraphProto& g, const Value* v) {
    const bool list = isTensorListType(v);
    std::string name = list ? ctx_.toSequence(v) : ctx_.toTensor(v);
    bool repeated = false;
    for (const auto& o : g.output()) repeated = repeated || o.name() == name;
    for (const auto& node : g.node())
      for (const auto& o : node.output())
        if (o == name && !repeated) return name;
    if (list && ctx_.opset() < 14) {
      std::string filler = ctx_.constScalar(0, ctx_.dtypeOf(v).value_or(ScalarType::Float));
      return ctx_.op("SequenceErase", {ctx_.op("SequenceInsert", {name, filler}),
                                       ctx_.constScalar(-1, ScalarType::Long)});
    }
    return ctx_.op("Identity", {name});
  }

  ::onnx::GraphProto convertSubBlock(const Block* b, const std::string& name,
                                     const std::vector<std::string>& inputNames,
                                     const std::vector<const Value*>& extraOutputsFirst) {
    ::onnx::GraphProto g;
    g.set_name(ctx_.freshName(name));
    ctx_.withGraph(&g, [&] {
      for (const auto& in : inputNames) g.add_input()->set_name(in);
      convertBlock(b);
      ctx_.setCurrentNode(b->owningNode());
      for (const Value* v : extraOutputsFirst) g.add_output()->set_name(subgraphOutput(g, v));
      for (const Value* v : b->outputs()) g.add_output()->set_name(subgraphOutput(g, v));
    });
    return g;
  }

  // prim::If -> If (https://onnx.ai/onnx/operators/onnx__If.html).
  void convertIf(const Node& n) {
    // An If without outputs only raises or warns (`if size_prods == 1: raise ValueError(...)`
    // on values known at run time only): ONNX has no exceptions, so it is dropped, as
    // torch.onnx drops such checks.
    if (n.outputs().empty()) return;
    // A condition known at export time (inside a block, where prepare.cpp did not fold it: an
    // inlined LSTM's `if not is_batched` once the rank is known) takes its branch only.
    if (ctx_.isStatic(n.input(0)) && ctx_.staticValue(n.input(0)).isBool()) {
      const Block* taken = n.blocks()[ctx_.staticValue(n.input(0)).toBool() ? 0 : 1];
      convertBlock(taken);
      ctx_.setCurrentNode(&n);
      for (size_t i = 0; i < n.outputs().size(); ++i) {
        const Value* v = taken->outputs()[i];
        if (ctx_.isStatic(v)) {
          ctx_.setStatic(n.output(i), ctx_.staticValue(v));
          continue;
        }
        if (ctx_.hasTensorList(v)) {  // a list or tuple of tensors
          ctx_.setTensorList(n.output(i), ctx_.tensorList(v));
          continue;
        }
        if (!ctx_.isConverted(v)) continue;  // unused (prim::Uninitialized of a raise)
        ctx_.setOutput(n, i, ctx_.toTensor(v));
        if (ctx_.isSequence(v)) ctx_.markSequence(n.output(i));
        if (const ValueFacts* f = ctx_.factsOf(v); f && !ctx_.factsOf(n.output(i)))
          ctx_.setFacts(n.output(i), *f);
      }
      return;
    }
    std::string cond = ctx_.toTensor(n.input(0));
    if (ctx_.dtypeOf(n.input(0)) != ScalarType::Bool)
      cond = ctx_.op("Cast", {cond}, {attrI("to", onnxDataType(ScalarType::Bool))});
    auto thenG = convertSubBlock(n.blocks()[0], "then_branch", {}, {});
    auto elseG = convertSubBlock(n.blocks()[1], "else_branch", {}, {});
    ctx_.setCurrentNode(&n);
    auto outs = ctx_.opN("If", {cond}, n.outputs().size(),
                         {attrG("then_branch", thenG), attrG("else_branch", elseG)});
    for (size_t i = 0; i < outs.size(); ++i) {
      ctx_.setOutput(n, i, outs[i]);
      if (isTensorListType(n.output(i))) ctx_.markSequence(n.output(i));
      inheritBranchFacts(n, i);
    }
  }

  // An If output without facts gets the dtype and rank its branches' outputs share (a branch
  // that only raises, its output prim::Uninitialized, does not count): converters after an
  // If inside a block (Note [Facts inside blocks] in prepare.cpp) need the rank.
  void inheritBranchFacts(const Node& n, size_t i) {
    if (ctx_.factsOf(n.output(i))) return;
    std::optional<ScalarType> dtype;
    std::optional<int64_t> rank;
    bool first = true;
    for (const Block* b : n.blocks()) {
      const Value* v = b->outputs()[i];
      if (v->node()->kind() == prim::Uninitialized) continue;
      auto d = ctx_.dtypeOf(v);
      auto r = ctx_.rankOf(v);
      if (first) {
        dtype = d, rank = r, first = false;
        continue;
      }
      if (d != dtype) dtype.reset();
      if (r != rank) rank.reset();
    }
    if (!dtype && !rank) return;
    ValueFacts f;
    f.dtype = dtype;
    f.rank = rank;
    ctx_.setFacts(n.output(i), f);
  }

  // prim::Loop(max_trip_count, initial_condition, carried...) -> Loop
  // (https://onnx.ai/onnx/operators/onnx__Loop.html); the body gets ONNX's extra cond input.
  void convertLoop(const Node& n) {
    const Block* body = n.blocks()[0];
    std::vector<std::string> inputs;
    std::string trip = ctx_.toTensor(n.input(0));
    std::string cond = ctx_.toTensor(n.input(1));
    inputs.push_back(trip);
    inputs.push_back(cond);
    for (size_t i = 2; i < n.inputs().size(); ++i)
      inputs.push_back(isTensorListType(n.input(i))
                           ? ctx_.toSequence(n.input(i), sequenceDtype(n, i))
                           : ctx_.toTensor(n.input(i)));
    std::vector<std::string> bodyInputs;
    bodyInputs.push_back(ctx_.freshName("iter"));
    ctx_.setTensor(body->inputs()[0], bodyInputs.back());
    bodyInputs.push_back(ctx_.freshName("cond_in"));
    for (size_t i = 1; i < body->inputs().size(); ++i) {
      bodyInputs.push_back(ctx_.freshName("carried"));
      ctx_.setTensor(body->inputs()[i], bodyInputs.back());
      if (isTensorListType(body->inputs()[i])) ctx_.markSequence(body->inputs()[i]);
      if (auto d = ctx_.dtypeOf(n.input(i + 1))) {
        ValueFacts f;
        f.dtype = *d;
        // Sizes may change from one iteration to the next; the rank is taken to stay.
        f.rank = ctx_.rankOf(n.input(i + 1));
        ctx_.setFacts(body->inputs()[i], f);
      }
    }
    ::onnx::GraphProto g;
    g.set_name(ctx_.freshName("loop_body"));
    ctx_.withGraph(&g, [&] {
      // Typed body inputs (ONNX Runtime wants them): the iteration number and the condition
      // are scalars, the carried values have their initial values' dtypes (shapes may change).
      for (size_t i = 0; i < bodyInputs.size(); ++i) {
        auto* vi = g.add_input();
        vi->set_name(bodyInputs[i]);
        auto* tt = vi->mutable_type()->mutable_tensor_type();
        if (i < 2) {
          tt->set_elem_type(onnxDataType(i == 0 ? ScalarType::Long : ScalarType::Bool));
          tt->mutable_shape();
        } else if (isTensorListType(n.input(i))) {
          // A list grown in the loop: a sequence of tensors of the elements' dtype (what the
          // example run saw of the initial list's elements, or of what the body appends to it;
          // Float when neither is known).
          vi->clear_type();
          vi->mutable_type()
              ->mutable_sequence_type()
              ->mutable_elem_type()
              ->mutable_tensor_type()
              ->set_elem_type(onnxDataType(sequenceDtype(n, i)));
        } else if (auto d = ctx_.dtypeOf(n.input(i))) {
          tt->set_elem_type(onnxDataType(*d));
        } else {
          vi->clear_type();
        }
      }
      convertBlock(body);
      ctx_.setCurrentNode(&n);
      std::string c = ctx_.toTensor(body->outputs()[0]);
      if (ctx_.dtypeOf(body->outputs()[0]) != ScalarType::Bool)
        c = ctx_.op("Cast", {c}, {attrI("to", onnxDataType(ScalarType::Bool))});
      bool produced = false;
      for (const auto& node : g.node())
        for (const auto& o : node.output()) produced |= o == c;
      g.add_output()->set_name(produced ? c : ctx_.op("Identity", {c}));
      for (size_t i = 1; i < body->outputs().size(); ++i)
        g.add_output()->set_name(subgraphOutput(g, body->outputs()[i]));
    });
    ctx_.setCurrentNode(&n);
    auto outs = ctx_.opN("Loop", inputs, n.outputs().size(), {attrG("body", g)});
    for (size_t i = 0; i < outs.size(); ++i) {
      ctx_.setOutput(n, i, outs[i]);
      if (isTensorListType(n.output(i))) ctx_.markSequence(n.output(i));
    }
  }

  // The element dtype of Loop `n`'s carried list input `i` (the loop's input index): the
  // initial list's, else the list's after the loop (prepare.cpp records the elements' dtype of
  // lists the example run saw: an empty list filled with int64 tensors in the loop), else Float.
  ScalarType sequenceDtype(const Node& n, size_t i) const {
    if (auto d = ctx_.dtypeOf(n.input(i))) return *d;
    if (auto d = ctx_.dtypeOf(n.output(i - 2))) return *d;
    return ScalarType::Float;
  }

  OnnxCtx& ctx_;
  const OnnxConverterRegistry& registry_;
};

void countIn(const ::onnx::GraphProto& g, std::map<std::string, int>& out) {
  for (const auto& n : g.node()) {
    ++out[n.op_type()];
    for (const auto& a : n.attribute())
      if (a.has_g()) countIn(a.g(), out);
  }
}

}  // namespace

std::map<std::string, int> countOps(const ::onnx::ModelProto& model) {
  std::map<std::string, int> out;
  countIn(model.graph(), out);
  return out;
}

namespace {
std::map<std::string, int, std::less<>>& minOpsets() {
  static std::map<std::string, int, std::less<>> m;
  return m;
}
}  // namespace

std::pair<int, int> converterOpsets(std::string_view schema) {
  auto it = minOpsets().find(schema);
  return {it == minOpsets().end() ? kMinOpset : it->second, kMaxOpset};
}

void setConverterMinOpset(std::string_view schema, int opset) {
  minOpsets()[std::string(schema)] = opset;
}

void registerConverter(std::string_view schema, OnnxConverter converter) {
  onnxConverters().add(schema, std::move(converter));
}

namespace {

/// How many ONNX inputs graph input i becomes: 1 for a tensor, one per element for a
/// List[Tensor] (flattened as torch.onnx flattens it, see prepare.cpp's bindConstantInputs),
/// 0 for a constant.
size_t onnxInputCount(const Graph& graph, const std::vector<IValue>& inputs,
                      const ExportOptions& options, size_t i) {
  if (options.constantInputs.count(i) || i >= inputs.size()) return 0;
  if (inputs[i].isTensor()) return 1;
  if (inputs[i].isList() && isTensorListType(graph.inputs()[i]))
    return inputs[i].toTensorVector().size();
  if (const TypePtr& t = graph.inputs()[i]->type();
      inputs[i].isDict() && t && t->kind() == TypeKind::DictType &&
      t->expect<DictType>().getValueType()->kind() == TypeKind::TensorType)
    return inputs[i].toDict()->entries().size();  // one per key (prepare.cpp)
  return 0;
}

/// The ONNX names of the graph's tensor inputs, in order: `options.inputNames`, then the
/// inputs' debug names (NAME_E for element E of a tensor list), then `input_K`. Throws when
/// more names are given than tensor inputs.
std::vector<std::string> tensorInputNames(const Graph& graph, const std::vector<IValue>& inputs,
                                          const ExportOptions& options) {
  std::vector<std::string> names;
  size_t k = 0;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const size_t count = onnxInputCount(graph, inputs, options, i);
    const bool list = count > 0 && !inputs[i].isTensor();
    const Value* in = graph.inputs()[i];
    for (size_t e = 0; e < count; ++e, ++k) {
      std::string base =
          in->hasDebugName() ? sanitize(in->debugNameBase()) : fmt::format("input_{}", k);
      if (list && in->hasDebugName()) base += fmt::format("_{}", e);
      if (inputs[i].isDict() && inputs[i].toDict()->entries()[e].first.isString())
        base = sanitize(inputs[i].toDict()->entries()[e].first.toStringRef());  // by its key
      names.push_back(k < options.inputNames.size() ? options.inputNames[k] : base);
    }
  }
  TL_CHECK(options.inputNames.size() <= k,
           "{} input names given but the graph has {} tensor inputs", options.inputNames.size(), k);
  return names;
}

/// What prepareForExport needs from the export options: constant inputs, folding, and the
/// dynamic axes keyed by graph input index. Throws when a dynamic axis names no input or output.
PrepareOptions prepareOptions(const Graph& graph, const std::vector<IValue>& inputs,
                              const ExportOptions& options,
                              const std::vector<std::string>& inputNames) {
  PrepareOptions po;
  po.constantInputs = options.constantInputs;
  po.foldBatchNorm = options.fold;
  po.stateOutputs = options.stateOutputs;
  size_t k = 0;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const size_t count = onnxInputCount(graph, inputs, options, i);
    if (count == 1 && inputs[i].isTensor()) {
      if (auto d = options.dynamicAxes.find(inputNames[k]); d != options.dynamicAxes.end())
        po.dynamicAxes[i] = d->second;
    } else {
      // The elements of a List[Tensor] / Dict[str, Tensor] input, each an ONNX input
      // (`inputs_0`, `inputs_1` ... or the dict's keys).
      for (size_t e = 0; e < count; ++e)
        if (auto d = options.dynamicAxes.find(inputNames[k + e]); d != options.dynamicAxes.end())
          po.elementDynamicAxes[{i, e}] = d->second;
    }
    k += count;
  }
  for (const auto& [name, axes] : options.dynamicAxes) {
    bool known = std::find(inputNames.begin(), inputNames.end(), name) != inputNames.end() ||
                 std::find(options.outputNames.begin(), options.outputNames.end(), name) !=
                     options.outputNames.end();
    TL_CHECK(known, "--dynamic-axes names '{}', which is neither an input nor an output name",
             name);
  }
  return po;
}

size_t countNodes(const Block* b) {
  size_t n = 0;
  for (const Node* node : b->nodes()) {
    ++n;
    for (const Block* sub : node->blocks()) n += countNodes(sub);
  }
  return n;
}

/// The graph's outputs flattened as cli.md's: tuples and lists in order, dict values in
/// insertion order (the keys are not outputs), None dropped (googlenet's and inception's
/// scripted `Outputs(x, None)`). `values[i]` is null for an element of a tensor list, whose
/// list is `listOf[i]` (its facts describe its elements).
struct FlatOutputs {
  std::vector<const Value*> values;
  std::vector<std::string> names;
  std::map<size_t, const Value*> listOf;

  void add(OnnxCtx& ctx, const Value* v) {
    if (ctx.hasTensor(v)) {
      values.push_back(v);
      names.push_back(ctx.toTensor(v));
      return;
    }
    if (ctx.isStatic(v) && ctx.staticValue(v).isNone()) return;
    Symbol k = v->node()->kind();
    if (k == prim::TupleConstruct || k == prim::ListConstruct) {
      for (const Value* in : v->node()->inputs()) add(ctx, in);
      return;
    }
    if (k == prim::DictConstruct) {
      for (size_t i = 1; i < v->node()->inputs().size(); i += 2) add(ctx, v->node()->input(i));
      return;
    }
    if (ctx.hasTensorList(v)) {
      for (const auto& t : ctx.tensorList(v)) {
        values.push_back(nullptr);
        names.push_back(t);
        listOf[names.size() - 1] = v;
      }
      return;
    }
    values.push_back(v);
    names.push_back(ctx.toTensor(v));
  }
};

/// Renames tensor `from` to `to` in every node input and graph output of `g` and its subgraphs.
void renameTensor(::onnx::GraphProto& g, const std::string& from, const std::string& to) {
  for (auto& node : *g.mutable_node()) {
    for (int j = 0; j < node.input_size(); ++j)
      if (node.input(j) == from) node.set_input(j, to);
    for (auto& a : *node.mutable_attribute())
      if (a.has_g()) renameTensor(*a.mutable_g(), from, to);
  }
  for (auto& o : *g.mutable_output())
    if (o.name() == from) o.set_name(to);
}

/// Gives output `i` its final name `want` (made unique): the producing node's output is renamed
/// when no earlier output took it, else an Identity is added. Later outputs naming the same
/// tensor follow the rename.
std::string nameOutput(OnnxCtx& ctx, ::onnx::GraphProto* gp, FlatOutputs& outs, size_t i,
                       const std::string& want, std::set<std::string>& taken) {
  const std::string name = outs.names[i];
  ::onnx::NodeProto* producer = nullptr;
  int producerIndex = -1;
  for (auto& node : *gp->mutable_node())
    for (int j = 0; j < node.output_size(); ++j)
      if (node.output(j) == name) producer = &node, producerIndex = j;
  std::string finalName = ctx.freshName(want);
  if (producer && !taken.count(name)) {
    producer->set_output(producerIndex, finalName);
    renameTensor(*gp, name, finalName);
    for (size_t j = i + 1; j < outs.names.size(); ++j)
      if (outs.names[j] == name) outs.names[j] = finalName;
  } else {
    auto* node = gp->add_node();
    node->set_op_type("Identity");
    node->set_name(finalName + "/Identity");
    node->add_input(name);
    node->add_output(finalName);
  }
  taken.insert(finalName);
  return finalName;
}

/// Adds the graph output `name` typed from what is known of output `i`: dtype, sizes or only
/// the rank, and the dynamic axes the options give it.
void addOutputInfo(OnnxCtx& ctx, ::onnx::GraphProto* gp, const PreparedGraph& prepared,
                   const FlatOutputs& outs, size_t i, const std::string& name,
                   const ExportOptions& options) {
  ValueFacts f;
  std::optional<ScalarType> dtype;
  std::optional<std::vector<int64_t>> sizes;
  std::optional<int64_t> rank;
  const Value* typed = outs.values[i];
  if (typed) {
    if (auto it = prepared.facts.find(typed); it != prepared.facts.end()) f = it->second;
  } else if (auto l = outs.listOf.find(i); l != outs.listOf.end()) {
    typed = l->second;
  }
  if (typed && ctx.isSequence(typed)) {
    // A list whose length is known at run time only (appended to in a loop): an ONNX sequence
    // of tensors, as torch.onnx returns a scripted List[Tensor].
    auto* vi = gp->add_output();
    vi->set_name(name);
    auto* elem = vi->mutable_type()->mutable_sequence_type()->mutable_elem_type();
    auto* tt = elem->mutable_tensor_type();
    tt->set_elem_type(onnxDataType(ctx.dtypeOf(typed).value_or(ScalarType::Float)));
    if (std::optional<int64_t> r = ctx.rankOf(typed)) {
      auto* shape = tt->mutable_shape();
      for (int64_t d = 0; d < *r; ++d) shape->add_dim();
    }
    return;
  }
  if (typed) {
    if (ctx.isComplex(typed))
      throw Error(fmt::format(
          "output {} is a complex tensor, which ONNX cannot hold: return torch.view_as_real() "
          "of it",
          name));
    dtype = ctx.dtypeOf(typed);
    sizes = ctx.sizesOf(typed);
    rank = ctx.rankOf(typed);
  }
  // An int / float / bool output is a 0-d tensor (tchrs_foo4's `-> float`).
  if (!sizes && typed && typed->type() &&
      (typed->type()->kind() == TypeKind::IntType || typed->type()->kind() == TypeKind::FloatType ||
       typed->type()->kind() == TypeKind::BoolType))
    sizes = std::vector<int64_t>{};
  // A list of numbers is a 1-d tensor of its length (torch.onnx exports a List[int] so).
  if (!sizes && typed && typed->type() && typed->type()->kind() == TypeKind::ListType) {
    const TypeKind e = typed->type()->expect<ListType>().getElementType()->kind();
    if (e == TypeKind::IntType || e == TypeKind::FloatType || e == TypeKind::BoolType) {
      rank = 1;
      if (!dtype) dtype = e == TypeKind::FloatType ? ScalarType::Float : ScalarType::Long;
      if (ctx.isStatic(typed) && ctx.staticValue(typed).isList())
        sizes = std::vector<int64_t>{
            static_cast<int64_t>(ctx.staticValue(typed).toList()->list.size())};
    }
  }
  if (auto d = options.dynamicAxes.find(name); d != options.dynamicAxes.end() && sizes) {
    f.dynamicDims.resize(sizes->size(), false);
    for (int64_t a : d->second)
      f.dynamicDims.at(wrapDim(a, static_cast<int64_t>(sizes->size()))) = true;
  }
  if (!dtype) {
    // Unknown (e.g. an output of a list): leave the type to shape inference.
    auto* vi = gp->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnxDataType(ScalarType::Float));
    return;
  }
  if (!sizes && rank) {
    // Known rank, unknown sizes: dims without values (the checker wants a shape).
    setValueInfo(gp->add_output(), name, dtype, std::vector<int64_t>(*rank, 0), {}, name);
    auto* shape = gp->mutable_output(gp->output_size() - 1)
                      ->mutable_type()
                      ->mutable_tensor_type()
                      ->mutable_shape();
    for (auto& d : *shape->mutable_dim()) d.clear_dim_value();
    return;
  }
  setValueInfo(gp->add_output(), name, dtype, sizes, f.dynamicDims, name);
}

// Note [Outputs sized by data]
// An output's dims are declared from the example run, symbolic where they follow a dynamic axis
// (Note [Dynamic axes by grown runs]). Sizes decided by tensor values are neither: batched_nms
// keeps 38 of 40 boxes here and 1439 of 1500 there, and the grown runs, which repeat the
// example's boxes, keep 38 again. ONNX Runtime runs such a model but warns that the output
// does not have its declared shape, and a consumer that trusts the declaration is wrong. So the
// values whose sizes may follow data are tracked from the ops that decide a size by values
// (nonzero, unique, nms, masked_select, boolean indexing, repeat_interleave by a tensor, a
// number read from a tensor: int(t), t.item(), bool(t)) through everything computed from them,
// If outputs of a condition from them, and loop-carried values; such an output keeps a static
// dim only where ONNX shape inference, from the graph alone, gives the same size (the 4 of
// [K, 4] boxes); its other dims are symbolic, named as dynamic axes are.
bool decidesSizeByData(const Node& n, const PreparedGraph& prepared) {
  const std::string ns(n.kind().domainString());
  const std::string op(n.kind().toUnqualString());
  if (ns == "torchvision") return op == "nms";
  if (ns == "prim" && op == "tolist") return true;
  if (ns != "aten") return false;
  static const std::unordered_set<std::string> ops{
      "nonzero",  "nonzero_numpy", "argwhere",           "masked_select",          "_unique",
      "_unique2", "unique_dim",    "unique_consecutive", "unique_dim_consecutive", "bincount"};
  if (ops.count(op)) return true;
  if (op == "where") return n.inputs().size() == 1;
  if (op == "repeat_interleave")
    return n.inputs().size() == 1 ||
           (n.input(1)->type() && n.input(1)->type()->kind() == TypeKind::TensorType);
  if (op == "equal" || op == "allclose") return true;
  if (op == "Int" || op == "Bool" || op == "Float" || op == "item" || op == "is_nonzero" ||
      op == "_local_scalar_dense" || op == "IntImplicit" || op == "FloatImplicit" ||
      op == "ScalarImplicit")
    return n.inputs().size() == 1 && n.input(0)->type() &&
           n.input(0)->type()->kind() == TypeKind::TensorType &&
           n.input(0)->node()->kind() != prim::NumToTensor;  // not a traced size
  if (op == "index" && n.inputs().size() == 2 && n.input(1)->node()->kind() == prim::ListConstruct)
    for (const Value* idx : n.input(1)->node()->inputs()) {
      auto f = prepared.facts.find(idx);
      if (f != prepared.facts.end() && f->second.dtype &&
          (*f->second.dtype == ScalarType::Bool || *f->second.dtype == ScalarType::Byte))
        return true;
    }
  return false;
}

/// Note [Outputs sized by data]: the values of `b` (and its blocks) whose sizes may follow data.
bool markSizedByData(const Block* b, const PreparedGraph& prepared,
                     std::unordered_set<const Value*>& sized) {
  bool changed = false;
  auto mark = [&](const Value* v) { changed |= sized.insert(v).second; };
  for (const Node* n : b->nodes()) {
    bool in = decidesSizeByData(*n, prepared);
    for (const Value* v : n->inputs()) in = in || sized.count(v);
    if (n->kind() == prim::Loop) {
      // Carried values: the body's inputs follow the initial values and the body's results.
      const Block* body = n->blocks()[0];
      for (size_t i = 1; i < body->inputs().size() && i + 1 < n->inputs().size(); ++i)
        if (sized.count(n->input(i + 1)) || sized.count(body->outputs().at(i)))
          mark(body->inputs()[i]);
    }
    for (const Block* inner : n->blocks()) changed |= markSizedByData(inner, prepared, sized);
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      bool out = in;
      for (const Block* inner : n->blocks()) {
        const size_t at = n->kind() == prim::Loop ? i + 1 : i;
        if (at < inner->outputs().size() && sized.count(inner->outputs()[at])) out = true;
      }
      if (out) mark(n->output(i));
    }
  }
  return changed;
}

/// Note [Outputs sized by data]: makes the dims of outputs `names` symbolic where shape
/// inference does not give the declared size.
void relaxOutputsSizedByData(::onnx::ModelProto& model, const std::set<std::string>& names) {
  if (names.empty()) return;
  // Shape inference on a copy without the weights: initializers of more than 64 elements are
  // graph inputs of their type there (the small ones stay: Reshape's shapes, Slice's bounds).
  ::onnx::ModelProto copy;
  {
    // The weights are moved aside while the rest is copied, and back even if the copy throws.
    struct Aside {
      ::onnx::GraphProto* g;
      google::protobuf::RepeatedPtrField<::onnx::TensorProto> weights;
      explicit Aside(::onnx::GraphProto* graph) : g(graph) {
        weights.Swap(g->mutable_initializer());
      }
      ~Aside() { weights.Swap(g->mutable_initializer()); }
    } aside(model.mutable_graph());
    copy = model;
  }
  for (const auto& w : model.graph().initializer()) {
    int64_t n = 1;
    for (int64_t d : w.dims()) n *= d;
    if (n <= 64) {
      *copy.mutable_graph()->add_initializer() = w;
      continue;
    }
    auto* in = copy.mutable_graph()->add_input();
    in->set_name(w.name());
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(w.data_type());
    for (int64_t d : w.dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  for (auto& o : *copy.mutable_graph()->mutable_output())
    if (names.count(o.name()) && o.type().has_tensor_type())
      for (auto& d : *o.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim())
        d.clear_dim_value();
  try {
    ::onnx::ShapeInferenceOptions options(/*check_type=*/false, /*strict_mode=*/0,
                                          /*data_prop=*/false);
    ::onnx::shape_inference::InferShapes(copy, ::onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception&) {
    // Nothing inferred: every dim of those outputs becomes symbolic.
  }
  for (int i = 0; i < model.graph().output_size(); ++i) {
    auto* o = model.mutable_graph()->mutable_output(i);
    if (!names.count(o->name()) || !o->type().has_tensor_type()) continue;
    const auto& inferred = copy.graph().output(i).type().tensor_type().shape();
    auto* shape = o->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int d = 0; d < shape->dim_size(); ++d) {
      auto* dim = shape->mutable_dim(d);
      if (!dim->has_dim_value()) continue;
      if (d < inferred.dim_size() && inferred.dim(d).has_dim_value() &&
          inferred.dim(d).dim_value() == dim->dim_value())
        continue;
      dim->clear_dim_value();
      dim->set_dim_param(fmt::format("{}_dim{}", o->name(), d));
    }
  }
}

/// Writes the graph outputs: flattened, named (options, debug names, `output_K`), typed.
/// Returns the names of the outputs whose sizes may follow data (Note [Outputs sized by data]).
std::set<std::string> writeOutputs(OnnxCtx& ctx, ::onnx::GraphProto* gp, const Graph& g,
                                   const PreparedGraph& prepared, const ExportOptions& options) {
  std::unordered_set<const Value*> sized;
  for (int round = 0; round < 4 && markSizedByData(g.block(), prepared, sized); ++round) {
  }
  std::set<std::string> sizedByData;
  FlatOutputs outs;
  std::map<size_t, std::string> named;  // flattened index -> graphOutputNames' name
  for (size_t j = 0; j < g.outputs().size(); ++j) {
    const size_t first = outs.names.size();
    outs.add(ctx, g.outputs()[j]);
    if (auto it = options.graphOutputNames.find(j);
        it != options.graphOutputNames.end() && outs.names.size() == first + 1)
      named[first] = it->second;
  }
  TL_CHECK(options.outputNames.size() <= outs.names.size(),
           "{} output names given but the graph has {} outputs", options.outputNames.size(),
           outs.names.size());
  ctx.setCurrentNode(nullptr);
  std::set<std::string> graphInputs;
  for (const auto& in : gp->input()) graphInputs.insert(in.name());
  std::set<std::string> taken;
  for (size_t i = 0; i < outs.names.size(); ++i) {
    const Value* v = outs.values[i];
    std::string want = i < options.outputNames.size() ? options.outputNames[i]
                       : named.count(i)               ? named.at(i)
                       : v && v->hasDebugName() && !graphInputs.count(outs.names[i])
                           ? sanitize(v->debugNameBase())
                           : fmt::format("output_{}", i);
    std::string name = nameOutput(ctx, gp, outs, i, want, taken);
    addOutputInfo(ctx, gp, prepared, outs, i, name, options);
    if (v && sized.count(v)) sizedByData.insert(name);
  }
  return sizedByData;
}

}  // namespace

namespace {

::onnx::ModelProto exportChecked(const Graph& graph, const std::vector<IValue>& inputs,
                                 const ExportOptions& options, ExportReport* report) {
  TL_CHECK(options.opset >= kMinOpset && options.opset <= kMaxOpset,
           "opset {} is not supported: torchless writes opsets {} to {}", options.opset, kMinOpset,
           kMaxOpset);
  const OnnxConverterRegistry& registry = onnxConverters();
  const std::vector<std::string> inputNames = tensorInputNames(graph, inputs, options);
  const PrepareOptions po = prepareOptions(graph, inputs, options, inputNames);
  auto progress = [&](const std::string& what) {
    if (options.progress) options.progress(what);
  };
  progress("preparing: example run, mutation removal, folding");
  PreparedGraph prepared = prepareForExport(graph, inputs, po);
  const Graph& g = *prepared.graph;
  if (!prepared.runError.empty())
    progress("the example run failed (sizes from the graph's types only): " + prepared.runError);

  // Pre-flight: every unsupported operator at once, before converting anything.
  convert::checkSupported(g, "ONNX export", [&](const Node& n, const OpInfo* op) {
    // Nodes without a converter pass when they compute no tensor: with constant inputs
    // (checked while converting) the runtime's kernel evaluates them.
    return isStructural(n.kind()) || registry.findFor(n, op) != nullptr ||
           (!hasTensorOutput(n) && KernelRegistry::global().hasKernel(n, op));
  });

  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name(options.producerName);
  model.set_producer_version("0.1.0");
  auto* opsetImport = model.add_opset_import();
  opsetImport->set_domain("");
  opsetImport->set_version(options.opset);
  ::onnx::GraphProto* gp = model.mutable_graph();
  gp->set_name("torchless_graph");
  for (const auto& [key, value] : options.metadata) {
    auto* p = model.add_metadata_props();
    p->set_key(key);
    p->set_value(value);
  }

  OnnxCtx ctx(gp, options.opset);
  ctx.setQLinearOps(options.qlinearOps);
  for (const auto& [v, f] : prepared.facts) ctx.setFacts(v, f);
  for (const auto& [v, name] : prepared.weightNames) ctx.setWeightName(v, name);
  for (const Value* v : prepared.dynamic) ctx.markDynamic(v);

  for (size_t k = 0; k < g.inputs().size(); ++k) {
    const Value* in = g.inputs()[k];
    std::string name = ctx.freshName(inputNames.at(k));
    ValueFacts f;
    if (auto it = prepared.facts.find(in); it != prepared.facts.end()) f = it->second;
    setValueInfo(gp->add_input(), name, ctx.dtypeOf(in), ctx.sizesOf(in), f.dynamicDims, name);
    ctx.setTensor(in, name);
  }

  progress(fmt::format("converting {} nodes at opset {}", countNodes(g.block()), options.opset));
  Exporter exporter(ctx, registry);
  exporter.convertBlock(g.block());
  relaxOutputsSizedByData(model, writeOutputs(ctx, gp, g, prepared, options));

  // Debian's libonnx 1.12 knows opsets up to 17: newer models are written unchecked (ONNX
  // Runtime, which the oracle tests run, validates them).
  bool checkable = options.opset <= checkerMaxOpset();
  if (options.check && checkable) {
    progress("checking: ONNX checker and strict shape inference");
    checkModel(model);
  }
  if (report) {
    report->checked = options.check && checkable;
    report->opCounts = countOps(model);
    report->numInitializers = static_cast<size_t>(gp->initializer_size());
    report->runError = prepared.runError;
    report->stateInitial = prepared.stateInitial;
  }
  return model;
}

}  // namespace

::onnx::ModelProto exportGraph(const Graph& graph, const std::vector<IValue>& inputs,
                               const ExportOptions& options, ExportReport* report) {
  // Note [Naming out of memory]
  return namingOutOfMemory("exporting ONNX", "",
                           [&] { return exportChecked(graph, inputs, options, report); });
}

int checkerMaxOpset() {
  const auto& m = ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = m.find("");
  return it == m.end() ? 0 : it->second.second;
}

void checkModel(const ::onnx::ModelProto& model) {
  for (const auto& o : model.opset_import())
    if (o.domain().empty() && o.version() > checkerMaxOpset())
      throw Error(fmt::format(
          "the installed ONNX library checks opsets up to {}; opset {} cannot be checked",
          checkerMaxOpset(), o.version()));
  try {
    ::onnx::checker::check_model(model);
    ::onnx::ModelProto copy = model;
    ::onnx::ShapeInferenceOptions options(/*check_type=*/true, /*strict_mode=*/1,
                                          /*data_prop=*/false);
    ::onnx::shape_inference::InferShapes(copy, ::onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    std::string what = e.what();
    auto nl = what.find('\n');
    throw Error(fmt::format("the ONNX checker rejects the exported model: {}",
                            nl == std::string::npos ? what : what.substr(0, nl)),
                "", nl == std::string::npos ? "" : what.substr(nl + 1));
  }
}

namespace {
/// Protobuf's output stream into an AtomicFile; a write error is kept and rethrown after.
class AtomicFileSink : public google::protobuf::io::CopyingOutputStream {
 public:
  explicit AtomicFileSink(AtomicFile& f) : f_(f) {}
  bool Write(const void* buffer, int size) override {
    try {
      f_.write(buffer, static_cast<size_t>(size));
      return true;
    } catch (...) {
      error_ = std::current_exception();
      return false;
    }
  }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  AtomicFile& f_;
  std::exception_ptr error_;
};
}  // namespace

bool saveModel(const ::onnx::ModelProto& model, const std::string& path,
               const SaveOptions& options) {
  namespace fs = std::filesystem;
  const std::string dataPath = path + ".data";
  try {
    const ::onnx::ModelProto* out = &model;
    ::onnx::ModelProto external;
    std::optional<AtomicFile> data;
    bool useExternal = model.ByteSizeLong() >= options.externalDataThreshold;
    if (useExternal) {
      // Large initializers go to PATH.data (onnx's external data format).
      external = model;
      data.emplace(dataPath);
      size_t offset = 0;
      const std::string location = fs::path(dataPath).filename().string();
      static const std::string zeros(4096, '\0');
      for (auto& t : *external.mutable_graph()->mutable_initializer()) {
        if (t.raw_data().size() < options.externalTensorMinBytes) continue;
        size_t pad = (4096 - offset % 4096) % 4096;
        data->write(zeros.data(), pad);
        offset += pad;
        data->write(t.raw_data());
        auto add = [&](const std::string& k, const std::string& v) {
          auto* e = t.add_external_data();
          e->set_key(k);
          e->set_value(v);
        };
        add("location", location);
        add("offset", std::to_string(offset));
        add("length", std::to_string(t.raw_data().size()));
        offset += t.raw_data().size();
        t.clear_raw_data();
        t.set_data_location(::onnx::TensorProto::EXTERNAL);
      }
      out = &external;
    }
    AtomicFile file(path);
    {
      AtomicFileSink sink(file);
      google::protobuf::io::CopyingOutputStreamAdaptor stream(&sink);
      const bool ok = out->SerializeToZeroCopyStream(&stream) && stream.Flush();
      sink.rethrow();
      TL_CHECK(ok, "cannot serialize the ONNX model");
    }
    // Both files appear together at the end (Note [Atomic writes], core/atomic_file.h).
    if (data) data->commit();
    file.commit();
    return useExternal;
  } catch (Error& e) {
    e.withPlace(path);
    throw;
  } catch (const std::bad_alloc&) {  // Note [Naming out of memory]
    throw Error(outOfMemoryMessage("writing the ONNX file"), path);
  } catch (const std::exception& e) {
    throw Error(e.what(), path);
  }
}

}  // namespace torchless::onnx_export
