// Lowers the group kernels of GroupKernels.cpp to native code: MLIR → LLVM
// dialect → LLVM IR (+ void** entry wrappers) → LLVM O3 → object → ld.lld.
//
// Math: exp (silu) is expanded by MLIR's f32 polynomial approximation, so it
// vectorizes and needs no libm; RoPE's f64 cos/sin stay libm calls (once per
// row and pair), bound by the runtime's loader to its own (ElfLoader.h).
// sqrt and roundeven become instructions on x86-64-v3+ and AArch64.
#include "targets/cpu/GroupCodegen.h"
#include "targets/LoweringDiagnostics.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <array>
#include <chrono>
#include <mutex>

using namespace mlir;

namespace fm::cpu {
namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// What the TargetMachine is built from: `codegenTriple` (the triple
/// recorded in the artifact, `triple`, says what the code is for).
struct ResolvedTarget {
  std::string triple, codegenTriple, cpu, features, format;
  bool framePointers = false;
};

llvm::Expected<ResolvedTarget> resolve(const CpuOptions &target) {
  ResolvedTarget r;
  if (target.cpu == "native") {
    r.triple = llvm::sys::getProcessTriple();
    r.cpu = llvm::sys::getHostCPUName().str();
    std::vector<std::string> features;
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features.push_back((feature.getValue() ? "+" : "-") + feature.getKey().str());
    llvm::sort(features); // deterministic output
    r.features = llvm::join(features, ",");
    // An Apple host: ELF code for fmc's loader all the same, with Apple's
    // platform register left alone on arm64 (as --cpu aarch64-apple).
    llvm::Triple host(r.triple);
    if (host.isOSDarwin()) {
      r.codegenTriple = host.getArchName().str() == "arm64"
                            ? "aarch64-unknown-none-elf"
                            : host.getArchName().str() + "-unknown-none-elf";
      if (host.isAArch64()) {
        r.features += std::string(r.features.empty() ? "" : ",") + "+reserve-x18";
        r.framePointers = true;
      }
    }
  } else if (target.cpu == "x86-64-v3") {
    r.triple = "x86_64-unknown-linux-gnu";
    r.cpu = "x86-64-v3";
  } else if (target.cpu == "aarch64") {
    // ARMv8-A with NEON: every AArch64 Linux and Android device.
    r.triple = "aarch64-unknown-linux-gnu";
    r.cpu = "generic";
    r.features = "+neon";
  } else if (target.cpu == "aarch64-apple") {
    // Apple's arm64 ABI in an ELF image for fmc's own loader (the runtime
    // maps it on macOS as on Linux): x18 is the platform's register there,
    // so the code never touches it, and frames keep their frame pointers.
    // The functions take pointers and integers only, where Apple's and the
    // AAPCS64 calling conventions agree.
    r.triple = "arm64-apple-macosx13.0";
    r.codegenTriple = "aarch64-unknown-none-elf";
    r.cpu = "apple-m1";
    r.features = "+reserve-x18";
    r.framePointers = true;
  } else if (target.cpu == "aarch64-ios") {
    // iOS maps no code at run time: statically linked kernels only.
    r.triple = "arm64-apple-ios14.0";
    r.cpu = "apple-a14";
    r.framePointers = true;
    if (target.code != "static")
      return error("--cpu aarch64-ios: iOS forbids loading code at run time; compile "
                   "with --cpu-code static and link the kernels into the app");
  } else {
    return error("unknown CPU target '" + target.cpu +
                 "' (expected native, x86-64-v3, aarch64, aarch64-apple or aarch64-ios)");
  }
  if (target.code == "static") {
    // An object for the application's own linker: Mach-O for Apple's.
    if (llvm::Triple(r.triple).isOSDarwin())
      r.codegenTriple = r.triple;
    else if (r.codegenTriple.empty())
      r.codegenTriple = r.triple;
    r.format = "static";
    return r;
  }
  if (target.code != "image")
    return error("unknown --cpu-code '" + target.code + "' (expected image or static)");
  if (r.codegenTriple.empty())
    r.codegenTriple = r.triple;
  if (!llvm::Triple(r.codegenTriple).isOSBinFormatELF())
    return error("target triple " + r.codegenTriple +
                 " is not ELF (fmc's loader maps ELF shared objects)");
  r.format = "elf-so";
  return r;
}

/// The C source an application compiles beside the kernels' object: it
/// declares each function and registers them with the runtime under the
/// key when the program starts (and as fm_register_kernels_KEY(), for
/// programs that prefer to call it).
std::string registrationSource(const std::string &key,
                               const std::vector<std::string> &functions,
                               const std::string &triple) {
  std::string s;
  s += "/* Generated by fmc compile --cpu-code static (" + triple + "): link it with the\n"
       " * kernels' object into the application. It registers the artifact's CPU\n"
       " * kernels (key " + key + ") with the runtime at startup; fm/fm.h. */\n";
  s += "#include <stddef.h>\n#include <stdint.h>\n\n";
  s += "typedef void (*fm_kernel_function)(void **args, int64_t rows, int64_t pos);\n";
  s += "int fm_static_kernels_register(const char *key, const char *const *names,\n"
       "                               const fm_kernel_function *functions, size_t n);\n\n";
  for (const std::string &f : functions)
    s += "void " + f + "(void **args, int64_t rows, int64_t pos);\n";
  s += "\nstatic const char *const kNames[] = {\n";
  for (const std::string &f : functions)
    s += "    \"" + f + "\",\n";
  s += "};\nstatic const fm_kernel_function kFunctions[] = {\n";
  for (const std::string &f : functions)
    s += "    " + f + ",\n";
  s += "};\n\n";
  s += "int fm_register_kernels_" + key + "(void) {\n"
       "  return fm_static_kernels_register(\"" + key + "\", kNames, kFunctions,\n"
       "                                    sizeof(kNames) / sizeof(kNames[0]));\n}\n\n";
  s += "__attribute__((constructor)) static void fm_register_at_startup(void) {\n"
       "  (void)fm_register_kernels_" + key + "();\n}\n";
  return s;
}

void initializeTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
}

constexpr llvm::StringLiteral kLoopAnnotation = "llvm.loop_annotation";

/// exp → f32 polynomial, then the CODEGEN.md §1 conversion passes.
LogicalResult lowerToLLVMDialect(ModuleOp kernels) {
  RewritePatternSet patterns(kernels.getContext());
  populateMathPolynomialApproximationPatterns(
      patterns, [](StringRef op) { return op == math::ExpOp::getOperationName(); });
  if (failed(applyPatternsGreedily(kernels, std::move(patterns))))
    return kernels.emitError("polynomial approximation of exp did not converge");

  // Column loops keep their loop form until the vectorizer has seen them:
  // LLVM otherwise fully unrolls short ones (a RoPE head's 16 pairs) early
  // and then vectorizes the loop around them with gathers and scatters. The
  // annotation rides SCF→CF on the latch branch (moved to its property below).
  MLIRContext *ctx = kernels.getContext();
  ctx->loadDialect<LLVM::LLVMDialect>();
  Attribute noUnroll = parseAttribute("#llvm.loop_annotation<unroll = <disable = true>>", ctx);
  kernels.walk([&](scf::ForOp loop) {
    if (!isa<func::FuncOp>(loop->getParentOp())) // not the row loop
      loop->setAttr(kLoopAnnotation, noUnroll);
  });

  PassManager pm(ctx);
  addLlvmLoweringPasses(pm);
  if (failed(pm.run(kernels)))
    return failure();
  kernels.walk([](LLVM::BrOp br) {
    if (auto annotation = br->getAttrOfType<LLVM::LoopAnnotationAttr>(kLoopAnnotation)) {
      br.setLoopAnnotationAttr(annotation);
      br->removeAttr(kLoopAnnotation);
    }
  });
  return success();
}

} // namespace

void addLlvmLoweringPasses(OpPassManager &pm) {
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  ConvertFuncToLLVMPassOptions funcOptions;
  funcOptions.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcOptions));
  pm.addPass(createReconcileUnrealizedCastsPass());
}

namespace {

/// `void <entry>(void **args, int64_t rows, int64_t pos)` calling `kernel`
/// with args[0..n), rows, pos; the kernel becomes internal (and is inlined).
void addEntryWrapper(llvm::Module &m, llvm::Function *kernel, llvm::StringRef entry,
                     unsigned numPointers) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, i64, i64}, false);
  auto *fn = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, entry, m);
  fn->getArg(0)->setName("args");
  fn->getArg(1)->setName("rows");
  fn->getArg(2)->setName("pos");
  fn->addParamAttr(0, llvm::Attribute::ReadOnly);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  llvm::SmallVector<llvm::Value *> callArgs;
  for (unsigned i = 0; i < numPointers; ++i) {
    llvm::Value *slot = b.CreateConstInBoundsGEP1_64(ptr, fn->getArg(0), i);
    callArgs.push_back(b.CreateAlignedLoad(ptr, slot, llvm::Align(8)));
  }
  callArgs.push_back(fn->getArg(1));
  callArgs.push_back(fn->getArg(2));
  b.CreateCall(kernel, callArgs);
  b.CreateRetVoid();
  kernel->setLinkage(llvm::GlobalValue::InternalLinkage);
}

llvm::Error optimize(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopUnrolling = true;
  llvm::PassBuilder pb(&tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
  if (llvm::verifyModule(m, &llvm::errs()))
    return error("LLVM IR of the group kernels is invalid after optimization");
  return llvm::Error::success();
}

llvm::Expected<std::vector<uint8_t>> emitObject(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return error("the " + tm.getTargetTriple().str() + " target cannot emit object files");
  pm.run(m);
  return std::vector<uint8_t>(buffer.begin(), buffer.end());
}

llvm::Expected<std::string> findLinker() {
  for (const char *name : {"ld.lld-22", "ld.lld"})
    if (auto path = llvm::sys::findProgramByName(name))
      return *path;
  const char *fallback = "/usr/lib/llvm-22/bin/ld.lld";
  if (llvm::sys::fs::can_execute(fallback))
    return std::string(fallback);
  return error("ld.lld not found (looked for ld.lld-22 and ld.lld on PATH and " +
               llvm::Twine(fallback) + ")");
}

/// ld.lld -shared on temporary files; returns the shared object's bytes.
llvm::Expected<std::vector<uint8_t>> linkSharedObject(llvm::ArrayRef<uint8_t> object) {
  auto linker = findLinker();
  if (!linker)
    return linker.takeError();
  llvm::SmallString<128> objPath, soPath, logPath;
  int fd;
  if (auto ec = llvm::sys::fs::createTemporaryFile("fmk-groups", "o", fd, objPath))
    return error("cannot create a temporary object file: " + ec.message());
  llvm::FileRemover removeObj(objPath);
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(reinterpret_cast<const char *>(object.data()), object.size());
    if (os.has_error())
      return error("cannot write " + objPath);
  }
  if (auto ec = llvm::sys::fs::createTemporaryFile("fmk-groups", "so", soPath))
    return error("cannot create a temporary file: " + ec.message());
  llvm::FileRemover removeSo(soPath);
  if (auto ec = llvm::sys::fs::createTemporaryFile("fmk-groups", "log", logPath))
    return error("cannot create a temporary file: " + ec.message());
  llvm::FileRemover removeLog(logPath);

  llvm::SmallVector<llvm::StringRef> args = {*linker, "-shared", "--hash-style=gnu",
                                             "-z", "noexecstack", "-o", soPath, objPath};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(logPath),
                                                llvm::StringRef(logPath)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*linker, args, std::nullopt, redirects, 0, 0, &message);
  if (rc != 0) {
    std::string log;
    if (auto text = llvm::MemoryBuffer::getFile(logPath))
      log = (*text)->getBuffer().trim().str();
    return error(*linker + " failed" + (message.empty() ? "" : ": " + message) +
                 (log.empty() ? "" : "\n" + log));
  }
  auto so = llvm::MemoryBuffer::getFile(soPath, /*IsText=*/false,
                                        /*RequiresNullTerminator=*/false);
  if (!so)
    return error("cannot read the linked shared object: " + so.getError().message());
  llvm::StringRef bytes = (*so)->getBuffer();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

} // namespace

llvm::Expected<CompiledExecutable>
compileGroups(ModuleOp module, const CpuOptions &target,
              const std::function<void(llvm::StringRef)> &progress) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now(), last = start;
  auto report = [&](const llvm::Twine &what) {
    if (!progress)
      return;
    auto now = Clock::now();
    auto ms = [](Clock::duration d) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    };
    progress(("cpu: " + what + " (" + llvm::Twine(ms(now - last)) + " ms)").str());
    last = now;
  };

  auto resolved = resolve(target);
  if (!resolved)
    return resolved.takeError();

  // MLIR diagnostics become the error message.
  MLIRContext *ctx = module.getContext();
  fm::target::LoweringDiagnostics diagnostics(ctx);
  auto fail = [&](llvm::StringRef stage) { return diagnostics.fail(target.cpu, stage); };

  CompiledExecutable exe;
  exe.format = resolved->format;
  exe.triple = resolved->triple;
  exe.cpu = resolved->cpu;
  llvm::StringSet<> seen;
  unsigned numGroups = 0;
  module.walk([&](fmk::GroupOp group) {
    ++numGroups;
    std::string entry = entrySymbol(group);
    if (seen.insert(entry).second)
      exe.functions.push_back(entry);
  });

  OwningOpRef<ModuleOp> kernels = buildGroupKernels(module);
  if (!kernels)
    return fail("building the kernels");
  // The entry of each kernel, read before the func ops are converted.
  struct Entry {
    std::string kernel, entry;
    unsigned numPointers;
  };
  std::vector<Entry> entries;
  for (auto fn : kernels->getOps<func::FuncOp>())
    entries.push_back({fn.getSymName().str(),
                       fn->getAttrOfType<StringAttr>(kKernelEntryAttr).str(),
                       unsigned(fn->getAttrOfType<IntegerAttr>(kKernelPointersAttr).getInt())});
  report("built " + llvm::Twine(entries.size()) + " kernels for " + llvm::Twine(numGroups) +
         " groups");

  if (failed(lowerToLLVMDialect(*kernels)))
    return fail("lowering to the LLVM dialect");
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*kernels, llvmContext, "fmk_groups");
  if (!llvmModule)
    return fail("translating to LLVM IR");
  report("lowered to LLVM IR");

  initializeTargets();
  std::string lookupError;
  llvm::Triple triple(resolved->codegenTriple);
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!llvmTarget)
    return error("no LLVM target for " + resolved->codegenTriple + ": " + lookupError);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(llvmTarget->createTargetMachine(
      triple, resolved->cpu, resolved->features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!tm)
    return error("cannot create a target machine for " + resolved->codegenTriple + " / " +
                 resolved->cpu);
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(tm->createDataLayout());

  for (const Entry &e : entries) {
    llvm::Function *kernel = llvmModule->getFunction(e.kernel);
    if (!kernel)
      return error("kernel " + e.kernel + " is missing from the LLVM module");
    addEntryWrapper(*llvmModule, kernel, e.entry, e.numPointers);
  }
  for (llvm::Function &fn : *llvmModule) {
    if (fn.isDeclaration())
      continue;
    fn.addFnAttr("target-cpu", resolved->cpu);
    if (!resolved->features.empty())
      fn.addFnAttr("target-features", resolved->features);
    if (resolved->framePointers)
      fn.addFnAttr("frame-pointer", "non-leaf");
    fn.addFnAttr(llvm::Attribute::NoUnwind);
  }
  if (auto err = optimize(*llvmModule, *tm))
    return std::move(err);
  report("optimized (O3) for " + resolved->triple + " " + resolved->cpu);

  if (exe.format == "static") {
    // The key: the optimized code itself, so that kernels linked into an
    // application are found only by the artifact they were compiled with.
    std::string text;
    llvm::raw_string_ostream os(text);
    llvmModule->print(os, nullptr);
    os.flush();
    llvm::SHA256 sha;
    sha.update(text);
    sha.update(resolved->triple + "/" + resolved->cpu + "/" + resolved->features);
    std::array<uint8_t, 32> digest = sha.final();
    exe.staticKey = llvm::toHex(llvm::ArrayRef<uint8_t>(digest.data(), 8), /*LowerCase=*/true);
    std::vector<std::string> renamed;
    for (const std::string &name : exe.functions) {
      llvm::Function *fn = llvmModule->getFunction(name);
      if (!fn)
        return error("entry " + name + " is missing from the LLVM module");
      const std::string symbol = "fmk_" + exe.staticKey + "_" +
                                 (llvm::StringRef(name).starts_with("fmk_") ? name.substr(4) : name);
      fn->setName(symbol);
      renamed.push_back(symbol);
    }
    exe.functions = std::move(renamed);
  }

  auto object = emitObject(*llvmModule, *tm);
  if (!object)
    return object.takeError();
  report("emitted a " + llvm::Twine(object->size()) + "-byte object");

  if (exe.format == "static") {
    exe.staticObject = std::move(*object);
    exe.staticRegistration = registrationSource(exe.staticKey, exe.functions, exe.triple);
    exe.image.assign(exe.staticKey.begin(), exe.staticKey.end());
    last = start;
    report("compiled " + llvm::Twine(exe.functions.size()) + " kernels for " + exe.triple +
           " to link statically (key " + exe.staticKey + ")");
    return exe;
  }

  auto so = linkSharedObject(*object);
  if (!so)
    return so.takeError();
  exe.image = std::move(*so);
  report("linked a " + llvm::Twine(exe.image.size()) + "-byte shared object");
  last = start;
  report("compiled " + llvm::Twine(exe.functions.size()) + " kernels for " + exe.triple);
  return exe;
}

} // namespace fm::cpu
