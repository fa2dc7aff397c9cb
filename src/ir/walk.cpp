// The block walker (walk.h).
#include "ir/walk.h"

namespace torchless {

bool visitNodes(Block* block, const std::function<bool(Node*)>& visit) {
  bool changed = false;
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    Node* n = *it;
    ++it;  // the visit may destroy n
    for (Block* b : n->blocks()) changed |= visitNodes(b, visit);
    changed |= visit(n);
  }
  return changed;
}

bool visitNodes(Graph& graph, const std::function<bool(Node*)>& visit) {
  return visitNodes(graph.block(), visit);
}

void forEachNode(Block* block, const std::function<void(Node*)>& fn) {
  for (Node* n : block->nodes()) {
    fn(n);
    for (Block* b : n->blocks()) forEachNode(b, fn);
  }
}

bool anyNode(const Block* block, const std::function<bool(const Node*)>& pred) {
  for (const Node* n : block->nodes()) {
    if (pred(n)) return true;
    for (const Block* b : n->blocks())
      if (anyNode(b, pred)) return true;
  }
  return false;
}

}  // namespace torchless
