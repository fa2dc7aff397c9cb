// The IR emitter against PyTorch 1.13: each case under tests/frontend/emitter_cases/ (written
// by gen_emitter_cases.py) holds the printed TorchScript of a function or module and the graph
// PyTorch builds from it (code_graph.txt), and the original source with PyTorch's graph of it
// (graph.txt). We compile both with compileFunction, run the verifier, and compare:
//   exact  the graph text without source locations, values renamed in order of definition
//          (PyTorch's debug names differ in their .N suffixes);
//   kinds  the multiset of node kinds (constants aside) and the output types, for cases where
//          PyTorch's graph has shapes we do not reproduce (constant propagation, its exit
//          transform for break/continue/early return, loop canonicalisation);
//   skip   not compiled (module sources hold Python-only __init__ code).
// meta.txt says "function|module <code mode> <source mode>".
#include "frontend/compiler.h"
#include "frontend/parser.h"
#include "ir/ir_parser.h"
#include "ir/verifier.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace torchless::frontend {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path casesDir() { return fs::path(TORCHLESS_SOURCE_DIR) / "tests/frontend/emitter_cases"; }

/// Graph text without locations, the pooled constants at the top sorted by value and type
/// (PyTorch's pooling order depends on its emission order in ways we do not reproduce), then
/// values renamed %v0, %v1 ... in order of appearance.
std::string normalize(const Graph& g) {
  std::string raw =
      std::regex_replace(g.toString(false), std::regex(R"( : Any = prim::Constant\[name=)"),
                         " : Function = prim::Constant[name=");
  std::vector<std::string> lines;
  {
    std::istringstream in(raw);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  size_t first = 0;
  while (first < lines.size() && lines[first].rfind("  %", 0) != 0) ++first;
  size_t end = first;
  while (end < lines.size() && lines[end].find("= prim::Constant") != std::string::npos &&
         lines[end].rfind("  %", 0) == 0)
    ++end;
  auto key = [](const std::string& l) {
    size_t colon = l.find(" : ");
    return colon == std::string::npos ? l : l.substr(colon);
  };
  std::stable_sort(lines.begin() + static_cast<long>(first), lines.begin() + static_cast<long>(end),
                   [&](const std::string& a, const std::string& b) { return key(a) < key(b); });
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  std::regex valueRe(R"(%[A-Za-z0-9_.]+)");
  std::map<std::string, std::string> names;
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), valueRe);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += text.substr(last, static_cast<size_t>(it->position()) - last);
    auto [pos, inserted] = names.emplace(it->str(), "%v" + std::to_string(names.size()));
    out += pos->second;
    last = static_cast<size_t>(it->position() + it->length());
  }
  out += text.substr(last);
  return out;
}

void collectKinds(const Block* b, std::multiset<std::string>& kinds) {
  for (const Node* n : b->nodes()) {
    if (n->kind() != prim::Constant) kinds.insert(n->kind().toQualString());
    for (const Block* sub : n->blocks()) collectKinds(sub, kinds);
  }
}

std::string kindsSummary(const Graph& g) {
  std::multiset<std::string> kinds;
  collectKinds(g.block(), kinds);
  std::string s;
  for (const auto& k : kinds) s += k + "\n";
  s += "outputs:";
  for (const Value* v : g.outputs()) s += " " + v->type()->str();
  return s;
}

/// Compiles the defs and classes of one case's files, with a CompileEnv that resolves
/// functions and classes among them on demand.
class CaseCompiler {
 public:
  /// `files`: (qualifier, path) pairs, e.g. ("__torch__", code/__torch__.py).
  explicit CaseCompiler(const std::vector<std::pair<std::string, fs::path>>& files) {
    for (const auto& [qual, path] : files) {
      Module m = parseFile(path.string(), readFile(path));
      for (Stmt s : m.body()) {
        if (s.kind() == TreeKind::Def) {
          Def d(s.tree());
          defs_.emplace(qual + "." + d.name().name(), d);
          defs_.emplace(d.name().name(), d);  // source files call helpers unqualified
        } else if (s.kind() == TreeKind::ClassDef) {
          ClassDef c(s.tree());
          std::string q = qual + "." + c.name().name();
          bool isModule = false;
          for (Expr b : c.bases()) isModule |= std::string(b.range().text()) == "Module";
          classes_[q] = ClassType::create(q, isModule);
          classDefs_.emplace(q, c);
        }
      }
    }
    env_.unit = &unit_;
    env_.resolveType = [this](const std::string& q) -> TypePtr {
      auto it = classes_.find(q);
      return it == classes_.end() ? nullptr : it->second;
    };
    env_.resolveFunction = [this](const std::string& q) -> GraphFunction* { return function(q); };
    env_.resolveMethod = [this](const ClassType& cls, const std::string& name) -> Function* {
      return method(cls.name(), name);
    };
    // Attributes: `name : Type` and `__annotations__["0"] = Type`.
    for (auto& [q, c] : classDefs_) {
      for (Stmt s : c.body()) {
        if (s.kind() != TreeKind::Assign) continue;
        Assign a(s.tree());
        std::string name;
        std::string typeText;
        if (a.type().present() && !a.rhs().present()) {
          name = std::string(a.lhs().range().text());
          typeText = std::string(a.type().get().range().text());
        } else if (a.lhs().kind() == TreeKind::Subscript && a.rhs().present()) {
          Subscript sub(a.lhs().tree());
          name = StringLiteral(sub.subscriptExprs()[0].tree()).text();
          typeText = std::string(a.rhs().get().range().text());
        } else {
          continue;
        }
        classes_[q]->addAttribute(name, parseTypeAnnotation(typeText, env_.resolveType));
      }
    }
  }

  GraphFunction* function(const std::string& q) {
    if (auto it = compiled_.find(q); it != compiled_.end()) return it->second;
    auto it = defs_.find(q);
    if (it == defs_.end() && q.rfind("__torch__.", 0) == 0)
      it = defs_.find(q.substr(q.rfind('.') + 1));  // helpers are printed as __torch__.<mod>.f
    if (it == defs_.end()) return nullptr;
    std::string qualname = q.find('.') == std::string::npos ? "__torch__." + q : q;
    if (GraphFunction* f = unit_.findFunction(qualname)) return compiled_[q] = f;
    auto fn = compileFunction(it->second, qualname, nullptr, env_);
    GraphFunction* raw = unit_.addFunction(std::move(fn));
    compiled_[q] = raw;
    return raw;
  }

  GraphFunction* method(const std::string& cls, const std::string& name) {
    std::string q = cls + "." + name;
    if (auto it = compiled_.find(q); it != compiled_.end()) return it->second;
    auto cit = classDefs_.find(cls);
    if (cit == classDefs_.end()) return nullptr;
    for (Stmt s : cit->second.body()) {
      if (s.kind() != TreeKind::Def || Def(s.tree()).name().name() != name) continue;
      auto fn = compileFunction(Def(s.tree()), q, classes_[cls], env_);
      GraphFunction* raw = unit_.addFunction(std::move(fn));
      classes_[cls]->addMethod(raw);
      compiled_[q] = raw;
      return raw;
    }
    return nullptr;
  }

  TypeResolver resolver() const { return env_.resolveType; }

 private:
  CompilationUnit unit_;
  CompileEnv env_;
  std::map<std::string, Def> defs_;
  std::map<std::string, ClassDef> classDefs_;
  std::map<std::string, ClassTypePtr> classes_;
  std::map<std::string, GraphFunction*> compiled_;
};

struct Case {
  std::string name;
  std::string kind, codeMode, sourceMode;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> loadCases() {
  std::vector<Case> out;
  for (const auto& entry : fs::directory_iterator(casesDir())) {
    if (!entry.is_directory()) continue;
    Case c;
    c.name = entry.path().filename().string();
    std::istringstream meta(readFile(entry.path() / "meta.txt"));
    meta >> c.kind >> c.codeMode >> c.sourceMode;
    out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) { return a.name < b.name; });
  return out;
}

std::shared_ptr<Graph> parseOracle(const fs::path& p, const TypeResolver& resolver, bool dropSelf) {
  auto g = std::make_shared<Graph>();
  ParseIROptions opts;
  opts.resolver = resolver;
  // Our type parser has no `Function` (function constants are not parseable IR in PyTorch
  // either); read them as Any and print them back as Function in normalize().
  std::string text = std::regex_replace(readFile(p), std::regex(" : Function = "), " : Any = ");
  parseIR(text, g.get(), opts);
  if (dropSelf && !g->inputs().empty() && !g->inputs()[0]->hasUses()) g->eraseInput(0);
  return g;
}

/// Compares `ours` with PyTorch's graph; returns "" when they agree.
std::string compare(const Graph& ours, const Graph& theirs, const std::string& mode) {
  if (mode == "exact") {
    std::string a = normalize(ours), b = normalize(theirs);
    if (a == b) return "";
    return "ours:\n" + a + "\npytorch:\n" + b;
  }
  std::string a = kindsSummary(ours), b = kindsSummary(theirs);
  if (a == b) return "";
  return "ours:\n" + a + "\npytorch:\n" + b + "\nour graph:\n" + ours.toString(false);
}

// Cases whose mode is "skip" are left out of instantiation (the generator records why in
// meta.txt's mode), so no case is reported as skipped.
std::vector<Case> codeCases() {
  std::vector<Case> out;
  for (const auto& c : loadCases())
    if (c.codeMode != "skip") out.push_back(c);
  return out;
}

std::vector<Case> sourceCases() {
  std::vector<Case> out;
  for (const auto& c : loadCases())
    if (c.sourceMode != "skip" && c.kind == "function") out.push_back(c);
  return out;
}

class EmitterCode : public ::testing::TestWithParam<Case> {};
class EmitterSource : public ::testing::TestWithParam<Case> {};

TEST_P(EmitterCode, PrintedCode) {
  const Case& c = GetParam();
  fs::path dir = casesDir() / c.name;
  std::vector<std::pair<std::string, fs::path>> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "code")) {
    if (entry.path().extension() != ".py") continue;
    std::string rel = fs::relative(entry.path(), dir / "code").replace_extension().string();
    std::replace(rel.begin(), rel.end(), '/', '.');
    files.emplace_back(rel, entry.path());
  }
  CaseCompiler cc(files);
  GraphFunction* fn = c.kind == "function" ? cc.function("__torch__.fn")
                                           : cc.method("__torch__." + c.name + ".M", "forward");
  ASSERT_NE(fn, nullptr);
  verify(*fn->graph());
  auto oracle = parseOracle(dir / "code_graph.txt", cc.resolver(), c.kind == "function");
  std::string diff = compare(*fn->graph(), *oracle, c.codeMode);
  EXPECT_EQ(diff, "") << c.name << " (" << c.codeMode << ")";
}

TEST_P(EmitterSource, Source) {
  const Case& c = GetParam();
  fs::path dir = casesDir() / c.name;
  CaseCompiler cc({{"__torch__", dir / "source.py"}});
  GraphFunction* fn = cc.function("fn");
  ASSERT_NE(fn, nullptr);
  verify(*fn->graph());
  auto oracle = parseOracle(dir / "graph.txt", cc.resolver(), false);
  std::string diff = compare(*fn->graph(), *oracle, c.sourceMode);
  EXPECT_EQ(diff, "") << c.name << " (" << c.sourceMode << ")";
}

INSTANTIATE_TEST_SUITE_P(frontend_emitter, EmitterCode, ::testing::ValuesIn(codeCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });
INSTANTIATE_TEST_SUITE_P(frontend_emitter, EmitterSource, ::testing::ValuesIn(sourceCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace torchless::frontend
