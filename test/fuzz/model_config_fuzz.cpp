// libFuzzer target: config.json → ModelSpec (parseModelConfig), and for
// every config the reader accepts (of a size worth emitting), a checkpoint
// of exactly the tensors it expects → the importer's fm IR, which must
// verify: whatever the config reader lets through, the importer has to
// check in its own words, not leave to the dialect verifier.
#include "import/Importer.h"
#include "import/ModelConfig.h"
#include "import/weights/SafeTensors.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

namespace fi = fm::import;

std::string dir;

void removeDir() {
  std::remove((dir + "/model.safetensors").c_str());
  ::rmdir(dir.c_str());
}

const std::string &scratch() {
  if (dir.empty()) {
    const char *tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/fm-config-fuzz-XXXXXX";
    if (!mkdtemp(tmpl.data()))
      std::abort();
    dir = tmpl;
    std::atexit(removeDir);
  }
  return dir;
}

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\u%04x", c);
      out += hex;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// model.safetensors holding every tensor `spec` expects, F16 zeros.
bool writeCheckpoint(const fi::ModelSpec &spec, const std::string &path) {
  std::string header = "{";
  uint64_t offset = 0;
  for (const fi::ExpectedTensor &e : spec.expected) {
    uint64_t elements = 1;
    std::string shape = "[";
    for (int64_t d : e.shape) {
      elements *= static_cast<uint64_t>(d);
      shape += (shape.size() > 1 ? "," : "") + std::to_string(d);
    }
    shape += "]";
    if (header.size() > 1)
      header += ",";
    header += jsonString(e.name) + ":{\"dtype\":\"F16\",\"shape\":" + shape +
              ",\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + 2 * elements) + "]}";
    offset += 2 * elements;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  uint8_t len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<uint8_t>(uint64_t(header.size()) >> (8 * i));
  std::fwrite(len, 1, 8, f);
  std::fwrite(header.data(), 1, header.size(), f);
  static const std::vector<uint8_t> zeros(1 << 16, 0);
  for (uint64_t left = offset; left > 0;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(left, zeros.size()));
    std::fwrite(zeros.data(), 1, n, f);
    left -= n;
  }
  return std::fclose(f) == 0;
}

// One context for many inputs (creating one per input is slow), renewed
// now and then so that uniqued attributes do not pile up.
mlir::MLIRContext &context(std::string **diagnostics) {
  static std::unique_ptr<mlir::MLIRContext> ctx;
  static std::string text;
  static int uses = 0;
  if (!ctx || ++uses > 256) {
    ctx = std::make_unique<mlir::MLIRContext>();
    ctx->getDiagEngine().registerHandler([](mlir::Diagnostic &d) {
      text += d.str() + "\n";
      return mlir::success();
    });
    uses = 0;
  }
  text.clear();
  *diagnostics = &text;
  return *ctx;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto spec = fi::parseModelConfig(text, "config.json");
  if (!spec) {
    llvm::consumeError(spec.takeError());
    return 0;
  }
  // What every accepted spec promises.
  if (spec->vocabSize <= 0 || spec->hiddenSize <= 0)
    std::abort();
  uint64_t elements = 0;
  for (const fi::ExpectedTensor &e : spec->expected) {
    uint64_t n = 1;
    for (int64_t d : e.shape) {
      if (d <= 0)
        std::abort();
      n = n > (uint64_t(1) << 40) / uint64_t(d) ? (uint64_t(1) << 40) : n * d;
    }
    elements = std::min<uint64_t>(elements + n, uint64_t(1) << 40);
  }
  // Big models are fine, but not worth a file per input.
  if (spec->expected.size() > 4096 || elements > (uint64_t(1) << 18))
    return 0;
  const std::string path = scratch() + "/model.safetensors";
  if (!writeCheckpoint(*spec, path))
    std::abort();
  auto weights = fi::WeightSet::openFiles({path});
  if (!weights) {
    llvm::errs() << llvm::toString(weights.takeError()) << "\n";
    std::abort(); // the checkpoint of the expected tensors is valid
  }
  std::vector<std::string> warnings;
  if (llvm::Error e = fi::checkWeights(*spec, *weights, warnings)) {
    llvm::errs() << llvm::toString(std::move(e)) << "\n";
    std::abort(); // it holds exactly the expected tensors
  }
  std::string *diagnostics = nullptr;
  mlir::MLIRContext &ctx = context(&diagnostics);
  fi::ImportOptions options;
  options.contextLength = 16;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      fi::emitModel(ctx, *spec, *weights, scratch(), options);
  if (!module || mlir::failed(mlir::verify(*module))) {
    llvm::errs() << "the importer accepted a config whose IR does not verify:\n"
                 << *diagnostics;
    std::abort();
  }
  return 0;
}
