// Printing IR back to TorchScript: every free-function graph PyTorch printed for the IR corpus
// (tests/ir/corpus/*.ir) is printed as the forward method of a module, written as an archive,
// and loaded by real PyTorch (torch.jit.load compiles and type-checks our code). For graphs
// without loops, the aten operators PyTorch compiled from our text must be the original ones,
// counted.
#include "serialize/python_print.h"
#include "core/error.h"
#include "ir/function.h"
#include "ir/ir_parser.h"
#include "serialize/archive_writer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace torchless;
namespace fs = std::filesystem;

namespace {

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool printable(const Graph& g) {
  for (const Value* v : g.inputs())
    if (v->type()->kind() == TypeKind::ClassType) return false;
  std::function<bool(const Block*)> ok = [&](const Block* b) {
    for (const Node* n : b->nodes()) {
      if (n->kind() == prim::GetAttr || n->kind() == prim::CallMethod ||
          n->kind() == prim::CreateObject || n->kind() == prim::fork || n->kind() == prim::Enter ||
          n->kind() == prim::CallFunction)
        return false;
      for (const Block* sub : n->blocks())
        if (!ok(sub)) return false;
    }
    return true;
  };
  return ok(g.block()) && g.outputs().size() == 1;
}

std::map<std::string, int> atenCounts(const Graph& g, bool* hasLoop) {
  std::map<std::string, int> counts;
  std::function<void(const Block*)> walk = [&](const Block* b) {
    for (const Node* n : b->nodes()) {
      if (n->kind() == prim::Loop) *hasLoop = true;
      if (n->kind().is_aten()) counts[n->kind().toQualString()]++;
      for (const Block* sub : n->blocks()) walk(sub);
    }
  };
  walk(g.block());
  return counts;
}

TEST(PythonPrint, CorpusGraphsLoadInPyTorch) {
  const fs::path corpus = fs::path(TORCHLESS_SOURCE_DIR) / "tests/ir/corpus";
  const fs::path out = fs::path(TORCHLESS_BINARY_DIR) / "python_print_test";
  fs::remove_all(out);
  fs::create_directories(out);
  std::map<std::string, std::shared_ptr<Graph>> graphs;
  std::string list;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    if (entry.path().extension() != ".ir") continue;
    auto g = std::make_shared<Graph>();
    parseIR(readFile(entry.path()), g.get());
    if (!printable(*g)) continue;
    const std::string name = entry.path().stem().string();
    auto cls = ClassType::create("__torch__.Wrap", true);
    cls->addAttribute("training", BoolType::get());
    // forward(self, inputs...): add self in front of the corpus function's inputs.
    Value* self = g->insertInput(0, "self");
    self->setType(cls);
    GraphFunction fn("__torch__.Wrap.forward", g, GraphFunction::schemaFromGraph("forward", *g));
    cls->addMethod(&fn);
    PythonPrinter printer;
    printer.addClass(cls);
    PrintedCode code = printer.finish();
    ArchiveContents contents;
    auto obj = Object::create(cls);
    obj->setAttr("training", IValue(false));
    contents.root = IValue(obj);
    contents.codeSources = code.sources;
    contents.constants = code.constants;
    contents.version = std::max<uint64_t>(code.minVersion, 3);
    const fs::path archive = out / (name + ".pt");
    writeArchive(archive.string(), contents);
    std::ofstream(out / (name + ".py")) << code.sources["__torch__"];
    graphs[name] = g;
    list += archive.string() + "\n";
  }
  ASSERT_GE(graphs.size(), 15u) << "too few printable corpus graphs";
  std::ofstream(out / "list.txt") << list;
  const std::string cmd = "/usr/bin/python3 " + std::string(TORCHLESS_SOURCE_DIR) +
                          "/tests/serialize/load_printed.py " + (out / "list.txt").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const auto& [name, g] : graphs) {
    const fs::path err = out / (name + ".error.txt");
    if (fs::exists(err)) {
      ADD_FAILURE() << name << ": PyTorch refused our code:\n"
                    << readFile(err) << "\n--- code:\n"
                    << readFile(out / (name + ".py"));
      continue;
    }
    auto back = std::make_shared<Graph>();
    parseIR(readFile(out / (name + ".graph.txt")), back.get());
    bool loopA = false, loopB = false;
    auto a = atenCounts(*g, &loopA);
    auto b = atenCounts(*back, &loopB);
    if (!loopA) {
      EXPECT_EQ(a, b) << name << "\n--- code:\n" << readFile(out / (name + ".py"));
    }
  }
}

}  // namespace
