// (a) Every real archive in shared/wild loads: data.pkl and constants.pkl unpickle, and the
// storages we see match what meta.json recorded (storage types, record count, devices).
// (b) Oracle: archives written by real PyTorch (gen_archives.py, a ctest fixture) load with the
// parameter/buffer names, shapes, dtypes and bytes PyTorch reports; the wild archives' tensors
// are checked against PyTorch's too when the fixture could load them.
#include "serialize/archive_reader.h"
#include "serialize_test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <set>

namespace torchless {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path wildDir() { return fs::path(TORCHLESS_SOURCE_DIR) / ".." / "shared" / "wild"; }
fs::path oracleDir() { return fs::path(TORCHLESS_SERIALIZE_ARCHIVES); }

json readJson(const fs::path& p) { return json::parse(test::readFile(p.string())); }

std::vector<std::string> wildNames() {
  std::vector<std::string> out;
  if (!fs::exists(wildDir())) return out;
  for (const auto& e : fs::directory_iterator(wildDir()))
    if (fs::exists(e.path() / "model.pt")) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(WildArchives, EveryArchiveLoads) {
  auto names = wildNames();
  ASSERT_FALSE(names.empty()) << "no archives in " << wildDir();
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    fs::path dir = wildDir() / name;
    json meta = readJson(dir / "meta.json");
    ArchiveData d;
    ASSERT_NO_THROW(d = loadArchiveData((dir / "model.pt").string())) << name;
    EXPECT_TRUE(d.root.isObject());
    EXPECT_EQ(std::to_string(d.version), meta["format_version"].get<std::string>());
    EXPECT_EQ(d.prefix, meta["extra"]["archive_prefix"].get<std::string>());
    EXPECT_EQ(d.byteorder.has_value(), meta["has_byteorder"].get<bool>());
    EXPECT_EQ(d.hasSerializationId, meta["has_serialization_id"].get<bool>());
    EXPECT_EQ(d.hasBytecode, meta["extra"]["has_bytecode_pkl"].get<bool>());
    EXPECT_FALSE(d.codeSources.empty());

    std::set<std::string> storageTypes, devices;
    size_t count = 0;
    for (const auto* list : {&d.constantStorages, &d.dataStorages}) {
      for (const auto& s : *list) {
        storageTypes.insert(std::string(toString(s.dtype)) + "Storage");
        devices.insert(s.location);
        ++count;
        // Every storage is a zero-copy view of a whole record: numel*itemsize <= record size.
        EXPECT_LE(s.storage.nbytes(), 1u << 30);
      }
    }
    std::set<std::string> expectedTypes, expectedDevices;
    for (const auto& t : meta["extra"]["storage_types"]) expectedTypes.insert(t.get<std::string>());
    for (const auto& t : meta["extra"]["devices"]) expectedDevices.insert(t.get<std::string>());
    EXPECT_EQ(storageTypes, expectedTypes);
    EXPECT_EQ(devices, expectedDevices);
    // Lite archives keep storages only bytecode.pkl uses, so the pickles may use fewer.
    size_t records = 0;
    for (const auto& r : d.records)
      records += r.name.rfind("data/", 0) == 0 || r.name.rfind("constants/", 0) == 0;
    EXPECT_EQ(records, meta["extra"]["tensor_records"].get<size_t>());
    EXPECT_LE(count, records);
    if (!d.hasBytecode) {
      EXPECT_EQ(count, records);
    }
    // Tensors of modules: dtype follows the storage, data lies inside it, device is the CPU.
    for (const auto& nt : moduleTensors(d.root)) {
      EXPECT_TRUE(nt.tensor.device().isCpu()) << nt.name;
      if (nt.tensor.numel() > 0) {
        EXPECT_LE((nt.tensor.storageOffset() + 1) * static_cast<int64_t>(nt.tensor.itemsize()),
                  static_cast<int64_t>(nt.tensor.storage().nbytes()));
      }
    }
  }
}

// ---- oracle ----------------------------------------------------------------------------------

/// Compares our module tensors with PyTorch's named_parameters() + named_buffers().
/// With `exact`, we must not have tensors PyTorch does not list.
void compareWithTorch(const ArchiveData& d, const json& entry, bool exact) {
  std::map<std::string, Tensor> ours;
  for (const auto& nt : moduleTensors(d.root)) ours[nt.name] = nt.tensor;
  std::set<std::string> theirs;
  for (const char* kind : {"parameters", "buffers"}) {
    for (const auto& t : entry[kind]) {
      std::string name = t["name"].get<std::string>();
      theirs.insert(name);
      SCOPED_TRACE(name);
      auto it = ours.find(name);
      ASSERT_NE(it, ours.end()) << "PyTorch has " << kind << " '" << name << "', we do not";
      const Tensor& x = it->second;
      EXPECT_EQ(x.sizes(), t["shape"].get<IntList>());
      EXPECT_EQ(dtypeName(x.dtype()), t["dtype"].get<std::string>());
      EXPECT_EQ(std::to_string(test::tensorChecksum(x)), t["checksum"].get<std::string>());
      EXPECT_EQ(x.requiresGrad(), t["requires_grad"].get<bool>());
    }
  }
  if (exact) {
    for (const auto& [name, t] : ours)
      EXPECT_TRUE(theirs.count(name))
          << "we have tensor '" << name << "' that PyTorch does not list";
  }
}

class SerializeOracle : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::path m = oracleDir() / "manifest.json";
    ASSERT_TRUE(fs::exists(m)) << "no oracle archives: run ctest -R serialize_oracle, which runs "
                                  "serialize_gen_archives first";
    manifest_ = readJson(m);
  }
  ArchiveData load(const std::string& name) {
    const json& e = manifest_["archives"][name];
    return loadArchiveData((oracleDir() / e["file"].get<std::string>()).string());
  }
  void check(const std::string& name) {
    SCOPED_TRACE(name);
    ArchiveData d = load(name);
    compareWithTorch(d, manifest_["archives"][name], true);
  }
  json manifest_;
};

TEST_F(SerializeOracle, Scripted) {
  check("scripted");
  ArchiveData d = load("scripted");
  auto root = d.root.toObject();
  EXPECT_EQ(root->getAttr("count").toInt(), 7);
  EXPECT_EQ(root->getAttr("ratio").toDouble(), 0.25);
  EXPECT_EQ(root->getAttr("name").toStringRef(), "héllo");
  EXPECT_EQ(root->getAttr("sizes").toIntVector(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(root->getAttr("names").type()->annotationStr(), "List[str]");
  EXPECT_EQ(root->getAttr("table").type()->annotationStr(), "Dict[str, int]");
  EXPECT_EQ(root->getAttr("table").toDict()->find(IValue("y"))->toInt(), 2);
  EXPECT_EQ(root->getAttr("pair").toTuple()->elements[1].toStringRef(), "four");
  // Views: two buffers share one storage; view_t is non-contiguous with an offset.
  Tensor a = root->getAttr("shared_a").toTensor(), b = root->getAttr("shared_b").toTensor();
  EXPECT_TRUE(a.storage().isAlias(b.storage()));
  Tensor v = root->getAttr("view_t").toTensor();
  EXPECT_EQ(v.storageOffset(), 1);
  EXPECT_EQ(v.strides(), (IntList{1, 6}));
  EXPECT_EQ(root->getAttr("scalar").toTensor().dim(), 0);
  EXPECT_EQ(root->getAttr("empty").toTensor().numel(), 0);
  EXPECT_EQ(d.extraFiles, std::vector<std::string>{"meta.txt"});
}

TEST_F(SerializeOracle, SharedParameter) {
  check("shared");
  ArchiveData d = load("shared");
  auto root = d.root.toObject();
  Tensor wa = root->getAttr("a").toObject()->getAttr("weight").toTensor();
  Tensor wb = root->getAttr("b").toObject()->getAttr("weight").toTensor();
  EXPECT_TRUE(wa.is(wb));
}

TEST_F(SerializeOracle, EveryDtype) {
  check("dtypes");
  ArchiveData d = load("dtypes");
  Tensor q = d.root.toObject()->getAttr("q_channel").toTensor();
  ASSERT_TRUE(q.isQuantized());
  EXPECT_EQ(q.quantizer()->scheme, QuantizerInfo::Scheme::PerChannelAffine);
  Tensor qt = d.root.toObject()->getAttr("q_tensor").toTensor();
  ASSERT_TRUE(qt.isQuantized());
  EXPECT_DOUBLE_EQ(qt.quantizer()->scale, 0.1);
  EXPECT_EQ(qt.quantizer()->zeroPoint, 3);
}

TEST_F(SerializeOracle, DeviceComplexEnum) {
  check("odd");
  auto root = load("odd").root.toObject();
  EXPECT_TRUE(root->getAttr("dev").toDevice().isCpu());
  EXPECT_EQ(root->getAttr("z").toComplexDouble(), std::complex<double>(1.0, -2.0));
  EXPECT_EQ(root->getAttr("color").toEnum()->type->name(), "__torch__.Color");
  EXPECT_EQ(root->getAttr("color").toEnum()->value.toInt(), 2);
}

TEST_F(SerializeOracle, SetStateIsPending) {
  ArchiveData d = load("withstate");
  ASSERT_EQ(d.pendingSetState.size(), 1u);
  EXPECT_EQ(d.pendingSetState[0].object.get(), d.root.toObject().get());
  const auto& st = d.pendingSetState[0].state.toTuple()->elements;
  ASSERT_EQ(st.size(), 3u);
  EXPECT_EQ(st[0].toTensor().sizes(), (IntList{3}));
  EXPECT_EQ(st[1].toInt(), 7);
}

TEST_F(SerializeOracle, TracedConstants) {
  ArchiveData d = load("traced_const");
  ASSERT_GE(d.constants->elements.size(), 1u);
  Tensor c = d.constants->elements[0].toTensor();
  EXPECT_EQ(c.sizes(), (IntList{3}));
  EXPECT_EQ(c.doubleAt(2), 3.0);
  EXPECT_EQ(d.constantStorages.size(), d.constants->elements.size());
}

TEST_F(SerializeOracle, GeluVersion10) {
  ArchiveData d = load("gelu");
  EXPECT_EQ(d.version, 10u);
  EXPECT_EQ(d.versionRecord, ".data/version");
}

TEST_F(SerializeOracle, Resnet18Traced) {
  check("resnet18");
  ArchiveData d = load("resnet18");
  std::map<std::string, Tensor> t;
  for (const auto& nt : moduleTensors(d.root)) t[nt.name] = nt.tensor;
  ASSERT_TRUE(t.count("layer1.0.conv1.weight"));
  EXPECT_EQ(t["layer1.0.conv1.weight"].sizes(), (IntList{64, 64, 3, 3}));
  EXPECT_EQ(t["fc.weight"].sizes(), (IntList{1000, 512}));
}

TEST_F(SerializeOracle, WildArchivesMatchTorch) {
  ASSERT_TRUE(manifest_.contains("wild")) << "the fixture did not load the wild archives";
  for (const auto& [name, entry] : manifest_["wild"].items()) {
    SCOPED_TRACE(name);
    if (entry.contains("error")) continue;  // PyTorch itself could not load it here
    ArchiveData d = loadArchiveData((wildDir() / name / "model.pt").string());
    compareWithTorch(d, entry, false);
  }
}

}  // namespace
}  // namespace torchless
