// The archive writer: pickles that our unpickler reads back value for value, zip records
// aligned at 64 bytes, and an archive that real PyTorch loads and runs (examples/tiny_cnn.pt
// read by us, written by us, loaded by torch.jit.load, same output as PyTorch's).
#include "serialize/archive_writer.h"
#include "core/error.h"
#include "serialize/archive_reader.h"
#include "serialize/pickler.h"
#include "serialize/unpickler.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

using namespace torchless;
namespace fs = std::filesystem;

namespace {

IValue roundTrip(const IValue& v) {
  Pickler p;
  p.pickle(v);
  std::map<std::string, Storage> storages;
  for (const auto& s : p.storages()) storages[s.key] = s.storage;
  UnpicklerOptions opts;
  opts.readStorage = [&](const std::string& key) {
    const Storage& s = storages.at(key);
    return RecordData{nullptr, s.data(), s.nbytes()};
  };
  return unpickle(p.bytes().data(), p.bytes().size(), opts).value;
}

TEST(Pickler, ScalarsStringsAndContainersRoundTrip) {
  auto ints = ListImpl::create(IntType::get(), {IValue(0), IValue(255), IValue(256), IValue(70000),
                                                IValue(-5), IValue(int64_t{1} << 40)});
  auto strs = ListImpl::create(StringType::get(), {IValue("a"), IValue("a"), IValue("b")});
  auto dict = DictImpl::create(StringType::get(), ListType::ofFloats());
  dict->insertOrAssign(IValue("z"),
                       IValue(ListImpl::create(FloatType::get(), {IValue(1.5), IValue(-0.0)})));
  dict->insertOrAssign(IValue("a"), IValue(ListImpl::create(FloatType::get())));
  IValue v(TupleImpl::create({IValue(ints), IValue(strs), IValue(dict), IValue(), IValue(true),
                              IValue(3.25), IValue(Device::parse("cpu")),
                              IValue(TupleImpl::create({}))}));
  IValue back = roundTrip(v);
  EXPECT_EQ(back.repr(), v.repr());
  EXPECT_EQ(back.toTuple()->elements[0].toList()->elementType->str(), "int");
  EXPECT_EQ(back.toTuple()->elements[1].toList()->elementType->str(), "str");
  EXPECT_EQ(back.toTuple()->elements[2].toDict()->entries()[0].first.toStringRef(), "z");
}

TEST(Pickler, TensorsShareStoragesAndKeepViews) {
  Tensor base = Tensor::fromVector(std::vector<float>(24, 0.f), {24});
  for (int i = 0; i < 24; ++i) base.data<float>()[i] = static_cast<float>(i);
  Tensor view = base.asStrided({2, 4}, {1, 6}, 1);
  Tensor scalar = Tensor::scalar(2.0, ScalarType::Double);
  Pickler p;
  p.pickle(IValue(TupleImpl::create({IValue(base), IValue(view), IValue(view), IValue(scalar)})));
  ASSERT_EQ(p.storages().size(), 2u);  // base and view share one storage
  IValue back = roundTrip(
      IValue(TupleImpl::create({IValue(base), IValue(view), IValue(view), IValue(scalar)})));
  const auto& e = back.toTuple()->elements;
  EXPECT_TRUE(e[0].toTensor().storage().isAlias(e[1].toTensor().storage()));
  EXPECT_TRUE(e[1].toTensor().is(e[2].toTensor()));  // the same tensor written once
  EXPECT_EQ(e[1].toTensor().strides(), (IntList{1, 6}));
  EXPECT_EQ(e[1].toTensor().doubleAt(1), 7.0);
  EXPECT_EQ(e[3].toTensor().dim(), 0);
  EXPECT_EQ(e[3].toTensor().itemDouble(), 2.0);
}

TEST(Pickler, RefusesWhatArchivesCannotHold) {
  Pickler p;
  EXPECT_THROW(p.pickle(IValue::capsule(std::make_shared<int>(1))), Error);
}

fs::path outDir() {
  fs::path d = fs::path(TORCHLESS_BINARY_DIR) / "archive_writer_test";
  fs::create_directories(d);
  return d;
}

ArchiveContents contentsOf(const std::string& path) {
  ArchiveData a = loadArchiveData(path);
  ArchiveContents c;
  c.version = a.version;
  c.root = a.root;
  c.constants = a.constants ? a.constants->elements : std::vector<IValue>{};
  c.codeSources = a.codeSources;
  return c;
}

// Local headers' data offsets, read from the file itself.
std::vector<std::pair<std::string, uint64_t>> dataOffsets(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::pair<std::string, uint64_t>> out;
  size_t pos = 0;
  auto u16 = [&](size_t at) {
    return static_cast<uint16_t>(static_cast<unsigned char>(bytes[at]) |
                                 (static_cast<unsigned char>(bytes[at + 1]) << 8));
  };
  auto u32 = [&](size_t at) {
    return static_cast<uint32_t>(u16(at) | (static_cast<uint32_t>(u16(at + 2)) << 16));
  };
  while (pos + 30 <= bytes.size() && u32(pos) == 0x04034b50) {
    const uint32_t size = u32(pos + 18);
    const uint16_t nameLen = u16(pos + 26), extraLen = u16(pos + 28);
    const uint64_t data = pos + 30 + nameLen + extraLen;
    out.emplace_back(bytes.substr(pos + 30, nameLen), data);
    pos = data + size;
  }
  return out;
}

TEST(ArchiveWriter, RecordsAreAlignedAndReadBack) {
  const std::string src = std::string(TORCHLESS_SOURCE_DIR) + "/examples/tiny_cnn.pt";
  const std::string dst = (outDir() / "tiny_cnn_rewritten.pt").string();
  writeArchive(dst, contentsOf(src));
  auto offsets = dataOffsets(dst);
  ASSERT_GT(offsets.size(), 10u);
  for (const auto& [name, off] : offsets) {
    EXPECT_EQ(off % 64, 0u) << name;
    EXPECT_EQ(name.rfind("tiny_cnn_rewritten/", 0), 0u) << name;
  }
  ArchiveData original = loadArchiveData(src);
  ArchiveData again = loadArchiveData(dst);
  EXPECT_EQ(again.version, original.version);
  EXPECT_EQ(again.codeSources, original.codeSources);
  EXPECT_EQ(again.root.toObject()->type->name(), "__torch__.TinyCNN");
}

TEST(ArchiveWriter, NothingIsLeftBehindOnFailure) {
  const std::string dst = (outDir() / "never_written.pt").string();
  fs::remove(dst);
  ArchiveContents c;
  c.root = IValue(3);  // not an object
  EXPECT_THROW(writeArchive(dst, c), Error);
  EXPECT_FALSE(fs::exists(dst));
  auto cls = ClassType::create("__torch__.M", true);
  cls->addAttribute("bad", AnyType::get());
  auto obj = Object::create(cls);
  obj->setAttr("bad", IValue::capsule(std::make_shared<int>(1)));
  c.root = IValue(obj);
  EXPECT_THROW(writeArchive(dst, c), Error);
  EXPECT_FALSE(fs::exists(dst));
  for (const auto& entry : fs::directory_iterator(outDir()))
    EXPECT_EQ(entry.path().filename().string().find("never_written.pt.tmp"), std::string::npos);
}

// Real PyTorch loads what we wrote and computes the same output as from the original.
TEST(ArchiveWriter, TorchJitLoadRunsTheRewrittenArchive) {
  const std::string src = std::string(TORCHLESS_SOURCE_DIR) + "/examples/tiny_cnn.pt";
  const std::string dst = (outDir() / "tiny_cnn_for_torch.pt").string();
  writeArchive(dst, contentsOf(src));
  const std::string script =
      std::string(TORCHLESS_SOURCE_DIR) + "/tests/serialize/check_torch_loads.py";
  const std::string cmd = "/usr/bin/python3 " + script + " " + dst + " " + TORCHLESS_SOURCE_DIR +
                          "/examples/input.npy " + TORCHLESS_SOURCE_DIR + "/examples/expected.npy";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace
