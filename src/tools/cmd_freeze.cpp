// `torchless freeze MODEL.pt -o OUT.pt [--optimize] [--eval] [--method NAME ...] [--preserve ATTR
// ...]`
//
// Loads the module, freezes it as torch.jit.freeze does (api/freeze.h: calls inlined,
// attributes folded into constants, training branches and eval dropouts removed, conv/linear
// + batch_norm and conv + add/mul folded), with --optimize as
// torch.jit.optimize_for_inference (plus peephole and CSE), and saves the frozen module
// (torchless::save: written to a temporary name, renamed at the end; torch.jit.load reads
// it). --method keeps more methods besides forward; --preserve keeps attributes unfolded
// (both are PyTorch's preserved_attrs). A module saved in training mode is refused, as by
// torch.jit.freeze, unless --eval switches it to eval mode first. TORCHLESS_JIT=0 skips the
// optional folds; TORCHLESS_LOG=freeze,fold_conv_bn prints the graph after those passes.
#include "api/environment.h"
#include "api/freeze.h"
#include "api/module.h"
#include "core/error.h"
#include "tools/commands.h"
#include "tools/device_options.h"
#include "tools/save_checked.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <unistd.h>

namespace torchless::cli {
namespace {

struct FreezeCliOptions {
  DeviceOptions device;  // --map-location / --device-map
  std::string model;
  std::string output;
  bool optimize = false;
  bool eval = false;
  std::vector<std::string> methods;
  std::vector<std::string> preserve;
  int threads = 0;
};

void runFreeze(const FreezeCliOptions& o) {
  if (o.threads > 0) setNumThreads(o.threads);
  Module m = loadWithDeviceMap(o.model, o.device);
  // As torch.jit.freeze: a root without a `training` flag counts as eval (libtorch's
  // is_training() would say true).
  if (m.object()->type->findAttributeSlot("training") && m.isTraining()) {
    if (!o.eval)
      throw Error(
          fmt::format("module '{}' was saved in training mode, and freezing needs eval mode "
                      "(as torch.jit.freeze); pass --eval to switch every submodule to eval "
                      "mode first (module.eval())",
                      m.object()->type->name()),
          o.model);
    m.eval();
    std::cerr << "note: " << o.model
              << " was saved in training mode; frozen in eval mode (--eval)\n";
  }
  FreezeOptions fo;
  fo.preservedAttrs = o.methods;
  for (const std::string& a : o.preserve) {
    if (m.findMethod(a))
      throw Error(fmt::format("--preserve '{}' names a method; use --method for methods", a));
    fo.preservedAttrs.push_back(a);
  }
  for (const std::string& name : o.methods) {
    if (!m.findMethod(name)) {
      throw m.noSuchMethod(name).withPlace(o.model);
    }
  }
  Module frozen;
  try {
    frozen = o.optimize ? optimizeForInference(m, fo) : freeze(m, fo);
  } catch (Error& e) {
    e.withPlace(o.model);
    throw;
  }
  saveLoadable(frozen, o.output, "frozen");
  std::cout << "wrote " << o.output << " (" << frozen.object()->type->name() << ": "
            << fmt::format("{}", fmt::join(frozen.methodNames(), ", ")) << ")\n";
}

}  // namespace

void registerFreezeCommand(CLI::App& app) {
  auto opts = std::make_shared<FreezeCliOptions>();
  auto* cmd = app.add_subcommand(
      "freeze", "Freeze a module (torch.jit.freeze): parameters become constants, folds run");
  cmd->add_option("MODEL", opts->model, "TorchScript archive (.pt)")->required();
  addDeviceOptions(cmd, opts->device);
  cmd->add_option("-o,--output", opts->output, "The frozen archive to write")->required();
  cmd->add_flag("--optimize", opts->optimize,
                "Also optimize for inference (torch.jit.optimize_for_inference)");
  cmd->add_flag("--eval", opts->eval,
                "Switch a module saved in training mode to eval mode first (module.eval())");
  cmd->add_option("--method", opts->methods, "Keep this method besides forward (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--preserve", opts->preserve,
                  "Keep this attribute (dotted path) unfolded (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--threads", opts->threads, "threads for kernels (default: the idle cores)")
      ->check(CLI::Range(1, 4096));
  cmd->callback([opts]() { runFreeze(*opts); });
}

}  // namespace torchless::cli
