// ZipReaderOptions::checkCrc (LoadOptions::checkCrc): records whose CRC-32 does not match are
// refused by default and read as they are when the check is off, stored or deflated; the
// unchecked path still refuses broken deflate streams and records longer than declared.
#include "core/error.h"
#include "serialize/zip_reader.h"
#include "serialize_test_util.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <memory>
#include <string>

namespace torchless {
namespace {

/// Raw deflate (no zlib header), as zip method 8 stores it.
std::string rawDeflate(const std::string& in) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, static_cast<uLong>(in.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::unique_ptr<ZipReader> open(const std::string& zip, bool checkCrc) {
  auto owner = std::make_shared<std::string>(zip);
  ZipReaderOptions o;
  o.checkCrc = checkCrc;
  return ZipReader::openBuffer(owner, owner->data(), owner->size(), "t.pt", o);
}

std::string readError(const ZipReader& z, const std::string& name) {
  try {
    z.readRecord(name);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string kText(5000, 'a');  // long enough to deflate well

std::string text() {
  std::string s = kText;
  for (size_t i = 0; i < s.size(); i += 7) s[i] = static_cast<char>('a' + (i % 23));
  return s;
}

test::ZipEntry deflated(const std::string& name, const std::string& plain, int64_t crc = -1,
                        int64_t size = -1) {
  test::ZipEntry e{"archive/" + name, rawDeflate(plain)};
  e.method = 8;
  e.declaredSize = size >= 0 ? size : static_cast<int64_t>(plain.size());
  e.declaredCrc = crc >= 0 ? crc : static_cast<int64_t>(test::crc32(plain));
  return e;
}

TEST(ZipCrc, GoodRecordsReadTheSameBothWays) {
  const std::string plain = text();
  std::string zip = test::makeZip({{"archive/stored", "hello"}, deflated("code.py", plain)});
  for (bool check : {true, false}) {
    auto z = open(zip, check);
    EXPECT_EQ(z->readRecordString("stored"), "hello");
    EXPECT_EQ(z->readRecordString("code.py"), plain);
  }
}

TEST(ZipCrc, MismatchRefusedUnlessTheCheckIsOff) {
  const std::string plain = text();
  test::ZipEntry stored{"archive/data/0", "abcd"};
  stored.declaredCrc = 1234;
  std::string zip = test::makeZip({stored, deflated("code.py", plain, 99)});
  auto strict = open(zip, true);
  EXPECT_NE(readError(*strict, "data/0").find("t.pt: record 'data/0': CRC-32 mismatch"),
            std::string::npos);
  EXPECT_NE(readError(*strict, "code.py").find("record 'code.py': CRC-32 mismatch"),
            std::string::npos);
  auto lax = open(zip, false);
  EXPECT_EQ(lax->readRecordString("data/0"), "abcd");
  EXPECT_EQ(lax->readRecordString("code.py"), plain);
}

// Note [Checking records]: the CRC is libdeflate's, checked against the one zlib computes
// (test::crc32) over a record long enough for its vector path, down to the last byte.
TEST(ZipCrc, LargeRecordsCheckedToTheLastByte) {
  std::string big((size_t{1} << 20) + 13, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 2654435761u) >> 13);
  std::string zip = test::makeZip({{"archive/data/0", big}});
  EXPECT_EQ(open(zip, true)->readRecordString("data/0"), big);
  test::ZipEntry flipped{"archive/data/0", big};
  flipped.declaredCrc = static_cast<int64_t>(test::crc32(big));
  flipped.data.back() = static_cast<char>(flipped.data.back() ^ 1);
  zip = test::makeZip({flipped});
  EXPECT_NE(readError(*open(zip, true), "data/0").find("record 'data/0': CRC-32 mismatch"),
            std::string::npos);
}

// Note [Checking records]: a stored record whose local header disagrees with its central
// directory entry (here the method, then the name) gets no data offset of ours and is read
// through libzip: the same bytes, and the same CRC-32 check, as a record we locate.
TEST(ZipCrc, RecordsWhoseHeadersDisagreeAreReadThroughLibzip) {
  const std::string good = "0123456789abcdef", odd = "fedcba9876543210";
  for (int variant : {0, 1}) {
    for (bool corrupt : {false, true}) {
      test::ZipEntry second{"archive/data/1", odd};
      if (corrupt) second.declaredCrc = static_cast<int64_t>(test::crc32(odd) ^ 1);
      std::string zip = test::makeZip({{"archive/data/0", good}, second});
      // The second local header: its method (offset 8) says deflate, or its name ends in 'X'.
      const size_t local = zip.find("PK\x03\x04", 1);
      ASSERT_NE(local, std::string::npos);
      if (variant == 0)
        zip[local + 8] = 8;
      else
        zip[local + 30 + second.name.size() - 1] = 'X';
      auto z = open(zip, true);
      ASSERT_NE(z->findRecord("data/0"), nullptr);
      ASSERT_NE(z->findRecord("data/1"), nullptr);
      EXPECT_GE(z->findRecord("data/0")->dataOffset, 0);
      EXPECT_EQ(z->findRecord("data/1")->dataOffset, -1) << "variant " << variant;
      EXPECT_EQ(z->readRecordString("data/0"), good);
      if (corrupt)
        EXPECT_NE(readError(*z, "data/1").find("record 'data/1': CRC-32 mismatch"),
                  std::string::npos)
            << "variant " << variant;
      else
        EXPECT_EQ(z->readRecordString("data/1"), odd) << "variant " << variant;
      EXPECT_EQ(open(zip, false)->readRecordString("data/1"), odd);
    }
  }
}

TEST(ZipCrc, UncheckedReadsStillRefuseBrokenStreams) {
  const std::string plain = text();
  // Declared shorter than the stream inflates to.
  std::string zip = test::makeZip({deflated("long", plain, -1, 100)});
  EXPECT_NE(
      readError(*open(zip, false), "long").find("record holds more than its declared 100 bytes"),
      std::string::npos);
  // Declared longer than the stream inflates to.
  zip = test::makeZip({deflated("short", plain, -1, static_cast<int64_t>(plain.size()) + 10)});
  EXPECT_NE(
      readError(*open(zip, false), "short").find("truncated: got 5000 of 5010 declared bytes"),
      std::string::npos);
  // Garbage instead of deflate data.
  test::ZipEntry junk{"archive/junk", std::string(64, '\xff')};
  junk.method = 8;
  junk.declaredSize = 100;
  junk.declaredCrc = 0;
  zip = test::makeZip({junk});
  EXPECT_NE(readError(*open(zip, false), "junk").find("record 'junk': cannot inflate"),
            std::string::npos);
}

}  // namespace
}  // namespace torchless
