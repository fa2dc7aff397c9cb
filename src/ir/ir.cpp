// Graph, Block, Node, Value: construction and mutators. Printing is in ir_printer.cpp.
#include "ir/ir.h"

#include "core/error.h"
#include "ir/operator_matching.h"
#include "ir/operator_registry.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <unordered_set>

namespace torchless {
namespace {

// Topological positions (as PyTorch keeps them): every node of a block has an int64 position,
// increasing along the list, so isBefore is a comparison. Appends leave kAppendInterval gaps;
// an insertion between two nodes takes a point between them; when no room is left the block
// is re-indexed.
constexpr int64_t kLowerBound = INT64_MIN;
constexpr int64_t kUpperBound = INT64_MAX;
constexpr int64_t kMidPoint = 0;
constexpr int64_t kAppendInterval = int64_t(1) << 40;

bool isNumber(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

// ---- small types ------------------------------------------------------------------------------

std::string SourceLocation::str() const {
  return filename + ":" + std::to_string(line) + ":" + std::to_string(col);
}

std::string Scope::namesFromRoot(const std::string& separator) const {
  std::vector<const Scope*> chain;
  for (const Scope* s = this; s && !s->isRoot(); s = s->parent_.get()) chain.push_back(s);
  std::string out;
  for (size_t i = chain.size(); i-- > 0;) {
    out += chain[i]->name_.toUnqualString();
    if (i > 0) out += separator;
  }
  return out;
}

const char* toString(AttributeKind kind) {
  static const char* names[] = {"f", "fs", "c", "i",  "is", "s",   "ss",
                                "t", "ts", "g", "gs", "ty", "tys", "ival"};
  return names[static_cast<size_t>(kind)];
}

// ---- Value ----------------------------------------------------------------------------------

Value::Value(Node* node, size_t offset)
    : node_(node), offset_(offset), unique_(node->graph_->nextUnique_++) {
  node->graph_->allValues_.insert(this);
}

Graph* Value::owningGraph() { return node_->owningGraph(); }
const Graph* Value::owningGraph() const { return node_->owningGraph(); }

Value* Value::setType(TypePtr type) {
  TL_INTERNAL_ASSERT(type != nullptr, "setType(nullptr)");
  type_ = std::move(type);
  for (const Use& u : uses_) u.user->invalidateOperator();
  return this;
}

Value* Value::inferTypeFrom(const Tensor& t) {
  std::vector<std::optional<int64_t>> sizes(t.sizes().begin(), t.sizes().end());
  std::vector<std::optional<int64_t>> strides(t.strides().begin(), t.strides().end());
  return setType(TensorType::create(t.dtype(), std::move(sizes), std::move(strides),
                                    t.requiresGrad(), t.device()));
}

std::string Value::debugName() const {
  return hasDebugName() ? uniqueName_ : std::to_string(unique_);
}

std::string Value::debugNameBase() const {
  std::string name = debugName();
  size_t dot = name.find_last_of('.');
  if (dot != std::string::npos && dot + 1 < name.size() && isNumber(name.substr(dot + 1)))
    return name.substr(0, dot);
  return name;
}

bool Value::isValidName(const std::string& name) { return name.empty() || !isNumber(name); }

Value* Value::setDebugName(const std::string& name) {
  if (!isValidName(name)) throw Error(fmt::format("names may not be integers: {}", name));
  Graph* g = owningGraph();
  auto& names = g->uniqueNames_;
  if (hasDebugName()) {
    names.erase(uniqueName_);
    uniqueName_.clear();
  }
  if (name.empty()) return this;

  // Someone else has the name: rename them to base.N, the first free N at or above both the
  // name's own suffix and the last suffix handed out for this base.
  auto old = names.find(name);
  if (old != names.end()) {
    size_t suffix = 1;
    std::string base = name;
    size_t dot = name.find_last_of('.');
    // A suffix past 64 bits is part of the base (std::stoull threw out_of_range).
    if (dot != std::string::npos && dot + 1 < name.size() && isNumber(name.substr(dot + 1)) &&
        std::from_chars(name.data() + dot + 1, name.data() + name.size(), suffix).ec ==
            std::errc()) {
      base = name.substr(0, dot);
    } else {
      suffix = 1;
    }
    auto& suffixes = g->nameBaseSuffix_;
    auto it = suffixes.find(base);
    if (it != suffixes.end()) suffix = std::max(suffix, it->second + 1);
    std::string replacement;
    do {
      replacement = base + "." + std::to_string(suffix++);
    } while (names.count(replacement) > 0);
    suffixes[base] = suffix;
    old->second->setDebugName(replacement);
  }
  names[name] = this;
  uniqueName_ = name;
  return this;
}

Value* Value::copyMetadata(const Value* from) {
  if (from->type_) setType(from->type_);
  if (from->hasDebugName()) setDebugName(from->debugName());
  return this;
}

void Value::replaceFirstUseWith(Value* newValue) {
  TL_INTERNAL_ASSERT(owningGraph() == newValue->owningGraph(), "values of different graphs");
  TL_INTERNAL_ASSERT(!uses_.empty());
  Use u = uses_.front();
  u.user->inputs_[u.offset] = newValue;
  u.user->invalidateOperator();
  newValue->uses_.push_back(u);
  uses_.erase(uses_.begin());
}

void Value::replaceAllUsesWith(Value* newValue) {
  if (newValue == this) return;
  while (!uses_.empty()) replaceFirstUseWith(newValue);
}

void Value::replaceAllUsesAfterNodeWith(const Node* node, Value* newValue) {
  std::vector<Use> keep;
  std::vector<Use> move;
  for (const Use& u : uses_) (u.user->isAfter(node) ? move : keep).push_back(u);
  for (const Use& u : move) {
    u.user->inputs_[u.offset] = newValue;
    u.user->invalidateOperator();
    newValue->uses_.push_back(u);
  }
  uses_ = std::move(keep);
}

// ---- NodeList -------------------------------------------------------------------------------

NodeIterator& NodeIterator::operator++() {
  cur_ = reverse_ ? cur_->prev_ : cur_->next_;
  return *this;
}

void NodeIterator::destroyCurrent() {
  Node* n = cur_;
  cur_ = reverse_ ? cur_->next_ : cur_->prev_;
  n->destroy();
}

NodeIterator NodeList::begin() const {
  // The list is circular: return -> param -> first ... -> return. Forward iteration starts
  // after the param node (head_ is the return node); reverse starts before the return node.
  if (!reverse_) return NodeIterator(head_->next_->next_, false);
  return NodeIterator(head_->prev_->prev_, true);
}

NodeList NodeList::reverse() const {
  // Forward list's sentinel is the return node; the reverse list's is the param node.
  return NodeList(reverse_ ? head_->prev_ : head_->next_, !reverse_);
}

// ---- Node -----------------------------------------------------------------------------------

Node::Node(Graph* graph, Symbol kind) : kind_(kind), graph_(graph), scope_(graph->currentScope_) {
  graph->allNodes_.insert(this);
}

Value* Node::output() const {
  TL_INTERNAL_ASSERT(outputs_.size() == 1, "{} has {} outputs, expected 1", kind_.toQualString(),
                     outputs_.size());
  return outputs_[0];
}

Value* Node::input() const {
  TL_INTERNAL_ASSERT(inputs_.size() == 1, "{} has {} inputs, expected 1", kind_.toQualString(),
                     inputs_.size());
  return inputs_[0];
}

bool Node::hasUses() const {
  for (const Value* o : outputs_)
    if (o->hasUses()) return true;
  return false;
}

std::string Node::scopeName() const { return scope_ ? scope_->namesFromRoot() : std::string(); }

Use* Node::findUseForInput(size_t i) {
  auto& uses = inputs_[i]->uses_;
  auto it = std::find(uses.begin(), uses.end(), Use{this, i});
  TL_INTERNAL_ASSERT(it != uses.end(), "input {} of {} has no matching use", i,
                     kind_.toQualString());
  return &*it;
}

Value* Node::dropInput(size_t i) {
  TL_INTERNAL_ASSERT(i < inputs_.size());
  Value* v = inputs_[i];
  auto& uses = v->uses_;
  auto it = std::find(uses.begin(), uses.end(), Use{this, i});
  TL_INTERNAL_ASSERT(it != uses.end(), "input {} of {} has no matching use", i,
                     kind_.toQualString());
  uses.erase(it);
  inputs_[i] = nullptr;
  invalidateOperator();
  return v;
}

Value* Node::addInput(Value* v) {
  TL_INTERNAL_ASSERT(v != nullptr && v->owningGraph() == graph_, "input from another graph");
  inputs_.push_back(v);
  v->uses_.push_back(Use{this, inputs_.size() - 1});
  invalidateOperator();
  return v;
}

Value* Node::insertInput(size_t i, Value* v) {
  TL_INTERNAL_ASSERT(i <= inputs_.size());
  TL_INTERNAL_ASSERT(v != nullptr && v->owningGraph() == graph_, "input from another graph");
  for (size_t j = i; j < inputs_.size(); ++j) findUseForInput(j)->offset += 1;
  inputs_.insert(inputs_.begin() + static_cast<std::ptrdiff_t>(i), v);
  v->uses_.push_back(Use{this, i});
  invalidateOperator();
  return v;
}

Value* Node::replaceInput(size_t i, Value* v) {
  TL_INTERNAL_ASSERT(v != nullptr && v->owningGraph() == graph_, "input from another graph");
  Value* old = dropInput(i);
  inputs_[i] = v;
  v->uses_.push_back(Use{this, i});
  return old;
}

void Node::replaceInputWith(Value* from, Value* to) {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i] == from) replaceInput(i, to);
}

void Node::removeInput(size_t i) {
  dropInput(i);
  // Later inputs move left: their uses' offsets drop by one.
  for (size_t j = i + 1; j < inputs_.size(); ++j) findUseForInput(j)->offset -= 1;
  inputs_.erase(inputs_.begin() + static_cast<std::ptrdiff_t>(i));
}

void Node::removeAllInputs() {
  for (size_t i = 0; i < inputs_.size(); ++i) dropInput(i);
  inputs_.clear();
}

Value* Node::addOutput() {
  invalidateOperator();
  outputs_.push_back(new Value(this, outputs_.size()));
  return outputs_.back();
}

Value* Node::insertOutput(size_t i) {
  TL_INTERNAL_ASSERT(i <= outputs_.size());
  invalidateOperator();
  outputs_.insert(outputs_.begin() + static_cast<std::ptrdiff_t>(i), new Value(this, i));
  for (size_t j = i + 1; j < outputs_.size(); ++j) outputs_[j]->offset_ += 1;
  return outputs_[i];
}

void Node::eraseOutput(size_t i) {
  TL_INTERNAL_ASSERT(i < outputs_.size());
  Value* v = outputs_[i];
  TL_INTERNAL_ASSERT(!v->hasUses(), "erasing output %{} of {} which still has uses", v->debugName(),
                     kind_.toQualString());
  outputs_.erase(outputs_.begin() + static_cast<std::ptrdiff_t>(i));
  invalidateOperator();
  graph_->freeValue(v);
  for (size_t j = i; j < outputs_.size(); ++j) outputs_[j]->offset_ -= 1;
}

void Node::replaceAllUsesWith(Node* n) {
  TL_INTERNAL_ASSERT(outputs_.size() == n->outputs_.size());
  for (size_t i = 0; i < outputs_.size(); ++i) outputs_[i]->replaceAllUsesWith(n->outputs_[i]);
}

Node* Node::replaceWithNewSymbol(Symbol kind) {
  WithInsertPoint guard(this);
  Node* r = graph_->insertNode(graph_->create(kind, inputs_, 0));
  r->cloneMetadataFrom(*this);
  for (Value* o : outputs_) r->addOutput()->copyMetadata(o);
  replaceAllUsesWith(r);
  destroy();
  return r;
}

Block* Node::addBlock() {
  blocks_.push_back(new Block(graph_, this));
  return blocks_.back();
}

void Node::eraseBlock(size_t i) {
  TL_INTERNAL_ASSERT(i < blocks_.size());
  Block* b = blocks_[i];
  blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
  b->destroy();
}

Node* Node::insertBefore(Node* n) {
  TL_INTERNAL_ASSERT(n->inBlockList(), "insertBefore: target is not in a block");
  insertAfter(n->prev_);
  return this;
}

Node* Node::insertAfter(Node* n) {
  TL_INTERNAL_ASSERT(!inBlockList(), "{} is already inserted", kind_.toQualString());
  TL_INTERNAL_ASSERT(n->inBlockList() && n->owningBlock_, "insertAfter: target is not in a block");
  TL_INTERNAL_ASSERT(n->kind_ != prim::Return, "cannot insert after a block's return node");
  owningBlock_ = n->owningBlock_;
  Node* next = n->next_;
  n->next_ = this;
  prev_ = n;
  next_ = next;
  next->prev_ = this;
  assignTopoPosition();
  return this;
}

void Node::assignTopoPosition() {
  Block* b = owningBlock_;
  bool isFirst = prev_ == b->input_;
  bool isLast = next_ == b->output_;
  int64_t prevPos = prev_->topoPosition_;
  int64_t nextPos = next_->topoPosition_;
  if (isLast) {
    if (isFirst) {
      topoPosition_ = kMidPoint;
      return;
    }
    if (prevPos >= kUpperBound - kAppendInterval) {
      b->reIndexTopology();
      return;
    }
    topoPosition_ = prevPos + kAppendInterval;
  } else if (isFirst) {
    if (nextPos <= kLowerBound + kAppendInterval) {
      b->reIndexTopology();
      return;
    }
    topoPosition_ = nextPos - kAppendInterval;
  } else {
    // Both neighbours are real nodes, so their positions are within the re-indexed range and
    // the difference does not overflow.
    int64_t remaining = nextPos - prevPos;
    TL_INTERNAL_ASSERT(remaining > 0);
    if (remaining == 1) {
      b->reIndexTopology();
      return;
    }
    int64_t predicted = 0;
    if (next_ == graph_->insertBefore_) predicted = int64_t(graph_->predictedInsertCount_++);
    topoPosition_ = prevPos + std::max<int64_t>(1, remaining / (2 + predicted));
  }
}

void Node::removeFromList() {
  TL_INTERNAL_ASSERT(inBlockList());
  if (graph_->insertBefore_ == this) graph_->insertBefore_ = next_;
  owningBlock_ = nullptr;
  prev_->next_ = next_;
  next_->prev_ = prev_;
  next_ = prev_ = nullptr;
}

void Node::moveBefore(Node* n) {
  removeFromList();
  insertBefore(n);
}

void Node::moveAfter(Node* n) {
  removeFromList();
  insertAfter(n);
}

namespace {
bool isBeforeOrAfter(const Node* a, const Node* b, bool before) {
  // Walk up from a; for each ancestor, walk up from b looking for a shared block.
  for (const Node* lhs = a; lhs;
       lhs = lhs->owningBlock() ? lhs->owningBlock()->owningNode() : nullptr) {
    for (const Node* rhs = b; rhs;
         rhs = rhs->owningBlock() ? rhs->owningBlock()->owningNode() : nullptr) {
      if (!rhs->owningBlock()) break;
      if (lhs->owningBlock() == rhs->owningBlock()) {
        if (lhs == rhs) return false;  // a lies inside b's blocks or vice versa
        return before ? lhs->isBefore(rhs) : rhs->isBefore(lhs);
      }
    }
  }
  TL_INTERNAL_ASSERT(false, "isBefore: nodes share no block");
  return false;
}
}  // namespace

bool Node::isBefore(const Node* n) const {
  if (this == n) return false;
  if (owningBlock_ && owningBlock_ == n->owningBlock_) return topoPosition_ < n->topoPosition_;
  return isBeforeOrAfter(this, n, true);
}

bool Node::isAfter(const Node* n) const {
  if (this == n) return false;
  if (owningBlock_ && owningBlock_ == n->owningBlock_) return topoPosition_ > n->topoPosition_;
  return isBeforeOrAfter(this, n, false);
}

void Node::destroy() {
  while (!outputs_.empty()) eraseOutput(outputs_.size() - 1);
  while (!blocks_.empty()) eraseBlock(blocks_.size() - 1);
  removeAllInputs();
  if (inBlockList()) removeFromList();
  graph_->freeNode(this);
}

// -- attributes

bool Node::hasAttribute(Symbol name) const {
  for (const auto& a : attributes_)
    if (a.first == name) return true;
  return false;
}

std::vector<Symbol> Node::attributeNames() const {
  std::vector<Symbol> names;
  names.reserve(attributes_.size());
  for (const auto& a : attributes_) names.push_back(a.first);
  return names;
}

const AttributeValue& Node::attribute(Symbol name) const {
  for (const auto& a : attributes_)
    if (a.first == name) return a.second;
  throw Error(fmt::format("{} has no attribute '{}'", kind_.toQualString(), name.toUnqualString()));
}

AttributeKind Node::kindOf(Symbol name) const {
  return static_cast<AttributeKind>(attribute(name).index());
}

const AttributeValue& Node::attributeOfKind(Symbol name, AttributeKind kind) const {
  const AttributeValue& v = attribute(name);
  if (v.index() != static_cast<size_t>(kind))
    throw Error(fmt::format("attribute '{}' of {} is of kind {}, not {}", name.toUnqualString(),
                            kind_.toQualString(), toString(static_cast<AttributeKind>(v.index())),
                            toString(kind)));
  return v;
}

Node* Node::setAttribute(Symbol name, AttributeValue v) {
  for (auto& a : attributes_) {
    if (a.first == name) {
      a.second = std::move(v);
      return this;
    }
  }
  attributes_.emplace_back(name, std::move(v));
  return this;
}

Node* Node::removeAttribute(Symbol name) {
  auto it = std::find_if(attributes_.begin(), attributes_.end(),
                         [&](const auto& a) { return a.first == name; });
  TL_CHECK(it != attributes_.end(), "{} has no attribute '{}'", kind_.toQualString(),
           name.toUnqualString());
  attributes_.erase(it);
  return this;
}

Node* Node::copyAttributes(const Node& from) {
  attributes_.clear();
  for (const auto& a : from.attributes_) {
    // Subgraphs are deep-copied, as PyTorch's GraphAttr::clone does.
    if (a.second.index() == static_cast<size_t>(AttributeKind::g)) {
      const auto& g = std::get<std::shared_ptr<Graph>>(a.second);
      attributes_.emplace_back(a.first, AttributeValue(g ? g->copy() : nullptr));
    } else if (a.second.index() == static_cast<size_t>(AttributeKind::gs)) {
      std::vector<std::shared_ptr<Graph>> gs;
      for (const auto& g : std::get<std::vector<std::shared_ptr<Graph>>>(a.second))
        gs.push_back(g ? g->copy() : nullptr);
      attributes_.emplace_back(a.first, AttributeValue(std::move(gs)));
    } else {
      attributes_.push_back(a);
    }
  }
  return this;
}

void Node::cloneMetadataFrom(const Node& from) {
  copyAttributes(from);
  sourceRange_ = from.sourceRange_;
  scope_ = from.scope_;
}

bool Node::mustBeNone() const {
  // PyTorch's mustBeNone: a value-less constant typed NoneType, or typed Optional[T] (as
  // `annotate(Optional[T], None)` makes it).
  return kind_ == prim::Constant && attributes_.empty() && outputs_.size() == 1 &&
         outputs_[0]->type() && canHoldNone(*outputs_[0]->type()) &&
         outputs_[0]->type()->kind() != TypeKind::AnyType;
}

// Note [Op facts]: operators carry their facts in the op table; the IR constructs below have
// no entry there, and these are theirs (as in the first switch of torch::jit::Node::
// hasSideEffects).
namespace {

/// IR constructs that may write state reachable from their inputs: attribute stores, calls
/// (whose callee may do anything), and the `with` statement's enter / exit.
bool isWritingConstruct(Symbol kind) {
  switch (kind) {
    case prim::SetAttr:
    case prim::CallMethod:
    case prim::CallFunction:
    case prim::Enter:
    case prim::Exit: return true;
    default: return false;
  }
}

/// A fact of a node no overload matched (wrong arity or types, as in hand-built graphs): true
/// when every overload of its name has it, and for an unknown aten name ending in `_` (PyTorch
/// names in-place ops so) when `inPlace` counts.
template <typename Fact>
bool factOfEveryOverload(Symbol kind, bool inPlace, Fact fact) {
  const auto& overloads = OperatorRegistry::global().lookup(kind.toQualString());
  if (overloads.empty()) {
    if (!inPlace || !kind.is_aten()) return false;
    std::string_view n = kind.toUnqualString();
    return n.size() > 1 && n.back() == '_' && n.substr(0, 2) != "__";
  }
  return std::all_of(overloads.begin(), overloads.end(), fact);
}

}  // namespace

const OpInfo* Node::maybeOperator() const {
  if (opMatched_.load(std::memory_order_acquire)) return op_.load(std::memory_order_relaxed);
  const OpInfo* op = nullptr;
  switch (kind_) {
    case prim::Constant:
    case prim::If:
    case prim::Loop:
    case prim::Return:
    case prim::Param: break;
    default: op = matchOperatorUncached(this, OperatorRegistry::global());
  }
  op_.store(op, std::memory_order_relaxed);
  opMatched_.store(true, std::memory_order_release);
  return op;
}

bool Node::mayWrite() const {
  if (isWritingConstruct(kind_)) return true;
  if (const OpInfo* op = maybeOperator()) return op->mutates;
  return factOfEveryOverload(kind_, true, [](const OpInfo* o) { return o->mutates; });
}

bool Node::hasSideEffects() const {
  if (isWritingConstruct(kind_)) return true;
  if (const OpInfo* op = maybeOperator()) return op->hasSideEffects || op->mutates;
  return factOfEveryOverload(kind_, true,
                             [](const OpInfo* o) { return o->hasSideEffects || o->mutates; });
}

bool Node::isNondeterministic() const {
  if (const OpInfo* op = maybeOperator()) return op->nondeterministic;
  return factOfEveryOverload(kind_, false, [](const OpInfo* o) { return o->nondeterministic; });
}

// ---- Block ----------------------------------------------------------------------------------

Block::Block(Graph* graph, Node* owningNode)
    : graph_(graph),
      output_(new Node(graph, prim::Return)),
      input_(new Node(graph, prim::Param)),
      owningNode_(owningNode) {
  input_->next_ = output_;
  input_->prev_ = output_;
  output_->next_ = input_;
  output_->prev_ = input_;
  input_->owningBlock_ = this;
  output_->owningBlock_ = this;
  input_->topoPosition_ = kLowerBound;
  output_->topoPosition_ = kUpperBound;
  graph->allBlocks_.insert(this);
}

const std::vector<Value*>& Block::inputs() const { return input_->outputs(); }
const std::vector<Value*>& Block::outputs() const { return output_->inputs(); }
NodeList Block::nodes() const { return NodeList(output_, false); }

Value* Block::addInput(const std::string& name) {
  Value* v = input_->addOutput();
  v->setDebugName(name);
  return v;
}

Value* Block::insertInput(size_t i, const std::string& name) {
  Value* v = input_->insertOutput(i);
  v->setDebugName(name);
  return v;
}

void Block::eraseInput(size_t i) { input_->eraseOutput(i); }

size_t Block::registerOutput(Value* v) {
  output_->addInput(v);
  return outputs().size() - 1;
}

void Block::insertOutput(size_t i, Value* v) { output_->insertInput(i, v); }
void Block::eraseOutput(size_t i) { output_->removeInput(i); }
void Block::replaceOutput(size_t i, Value* v) { output_->replaceInput(i, v); }

Node* Block::appendNode(Node* n) {
  TL_INTERNAL_ASSERT(n->graph_ == graph_ && !n->inBlockList());
  n->insertBefore(output_);
  return n;
}

Node* Block::prependNode(Node* n) {
  TL_INTERNAL_ASSERT(n->graph_ == graph_ && !n->inBlockList());
  n->insertAfter(input_);
  return n;
}

void Block::reIndexTopology() {
  int64_t pos = kLowerBound;
  for (Node* n : nodes()) {
    TL_INTERNAL_ASSERT(pos <= kUpperBound - kAppendInterval, "block too large to index");
    pos += kAppendInterval;
    n->topoPosition_ = pos;
  }
}

void Block::cloneFrom(const Block* src, const std::function<Value*(Value*)>& valueMap) {
  std::unordered_map<const Value*, Value*> local;
  auto env = [&](Value* v) -> Value* {
    auto it = local.find(v);
    if (it != local.end()) return it->second;
    return valueMap(v);
  };
  for (Value* in : src->inputs()) local[in] = addInput()->copyMetadata(in);
  for (Node* n : src->nodes()) {
    Node* copy = appendNode(graph_->createClone(n, env));
    for (size_t i = 0; i < n->outputs().size(); ++i) local[n->outputs()[i]] = copy->outputs()[i];
  }
  for (Value* out : src->outputs()) registerOutput(env(out));
}

void Block::destroy() {
  // The return node is the list's sentinel: it must outlive the loop.
  output_->removeAllInputs();
  NodeList rev = nodes().reverse();
  for (auto it = rev.begin(), end = rev.end(); it != end; ++it) it.destroyCurrent();
  output_->destroy();
  input_->destroy();
  graph_->freeBlock(this);
}

// ---- Graph ----------------------------------------------------------------------------------

Graph::Graph() : Graph(std::make_shared<Scope>()) {}

Graph::Graph(ScopePtr scopeRoot) : currentScope_(std::move(scopeRoot)) {
  block_ = new Block(this, nullptr);
  insertBefore_ = block_->returnNode();
}

Graph::~Graph() {
  for (const Node* n : allNodes_) delete n;
  for (const Value* v : allValues_) delete v;
  for (const Block* b : allBlocks_) delete b;
}

void Graph::freeNode(Node* n) {
  auto it = allNodes_.find(n);
  TL_INTERNAL_ASSERT(it != allNodes_.end());
  allNodes_.erase(it);
  delete n;
}

void Graph::freeValue(Value* v) {
  v->setDebugName("");
  auto it = allValues_.find(v);
  TL_INTERNAL_ASSERT(it != allValues_.end());
  allValues_.erase(it);
  delete v;
}

void Graph::freeBlock(Block* b) {
  auto it = allBlocks_.find(b);
  TL_INTERNAL_ASSERT(it != allBlocks_.end());
  allBlocks_.erase(it);
  delete b;
}

Node* Graph::create(Symbol kind, size_t numOutputs) {
  Node* n = new Node(this, kind);
  for (size_t i = 0; i < numOutputs; ++i) n->addOutput();
  return n;
}

Node* Graph::create(Symbol kind, const std::vector<Value*>& inputs, size_t numOutputs) {
  Node* n = create(kind, numOutputs);
  for (Value* v : inputs) n->addInput(v);
  return n;
}

Node* Graph::createNone() {
  Node* n = create(prim::Constant);
  n->output()->setType(NoneType::get());
  return n;
}

Node* Graph::createUninitialized(TypePtr type) {
  Node* n = create(prim::Uninitialized);
  n->output()->setType(std::move(type));
  return n;
}

Node* Graph::createTuple(const std::vector<Value*>& values, TypePtr tupleType) {
  if (!tupleType) {
    std::vector<TypePtr> types;
    for (Value* v : values) types.push_back(v->type());
    tupleType = TupleType::create(std::move(types));
  }
  Node* n = create(prim::TupleConstruct, values);
  n->output()->setType(std::move(tupleType));
  return n;
}

Node* Graph::createTupleUnpack(Value* v) {
  const auto* tt = v->type() ? v->type()->cast<TupleType>() : nullptr;
  TL_INTERNAL_ASSERT(tt, "createTupleUnpack of a non-tuple value");
  Node* n = create(prim::TupleUnpack, {v}, 0);
  for (const auto& t : tt->elements()) n->addOutput()->setType(t);
  return n;
}

Node* Graph::createTupleIndex(Value* tup, Value* idx, TypePtr outputType) {
  Node* n = create(prim::TupleIndex, {tup, idx});
  n->output()->setType(std::move(outputType));
  return n;
}

Node* Graph::createList(TypePtr elementType, const std::vector<Value*>& values) {
  Node* n = create(prim::ListConstruct, values);
  n->output()->setType(ListType::create(std::move(elementType)));
  return n;
}

Node* Graph::createListUnpack(Value* v, size_t size) {
  const auto* lt = v->type() ? v->type()->cast<ListType>() : nullptr;
  TL_INTERNAL_ASSERT(lt, "createListUnpack of a non-list value");
  Node* n = create(prim::ListUnpack, {v}, 0);
  for (size_t i = 0; i < size; ++i) n->addOutput()->setType(lt->getElementType());
  return n;
}

Node* Graph::createDict(TypePtr keyType, TypePtr valueType, const std::vector<Value*>& keys,
                        const std::vector<Value*>& values) {
  TL_INTERNAL_ASSERT(keys.size() == values.size());
  Node* n = create(prim::DictConstruct, 1);
  for (size_t i = 0; i < keys.size(); ++i) {
    n->addInput(keys[i]);
    n->addInput(values[i]);
  }
  n->output()->setType(DictType::create(std::move(keyType), std::move(valueType)));
  return n;
}

Node* Graph::createGetAttr(Value* obj, const std::string& field, TypePtr type) {
  Node* n = create(prim::GetAttr, {obj});
  n->s_(attr::name, field);
  n->output()->setType(std::move(type));
  return n;
}

Node* Graph::createSetAttr(Value* obj, const std::string& field, Value* value) {
  Node* n = create(prim::SetAttr, {obj, value}, 0);
  n->s_(attr::name, field);
  return n;
}

Node* Graph::createUncheckedCast(Value* v, TypePtr type) {
  Node* n = create(prim::unchecked_cast, {v});
  n->output()->setType(std::move(type));
  return n;
}

Node* Graph::createClone(const Node* n, const std::function<Value*(Value*)>& valueMap,
                         bool copyBlocks) {
  Node* r = create(n->kind(), 0);
  for (const Value* o : n->outputs()) r->addOutput()->copyMetadata(o);
  r->cloneMetadataFrom(*n);
  for (Value* in : n->inputs()) r->addInput(valueMap(in));
  if (copyBlocks)
    for (const Block* b : n->blocks()) r->addBlock()->cloneFrom(b, valueMap);
  return r;
}

Node* Graph::insertNode(Node* n) {
  TL_INTERNAL_ASSERT(insertBefore_->inBlockList(), "insertion point is not in a block");
  return n->insertBefore(insertBefore_);
}

void Graph::setInsertPoint(Node* n) {
  TL_INTERNAL_ASSERT(n->owningGraph() == this && n->inBlockList());
  insertBefore_ = n;
  predictedInsertCount_ = 0;
}

void Graph::setInsertPoint(Block* b) {
  TL_INTERNAL_ASSERT(b->owningGraph() == this);
  setInsertPoint(b->returnNode());
}

namespace {

// Each shared container is visited once (Note [Shared values], core/ivalue.cpp): a pickle's
// tuple DAG of 2^100 leaves is checked in time linear in its nodes. A container met again
// was (or is being) checked; had it failed, the walk would have stopped there.
bool insertableIValue(const IValue& v, std::unordered_set<const void*>& seen) {
  switch (v.tag()) {
    case IValue::Tag::Int:
    case IValue::Tag::None:
    case IValue::Tag::Bool:
    case IValue::Tag::Double:
    case IValue::Tag::ComplexDouble:
    case IValue::Tag::String:
    case IValue::Tag::Device:
    case IValue::Tag::Enum: return true;
    case IValue::Tag::Tensor: return !v.toTensor().requiresGrad();
    case IValue::Tag::List:
      if (!seen.insert(v.toList().get()).second) return true;
      for (const auto& e : v.toList()->list)
        if (!insertableIValue(e, seen)) return false;
      return true;
    case IValue::Tag::Tuple:
      if (!seen.insert(v.toTuple().get()).second) return true;
      for (const auto& e : v.toTuple()->elements)
        if (!insertableIValue(e, seen)) return false;
      return true;
    case IValue::Tag::Dict:
      if (!seen.insert(v.toDict().get()).second) return true;
      for (const auto& [k, x] : v.toDict()->entries())
        if (!insertableIValue(k, seen) || !insertableIValue(x, seen)) return false;
      return true;
    default: return false;
  }
}

bool insertableIValue(const IValue& v) {
  std::unordered_set<const void*> seen;
  return insertableIValue(v, seen);
}

}  // namespace

Value* Graph::insertConstant(const IValue& val, SourceLocationPtr loc, ScopePtr scope) {
  Node* n = create(prim::Constant);
  Value* out = n->output();
  switch (val.tag()) {
    case IValue::Tag::Tensor: {
      Tensor t = val.toTensor();
      if (t.requiresGrad()) {
        n->destroy();
        throw Error("cannot insert a tensor that requires grad as a constant");
      }
      out->inferTypeFrom(t);
      n->t_(attr::value, t);
      break;
    }
    case IValue::Tag::Int:
      n->i_(attr::value, val.toInt());
      out->setType(IntType::get());
      break;
    case IValue::Tag::Double:
      n->f_(attr::value, val.toDouble());
      out->setType(FloatType::get());
      break;
    case IValue::Tag::ComplexDouble:
      n->c_(attr::value, val.toComplexDouble());
      out->setType(ComplexType::get());
      break;
    case IValue::Tag::Bool:
      n->i_(attr::value, val.toBool() ? 1 : 0);
      out->setType(BoolType::get());
      break;
    case IValue::Tag::String:
      n->s_(attr::value, val.toStringRef());
      out->setType(StringType::get());
      break;
    case IValue::Tag::Device:
      n->s_(attr::value, val.toDevice().str());
      out->setType(DeviceObjType::get());
      break;
    case IValue::Tag::None: out->setType(NoneType::get()); break;
    case IValue::Tag::List:
    case IValue::Tag::Tuple:
    case IValue::Tag::Dict:
    case IValue::Tag::Enum:
      if (!insertableIValue(val)) {
        n->destroy();
        throw Error(fmt::format("cannot insert a {} holding non-constant values as a constant",
                                val.tagName()));
      }
      n->ival_(attr::value, val);
      out->setType(val.type());
      break;
    case IValue::Tag::Object:
      // TorchBind objects (xnnpack contexts, packed params) are constants in PyTorch's graphs
      // (CONSTANTS.cN of mobile and quantized archives); other objects are not.
      if (val.toObject()->type->name().rfind("__torch__.torch.classes.", 0) != 0) {
        n->destroy();
        throw Error(fmt::format("cannot insert an object of class '{}' as a constant",
                                val.toObject()->type->name()));
      }
      n->ival_(attr::value, val);
      out->setType(val.type());
      break;
    default: n->destroy(); throw Error(fmt::format("unsupported constant kind: {}", val.tagName()));
  }
  if (loc) n->setSourceRange(std::move(loc));
  if (scope) n->setScope(std::move(scope));
  return insertNode(n)->output();
}

std::shared_ptr<Graph> Graph::copy() const {
  auto g = std::make_shared<Graph>(currentScope_);
  g->block()->cloneFrom(block_, [](Value* v) -> Value* {
    TL_INTERNAL_ASSERT(false, "Graph::copy: value %{} is used but not defined in the graph",
                       v->debugName());
    return nullptr;
  });
  return g;
}

std::optional<IValue> toIValue(const Value* v) {
  const Node* n = v->node();
  if (n->kind() != prim::Constant || !v->type()) return std::nullopt;
  if (!n->hasAttribute(attr::value)) {
    // None, typed NoneType or Optional[T] (`annotate(Optional[T], None)`).
    if (canHoldNone(*v->type()) && v->type()->kind() != TypeKind::AnyType) return IValue();
    return std::nullopt;
  }
  const TypePtr& type = v->type();
  switch (n->kindOf(attr::value)) {
    case AttributeKind::t: return IValue(n->t(attr::value));
    case AttributeKind::i:
      if (type->kind() == TypeKind::BoolType) return IValue(n->i(attr::value) != 0);
      return IValue(n->i(attr::value));
    case AttributeKind::f: return IValue(n->f(attr::value));
    case AttributeKind::c: return IValue(n->c(attr::value));
    case AttributeKind::s:
      if (type->kind() == TypeKind::DeviceObjType) return IValue(Device::parse(n->s(attr::value)));
      return IValue(n->s(attr::value));
    case AttributeKind::ival: return n->ival(attr::value);
    case AttributeKind::is: {
      std::vector<IValue> xs;
      for (int64_t x : n->is(attr::value)) xs.emplace_back(x);
      return IValue(ListImpl::create(IntType::get(), std::move(xs)));
    }
    case AttributeKind::fs: {
      std::vector<IValue> xs;
      for (double x : n->fs(attr::value)) xs.emplace_back(x);
      return IValue(ListImpl::create(FloatType::get(), std::move(xs)));
    }
    case AttributeKind::ss: {
      std::vector<IValue> xs;
      for (const auto& x : n->ss(attr::value)) xs.emplace_back(x);
      return IValue(ListImpl::create(StringType::get(), std::move(xs)));
    }
    default: return std::nullopt;
  }
}

}  // namespace torchless
