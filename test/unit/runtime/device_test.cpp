// The device layer through the public API: which device a model loads on
// (the executable of its target, the default choice, clear errors), weight
// variants for the device's target, the activation mode per session, and
// the AllReduce that sums each rank's own partials.
#include "ArtifactBuilder.h"
#include "QuantModel.h"
#include "ThreadGroup.h"
#include "TinyModel.h"
#include "fm/runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

namespace fm::test {
namespace {

const std::vector<uint8_t> &kernelsSo() {
  static const std::vector<uint8_t> image = readFile(FM_TEST_KERNELS_SO);
  return image;
}

// A model that dispatches generated code: vocab 4, one function that
// records rows and pos into the logits.
std::vector<uint8_t> dispatching(const std::function<void(ArtifactBuilder &)> &exes) {
  ArtifactBuilder b;
  b.vocab = 4;
  exes(b);
  b.addProgram("decode", 1, 8, buf(0, 4, 4), false,
               {b.dispatch(1, {b.bufferArg(buf(0, 4, 4))}, "record")});
  return b.finish();
}

std::string loadMessage(const std::vector<uint8_t> &file, const LoadOptions &o) {
  auto model = Model::loadFromBuffer(file.data(), file.size(), "m.fmb", o);
  return model ? "(loaded on " + (*model)->device() + ")" : model.message();
}

TEST(Device, LoadsTheExecutableOfItsTarget) {
  // A CPU executable and one for another target, same function list: the
  // default device (the CPU here) takes the CPU's and runs it.
  auto file = dispatching([](ArtifactBuilder &b) {
    b.addExecutable("vulkan", "spirv", "", {"fmt_write_kv", "fmt_record"},
                    {3, 2, 2, 7}, 1);
    b.setExecutable("elf-so", "x86_64-unknown-linux-gnu",
                    {"fmt_write_kv", "fmt_record"}, kernelsSo());
  });
  auto model = Model::loadFromBuffer(file.data(), file.size(), "m.fmb");
  ASSERT_TRUE(model.isOk()) << model.message();
  EXPECT_EQ((*model)->device(), "cpu");
  EXPECT_EQ((*model)->targets(), (std::vector<std::string>{"vulkan", "cpu"}));
  EXPECT_EQ((*model)->executableFormat(), "elf-so");
  Session session(*model, SessionOptions{1});
  auto logits = session.decode(2);
  ASSERT_TRUE(logits.isOk()) << logits.message();
  EXPECT_EQ((*logits)[0], 1.0f); // rows
  EXPECT_EQ((*logits)[1], 0.0f); // pos
}

TEST(Device, ChoiceErrors) {
  auto onlyVulkan = dispatching([](ArtifactBuilder &b) {
    b.addExecutable("vulkan", "spirv", "", {"f", "g"}, {3, 2, 2, 7}, 1);
  });
  LoadOptions o;
  EXPECT_EQ(loadMessage(onlyVulkan, o),
            "m.fmb: no device here can run it (its executables are for: vulkan)");
  o.device = "cpu";
  EXPECT_EQ(loadMessage(onlyVulkan, o),
            "m.fmb has no executable for device 'cpu' (it has: vulkan); compile "
            "it with fmc compile --target cpu");
  o.device = "vulkan";
  // The kinds built into this runtime (cuda where the CUDA toolkit was
  // found at build time), best first.
  std::string builtIn;
  for (const DeviceInfo &d : probeDevices())
    if (d.builtIn)
      builtIn += (builtIn.empty() ? "" : ", ") + d.name;
  if (builtIn.find("vulkan") == std::string::npos)
    EXPECT_EQ(loadMessage(onlyVulkan, o),
              "m.fmb: device 'vulkan' is not built into this runtime (rebuild "
              "with its SDK installed; built in: " + builtIn + ")");
  else // Built in: the device itself refuses the 4-byte image (or is absent).
    EXPECT_NE(loadMessage(onlyVulkan, o), "");
  o.device = "npu";
  EXPECT_EQ(loadMessage(onlyVulkan, o),
            "m.fmb: unknown device 'npu' (known: cuda, metal, vulkan, cpu)");
  // A program without generated code runs on any device: no executable needed.
  ArtifactBuilder b;
  b.vocab = 4;
  b.hidden = 4;
  const uint32_t E = b.addWeight("e", {4, 4}, std::vector<float>(16, 1.0f));
  b.addProgram("decode", 1, 8, buf(0, 4, 4), false, {b.embed(E, buf(0, 4, 4))});
  o.device = "";
  EXPECT_EQ(loadMessage(b.finish(), o), "(loaded on cpu)");
}

TEST(Device, ProbeListsEveryKind) {
  std::vector<std::string> names;
  for (const DeviceInfo &d : probeDevices()) {
    names.push_back(d.name);
    if (d.name == "cpu") {
      EXPECT_TRUE(d.builtIn && d.present && d.hardware);
      EXPECT_EQ(d.description.rfind("cpu (", 0), 0u) << d.description;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"cuda", "metal", "vulkan", "cpu"}));
}

// vocab 4, hidden 4: logits = W · E[token] with W read from a variant in the
// CPU's "row-major" layout while its shared bytes are garbage: the device
// reads the variant of its target, and only in a layout it knows.
std::vector<uint8_t> variantModel(const std::string &target,
                                  const std::string &layout) {
  ArtifactBuilder b;
  b.vocab = 4;
  b.hidden = 4;
  const uint32_t E = b.addWeight("e", {4, 4}, {1, 2, 3, 4, 0, 1, 0, 1, -1, 0, 2, 0,
                                               5, 5, 5, 5});
  const std::vector<float> w = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1};
  const uint32_t W = b.addWeight("w", {4, 4}, std::vector<float>(16, 1e6f));
  std::vector<uint8_t> bytes(64);
  std::memcpy(bytes.data(), w.data(), 64);
  b.addVariant(W, target, layout, bytes);
  b.addProgram("decode", 1, 8, buf(4, 4, 4), false,
               {b.embed(E, buf(0, 4, 4)),
                b.matmul(buf(0, 4, 4), {W}, buf(4, 4, 4), 4, 4)});
  return b.finish();
}

float firstLogit(const std::vector<uint8_t> &file) {
  auto model = Model::loadFromBuffer(file.data(), file.size(), "v.fmb");
  EXPECT_TRUE(model.isOk()) << model.message();
  if (!model)
    return NAN;
  Session session(*model, SessionOptions{1});
  auto logits = session.decode(2); // E[2] = [-1, 0, 2, 0]
  EXPECT_TRUE(logits.isOk()) << logits.message();
  return logits ? (*logits)[0] : NAN;
}

TEST(Device, ReadsTheVariantOfItsTarget) {
  EXPECT_EQ(firstLogit(variantModel("cpu", "row-major")), -1.0f);
  // Another target's variant, or a layout the CPU does not read: the shared
  // bytes.
  EXPECT_EQ(firstLogit(variantModel("vulkan", "row-major")), 1e6f);
  EXPECT_EQ(firstLogit(variantModel("cpu", "tiled-8x8")), 1e6f);
}

// The activation mode belongs to each session: a second session on the same
// model with another mode changes nothing for the first.
TEST(Device, ActivationsPerSession) {
  QuantModel qm;
  QuantModel::Options o;
  auto file = qm.build(o, kernelsSo());
  auto model = Model::loadFromBuffer(file.data(), file.size(), "q.fmb");
  ASSERT_TRUE(model.isOk()) << model.message();
  const std::vector<int32_t> tokens = {3, 1, 4, 1, 5, 9, 2};
  auto run = [&](Session &s) {
    auto l = s.prefill(tokens, /*allLogits=*/true);
    EXPECT_TRUE(l.isOk()) << l.message();
    return l ? std::vector<float>(l->data, l->data + l->rows * l->vocab)
             : std::vector<float>();
  };
  SessionOptions int8;
  int8.threads = 1;
  int8.activations = SessionOptions::Activations::Int8;
  SessionOptions f32 = int8;
  f32.activations = SessionOptions::Activations::F32;
  Session alone(*model, int8);
  const std::vector<float> want = run(alone);
  Session a(*model, int8);
  Session b(*model, f32); // created after a: must not switch a's mode
  const std::vector<float> exact = run(b);
  const std::vector<float> got = run(a);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got, want);
  // And the modes differ on this model (else the test could not fail).
  double diff = 0;
  for (size_t i = 0; i < got.size(); ++i)
    diff = std::max(diff, double(std::fabs(got[i] - exact[i])));
  EXPECT_GT(diff, 1e-5);
}

// vocab 4: a = E[token], b = 2 E[token] (rows of 4), out = scale · (a + b)
// over one rank; over two, rank 0 computes a and rank 1 b, and the
// AllReduce sums each rank's own partial, then the ranks.
std::vector<uint8_t> partialsModel(uint32_t ranks) {
  ArtifactBuilder b;
  b.vocab = 4;
  b.hidden = 4;
  b.ranks = ranks;
  const uint32_t E = b.addWeight("e", {4, 4}, {1, 2, 3, 4, -1, 0, 0.5f, 8, 2, 2,
                                               2, 2, 0, 0, 0, 1});
  const uint32_t Two = b.addWeight("two", {4, 4}, {2, 0, 0, 0, 0, 2, 0, 0, 0, 0,
                                                   2, 0, 0, 0, 0, 2});
  const uint32_t I = b.addWeight("id", {4, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1,
                                                0, 0, 0, 0, 1});
  const int32_t r0 = ranks > 1 ? 0 : -1, r1 = ranks > 1 ? 1 : -1;
  std::vector<ArtifactBuilder::Cmd> cmds = {b.embed(E, buf(0, 4, 4))};
  b.placement = {-1, -1, r0};
  cmds.push_back(b.matmul(buf(0, 4, 4), {I}, buf(4, 4, 4), 4, 4));
  b.placement = {-1, -1, r1};
  cmds.push_back(b.matmul(buf(0, 4, 4), {Two}, buf(8, 4, 4), 4, 4));
  b.placement = {};
  cmds.push_back(b.allReduceOf({buf(4, 4, 4), buf(8, 4, 4)}, {r0, r1},
                               buf(12, 4, 4), 0.5f));
  cmds.push_back(b.matmul(buf(12, 4, 4), {I}, buf(16, 4, 4), 4, 4));
  b.addProgram("decode", 1, 20, buf(16, 4, 4), false, cmds);
  return b.finish();
}

TEST(AllReduce, SumsEachRanksPartials) {
  const float want[4] = {1.5f, 3.0f, 4.5f, 6.0f}; // 0.5 · 3 · E[0]
  {
    auto model = Model::loadFromBuffer(partialsModel(1).data(),
                                       partialsModel(1).size(), "p1.fmb");
    ASSERT_TRUE(model.isOk()) << model.message();
    Session s(*model, SessionOptions{1});
    auto l = s.decode(0);
    ASSERT_TRUE(l.isOk()) << l.message();
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ((*l)[i], want[i]);
  }
  const auto file = partialsModel(2);
  auto model = Model::loadFromBuffer(file.data(), file.size(), "p2.fmb");
  ASSERT_TRUE(model.isOk()) << model.message();
  ThreadGroup group(2);
  std::vector<float> got[2];
  std::string errors[2];
  auto rank = [&](int r) {
    Session s(*model, SessionOptions{1, &group.rank(r)});
    auto l = s.decode(0);
    if (!l) {
      errors[r] = l.message();
      return;
    }
    got[r].assign(*l, *l + 4);
  };
  std::thread other(rank, 1);
  rank(0);
  other.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(errors[r], "") << "rank " << r;
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(got[r][i], want[i]) << "rank " << r << " at " << i;
  }
}

TEST(AllReduce, InputsChecked) {
  auto error = [](const std::function<void(ArtifactBuilder &, std::vector<ArtifactBuilder::Cmd> &)>
                      &tweak) {
    ArtifactBuilder b;
    b.vocab = 4;
    b.hidden = 4;
    b.ranks = 2;
    std::vector<ArtifactBuilder::Cmd> cmds;
    tweak(b, cmds);
    b.addProgram("decode", 1, 20, buf(16, 4, 4), false, cmds);
    auto file = b.finish();
    LoadOptions o;
    o.loadExecutable = false;
    auto m = Model::loadFromBuffer(file.data(), file.size(), "a.fmb", o);
    return m ? std::string("(loaded)") : m.message();
  };
  const std::string at = "a.fmb: program 'decode' command 0 (combine): ";
  EXPECT_EQ(error([](ArtifactBuilder &b, std::vector<ArtifactBuilder::Cmd> &c) {
              c.push_back(b.allReduceOf({buf(4, 4, 4)}, {0, 1}, buf(12, 4, 4), 1,
                                        "combine"));
            }),
            at + "all-reduce has 1 inputs but 2 input ranks");
  EXPECT_EQ(error([](ArtifactBuilder &b, std::vector<ArtifactBuilder::Cmd> &c) {
              c.push_back(b.allReduceOf({buf(4, 4, 4)}, {2}, buf(12, 4, 4), 1,
                                        "combine"));
            }),
            at + "input 0 rank 2 is not -1 or a rank below 2");
  EXPECT_EQ(error([](ArtifactBuilder &b, std::vector<ArtifactBuilder::Cmd> &c) {
              c.push_back(b.allReduceOf({buf(10, 4, 4)}, {}, buf(12, 4, 4), 1,
                                        "combine"));
            }),
            at + "input 0 buffer (offset 40, stride 16, width 4) overlaps out "
                 "buffer (offset 48, stride 16, width 4) (an input is out "
                 "itself or apart)");
  EXPECT_EQ(error([](ArtifactBuilder &b, std::vector<ArtifactBuilder::Cmd> &c) {
              c.push_back(b.allReduceOf({buf(4, 4, 2)}, {}, buf(12, 4, 4), 1,
                                        "combine"));
            }),
            at + "input 0 width 2 is not out width 4");
  EXPECT_EQ(error([](ArtifactBuilder &b, std::vector<ArtifactBuilder::Cmd> &c) {
              c.push_back(b.allReduceOf({}, {}, buf(12, 4, 4), 1, "combine"));
            }),
            at + "all-reduce has no inputs");
}

} // namespace
} // namespace fm::test
