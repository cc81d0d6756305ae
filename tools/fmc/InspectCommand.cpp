// `fmc inspect`: prints a verified .fmb artifact readably, or as JSON. Each
// command is described by its kind in the runtime (fm::ArtifactFile::
// describe), so a new command needs nothing here.
#include "Commands.h"
#include "InspectTokenizer.h"
#include "Signing.h"

#include "fm/artifact.h"
#include "fm/format.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

namespace fm::cli {
namespace {

namespace fa = ::fm::artifact;

std::string human(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? llvm::formatv("{0:F0} B", bytes).str()
                : llvm::formatv("{0:F1} {1}", bytes, units[u]).str();
}

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "fmc") << message << "\n";
  return 1;
}

/// Bits per weight of the quantized projections (scales included): the Q
/// weights other than the token embedding table. 0 when none is quantized.
double bitsPerWeight(const fa::Artifact &root) {
  std::set<uint32_t> embeddings;
  for (const fa::Program *p : *root.programs())
    for (const fa::Command *c : *p->commands())
      if (c->op_type() == fa::Op::Embed)
        embeddings.insert(c->op_as_Embed()->table_weight());
  double bits = 0, elems = 0;
  for (uint32_t i = 0; i < root.weights()->size(); ++i) {
    const fa::Weight *w = root.weights()->Get(i);
    if (!isQuantized(w->dtype()) || embeddings.count(i))
      continue;
    double n = 1;
    for (int64_t x : *w->shape())
      n *= x;
    bits += 8.0 * w->size();
    elems += n;
  }
  return elems ? bits / elems : 0.0;
}

/// All-reduce commands in one decode step.
unsigned collectivesPerToken(const fa::Artifact &root) {
  for (const fa::Program *p : *root.programs())
    if (p->phase()->str() == "decode") {
      unsigned n = 0;
      for (const fa::Command *c : *p->commands())
        n += c->op_type() == fa::Op::AllReduce;
      return n;
    }
  return 0;
}

/// The command's operands as JSON (the runtime's text of them), with its
/// placement. A value the runtime wrote that is not JSON (a NaN scale in a
/// corrupt file) is kept as a string.
llvm::json::Object commandJson(const fa::Command &c, const CommandText &t) {
  llvm::json::Object obj;
  if (auto parsed = llvm::json::parse("{" + t.json + "}")) {
    if (llvm::json::Object *o = parsed->getAsObject())
      obj = std::move(*o);
  } else {
    llvm::consumeError(parsed.takeError());
    obj["operands"] = t.json;
  }
  obj["op"] = t.op;
  obj["layer"] = c.layer() ? c.layer()->str() : "";
  obj["last_row_only"] = c.last_row_only();
  if (c.block() >= 0 || c.track() >= 0 || c.rank() >= 0) {
    obj["block"] = (int64_t)c.block();
    obj["track"] = (int64_t)c.track();
    obj["rank"] = (int64_t)c.rank();
  }
  return obj;
}

llvm::json::Object executableJson(const fa::Executable &e) {
  llvm::json::Array fns;
  for (const fa::Function *f : *e.functions()) {
    llvm::json::Object fn{{"name", f->name()->str()}};
    if (f->workgroup_size() && f->workgroup_size()->size()) {
      llvm::json::Array wg;
      for (uint32_t x : *f->workgroup_size())
        wg.push_back((int64_t)x);
      fn["workgroup_size"] = std::move(wg);
    }
    if (f->bindings())
      fn["bindings"] = (int64_t)f->bindings()->size();
    if (f->push_constants()) {
      llvm::json::Array pcs;
      for (const fa::PushConstant *pc : *f->push_constants())
        pcs.push_back(llvm::json::Object{{"name", pc->name()->str()},
                                         {"offset", (int64_t)pc->offset()},
                                         {"size", (int64_t)pc->size()}});
      fn["push_constants"] = std::move(pcs);
    }
    fns.push_back(std::move(fn));
  }
  return llvm::json::Object{{"target", e.target()->str()},
                            {"format", e.format()->str()},
                            {"triple", e.triple() ? e.triple()->str() : ""},
                            {"cpu", e.cpu() ? e.cpu()->str() : ""},
                            {"bytes", (int64_t)e.data()->size()},
                            {"functions", std::move(fns)}};
}

std::string targetList(const ArtifactFile &a) {
  std::string s;
  for (const std::string &t : a.targets())
    s += (s.empty() ? "" : ", ") + t;
  return s.empty() ? "none" : s;
}

int extract(const ArtifactFile &a, const InspectArgs &args) {
  const fa::Executable *exe = nullptr;
  if (!args.target.empty()) {
    exe = a.executable(args.target);
    if (!exe)
      return fail(args.artifact + " has no executable for target '" +
                  args.target + "' (it has: " + targetList(a) + ")");
  } else if (a.root().executables()->size() == 1) {
    exe = a.root().executables()->Get(0);
  } else if (a.root().executables()->size() == 0) {
    return fail(args.artifact + " has no executable");
  } else {
    return fail(args.artifact + " has executables for " + targetList(a) +
                ": say which with --target");
  }
  std::error_code ec;
  llvm::raw_fd_ostream out(args.extractExecutable, ec);
  if (ec)
    return fail("cannot write " + args.extractExecutable + ": " + ec.message());
  out.write(reinterpret_cast<const char *>(exe->data()->data()),
            exe->data()->size());
  return 0;
}

} // namespace

int runInspect(const InspectArgs &args) {
  // A LoRA adapter is told by its identifier (bytes 8..11, after the size
  // prefix and the root offset).
  {
    char head[12] = {};
    std::ifstream in(args.artifact, std::ios::binary);
    if (in.read(head, sizeof(head)) &&
        std::memcmp(head + 8, format::kAdapterFileIdentifier, 4) == 0)
      return runInspectAdapter(args);
  }
  ArtifactFile::Options opts;
  opts.checkWeightsDigest = args.verifyHash;
  auto keys = readTrustedKeys(args.trustedKeys);
  if (!keys)
    return fail("--trusted-key: " + llvm::toString(keys.takeError()));
  opts.trustedKeys = std::move(*keys);
  auto art = ArtifactFile::open(args.artifact, opts);
  if (!art)
    return fail(art.message());
  const ArtifactFile &a = **art;
  const fa::Artifact &root = a.root();
  if (!args.target.empty() && args.extractExecutable.empty())
    return fail("--target names the executable for --extract-executable");
  if (!args.extractExecutable.empty())
    if (int rc = extract(a, args))
      return rc;
  uint64_t kvPerToken = 0;
  for (const fa::KvCache *c : *root.caches())
    kvPerToken += 2ull * c->slots() * c->kv_heads() * c->head_dim() *
                  dtypeSize(c->dtype());

  if (args.json) {
    llvm::json::Object out;
    out["file"] = args.artifact;
    out["schema_version"] = (int64_t)root.schema_version();
    out["family"] = root.family()->str();
    out["model_name"] = root.model_name() ? root.model_name()->str() : "";
    llvm::json::Array targets;
    for (const std::string &t : a.targets())
      targets.push_back(t);
    out["targets"] = std::move(targets);
    out["vocab_size"] = (int64_t)root.vocab_size();
    out["hidden_size"] = (int64_t)root.hidden_size();
    out["num_layers"] = (int64_t)root.num_layers();
    out["parameters"] = (int64_t)root.parameters();
    out["artifact_bytes"] = (int64_t)a.fileSize();
    out["weight_bytes"] = (int64_t)a.dataSize();
    out["kv_bytes_per_token"] = (int64_t)kvPerToken;
    out["bits_per_weight"] = bitsPerWeight(root);
    out["ranks"] = (int64_t)root.ranks();
    out["num_tracks"] = (int64_t)root.num_tracks();
    out["num_track_blocks"] = (int64_t)root.num_track_blocks();
    out["collectives_per_token"] = (int64_t)collectivesPerToken(root);
    out["tensor_parallel_collectives_per_token"] = (int64_t)(2 * root.num_layers());
    out["program_digest"] = format::hex(a.programDigest());
    out["weights_digest"] = format::hex(a.weightsDigest());
    if (a.hasSourceDigest())
      out["source_digest"] = format::hex(a.sourceDigest());
    out["tokenizer"] = tokenizerJson(a);
    if (root.config_json()) {
      if (auto cfg = llvm::json::parse(root.config_json()->str()))
        out["config"] = std::move(*cfg);
      else
        llvm::consumeError(cfg.takeError());
    }
    llvm::json::Array weights;
    for (const fa::Weight *w : *root.weights()) {
      llvm::json::Array shape;
      for (int64_t d : *w->shape())
        shape.push_back(d);
      llvm::json::Object wj{{"name", w->name()->str()},
                            {"dtype", dtypeName(w->dtype())},
                            {"shape", std::move(shape)},
                            {"offset", (int64_t)w->offset()},
                            {"bytes", (int64_t)w->size()}};
      if (w->variants() && w->variants()->size()) {
        llvm::json::Array vs;
        for (const fa::WeightVariant *v : *w->variants())
          vs.push_back(llvm::json::Object{{"target", v->target()->str()},
                                          {"layout", v->layout()->str()},
                                          {"offset", (int64_t)v->offset()},
                                          {"bytes", (int64_t)v->size()}});
        wj["variants"] = std::move(vs);
      }
      weights.push_back(std::move(wj));
    }
    out["weights"] = std::move(weights);
    llvm::json::Array caches;
    for (const fa::KvCache *c : *root.caches())
      caches.push_back(llvm::json::Object{{"name", c->name()->str()},
                                          {"slots", (int64_t)c->slots()},
                                          {"kv_heads", (int64_t)c->kv_heads()},
                                          {"head_dim", (int64_t)c->head_dim()},
                                          {"capacity", (int64_t)c->capacity()},
                                          {"dtype", dtypeName(c->dtype())}});
    out["caches"] = std::move(caches);
    llvm::json::Object programs, commands;
    for (uint32_t pi = 0; pi < root.programs()->size(); ++pi) {
      const fa::Program *p = root.programs()->Get(pi);
      programs[p->phase()->str()] = llvm::json::Object{
          {"max_rows", (int64_t)p->max_rows()},
          {"arena_bytes", (int64_t)p->arena_bytes()},
          {"logits_last_row_only", p->logits_last_row_only()},
          {"commands", (int64_t)p->commands()->size()}};
      llvm::json::Array cmds;
      for (uint32_t ci = 0; ci < p->commands()->size(); ++ci)
        cmds.push_back(commandJson(*p->commands()->Get(ci), a.describe(pi, ci)));
      commands[p->phase()->str()] = std::move(cmds);
    }
    out["programs"] = std::move(programs);
    out["commands"] = std::move(commands);
    llvm::json::Array exes;
    for (const fa::Executable *e : *root.executables())
      exes.push_back(executableJson(*e));
    out["executables"] = std::move(exes);
    if (a.signedBy())
      out["signed_by"] = minisign::keyIdText(*a.signedBy());
    std::string ignored;
    llvm::raw_string_ostream sink(ignored);
    if (int rc = describeSignatures(a, args, sink))
      return rc;
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(out)))
                 << "\n";
    return 0;
  }

  auto &os = llvm::outs();
  os << llvm::formatv("{0}: fmc artifact v{1}, {2}\n", args.artifact,
                      root.schema_version(), human(a.fileSize()));
  os << llvm::formatv("  model         {0} '{1}', targets {2}\n",
                      root.family()->str(),
                      root.model_name() ? root.model_name()->str() : "",
                      targetList(a));
  os << llvm::formatv("  shape         vocab {0}, hidden {1}, {2} layers\n",
                      root.vocab_size(), root.hidden_size(), root.num_layers());
  // The per-target copies (WeightVariant) apart from the shared bytes.
  std::map<std::string, std::pair<unsigned, uint64_t>> variants;
  uint64_t variantBytes = 0;
  for (const fa::Weight *w : *root.weights())
    if (w->variants())
      for (const fa::WeightVariant *v : *w->variants()) {
        auto &[n, bytes] =
            variants[v->target()->str() + " " + v->layout()->str()];
        ++n;
        bytes += v->size();
        variantBytes += v->size();
      }
  os << llvm::formatv("  parameters    {0} in {1} tensors, {2} of weights\n",
                      root.parameters(), root.weights()->size(),
                      human(double(a.dataSize() - std::min(a.dataSize(), variantBytes))));
  for (const auto &[name, nb] : variants)
    os << llvm::formatv("  copies        {0}: {1} weights, {2}\n", name, nb.first,
                        human(double(nb.second)));
  os << llvm::formatv("  digests       program {0} (verified), weights {1}{2}, "
                      "source {3}\n",
                      format::hex(a.programDigest()).substr(0, 16),
                      format::hex(a.weightsDigest()).substr(0, 16),
                      args.verifyHash ? " (verified)" : "",
                      a.hasSourceDigest()
                          ? format::hex(a.sourceDigest()).substr(0, 16)
                          : std::string("none"));
  os << tokenizerText(a);
  if (int rc = describeSignatures(a, args, os))
    return rc;
  for (const fa::KvCache *c : *root.caches())
    os << llvm::formatv("  kv cache      @{0}: {1} slots x {2} heads x {3}, "
                        "capacity {4}, {5}\n",
                        c->name()->str(), c->slots(), c->kv_heads(),
                        c->head_dim(), c->capacity(), dtypeName(c->dtype()));
  os << llvm::formatv("  KV per token  {0}\n", human(kvPerToken));
  if (root.num_tracks())
    os << llvm::formatv("  tracks        {0} tracks x {1} blocks over {2} rank(s); "
                        "{3} collectives per token (tensor parallelism: 2L = {4})\n",
                        root.num_tracks(), root.num_track_blocks(), root.ranks(),
                        collectivesPerToken(root), 2 * root.num_layers());
  for (const fa::Executable *e : *root.executables())
    os << llvm::formatv("  executable    {0}: {1} {2}{3}, {4} functions, {5}\n",
                        e->target()->str(), e->format()->str(),
                        e->triple() ? e->triple()->str() : "",
                        e->cpu() && e->cpu()->size()
                            ? " (cpu " + e->cpu()->str() + ")"
                            : std::string(),
                        e->functions()->size(), human(e->data()->size()));
  for (uint32_t pi = 0; pi < root.programs()->size(); ++pi) {
    const fa::Program *p = root.programs()->Get(pi);
    const bool multi = p->max_rows() > 1;
    os << llvm::formatv("\n  program {0}: up to {1} rows per call, arena {2}, "
                        "logits of {3}, {4} commands\n",
                        p->phase()->str(), p->max_rows(),
                        human(double(p->arena_bytes())),
                        p->logits_last_row_only() || !multi ? "the last row"
                                                             : "every row",
                        p->commands()->size());
    for (uint32_t ci = 0; ci < p->commands()->size(); ++ci) {
      const fa::Command *c = p->commands()->Get(ci);
      const CommandText t = a.describe(pi, ci);
      os << llvm::formatv("    {0,4}  {1,-13} {2,-36} {3}\n", ci,
                          t.op + std::string(c->last_row_only() ? "*" : ""),
                          c->layer() ? c->layer()->str() : "", t.text);
    }
  }
  os << "\n  (* = runs on the last row only)\n";
  return 0;
}

} // namespace fm::cli
