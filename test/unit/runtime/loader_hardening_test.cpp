// The loader's defences beyond the format checks: signatures (minisign's
// formats, the trailer, trusted keys), the memory bound of a session, a
// file that changes after it was loaded, the bounds check of CopyLastRow's
// destination, and VitAttention's window bound.
#include "ArtifactBuilder.h"
#include "fm/artifact.h"
#include "fm/artifact_signature.h"
#include "fm/minisign.h"
#include "fm/runtime.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace fm::test {
namespace {

using Cmd = ArtifactBuilder::Cmd;

// vocab 4, hidden 4: Embed → MatMul to logits, one 'decode' program of
// `arena` floats; `extra` adds commands after them.
std::vector<uint8_t>
mini(const std::function<void(ArtifactBuilder &, std::vector<Cmd> &)> &extra = {},
     uint64_t arena = 8) {
  ArtifactBuilder b;
  b.vocab = 4;
  b.hidden = 4;
  const uint32_t E = b.addWeight("model.embed_tokens.weight", {4, 4},
                                 {1, 2, 3, 4, 0, 1, 0, 1, -1, 0, 2, 0, 5, 5, 5, 5});
  const uint32_t W = b.addWeight("lm_head.weight", {4, 4},
                                 {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1});
  std::vector<Cmd> cmds;
  cmds.push_back(b.embed(E, buf(0, 4, 4), "model.embed_tokens"));
  cmds.push_back(b.matmul(buf(0, 4, 4), {W}, buf(4, 4, 4), 4, 4, false, "lm_head"));
  if (extra)
    extra(b, cmds);
  b.addProgram("decode", 1, arena, buf(4, 4, 4), false, cmds);
  return b.finish();
}

std::string loadError(const std::vector<uint8_t> &file, LoadOptions options = {}) {
  options.loadExecutable = false;
  auto model = Model::loadFromBuffer(file.data(), file.size(), "model.fmb", options);
  return model ? std::string("(loaded)") : model.message();
}

// `file` with a signature trailer by `key` over its own digests (or, with
// `statement`, over that text).
std::vector<uint8_t> sign(std::vector<uint8_t> file, const minisign::SecretKey &key,
                          const std::string &statement = "") {
  auto a = ArtifactFile::fromBuffer(file.data(), file.size(), "f", {});
  EXPECT_TRUE(a.isOk()) << a.message();
  const std::string s =
      statement.empty() ? format::signedStatement((*a)->signedDigests()) : statement;
  const std::string sig = minisign::sign(
      key, reinterpret_cast<const uint8_t *>(s.data()), s.size(), "fmc artifact test");
  const std::vector<uint8_t> record =
      format::trailerRecord(format::kTrailerSignature, sig);
  file.insert(file.end(), record.begin(), record.end());
  return file;
}

TEST(LoaderSignature, MinisignFormatsRoundTrip) {
  const minisign::KeyPair k = minisign::generateKeyPair();
  auto pub = minisign::parsePublicKey(minisign::publicKeyFile(k.pub), "k.pub");
  ASSERT_TRUE(pub.isOk()) << pub.message();
  EXPECT_EQ(pub->id, k.pub.id);
  EXPECT_EQ(pub->key, k.pub.key);
  // The base64 line alone, as `minisign -P` takes it.
  auto line = minisign::parsePublicKey(minisign::publicKeyLine(k.pub), "-P");
  ASSERT_TRUE(line.isOk()) << line.message();
  EXPECT_EQ(line->key, k.pub.key);
  auto secret = minisign::parseSecretKey(minisign::secretKeyFile(k.secret), "k.key");
  ASSERT_TRUE(secret.isOk()) << secret.message();
  EXPECT_EQ(secret->key, k.secret.key);
  EXPECT_EQ(minisign::keyIdText(k.pub.id).size(), 16u);

  const std::string message = "the statement";
  const auto *m = reinterpret_cast<const uint8_t *>(message.data());
  const std::string text = minisign::sign(k.secret, m, message.size(), "comment\nline");
  auto s = minisign::parseSignature(text, "s.minisig");
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_TRUE(s->prehashed);
  EXPECT_EQ(s->trustedComment, "comment line"); // one line
  EXPECT_TRUE(minisign::verify(*s, k.pub, m, message.size(), "s").isOk());
  // Deterministic (Ed25519): one key, one message, one comment, one text.
  EXPECT_EQ(minisign::sign(k.secret, m, message.size(), "comment\nline"), text);

  // Another message, another key, a changed trusted comment.
  EXPECT_EQ(minisign::verify(*s, k.pub, m, message.size() - 1, "s").message(),
            "s: the signature by key " + minisign::keyIdText(k.pub.id) +
                " does not match (the signed bytes or the signature changed)");
  minisign::KeyPair other = minisign::generateKeyPair();
  other.pub.id = k.pub.id;
  EXPECT_FALSE(minisign::verify(*s, other.pub, m, message.size(), "s").isOk());
  minisign::Signature changed = *s;
  changed.trustedComment = "comment line!";
  EXPECT_EQ(minisign::verify(changed, k.pub, m, message.size(), "s").message(),
            "s: the trusted comment's signature by key " +
                minisign::keyIdText(k.pub.id) + " does not match");
}

TEST(LoaderSignature, KeyFileErrors) {
  EXPECT_EQ(minisign::parsePublicKey("untrusted comment: x\nAAAA\n", "k.pub").message(),
            "k.pub: not a minisign public key (the key line is not 42 bytes of base64)");
  EXPECT_EQ(minisign::parsePublicKey("hello\nworld\n", "k.pub").message(),
            "k.pub: not a minisign public key (expected an \"untrusted comment:\" "
            "line, then the key in base64)");
  // An encrypted minisign key (kdf "Sc").
  const minisign::KeyPair k = minisign::generateKeyPair();
  std::string file = minisign::secretKeyFile(k.secret);
  const size_t nl = file.find('\n');
  std::string line = file.substr(nl + 1, file.size() - nl - 2);
  // The kdf bytes in the base64 text: "RWQAAEIy" ("Ed" 0 0 "B2") becomes
  // "RWRTY0Iy" ("Ed" "Sc" "B2"), as minisign -G writes a password's key.
  ASSERT_EQ(line.substr(0, 8), "RWQAAEIy");
  line.replace(0, 8, "RWRTY0Iy");
  EXPECT_EQ(minisign::parseSecretKey(file.substr(0, nl + 1) + line + "\n", "k.key").message(),
            "k.key: the secret key is encrypted with a password; fmc reads "
            "unencrypted keys (make one with `fmc keygen` or `minisign -G -W`)");
}

TEST(LoaderSignature, TrustedKeysRefuseUnsignedAndOtherwiseSigned) {
  const minisign::KeyPair trusted = minisign::generateKeyPair();
  const minisign::KeyPair stranger = minisign::generateKeyPair();
  const std::string id = minisign::keyIdText(trusted.pub.id);
  LoadOptions o;
  o.trustedKeys = {minisign::publicKeyFile(trusted.pub)};

  const std::vector<uint8_t> plain = mini();
  EXPECT_EQ(loadError(plain, o),
            "model.fmb: not signed: only artifacts signed by a trusted key (" + id +
                ") may load (fmc compile --sign KEY)");
  // Signed: loads, and says by whom; an untrusting load ignores the trailer.
  const std::vector<uint8_t> good = sign(plain, trusted.secret);
  EXPECT_EQ(loadError(good, o), "(loaded)");
  {
    auto model = Model::loadFromBuffer(good.data(), good.size(), "m.fmb", o);
    ASSERT_TRUE(model.isOk());
    EXPECT_EQ((*model)->signedBy(), id);
  }
  EXPECT_EQ(loadError(good), "(loaded)");
  // By another key.
  EXPECT_EQ(loadError(sign(plain, stranger.secret), o),
            "model.fmb: signed by key " + minisign::keyIdText(stranger.pub.id) +
                ", which is not trusted (trusted: " + id + ")");
  // Over other digests (a signature taken from another artifact).
  EXPECT_EQ(loadError(sign(plain, trusted.secret, "fmc artifact signature v1\n"), o),
            "model.fmb: the signature by key " + id +
                " does not match (the signed bytes or the signature changed)");
  // The program changed after signing: the program digest stops it first.
  {
    std::vector<uint8_t> bad = good;
    bad[ArtifactBuilder::dataStart(bad) - 1] ^= 1; // padding before the data
    EXPECT_EQ(loadError(bad, o).rfind("model.fmb: corrupt: the program digest does "
                                      "not match",
                                      0),
              0u);
  }
  // A damaged trailer.
  {
    std::vector<uint8_t> bad = good;
    bad[plain.size() + 2] ^= 0x40; // its magic
    EXPECT_EQ(loadError(bad, o),
              "model.fmb: trailer record 0 at byte " + std::to_string(plain.size()) +
                  ": not a trailer record (the bytes after the data section are "
                  "damaged)");
  }
  // Its reserved header field and its padding are zero: a change there is
  // an error too, not an unread byte.
  {
    std::vector<uint8_t> bad = good;
    bad[plain.size() + 13] = 7;
    EXPECT_EQ(loadError(bad, o),
              "model.fmb: trailer record 0 at byte " + std::to_string(plain.size()) +
                  ": byte 13 of the header is reserved (0), not 7");
  }
  {
    std::vector<uint8_t> bad = good;
    ASSERT_EQ(bad.back(), 0) << "the signature record ends in padding";
    bad.back() = 1;
    EXPECT_EQ(loadError(bad, o),
              "model.fmb: trailer record 0 at byte " + std::to_string(plain.size()) +
                  ": padding byte " + std::to_string(bad.size() - 1) + " is 1, not 0");
  }
  // A record of a later kind is skipped; the signature after it counts.
  {
    std::vector<uint8_t> file = plain;
    const auto later = format::trailerRecord(99, "later");
    file.insert(file.end(), later.begin(), later.end());
    const std::vector<uint8_t> signedFile = sign(plain, trusted.secret);
    file.insert(file.end(), signedFile.begin() + plain.size(), signedFile.end());
    EXPECT_EQ(loadError(file, o), "(loaded)");
  }
  // Keys are parsed with the file: a bad one says which.
  LoadOptions badKey;
  badKey.trustedKeys = {"nonsense"};
  EXPECT_EQ(loadError(good, badKey),
            "model.fmb: trusted key 1: not a minisign public key (the key line is "
            "not 42 bytes of base64)");
  // The signature is meaningless without the program digest.
  LoadOptions noDigest = o;
  noDigest.skipProgramDigestForFuzzing = true;
  EXPECT_EQ(loadError(good, noDigest),
            "model.fmb: a signature cannot be checked without the program digest");
}

TEST(LoaderLimits, SessionMemoryIsBoundedBeforeAllocating) {
  // A cache of 2 slots x 2 x 16 positions x 1 x 4 floats = 1024 bytes and
  // the arena of 32 bytes.
  auto withCache = mini([](ArtifactBuilder &b, std::vector<Cmd> &) {
    b.addCache("kv", 2, 1, 4, 16);
  });
  LoadOptions o;
  o.maxMemoryBytes = 1056;
  EXPECT_EQ(loadError(withCache, o), "(loaded)");
  o.maxMemoryBytes = 1055;
  EXPECT_EQ(loadError(withCache, o),
            "model.fmb: a session needs 1056 bytes (0.0 GiB), more than the limit "
            "of 1055 bytes (0.0 GiB) (LoadOptions::maxMemoryBytes, fm-run "
            "--max-memory); the largest part is cache 0 ('kv': slots 2 x 2 x "
            "capacity 16 x kv_heads 1 x head_dim 4 x 4 bytes): 1024 bytes (0.0 GiB)");
  {
    auto model = Model::loadFromBuffer(withCache.data(), withCache.size(), "m.fmb");
    ASSERT_TRUE(model.isOk());
    EXPECT_EQ((*model)->sessionBytes(), 1056u);
    EXPECT_EQ((*model)->copiedWeightBytes(), 0u); // the CPU maps them
    Session session(*model, SessionOptions{1});
    ASSERT_TRUE(session.status().isOk());
    EXPECT_GE(session.memoryBytes(), 1056u);
  }
  // A cache the loader allows (2^40 bytes, under its 2^46 cap) but no
  // machine here has: refused by the physical memory, before allocating.
  auto huge = mini([](ArtifactBuilder &b, std::vector<Cmd> &) {
    b.addCache("kv", 1024, 8, 128, 1u << 20);
  });
  const std::string message = loadError(huge);
  EXPECT_EQ(message.rfind("model.fmb: a session needs 8796093022240 bytes", 0), 0u)
      << message;
  EXPECT_NE(message.find("(this machine's physical memory); the largest part is "
                         "cache 0 ('kv': slots 1024 x 2 x capacity 1048576 x "
                         "kv_heads 8 x head_dim 128 x 4 bytes)"),
            std::string::npos)
      << message;
}

TEST(LoaderLimits, CopyLastRowDestinationInsideTheArena) {
  // dst one row at offset 24 bytes... 40: past the 32-byte arena.
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, std::vector<Cmd> &c) {
              c.push_back(b.copyLastRow(buf(0, 4, 4), buf(6, 4, 4), "model.norm"));
            })),
            "model.fmb: program 'decode' command 2 (model.norm): dst buffer (offset "
            "24, stride 16, width 4) with 1 row ends at byte 40, past the arena of "
            "32 bytes");
  // Its source too.
  EXPECT_EQ(loadError(mini([](ArtifactBuilder &b, std::vector<Cmd> &c) {
              c.push_back(b.copyLastRow(buf(5, 4, 4), buf(0, 4, 4), "model.norm"));
            })),
            "model.fmb: program 'decode' command 2 (model.norm): src buffer (offset "
            "20, stride 16, width 4) with 1 row ends at byte 36, past the arena of "
            "32 bytes");
}

TEST(LoaderLimits, VitAttentionWindowAtMostTheGrid) {
  // A 1-register 2x3 grid, 1 head of 4: qkv 7 rows x 12 at float 8, out
  // 7 x 4 after it; the arena holds both.
  auto vit = [](uint32_t window) {
    return mini(
        [window](ArtifactBuilder &b, std::vector<Cmd> &c) {
          c.push_back(b.vitAttention(buf(8, 12, 12), buf(92, 4, 4), 1, 2, 3, 1, 4,
                                     0.5f, window, "vision.blocks.0.attn"));
        },
        120);
  };
  EXPECT_EQ(loadError(vit(3)), "(loaded)"); // the larger side: one row of windows
  EXPECT_EQ(loadError(vit(0)), "(loaded)"); // global
  EXPECT_EQ(loadError(vit(4)),
            "model.fmb: program 'decode' command 2 (vision.blocks.0.attn): window 4 "
            "is larger than the 2x3 grid (at most its larger side)");
  // A thin grid: the larger side allows window 6 on 1x6, but its padding
  // would be 6x the grid (36 positions for 6); window 2 pads 1x6 to 2x6.
  auto thin = [](uint32_t window) {
    return mini(
        [window](ArtifactBuilder &b, std::vector<Cmd> &c) {
          c.push_back(b.vitAttention(buf(8, 12, 12), buf(92, 4, 4), 0, 1, 6, 1, 4,
                                     0.5f, window, "vision.blocks.0.attn"));
        },
        120);
  };
  EXPECT_EQ(loadError(thin(2)), "(loaded)");
  EXPECT_EQ(loadError(thin(6)),
            "model.fmb: program 'decode' command 2 (vision.blocks.0.attn): window 6 "
            "pads the 1x6 grid to more than 4x its positions");
  // A crafted window whose square wraps 32 bits never reaches a kernel.
  EXPECT_EQ(loadError(vit(65536)),
            "model.fmb: program 'decode' command 2 (vision.blocks.0.attn): window "
            "65536 is larger than the 2x3 grid (at most its larger side)");
}

std::string tempPath(const char *name) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/fm-" + std::to_string(getpid()) +
         "-" + name;
}

void writeFile(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  ASSERT_TRUE(f);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

TEST(LoaderLimits, FileChangedAfterLoadIsAnErrorNotACrash) {
  const std::vector<uint8_t> file = mini();
  const std::string path = tempPath("changed.fmb");
  writeFile(path, file);
  auto model = Model::load(path);
  ASSERT_TRUE(model.isOk()) << model.message();
  Session session(*model, SessionOptions{1});
  ASSERT_TRUE(session.decode(1).isOk());
  EXPECT_TRUE((*model)->checkFile(/*weights=*/true).isOk());

  // Truncated: the next call stops before touching the weights (which
  // would be a SIGBUS past the end of the file).
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(file.size() / 2)), 0);
  EXPECT_EQ(session.decode(1).message(),
            path + " changed after it was loaded: it had " +
                std::to_string(file.size()) + " bytes, now " +
                std::to_string(file.size() / 2) + " (load it again)");
  // Rewritten in place at the same size, a second later.
  writeFile(path, file);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  times[1].tv_sec += 1;
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  EXPECT_EQ(session.prefill({1, 2}).message(),
            path + " was modified after it was loaded (load it again)");
  // keepPrefix (a chat turn's KV reuse) checks it too, and keeps the context.
  EXPECT_EQ(session.keepPrefix(0).message(),
            path + " was modified after it was loaded (load it again)");
  EXPECT_EQ(session.position(), 1);
  EXPECT_EQ((*model)->checkFile().message(),
            path + " was modified after it was loaded (load it again)");
  std::remove(path.c_str());
}

} // namespace
} // namespace fm::test
