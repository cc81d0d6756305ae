// The Dispatch command: a call of a generated function of the device's
// executable (every executable exports the same ordered function list).
#include "commands/Command.h"

namespace fm::rt {
namespace {

Status verify(const VerifyContext &c, const fa::Command &command) {
  const fa::Dispatch &op = *command.op_as_Dispatch();
  if (c.numFunctions() == 0)
    return c.fail("dispatch needs an executable but the artifact has none");
  if (op.function() >= c.numFunctions())
    return c.fail("function index " + std::to_string(op.function()) +
                  " out of range (" + std::to_string(c.numFunctions()) +
                  " functions)");
  // A GPU function's launch metadata binds the arguments in order.
  for (const fa::Executable *exe : *c.root().executables()) {
    const fa::Function *fn = exe->functions()->Get(op.function());
    if (fn->bindings() && fn->bindings()->size() > 0 &&
        fn->bindings()->size() != op.args()->size())
      return c.fail("dispatch of '" + fn->name()->str() + "' has " +
                    std::to_string(op.args()->size()) +
                    " arguments but its " + exe->target()->str() +
                    " function binds " +
                    std::to_string(fn->bindings()->size()));
  }
  for (flatbuffers::uoffset_t j = 0; j < op.args()->size(); ++j) {
    const fa::Arg *arg = op.args()->Get(j);
    const std::string what = "arg " + std::to_string(j);
    switch (arg->kind()) {
    case fa::ArgKind::Buffer:
      if (!arg->buffer())
        return c.fail(what + " is a buffer without a buffer ref");
      FM_RETURN_IF_ERROR(c.buffer(what.c_str(), *arg->buffer(), c.rows()));
      break;
    case fa::ArgKind::Weight:
      if (std::string p = c.weightIndexProblem(arg->index()); !p.empty())
        return c.fail(what + ": " + p);
      break;
    case fa::ArgKind::CacheK:
    case fa::ArgKind::CacheV:
      if (std::string p = c.cacheSlotProblem(arg->index(), arg->slot());
          !p.empty())
        return c.fail(what + ": " + p);
      break;
    default:
      return c.fail(what + " has unknown kind " +
                    std::to_string(static_cast<unsigned>(arg->kind())));
    }
  }
  return Status::ok();
}

// The schema does not say which arguments generated code writes: buffers
// count as reads here, and the compiler's guarantee covers them.
void uses(const fa::Command &command, u64 rows, std::vector<Use> &out) {
  for (const fa::Arg *arg : *command.op_as_Dispatch()->args()) {
    if (arg->kind() == fa::ArgKind::Buffer)
      out.push_back({arg->buffer(), false, rows, 0, 0, "argument"});
    else if (arg->kind() != fa::ArgKind::Weight)
      out.push_back({nullptr, false, 0, arg->index(), arg->slot(), "cache"});
  }
}

// Without the generated code (LoadOptions::loadExecutable off, for
// inspection) a dispatch fails when run, not when the session is built, so
// that the programs that dispatch nothing still run.
class NotLoaded final : public hal::Kernel {
public:
  explicit NotLoaded(std::string message) : message_(std::move(message)) {}
  Status run(hal::Queue &, const hal::Launch &) const override {
    return Status::error(message_);
  }

private:
  std::string message_;
};

Expected<std::unique_ptr<hal::Kernel>> build(BuildContext &c,
                                             const fa::Command &command) {
  const fa::Dispatch &op = *command.op_as_Dispatch();
  hal::DispatchDesc d;
  d.executable = c.executable();
  if (!d.executable)
    return std::unique_ptr<hal::Kernel>(new NotLoaded(
        c.where() + " calls generated code, which was not loaded "
                    "(LoadOptions::loadExecutable)"));
  d.function = op.function();
  d.maxRows = c.maxRows();
  for (const fa::Arg *arg : *op.args()) {
    hal::DispatchArg a;
    switch (arg->kind()) {
    case fa::ArgKind::Buffer:
      a.kind = hal::DispatchArg::Kind::Buffer;
      a.rows = c.rows(*arg->buffer());
      break;
    case fa::ArgKind::Weight:
      a.kind = hal::DispatchArg::Kind::Weight;
      a.weight = c.weight(arg->index());
      break;
    case fa::ArgKind::CacheK:
    case fa::ArgKind::CacheV:
      a.kind = hal::DispatchArg::Kind::Cache;
      a.cache = c.cache(arg->index(), arg->slot(),
                        arg->kind() == fa::ArgKind::CacheV);
      break;
    }
    d.args.push_back(std::move(a));
  }
  return c.device().prepareDispatch(d);
}

void describe(const DescribeContext &c, const fa::Command &command,
              CommandText &out) {
  const fa::Dispatch &op = *command.op_as_Dispatch();
  const std::string fn = c.functionName(op.function());
  std::string text = fn + "(", args;
  for (flatbuffers::uoffset_t i = 0; i < op.args()->size(); ++i) {
    const fa::Arg *a = op.args()->Get(i);
    text += i ? ", " : "";
    args += i ? ", " : "";
    switch (a->kind()) {
    case fa::ArgKind::Buffer:
      text += bufferText(*a->buffer(), c.oneRow());
      args += "{\"buffer\": " + JsonMembers::buffer(*a->buffer()) + "}";
      break;
    case fa::ArgKind::Weight:
      text += c.weightName(a->index());
      args += "{\"weight\": " + JsonMembers::quote(c.weightName(a->index())) + "}";
      break;
    default: {
      const std::string cache = c.cacheName(a->index());
      const char *part = a->kind() == fa::ArgKind::CacheK ? "k" : "v";
      text += "@" + cache + "[" + std::to_string(a->slot()) + "]." + part;
      args += "{" + JsonMembers()
                        .add("cache", cache)
                        .add("slot", a->slot())
                        .add("part", part)
                        .str() +
              "}";
    }
    }
  }
  out.text = text + ")";
  out.json = JsonMembers().add("function", fn).addRaw("args", "[" + args + "]").str();
}

} // namespace

extern const CommandKind kDispatchCommand = {fa::Op::Dispatch, "dispatch",
                                             verify, uses, build, describe};

} // namespace fm::rt
