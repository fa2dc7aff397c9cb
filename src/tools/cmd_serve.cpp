// `torchless serve [REPOSITORY] [--model NAME=MODEL.pt ...] [--http-port 8000] [--grpc-port 8001]
// [--host 127.0.0.1]`: the Open Inference Protocol (KServe v2) over HTTP and gRPC
// (server/server.h). Runs until SIGTERM or SIGINT, then exits 0 once accepted requests are
// answered; a bad repository, a port in use or a model that does not load exit 1.
#include "core/error.h"
#include "server/server.h"
#include "tools/commands.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace torchless::cli {
namespace {

// Note [Server loaded on use]
// The server (libtorchless_server.so) links gRPC++, abseil, c-ares, cpp-httplib and OpenSSL:
// ~40 shared libraries whose loading and relocation cost ~30 ms of CPU, twice what the rest of
// the CLI's start-up costs. Only `serve` needs them, so the CLI does not link the server; it
// opens it here, found through the CLI's run path (build/lib, or $ORIGIN/../lib installed),
// and calls its one entry point (server/module_entry.cpp). Both link the same
// libtorchless.so, so the op table and the kernels are shared, and exceptions pass through.
int runServerModule(const serve::ServeOptions& o) {
  void* lib = dlopen("libtorchless_server.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw Error(fmt::format("serve: cannot load the server library: {}", dlerror()));
  using Entry = int (*)(const serve::ServeOptions*);
  auto run = reinterpret_cast<Entry>(dlsym(lib, "torchless_serve_run"));
  if (!run)
    throw Error(fmt::format("serve: libtorchless_server.so has no entry point: {}", dlerror()));
  return run(&o);  // the library stays open: its threads and statics live until exit
}

struct ServeArgs {
  std::string repository;
  std::vector<std::string> models;
  std::string logLevel = "info";
  serve::ServeOptions options;
};

void serveCommand(ServeArgs& a) {
  serve::ServeOptions o = a.options;
  o.repository = a.repository;
  for (const auto& m : a.models) {
    const size_t eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == m.size())
      throw Error(fmt::format("--model '{}': expected NAME=MODEL.pt", m));
    o.models.emplace_back(m.substr(0, eq), m.substr(eq + 1));
  }
  if (a.logLevel == "error")
    o.logLevel = serve::LogLevel::Error;
  else if (a.logLevel == "warning")
    o.logLevel = serve::LogLevel::Warning;
  else
    o.logLevel = serve::LogLevel::Info;
  if (o.repository.empty() && o.models.empty())
    throw CLI::ValidationError("serve", "give a model REPOSITORY or --model NAME=MODEL.pt");
  runServerModule(o);
}

}  // namespace

void registerServeCommand(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand(
      "serve", "Serve models over the KServe v2 / Open Inference Protocol (HTTP and gRPC)");
  cmd->add_option("REPOSITORY", a->repository,
                  "model repository: NAME/VERSION/model.pt (+ NAME/config.json)");
  cmd->add_option("--model", a->models, "serve one archive as NAME (repeatable)");
  cmd->add_option("--http-port", a->options.httpPort,
                  "HTTP/REST port (default 8000; 0: a free port; -1: none)")
      ->check(CLI::Range(-1, 65535));
  cmd->add_option("--grpc-port", a->options.grpcPort,
                  "gRPC port (default 8001; 0: a free port; -1: none)")
      ->check(CLI::Range(-1, 65535));
  cmd->add_option("--host", a->options.host,
                  "address to listen on (default 127.0.0.1; 0.0.0.0: every interface)");
  cmd->add_option("--threads", a->options.threads,
                  "thread budget shared by all model instances (default: the cores)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--max-queue", a->options.maxQueue,
                  "requests waiting per model before 429 (default 64)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-body-bytes", a->options.maxBodyBytes,
                  "largest request body (default 64 MiB)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 34));
  cmd->add_option("--http-threads", a->options.httpThreads, "HTTP connection threads (default 16)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--log-level", a->logLevel,
                  "error, warning or info (one line per request; default info)")
      ->check(CLI::IsMember({"error", "warning", "info"}));
  cmd->callback([a]() { serveCommand(*a); });
}

}  // namespace torchless::cli
