#include "ir/verifier.h"

#include "core/error.h"
#include "core/stack_guard.h"

#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace torchless {
namespace {

class Verifier {
 public:
  explicit Verifier(const Graph& g) : graph_(g) {}

  void run() {
    collectNodes(graph_.block());
    checkBlock(graph_.block());
  }

 private:
  [[noreturn]] void fail(const Node* n, const std::string& message) {
    std::ostringstream ss;
    if (n) n->print(ss, 0, nullptr, true, true, false, /*printBody=*/false);
    throw Error("IR verification failed: " + message, {}, ss.str());
  }

  void collectNodes(const Block* b) {
    checkStack("verify: blocks");  // Note [Stack guard]
    live_.insert(b->returnNode());
    live_.insert(b->paramNode());
    for (const Node* n : b->nodes()) {
      live_.insert(n);
      for (const Block* sub : n->blocks()) collectNodes(sub);
    }
  }

  static std::string name(const Value* v) { return "%" + v->debugName(); }

  void checkInputs(const Node* n) {
    const auto& ins = n->inputs();
    for (size_t i = 0; i < ins.size(); ++i) {
      const Value* v = ins[i];
      if (!v) fail(n, fmt::format("input {} of {} is null", i, n->kind().toQualString()));
      if (!defined_.count(v))
        fail(n, fmt::format("{} is used by {} but not defined before it in an enclosing block",
                            name(v), n->kind().toQualString()));
      if (!hasUse(v, n, i))
        fail(n, fmt::format("input {} ({}) of {} is missing from the value's uses", i, name(v),
                            n->kind().toQualString()));
    }
  }

  // Whether v's uses hold (n, i). A value used by many nodes (a constant feeding 100k adds)
  // gets a set of its uses, built once: searching its list per use was quadratic.
  bool hasUse(const Value* v, const Node* n, size_t i) {
    const auto& uses = v->uses();
    if (uses.size() <= 16) {
      for (const Use& u : uses)
        if (u.user == n && u.offset == i) return true;
      return false;
    }
    auto [it, fresh] = useSets_.try_emplace(v);
    if (fresh)
      for (const Use& u : uses) it->second.insert({u.user, u.offset});
    return it->second.count({n, i}) != 0;
  }

  void defineOutputs(const Node* n, std::vector<const Value*>& scope) {
    const auto& outs = n->outputs();
    for (size_t i = 0; i < outs.size(); ++i) {
      const Value* v = outs[i];
      if (v->node() != n || v->offset() != i)
        fail(n, fmt::format("output {} ({}) does not point back to its node", i, name(v)));
      if (!v->type()) fail(n, fmt::format("{} has no type", name(v)));
      for (const Use& u : v->uses()) {
        if (!live_.count(u.user))
          fail(n, fmt::format("{} has a use by a node that is not in the graph", name(v)));
        if (u.offset >= u.user->inputs().size() || u.user->inputs()[u.offset] != v)
          fail(n, fmt::format("{} has a use ({}, {}) that does not match the user's inputs",
                              name(v), u.user->kind().toQualString(), u.offset));
      }
      if (!defined_.insert(v).second) fail(n, fmt::format("{} is defined twice", name(v)));
      scope.push_back(v);
    }
  }

  static bool subtype(const TypePtr& a, const TypePtr& b) { return !a || !b || a->isSubtypeOf(*b); }

  void checkControlFlow(const Node* n) {
    if (n->kind() == prim::If) {
      if (n->inputs().size() != 1 || n->blocks().size() != 2)
        fail(n, "prim::If needs one condition input and two blocks");
      for (const Block* b : n->blocks()) {
        if (!b->inputs().empty()) fail(n, "prim::If blocks take no inputs");
        if (b->outputs().size() != n->outputs().size())
          fail(n, fmt::format("prim::If has {} outputs but a block returns {}", n->outputs().size(),
                              b->outputs().size()));
        for (size_t i = 0; i < b->outputs().size(); ++i)
          if (!subtype(b->outputs()[i]->type(), n->outputs()[i]->type()))
            fail(n, fmt::format("prim::If output {} has type {} but a block returns {}", i,
                                n->outputs()[i]->type()->str(), b->outputs()[i]->type()->str()));
      }
    } else if (n->kind() == prim::Loop) {
      if (n->blocks().size() != 1 || n->inputs().size() < 2)
        fail(n, "prim::Loop needs (max trip count, condition, carried...) and one block");
      size_t carried = n->inputs().size() - 2;
      const Block* body = n->blocks()[0];
      if (body->inputs().size() != 1 + carried)
        fail(n, fmt::format("prim::Loop carries {} values but its block takes {} inputs "
                            "(expected iteration + carried)",
                            carried, body->inputs().size()));
      if (body->outputs().size() != 1 + carried)
        fail(n, fmt::format("prim::Loop carries {} values but its block returns {} "
                            "(expected condition + carried)",
                            carried, body->outputs().size()));
      if (n->outputs().size() != carried)
        fail(n, fmt::format("prim::Loop carries {} values but has {} outputs", carried,
                            n->outputs().size()));
      for (size_t i = 0; i < carried; ++i) {
        const TypePtr& slot = body->inputs()[1 + i]->type();
        if (!subtype(n->inputs()[2 + i]->type(), slot) ||
            !subtype(body->outputs()[1 + i]->type(), slot) ||
            !subtype(slot, n->outputs()[i]->type()))
          fail(n, fmt::format("prim::Loop carried value {} has disagreeing types", i));
      }
    } else if (n->kind() == prim::Constant) {
      if (!n->inputs().empty() || n->outputs().size() != 1)
        fail(n, "prim::Constant takes no inputs and has one output");
    }
  }

  void checkBlock(const Block* b) {
    checkStack("verify: blocks");
    std::vector<const Value*> scope;
    const Node* param = b->paramNode();
    if (param->owningBlock() != b) fail(param, "a block's param node does not know its block");
    defineOutputs(param, scope);
    const Node* prev = param;
    for (const Node* n : b->nodes()) {
      if (n->owningBlock() != b) fail(n, "node does not know its block");
      if (n->owningGraph() != &graph_) fail(n, "node belongs to another graph");
      if (n->prev() != prev || prev->next() != n) fail(n, "node list is badly linked");
      if (n->kind() == prim::Return || n->kind() == prim::Param)
        fail(n, "prim::Return / prim::Param inside a node list");
      if (!prev->isBefore(n) && prev != param) fail(n, "topological positions out of order");
      checkInputs(n);
      for (const Block* sub : n->blocks()) {
        if (sub->owningNode() != n) fail(n, "sub-block does not know its node");
        checkBlock(sub);
      }
      checkControlFlow(n);
      defineOutputs(n, scope);
      prev = n;
    }
    checkInputs(b->returnNode());
    // Leaving the block: its values go out of scope.
    for (const Value* v : scope) defined_.erase(v);
  }

  const Graph& graph_;
  std::unordered_set<const Node*> live_;
  std::unordered_set<const Value*> defined_;
  struct UseHash {
    size_t operator()(const std::pair<const Node*, size_t>& u) const {
      return std::hash<const Node*>()(u.first) * 31 + u.second;
    }
  };
  std::unordered_map<const Value*, std::unordered_set<std::pair<const Node*, size_t>, UseHash>>
      useSets_;
};

}  // namespace

void verify(const Graph& graph) { Verifier(graph).run(); }

}  // namespace torchless
