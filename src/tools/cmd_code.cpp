// `torchless code MODEL.pt [--method NAME]`: the TorchScript source of the root module's class
// as the archive holds it (PyTorch's own print format, code/<qualifier>.py). With --method,
// only that method's `def`, cut out of the file through its source range and dedented (as
// PyTorch prints `module.forward.code`). Needs no compilation, so it works on archives whose
// code does not compile yet.
#include "core/error.h"
#include "frontend/script_importer.h"
#include "serialize/archive_reader.h"
#include "tools/commands.h"

#include <iostream>
#include <sstream>

namespace torchless::cli {

namespace {

struct CodeOptions {
  std::string model;
  std::string method;
};

/// The text of `range` from the start of its first line, each line dedented by the first
/// line's indentation, ending with a newline.
std::string dedentedLines(const frontend::SourceRange& range) {
  const auto& src = *range.source();
  size_t lineIdx = src.lineIndex(range.start());
  size_t begin = src.lineStart(lineIdx);
  std::string text = src.text().substr(begin, range.end() - begin);
  size_t indent = 0;
  while (indent < text.size() && (text[indent] == ' ' || text[indent] == '\t')) ++indent;
  std::ostringstream out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t n = 0;
    while (n < indent && n < line.size() && (line[n] == ' ' || line[n] == '\t')) ++n;
    out << line.substr(n) << "\n";
  }
  return out.str();
}

void printCode(const CodeOptions& o) {
  ArchiveDataOptions read;
  read.readTensorData = false;  // code needs no tensor values (Note [Placeholder storages])
  ArchiveData d = loadArchiveData(o.model, {}, read);
  if (!d.root.isObject())
    throw Error(fmt::format("the root value is a {}, not a module object", d.root.tagName()),
                o.model + ": record 'data.pkl'");
  const std::string qualname = d.root.toObject()->type->name();
  const std::string qualifier = qualname.substr(0, qualname.rfind('.'));
  auto it = d.codeSources.find(qualifier);
  if (it == d.codeSources.end())
    throw Error(fmt::format("no code for the root class '{}' (expected record '{}')", qualname,
                            ArchiveReader::codeRecordName(qualifier)),
                o.model);
  if (o.method.empty()) {
    std::cout << it->second;
    if (!it->second.empty() && it->second.back() != '\n') std::cout << "\n";
    return;
  }
  auto unit = std::make_shared<CompilationUnit>();
  frontend::ScriptImporter importer(
      unit, [&d](const std::string& q) -> std::optional<frontend::SourceFile> {
        auto f = d.codeSources.find(q);
        if (f == d.codeSources.end()) return std::nullopt;
        return frontend::SourceFile{ArchiveReader::codeRecordName(q), f->second};
      });
  std::optional<frontend::ClassDef> cls = importer.findClassDef(qualname);
  if (!cls)
    throw Error(fmt::format("no class statement for the root class '{}'", qualname),
                ArchiveReader::codeRecordName(qualifier));
  std::vector<std::string> names;
  for (const frontend::Stmt& s : cls->body()) {
    if (s.kind() != frontend::TreeKind::Def) continue;
    frontend::Def def(s.tree());
    if (def.name().name() == o.method) {
      std::cout << dedentedLines(def.range());
      return;
    }
    names.push_back(def.name().name());
  }
  throw Error(
      fmt::format("class '{}' has no method '{}' (methods: {})", qualname, o.method,
                  names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))),
      o.model);
}

}  // namespace

void registerCodeCommand(CLI::App& app) {
  auto opts = std::make_shared<CodeOptions>();
  auto* cmd =
      app.add_subcommand("code", "Print the TorchScript source of an archive's root module");
  cmd->add_option("MODEL", opts->model, "TorchScript archive (.pt)")->required();
  cmd->add_option("--method", opts->method, "Print only this method's def");
  cmd->callback([opts]() { printCode(*opts); });
}

}  // namespace torchless::cli
