// `fmc inspect`: prints a verified .fmb artifact readably, or as JSON.
#include "Commands.h"

#include "runtime/src/Artifact.h"

#include "llvm/Support/FormatVariadic.h"
#include <set>
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

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

std::string bufStr(const fa::BufferRef *b, bool oneRow) {
  return llvm::formatv("buf@{0}[{1}x{2}]", b->offset(), oneRow ? "1" : "rows",
                       b->width());
}

llvm::json::Object bufJson(const fa::BufferRef *b) {
  return llvm::json::Object{{"offset", (int64_t)b->offset()},
                            {"stride", (int64_t)b->stride()},
                            {"width", (int64_t)b->width()}};
}

const char *opName(fa::Op op) {
  switch (op) {
  case fa::Op::Embed:
    return "embed";
  case fa::Op::MatMul:
    return "matmul";
  case fa::Op::Attention:
    return "attention";
  case fa::Op::Dispatch:
    return "dispatch";
  case fa::Op::CopyLastRow:
    return "copy_last_row";
  case fa::Op::Moe:
    return "moe";
  case fa::Op::AllReduce:
    return "all_reduce";
  default:
    return "?";
  }
}

/// One command: a readable line and a JSON object.
void describe(const fa::Artifact &root, const fa::Command &c, bool oneRow,
              std::string &line, llvm::json::Object &obj) {
  auto wname = [&](uint32_t i) { return root.weights()->Get(i)->name()->str(); };
  obj["op"] = opName(c.op_type());
  obj["layer"] = c.layer() ? c.layer()->str() : "";
  obj["last_row_only"] = c.last_row_only();
  if (c.block() >= 0 || c.track() >= 0 || c.device() >= 0) {
    obj["block"] = (int64_t)c.block();
    obj["track"] = (int64_t)c.track();
    obj["device"] = (int64_t)c.device();
  }
  llvm::raw_string_ostream os(line);
  switch (c.op_type()) {
  case fa::Op::Embed: {
    auto *e = c.op_as_Embed();
    os << "table=" << wname(e->table_weight()) << " -> " << bufStr(e->out(), oneRow);
    obj["table"] = wname(e->table_weight());
    obj["out"] = bufJson(e->out());
    break;
  }
  case fa::Op::MatMul: {
    auto *m = c.op_as_MatMul();
    llvm::json::Array ws;
    os << bufStr(m->x(), oneRow) << " x [";
    for (unsigned i = 0; i < m->weights()->size(); ++i) {
      os << (i ? ", " : "") << wname(m->weights()->Get(i));
      ws.push_back(wname(m->weights()->Get(i)));
    }
    os << "]^T " << (m->accumulate() ? "+-> " : "-> ") << bufStr(m->y(), oneRow)
       << llvm::formatv("  (k={0}, n={1})", m->k(), m->n());
    obj["x"] = bufJson(m->x());
    obj["y"] = bufJson(m->y());
    obj["weights"] = std::move(ws);
    obj["k"] = (int64_t)m->k();
    obj["n"] = (int64_t)m->n();
    obj["accumulate"] = m->accumulate();
    break;
  }
  case fa::Op::Attention: {
    auto *a = c.op_as_Attention();
    std::string cache = root.caches()->Get(a->cache())->name()->str();
    os << bufStr(a->q(), oneRow) << " over @" << cache << "[" << a->slot()
       << "] -> " << bufStr(a->out(), oneRow)
       << llvm::formatv("  ({0}/{1} heads x {2}{3})", a->heads(), a->kv_heads(),
                        a->head_dim(),
                        a->window() ? llvm::formatv(", window {0}", a->window()).str()
                                    : std::string());
    obj["q"] = bufJson(a->q());
    obj["out"] = bufJson(a->out());
    obj["cache"] = cache;
    obj["slot"] = (int64_t)a->slot();
    obj["heads"] = (int64_t)a->heads();
    obj["kv_heads"] = (int64_t)a->kv_heads();
    obj["head_dim"] = (int64_t)a->head_dim();
    obj["scale"] = a->scale();
    obj["window"] = (int64_t)a->window();
    break;
  }
  case fa::Op::Dispatch: {
    auto *d = c.op_as_Dispatch();
    std::string fn = root.executable()->functions()->Get(d->function())->str();
    os << fn << "(";
    llvm::json::Array args;
    for (unsigned i = 0; i < d->args()->size(); ++i) {
      const fa::Arg *a = d->args()->Get(i);
      os << (i ? ", " : "");
      switch (a->kind()) {
      case fa::ArgKind::Buffer:
        os << bufStr(a->buffer(), oneRow);
        args.push_back(llvm::json::Object{{"buffer", bufJson(a->buffer())}});
        break;
      case fa::ArgKind::Weight:
        os << wname(a->index());
        args.push_back(llvm::json::Object{{"weight", wname(a->index())}});
        break;
      default: {
        std::string cache = root.caches()->Get(a->index())->name()->str();
        const char *part = a->kind() == fa::ArgKind::CacheK ? "k" : "v";
        os << "@" << cache << "[" << a->slot() << "]." << part;
        args.push_back(llvm::json::Object{{"cache", cache},
                                          {"slot", (int64_t)a->slot()},
                                          {"part", part}});
      }
      }
    }
    os << ")";
    obj["function"] = fn;
    obj["args"] = std::move(args);
    break;
  }
  case fa::Op::Moe: {
    auto *m = c.op_as_Moe();
    os << bufStr(m->x(), oneRow) << " router " << wname(m->router()) << ", "
       << m->gate()->size() << " experts top-" << m->top_k()
       << (m->norm_topk() ? " (renormalized)" : "")
       << (m->shared_gate() >= 0 ? " + shared expert" : "")
       << (m->accumulate() ? " +-> " : " -> ") << bufStr(m->y(), oneRow);
    obj["x"] = bufJson(m->x());
    obj["y"] = bufJson(m->y());
    obj["router"] = wname(m->router());
    obj["experts"] = (int64_t)m->gate()->size();
    obj["top_k"] = (int64_t)m->top_k();
    obj["norm_topk"] = m->norm_topk();
    obj["accumulate"] = m->accumulate();
    break;
  }
  case fa::Op::AllReduce: {
    auto *a = c.op_as_AllReduce();
    os << "sum over ranks of " << bufStr(a->buffer(), oneRow) << ", x "
       << a->scale();
    obj["buffer"] = bufJson(a->buffer());
    obj["scale"] = a->scale();
    break;
  }
  case fa::Op::CopyLastRow: {
    auto *c2 = c.op_as_CopyLastRow();
    os << bufStr(c2->src(), false) << " last row -> " << bufStr(c2->dst(), true);
    obj["src"] = bufJson(c2->src());
    obj["dst"] = bufJson(c2->dst());
    break;
  }
  default:
    break;
  }
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
    fa::DType d = w->dtype();
    if ((d != fa::DType::Q2 && d != fa::DType::Q4 && d != fa::DType::Q8) ||
        embeddings.count(i))
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

} // namespace

int runInspect(const InspectArgs &args) {
  rt::Artifact::Options opts;
  opts.verifyHash = args.verifyHash;
  auto art = rt::Artifact::open(args.artifact, opts);
  if (!art) {
    llvm::WithColor::error(llvm::errs(), "fmc") << art.message() << "\n";
    return 1;
  }
  const fa::Artifact &root = (*art)->root();
  if (!args.extractExecutable.empty()) {
    if (!root.executable()) {
      llvm::WithColor::error(llvm::errs(), "fmc")
          << args.artifact << " has no executable\n";
      return 1;
    }
    std::error_code ec;
    llvm::raw_fd_ostream out(args.extractExecutable, ec);
    if (ec) {
      llvm::WithColor::error(llvm::errs(), "fmc")
          << "cannot write " << args.extractExecutable << ": " << ec.message()
          << "\n";
      return 1;
    }
    const auto *img = root.executable()->image();
    out.write(reinterpret_cast<const char *>(img->data()), img->size());
  }
  uint64_t kvPerToken = 0;
  for (const fa::KvCache *c : *root.caches())
    kvPerToken += 2ull * c->slots() * c->kv_heads() * c->head_dim() *
                  rt::dtypeSize(c->dtype());

  if (args.json) {
    llvm::json::Object out;
    out["file"] = args.artifact;
    out["schema_version"] = (int64_t)root.schema_version();
    out["family"] = root.family()->str();
    out["model_name"] = root.model_name() ? root.model_name()->str() : "";
    out["target"] = root.target()->str();
    out["vocab_size"] = (int64_t)root.vocab_size();
    out["hidden_size"] = (int64_t)root.hidden_size();
    out["num_layers"] = (int64_t)root.num_layers();
    out["parameters"] = (int64_t)root.parameters();
    out["artifact_bytes"] = (int64_t)(*art)->fileSize();
    out["weight_bytes"] = (int64_t)(*art)->dataSize();
    out["kv_bytes_per_token"] = (int64_t)kvPerToken;
    out["bits_per_weight"] = bitsPerWeight(root);
    out["devices"] = (int64_t)root.devices();
    out["num_tracks"] = (int64_t)root.num_tracks();
    out["num_track_blocks"] = (int64_t)root.num_track_blocks();
    out["collectives_per_token"] = (int64_t)collectivesPerToken(root);
    out["tensor_parallel_collectives_per_token"] = (int64_t)(2 * root.num_layers());
    out["content_hash"] = llvm::formatv("{0:x16}", root.content_hash()).str();
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
      weights.push_back(llvm::json::Object{{"name", w->name()->str()},
                                           {"dtype", rt::dtypeName(w->dtype())},
                                           {"shape", std::move(shape)},
                                           {"offset", (int64_t)w->offset()},
                                           {"bytes", (int64_t)w->size()}});
    }
    out["weights"] = std::move(weights);
    llvm::json::Array caches;
    for (const fa::KvCache *c : *root.caches())
      caches.push_back(llvm::json::Object{{"name", c->name()->str()},
                                          {"slots", (int64_t)c->slots()},
                                          {"kv_heads", (int64_t)c->kv_heads()},
                                          {"head_dim", (int64_t)c->head_dim()},
                                          {"capacity", (int64_t)c->capacity()},
                                          {"dtype", rt::dtypeName(c->dtype())}});
    out["caches"] = std::move(caches);
    llvm::json::Object programs, commands;
    for (const fa::Program *p : *root.programs()) {
      bool multi = p->max_rows() > 1;
      programs[p->phase()->str()] = llvm::json::Object{
          {"max_rows", (int64_t)p->max_rows()},
          {"arena_bytes", (int64_t)(4 * p->arena_floats())},
          {"logits_last_row_only", p->logits_last_row_only()},
          {"commands", (int64_t)p->commands()->size()}};
      llvm::json::Array cmds;
      for (const fa::Command *c : *p->commands()) {
        std::string line;
        llvm::json::Object obj;
        describe(root, *c, !multi || c->last_row_only(), line, obj);
        cmds.push_back(std::move(obj));
      }
      commands[p->phase()->str()] = std::move(cmds);
    }
    out["programs"] = std::move(programs);
    out["commands"] = std::move(commands);
    if (const fa::Executable *e = root.executable()) {
      llvm::json::Array fns;
      for (const auto *f : *e->functions())
        fns.push_back(f->str());
      out["executable"] = llvm::json::Object{
          {"format", e->format()->str()}, {"triple", e->triple()->str()},
          {"cpu", e->cpu() ? e->cpu()->str() : ""},
          {"bytes", (int64_t)e->image()->size()}, {"functions", std::move(fns)}};
    }
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(out)))
                 << "\n";
    return 0;
  }

  auto &os = llvm::outs();
  os << llvm::formatv("{0}: fmc artifact v{1}, {2}\n", args.artifact,
                      root.schema_version(), human((*art)->fileSize()));
  os << llvm::formatv("  model         {0} '{1}', target {2}\n", root.family()->str(),
                      root.model_name() ? root.model_name()->str() : "",
                      root.target()->str());
  os << llvm::formatv("  shape         vocab {0}, hidden {1}, {2} layers\n",
                      root.vocab_size(), root.hidden_size(), root.num_layers());
  os << llvm::formatv("  parameters    {0} in {1} tensors, {2} of weights, "
                      "content hash {3:x16}{4}\n",
                      root.parameters(), root.weights()->size(),
                      human((*art)->dataSize()), root.content_hash(),
                      args.verifyHash ? " (verified)" : "");
  for (const fa::KvCache *c : *root.caches())
    os << llvm::formatv("  kv cache      @{0}: {1} slots x {2} heads x {3}, "
                        "capacity {4}, {5}\n",
                        c->name()->str(), c->slots(), c->kv_heads(),
                        c->head_dim(), c->capacity(), rt::dtypeName(c->dtype()));
  os << llvm::formatv("  KV per token  {0}\n", human(kvPerToken));
  if (root.num_tracks())
    os << llvm::formatv("  tracks        {0} tracks x {1} blocks over {2} device(s); "
                        "{3} collectives per token (tensor parallelism: 2L = {4})\n",
                        root.num_tracks(), root.num_track_blocks(), root.devices(),
                        collectivesPerToken(root), 2 * root.num_layers());
  if (const fa::Executable *e = root.executable())
    os << llvm::formatv("  executable    {0} {1} (cpu {2}), {3} functions, {4}\n",
                        e->format()->str(), e->triple()->str(),
                        e->cpu() ? e->cpu()->str() : "", e->functions()->size(),
                        human(e->image()->size()));
  for (const fa::Program *p : *root.programs()) {
    bool multi = p->max_rows() > 1;
    os << llvm::formatv("\n  program {0}: up to {1} rows per call, arena {2}, "
                        "logits of {3}, {4} commands\n",
                        p->phase()->str(), p->max_rows(),
                        human(4.0 * p->arena_floats()),
                        p->logits_last_row_only() || !multi ? "the last row"
                                                             : "every row",
                        p->commands()->size());
    unsigned i = 0;
    for (const fa::Command *c : *p->commands()) {
      std::string line;
      llvm::json::Object obj;
      describe(root, *c, !multi || c->last_row_only(), line, obj);
      os << llvm::formatv("    {0,4}  {1,-13} {2,-36} {3}\n", i++,
                          opName(c->op_type()) +
                              std::string(c->last_row_only() ? "*" : ""),
                          c->layer() ? c->layer()->str() : "", line);
    }
  }
  os << "\n  (* = runs on the last row only)\n";
  return 0;
}

} // namespace fm::cli
