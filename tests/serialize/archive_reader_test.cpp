// ArchiveReader / ZipReader on hand-made archives: the good path and every rejected input.
#include "serialize/archive_reader.h"
#include "serialize_test_util.h"

#include <gtest/gtest.h>

namespace torchless {
namespace {

using test::minimalArchive;
using test::minimalDataPkl;
using test::Pickle;
using test::ZipEntry;

/// Loads `bytes` written to `name` and returns the error's first line ("" if it loaded).
std::string loadError(const std::string& name, const std::string& bytes) {
  std::string path = test::writeTemp(name, bytes);
  try {
    loadArchiveData(path);
  } catch (const Error& e) {
    return e.firstLine();
  }
  return "";
}

#define EXPECT_LOAD_ERROR(name, bytes, ...)                \
  do {                                                     \
    std::string msg_ = loadError(name, bytes);             \
    ASSERT_FALSE(msg_.empty()) << "loaded without error";  \
    for (const char* part : {__VA_ARGS__})                 \
      EXPECT_NE(msg_.find(part), std::string::npos)        \
          << "message: " << msg_ << "\nmissing: " << part; \
  } while (0)

std::string withData(const std::string& dataPkl) { return test::makeZip(minimalArchive(dataPkl)); }

std::vector<ZipEntry> without(std::vector<ZipEntry> entries, const std::string& name) {
  std::erase_if(entries, [&](const ZipEntry& e) { return e.name == name; });
  return entries;
}

TEST(ArchiveReader, MinimalArchiveLoads) {
  std::string path = test::writeTemp("minimal.pt", test::makeZip(minimalArchive()));
  ArchiveData d = loadArchiveData(path);
  EXPECT_EQ(d.prefix, "archive");
  EXPECT_EQ(d.version, 3u);
  EXPECT_EQ(d.versionRecord, "version");
  ASSERT_TRUE(d.root.isObject());
  auto root = d.root.toObject();
  EXPECT_EQ(root->type->name(), "__torch__.M");
  EXPECT_TRUE(root->type->isModule());
  Tensor w = root->getAttr("w").toTensor();
  EXPECT_EQ(w.sizes(), (IntList{2}));
  EXPECT_EQ(w.dtype(), ScalarType::Float);
  EXPECT_FLOAT_EQ(w.data<float>()[0], 1.5f);
  EXPECT_FLOAT_EQ(w.data<float>()[1], -2.0f);
  EXPECT_TRUE(root->getAttr("training").toBool());
  EXPECT_EQ(d.constants->elements.size(), 0u);
  ASSERT_EQ(d.codeSources.count("__torch__"), 1u);
  EXPECT_NE(d.codeSources["__torch__"].find("class M(Module)"), std::string::npos);
  EXPECT_FALSE(d.hasBytecode);
  EXPECT_FALSE(d.byteorder.has_value());
}

TEST(ArchiveReader, DataVersionWinsAndLenientParse) {
  auto e = minimalArchive();
  e.push_back({"archive/.data/version", " 7abc"});
  ArchiveData d = loadArchiveData(test::writeTemp("dataversion.pt", test::makeZip(e)));
  EXPECT_EQ(d.version, 7u);
  EXPECT_EQ(d.versionRecord, ".data/version");
}

TEST(ArchiveReader, DirectoryEntriesAndOddPrefix) {
  auto e = minimalArchive();
  for (auto& x : e) x.name = "a.b-c d/" + x.name.substr(8);
  e.insert(e.begin(), ZipEntry{"a.b-c d/", ""});
  ArchiveData d = loadArchiveData(test::writeTemp("prefix.pt", test::makeZip(e)));
  EXPECT_EQ(d.prefix, "a.b-c d");
}

TEST(ArchiveReader, ExtraFilesByteorderAndBytecode) {
  auto e = minimalArchive();
  e.push_back({"archive/extra/meta.txt", "hi"});
  e.push_back({"archive/byteorder", "little"});
  e.push_back({"archive/bytecode.pkl", "\x80\x02)."});
  std::string path = test::writeTemp("extras.pt", test::makeZip(e));
  ArchiveReader ar(path);
  EXPECT_EQ(ar.extraFiles(), std::vector<std::string>{"meta.txt"});
  EXPECT_EQ(ar.readExtraFile("meta.txt"), "hi");
  EXPECT_EQ(ar.byteorder().value_or(""), "little");
  EXPECT_TRUE(ar.hasBytecode());
}

// ---- bad containers --------------------------------------------------------------------------

TEST(ArchiveReaderBad, EmptyFile) {
  EXPECT_LOAD_ERROR("empty.pt", "", "empty.pt", "file is empty");
}

TEST(ArchiveReaderBad, NotAZip) {
  EXPECT_LOAD_ERROR("notzip.pt", "this is not a zip file at all, just text\n", "notzip.pt",
                    "not a zip archive");
}

TEST(ArchiveReaderBad, TruncatedZip) {
  std::string z = test::makeZip(minimalArchive());
  EXPECT_LOAD_ERROR("truncated.pt", z.substr(0, z.size() / 2), "truncated.pt", "not a zip archive");
}

TEST(ArchiveReaderBad, LegacyTorchSavePickle) {
  EXPECT_LOAD_ERROR("legacy.pt", std::string("\x80\x02\x8a\x0alegacy", 12), "legacy torch.save");
}

TEST(ArchiveReaderBad, CrcMismatch) {
  auto e = minimalArchive();
  e[3].declaredCrc = 12345;  // data/0
  EXPECT_LOAD_ERROR("crc.pt", test::makeZip(e), "crc.pt: record 'data/0'", "CRC-32 mismatch");
}

TEST(ArchiveReaderBad, ZipBomb) {
  auto e = minimalArchive();
  e.push_back({"archive/extra/bomb", "x", int64_t{4000000000}, -1, 8});
  EXPECT_LOAD_ERROR("bomb.pt", test::makeZip(e), "record 'extra/bomb'", "zip bomb");
}

TEST(ArchiveReaderBad, StoredSizesDisagree) {
  auto e = minimalArchive();
  e[3].declaredSize = 100;
  EXPECT_LOAD_ERROR("sizes.pt", test::makeZip(e), "record 'data/0'", "stored record declares 100");
}

TEST(ArchiveReaderBad, DuplicateNames) {
  auto e = minimalArchive();
  e.push_back(e[3]);
  EXPECT_LOAD_ERROR("dup.pt", test::makeZip(e), "duplicate entry 'archive/data/0'");
}

TEST(ArchiveReaderBad, DotDotName) {
  auto e = minimalArchive();
  e.push_back({"archive/../evil", "x"});
  EXPECT_LOAD_ERROR("dotdot.pt", test::makeZip(e), "bad entry name 'archive/../evil'", "'..'");
}

TEST(ArchiveReaderBad, AbsoluteName) {
  auto e = minimalArchive();
  e.insert(e.begin(), ZipEntry{"/archive/version", "3\n"});
  EXPECT_LOAD_ERROR("abs.pt", test::makeZip(e), "absolute path");
}

TEST(ArchiveReaderBad, BackslashName) {
  auto e = minimalArchive();
  e.push_back({"archive\\x", "x"});
  EXPECT_LOAD_ERROR("backslash.pt", test::makeZip(e), "backslash");
}

TEST(ArchiveReaderBad, FirstEntryNotInFolder) {
  auto e = minimalArchive();
  e.insert(e.begin(), ZipEntry{"version", "3\n"});
  EXPECT_LOAD_ERROR("nofolder.pt", test::makeZip(e), "first entry 'version' is not in a folder");
}

TEST(ArchiveReaderBad, SecondPrefix) {
  auto e = minimalArchive();
  e.push_back({"other/data/1", "x"});
  EXPECT_LOAD_ERROR("twoprefix.pt", test::makeZip(e), "'other/data/1' lies outside", "'archive/'");
}

// ---- bad records -----------------------------------------------------------------------------

TEST(ArchiveReaderBad, Version11) {
  EXPECT_LOAD_ERROR("v11.pt", test::makeZip(minimalArchive(minimalDataPkl().bytes(), "11\n")),
                    "v11.pt: record 'version'", "version 11 is newer");
}

TEST(ArchiveReaderBad, VersionAbc) {
  EXPECT_LOAD_ERROR("vabc.pt", test::makeZip(minimalArchive(minimalDataPkl().bytes(), "abc")),
                    "record 'version'", "'abc' is not a number");
}

TEST(ArchiveReaderBad, VersionZeroAndNegative) {
  EXPECT_LOAD_ERROR("v0.pt", test::makeZip(minimalArchive(minimalDataPkl().bytes(), "0\n")),
                    "version 0 is not supported");
  EXPECT_LOAD_ERROR("vneg.pt", test::makeZip(minimalArchive(minimalDataPkl().bytes(), "-1\n")),
                    "is newer than");
  EXPECT_LOAD_ERROR(
      "vhuge.pt",
      test::makeZip(minimalArchive(minimalDataPkl().bytes(), "99999999999999999999999")),
      "out of range");
}

TEST(ArchiveReaderBad, MissingVersion) {
  EXPECT_LOAD_ERROR("nover.pt", test::makeZip(without(minimalArchive(), "archive/version")),
                    "missing record 'version'");
}

TEST(ArchiveReaderBad, MissingDataPkl) {
  EXPECT_LOAD_ERROR("nodata.pt", test::makeZip(without(minimalArchive(), "archive/data.pkl")),
                    "nodata.pt", "missing record 'data.pkl'");
}

TEST(ArchiveReaderBad, MissingConstantsPkl) {
  EXPECT_LOAD_ERROR("noconst.pt", test::makeZip(without(minimalArchive(), "archive/constants.pkl")),
                    "missing record 'constants.pkl'");
}

TEST(ArchiveReaderBad, LegacyModelJson) {
  auto e = minimalArchive();
  e.push_back({"archive/model.json", "{}"});
  EXPECT_LOAD_ERROR("modeljson.pt", test::makeZip(e), "legacy TorchScript format (model.json");
}

TEST(ArchiveReaderBad, BigEndian) {
  auto e = minimalArchive();
  e.push_back({"archive/byteorder", "big"});
  EXPECT_LOAD_ERROR("big.pt", test::makeZip(e), "record 'byteorder'", "big-endian");
}

TEST(ArchiveReaderBad, MissingStorageRecord) {
  EXPECT_LOAD_ERROR("nostorage.pt", test::makeZip(without(minimalArchive(), "archive/data/0")),
                    "record 'data.pkl'", "missing record 'data/0'");
}

TEST(ArchiveReaderBad, ForbiddenGlobal) {
  Pickle p;
  p.global("os", "system").str("echo pwned").op('\x85').reduce().stop();
  EXPECT_LOAD_ERROR("os.pt", withData(p.bytes()), "os.pt: record 'data.pkl'",
                    "forbidden global 'os.system'");
}

TEST(ArchiveReaderBad, UnknownOpcode) {
  Pickle p;
  p.raw("S'abc'\n").stop();  // STRING (protocol 0) is not accepted
  EXPECT_LOAD_ERROR("opcode.pt", withData(p.bytes()), "record 'data.pkl'",
                    "unknown or unsupported pickle opcode 0x53 ('S')", "at byte 2");
}

TEST(ArchiveReaderBad, TruncatedPickle) {
  std::string b = minimalDataPkl().bytes();
  EXPECT_LOAD_ERROR("truncpkl.pt", withData(b.substr(0, b.size() - 20)), "record 'data.pkl'",
                    "truncated pickle");
}

TEST(ArchiveReaderBad, MemoGetUnset) {
  Pickle p;
  p.get(5).stop();
  EXPECT_LOAD_ERROR("memo.pt", withData(p.bytes()), "memo slot 5 read before it was set");
}

TEST(ArchiveReaderBad, NumelLargerThanRecord) {
  Pickle p;
  p.beginObject("__torch__", "M").str("w").tensor("0", 1000, 0, {1000}, {1});
  p.endObject().stop();
  EXPECT_LOAD_ERROR("numel.pt", withData(p.bytes()), "record 'data.pkl'",
                    "storage '0' needs 4000 bytes", "record 'data/0' holds 8");
}

TEST(ArchiveReaderBad, OffsetOutsideStorage) {
  Pickle p;
  p.beginObject("__torch__", "M").str("w").tensor("0", 2, 5, {1}, {1});
  p.endObject().stop();
  EXPECT_LOAD_ERROR("offset.pt", withData(p.bytes()), "record 'data.pkl'",
                    "tensor on storage 'data/0'", "holds 2 elements");
}

TEST(ArchiveReaderBad, StridesOutsideStorage) {
  Pickle p;
  p.beginObject("__torch__", "M").str("w").tensor("0", 2, 0, {2, 2}, {2, 1});
  p.endObject().stop();
  EXPECT_LOAD_ERROR("strides.pt", withData(p.bytes()), "tensor on storage 'data/0'",
                    "reaches element 3");
}

TEST(ArchiveReaderBad, NegativeStride) {
  Pickle p;
  p.beginObject("__torch__", "M").str("w").tensor("0", 2, 1, {2}, {-1});
  p.endObject().stop();
  EXPECT_LOAD_ERROR("negstride.pt", withData(p.bytes()), "negative stride");
}

TEST(ArchiveReaderBad, StorageKeyEscapes) {
  Pickle p;
  p.beginObject("__torch__", "M").str("w").tensor("../x", 2, 0, {2}, {1});
  p.endObject().stop();
  EXPECT_LOAD_ERROR("key.pt", withData(p.bytes()), "bad storage key '../x'");
}

TEST(ArchiveReaderBad, RootNotObject) {
  Pickle p;
  p.integer(3).stop();
  EXPECT_LOAD_ERROR("root.pt", withData(p.bytes()), "root value is a int, not a module object");
}

TEST(ArchiveReaderBad, UnknownDevice) {
  Pickle p;
  p.beginObject("__torch__", "M").str("w").tensor("0", 2, 0, {2}, {1}, "FloatStorage", "tpu:0");
  p.endObject().stop();
  EXPECT_LOAD_ERROR("device.pt", withData(p.bytes()), "unknown device type");
}

TEST(ArchiveReader, NonCpuLocationMapsToCpu) {
  Pickle p;
  p.beginObject("__torch__", "M").str("w").tensor("0", 2, 0, {2}, {1}, "FloatStorage", "cuda:0");
  p.endObject().stop();
  ArchiveData d = loadArchiveData(test::writeTemp("cuda.pt", withData(p.bytes())));
  EXPECT_TRUE(d.root.toObject()->getAttr("w").toTensor().device().isCpu());
  ASSERT_EQ(d.dataStorages.size(), 1u);
  EXPECT_EQ(d.dataStorages[0].location, "cuda:0");
}

TEST(ArchiveReader, ZeroNumelStorageWithoutRecord) {
  Pickle p;
  p.beginObject("__torch__", "M").str("w").tensor("0", 0, 0, {0, 4}, {4, 1});
  p.endObject().stop();
  ArchiveData d = loadArchiveData(test::writeTemp(
      "zeronumel.pt", test::makeZip(without(minimalArchive(p.bytes()), "archive/data/0"))));
  EXPECT_EQ(d.root.toObject()->getAttr("w").toTensor().numel(), 0);
}

}  // namespace
}  // namespace torchless

namespace torchless {
namespace {

// Note [Placeholder storages]: facts without tensor data. The tensor keeps its shape, dtype and
// storage size; its bytes are zeros (the record is never read), and a record shorter than its
// tensor is still an error, as when the data is read.
TEST(ArchiveReader, PlaceholderStoragesKeepShapesAndReadNoData) {
  std::string path = test::writeTemp("placeholder.pt", test::makeZip(test::minimalArchive()));
  ArchiveDataOptions read;
  read.readTensorData = false;
  ArchiveData d = loadArchiveData(path, {}, read);
  Tensor w = d.root.toObject()->getAttr("w").toTensor();
  EXPECT_EQ(w.sizes(), (IntList{2}));
  EXPECT_EQ(w.dtype(), ScalarType::Float);
  EXPECT_EQ(w.storage().nbytes(), 8u);
  EXPECT_EQ(w.data<float>()[0], 0.f);
  EXPECT_EQ(w.data<float>()[1], 0.f);

  auto e = test::minimalArchive();
  for (auto& x : e)
    if (x.name == "archive/data/0") x.data = x.data.substr(0, 4);
  std::string shortPath = test::writeTemp("placeholder_short.pt", test::makeZip(e));
  try {
    loadArchiveData(shortPath, {}, read);
    ADD_FAILURE() << "a record shorter than its tensor loaded";
  } catch (const Error& err) {
    EXPECT_NE(err.firstLine().find("needs 8 bytes"), std::string::npos) << err.firstLine();
  }
}

// traced_inputs.pkl (torch.jit.trace, PyTorch >= 2.0): Dict[str, List[Any]] whose tensors'
// records PyTorch writes empty (0 bytes); the shapes are read, and a broken one is a warning.
TEST(ArchiveReader, TracedInputsKeepTheirShapes) {
  Pickle p;
  p.global("torch.jit._pickle", "restore_type_tag").emptyDict().mark().str("forward");
  p.global("torch.jit._pickle", "restore_type_tag").emptyList().mark();
  p.tensor("0", 6, 0, {1, 2, 3}, {6, 3, 1}).appends();
  p.str("List[Any]").op('\x86').reduce().setitems();
  p.str("Dict[str, List[Any]]").op('\x86').reduce().stop();
  auto e = test::minimalArchive();
  e.push_back({"archive/traced_inputs.pkl", p.bytes()});
  e.push_back({"archive/traced_inputs/0", ""});
  ArchiveData d = loadArchiveData(test::writeTemp("traced_inputs.pt", test::makeZip(e)));
  ASSERT_TRUE(d.tracedInputs.isDict()) << d.tracedInputs.tagName();
  ASSERT_EQ(d.tracedInputs.toDict()->size(), 1u);
  const auto& [key, inputs] = *d.tracedInputs.toDict()->entries().begin();
  EXPECT_EQ(key.toStringRef(), "forward");
  ASSERT_TRUE(inputs.isList());
  ASSERT_EQ(inputs.toList()->list.size(), 1u);
  EXPECT_EQ(inputs.toList()->list[0].toTensor().sizes(), (IntList{1, 2, 3}));
  EXPECT_TRUE(d.warnings.empty());

  e.back().name = "archive/traced_inputs/1";  // the storage record is missing: a warning only
  ArchiveData w = loadArchiveData(test::writeTemp("traced_inputs_bad.pt", test::makeZip(e)));
  EXPECT_TRUE(w.tracedInputs.isNone());
  ASSERT_EQ(w.warnings.size(), 1u);
  EXPECT_NE(w.warnings[0].find("traced_inputs.pkl not read"), std::string::npos) << w.warnings[0];
}

}  // namespace
}  // namespace torchless
