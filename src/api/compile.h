#pragma once
// torchless::compile: a module whose `forward` calls engines (Torch-TensorRT's
// torch_tensorrt.ts.compile, on the CPU with oneDNN).
//
//   torchless::Module m = torchless::load("model.pt");
//   torchless::CompileSpec spec;
//   spec.inputs = {engine::parseProfile("[(1,3,224,224);(4,3,224,224);(8,3,224,224)]")};
//   torchless::CompileResult c = torchless::compile(m, spec);
//   torchless::save(c.module, "model_engine.pt");   // torchless load/run read it back
//
// The compiled module is the frozen module (api/freeze.h) whose forward runs each engine
// segment through `torchless::execute_engine(Tensor[] inputs, Engine engine) -> Tensor[]`,
// the engine an attribute `__torchless_engine_<k>` of TorchBind class
// `__torch__.torch.classes.torchless.Engine` holding its record (convert/engine/
// engine_record.h: versioned network, the segment's graph, weights). Loading it builds no
// network again; a stale record is rebuilt from the kept graph.

#include "api/module.h"
#include "convert/engine/partition.h"

#include <string>
#include <vector>

namespace torchless {

/// Torch-TensorRT's CompileSpec, the parts that apply on the CPU.
struct CompileSpec {
  /// Shape profiles of forward's inputs, in order (self excluded); fewer or empty ones accept
  /// any shape.
  std::vector<engine::InputProfile> inputs;
  size_t minBlockSize = 3;
  std::vector<std::string> torchExecutedOps;
  bool requireFullCompilation = false;
  /// "fp32" or "bf16": convolutions and matrix products in bfloat16 (f32 results; about
  /// 1e-2 relative error on deep nets, as PyTorch's autocast to bf16).
  std::string precision = "fp32";
  /// Inputs of forward (self excluded) to run once before writing: each engine then plans
  /// this signature, and the report gives its memory plan. May be empty.
  std::vector<IValue> exampleInputs;
};

/// A compiled module and what the partitioning did.
struct CompileResult {
  Module module;
  engine::PartitionReport report;
  /// forward's result on spec.exampleInputs (None without them).
  IValue exampleOutput;
};

/// Compiles `module`'s forward. Throws torchless::Error when the module cannot be frozen
/// (training mode, forward mutates attributes), for an unknown precision or bf16 on a CPU
/// without AVX512-BF16/AMX, and torchless::UnsupportedError (every unsupported node with its
/// place) under requireFullCompilation.
CompileResult compile(const Module& module, const CompileSpec& spec);

/// True when this CPU has native bf16 arithmetic (avx512_bf16 or amx_bf16 in /proc/cpuinfo).
bool cpuHasBf16();

}  // namespace torchless
