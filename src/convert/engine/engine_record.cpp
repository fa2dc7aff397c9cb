// Engine records (engine_record.h): the network as JSON, the graph as text with its tensor
// constants moved into a weight list.
#include "convert/engine/engine_record.h"

#include "convert/engine/engine_ctx.h"
#include "core/error.h"
#include "ir/ir_parser.h"
#include "ir/operator_matching.h"
#include "runtime/kernel.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>

namespace torchless::engine {

using json = nlohmann::json;

namespace {

// Weights by identity, so a tensor shared by the graph and a layer is stored once.
struct WeightTable {
  std::vector<Tensor>* out;
  std::unordered_map<const void*, size_t> index;
  size_t add(const Tensor& t) {
    auto it = index.find(t.impl().get());
    if (it != index.end()) return it->second;
    out->push_back(t);
    return index[t.impl().get()] = out->size() - 1;
  }
};

json ivalueJson(const IValue& v, WeightTable& w) {
  if (v.isTensor()) return json{{"tensor", w.add(v.toTensor())}};
  if (v.isInt()) return json{{"int", v.toInt()}};
  if (v.isDouble()) return json{{"float", v.toDouble()}};
  if (v.isBool()) return json{{"bool", v.toBool()}};
  if (v.isNone()) return json{{"none", true}};
  if (v.isString()) return json{{"str", v.toStringRef()}};
  if (v.isList()) {
    json a = json::array();
    for (const IValue& e : v.toList()->list) a.push_back(ivalueJson(e, w));
    return json{{"list", a}, {"type", v.type()->str()}};
  }
  throw Error(fmt::format("an engine constant of kind {} cannot be serialized", v.tagName()));
}

IValue ivalueFrom(const json& j, const std::vector<Tensor>& weights) {
  if (j.contains("tensor")) return IValue(weights.at(j.at("tensor").get<size_t>()));
  if (j.contains("int")) return IValue(j.at("int").get<int64_t>());
  if (j.contains("float")) return IValue(j.at("float").get<double>());
  if (j.contains("bool")) return IValue(j.at("bool").get<bool>());
  if (j.contains("none")) return IValue();
  if (j.contains("str")) return IValue(j.at("str").get<std::string>());
  throw Error("unknown constant in the engine network");
}

// A float as JSON: infinite bounds (a clamp with one bound) as "inf" / "-inf", which JSON's
// numbers cannot hold (nlohmann writes them as null).
json floatJson(float v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

float floatFrom(const json& j) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "inf") return std::numeric_limits<float>::infinity();
    if (s == "-inf") return -std::numeric_limits<float>::infinity();
    throw Error(fmt::format("'{}' is not a number", s));
  }
  return j.get<float>();
}

json optTensor(const std::optional<Tensor>& t, WeightTable& w) {
  return t ? json(w.add(*t)) : json(nullptr);
}

std::optional<Tensor> optTensorFrom(const json& j, const std::vector<Tensor>& weights) {
  if (j.is_null()) return std::nullopt;
  return weights.at(j.get<size_t>());
}

// The graph with its tensor constants as trailing inputs %weight_<k> (weights[k]).
std::string graphText(const Graph& source, WeightTable& w, size_t& numInputs) {
  std::shared_ptr<Graph> g = source.copy();
  numInputs = g->inputs().size();
  std::vector<Node*> constants, lists, packed;
  for (Node* n : g->block()->nodes()) {
    if (n->kind() != prim::Constant) continue;
    const TypePtr& t = n->output()->type();
    if (t->kind() == TypeKind::ClassType) {
      const std::string& cls = t->cast<ClassType>()->name();
      if (cls != "__torch__.torch.classes.quantized.Conv2dPackedParamsBase" &&
          cls != "__torch__.torch.classes.quantized.Conv3dPackedParamsBase" &&
          cls != "__torch__.torch.classes.quantized.LinearPackedParamsBase")
        throw Error(fmt::format("an engine constant of class {} cannot be serialized", cls));
      packed.push_back(n);
    }
    if (t->kind() == TypeKind::TensorType) constants.push_back(n);
    if (t->kind() == TypeKind::ListType &&
        t->containedTypes().at(0)->kind() == TypeKind::TensorType)
      lists.push_back(n);
  }
  // A tensor-list constant (an RNN's frozen weights) prints as "[<Tensors>]": a ListConstruct
  // of weight inputs instead.
  for (Node* n : lists) {
    auto v = toIValue(n->output());
    TL_INTERNAL_ASSERT(v && v->isList(), "tensor-list constant without a value");
    std::vector<Value*> elems;
    for (const IValue& e : v->toList()->list) {
      TL_INTERNAL_ASSERT(e.isTensor(), "tensor-list constant with a non-tensor element");
      elems.push_back(
          g->addInput(fmt::format("weight_{}", w.add(e.toTensor())))->setType(TensorType::get()));
    }
    WithInsertPoint guard(n);
    Node* list = g->insertNode(g->createList(TensorType::get(), elems));
    list->output()->setDebugName("weight_list");  // graphFrom makes it a constant again
    n->output()->replaceAllUsesWith(list->output());
    n->destroy();
  }
  // Packed-params constants (quantized layers; printed as "object(0x...)") as the prepack op
  // that makes them from weight inputs; graphFrom evaluates it back into a constant.
  for (Node* n : packed) {
    auto v = toIValue(n->output());
    TL_INTERNAL_ASSERT(v && v->isObject(), "object constant without a value");
    const Object& o = *v->toObject();
    const std::string& cls = o.type->name();
    WithInsertPoint guard(n);
    auto weightInput = [&](const IValue& t) -> Value* {
      if (t.isNone()) return g->insertConstant(IValue());
      Tensor d = t.toTensor();
      if (d.requiresGrad()) {  // a bias saved as a Parameter: a constant cannot require grad
        d = d.alias();
        d.setRequiresGrad(false);
      }
      return g->addInput(fmt::format("weight_{}", w.add(d)))->setType(TensorType::get());
    };
    std::vector<Value*> ins = {weightInput(o.slots.at(0)), weightInput(o.slots.at(1))};
    std::string op;
    if (cls == "__torch__.torch.classes.quantized.LinearPackedParamsBase") {
      op = o.slots[0].toTensor().isQuantized() ? "quantized::linear_prepack"
                                               : "quantized::linear_prepack_fp16";
    } else {
      const bool conv3d = cls == "__torch__.torch.classes.quantized.Conv3dPackedParamsBase";
      const bool transposed = o.slots.at(7).toBool();
      op = fmt::format("quantized::{}{}d_prepack", transposed ? "conv_transpose" : "conv",
                       conv3d ? 3 : 2);
      ins.push_back(g->insertConstant(o.slots.at(2)));                  // stride
      ins.push_back(g->insertConstant(o.slots.at(3)));                  // padding
      if (transposed) ins.push_back(g->insertConstant(o.slots.at(4)));  // output_padding
      ins.push_back(g->insertConstant(o.slots.at(5)));                  // dilation
      ins.push_back(g->insertConstant(o.slots.at(6)));                  // groups
    }
    Node* p = g->insertNode(g->create(Symbol::fromQualString(op), ins, 1));
    p->output()->setType(n->output()->type());
    p->output()->setDebugName("packed_params");
    n->output()->replaceAllUsesWith(p->output());
    n->destroy();
  }
  for (Node* n : constants) {
    auto v = toIValue(n->output());
    TL_INTERNAL_ASSERT(v && v->isTensor(), "tensor constant without a value");
    const size_t k = w.add(v->toTensor());
    Value* in = g->addInput(fmt::format("weight_{}", k))->setType(TensorType::get());
    n->output()->replaceAllUsesWith(in);
    n->destroy();
  }
  std::ostringstream os;
  g->print(os, false);
  return os.str();
}

std::shared_ptr<Graph> graphFrom(const std::string& text, size_t numInputs,
                                 const std::vector<Tensor>& weights) {
  auto g = std::make_shared<Graph>();
  parseIR(text, g.get());
  for (size_t i = g->inputs().size(); i-- > numInputs;) {
    Value* in = g->inputs()[i];
    const std::string base = in->debugNameBase();
    if (base.rfind("weight_", 0) != 0)
      throw Error(fmt::format("engine graph input %{} is not a weight", base));
    const size_t k = std::stoul(base.substr(7));
    if (k >= weights.size())
      throw Error(fmt::format("engine graph names weight {} of {}", k, weights.size()));
    WithInsertPoint guard(g->block()->nodes().front());
    Value* c = g->insertConstant(IValue(weights[k]));
    in->replaceAllUsesWith(c);
    g->eraseInput(i);
  }
  // The packed params graphText spelled as prepack ops, constants again (in place: layers
  // name their nodes by position).
  std::vector<Node*> prepacks;
  for (Node* n : g->block()->nodes())
    if (n->outputs().size() == 1 && n->output()->debugNameBase() == "packed_params" &&
        std::string(n->kind().toQualString()).rfind("quantized::", 0) == 0)
      prepacks.push_back(n);
  for (Node* n : prepacks) {
    std::unordered_map<const Value*, IValue> ins;
    for (const Value* e : n->inputs()) {
      auto v = toIValue(e);
      if (!v) throw Error("engine graph: packed params made from something other than constants");
      ins[e] = *v;
    }
    auto outs =
        evaluateStatically(*n, matchOperator(n, OperatorRegistry::global()), [&](const Value* v) {
          auto it = ins.find(v);
          return it == ins.end() ? nullptr : &it->second;
        });
    if (!outs || outs->size() != 1)
      throw Error(fmt::format("engine graph: {} cannot be evaluated", n->kind().toQualString()));
    WithInsertPoint guard(n);
    Value* c = g->insertConstant(outs->at(0));
    n->output()->replaceAllUsesWith(c);
    n->destroy();
  }
  // The tensor-list constants graphText spelled as lists of weights, constants again (in
  // place: layers name their nodes by position).
  std::vector<Node*> lists;
  for (Node* n : g->block()->nodes())
    if (n->kind() == prim::ListConstruct && n->output()->debugNameBase() == "weight_list")
      lists.push_back(n);
  for (Node* n : lists) {
    std::vector<IValue> elems;
    for (const Value* e : n->inputs()) {
      auto v = toIValue(e);
      if (!v || !v->isTensor())
        throw Error("engine graph: a weight list holds something other than weights");
      elems.push_back(*v);
    }
    WithInsertPoint guard(n);
    Value* c = g->insertConstant(IValue(ListImpl::create(TensorType::get(), std::move(elems))));
    c->setType(n->output()->type());
    n->output()->replaceAllUsesWith(c);
    n->destroy();
  }
  return g;
}

const char* kindName(LayerKind k) { return toString(k); }

LayerKind kindFrom(const std::string& s) {
  for (LayerKind k :
       {LayerKind::Constant, LayerKind::Convolution, LayerKind::MatMul, LayerKind::Eltwise,
        LayerKind::Binary, LayerKind::Pooling, LayerKind::Softmax, LayerKind::LayerNorm,
        LayerKind::BatchNorm, LayerKind::Plugin, LayerKind::Shape})
    if (s == toString(k)) return k;
  throw Error(fmt::format("unknown layer kind '{}'", s));
}

Activation activationFrom(const std::string& s) {
  for (int i = 0; i <= static_cast<int>(Activation::Hardsigmoid); ++i)
    if (s == toString(static_cast<Activation>(i))) return static_cast<Activation>(i);
  throw Error(fmt::format("unknown activation '{}'", s));
}

// The static values of a graph's nodes, as the converters saw them: constants, and what the
// evaluator computes from them (evaluateStatically, engine_ctx.h).
std::unordered_map<const Value*, IValue> replayStatics(const Graph& g) {
  std::unordered_map<const Value*, IValue> statics;
  for (const Node* n : g.block()->nodes()) {
    if (n->kind() == prim::Constant) {
      if (auto v = toIValue(n->output())) statics[n->output()] = *v;
      continue;
    }
    auto outs =
        evaluateStatically(*n, matchOperator(n, OperatorRegistry::global()), [&](const Value* v) {
          auto it = statics.find(v);
          return it == statics.end() ? nullptr : &it->second;
        });
    if (!outs) continue;
    for (size_t i = 0; i < n->outputs().size(); ++i) statics[n->output(i)] = (*outs)[i];
  }
  return statics;
}

NetworkDefinition networkFrom(const json& j, std::shared_ptr<Graph> graph,
                              const std::vector<Tensor>& weights) {
  NetworkDefinition net;
  net.sourceGraph = graph;
  for (const auto& v : j.at("values"))
    net.addValue(v.at("name").get<std::string>(),
                 v.at("shape").get<bool>() ? ValueKind::Shape : ValueKind::Tensor);
  for (const auto& v : j.at("inputs")) net.markInput(v.get<ValueId>());
  for (const auto& v : j.at("outputs")) net.markOutput(v.get<ValueId>());
  std::vector<Node*> nodes;
  for (Node* n : graph->block()->nodes())
    if (n->kind() != prim::Constant) nodes.push_back(n);
  std::unordered_map<const Value*, IValue> statics;
  bool replayed = false;
  const auto numValues = static_cast<ValueId>(net.values().size());
  auto checkIds = [&](const std::vector<ValueId>& ids) {
    for (ValueId id : ids)
      if (id < 0 || id >= numValues) throw Error(fmt::format("value {} out of range", id));
  };
  for (const auto& jl : j.at("layers")) {
    Layer l;
    l.kind = kindFrom(jl.at("kind").get<std::string>());
    l.name = jl.at("name").get<std::string>();
    l.place = jl.at("place").get<std::string>();
    l.inputs = jl.at("inputs").get<std::vector<ValueId>>();
    l.outputs = jl.at("outputs").get<std::vector<ValueId>>();
    checkIds(l.inputs);
    checkIds(l.outputs);
    if (jl.contains("constant")) l.constant = ivalueFrom(jl.at("constant"), weights);
    if (jl.contains("weight")) l.weight = weights.at(jl.at("weight").get<size_t>());
    l.bias = optTensorFrom(jl.value("bias", json(nullptr)), weights);
    l.gamma = optTensorFrom(jl.value("gamma", json(nullptr)), weights);
    l.beta = optTensorFrom(jl.value("beta", json(nullptr)), weights);
    l.mean = optTensorFrom(jl.value("mean", json(nullptr)), weights);
    l.var = optTensorFrom(jl.value("var", json(nullptr)), weights);
    l.stride = jl.value("stride", IntList{});
    l.padding = jl.value("padding", IntList{});
    l.dilation = jl.value("dilation", IntList{});
    l.outputPadding = jl.value("output_padding", IntList{});
    l.groups = jl.value("groups", int64_t{1});
    l.transposed = jl.value("transposed", false);
    l.hasResidual = jl.value("residual", false);
    if (jl.contains("activation")) {
      const auto& a = jl.at("activation");
      l.activation = {activationFrom(a.at("kind").get<std::string>()), floatFrom(a.at("alpha")),
                      floatFrom(a.at("beta"))};
    }
    l.fused = jl.value("fused", std::vector<std::string>{});
    l.alpha = jl.value("alpha", 1.0);
    l.op = jl.value("op", std::string());
    l.eps = jl.value("eps", 1e-5);
    l.bf16 = jl.value("bf16", false);
    l.quantized = jl.value("quantized", false);
    l.outScale = jl.value("out_scale", 1.0);
    l.outZeroPoint = jl.value("out_zero_point", int64_t{0});
    if (jl.contains("node")) {
      const size_t k = jl.at("node").get<size_t>();
      if (k >= nodes.size())
        throw Error(fmt::format("layer '{}' names node {} of {}", l.name, k, nodes.size()));
      l.node = nodes[k];
      if (!replayed) {
        statics = replayStatics(*graph);
        replayed = true;
      }
      for (const Value* v : l.node->inputs()) {
        auto it = statics.find(v);
        l.args.push_back(it == statics.end() ? std::nullopt : std::optional<IValue>(it->second));
      }
    }
    net.addLayer(std::move(l));
  }
  return net;
}

}  // namespace

EngineRecord serializeEngine(const Engine& engine) {
  const NetworkDefinition& net = engine.network();
  EngineRecord r;
  WeightTable w{&r.weights, {}};
  size_t numInputs = 0;
  r.graph = graphText(*net.sourceGraph, w, numInputs);
  std::unordered_map<const Node*, size_t> nodeIndex;
  for (const Node* n : net.sourceGraph->block()->nodes())
    if (n->kind() != prim::Constant) nodeIndex.emplace(n, nodeIndex.size());
  json j;
  j["num_graph_inputs"] = numInputs;
  json values = json::array();
  for (const auto& v : net.values())
    values.push_back({{"name", v.name}, {"shape", v.kind == ValueKind::Shape}});
  j["values"] = values;
  j["inputs"] = net.inputs();
  j["outputs"] = net.outputs();
  json layers = json::array();
  for (const Layer& l : net.layers()) {
    json jl{{"kind", kindName(l.kind)},
            {"name", l.name},
            {"place", l.place},
            {"inputs", l.inputs},
            {"outputs", l.outputs}};
    if (l.kind == LayerKind::Constant) jl["constant"] = ivalueJson(l.constant, w);
    if (l.weight.defined()) jl["weight"] = w.add(l.weight);
    jl["bias"] = optTensor(l.bias, w);
    jl["gamma"] = optTensor(l.gamma, w);
    jl["beta"] = optTensor(l.beta, w);
    jl["mean"] = optTensor(l.mean, w);
    jl["var"] = optTensor(l.var, w);
    if (l.kind == LayerKind::Convolution) {
      jl["stride"] = l.stride;
      jl["padding"] = l.padding;
      jl["dilation"] = l.dilation;
      jl["output_padding"] = l.outputPadding;
      jl["groups"] = l.groups;
      jl["transposed"] = l.transposed;
    }
    jl["residual"] = l.hasResidual;
    jl["activation"] = {{"kind", toString(l.activation.kind)},
                        {"alpha", floatJson(l.activation.alpha)},
                        {"beta", floatJson(l.activation.beta)}};
    jl["fused"] = l.fused;
    jl["alpha"] = l.alpha;
    jl["op"] = l.op;
    jl["eps"] = l.eps;
    jl["bf16"] = l.bf16;
    if (l.quantized) {
      jl["quantized"] = true;
      jl["out_scale"] = l.outScale;
      jl["out_zero_point"] = l.outZeroPoint;
    }
    if (l.node) jl["node"] = nodeIndex.at(l.node);
    layers.push_back(std::move(jl));
  }
  j["layers"] = layers;
  r.network = j.dump();
  for (const InputProfile& p : engine.options().profiles) r.profiles.push_back(p.str());
  return r;
}

std::shared_ptr<Engine> deserializeEngine(const EngineRecord& record, std::string* warning) {
  json j;
  std::string problem;
  if (record.version < 1 || record.version > kEngineRecordVersion) {
    problem = fmt::format("engine record version {} (this build reads version {})", record.version,
                          kEngineRecordVersion);
  } else {
    try {
      j = json::parse(record.network);
    } catch (const std::exception& e) {
      problem = std::string("engine network does not parse: ") + e.what();
    }
  }
  size_t numInputs = 0;
  try {
    numInputs = j.is_object() ? j.at("num_graph_inputs").get<size_t>() : 0;
  } catch (const std::exception& e) {
    if (problem.empty()) problem = std::string("engine network is incomplete: ") + e.what();
  }
  EngineOptions options;
  for (const std::string& p : record.profiles) options.profiles.push_back(parseProfile(p));
  std::shared_ptr<Graph> graph;
  if (problem.empty()) {
    try {
      graph = graphFrom(record.graph, numInputs, record.weights);
      NetworkDefinition net = networkFrom(j, graph, record.weights);
      return std::make_shared<Engine>(std::move(net), std::move(options), /*fused=*/true);
    } catch (const std::exception& e) {
      problem = std::string("engine network is corrupt: ") + e.what();
    }
  }
  // Rebuild from the kept graph: the weights are its trailing inputs.
  if (warning) *warning = problem + "; rebuilding the engine from its graph";
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  parseIR(record.graph, g.get());
  size_t weightInputs = 0;
  for (const Value* in : g->inputs()) weightInputs += in->debugNameBase().rfind("weight_", 0) == 0;
  graph = graphFrom(record.graph, g->inputs().size() - weightInputs, record.weights);
  return std::make_shared<Engine>(convertToNetwork(graph), std::move(options));
}

InputProfile parseProfile(const std::string& text) {
  InputProfile p;
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  if (s == "[any]" || s.empty()) return p;
  auto bad = [&](const std::string& why) {
    return Error(
        fmt::format("bad shape profile '{}': {} (expected [(min dims);(opt dims);(max dims)], e.g. "
                    "[(1,3,224,224);(4,3,224,224);(8,3,224,224)])",
                    text, why));
  };
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') throw bad("not in brackets");
  std::vector<IntList> parts;
  std::string body = s.substr(1, s.size() - 2);
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find(';', pos);
    std::string part = body.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (part.size() < 2 || part.front() != '(' || part.back() != ')')
      throw bad("'" + part + "' is not a (dims) tuple");
    IntList dims;
    std::stringstream ss(part.substr(1, part.size() - 2));
    std::string d;
    while (std::getline(ss, d, ',')) {
      try {
        size_t used = 0;
        long long v = std::stoll(d, &used);
        if (used != d.size() || v < 0) throw std::invalid_argument(d);
        dims.push_back(v);
      } catch (const std::exception&) {
        throw bad("'" + d + "' is not a size");
      }
    }
    parts.push_back(dims);
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  if (parts.size() != 3)
    throw bad(fmt::format("{} shapes, expected 3 (min;opt;max)", parts.size()));
  if (parts[0].size() != parts[1].size() || parts[1].size() != parts[2].size())
    throw bad("the shapes differ in rank");
  for (size_t d = 0; d < parts[0].size(); ++d) {
    if (parts[0][d] > parts[1][d] || parts[1][d] > parts[2][d])
      throw bad(fmt::format("min {} <= opt {} <= max {} does not hold in dimension {}", parts[0][d],
                            parts[1][d], parts[2][d], d));
  }
  p.min = parts[0];
  p.opt = parts[1];
  p.max = parts[2];
  return p;
}

}  // namespace torchless::engine
