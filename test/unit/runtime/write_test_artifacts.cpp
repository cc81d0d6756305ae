// fm-test-artifacts: writes the runtime tests' hand-built artifacts to disk,
// for what runs them outside the unit tests, from the tests' own builders
// (MiniModels.h, TinyModel.h, TrackModel.h, QuantModel.h, AdapterBuilder.h):
//
//   fm-test-artifacts tiny-model PATH    the executor tests' TinyModel with the
//                                        test kernels, for trying fm-run; and
//                                        PATH.ref.f32, its reference logits of
//                                        kTokens (raw f32)
//   fm-test-artifacts track-models DIR   tracks_d1.fmb and tracks_d2.fmb (the
//                                        track tests' TrackModel on 1 and 2
//                                        ranks) and tracks_ref.npy, the
//                                        reference logits of kTokens, for
//                                        test/unit/runtime/mpi_check.sh
//   fm-test-artifacts fmb-corpus DIR     the seeds of the .fmb loader fuzzer
//                                        (test/fuzz/corpus/fmb)
//   fm-test-artifacts fmba-corpus DIR    the seeds of the .fmba adapter fuzzer
//                                        (test/fuzz/corpus/fmba)
//
// DIR is created if missing. Built with fm_runtime_test
// (runtime/src/CMakeLists.txt); the test kernels' shared object is the one
// built next to it.
#include "AdapterBuilder.h"
#include "ArtifactBuilder.h"
#include "MiniModels.h"
#include "QuantModel.h"
#include "TinyModel.h"
#include "TrackModel.h"
#include "fm/npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fm::test {
namespace {

// The prompt of the reference logits: the executor and track tests' kTokens,
// and the tokens that mpi_check.sh runs the track models on.
const std::vector<int32_t> kTokens = {3, 17, 0, 39, 5, 5, 22, 11, 8, 1, 30, 2, 14};

// Writes files into one directory, creating it; says on stderr what failed
// first, and writes nothing after that.
class Files {
public:
  explicit Files(std::string dir) : dir_(std::move(dir)) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec)
      fail("cannot create " + dir_ + ": " + ec.message());
  }

  void operator()(const std::string &name, const std::vector<uint8_t> &bytes) {
    write(path(name), bytes.data(), bytes.size());
  }
  void operator()(const std::string &name, const std::vector<float> &floats) {
    write(path(name), floats.data(), floats.size() * sizeof(float));
  }

  std::string path(const std::string &name) const { return dir_ + "/" + name; }
  void fail(const std::string &why) {
    std::fprintf(stderr, "fm-test-artifacts: %s\n", why.c_str());
    ok_ = false;
  }
  bool ok() const { return ok_; }

private:
  void write(const std::string &path, const void *data, size_t size) {
    if (!ok_)
      return;
    std::ofstream out(path, std::ios::binary);
    out.write(static_cast<const char *>(data), static_cast<std::streamsize>(size));
    out.close();
    if (!out)
      fail("cannot write " + path + ": " + std::strerror(errno));
  }

  std::string dir_;
  bool ok_ = true;
};

const std::vector<uint8_t> &kernelsSo() {
  static const std::vector<uint8_t> image = readFile(FM_TEST_KERNELS_SO);
  return image;
}

bool tinyModel(const std::string &path) {
  const std::filesystem::path p(path);
  Files write(p.has_parent_path() ? p.parent_path().string() : ".");
  const std::string name = p.filename().string();
  TinyModel tiny;
  write(name, tiny.build({}, kernelsSo()));
  write(name + ".ref.f32", tiny.reference(kTokens));
  return write.ok();
}

bool trackModels(const std::string &dir) {
  Files write(dir);
  TrackModel tm;
  TrackModel::Options o;
  write("tracks_d1.fmb", tm.build(o, kernelsSo()));
  o.ranks = 2;
  write("tracks_d2.fmb", tm.build(o, kernelsSo()));
  const std::vector<float> ref = tm.reference(kTokens);
  std::string error;
  if (write.ok() &&
      !fm::writeNpyF32(write.path("tracks_ref.npy"), ref.data(),
                       {int64_t(kTokens.size()), TrackModel::kVocab}, &error))
    write.fail(error);
  return write.ok();
}

// Seeds for test/fuzz/fmb_loader_fuzz.cpp.
bool fmbCorpus(const std::string &dir) {
  Files write(dir);
  write("mini.fmb", mini());
  // Schema v2's additions: a per-target weight variant, executables for two
  // targets with launch metadata, an AllReduce of two partials.
  write("mini_variant.fmb", mini([](ArtifactBuilder &b, Mini &m, Cmds &) {
          b.addVariant(m.W, "cpu", "row-major", std::vector<uint8_t>(64, 0));
        }));
  write("mini_two_targets.fmb",
        mini([](ArtifactBuilder &b, Mini &, Cmds &c) {
          b.setExecutable("elf-so", "x86_64-unknown-linux-gnu", {"f", "g"},
                          {0x7f, 'E', 'L', 'F'});
          b.addExecutable("vulkan", "spirv", "", {"f", "g"}, {3, 2, 2, 7}, 1);
          c.push_back(b.dispatch(1, {b.bufferArg(buf(0, 4, 4))}, "model.norm"));
        }));
  write("mini_partials.fmb", mini([](ArtifactBuilder &b, Mini &, Cmds &c) {
          c.push_back(b.allReduceOf({buf(0, 4, 4), buf(4, 4, 4)}, {}, buf(8, 4, 4),
                                    0.5f, "model.blocks.0.combine"));
        }, 1, 16));
  write("mini_attention.fmb", mini([](ArtifactBuilder &b, Mini &, Cmds &c) {
          b.addCache("kv", 2, 1, 4, 16);
          c.push_back(b.attention(buf(0, 4, 4), buf(4, 4, 4), 0, 1, 1, 1, 4, 0.5f, 2,
                                  "model.layers.0.self_attn"));
          c.push_back(b.copyLastRow(buf(4, 4, 4), buf(0, 4, 4), "model.norm"));
        }));
  write("mini_rows.fmb", mini(
                             [](ArtifactBuilder &b, Mini &m, Cmds &c) {
                               c[0] = b.embed(m.E, buf(0, 8, 4));
                               c[1] = b.matmul(buf(0, 8, 4), {m.W}, buf(4, 8, 4), 4, 4);
                               c.push_back(b.matmul(buf(0, 8, 4), {m.W, m.E},
                                                    buf(16, 8, 8), 4, 8, true, "", true));
                             },
                             2, 32));
  // The tiny model, with a tiny stand-in image (the fuzzer never dlopens).
  TinyModel tiny;
  TinyModel::Options o;
  o.maxRows = 4;
  o.capacity = 8;
  write("tiny.fmb", tiny.build(o, {0x7f, 'E', 'L', 'F'}));
  o.fusedQkv = false;
  o.attnStride = 20;
  o.gapAfterWq = true;
  write("tiny_split.fmb", tiny.build(o, {0x7f, 'E', 'L', 'F'}));
  // Moe (with and without a shared expert), track sections and AllReduce.
  write("mini_moe.fmb", moeMini());
  write("mini_moe_shared.fmb", moeMini({}, /*withShared=*/true, /*maxRows=*/3));
  write("mini_tracks.fmb", trackMini());
  write("mini_tracks_d2.fmb", trackMini({}, /*ranks=*/2));
  TrackModel tracks;
  TrackModel::Options to;
  to.maxRows = 4;
  to.capacity = 8;
  to.interleave = true;
  write("tracks.fmb", tracks.build(to, {0x7f, 'E', 'L', 'F'}));
  to.ranks = 2;
  to.interleave = false;
  write("tracks_d2.fmb", tracks.build(to, {0x7f, 'E', 'L', 'F'}));
  // Packed weights, int8 caches and Moe with packed experts.
  write("quant_mini.fmb", qMini());
  write("quant_mini_i8.fmb", qMini([](ArtifactBuilder &b, QMini &m, Cmds &c) {
          b.addCache("kv8", 2, 1, 32, 16, fa::DType::I8);
          c.push_back(b.attentionI8(buf(0, 32, 32), buf(72, 32, 32), 0, 1, 1, 1,
                                    32, 0.125f, int32_t(m.KS), int32_t(m.VS), 0,
                                    "model.layers.0.self_attn"));
        }));
  write("quant_moe.fmb", qMoeMini(false));
  write("quant_moe_shared.fmb", qMoeMini(true));
  QuantModel quant;
  QuantModel::Options qo;
  qo.maxRows = 4;
  qo.capacity = 8;
  write("quant_model.fmb", quant.build(qo, {0x7f, 'E', 'L', 'F'}));
  qo.tied = false;
  qo.int8Cache = false;
  qo.embed = {8, 64, kernels::QuantGrid::Affine};
  qo.attnStride = 128;
  write("quant_model_f32cache.fmb", quant.build(qo, {0x7f, 'E', 'L', 'F'}));
  return write.ok();
}

// Seeds for test/fuzz/adapter_fuzz.cpp, whose base is LoraBase's.
bool fmbaCorpus(const std::string &dir) {
  Files write(dir);
  LoraBase base;
  write("all_f16.fmba", base.adapter(1, 4, 0.5f).finish());
  write("all_q8.fmba", base.adapter(2, 8, 2.0f, true).finish());
  AdapterBuilder some = base.adapter(3, 1, 1.0f);
  some.loras.erase(some.loras.begin(), some.loras.begin() + 2);
  write("o_lm_rank1.fmba", some.finish());
  return write.ok();
}

struct Command {
  const char *name, *argument;
  bool (*run)(const std::string &);
};

const Command kCommands[] = {
    {"tiny-model", "PATH", tinyModel},
    {"track-models", "DIR", trackModels},
    {"fmb-corpus", "DIR", fmbCorpus},
    {"fmba-corpus", "DIR", fmbaCorpus},
};

int usage() {
  std::fprintf(stderr, "usage:\n");
  for (const Command &c : kCommands)
    std::fprintf(stderr, "  fm-test-artifacts %s %s\n", c.name, c.argument);
  std::fprintf(stderr, "(what each writes: test/unit/runtime/write_test_artifacts.cpp)\n");
  return 2;
}

} // namespace
} // namespace fm::test

int main(int argc, char **argv) {
  using namespace fm::test;
  if (argc != 3)
    return usage();
  for (const Command &c : kCommands)
    if (std::strcmp(argv[1], c.name) == 0)
      return c.run(argv[2]) ? 0 : 1;
  std::fprintf(stderr, "fm-test-artifacts: unknown command '%s'\n", argv[1]);
  return usage();
}
