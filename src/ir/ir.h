#pragma once
// The SSA IR: Graph, Block, Node, Value (torch/csrc/jit/ir/ir.h in shape and in print).
//
// Note [Graph ownership]
// A Graph owns every Node, Value and Block created in it; the IR refers to them by raw pointer.
// Nothing is freed until Node::destroy / Block::destroy (which check that no uses remain) or the
// Graph's destructor. A Block holds its nodes in an intrusive, circular, doubly-linked list whose
// order is topological: `param node -> n1 -> n2 ... -> return node -> param node`. The param
// node's outputs are the block's inputs; the return node's inputs are the block's outputs.
// Nodes with sub-blocks (prim::If, prim::Loop) own them.
//
// Note [Uses]
// Every input edge is recorded twice: `node->inputs()[i] == v` and `Use{node, i}` in
// `v->uses()`. Only the mutators below edit either side, and they keep both in step; the
// verifier (ir/verifier.h) checks it. Passes never touch inputs_/uses_ directly.
//
// Note [Value names]
// A value prints as `%name` when it has a debug name and as `%<unique>` otherwise, where the
// unique number is handed out by the graph in creation order. Names are unique per graph;
// setDebugName follows PyTorch: if the name is taken, the *old* owner is renamed to the next
// free `base.N` (x -> x.1, x.2 ...), and the new value takes the name. Names that are plain
// numbers are not valid and leave the value unnamed.
//
// Typical use (the frontend emitting `z = x + 1`):
//
//   auto g = std::make_shared<Graph>();
//   Value* x = g->addInput("x")->setType(TensorType::get());
//   Value* one = g->insertConstant(IValue(int64_t(1)));
//   Node* add = g->insertNode(g->create(Symbol::aten("add"), {x, one, one}));
//   add->output()->setType(TensorType::get())->setDebugName("z");
//   g->registerOutput(add->output());
//   std::cout << *g;
//
//   graph(%x : Tensor):
//     %1 : int = prim::Constant[value=1]()
//     %z : Tensor = aten::add(%x, %1, %1)
//     return (%z)

#include "core/ivalue.h"
#include "core/tensor.h"
#include "core/type.h"
#include "ir/symbol.h"

#include <atomic>
#include <complex>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace torchless {

class Graph;
class Block;
class Node;
class Value;
struct OpInfo;  // ir/operator_registry.h

/// Where a node came from, as PyTorch prints it after a node: `# filename:line:col`, line
/// 1-based, col 0-based (PyTorch's file_line_col). `text` may hold the source text of the
/// construct (for messages); it is not printed.
struct SourceLocation {
  std::string filename;
  size_t line = 0;
  size_t col = 0;
  std::string text;

  /// "filename:line:col".
  std::string str() const;
};
using SourceLocationPtr = std::shared_ptr<const SourceLocation>;

/// A tracing / module scope (`__module.layer1/__module.layer1.conv1`): a chain of names.
class Scope;
using ScopePtr = std::shared_ptr<const Scope>;
class Scope : public std::enable_shared_from_this<Scope> {
 public:
  Scope() = default;
  Scope(ScopePtr parent, Symbol name) : parent_(std::move(parent)), name_(name) {}
  /// A child scope named `name`.
  ScopePtr push(Symbol name) const { return std::make_shared<Scope>(shared_from_this(), name); }
  const ScopePtr& parent() const { return parent_; }
  bool isRoot() const { return parent_ == nullptr; }
  Symbol name() const { return name_; }
  /// Unqualified names from the outermost scope down, joined by "/" (root excluded).
  std::string namesFromRoot(const std::string& separator = "/") const;

 private:
  ScopePtr parent_;
  Symbol name_;
};

/// One input edge: `user->inputs()[offset]` is the value holding this Use.
struct Use {
  Node* user;
  size_t offset;
  bool operator==(const Use& o) const { return user == o.user && offset == o.offset; }
};

/// The kinds of node attributes (PyTorch's AttributeKind). `ival` holds constants of any kind.
enum class AttributeKind { f, fs, c, i, is, s, ss, t, ts, g, gs, ty, tys, ival };
/// "f", "fs", ... "ival".
const char* toString(AttributeKind kind);

/// The payload of one attribute; the variant index equals the AttributeKind.
using AttributeValue =
    std::variant<double, std::vector<double>, std::complex<double>, int64_t, std::vector<int64_t>,
                 std::string, std::vector<std::string>, Tensor, std::vector<Tensor>,
                 std::shared_ptr<Graph>, std::vector<std::shared_ptr<Graph>>, TypePtr,
                 std::vector<TypePtr>, IValue>;

// ---- Value ----------------------------------------------------------------------------------

/// An SSA value: output `offset()` of `node()` (for block inputs, of the block's param node).
class Value {
 public:
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;

  Node* node() { return node_; }
  const Node* node() const { return node_; }
  /// Index of this value among its node's outputs.
  size_t offset() const { return offset_; }
  Graph* owningGraph();
  const Graph* owningGraph() const;

  const TypePtr& type() const { return type_; }
  /// Sets the type; returns this for chaining.
  Value* setType(TypePtr type);
  /// Sets this value's type from a tensor: dtype, sizes, strides, device, requires_grad.
  Value* inferTypeFrom(const Tensor& t);

  /// The graph-wide number printed for unnamed values (`%5`).
  size_t unique() const { return unique_; }
  bool hasDebugName() const { return !uniqueName_.empty(); }
  /// The name, or the unique number as text.
  std::string debugName() const;
  /// The name without a trailing `.N` suffix ("x.3" -> "x").
  std::string debugNameBase() const;
  /// Sets the name (see Note [Value names]); "" clears it. Throws torchless::Error for a name
  /// that is a number.
  Value* setDebugName(const std::string& name);
  /// False for names that are plain numbers (they would clash with unique numbers).
  static bool isValidName(const std::string& name);

  const std::vector<Use>& uses() const { return uses_; }
  bool hasUses() const { return !uses_.empty(); }

  /// Copies type and (if set) debug name from `from`.
  Value* copyMetadata(const Value* from);

  /// Makes every user of this value use `newValue` instead.
  ///
  ///   %3 = f(%1, %2)          %3 = f(%1, %2)
  ///   %4 = g(%3)       ==>    %4 = g(%6)        (after %3->replaceAllUsesWith(%6))
  ///   %5 = h(%3, %3)          %5 = h(%6, %6)
  void replaceAllUsesWith(Value* newValue);
  /// Replaces only the first recorded use.
  void replaceFirstUseWith(Value* newValue);
  /// Replaces the uses by nodes that come after `node` (in topological order, nested blocks
  /// included); uses before it keep this value.
  void replaceAllUsesAfterNodeWith(const Node* node, Value* newValue);

 private:
  friend class Node;
  friend class Graph;
  friend class Block;
  Value(Node* node, size_t offset);

  Node* node_;
  size_t offset_;
  size_t unique_;
  std::vector<Use> uses_;
  std::string uniqueName_;
  TypePtr type_;
};

// ---- Node -----------------------------------------------------------------------------------

/// A range over the nodes of a block, forward or reverse. The iterator survives destroying
/// the node it points at through destroyCurrent().
class NodeIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = Node*;
  using difference_type = std::ptrdiff_t;
  using pointer = Node**;
  using reference = Node*;

  NodeIterator() = default;
  NodeIterator(Node* cur, bool reverse) : cur_(cur), reverse_(reverse) {}
  Node* operator*() const { return cur_; }
  Node* operator->() const { return cur_; }
  NodeIterator& operator++();
  NodeIterator operator++(int) {
    NodeIterator old = *this;
    ++*this;
    return old;
  }
  /// Destroys the current node and steps back, so that ++ moves to the node that followed it.
  void destroyCurrent();
  bool operator==(const NodeIterator& o) const { return cur_ == o.cur_; }
  bool operator!=(const NodeIterator& o) const { return cur_ != o.cur_; }

 private:
  Node* cur_ = nullptr;
  bool reverse_ = false;
};

class NodeList {
 public:
  NodeList(Node* head, bool reverse) : head_(head), reverse_(reverse) {}
  NodeIterator begin() const;
  NodeIterator end() const { return NodeIterator(head_, reverse_); }
  NodeList reverse() const;
  Node* front() const { return *begin(); }
  Node* back() const { return *reverse().begin(); }
  bool empty() const { return begin() == end(); }

 private:
  Node* head_;  // the sentinel: return node (forward) or param node (reverse)
  bool reverse_;
};

/// One operation: a kind, inputs, outputs, sub-blocks, attributes, a source location and scope.
class Node {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  Symbol kind() const { return kind_; }
  Graph* owningGraph() { return graph_; }
  const Graph* owningGraph() const { return graph_; }
  /// The block holding this node; null while the node is not inserted.
  Block* owningBlock() { return owningBlock_; }
  const Block* owningBlock() const { return owningBlock_; }
  bool inBlockList() const { return next_ != nullptr; }
  Node* next() { return next_; }
  Node* prev() { return prev_; }
  const Node* next() const { return next_; }
  const Node* prev() const { return prev_; }

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* input(size_t i) const { return inputs_.at(i); }
  Value* output(size_t i) const { return outputs_.at(i); }
  /// The single output; asserts there is exactly one.
  Value* output() const;
  /// The single input; asserts there is exactly one.
  Value* input() const;
  const std::vector<Block*>& blocks() const { return blocks_; }
  bool hasUses() const;

  // -- source location and scope
  const SourceLocationPtr& sourceRange() const { return sourceRange_; }
  Node* setSourceRange(SourceLocationPtr r) {
    sourceRange_ = std::move(r);
    return this;
  }
  const ScopePtr& scope() const { return scope_; }
  Node* setScope(ScopePtr s) {
    scope_ = std::move(s);
    return this;
  }
  /// The scope's names from the root, "" when there is none.
  std::string scopeName() const;

  // -- inputs

  /// Appends `v` as the last input.
  ///
  ///   %3 = f(%1, %2)   ==>   %3 = f(%1, %2, %v)
  Value* addInput(Value* v);
  /// Inserts `v` as input i, shifting later inputs right.
  ///
  ///   %3 = f(%1, %2)   ==>   %3 = f(%1, %v, %2)      (insertInput(1, %v))
  Value* insertInput(size_t i, Value* v);
  /// Replaces input i by `v`; returns the old input.
  ///
  ///   %3 = f(%1, %2)   ==>   %3 = f(%v, %2)          (replaceInput(0, %v))
  Value* replaceInput(size_t i, Value* v);
  /// Replaces every occurrence of `from` among the inputs by `to`.
  ///
  ///   %3 = f(%1, %2, %1)   ==>   %3 = f(%4, %2, %4)  (replaceInputWith(%1, %4))
  void replaceInputWith(Value* from, Value* to);
  /// Removes input i, shifting later inputs left.
  ///
  ///   %3 = f(%1, %2)   ==>   %3 = f(%2)              (removeInput(0))
  void removeInput(size_t i);
  /// Removes all inputs.
  void removeAllInputs();

  // -- outputs

  /// Appends a new output value (type unset: callers set it).
  ///
  ///   %3 = f(%1)   ==>   %3 : T, %4 = f(%1)
  Value* addOutput();
  /// Inserts a new output at i.
  Value* insertOutput(size_t i);
  /// Erases output i. Asserts that it has no uses.
  ///
  ///   %3, %4 = f(%1)   ==>   %3 = f(%1)              (eraseOutput(1))
  void eraseOutput(size_t i);

  /// Redirects every use of output i of this node to output i of `n` (same output count).
  void replaceAllUsesWith(Node* n);
  /// Replaces this node's outputs' uses by the outputs of a new node of kind `kind` with the
  /// same inputs, inserted before this node; this node is destroyed. Returns the new node.
  Node* replaceWithNewSymbol(Symbol kind);

  // -- blocks

  /// Adds an empty sub-block (prim::If's then/else, prim::Loop's body).
  Block* addBlock();
  /// Destroys sub-block i (see Block::destroy).
  void eraseBlock(size_t i);

  // -- position

  /// Inserts this (not yet inserted) node before `n`.
  ///
  ///   %a = f()             %a = f()
  ///   %b = g(%a)   ==>     %t = this()
  ///                        %b = g(%a)              (this->insertBefore(%b's node))
  Node* insertBefore(Node* n);
  /// Inserts this (not yet inserted) node after `n`.
  Node* insertAfter(Node* n);
  /// Moves this (inserted) node to just before `n` (possibly into another block). The caller
  /// keeps the graph valid: inputs must still be defined before their uses.
  ///
  ///   %a = f()             %b = g()
  ///   %b = g()     ==>     %a = f()                (%a's node->moveBefore(%b's node))
  void moveBefore(Node* n);
  /// Moves this (inserted) node to just after `n`.
  void moveAfter(Node* n);
  /// True if this node comes before `n` in topological order (nested blocks: compared at the
  /// first block holding both).
  bool isBefore(const Node* n) const;
  bool isAfter(const Node* n) const;

  /// Removes this node from its block and frees it. Asserts that no output has uses; inputs
  /// are released, sub-blocks destroyed.
  ///
  ///   %3 = f(%1)            (%3 unused)
  ///   %4 = g(%1)   ==>     %4 = g(%1)               (%3's node->destroy())
  void destroy();

  // -- attributes (kept in insertion order, which is print order)

  bool hasAttribute(Symbol name) const;
  bool hasAttributes() const { return !attributes_.empty(); }
  size_t numAttributes() const { return attributes_.size(); }
  std::vector<Symbol> attributeNames() const;
  /// The kind of attribute `name`; throws torchless::Error when absent.
  AttributeKind kindOf(Symbol name) const;
  Node* removeAttribute(Symbol name);
  /// Copies all attributes of `from` (replacing existing ones).
  Node* copyAttributes(const Node& from);
  /// The raw payload; throws torchless::Error when absent.
  const AttributeValue& attribute(Symbol name) const;
  /// Sets (or replaces, keeping its position) an attribute.
  Node* setAttribute(Symbol name, AttributeValue v);

#define TORCHLESS_NODE_ATTR(KIND, T)                                                        \
  Node* KIND##_(Symbol name, T v) {                                                         \
    return setAttribute(                                                                    \
        name, AttributeValue(std::in_place_index<static_cast<size_t>(AttributeKind::KIND)>, \
                             std::move(v)));                                                \
  }                                                                                         \
  const T& KIND(Symbol name) const {                                                        \
    return std::get<static_cast<size_t>(AttributeKind::KIND)>(                              \
        attributeOfKind(name, AttributeKind::KIND));                                        \
  }
  TORCHLESS_NODE_ATTR(f, double)
  TORCHLESS_NODE_ATTR(fs, std::vector<double>)
  TORCHLESS_NODE_ATTR(c, std::complex<double>)
  TORCHLESS_NODE_ATTR(i, int64_t)
  TORCHLESS_NODE_ATTR(is, std::vector<int64_t>)
  TORCHLESS_NODE_ATTR(s, std::string)
  TORCHLESS_NODE_ATTR(ss, std::vector<std::string>)
  TORCHLESS_NODE_ATTR(t, Tensor)
  TORCHLESS_NODE_ATTR(ts, std::vector<Tensor>)
  TORCHLESS_NODE_ATTR(g, std::shared_ptr<Graph>)
  TORCHLESS_NODE_ATTR(gs, std::vector<std::shared_ptr<Graph>>)
  TORCHLESS_NODE_ATTR(ty, TypePtr)
  TORCHLESS_NODE_ATTR(tys, std::vector<TypePtr>)
  TORCHLESS_NODE_ATTR(ival, IValue)
#undef TORCHLESS_NODE_ATTR

  /// A prim::Constant without a value attribute whose output is NoneType (PyTorch's None).
  bool mustBeNone() const;

  // -- facts from the op table (Note [Op facts] in ir/operator_registry.h)

  /// The op-table entry this node calls (matchOperator against the global table), or nullptr
  /// for IR constructs (prim::Constant, prim::If, prim::SetAttr ...) and unknown operators.
  /// Matched on first use and kept until an input, an input's type or the output count
  /// changes (torch::jit::Node::maybeOperator).
  const OpInfo* maybeOperator() const;
  /// Must stay even when its outputs are unused, without looking into its blocks: the op's
  /// side effects or writes, or an IR construct that writes (mayWrite).
  bool hasSideEffects() const;
  /// May write to one of its inputs or to state reachable from them: a mutating op (`add_`,
  /// `out=`, list and dict mutators, prim::PythonOp), prim::SetAttr, prim::CallMethod,
  /// prim::CallFunction, prim::Enter, prim::Exit. Prints and raises do not write.
  bool mayWrite() const;
  /// Draws random numbers (OpInfo::nondeterministic).
  bool isNondeterministic() const;

  // -- printing (ir_printer.cpp)

  /// Prints this node (and its blocks when printBody) at indentation `level` (2 spaces each).
  /// `groups` collects nodes with a Subgraph attribute, printed as `kind_N` and listed after
  /// the graph (`with prim::FusionGroup_0 = graph(...)`); null prints them inline.
  std::ostream& print(std::ostream& out, size_t level, std::vector<const Node*>* groups,
                      bool printSourceLocations = true, bool printAttributes = true,
                      bool printScopes = false, bool printBody = true) const;
  /// `[name=value, ...]` as PyTorch prints attributes.
  void printAttributes(std::ostream& out, bool ignoreSubgraph = false) const;
  /// The value of one attribute as PyTorch prints it.
  void printAttrValue(std::ostream& out, Symbol name) const;

 private:
  friend class Graph;
  friend class Block;
  friend class Value;
  friend class NodeIterator;
  friend class NodeList;
  Node(Graph* graph, Symbol kind);

  const AttributeValue& attributeOfKind(Symbol name, AttributeKind kind) const;
  Value* dropInput(size_t i);
  Use* findUseForInput(size_t i);
  void removeFromList();
  void assignTopoPosition();
  void cloneMetadataFrom(const Node& from);
  /// Forgets the matched op (maybeOperator); called by every mutator that can change it.
  void invalidateOperator() { opMatched_.store(false, std::memory_order_relaxed); }

  Symbol kind_;
  Graph* graph_;
  Block* owningBlock_ = nullptr;
  Node* next_ = nullptr;
  Node* prev_ = nullptr;
  int64_t topoPosition_ = 0;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Block*> blocks_;
  std::vector<std::pair<Symbol, AttributeValue>> attributes_;
  SourceLocationPtr sourceRange_;
  ScopePtr scope_;
  // maybeOperator's cache; atomic because a finished graph may be read from several threads.
  mutable std::atomic<const OpInfo*> op_{nullptr};
  mutable std::atomic<bool> opMatched_{false};
};

// ---- Block ----------------------------------------------------------------------------------

/// A list of nodes with inputs (the param node's outputs) and outputs (the return node's
/// inputs). The graph's top block has no owning node.
class Block {
 public:
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  const std::vector<Value*>& inputs() const;
  const std::vector<Value*>& outputs() const;
  NodeList nodes() const;
  Node* returnNode() { return output_; }
  Node* paramNode() { return input_; }
  const Node* returnNode() const { return output_; }
  const Node* paramNode() const { return input_; }
  Node* owningNode() { return owningNode_; }
  const Node* owningNode() const { return owningNode_; }
  Graph* owningGraph() { return graph_; }
  const Graph* owningGraph() const { return graph_; }

  /// Appends a block input named `name` (may be "").
  ///
  ///   block0(%i):   ==>   block0(%i, %name):
  Value* addInput(const std::string& name = "");
  Value* insertInput(size_t i, const std::string& name = "");
  /// Erases block input i; asserts it has no uses.
  void eraseInput(size_t i);
  /// Appends `v` to the block's outputs; returns its index.
  ///
  ///   -> (%a)   ==>   -> (%a, %v)
  size_t registerOutput(Value* v);
  void insertOutput(size_t i, Value* v);
  void eraseOutput(size_t i);
  void replaceOutput(size_t i, Value* v);

  /// Inserts `n` (not yet inserted) at the end / start of this block.
  Node* appendNode(Node* n);
  Node* prependNode(Node* n);

  /// Fills this empty block with a copy of `src`: inputs, nodes (with their blocks), outputs.
  /// Values defined in `src` map to their copies; any other value `v` used in `src` maps to
  /// `valueMap(v)`. Names and types are copied (names uniqued per Note [Value names]).
  void cloneFrom(const Block* src, const std::function<Value*(Value*)>& valueMap);

  /// Destroys all nodes (last first), the block's inputs and outputs, and frees the block.
  void destroy();

 private:
  friend class Node;
  friend class Graph;
  Block(Graph* graph, Node* owningNode);
  void reIndexTopology();

  Graph* graph_;
  Node* output_;
  Node* input_;
  Node* owningNode_;
};

// ---- Graph ----------------------------------------------------------------------------------

/// A function body: the top block plus ownership of everything in it.
class Graph : public std::enable_shared_from_this<Graph> {
 public:
  Graph();
  explicit Graph(ScopePtr scopeRoot);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Block* block() { return block_; }
  const Block* block() const { return block_; }
  const std::vector<Value*>& inputs() const { return block_->inputs(); }
  const std::vector<Value*>& outputs() const { return block_->outputs(); }
  NodeList nodes() const { return block_->nodes(); }
  Node* returnNode() { return block_->returnNode(); }
  Node* paramNode() { return block_->paramNode(); }

  Value* addInput(const std::string& name = "") { return block_->addInput(name); }
  Value* insertInput(size_t i, const std::string& name = "") {
    return block_->insertInput(i, name);
  }
  void eraseInput(size_t i) { block_->eraseInput(i); }
  size_t registerOutput(Value* v) { return block_->registerOutput(v); }
  void eraseOutput(size_t i) { block_->eraseOutput(i); }

  // -- node creation (the node is not inserted; see insertNode)

  /// A node of `kind` with `numOutputs` fresh outputs (types unset).
  Node* create(Symbol kind, size_t numOutputs = 1);
  /// A node of `kind` taking `inputs`.
  Node* create(Symbol kind, const std::vector<Value*>& inputs, size_t numOutputs = 1);
  /// prim::Constant with NoneType output.
  Node* createNone();
  /// prim::Uninitialized of `type`.
  Node* createUninitialized(TypePtr type);
  /// prim::TupleConstruct; output type is the tuple of the inputs' types (or `tupleType`).
  Node* createTuple(const std::vector<Value*>& values, TypePtr tupleType = nullptr);
  /// prim::TupleUnpack of a value of tuple type: one output per element.
  Node* createTupleUnpack(Value* v);
  /// prim::TupleIndex(tup, idx) with the element's type when the index is constant.
  Node* createTupleIndex(Value* tup, Value* idx, TypePtr outputType);
  /// prim::ListConstruct with output type `List[elementType]`.
  Node* createList(TypePtr elementType, const std::vector<Value*>& values);
  /// prim::ListUnpack into `size` outputs of the list's element type.
  Node* createListUnpack(Value* v, size_t size);
  /// prim::DictConstruct(k0, v0, k1, v1, ...) with output type Dict[keyType, valueType].
  Node* createDict(TypePtr keyType, TypePtr valueType, const std::vector<Value*>& keys,
                   const std::vector<Value*>& values);
  /// prim::GetAttr[name="field"](obj) with output type `type`.
  Node* createGetAttr(Value* obj, const std::string& field, TypePtr type);
  /// prim::SetAttr[name="field"](obj, value).
  Node* createSetAttr(Value* obj, const std::string& field, Value* value);
  /// prim::unchecked_cast(v) with output type `type`.
  Node* createUncheckedCast(Value* v, TypePtr type);

  /// A copy of `n` in this graph (not inserted): same kind, attributes, location, scope and
  /// output types/names; inputs mapped through `valueMap`; blocks copied when copyBlocks.
  Node* createClone(const Node* n, const std::function<Value*(Value*)>& valueMap,
                    bool copyBlocks = true);

  // -- insertion point

  /// Inserts `n` before the insertion point (by default: the end of the top block).
  Node* insertNode(Node* n);
  /// New nodes go before `n`.
  void setInsertPoint(Node* n);
  /// New nodes go at the end of block `b`.
  void setInsertPoint(Block* b);
  Node* insertPoint() const { return insertBefore_; }
  Block* insertPointBlock() { return insertBefore_->owningBlock(); }

  /// Inserts a prim::Constant holding `value` at the insertion point, as PyTorch's
  /// insertConstant does: int -> i, float -> f, complex -> c, bool -> i (bool output),
  /// str -> s, Device -> s (Device output), Tensor -> t (complete tensor type), None -> no
  /// attribute (NoneType output), lists, tuples, dicts, enums -> ival. Throws
  /// torchless::Error for values that cannot be constants (tensors requiring grad, objects).
  Value* insertConstant(const IValue& value, SourceLocationPtr loc = nullptr,
                        ScopePtr scope = nullptr);

  /// The scope new nodes get when created.
  const ScopePtr& currentScope() const { return currentScope_; }
  void setCurrentScope(ScopePtr s) { currentScope_ = std::move(s); }

  /// A deep copy: same text when printed (numbered values renumbered).
  std::shared_ptr<Graph> copy() const;

  // -- printing (ir_printer.cpp)

  /// PyTorch's str(graph): `graph(%x : Tensor):` ... `return (%y)`.
  std::string toString(bool printSourceLocations = true) const;
  std::ostream& print(std::ostream& out, bool printSourceLocations = true) const;

 private:
  friend class Node;
  friend class Value;
  friend class Block;

  void freeNode(Node* n);
  void freeValue(Value* v);
  void freeBlock(Block* b);

  std::unordered_set<const Node*> allNodes_;
  std::unordered_set<const Value*> allValues_;
  std::unordered_set<const Block*> allBlocks_;
  size_t nextUnique_ = 0;
  std::unordered_map<std::string, Value*> uniqueNames_;
  std::unordered_map<std::string, size_t> nameBaseSuffix_;
  size_t predictedInsertCount_ = 0;
  ScopePtr currentScope_;
  Block* block_;
  Node* insertBefore_;
};

/// Sets the graph's insertion point for the guard's lifetime, restoring the old one after.
///
///   {
///     WithInsertPoint guard(ifNode->blocks()[0]);   // new nodes go into the then-block
///     g->insertConstant(IValue(int64_t(1)));
///   }
class WithInsertPoint {
 public:
  explicit WithInsertPoint(Node* n) : prev_(n->owningGraph()->insertPoint()) {
    n->owningGraph()->setInsertPoint(n);
  }
  explicit WithInsertPoint(Block* b) : WithInsertPoint(b->returnNode()) {}
  ~WithInsertPoint() { prev_->owningGraph()->setInsertPoint(prev_); }
  WithInsertPoint(const WithInsertPoint&) = delete;
  WithInsertPoint& operator=(const WithInsertPoint&) = delete;

 private:
  Node* prev_;
};

/// The value of a prim::Constant output, or nullopt for any other value.
std::optional<IValue> toIValue(const Value* v);

std::ostream& operator<<(std::ostream& out, const Graph& g);
std::ostream& operator<<(std::ostream& out, const Node& n);

}  // namespace torchless
