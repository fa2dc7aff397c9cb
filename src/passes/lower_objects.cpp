// lower_local_objects: TorchScript class instances a graph creates and only writes and reads
// become the values written. torchvision's detection models build an ImageList
// (`ImageList(images, image_sizes)`: after inlining, prim::CreateObject and two prim::SetAttr)
// and read `images.tensors` later; nothing but the graph itself ever sees the object, so each
// prim::GetAttr is the value the last prim::SetAttr before it stored (PyTorch's export scripts
// around it the same way: torch.onnx cannot take class objects either).
//
//   %o : __torch__.ImageList = prim::CreateObject()
//    = prim::SetAttr[name="tensors"](%o, %x)              ==>   %y = aten::relu(%x)
//   %t : Tensor = prim::GetAttr[name="tensors"](%o)
//   %y = aten::relu(%t)
//
// An object qualifies when every use is a SetAttr on it (as the object, all in the block that
// creates it) or a GetAttr of it after an attribute was set (in that block or blocks nested
// in later nodes), so the last write before each read is known statically. Tuples that only
// pack and unpack an object are lowered first (lower_tuples). Any other use (the object
// returned, put in a list, passed to an op, written in a branch) leaves it as it is.
#include "passes/passes.h"

#include <map>
#include <string>
#include <vector>

namespace torchless::passes {

const char* const kLowerLocalObjectsDescription =
    "Replaces reads of attributes of class objects the graph creates (prim::CreateObject) and "
    "only writes in the creating block and reads by the values last written; the object goes "
    "when nothing else uses it.";

namespace {

// Whether `n` is `b` or nested in a node of `b`, and the node of `b` that holds it.
const Node* ancestorIn(const Node* n, const Block* b) {
  while (n) {
    if (n->owningBlock() == b) return n;
    const Node* parent = n->owningBlock()->owningNode();
    n = parent;
  }
  return nullptr;
}

bool lowerObject(Node* create) {
  Value* obj = create->output();
  Block* home = create->owningBlock();
  for (const Use& u : obj->uses()) {
    const Node* user = u.user;
    if (user->kind() == prim::SetAttr) {
      if (u.offset != 0 || user->owningBlock() != home) return false;
    } else if (user->kind() == prim::GetAttr) {
      if (!ancestorIn(user, home)) return false;
    } else {
      return false;
    }
  }
  // Program order in `home`: each read takes the last write before the node holding it.
  std::map<std::string, Value*> current;
  std::vector<Node*> writes;
  std::vector<std::pair<Node*, Value*>> reads;
  std::map<const Node*, std::vector<Node*>> readsUnder;  // node of `home` -> reads in it
  for (const Use& u : obj->uses())
    if (u.user->kind() == prim::GetAttr) readsUnder[ancestorIn(u.user, home)].push_back(u.user);
  for (Node* n = create->next(); n != home->returnNode(); n = n->next()) {
    if (auto it = readsUnder.find(n); it != readsUnder.end())
      for (Node* r : it->second) {
        auto cur = current.find(r->s(attr::name));
        if (cur == current.end()) return false;  // read before any write: the class default
        reads.emplace_back(r, cur->second);
      }
    if (n->kind() == prim::SetAttr && n->input(0) == obj) {
      current[n->s(attr::name)] = n->input(1);
      writes.push_back(n);
    }
  }
  for (auto& [r, v] : reads) {
    r->output()->replaceAllUsesWith(v);
    r->destroy();
  }
  for (Node* w : writes) w->destroy();
  create->destroy();
  return true;
}

void collectCreates(Block* b, std::vector<Node*>& out) {
  for (Node* n : b->nodes()) {
    if (n->kind() == prim::CreateObject) out.push_back(n);
    for (Block* inner : n->blocks()) collectCreates(inner, out);
  }
}

}  // namespace

bool lowerLocalObjects(Graph& graph) {
  std::vector<Node*> creates;
  collectCreates(graph.block(), creates);
  if (creates.empty()) return false;
  bool changed = lowerTuples(graph);
  creates.clear();
  collectCreates(graph.block(), creates);
  for (Node* c : creates) changed |= lowerObject(c);
  return changed;
}

}  // namespace torchless::passes
