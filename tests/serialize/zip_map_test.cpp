// ZipReaderOptions::mapStoredRecords (LoadOptions::mapRecords, `torchless run`): stored,
// 64-byte aligned records are views of one copy-on-write mapping of the file (Note [Mapped
// archives] in core/mapped_file.h). They read as a read would, their CRC-32 is still checked,
// a write never reaches the file, a file shorter than when it was opened is a clean error, and
// a file that shrinks while mapped ends the process with a message naming it (not a bare
// SIGBUS).
#include "core/error.h"
#include "serialize/zip_reader.h"
#include "serialize_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace torchless {
namespace {

constexpr size_t kRecordBytes = size_t{256} << 10;  // 64 pages

/// One stored record whose data starts at offset 64 of the file (30-byte local header + a
/// 34-byte name), as PyTorch aligns tensor records.
std::string alignedZip(int64_t crc = -1) {
  std::string data(kRecordBytes, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + i / 4096);
  test::ZipEntry e{"archive/data/0123456789abcdefghijk", data};  // 8 + 26 = 34 bytes
  e.declaredCrc = crc;
  return test::makeZip({e});
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& bytes) {
    path = (std::filesystem::temp_directory_path() /
            ("zip_map_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".pt"))
               .string();
    std::ofstream(path, std::ios::binary) << bytes;
  }
  ~TempFile() { std::filesystem::remove(path); }
  std::string bytes() const {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

std::unique_ptr<ZipReader> openMapped(const std::string& path) {
  ZipReaderOptions o;
  o.mapStoredRecords = true;
  return ZipReader::open(path, o);
}

const char* kName = "data/0123456789abcdefghijk";

TEST(ZipMap, MappedRecordsReadAsReadsDoAndShareOneMapping) {
  TempFile f(alignedZip());
  auto read = ZipReader::open(f.path);
  auto mapped = openMapped(f.path);
  RecordData a = mapped->readRecord(kName), b = mapped->readRecord(kName);
  EXPECT_EQ(a.view(), read->readRecord(kName).view());
  EXPECT_EQ(a.data, b.data);  // both views of the mapping: nothing was copied
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % 64, 0u);
  EXPECT_NE(read->readRecord(kName).data, read->readRecord(kName).data);  // reads copy
}

TEST(ZipMap, CrcIsStillChecked) {
  TempFile f(alignedZip(1234));
  auto z = openMapped(f.path);
  try {
    z->readRecord(kName);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CRC-32 mismatch"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(kName), std::string::npos) << e.what();
  }
}

std::unique_ptr<ZipReader> openCheckedInBackground(const std::string& path) {
  ZipReaderOptions o;
  o.mapStoredRecords = true;
  o.checkMappedInBackground = true;
  return ZipReader::open(path, o);
}

std::string finishError(const ZipReader& z) {
  try {
    z.finishChecks();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Note [Checking mapped records in the background] in serialize/zip_reader.cpp.
TEST(ZipMap, BackgroundChecksReportACorruptRecordAtFinish) {
  {
    TempFile good(alignedZip());
    auto g = openCheckedInBackground(good.path);
    EXPECT_EQ(g->readRecord(kName).view(), ZipReader::open(good.path)->readRecord(kName).view());
    EXPECT_EQ(finishError(*g), "");
  }
  TempFile bad(alignedZip(1234));  // the same path: one file at a time
  auto b = openCheckedInBackground(bad.path);
  b->readRecord(kName);  // handed out; its check runs on the reader's thread
  const std::string what = finishError(*b);
  EXPECT_NE(what.find(bad.path + ": record '" + kName + "': CRC-32 mismatch"), std::string::npos)
      << what;
  EXPECT_EQ(finishError(*b), "");  // reported once; the thread is gone
  // After finishChecks(), a record is checked as it is read.
  auto late = openCheckedInBackground(bad.path);
  EXPECT_EQ(finishError(*late), "");
  EXPECT_THROW(late->readRecord(kName), Error);
  // A reader destroyed before finishChecks() (a load that failed otherwise) stops its thread.
  { openCheckedInBackground(bad.path)->readRecord(kName); }
}

TEST(ZipMap, BackgroundChecksReportOnlyRecordsThatWereRead) {
  // Two aligned records (the second's data starts at 64 + 256 KiB + 64); the second is corrupt.
  std::string data(kRecordBytes, 'x');
  test::ZipEntry good{"archive/data/0123456789abcdefghijk", data};
  test::ZipEntry bad{"archive/data/0123456789abcdefghijl", data};
  bad.declaredCrc = 1234;
  TempFile f(test::makeZip({good, bad}));
  auto z = openCheckedInBackground(f.path);
  z->readRecord(kName);
  EXPECT_EQ(finishError(*z), "");  // checked, but nobody read it: as with checks on reading
  auto z2 = openCheckedInBackground(f.path);
  z2->readRecord(kName);
  z2->readRecord("data/0123456789abcdefghijl");  // no error yet: mapped, checked in the background
  const std::string what = finishError(*z2);
  EXPECT_NE(what.find("record 'data/0123456789abcdefghijl': CRC-32 mismatch"), std::string::npos)
      << what;
}

TEST(ZipMap, BackgroundChecksReportAFileShorterThanWhenOpened) {
  TempFile f(alignedZip());
  auto z = openCheckedInBackground(f.path);
  std::filesystem::resize_file(f.path, 64 + kRecordBytes / 2);
  std::string what;
  try {
    z->readRecord(kName);  // the reader's own populate fails, or the thread's does
    what = finishError(*z);
  } catch (const Error& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("truncated"), std::string::npos) << what;
  EXPECT_NE(what.find(f.path), std::string::npos) << what;
}

TEST(ZipMap, WritesToAMappedRecordNeverReachTheFile) {
  const std::string zip = alignedZip();
  TempFile f(zip);
  auto z = openMapped(f.path);
  RecordData r = z->readRecord(kName);
  auto* p = const_cast<std::byte*>(r.data);
  p[0] = std::byte{0x5a};
  p[kRecordBytes - 1] = std::byte{0xa5};
  EXPECT_EQ(f.bytes(), zip);
  EXPECT_EQ(r.data[0], std::byte{0x5a});
}

TEST(ZipMap, AFileShorterThanWhenOpenedIsAnErrorNotASignal) {
  TempFile f(alignedZip());
  auto z = openMapped(f.path);  // sizes checked against the whole file
  std::filesystem::resize_file(f.path, 64 + kRecordBytes / 2);
  try {
    z->readRecord(kName);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(f.path), std::string::npos) << e.what();
  }
}

TEST(ZipMapDeathTest, AFileThatShrinksWhileMappedEndsTheProcessNamingIt) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  TempFile f(alignedZip());
  auto touchAfterTruncation = [&] {
    auto z = openMapped(f.path);
    RecordData r = z->readRecord(kName);  // populated and checked
    std::filesystem::resize_file(f.path, 0);
    volatile std::byte last = r.data[kRecordBytes - 1];  // SIGBUS: the page is gone
    (void)last;
    std::exit(0);
  };
  EXPECT_EXIT(touchAfterTruncation(), ::testing::ExitedWithCode(1),
              "shrank while torchless had it mapped");
}

}  // namespace
}  // namespace torchless
