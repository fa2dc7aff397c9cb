#include "server/model.h"

#include "api/cli_io.h"
#include "api/compile.h"
#include "api/environment.h"
#include "core/error.h"
#include "core/type.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace torchless::serve {
namespace fs = std::filesystem;
using nlohmann::json;

// ---- config.json ----

namespace {

[[noreturn]] void configError(const std::string& place, const std::string& message) {
  throw Error(message, place);
}

void checkKeys(const json& j, const std::set<std::string>& allowed, const std::string& where,
               const std::string& place) {
  if (!j.is_object()) configError(place, fmt::format("{} must be an object", where));
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!allowed.count(it.key()))
      configError(place, fmt::format("unknown key '{}' in {} (known: {})", it.key(), where,
                                     fmt::join(allowed, ", ")));
}

int64_t intValue(const json& j, const std::string& key, int64_t lo, int64_t hi,
                 const std::string& place) {
  if (!j.is_number_integer()) configError(place, fmt::format("'{}' must be an integer", key));
  const int64_t v = j.get<int64_t>();
  if (v < lo || v > hi)
    configError(place, fmt::format("'{}' is {}, expected {}..{}", key, v, lo, hi));
  return v;
}

std::vector<TensorSpec> tensorSpecs(const json& j, const std::string& key,
                                    const std::string& place) {
  if (!j.is_array()) configError(place, fmt::format("'{}' must be a list", key));
  std::vector<TensorSpec> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = fmt::format("{}[{}]", key, i);
    checkKeys(j[i], {"name", "data_type", "dims", "format", "reshape", "optional"}, where, place);
    TensorSpec s;
    if (!j[i].contains("name") || !j[i]["name"].is_string() ||
        j[i]["name"].get<std::string>().empty())
      configError(place, fmt::format("{} needs a 'name'", where));
    s.name = j[i]["name"].get<std::string>();
    if (j[i].contains("data_type")) {
      if (!j[i]["data_type"].is_string())
        configError(place, fmt::format("{}.data_type must be a string", where));
      std::string t = j[i]["data_type"].get<std::string>();
      if (t.rfind("TYPE_", 0) == 0) t = t.substr(5);
      if (t == "STRING") t = "BYTES";
      if (!isDatatype(t))
        configError(place, fmt::format("{}: unknown data_type '{}'", where,
                                       j[i]["data_type"].get<std::string>()));
      s.datatype = t;
    }
    if (j[i].contains("dims")) {
      if (!j[i]["dims"].is_array())
        configError(place, fmt::format("{}.dims must be a list", where));
      for (const auto& d : j[i]["dims"])
        s.dims.push_back(intValue(d, where + ".dims", -1, int64_t{1} << 31, place));
      s.hasDims = true;
    }
    for (const auto& o : out)
      if (o.name == s.name)
        configError(place, fmt::format("{}: name '{}' given twice", key, s.name));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

ModelConfig parseModelConfig(const std::string& text, const std::string& place) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    configError(place, fmt::format("malformed JSON: {}", e.what()));
  }
  checkKeys(j,
            {"name", "platform", "backend", "max_batch_size", "input", "output", "instance_group",
             "dynamic_batching", "threads", "max_queue_size", "compile"},
            "the configuration", place);
  ModelConfig c;
  if (j.contains("max_batch_size"))
    c.maxBatchSize = intValue(j["max_batch_size"], "max_batch_size", 0, 1 << 20, place);
  if (j.contains("input")) c.inputs = tensorSpecs(j["input"], "input", place);
  if (j.contains("output")) c.outputs = tensorSpecs(j["output"], "output", place);
  if (j.contains("instance_group")) {
    const json& g = j["instance_group"];
    if (!g.is_array()) configError(place, "'instance_group' must be a list");
    c.instances = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      checkKeys(g[i], {"count", "kind", "name"}, fmt::format("instance_group[{}]", i), place);
      c.instances += g[i].contains("count")
                         ? static_cast<int>(intValue(g[i]["count"], "count", 1, 64, place))
                         : 1;
    }
    if (c.instances == 0) c.instances = 1;
    if (c.instances > 64) configError(place, fmt::format("{} instances; at most 64", c.instances));
  }
  if (j.contains("dynamic_batching")) {
    const json& d = j["dynamic_batching"];
    checkKeys(d, {"max_queue_delay_microseconds", "preferred_batch_size", "default_queue_policy"},
              "dynamic_batching", place);
    c.dynamicBatching = true;
    if (d.contains("max_queue_delay_microseconds"))
      c.maxQueueDelayUs = intValue(d["max_queue_delay_microseconds"],
                                   "max_queue_delay_microseconds", 0, 10'000'000, place);
    if (d.contains("default_queue_policy")) {
      const json& q = d["default_queue_policy"];
      checkKeys(q, {"default_timeout_microseconds", "allow_timeout_override", "timeout_action"},
                "dynamic_batching.default_queue_policy", place);
      if (q.contains("default_timeout_microseconds"))
        c.defaultTimeoutUs = intValue(q["default_timeout_microseconds"],
                                      "default_timeout_microseconds", 0, int64_t{1} << 40, place);
      if (q.contains("allow_timeout_override")) {
        if (!q["allow_timeout_override"].is_boolean())
          configError(place, "'allow_timeout_override' must be true or false");
        c.allowTimeoutOverride = q["allow_timeout_override"].get<bool>();
      }
      if (q.contains("timeout_action") && q["timeout_action"] != "REJECT")
        configError(place,
                    "timeout_action: only \"REJECT\" is supported (a timed-out request is answered "
                    "with an error)");
    }
    if (c.maxBatchSize == 0) configError(place, "dynamic_batching needs max_batch_size > 0");
  }
  if (j.contains("threads"))
    c.threads = static_cast<int>(intValue(j["threads"], "threads", 1, 4096, place));
  if (j.contains("max_queue_size"))
    c.maxQueueSize = intValue(j["max_queue_size"], "max_queue_size", 1, 1 << 20, place);
  if (j.contains("compile")) {
    const json& k = j["compile"];
    checkKeys(k, {"precision", "min_block_size"}, "compile", place);
    c.compile = true;
    if (k.contains("precision")) {
      if (!k["precision"].is_string()) configError(place, "compile.precision must be a string");
      c.precision = k["precision"].get<std::string>();
      if (c.precision != "fp32" && c.precision != "bf16")
        configError(place,
                    fmt::format("compile.precision '{}': expected fp32 or bf16", c.precision));
    }
    if (k.contains("min_block_size"))
      c.minBlockSize = intValue(k["min_block_size"], "min_block_size", 1, 1 << 20, place);
  }
  return c;
}

// ---- the repository ----

namespace {

bool isVersionName(const std::string& v) {
  return !v.empty() && v.size() <= 18 &&
         std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The highest VERSION of `dir` holding model.pt ("" when none).
std::string highestVersion(const fs::path& dir) {
  std::error_code ec;
  int64_t best = -1;
  std::string version;
  for (const auto& v : fs::directory_iterator(dir, ec)) {
    const std::string vname = v.path().filename().string();
    if (!v.is_directory(ec) || !isVersionName(vname) ||
        !fs::is_regular_file(v.path() / "model.pt", ec))
      continue;
    const int64_t n = std::stoll(vname);
    if (n > best) {
      best = n;
      version = vname;
    }
  }
  return version;
}

std::vector<fs::path> modelDirs(const std::string& repository, std::error_code& ec) {
  std::vector<fs::path> dirs;
  std::error_code entry;
  for (const auto& e : fs::directory_iterator(repository, ec))
    if (e.is_directory(entry) && e.path().filename().string()[0] != '.') dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

}  // namespace

ModelSource scanModel(const std::string& dirName) {
  const fs::path dir(dirName);
  ModelSource s;
  s.name = dir.filename().string();
  s.version = highestVersion(dir);
  if (s.version.empty())
    throw Error("model directory has no VERSION/model.pt (Triton's layout: NAME/1/model.pt)",
                dir.string());
  s.path = (dir / s.version / "model.pt").string();
  const fs::path config = dir / "config.json";
  if (fs::exists(config)) {
    std::ifstream in(config, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) throw Error("cannot read", config.string());
    s.config = parseModelConfig(text.str(), config.string());
  }
  return s;
}

std::vector<ModelSource> scanRepository(const std::string& repository) {
  std::error_code ec;
  if (!fs::is_directory(repository, ec))
    throw Error("model repository is not a directory", repository);
  const std::vector<fs::path> dirs = modelDirs(repository, ec);
  if (ec)
    throw Error(fmt::format("cannot read the model repository: {}", ec.message()), repository);
  std::vector<ModelSource> out;
  for (const auto& dir : dirs) out.push_back(scanModel(dir.string()));
  if (out.empty())
    throw Error("model repository holds no model (expected NAME/VERSION/model.pt)", repository);
  return out;
}

std::vector<std::pair<std::string, std::string>> listRepository(const std::string& repository) {
  std::vector<std::pair<std::string, std::string>> out;
  std::error_code ec;
  for (const auto& dir : modelDirs(repository, ec))
    out.emplace_back(dir.filename().string(), highestVersion(dir));
  return out;
}

// ---- a served model ----

ServedModel::ServedModel(ModelSource source) : source_(std::move(source)) {}

namespace {

// The parameter type without Optional.
TypePtr unwrapOptional(const TypePtr& t) {
  if (const auto* o = t->cast<OptionalType>()) return o->getElementType();
  return t;
}

// The protocol datatype a parameter type implies ("" for a tensor: any).
std::string datatypeOfType(const TypePtr& type) {
  const TypePtr t = unwrapOptional(type);
  switch (t->kind()) {
    case TypeKind::TensorType: return "";
    case TypeKind::IntType: return "INT64";
    case TypeKind::FloatType: return "FP64";
    case TypeKind::BoolType: return "BOOL";
    case TypeKind::StringType: return "BYTES";
    case TypeKind::ListType: {
      const TypePtr e = t->cast<ListType>()->getElementType();
      if (e->kind() == TypeKind::StringType) return "BYTES";
      if (e->kind() == TypeKind::IntType) return "INT64";
      if (e->kind() == TypeKind::FloatType) return "FP64";
      if (e->kind() == TypeKind::BoolType) return "BOOL";
      return "?";
    }
    default: return "?";
  }
}

bool isTensorParam(const TypePtr& type) {
  return unwrapOptional(type)->kind() == TypeKind::TensorType;
}
bool isListParam(const TypePtr& type) { return unwrapOptional(type)->kind() == TypeKind::ListType; }

// Output metadata from forward's return type, as far as it fixes the flattening.
bool outputsOfType(const TypePtr& t, std::vector<TensorSpec>& out) {
  switch (t->kind()) {
    case TypeKind::TensorType: out.push_back({"", "", {}, false}); return true;
    case TypeKind::IntType: out.push_back({"", "INT64", {}, true}); return true;
    case TypeKind::FloatType: out.push_back({"", "FP64", {}, true}); return true;
    case TypeKind::BoolType: out.push_back({"", "BOOL", {}, true}); return true;
    case TypeKind::StringType: out.push_back({"", "BYTES", {1}, true}); return true;
    case TypeKind::ListType:
      if (t->cast<ListType>()->getElementType()->kind() == TypeKind::StringType) {
        out.push_back({"", "BYTES", {-1}, true});
        return true;
      }
      return false;
    case TypeKind::TupleType:
      for (const auto& e : t->cast<TupleType>()->elements())
        if (!outputsOfType(e, out)) return false;
      return true;
    default: return false;
  }
}

std::string outputName(const std::vector<TensorSpec>& configured, size_t i) {
  if (i < configured.size()) return configured[i].name;
  return fmt::format("output__{}", i);
}

Tensor zeros(ScalarType dtype, const std::vector<int64_t>& shape) {
  Tensor t = Tensor::empty(IntList(shape.begin(), shape.end()), dtype);
  if (t.nbytes()) std::memset(t.rawData(), 0, t.nbytes());
  return t;
}

}  // namespace

void ServedModel::resolveSignature() {
  const Module& m = instances_.front();
  if (!m.findMethod("forward")) throw Error("the module has no forward method", source_.path);
  params_ = m.methodParams("forward");
  const ModelConfig& c = source_.config;
  if (c.inputs.size() > params_.size())
    throw Error(fmt::format("config.json declares {} inputs, but forward takes {}", c.inputs.size(),
                            params_.size()),
                source_.path);
  inputs_.clear();
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamSpec& p = params_[i];
    const std::string implied = datatypeOfType(p.type);
    if (implied == "?")
      throw Error(
          fmt::format("forward's parameter '{}' has type {}, which v2 tensors cannot carry "
                      "(Tensor, int, float, bool, str and lists of int, float, bool or str can)",
                      p.name, p.type->annotationStr()),
          source_.path);
    TensorSpec s;
    if (i < c.inputs.size()) {
      s = c.inputs[i];
      if (!implied.empty() && !s.datatype.empty() && s.datatype != implied)
        throw Error(
            fmt::format(
                "config.json: input '{}' is declared {}, but forward's parameter '{}' is {}",
                s.name, s.datatype, p.name, p.type->annotationStr()),
            source_.path);
    } else {
      s.name = p.name;
    }
    if (s.datatype.empty()) s.datatype = implied;
    inputs_.push_back(std::move(s));
  }
  outputs_.clear();
  const auto& returns = m.findMethod("forward")->schema().returns();
  std::vector<TensorSpec> fromType;
  if (returns.size() == 1 && outputsOfType(returns[0].type(), fromType)) outputs_ = fromType;
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (i >= outputs_.size()) outputs_.resize(i + 1);
    if (!c.outputs[i].datatype.empty()) outputs_[i].datatype = c.outputs[i].datatype;
    if (c.outputs[i].hasDims) {
      outputs_[i].dims = c.outputs[i].dims;
      outputs_[i].hasDims = true;
    }
  }
  for (size_t i = 0; i < outputs_.size(); ++i) outputs_[i].name = outputName(c.outputs, i);
}

bool ServedModel::batchable() const {
  const ModelConfig& c = source_.config;
  if (c.maxBatchSize <= 0 || !c.dynamicBatching || params_.empty() ||
      !isTensorParam(params_[0].type))
    return false;
  // Other parameters may be tensors, or values that joined requests must share (Scheduler).
  for (const auto& p : params_) {
    const TypeKind k = unwrapOptional(p.type)->kind();
    if (k != TypeKind::TensorType && k != TypeKind::IntType && k != TypeKind::FloatType &&
        k != TypeKind::BoolType)
      return false;
  }
  return true;
}

void ServedModel::load() {
  const ModelConfig& c = source_.config;
  instances_.clear();
  for (int i = 0; i < c.instances; ++i) {
    Module m = torchless::load(source_.path);
    if (i == 0) {
      instances_.push_back(m);
      resolveSignature();
      instances_.clear();
    }
    if (c.compile) {
      CompileSpec spec;
      spec.precision = c.precision;
      spec.minBlockSize = static_cast<size_t>(c.minBlockSize);
      bool staticShapes = true;
      for (size_t k = 0; k < inputs_.size(); ++k) {
        const TensorSpec& s = inputs_[k];
        if (!isTensorParam(params_[k].type) || !s.hasDims ||
            std::any_of(s.dims.begin(), s.dims.end(), [](int64_t d) { return d < 0; }))
          staticShapes = false;
      }
      if (staticShapes) {
        for (size_t k = 0; k < inputs_.size(); ++k) {
          const TensorSpec& s = inputs_[k];
          engine::InputProfile prof;
          IntList shape(s.dims.begin(), s.dims.end());
          if (c.maxBatchSize > 0) {
            prof.min = shape, prof.opt = shape, prof.max = shape;
            prof.min.insert(prof.min.begin(), 1);
            prof.opt.insert(prof.opt.begin(), 1);
            prof.max.insert(prof.max.begin(), c.maxBatchSize);
          } else {
            prof.min = prof.opt = prof.max = shape;
          }
          spec.inputs.push_back(prof);
          const std::optional<ScalarType> dt =
              s.datatype.empty() ? ScalarType::Float : scalarTypeOf(s.datatype, s.name);
          spec.exampleInputs.push_back(IValue(zeros(dt.value_or(ScalarType::Float), prof.opt)));
        }
      }
      m = torchless::compile(m, spec).module;
    }
    instances_.push_back(std::move(m));
  }
}

std::string ServedModel::warmUp(int threads) {
  std::vector<IValue> args;
  for (size_t k = 0; k < params_.size(); ++k) {
    const TensorSpec& s = inputs_[k];
    if (!isTensorParam(params_[k].type) || !s.hasDims || s.datatype.empty() ||
        s.datatype == "BYTES" ||
        std::any_of(s.dims.begin(), s.dims.end(), [](int64_t d) { return d < 0; })) {
      if (k < source_.config.inputs.size() || !params_[k].defaultValue) return "";
      args.push_back(*params_[k].defaultValue);
      continue;
    }
    std::vector<int64_t> shape = s.dims;
    if (source_.config.maxBatchSize > 0) shape.insert(shape.begin(), 1);
    args.push_back(IValue(zeros(*scalarTypeOf(s.datatype, s.name), shape)));
  }
  // Joined batches come in every size up to max_batch_size: plan each (at most 16, the
  // engine's plan cache) so that no request waits for a plan to be built.
  const int64_t sizes = batchable() ? std::min<int64_t>(source_.config.maxBatchSize, 16) : 1;
  torchless::setNumThreads(threads);  // as Scheduler runs requests
  for (int64_t b = 1; b <= sizes; ++b) {
    std::vector<IValue> batch = args;
    if (b > 1)
      for (size_t k = 0; k < batch.size(); ++k)
        if (batch[k].isTensor() && k < inputs_.size() && inputs_[k].hasDims) {
          IntList shape = batch[k].toTensor().sizes();
          shape[0] = b;
          batch[k] = IValue(zeros(batch[k].toTensor().dtype(), shape));
        }
    for (const Module& m : instances_) {
      try {
        m.forward(batch);
      } catch (const std::exception& e) {
        return e.what();
      }
    }
  }
  return "";
}

ModelMetadata ServedModel::metadata() const {
  ModelMetadata md;
  md.name = source_.name;
  md.versions = {source_.version};
  md.platform = "torchless_torchscript";
  const bool batched = source_.config.maxBatchSize > 0;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const TensorSpec& s = inputs_[i];
    TensorMetadata t{s.name, s.datatype.empty() ? "FP32" : s.datatype, {}};
    if (isTensorParam(params_[i].type)) {
      if (s.hasDims) {
        if (batched) t.shape.push_back(-1);
        t.shape.insert(t.shape.end(), s.dims.begin(), s.dims.end());
      } else {
        t.shape = {-1};
      }
    } else {
      t.shape = {isListParam(params_[i].type) ? -1 : 1};
    }
    md.inputs.push_back(std::move(t));
  }
  for (const auto& s : outputs_) {
    TensorMetadata t{s.name, s.datatype.empty() ? "FP32" : s.datatype, {}};
    if (s.hasDims) {
      if (batched && s.datatype != "BYTES") t.shape.push_back(-1);
      t.shape.insert(t.shape.end(), s.dims.begin(), s.dims.end());
    } else {
      t.shape = {-1};
    }
    md.outputs.push_back(std::move(t));
  }
  return md;
}

namespace {

bool isIntegral(ScalarType t) {
  switch (t) {
    case ScalarType::Byte:
    case ScalarType::Char:
    case ScalarType::Short:
    case ScalarType::Int:
    case ScalarType::Long:
    case ScalarType::UInt16:
    case ScalarType::UInt32:
    case ScalarType::UInt64: return true;
    default: return false;
  }
}

}  // namespace

std::vector<IValue> ServedModel::bindInputs(const InferRequest& request) const {
  std::vector<const WireTensor*> byParam(params_.size(), nullptr);
  for (const WireTensor& w : request.inputs) {
    size_t k = 0;
    while (k < inputs_.size() && inputs_[k].name != w.name) ++k;
    if (k == inputs_.size()) {
      std::vector<std::string> names;
      for (const auto& s : inputs_) names.push_back(s.name);
      badRequest(fmt::format("model '{}' has no input '{}' (its inputs: {})", name(), w.name,
                             fmt::join(names, ", ")));
    }
    if (byParam[k]) badRequest(fmt::format("input '{}' given twice", w.name));
    byParam[k] = &w;
  }
  std::vector<IValue> args;
  const ModelConfig& c = source_.config;
  for (size_t k = 0; k < params_.size(); ++k) {
    const ParamSpec& p = params_[k];
    const TensorSpec& s = inputs_[k];
    const WireTensor* w = byParam[k];
    if (!w) {
      if (p.defaultValue) {
        args.push_back(*p.defaultValue);
        continue;
      }
      if (p.type->kind() == TypeKind::OptionalType) {
        args.push_back(IValue());
        continue;
      }
      badRequest(fmt::format("missing input '{}' of model '{}'", s.name, name()));
    }
    const std::string what = fmt::format("input '{}'", w->name);
    if (!s.datatype.empty() && w->datatype != s.datatype)
      badRequest(
          fmt::format("{}: datatype {}, but the model takes {}", what, w->datatype, s.datatype));
    const TypePtr t = unwrapOptional(p.type);
    if (t->kind() == TypeKind::TensorType) {
      if (w->datatype == "BYTES")
        badRequest(fmt::format("{}: BYTES given for a tensor parameter", what));
      if (s.hasDims || c.maxBatchSize > 0) {
        std::vector<int64_t> expected;
        if (c.maxBatchSize > 0) expected.push_back(-1);
        expected.insert(expected.end(), s.dims.begin(), s.dims.end());
        bool ok = !s.hasDims || w->shape.size() == expected.size();
        for (size_t d = 0; ok && d < expected.size() && s.hasDims; ++d)
          ok = expected[d] < 0 || expected[d] == w->shape[d];
        if (!ok)
          badRequest(fmt::format("{}: shape [{}], but the model takes [{}] (-1: any size)", what,
                                 fmt::join(w->shape, ", "), fmt::join(expected, ", ")));
        if (c.maxBatchSize > 0) {
          if (w->shape.empty() || w->shape[0] < 1 || w->shape[0] > c.maxBatchSize)
            badRequest(fmt::format("{}: batch size {} is outside 1..{} (max_batch_size)", what,
                                   w->shape.empty() ? 0 : w->shape[0], c.maxBatchSize));
        }
      }
      args.push_back(IValue(w->tensor));
      continue;
    }
    const int64_t n =
        w->datatype == "BYTES" ? static_cast<int64_t>(w->strings.size()) : w->tensor.numel();
    if (t->kind() == TypeKind::ListType) {
      const TypePtr e = t->cast<ListType>()->getElementType();
      std::vector<IValue> items;
      for (int64_t i = 0; i < n; ++i) {
        if (e->kind() == TypeKind::StringType)
          items.emplace_back(w->strings[i]);
        else if (e->kind() == TypeKind::IntType)
          items.emplace_back(w->tensor.intAt(i));
        else if (e->kind() == TypeKind::FloatType)
          items.emplace_back(w->tensor.doubleAt(i));
        else
          items.emplace_back(w->tensor.intAt(i) != 0);
      }
      args.push_back(IValue(ListImpl::create(e, std::move(items))));
      continue;
    }
    if (n != 1)
      badRequest(fmt::format("{}: {} elements, but parameter '{}' is one {}", what, n, p.name,
                             t->annotationStr()));
    switch (t->kind()) {
      case TypeKind::StringType: args.push_back(IValue(w->strings[0])); break;
      case TypeKind::IntType:
        if (!isIntegral(w->tensor.dtype()))
          badRequest(
              fmt::format("{}: parameter '{}' is an int, got {}", what, p.name, w->datatype));
        args.push_back(IValue(w->tensor.intAt(0)));
        break;
      case TypeKind::FloatType: args.push_back(IValue(w->tensor.doubleAt(0))); break;
      case TypeKind::BoolType: args.push_back(IValue(w->tensor.intAt(0) != 0)); break;
      default:
        badRequest(fmt::format("{}: unsupported parameter type {}", what, t->annotationStr()));
    }
  }
  return args;
}

int64_t ServedModel::batchSize(const std::vector<IValue>& args) const {
  return batchable() ? requestRows(args) : 0;
}

int64_t ServedModel::requestRows(const std::vector<IValue>& args) const {
  if (source_.config.maxBatchSize <= 0 || args.empty() || !args[0].isTensor()) return 0;
  const Tensor t = args[0].toTensor();
  return t.dim() > 0 ? t.size(0) : 0;
}

namespace {

void flattenResult(const IValue& v, std::vector<WireTensor>& out) {
  if (v.isTuple()) {
    for (const auto& e : v.toTuple()->elements) flattenResult(e, out);
    return;
  }
  if (v.isList()) {
    const auto& items = v.toList()->list;
    if (!items.empty() &&
        std::all_of(items.begin(), items.end(), [](const IValue& e) { return e.isString(); })) {
      WireTensor w;
      w.datatype = "BYTES";
      w.shape = {static_cast<int64_t>(items.size())};
      for (const auto& e : items) w.strings.push_back(e.toStringRef());
      out.push_back(std::move(w));
      return;
    }
  }
  for (FlatOutput& f : flattenOutputs(v)) {
    WireTensor w;
    if (f.text) {
      w.datatype = "BYTES";
      w.shape = {1};
      w.strings = {*f.text};
    } else {
      w.tensor = f.tensor->contiguous();
      if (w.tensor.isQuantized())
        throw ServeError(ErrorKind::Internal,
                         "the model returned a quantized tensor, which v2 cannot carry");
      w.datatype = datatypeOf(w.tensor.dtype());
      w.shape.assign(w.tensor.sizes().begin(), w.tensor.sizes().end());
    }
    out.push_back(std::move(w));
  }
}

}  // namespace

std::vector<WireTensor> ServedModel::outputsOf(const IValue& result,
                                               const InferRequest& request) const {
  std::vector<WireTensor> all;
  try {
    flattenResult(result, all);
  } catch (const ServeError&) {
    throw;
  } catch (const std::exception& e) {
    throw ServeError(ErrorKind::Internal,
                     fmt::format("cannot return the model's result: {}", e.what()));
  }
  for (size_t i = 0; i < all.size(); ++i) all[i].name = outputName(source_.config.outputs, i);
  if (request.outputs.empty()) {
    for (auto& w : all) w.binary = request.binaryOutputs;
    return all;
  }
  std::vector<WireTensor> picked;
  for (const auto& [want, binary] : request.outputs) {
    auto it =
        std::find_if(all.begin(), all.end(), [&](const WireTensor& w) { return w.name == want; });
    if (it == all.end()) {
      std::vector<std::string> names;
      for (const auto& w : all) names.push_back(w.name);
      badRequest(fmt::format("model '{}' has no output '{}' (its outputs: {})", name(), want,
                             fmt::join(names, ", ")));
    }
    picked.push_back(*it);
    picked.back().binary = binary || request.binaryOutputs;
  }
  return picked;
}

}  // namespace torchless::serve
