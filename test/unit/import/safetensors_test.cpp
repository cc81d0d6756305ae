// Unit tests for the safetensors reader: good files, every malformed-header
// class with its exact message, and sharded directories.
#include "import/weights/SafeTensors.h"
#include "ImportTestUtil.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace fm::import;
using namespace fm::import::test;

namespace {

std::string parseError(const std::string &bytes, const char *name = "m.safetensors") {
  return errorText(SafeTensorsFile::parse(bytes, name));
}

/// A file with one tensor entry given as raw JSON and `dataSize` data bytes.
std::string oneEntry(const std::string &entryJson, size_t dataSize = 64) {
  return rawSafetensors("{\"x\":" + entryJson + "}", std::string(dataSize, '\0'));
}

// --- good files -------------------------------------------------------------

TEST(SafeTensorsParse, ReadsTensorsInHeaderOrder) {
  std::string bytes = makeSafetensors({{"zeta", {2, 3}, "F32"},
                                       {"alpha", {4}, "F16"},
                                       {"mid", {1, 2}, "BF16"}},
                                      R"({"format":"pt","n":3})");
  auto f = SafeTensorsFile::parse(bytes, "m.safetensors");
  ASSERT_TRUE(bool(f)) << errorText(f.takeError());
  ASSERT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->tensors()[0].name, "zeta");
  EXPECT_EQ(f->tensors()[1].name, "alpha");
  EXPECT_EQ(f->tensors()[2].name, "mid");

  const TensorInfo *a = f->lookup("alpha");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::F16);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(a->nbytes, 8u);
  EXPECT_EQ(a->file, "m.safetensors");
  uint64_t headerLen = 0;
  std::memcpy(&headerLen, bytes.data(), 8); // the tests run on little-endian hosts
  EXPECT_EQ(a->offset, 8 + headerLen + 24); // absolute: after zeta's 24 bytes
  llvm::ArrayRef<uint8_t> d = f->data(*a);
  ASSERT_EQ(d.size(), 8u);
  EXPECT_EQ(d.data(), reinterpret_cast<const uint8_t *>(bytes.data()) + a->offset);
  for (uint8_t b : d)
    EXPECT_EQ(b, 2); // makeSafetensors fills tensor i with i + 1

  EXPECT_EQ(f->lookup("missing"), nullptr);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->metadata().at("n"), "3"); // non-strings kept as JSON text
}

TEST(SafeTensorsParse, AcceptsScalarsEmptyTensorsAndEmptyHeader) {
  std::string bytes = makeSafetensors({{"s", {}, "F32"}, {"e", {0, 5}, "F16"}});
  auto f = SafeTensorsFile::parse(bytes, "m.safetensors");
  ASSERT_TRUE(bool(f)) << errorText(f.takeError());
  EXPECT_TRUE(f->lookup("s")->shape.empty());
  EXPECT_EQ(f->lookup("s")->numElements(), 1u);
  EXPECT_EQ(f->lookup("s")->nbytes, 4u);
  EXPECT_EQ(f->lookup("e")->nbytes, 0u);

  auto empty = SafeTensorsFile::parse(rawSafetensors("{}   "), "m.safetensors");
  ASSERT_TRUE(bool(empty)) << errorText(empty.takeError());
  EXPECT_TRUE(empty->tensors().empty());
}

TEST(SafeTensorsParse, DecodesEscapedNames) {
  std::string bytes = rawSafetensors(
      R"({"a\u0041\"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "abcd");
  auto f = SafeTensorsFile::parse(bytes, "m.safetensors");
  ASSERT_TRUE(bool(f)) << errorText(f.takeError());
  EXPECT_NE(f->lookup("aA\"b"), nullptr);
}

TEST(SafeTensorsParse, ZeroSizedTensorsNeverOverlap) {
  std::string bytes = rawSafetensors(
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
      std::string(8, '\0'));
  EXPECT_EQ(parseError(bytes), "");
}

// --- malformed files: one test per class, exact messages -------------------

TEST(SafeTensorsParse, RejectsTruncatedFile) {
  EXPECT_EQ(parseError("abcde"),
            "m.safetensors: file is 5 bytes, too short for the 8-byte header length");
  EXPECT_EQ(parseError(""),
            "m.safetensors: file is 0 bytes, too short for the 8-byte header length");
}

TEST(SafeTensorsParse, RejectsHeaderLengthPastEnd) {
  std::string bytes(1234, ' ');
  uint64_t n = 1000000;
  std::memcpy(&bytes[0], &n, 8);
  EXPECT_EQ(parseError(bytes, "model.safetensors"),
            "model.safetensors: header length 1000000 exceeds file size 1234");
  // A length near 2^64 must not wrap around when added to 8.
  n = ~uint64_t(0) - 3;
  std::memcpy(&bytes[0], &n, 8);
  EXPECT_EQ(parseError(bytes),
            "m.safetensors: header length 18446744073709551612 exceeds file size 1234");
}

TEST(SafeTensorsParse, RejectsInvalidJson) {
  // The tail is llvm::json's own message; only our prefix is pinned exactly.
  const std::string prefix = "m.safetensors: invalid JSON in header: ";
  std::string err = parseError(rawSafetensors("{\"a\":1,}"));
  EXPECT_EQ(err.rfind(prefix, 0), 0u) << err;
  EXPECT_NE(err.find("Expected object key"), std::string::npos) << err;
  err = parseError(rawSafetensors(""));
  EXPECT_EQ(err.rfind(prefix, 0), 0u) << err;
  EXPECT_NE(err.find("Unexpected EOF"), std::string::npos) << err;
  err = parseError(rawSafetensors("{\"\xff\":1}"));
  EXPECT_EQ(err.rfind(prefix, 0), 0u) << err;
}

TEST(SafeTensorsParse, RejectsDeepNestingWithoutRecursing) {
  // llvm::json::parse would recurse once per '[' and overflow the stack.
  EXPECT_EQ(parseError(rawSafetensors(std::string(1000000, '['))),
            "m.safetensors: invalid JSON in header: nesting deeper than 64 levels");
}

TEST(SafeTensorsParse, RejectsNonObjectHeaderAndEntries) {
  EXPECT_EQ(parseError(rawSafetensors("[1,2]")),
            "m.safetensors: header is not a JSON object (got [1,2])");
  EXPECT_EQ(parseError(oneEntry("[1]")),
            "m.safetensors: tensor 'x': entry must be an object, got [1]");
  EXPECT_EQ(parseError(rawSafetensors(R"({"__metadata__":5})")),
            "m.safetensors: '__metadata__' must be an object of strings, got 5");
}

TEST(SafeTensorsParse, RejectsMissingOrMistypedFields) {
  EXPECT_EQ(parseError(oneEntry(R"({"shape":[1],"data_offsets":[0,4]})")),
            "m.safetensors: tensor 'x': missing 'dtype'");
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":7,"shape":[1],"data_offsets":[0,4]})")),
            "m.safetensors: tensor 'x': 'dtype' must be a string, got 7");
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"F32","data_offsets":[0,4]})")),
            "m.safetensors: tensor 'x': missing 'shape'");
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"F32","shape":"1","data_offsets":[0,4]})")),
            "m.safetensors: tensor 'x': 'shape' must be an array of integers, got \"1\"");
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})")),
            "m.safetensors: tensor 'x': 'shape' must be an array of integers, got [1.5]");
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"F32","shape":[1]})")),
            "m.safetensors: tensor 'x': missing 'data_offsets'");
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"F32","shape":[1],"data_offsets":[0]})")),
            "m.safetensors: tensor 'x': 'data_offsets' must be [begin, end] with "
            "non-negative integers, got [0]");
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"F32","shape":[1],"data_offsets":[-4,0]})")),
            "m.safetensors: tensor 'x': 'data_offsets' must be [begin, end] with "
            "non-negative integers, got [-4,0]");
}

TEST(SafeTensorsParse, RejectsUnsupportedAndUnknownDtypes) {
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"I64","shape":[1],"data_offsets":[0,8]})"),
                       "model.safetensors"),
            "model.safetensors: tensor 'x': unsupported dtype 'I64' (fmc accepts F32, F16, "
            "BF16)");
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"F33","shape":[1],"data_offsets":[0,4]})")),
            "m.safetensors: tensor 'x': unknown dtype 'F33' (fmc accepts F32, F16, BF16)");
}

TEST(SafeTensorsParse, RejectsBadShapes) {
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"F32","shape":[2,-3],"data_offsets":[0,0]})")),
            "m.safetensors: tensor 'x': shape [2, -3] has a negative dimension");
  EXPECT_EQ(
      parseError(oneEntry(R"({"dtype":"F32","shape":[4294967296,4294967296],)"
                          R"("data_offsets":[0,0]})")),
      "m.safetensors: tensor 'x': shape [4294967296, 4294967296] has too many elements "
      "(overflows 64 bits)");
  // Elements fit, bytes do not: 2^62 F32 elements.
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"F32","shape":[4611686018427387904],)"
                                R"("data_offsets":[0,0]})")),
            "m.safetensors: tensor 'x': shape [4611686018427387904] has too many elements "
            "(overflows 64 bits)");
  EXPECT_NE(parseError(oneEntry(R"({"dtype":"F32","shape":[1e300],"data_offsets":[0,0]})")),
            "");
}

TEST(SafeTensorsParse, RejectsBadOffsets) {
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"F32","shape":[1],"data_offsets":[8,4]})")),
            "m.safetensors: tensor 'x': data_offsets [8, 4]: begin is after end");
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"F32","shape":[4],"data_offsets":[56,72]})")),
            "m.safetensors: tensor 'x': data_offsets [56, 72] out of range: the data "
            "section holds 64 bytes");
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"F32","shape":[1],)"
                                R"("data_offsets":[0,18446744073709551615]})")),
            "m.safetensors: tensor 'x': data_offsets [0, 18446744073709551615] out of "
            "range: the data section holds 64 bytes");
}

TEST(SafeTensorsParse, RejectsSizeMismatch) {
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,12]})")),
            "m.safetensors: tensor 'x': data_offsets [0, 12] span 12 bytes, but F32 [2, 3] "
            "needs 24");
  EXPECT_EQ(parseError(oneEntry(R"({"dtype":"BF16","shape":[],"data_offsets":[0,4]})")),
            "m.safetensors: tensor 'x': data_offsets [0, 4] span 4 bytes, but BF16 [] "
            "needs 2");
}

TEST(SafeTensorsParse, RejectsOverlappingTensors) {
  std::string bytes = rawSafetensors(
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
      R"("c":{"dtype":"F32","shape":[1],"data_offsets":[24,28]},)"
      R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
      std::string(28, '\0'));
  EXPECT_EQ(parseError(bytes), "m.safetensors: tensors 'a' (data_offsets [0, 16]) and 'b' "
                               "(data_offsets [8, 24]) overlap");
  // A tensor nested inside an earlier, longer one.
  bytes = rawSafetensors(R"({"big":{"dtype":"F32","shape":[8],"data_offsets":[0,32]},)"
                         R"("mid":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                         R"("end":{"dtype":"F32","shape":[1],"data_offsets":[20,24]}})",
                         std::string(32, '\0'));
  EXPECT_EQ(parseError(bytes), "m.safetensors: tensors 'big' (data_offsets [0, 32]) and "
                               "'mid' (data_offsets [4, 8]) overlap");
}

TEST(SafeTensorsParse, RejectsDuplicateNames) {
  // llvm::json keeps only the last duplicate key; the reader must see both.
  std::string bytes = rawSafetensors(
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
      R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
      std::string(8, '\0'));
  EXPECT_EQ(parseError(bytes), "m.safetensors: tensor 'w' appears twice in the header");
}

// --- files on disk ----------------------------------------------------------

TEST(SafeTensorsOpen, MapsFileAndReportsMissingOnes) {
  TempDir dir;
  dir.write("w.safetensors", makeSafetensors({{"a", {3}}, {"b", {2, 2}, "BF16"}}));
  auto f = SafeTensorsFile::open(dir.file("w.safetensors"));
  ASSERT_TRUE(bool(f)) << errorText(f.takeError());
  EXPECT_EQ(f->path(), dir.file("w.safetensors"));
  const TensorInfo *b = f->lookup("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->file, dir.file("w.safetensors"));
  llvm::ArrayRef<uint8_t> d = f->data(*b);
  ASSERT_EQ(d.size(), 8u);
  EXPECT_EQ(d[0], 2);

  std::string err = errorText(SafeTensorsFile::open(dir.file("nope.safetensors")));
  EXPECT_EQ(err.rfind(dir.file("nope.safetensors") + ": cannot open: ", 0), 0u) << err;
  EXPECT_EQ(errorText(SafeTensorsFile::open(dir.path())),
            dir.path() + ": is a directory, not a .safetensors file");
}

// --- WeightSet --------------------------------------------------------------

TEST(WeightSet, OpensSingleFile) {
  TempDir dir;
  dir.write("model.safetensors", makeSafetensors({{"a", {2}}, {"b", {1}}}));
  dir.write("other.safetensors", makeSafetensors({{"ignored", {1}}}));
  auto ws = WeightSet::openDirectory(dir.path());
  ASSERT_TRUE(bool(ws)) << errorText(ws.takeError());
  EXPECT_EQ(ws->numFiles(), 1u);
  EXPECT_EQ(ws->description(), "model.safetensors");
  ASSERT_EQ(ws->all().size(), 2u);
  EXPECT_EQ(ws->all()[0]->name, "a");
  const TensorInfo *b = ws->lookup("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(ws->displayName(*b), "model.safetensors");
  EXPECT_EQ(ws->data(*b).size(), 4u);
  EXPECT_EQ(ws->lookup("ignored"), nullptr);
}

TEST(WeightSet, GlobsShardsInNameOrderAndSurvivesMove) {
  TempDir dir;
  dir.write("b.safetensors", makeSafetensors({{"y", {1}}}));
  dir.write("a.safetensors", makeSafetensors({{"x", {2}}}));
  dir.write("notes.txt", "not a checkpoint");
  auto ws = WeightSet::openDirectory(dir.path());
  ASSERT_TRUE(bool(ws)) << errorText(ws.takeError());
  EXPECT_EQ(ws->description(), "a.safetensors, b.safetensors");
  const TensorInfo *y = ws->lookup("y");
  WeightSet moved = std::move(*ws);
  EXPECT_EQ(moved.lookup("y"), y); // pointers stay valid across moves
  EXPECT_EQ(moved.displayName(*y), "b.safetensors");
  ASSERT_EQ(moved.all().size(), 2u);
  EXPECT_EQ(moved.all()[0]->name, "x");
  EXPECT_EQ(moved.data(*y).size(), 4u);
}

TEST(WeightSet, RejectsTensorInTwoShards) {
  TempDir dir;
  dir.write("a.safetensors", makeSafetensors({{"x", {2}}, {"dup", {1}}}));
  dir.write("b.safetensors", makeSafetensors({{"dup", {1}}}));
  EXPECT_EQ(errorText(WeightSet::openDirectory(dir.path())),
            "tensor 'dup' is in both a.safetensors and b.safetensors");
}

TEST(WeightSet, RejectsEmptyOrMissingDirectory) {
  TempDir dir;
  EXPECT_EQ(errorText(WeightSet::openDirectory(dir.path())),
            dir.path() + ": no model.safetensors.index.json, model.safetensors or "
                         "*.safetensors file");
  EXPECT_EQ(errorText(WeightSet::openDirectory(dir.file("absent"))),
            dir.file("absent") + ": not a directory");
}

TEST(WeightSet, PropagatesBadShardErrors) {
  TempDir dir;
  dir.write("model.safetensors", "short");
  EXPECT_EQ(errorText(WeightSet::openDirectory(dir.path())),
            dir.file("model.safetensors") +
                ": file is 5 bytes, too short for the 8-byte header length");
}

TEST(WeightSet, FollowsIndex) {
  TempDir dir;
  dir.write("model-00001-of-00002.safetensors", makeSafetensors({{"a", {2}}, {"b", {1}}}));
  dir.write("model-00002-of-00002.safetensors", makeSafetensors({{"c", {3}}}));
  dir.write("stray.safetensors", makeSafetensors({{"stray", {1}}}));
  dir.write("model.safetensors.index.json",
            R"({"metadata":{"total_size":24},"weight_map":{)"
            R"("a":"model-00001-of-00002.safetensors",)"
            R"("b":"model-00001-of-00002.safetensors",)"
            R"("c":"model-00002-of-00002.safetensors"}})");
  auto ws = WeightSet::openDirectory(dir.path());
  ASSERT_TRUE(bool(ws)) << errorText(ws.takeError());
  EXPECT_EQ(ws->numFiles(), 2u);
  EXPECT_EQ(ws->description(), "model.safetensors.index.json (model-00001-of-00002.safetensors, "
                               "model-00002-of-00002.safetensors)");
  ASSERT_NE(ws->lookup("c"), nullptr);
  EXPECT_EQ(ws->displayName(*ws->lookup("c")), "model-00002-of-00002.safetensors");
  EXPECT_EQ(ws->lookup("stray"), nullptr); // files outside the index are not read
}

TEST(WeightSet, RejectsIndexProblems) {
  TempDir dir;
  std::string index = dir.file("model.safetensors.index.json");
  dir.write("s1.safetensors", makeSafetensors({{"a", {2}}}));

  dir.write("model.safetensors.index.json", R"({"weight_map":{"a":"s1.safetensors",)"
                                            R"("b":"s2.safetensors"}})");
  EXPECT_EQ(errorText(WeightSet::openDirectory(dir.path())),
            index + ": tensor 'b' is mapped to 's2.safetensors', which does not exist");

  dir.write("model.safetensors.index.json", R"({"weight_map":{"a":"s1.safetensors",)"
                                            R"("z":"s1.safetensors"}})");
  EXPECT_EQ(errorText(WeightSet::openDirectory(dir.path())),
            index + ": tensor 'z' is mapped to 's1.safetensors', which does not contain it");

  dir.write("model.safetensors.index.json", R"({"weight_map":{"a":1}})");
  EXPECT_EQ(errorText(WeightSet::openDirectory(dir.path())),
            index + ": weight_map entry 'a' must be a file name, got 1");

  dir.write("model.safetensors.index.json", R"({"metadata":{}})");
  EXPECT_EQ(errorText(WeightSet::openDirectory(dir.path())),
            index + ": missing 'weight_map' object");

  dir.write("model.safetensors.index.json", "{");
  std::string err = errorText(WeightSet::openDirectory(dir.path()));
  EXPECT_EQ(err.rfind(index + ": invalid JSON: ", 0), 0u) << err;

  // A shard holding a tensor the index places in another shard.
  dir.write("s2.safetensors", makeSafetensors({{"b", {1}}, {"a", {2}}}));
  dir.write("model.safetensors.index.json", R"({"weight_map":{"a":"s1.safetensors",)"
                                            R"("b":"s2.safetensors"}})");
  EXPECT_EQ(errorText(WeightSet::openDirectory(dir.path())),
            "tensor 'a' is in both s1.safetensors and s2.safetensors");
}

TEST(WeightSet, OpensExplicitFiles) {
  TempDir dir;
  dir.write("p.safetensors", makeSafetensors({{"p", {1}}}));
  auto ws = WeightSet::openFiles({dir.file("p.safetensors")});
  ASSERT_TRUE(bool(ws)) << errorText(ws.takeError());
  EXPECT_NE(ws->lookup("p"), nullptr);
  EXPECT_EQ(ws->description(), dir.file("p.safetensors"));
}

TEST(SafeTensorsFormat, ShapesAndDtypes) {
  EXPECT_EQ(formatShape({}), "[]");
  EXPECT_EQ(formatShape({64, 128}), "[64, 128]");
  EXPECT_STREQ(dtypeName(DType::BF16), "BF16");
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::F16), 2u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
}

} // namespace

// A shard the index names must be a file of the checkpoint directory: a
// path would let a checkpoint make fmc read (and map) any file.
TEST(WeightSet, IndexShardsStayInTheDirectory) {
  TempDir dir;
  std::string index = dir.file("model.safetensors.index.json");
  dir.write("s1.safetensors", makeSafetensors({{"a", {2}}}));
  for (const char *name : {"../s1.safetensors", "/etc/passwd", "sub/s1.safetensors", "..", ""}) {
    dir.write("model.safetensors.index.json",
              std::string(R"({"weight_map":{"a":")") + name + R"("}})");
    EXPECT_EQ(errorText(WeightSet::openDirectory(dir.path())),
              index + ": weight_map entry 'a' names '" + name +
                  "': a shard must be a file name in the checkpoint directory");
  }
}
