#pragma once
// The C++ API: load a TorchScript archive and call its methods.
//
//   torchless::Module m = torchless::load("model.pt");
//   torchless::IValue y = m.forward({torchless::IValue(x)});
//
// A Module is the root object of the archive (its ClassType, attributes, submodules) together
// with the CompilationUnit holding its compiled code. Copies share the same object, as
// torch.jit.ScriptModule handles do.

#include "core/error.h"
#include "core/ivalue.h"
#include "ir/function.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torchless {

struct ExecutionPlan;
struct ModuleExecutionCache;

/// One parameter of a method (self excluded): what Module::methodParams reports and the
/// command line's input words (api/cli_io.h) fill.
struct ParamSpec {
  std::string name;
  TypePtr type;
  std::optional<IValue> defaultValue;
};

/// How to load an archive.
struct LoadOptions {
  /// Tensors saved on other devices are loaded here (map_location); only CPU runs.
  Device device;
  /// Check each record's CRC-32 when it is read: a mismatch fails the load naming the record
  /// ("model.pt: record 'data/3': CRC-32 mismatch"). PyTorch never checks; with false, a
  /// record loads as its bytes are, as in PyTorch (deflate and size errors still fail).
  bool checkCrc = true;
  /// false: tensors are zero-filled placeholders of their saved shapes and dtypes; nothing is
  /// read from the tensor records and they take no resident memory until written
  /// (ArchiveReader::usePlaceholderStorages). For reading a model's facts (methods, parameter
  /// counts and bytes, operators) without materializing its weights, as `torchless info` does;
  /// running such a module computes with zeros.
  bool readTensorData = true;
  /// Tensors of stored records point into a copy-on-write mapping of the archive instead of
  /// buffers the records are read into (ZipReaderOptions::mapStoredRecords; Note [Mapped
  /// archives] in core/mapped_file.h): no copy and no fresh pages, for a process that loads a
  /// model to use it briefly (`torchless run`). The records are still checked (CRC-32) at load;
  /// if the file shrinks later, while mapped, the process ends with a message naming it.
  bool mapRecords = false;
};

/// A loaded TorchScript module.
class Module {
 public:
  Module() = default;
  Module(ObjectPtr object, std::shared_ptr<CompilationUnit> unit);

  /// Calls `forward`. Throws torchless::Error for bad arguments, ModelError for the model's
  /// own exceptions, UnsupportedError listing operators without kernels.
  IValue forward(std::vector<IValue> inputs) const {
    return runMethod("forward", std::move(inputs));
  }
  /// Calls method `name` with `inputs` (self excluded). Missing trailing arguments take
  /// their schema defaults; throws torchless::Error naming the method when there is none.
  /// Runs through the execution pipeline (api/pipeline.h: frozen, partitioned into engines)
  /// unless TORCHLESS_JIT=0; the plan is built on the first call and shared by copies.
  IValue runMethod(const std::string& name, std::vector<IValue> inputs) const;
  /// The execution plan of method `name` (built now if it was not). Throws as runMethod.
  std::shared_ptr<const ExecutionPlan> executionPlan(const std::string& name) const;
  /// Builds now what the first call of method `name` with inputs like `inputs` (self excluded,
  /// missing trailing arguments take their defaults) would build, so that call only executes
  /// (Note [Preparing at load] in api/pipeline.h): the execution plan, the specialization for
  /// the inputs' signature, each engine's plan for their shapes (oneDNN primitives, reordered
  /// weights, the arena) and the kernels' caches. It runs the method once (twice when it is
  /// specialized) on copies of `inputs` and discards the result, as TensorRT's builder runs its
  /// layers on the profile's shapes. Returns false, having run nothing, when the method writes
  /// module state (Note [Module state in a frozen plan]), when its graph prints, draws random numbers or
  /// calls Python (a preparation run would be observable), when an input cannot be copied (an
  /// object, a dict, a non-contiguous tensor), or under TORCHLESS_JIT=0. An error of the
  /// preparation run is not thrown (the call that follows reports it); returns false then.
  bool prepare(const std::string& name, const std::vector<IValue>& inputs) const;
  /// The method's function (self is its first graph input); nullptr when there is none.
  const GraphFunction* findMethod(const std::string& name) const;
  /// Method names of the root class, in definition order.
  std::vector<std::string> methodNames() const;
  /// The error for a method this module lacks: "module 'T' has no method 'x' (methods: a, b)".
  Error noSuchMethod(const std::string& name) const;
  /// The method's parameters (self excluded) with types and defaults, for CLI inputs.
  std::vector<ParamSpec> methodParams(const std::string& name) const;

  /// Parameters and buffers as PyTorch names them (`layer1.0.conv1.weight`), recursing into
  /// submodules in attribute order, as named_parameters() / named_buffers().
  std::vector<std::pair<std::string, Tensor>> namedParameters() const;
  std::vector<std::pair<std::string, Tensor>> namedBuffers() const;

  /// Sets the `training` attribute of this module object and of every submodule object, as
  /// nn.Module.train(on) / eval(); this Module's methods are planned again on their next call
  /// (copies made before keep their plans). Throws torchless::Error when the module is empty.
  void train(bool on = true);
  /// train(false).
  void eval() { train(false); }
  /// The root object's `training` flag; true when it has none (as torch.jit.freeze reads it).
  bool isTraining() const;

  const ObjectPtr& object() const { return object_; }
  const std::shared_ptr<CompilationUnit>& unit() const { return unit_; }
  bool defined() const { return object_ != nullptr; }

 private:
  ObjectPtr object_;
  std::shared_ptr<CompilationUnit> unit_;
  std::shared_ptr<ModuleExecutionCache> exec_;
};

/// Loads a TorchScript archive written by torch.jit.save (PyTorch 1.x or 2.x): records,
/// tensors, code compiled by our frontend, objects rebuilt. Never executes anything the file
/// names. Throws torchless::Error whose place names the file and record.
Module load(const std::string& path, const LoadOptions& options = {});

}  // namespace torchless

namespace torchless {

/// Writes `module` as a TorchScript archive that torch.jit.load accepts: its classes and
/// methods printed from our IR (serialize/python_print.h), its object tree in data.pkl, the
/// tensors it holds as aligned records. The file appears only when complete; throws
/// torchless::Error (nothing written) for what an archive cannot hold.
void save(const Module& module, const std::string& path);
/// save(), calling `beforeCommit` with a path through which the complete archive can be read
/// before it is put at `path` (Note [Atomic writes], core/atomic_file.h): what it throws
/// leaves nothing written (tools/save_checked.cpp loads the archive back this way).
void save(const Module& module, const std::string& path,
          const std::function<void(const std::string& readablePath)>& beforeCommit);

}  // namespace torchless
