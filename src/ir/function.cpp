#include "ir/function.h"

#include "core/error.h"

namespace torchless {

GraphFunction::GraphFunction(std::string qualname, std::shared_ptr<Graph> graph,
                             FunctionSchema schema)
    : qualname_(std::move(qualname)), graph_(std::move(graph)), schema_(std::move(schema)) {
  auto dot = qualname_.rfind('.');
  name_ = dot == std::string::npos ? qualname_ : qualname_.substr(dot + 1);
}

void GraphFunction::setGraph(std::shared_ptr<Graph> g) { graph_ = std::move(g); }

FunctionSchema GraphFunction::schemaFromGraph(const std::string& name, const Graph& graph) {
  std::vector<Argument> args;
  for (const Value* v : graph.inputs())
    args.emplace_back(v->hasDebugName() ? v->debugNameBase() : v->debugName(), v->type());
  std::vector<Argument> rets;
  for (const Value* v : graph.outputs()) rets.emplace_back("", v->type());
  return FunctionSchema(name, "", std::move(args), std::move(rets));
}

GraphFunction* CompilationUnit::addFunction(std::unique_ptr<GraphFunction> fn) {
  const std::string q = fn->qualname();
  if (functionsByName_.count(q)) throw Error(fmt::format("function '{}' is defined twice", q));
  GraphFunction* raw = fn.get();
  functions_.push_back(std::move(fn));
  functionsByName_.emplace(q, raw);
  return raw;
}

GraphFunction* CompilationUnit::findFunction(const std::string& qualname) const {
  auto it = functionsByName_.find(qualname);
  return it == functionsByName_.end() ? nullptr : it->second;
}

void CompilationUnit::addType(const std::string& qualname, TypePtr type) {
  if (typesByName_.count(qualname))
    throw Error(fmt::format("type '{}' is defined twice", qualname));
  typesByName_.emplace(qualname, type);
  typeOrder_.push_back(std::move(type));
}

void CompilationUnit::addInterface(const std::string& qualname,
                                   std::shared_ptr<InterfaceType> type) {
  addType(qualname, type);
  interfaces_.push_back(std::move(type));
}

CompilationUnit::~CompilationUnit() {
  for (const auto& iface : interfaces_) iface->methods.clear();
}

TypePtr CompilationUnit::findType(const std::string& qualname) const {
  auto it = typesByName_.find(qualname);
  return it == typesByName_.end() ? nullptr : it->second;
}

std::shared_ptr<ClassType> CompilationUnit::findClass(const std::string& qualname) const {
  TypePtr t = findType(qualname);
  if (!t || t->kind() != TypeKind::ClassType) return nullptr;
  return std::const_pointer_cast<ClassType>(t->castPtr<ClassType>());
}

}  // namespace torchless
