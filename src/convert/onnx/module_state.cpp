// Module state lowered for export; see module_state.h.
#include "convert/onnx/module_state.h"

#include "convert/conversion_ctx.h"
#include "core/error.h"
#include "ops/shape.h"

#include <functional>
#include <map>
#include <set>
#include <unordered_map>

namespace torchless::onnx_export {

namespace {

using Slot = ModuleStateSlot;

class StateLowering {
 public:
  StateLowering(Graph& g, const ObjectPtr& self) : g_(g) {
    paths_[g.inputs()[0]] = "";
    objects_[g.inputs()[0]] = self;
  }

  std::vector<Slot> run() {
    collectObjects(g_.block());
    collectWrites(g_.block());
    if (order_.empty()) return {};
    makeInitialValues();
    std::map<std::string, Value*> cur = initial_;
    rename(g_.block(), cur);
    WithInsertPoint guard(g_.returnNode());
    std::vector<Slot> out;
    for (const std::string& p : order_) {
      Slot& s = slots_.at(p);
      if (s.kind == Slot::Kind::Scalar) continue;
      Value* v = cur.at(p);
      if (s.kind == Slot::Kind::TensorList) {
        Node* st = g_.create(Symbol::aten("stack"), {v, g_.insertConstant(IValue(int64_t(0)))});
        st->output()->setType(TensorType::get());
        v = g_.insertNode(st)->output();
      }
      s.output = g_.registerOutput(v);
      out.push_back(s);
    }
    for (const std::string& p : order_)
      if (slots_.at(p).kind == Slot::Kind::Scalar) out.push_back(slots_.at(p));
    return out;
  }

 private:
  // The attribute path a GetAttr / SetAttr node reads or writes; empty when its object is not
  // reached from self by attribute reads.
  std::string attrPath(const Node* n) const {
    auto it = paths_.find(n->input(0));
    if (it == paths_.end()) return {};
    const std::string& name = n->s(attr::name);
    return it->second.empty() ? name : it->second + "." + name;
  }

  // Records the submodule objects reached from self (pre-order: reads come before their uses).
  void collectObjects(Block* b) {
    for (Node* n : b->nodes()) {
      for (Block* s : n->blocks()) collectObjects(s);
      if (n->kind() != prim::GetAttr) continue;
      auto obj = objects_.find(n->input(0));
      if (obj == objects_.end()) continue;
      const IValue& v = obj->second->getAttr(n->s(attr::name));
      if (!v.isObject()) continue;
      paths_[n->output()] = attrPath(n);
      objects_[n->output()] = v.toObject();
    }
  }

  void collectWrites(Block* b) {
    for (Node* n : b->nodes()) {
      for (Block* s : n->blocks()) collectWrites(s);
      if (n->kind() != prim::SetAttr) continue;
      auto obj = objects_.find(n->input(0));
      // An object the method creates is no state of the module: export lowers it (passes/
      // lower_objects.cpp) once branches not taken (training-only ones) are gone.
      if (obj == objects_.end() && n->input(0)->node()->kind() == prim::CreateObject) continue;
      if (obj == objects_.end())
        throw Error(fmt::format("prim::SetAttr of '{}' writes an object that is not a submodule "
                                "of the exported module; its state cannot be exported",
                                n->s(attr::name)),
                    convert::nodePlace(*n));
      const std::string p = attrPath(n);
      if (slots_.count(p)) continue;
      Slot s;
      s.path = p;
      s.initial = obj->second->getAttr(n->s(attr::name));
      s.kind = kindOf(s.initial, *n, p);
      slots_[p] = s;
      order_.push_back(p);
      firstWrite_[p] = n;
    }
  }

  static Slot::Kind kindOf(const IValue& v, const Node& n, const std::string& p) {
    if (v.isTensor()) return Slot::Kind::Tensor;
    if (v.isInt() || v.isDouble() || v.isBool() || v.isNone() || v.isString())
      return Slot::Kind::Scalar;
    if (v.isList()) {
      const auto& items = v.toList()->list;
      if (items.empty())
        throw Error(fmt::format("the module attribute '{}' that the method writes is an empty "
                                "list: its elements' shape is unknown, so it cannot become a "
                                "state input",
                                p),
                    convert::nodePlace(n));
      for (const IValue& e : items)
        if (!e.isTensor() || e.toTensor().sizes() != items[0].toTensor().sizes() ||
            e.toTensor().dtype() != items[0].toTensor().dtype())
          throw Error(fmt::format("the module attribute '{}' that the method writes is a list "
                                  "whose elements are not tensors of one shape and dtype; only "
                                  "such lists become state inputs (stacked)",
                                  p),
                      convert::nodePlace(n));
      return Slot::Kind::TensorList;
    }
    throw Error(fmt::format("the module attribute '{}' that the method writes holds a {}; only "
                            "tensors, lists of tensors and numbers can be exported as state",
                            p, v.tagName()),
                convert::nodePlace(n));
  }

  void makeInitialValues() {
    WithInsertPoint guard(g_.nodes().empty() ? g_.returnNode() : g_.nodes().front());
    for (const std::string& p : order_) {
      Slot& s = slots_.at(p);
      if (s.kind == Slot::Kind::Scalar) {
        initial_[p] = g_.insertConstant(s.initial);
        continue;
      }
      Value* in = g_.addInput();
      in->setType(TensorType::get());
      in->setDebugName(p);
      s.input = g_.inputs().size() - 1;
      if (s.kind == Slot::Kind::Tensor) {
        initial_[p] = in;
        continue;
      }
      std::vector<Tensor> items;
      for (const IValue& e : s.initial.toList()->list) items.push_back(e.toTensor());
      s.initial = IValue(ops::stack(items, 0));
      Node* un = g_.create(Symbol::aten("unbind"), {in, g_.insertConstant(IValue(int64_t(0)))});
      un->output()->setType(ListType::ofTensors());
      un->setSourceRange(firstWrite_.at(p)->sourceRange());
      initial_[p] = g_.insertNode(un)->output();
    }
  }

  // The state paths written in `b` and its nested blocks.
  std::set<std::string> writtenIn(const Block* b) const {
    std::set<std::string> out;
    std::function<void(const Block*)> walk = [&](const Block* blk) {
      for (const Node* n : blk->nodes()) {
        if (n->kind() == prim::SetAttr) {
          std::string p = attrPath(n);
          if (slots_.count(p)) out.insert(p);
        }
        for (const Block* s : n->blocks()) walk(s);
      }
    };
    walk(b);
    return out;
  }

  // Replaces reads of state attributes by their current value and writes by a new current
  // value; If and Loop nodes whose blocks write carry the values out.
  void rename(Block* b, std::map<std::string, Value*>& cur) {
    for (auto it = b->nodes().begin(); it != b->nodes().end(); ++it) {
      Node* n = *it;
      if (n->kind() == prim::GetAttr || n->kind() == prim::SetAttr) {
        const std::string p = attrPath(n);
        if (!slots_.count(p)) continue;
        if (n->kind() == prim::GetAttr)
          n->output()->replaceAllUsesWith(cur.at(p));
        else
          cur[p] = n->input(1);
        it.destroyCurrent();
        continue;
      }
      if (n->kind() == prim::If) {
        std::set<std::string> w;
        for (Block* s : n->blocks()) w.merge(writtenIn(s));
        for (Block* s : n->blocks()) {
          std::map<std::string, Value*> branch = cur;
          rename(s, branch);
          for (const std::string& p : w) s->registerOutput(branch.at(p));
        }
        for (const std::string& p : w) {
          Value* o = n->addOutput();
          o->setType(cur.at(p)->type());
          cur[p] = o;
        }
        continue;
      }
      if (n->kind() == prim::Loop) {
        Block* body = n->blocks()[0];
        const std::set<std::string> w = writtenIn(body);
        std::map<std::string, Value*> inner = cur;
        for (const std::string& p : w) {
          n->addInput(cur.at(p));
          Value* carried = body->addInput();
          carried->setType(cur.at(p)->type());
          inner[p] = carried;
        }
        rename(body, inner);
        for (const std::string& p : w) {
          body->registerOutput(inner.at(p));
          Value* o = n->addOutput();
          o->setType(cur.at(p)->type());
          cur[p] = o;
        }
        continue;
      }
      for (Block* s : n->blocks()) {
        TL_CHECK(writtenIn(s).empty(), "{} writes module state inside a {} block",
                 n->kind().toQualString(), n->kind().toQualString());
        std::map<std::string, Value*> inner = cur;
        rename(s, inner);
      }
    }
  }

  Graph& g_;
  std::unordered_map<const Value*, std::string> paths_;
  std::unordered_map<const Value*, ObjectPtr> objects_;
  std::map<std::string, Slot> slots_;
  std::vector<std::string> order_;
  std::map<std::string, const Node*> firstWrite_;
  std::map<std::string, Value*> initial_;
};

}  // namespace

std::vector<ModuleStateSlot> lowerModuleState(Graph& g, const ObjectPtr& self) {
  TL_CHECK(!g.inputs().empty(), "the method graph has no self input");
  return StateLowering(g, self).run();
}

}  // namespace torchless::onnx_export
