// The torchless command line (../shared/docs/cli.md). Exit codes: 0 success, 1 user error
// (torchless::Error: first stderr line says what and where), 2 usage error (CLI11).
// This is libtorchless_cli.so's entry point; the `torchless` executable is a launcher that opens
// this library when a command runs (Note [Launcher] in tools/launcher/launcher.cpp).

#include "core/error.h"
#include "core/memory_budget.h"
#include "core/out_of_memory.h"
#include "tools/commands.h"

#include <CLI/CLI.hpp>

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <iostream>
#include <new>
#include <string>
#include <vector>

namespace {
int realMain(int argc, char** argv) {
  CLI::App app{"torchless: TorchScript models without Python or libtorch", "torchless"};
  app.set_version_flag("--version", std::string("torchless ") + TORCHLESS_VERSION);
  app.require_subcommand(0, 1);
  app.fallthrough(false);

  torchless::cli::registerOpsCommand(app);
  torchless::cli::registerInfoCommand(app);
  torchless::cli::registerGraphCommand(app);
  torchless::cli::registerCodeCommand(app);
  torchless::cli::registerRunCommand(app);
  torchless::cli::registerBenchCommand(app);
  torchless::cli::registerExportCommand(app);
  torchless::cli::registerFreezeCommand(app);
  torchless::cli::registerScriptCommand(app);
  torchless::cli::registerTraceCommand(app);
  torchless::cli::registerCompileCommand(app);
  torchless::cli::registerEnvCommand(app);
  torchless::cli::registerServeCommand(app);

  // Note [Memory budget] (core/memory_budget.h): every command takes --max-memory.
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    sub->add_option_function<std::string>(
        "--max-memory",
        [](const std::string& v) {
          try {
            torchless::setMemoryBudget(torchless::parseMemorySize(v));
          } catch (const torchless::Error& e) {
            throw CLI::ValidationError("--max-memory", e.message());
          }
        },
        "refuse allocations sized by the model or its files past this many bytes (512M, 4G; "
        "default: the machine's memory)");
  }

  // `torchless help [COMMAND]` is `torchless [COMMAND] --help`.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "help") {
    args.erase(args.begin());
    args.push_back("--help");
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  try {
    app.parse(args);
    if (app.get_subcommands().empty()) std::cout << app.help();
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const torchless::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {  // Note [Naming out of memory]: the last resort
    std::cerr << torchless::outOfMemoryMessage("running `torchless " +
                                               (args.empty() ? std::string() : args.back()) + "`")
              << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}

// The command runs on a thread with a large stack: deep but legitimate models (long call chains
// in code/, deeply nested blocks) get that far, and deeper ones stop at the stack guard with a
// clean error (Note [Stack guard] in core/stack_guard.h). The stack is only reserved address
// space; pages are touched as it grows.
constexpr size_t kCommandStackBytes = size_t{256} << 20;

struct MainArgs {
  int argc;
  char** argv;
  int status;
};

void* runMain(void* p) {
  auto* a = static_cast<MainArgs*>(p);
  a->status = realMain(a->argc, a->argv);
  return nullptr;
}
}  // namespace

/// Runs the command line `argv` (argv[0] is the program name) as cli.md says; returns the exit
/// status. Called by the launcher (tools/launcher/launcher.cpp) on the process's main thread.
extern "C" __attribute__((visibility("default"))) int torchless_cli_main(int argc, char** argv) {
  MainArgs args{argc, argv, 1};
  pthread_attr_t attr;
  pthread_t thread;
  if (pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, kCommandStackBytes) == 0 &&
      pthread_create(&thread, &attr, runMain, &args) == 0) {
    pthread_attr_destroy(&attr);
    // Process-directed signals must reach the command's threads, not this one: `serve` blocks
    // SIGTERM / SIGINT in its threads and sigwait()s for them (graceful shutdown), which only
    // works when no thread leaves them unblocked; other commands keep the default actions.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    pthread_join(thread, nullptr);
    return args.status;
  }
  return realMain(argc, argv);  // no big thread (address space limited): the normal stack
}
