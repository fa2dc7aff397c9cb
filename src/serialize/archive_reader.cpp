#include "serialize/archive_reader.h"

#include "core/error.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <unordered_set>

namespace torchless {

uint64_t parseVersionRecord(std::string_view text, const std::string& place) {
  // std::stoull semantics, as PyTorch's reader: skip leading space, optional sign, digits; the
  // rest is ignored. A '-' wraps around (so "-1" reads as a huge number).
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  size_t digitsStart = i;
  uint64_t v = 0;
  auto shown = [&] {
    std::string s(text.substr(0, std::min<size_t>(text.size(), 40)));
    for (char& c : s)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    return s;
  };
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10)
      throw Error(fmt::format("file format version '{}' is out of range", shown()), place);
    v = v * 10 + d;
  }
  if (i == digitsStart)
    throw Error(fmt::format("file format version '{}' is not a number", shown()), place);
  return negative ? (~v + 1) : v;
}

ArchiveReader::ArchiveReader(const std::string& path, ZipReaderOptions options)
    : zip_(ZipReader::open(path, options)) {
  init();
}

ArchiveReader::ArchiveReader(std::shared_ptr<void> owner, const void* data, size_t size,
                             std::string name, ZipReaderOptions options)
    : zip_(ZipReader::openBuffer(std::move(owner), data, size, std::move(name), options)) {
  init();
}

void ArchiveReader::init() {
  const std::string& file = zip_->displayName();
  if (hasRecord("model.json"))
    throw Error(
        "unsupported legacy TorchScript format (model.json, written by PyTorch < 1.4); "
        "re-save the model with a newer torch.jit.save",
        file);
  if (hasRecord(".data/version"))
    versionRecord_ = ".data/version";
  else if (hasRecord("version"))
    versionRecord_ = "version";
  else
    throw Error("missing record 'version' (nor '.data/version'): not a TorchScript archive", file);
  std::string place = zip_->recordPlace(versionRecord_);
  if (zip_->findRecord(versionRecord_)->size > 64)
    throw Error("version record is longer than 64 bytes", place);
  version_ = parseVersionRecord(zip_->readRecordString(versionRecord_), place);
  if (version_ < kMinSupportedFileFormatVersion)
    throw Error(
        fmt::format("file format version {} is not supported (supported: {} to {})", version_,
                    kMinSupportedFileFormatVersion, kMaxSupportedFileFormatVersion),
        place);
  if (version_ > kMaxSupportedFileFormatVersion)
    throw Error(
        fmt::format("file format version {} is newer than this reader supports "
                    "(supported: {} to {})",
                    version_, kMinSupportedFileFormatVersion, kMaxSupportedFileFormatVersion),
        place);

  if (const ZipRecordInfo* bo = zip_->findRecord("byteorder")) {
    std::string bplace = zip_->recordPlace("byteorder");
    if (bo->size > 16) throw Error("byteorder record is longer than 16 bytes", bplace);
    std::string text = zip_->readRecordString("byteorder");
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    if (text == "big")
      throw Error("big-endian archives are not supported (tensor data would need byte swapping)",
                  bplace);
    if (text != "little") throw Error(fmt::format("unknown byteorder '{}'", text), bplace);
    byteorder_ = text;
  }
  if (!hasRecord("data.pkl"))
    throw Error("missing record 'data.pkl' (the pickled root module)", file);
  if (!hasRecord("constants.pkl"))
    throw Error(
        "missing record 'constants.pkl' (torch.jit.save always writes it; a file "
        "without it may come from torch.save, which is not a TorchScript archive)",
        file);
}

UnpickleResult ArchiveReader::readPickle(const std::string& record, const std::string& storageDir,
                                         const UnpickleHooks& hooks,
                                         bool shortRecordsAsPlaceholders) {
  RecordData rd = zip_->readRecord(record);
  UnpicklerOptions opt;
  opt.shortRecordsAsPlaceholders = shortRecordsAsPlaceholders;
  opt.place = zip_->recordPlace(record);
  opt.storageDir = storageDir;
  opt.resolveClass = hooks.resolveClass;
  opt.resolveType = hooks.resolveType;
  opt.registry = registry_;
  opt.isModuleHint = [this](const std::string& qualname) { return moduleHint(qualname); };
  const ZipReader* zip = zip_.get();
  bool placeholders = placeholderStorages_;
  opt.readStorage = [zip, storageDir, placeholders](const std::string& key) {
    std::string name = storageDir + key;
    const ZipRecordInfo* info = zip->findRecord(name);
    if (!info) throw Error(fmt::format("missing record '{}' for storage key '{}'", name, key));
    if (placeholders) return placeholderRecord(info->size, zip->recordPlace(name));
    return zip->readRecord(name);
  };
  return unpickle(rd.data, rd.size, opt);
}

UnpickleResult ArchiveReader::readConstants(const UnpickleHooks& hooks) {
  UnpickleResult r = readPickle("constants.pkl", "constants/", hooks);
  if (!r.value.isTuple())
    throw Error(fmt::format("constants table is a {}, not a tuple", r.value.tagName()),
                zip_->recordPlace("constants.pkl"));
  return r;
}

UnpickleResult ArchiveReader::readData(const UnpickleHooks& hooks) {
  UnpickleResult r = readPickle("data.pkl", "data/", hooks);
  if (!r.value.isObject())
    throw Error(fmt::format("root value is a {}, not a module object", r.value.tagName()),
                zip_->recordPlace("data.pkl"));
  // The root is a module even when its state lacks `training` (mobile-optimized modules).
  ObjectPtr root = r.value.toObject();
  auto it = registry_->classes.find(root->type->name());
  if (!root->type->isModule() && it != registry_->classes.end() && it->second == root->type) {
    auto moduleType = ClassType::create(root->type->name(), true);
    for (const auto& a : root->type->attributes())
      moduleType->addAttribute(a.name, a.type, a.isParameter, a.isBuffer);
    it->second = moduleType;
    root->type = moduleType;
  }
  return r;
}

std::optional<UnpickleResult> ArchiveReader::readTracedInputs(const UnpickleHooks& hooks) {
  if (!hasRecord("traced_inputs.pkl")) return std::nullopt;
  // PyTorch writes the example tensors' records empty: their shapes and dtypes are what is kept.
  return readPickle("traced_inputs.pkl", "traced_inputs/", hooks, true);
}

std::optional<bool> ArchiveReader::moduleHint(const std::string& qualname) {
  auto dot = qualname.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  std::string qualifier = qualname.substr(0, dot), name = qualname.substr(dot + 1);
  auto it = codeCache_.find(qualifier);
  if (it == codeCache_.end()) {
    std::string rec = codeRecordName(qualifier);
    const ZipRecordInfo* info = zip_->findRecord(rec);
    std::string text;
    if (info && info->size <= (uint64_t{64} << 20)) text = zip_->readRecordString(rec);
    it = codeCache_.emplace(qualifier, std::move(text)).first;
  }
  const std::string& text = it->second;
  if (text.empty()) return std::nullopt;
  // A class header at the start of a line: `class Name(Module):` or `class Name:` etc.
  std::string head = "class " + name;
  for (size_t pos = text.find(head); pos != std::string::npos; pos = text.find(head, pos + 1)) {
    if (pos != 0 && text[pos - 1] != '\n') continue;
    size_t after = pos + head.size();
    if (after < text.size() && (text[after] == ':' || text[after] == '('))
      return text.compare(after, 9, "(Module):") == 0;
  }
  return std::nullopt;
}

std::string ArchiveReader::codeRecordName(const std::string& qualifier) {
  std::string path = qualifier;
  for (char& c : path)
    if (c == '.') c = '/';
  return "code/" + path + ".py";
}

std::vector<std::string> ArchiveReader::codeQualifiers() const {
  std::vector<std::string> out;
  for (const auto& r : records()) {
    const std::string& n = r.name;
    if (n.size() <= 8 || n.compare(0, 5, "code/") != 0 || n.compare(n.size() - 3, 3, ".py") != 0)
      continue;
    std::string q = n.substr(5, n.size() - 8);
    for (char& c : q)
      if (c == '/') c = '.';
    out.push_back(std::move(q));
  }
  return out;
}

std::optional<std::string> ArchiveReader::codeSource(const std::string& qualifier) const {
  std::string rec = codeRecordName(qualifier);
  if (!hasRecord(rec)) return std::nullopt;
  return zip_->readRecordString(rec);
}

std::vector<std::string> ArchiveReader::extraFiles() const {
  std::vector<std::string> out;
  for (const auto& r : records())
    if (r.name.size() > 6 && r.name.compare(0, 6, "extra/") == 0) out.push_back(r.name.substr(6));
  return out;
}

std::string ArchiveReader::readExtraFile(const std::string& name) const {
  return zip_->readRecordString("extra/" + name);
}

ArchiveData loadArchiveData(const std::string& path, const UnpickleHooks& hooks,
                            const ArchiveDataOptions& options) {
  ArchiveReader ar(path);
  if (!options.readTensorData) ar.usePlaceholderStorages();
  ArchiveData d;
  d.path = path;
  d.prefix = ar.zip().prefix();
  d.version = ar.version();
  d.versionRecord = ar.versionRecord();
  d.records = ar.records();
  d.hasBytecode = ar.hasBytecode();
  d.hasSerializationId = ar.hasSerializationId();
  d.byteorder = ar.byteorder();
  d.extraFiles = ar.extraFiles();

  UnpickleResult c = ar.readConstants(hooks);
  d.constants = c.value.toTuple();
  d.constantStorages = std::move(c.storages);
  d.pendingSetState = std::move(c.pendingSetState);
  d.warnings = std::move(c.warnings);

  UnpickleResult r = ar.readData(hooks);
  d.root = r.value;
  d.dataStorages = std::move(r.storages);
  for (auto& p : r.pendingSetState) d.pendingSetState.push_back(std::move(p));
  for (auto& w : r.warnings) d.warnings.push_back(std::move(w));

  // PyTorch's loader never reads traced_inputs.pkl; a bad one is a warning, not a load error.
  try {
    if (std::optional<UnpickleResult> t = ar.readTracedInputs(hooks)) {
      d.tracedInputs = t->value;
      for (auto& w : t->warnings) d.warnings.push_back(std::move(w));
    }
  } catch (const Error& e) {
    d.warnings.push_back("traced_inputs.pkl not read: " + e.firstLine());
  }

  for (const auto& q : ar.codeQualifiers()) d.codeSources[q] = *ar.codeSource(q);
  d.registry = ar.registry();
  return d;
}

}  // namespace torchless

namespace torchless {

namespace {
void collectModuleTensors(const ObjectPtr& obj, const std::string& prefix,
                          std::vector<NamedTensor>& out,
                          std::unordered_set<const TensorImpl*>& seen) {
  const auto& attrs = obj->type->attributes();
  for (size_t i = 0; i < attrs.size() && i < obj->slots.size(); ++i) {
    const IValue& v = obj->slots[i];
    if (!v.isTensor()) continue;
    Tensor t = v.toTensor();
    if (seen.insert(t.impl().get()).second) out.push_back({prefix + attrs[i].name, t});
  }
  for (size_t i = 0; i < attrs.size() && i < obj->slots.size(); ++i) {
    const IValue& v = obj->slots[i];
    if (v.isObject() && v.toObject()->type->isModule())
      collectModuleTensors(v.toObject(), prefix + attrs[i].name + ".", out, seen);
  }
}
}  // namespace

std::vector<NamedTensor> moduleTensors(const IValue& root) {
  std::vector<NamedTensor> out;
  if (!root.isObject()) return out;
  std::unordered_set<const TensorImpl*> seen;
  collectModuleTensors(root.toObject(), "", out, seen);
  return out;
}

}  // namespace torchless
