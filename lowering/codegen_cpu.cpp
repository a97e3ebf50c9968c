// LLVM IR -> object code -> a kernel linked into the process (ORC's LLJIT, RuntimeDyld).
//
// Not MLIR's ExecutionEngine: it compiles and links in one step, so nothing can look at the object
// code between the two -- and both the undefined-symbol check and the disk cache of object code
// need exactly that. Every kernel gets a JITDylib of its own (they all define `kernel`), whose
// link order ends in one process-wide dylib holding the runtime's kernel symbols and a search of
// the process's libraries.
#include "lowering/codegen_cpu.h"

#include <llvm/ExecutionEngine/JITEventListener.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/SectionMemoryManager.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/TargetParser/Host.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/Target/LLVMIR/Export.h>

#include <dlfcn.h>

#include <cstdlib>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>

#include "ir/error.h"
#include "ir/settings.h"
#include "lowering/passes.h"
#include "lowering/target.h"
#include "lowering/tiling.h"
#include "kernels/kernel_symbols.h"

namespace fluxion::lowering {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

[[noreturn]] void fail(const std::string& what, const std::string& detail) {
  throw CompileError("CompileError: jit: " + what + ": " + detail);
}

std::string message(llvm::Error e) { return llvm::toString(std::move(e)); }

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

llvm::CodeGenOptLevel codegen_level(int opt) {
  switch (opt) {
    case 0: return llvm::CodeGenOptLevel::None;
    case 1: return llvm::CodeGenOptLevel::Less;
    case 2: return llvm::CodeGenOptLevel::Default;
    default: return llvm::CodeGenOptLevel::Aggressive;
  }
}

// The target machine for cpu_target(). Position-independent code: RuntimeDyld builds GOT entries
// and stubs for libraries mapped anywhere, and the same object could go into a shared library.
std::unique_ptr<llvm::TargetMachine> target_machine(int opt) {
  const CpuTarget& t = cpu_target();
  llvm::orc::JITTargetMachineBuilder b{llvm::Triple(llvm::sys::getProcessTriple())};
  b.setCPU(t.cpu);
  std::vector<std::string> features;
  if (!t.features.empty())
    for (llvm::StringRef f : llvm::split(t.features, ',')) features.push_back(f.str());
  // LLVM 19's X86 backend aborts the process ("Do not know how to soft promote this operator's
  // operand!") legalizing a bfloat16 vector of 9, 17, 25, ... elements that lives across blocks
  // when AVX512-BF16 or AVX-NE-CONVERT is on (tests/test_jit_target.cpp). Nothing compiled here
  // uses them: bfloat16 conversions are integer code (arith-expand{include-bf16}) and bfloat16
  // products call the library's AVX512-BF16 kernel (kernels/gemm_tiles.cpp), built apart.
  features.push_back("-avx512bf16");
  features.push_back("-avxneconvert");
  b.addFeatures(features);
  b.setRelocationModel(llvm::Reloc::PIC_);
  b.setCodeGenOptLevel(codegen_level(opt));
  auto tm = b.createTargetMachine();
  if (!tm) fail("creating the target machine for " + t.cpu, message(tm.takeError()));
  return std::move(*tm);
}

// `_mlir_kernel(void** args)`: loads the i-th argument from args[i] and calls `kernel`, so that
// one C signature calls kernels of any arity (compile.h's packed ABI).
void add_packed_entry(llvm::Module& m) {
  llvm::Function* kernel = m.getFunction("kernel");
  if (!kernel) fail("code generation", "the module has no function `kernel`");
  if (!kernel->getReturnType()->isVoidTy()) fail("code generation", "`kernel` returns a value; outputs are arguments");
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Type* ptr = b.getPtrTy();
  auto* entry = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr}, false),
                                       llvm::GlobalValue::ExternalLinkage, "_mlir_kernel", m);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", entry));
  std::vector<llvm::Value*> args;
  for (llvm::Argument& a : kernel->args()) {
    llvm::Value* slot = b.CreateConstGEP1_64(ptr, entry->getArg(0), a.getArgNo());
    args.push_back(b.CreateLoad(a.getType(), b.CreateLoad(ptr, slot)));
  }
  b.CreateCall(kernel, args);
  b.CreateRetVoid();
}

// ---- libraries kernels call --------------------------------------------------------------------------
// libomp for LLVM 19 is not packaged; LLVM 14's runs the code MLIR 19 emits. Loaded globally on
// first need, so that the process search below finds __kmpc_*.
const char* kLibOmp = "/usr/lib/llvm-14/lib/libomp.so";

bool load_libomp() {
  static const bool loaded = dlopen(kLibOmp, RTLD_NOW | RTLD_GLOBAL) != nullptr;
  return loaded;
}

const runtime::KernelSymbol* runtime_symbol(llvm::StringRef name) {
  for (const runtime::KernelSymbol& s : runtime::kernel_symbols())
    if (name == s.name) return &s;
  return nullptr;
}

// ---- the linker ---------------------------------------------------------------------------------------
struct Linker {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  llvm::orc::JITDylib* shared = nullptr;  // runtime symbols, then the process's libraries
  std::atomic<uint64_t> next{0};
};

Linker& linker() {
  static Linker* l = [] {  // never destroyed: kernels may run during static destruction
    // A process whose first kernel comes from the disk cache has not met MLIR (which would have
    // initialized the target) before it links.
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto* lk = new Linker;
    auto jit = llvm::orc::LLJITBuilder()
                   .setObjectLinkingLayerCreator([](llvm::orc::ExecutionSession& es, const llvm::Triple&) {
                     auto layer = std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                         es, [] { return std::make_unique<llvm::SectionMemoryManager>(); });
                     // gdb sees the kernels; `perf inject --jit` names them where LLVM has perf support.
                     layer->registerJITEventListener(*llvm::JITEventListener::createGDBRegistrationListener());
                     if (auto* perf = llvm::JITEventListener::createPerfJITEventListener())
                       layer->registerJITEventListener(*perf);
                     return layer;
                   })
                   .setPlatformSetUp(llvm::orc::setUpInactivePlatform)
                   .create();
    if (!jit) fail("starting the JIT linker", message(jit.takeError()));
    lk->jit = std::move(*jit);
    auto shared = lk->jit->createJITDylib("fluxion-runtime");
    if (!shared) fail("starting the JIT linker", message(shared.takeError()));
    lk->shared = &*shared;
    llvm::orc::SymbolMap symbols;
    for (const runtime::KernelSymbol& s : runtime::kernel_symbols())
      symbols[lk->jit->mangleAndIntern(s.name)] = {llvm::orc::ExecutorAddr::fromPtr(s.address),
                                                   llvm::JITSymbolFlags::Exported};
    if (auto e = lk->shared->define(llvm::orc::absoluteSymbols(std::move(symbols)))) fail("starting the JIT linker", message(std::move(e)));
    auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        lk->jit->getDataLayout().getGlobalPrefix());
    if (!process) fail("starting the JIT linker", message(process.takeError()));
    lk->shared->addGenerator(std::move(*process));
    return lk;
  }();
  return *l;
}

class LinkedKernel : public runtime::Kernel {
 public:
  llvm::orc::JITDylib* dylib = nullptr;
  ~LinkedKernel() override {
    if (dylib) llvm::consumeError(linker().jit->getExecutionSession().removeJITDylib(*dylib));
  }
};

// The LLVM IR passes for an optimization level: none at 0 (small kernels, where compile time is
// everything), else a list chosen from default<O3> by what each kernel needs (callgrind, docs/jit.md):
//   * always -- sroa .. gvn: SROA of the memref descriptors, CSE, instcombine, loop invariants;
//   * where scalar loops remain (generics the vectorizer skips: gathers, libm calls) -- loop-unroll,
//     full unrolling only: such loops of a few iterations fold once unrolled (GradBench BA
//     residuals 8.4 -> 0.9 ms, as default<O3>; partial and runtime unrolling only added code).
//     Loops that already compute on vectors are marked not to be unrolled (mark_vector_loops):
//     unrolling the MLP step's 8-trip vector loops bought nothing and cost a sixth of its compile;
//   * where a generated contraction is left (tiling.h: kGeneratedContraction) -- slp-vectorizer,
//     then loop-rotate + licm with speculation: the register tile (vector<8x32x1>, unit reduction
//     dim) reaches LLVM as one-lane multiplies that SLP packs again (generated 256^3 matmul 54M ->
//     10.5M instructions), and the accumulator tile loaded and stored every k step moves to
//     registers (10.5M -> 6.9M; default<O3> 7.1M).
// FLUXION_JIT_LLVM_PASSES replaces the list (LLVM's new-pass-manager syntax, e.g. "default<O3>").
struct PassChoice {
  bool scalar_loops = false;  // some loop is left to unroll
  bool contraction = false;   // the module carries kGeneratedContraction
};

std::optional<std::string> passes_override() { return setting_value("FLUXION_JIT_LLVM_PASSES"); }

std::string llvm_passes(int opt_level, const PassChoice& c) {
  if (std::optional<std::string> e = passes_override()) return *e;
  if (opt_level <= 0) return "";
  std::string s = "function(sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm),gvn,"
                  "instcombine<no-verify-fixpoint>,simplifycfg";
  if (c.scalar_loops) s += ",loop-unroll<O3;no-partial;no-runtime>,instcombine<no-verify-fixpoint>,simplifycfg";
  if (c.contraction) s += ",slp-vectorizer,instcombine<no-verify-fixpoint>,loop-mssa(loop-rotate,licm<allowspeculation>),gvn";
  return s + ")";
}

// Whether a loop's body already computes on vectors (vector arithmetic, loads, stores or calls).
bool computes_on_vectors(const llvm::Loop& loop) {
  for (const llvm::BasicBlock* b : loop.blocks())
    for (const llvm::Instruction& i : *b) {
      if (const auto* st = llvm::dyn_cast<llvm::StoreInst>(&i)) {
        if (st->getValueOperand()->getType()->isVectorTy()) return true;
      } else if (i.getType()->isVectorTy() &&
                 (llvm::isa<llvm::BinaryOperator>(i) || llvm::isa<llvm::LoadInst>(i) || llvm::isa<llvm::CallInst>(i))) {
        return true;
      }
    }
  return false;
}

// Marks every loop that computes on vectors `llvm.loop.unroll.disable`, so that loop-unroll
// only sees the scalar loops MLIR left; returns whether any loop is left to unroll.
bool mark_vector_loops(llvm::Module& m) {
  bool scalar = false;
  for (llvm::Function& f : m) {
    if (f.isDeclaration()) continue;
    llvm::DominatorTree dt(f);
    llvm::LoopInfo loops(dt);
    for (llvm::Loop* l : loops.getLoopsInPreorder()) {
      if (computes_on_vectors(*l)) l->setLoopAlreadyUnrolled();
      else scalar = true;
    }
  }
  return scalar;
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm, const std::string& passes) {
  if (passes.empty()) return;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  if (llvm::Error e = pb.parsePassPipeline(mpm, passes)) fail("parsing the LLVM pass list '" + passes + "'", message(std::move(e)));
  mpm.run(m, mam);
}

}  // namespace

ObjectCode emit_object(mlir::ModuleOp m, int opt_level, const std::string& ll_dump, const std::string& asm_dump,
                       const std::string& entry) {
  ObjectCode out;
  llvm::LLVMContext ctx;
  const auto translate_start = Clock::now();
  std::unique_ptr<llvm::Module> module = mlir::translateModuleToLLVMIR(m, ctx, "fluxion_kernel");
  out.translate_ms = ms_since(translate_start);
  if (!module) fail("translating the module to LLVM IR", "MLIR's translation failed");
  std::unique_ptr<llvm::TargetMachine> tm = target_machine(opt_level);
  module->setDataLayout(tm->createDataLayout());
  module->setTargetTriple(tm->getTargetTriple().getTriple());
  add_packed_entry(*module);
  // The kernel's parts (lower_parts.cpp) are internal: only the two entry points are exported.
  for (llvm::Function& f : *module)
    if (!f.isDeclaration() && f.getName() != "kernel" && f.getName() != "_mlir_kernel")
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  if (entry != "kernel") {
    module->getFunction("kernel")->setName(entry);
    module->getFunction("_mlir_kernel")->setName("_mlir_" + entry);
  }

  auto t0 = Clock::now();
  PassChoice choice;
  choice.contraction = bool(m->getAttr(kGeneratedContraction));
  if (opt_level > 0 && !passes_override()) choice.scalar_loops = mark_vector_loops(*module);
  optimize(*module, *tm, llvm_passes(opt_level, choice));
  out.optimize_ms = ms_since(t0);
  if (!ll_dump.empty()) {
    std::string s;
    llvm::raw_string_ostream os(s);
    module->print(os, nullptr);
    write_file(ll_dump, s);
  }

  auto t1 = Clock::now();
  auto emit = [&](llvm::CodeGenFileType type) {
    llvm::SmallVector<char, 0> buffer;
    llvm::raw_svector_ostream os(buffer);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, type)) fail("code generation", "the target cannot emit this file type");
    pm.run(*module);
    return std::string(buffer.data(), buffer.size());
  };
  if (!asm_dump.empty()) {
    // Code generation changes the module (it lowers intrinsics), so the assembly comes from a copy.
    auto copy = llvm::CloneModule(*module);
    std::swap(module, copy);
    write_file(asm_dump, emit(llvm::CodeGenFileType::AssemblyFile));
    std::swap(module, copy);
  }
  out.bytes = emit(llvm::CodeGenFileType::ObjectFile);
  out.codegen_ms = ms_since(t1);
  return out;
}

std::vector<std::string> undefined_symbols(const std::string& object) {
  std::vector<std::string> names;
  auto file = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, "kernel"));
  if (!file) {
    llvm::consumeError(file.takeError());
    names.push_back("<not an object file>");
    return names;
  }
  for (const llvm::object::SymbolRef& s : (*file)->symbols()) {
    auto flags = s.getFlags();
    if (!flags) {
      llvm::consumeError(flags.takeError());
      continue;
    }
    if (!(*flags & llvm::object::SymbolRef::SF_Undefined)) continue;
    auto name = s.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (!name->empty()) names.push_back(name->str());
  }
  return names;
}

std::vector<std::string> unresolved_symbols(const std::string& object) {
  const std::vector<std::string> names = undefined_symbols(object);
  std::vector<std::string> missing;
  bool vector_libm_loaded = false;
  for (const std::string& n : names) {
    if (runtime_symbol(n) || n == "_GLOBAL_OFFSET_TABLE_") continue;  // the linker makes the GOT
    if (n.rfind("__kmpc_", 0) == 0 || n.rfind("omp_", 0) == 0) load_libomp();
    if (n.rfind("_ZGV", 0) == 0 && !vector_libm_loaded) {
      load_vector_libm();
      vector_libm_loaded = true;
    }
    if (!dlsym(RTLD_DEFAULT, n.c_str())) missing.push_back(n);
  }
  return missing;
}

bool openmp_available() { return load_libomp(); }

std::unique_ptr<runtime::Kernel> link_object(const std::string& object, const std::string& what) {
  const std::vector<std::string> missing = unresolved_symbols(object);
  if (!missing.empty()) {
    std::string list;
    for (const std::string& n : missing) list += (list.empty() ? "" : ", ") + n;
    fail("linking the kernel", "it calls " + list + ", which nothing in this process provides (code for " +
                                   cpu_target().cpu + "; a library function or compiler builtin the runtime does "
                                   "not supply), for " + what);
  }
  auto t = Clock::now();
  Linker& l = linker();
  auto dylib = l.jit->createJITDylib("kernel" + std::to_string(l.next++));
  if (!dylib) fail("linking the kernel", message(dylib.takeError()));
  auto kernel = std::make_unique<LinkedKernel>();
  kernel->dylib = &*dylib;
  dylib->addToLinkOrder(*l.shared);
  if (auto e = l.jit->addObjectFile(*dylib, llvm::MemoryBuffer::getMemBufferCopy(object, "kernel")))
    fail("linking the kernel", message(std::move(e)));
  auto entry = l.jit->lookup(*dylib, "_mlir_kernel");
  if (!entry) fail("linking the kernel", message(entry.takeError()));
  kernel->packed = entry->toPtr<runtime::Kernel::PackedFn>();
  kernel->link_ms = ms_since(t);
  return kernel;
}

}  // namespace fluxion::lowering
