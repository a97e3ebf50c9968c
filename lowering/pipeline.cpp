// The CPU pipeline: Program -> MLIR (lower_program) -> fusion -> tiling and vectorization (a
// transform script written per kernel) -> bufferization into the runtime's buffers -> polynomial
// math -> LLVM -> ExecutionEngine. The pass lists below are the whole pipeline, in order.
//
// One MLIRContext serves every compile, under a mutex (a compile takes milliseconds; the kernels
// it produces run concurrently without it). Diagnostics are captured into the CompileError.
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Support/raw_ostream.h>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <unistd.h>
#include <cstdlib>

#include <dlfcn.h>
#include <mlir/Dialect/LLVMIR/LLVMDialect.h>
#include <mlir/Dialect/Bufferization/IR/Bufferization.h>
#include <mlir/Dialect/Linalg/Transforms/Transforms.h>
#include <mlir/Dialect/Math/Transforms/Approximation.h>
#include <mlir/Dialect/Math/Transforms/Passes.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/Transform/IR/TransformOps.h>
#include <mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/Vector/IR/VectorOps.h>
#include <mlir/ExecutionEngine/ExecutionEngine.h>
#include <mlir/ExecutionEngine/OptUtils.h>
#include <mlir/IR/Diagnostics.h>
#include <mlir/IR/Verifier.h>
#include <mlir/Parser/Parser.h>
#include <mlir/Pass/PassManager.h>
#include <mlir/Pass/PassRegistry.h>
#include <mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h>
#include <mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h>
#include <mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h>
#include <mlir/Transforms/GreedyPatternRewriteDriver.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <sstream>

#include "ir/error.h"
#include "lowering/compile.h"
#include "lowering/lower.h"
#include "lowering/passes.h"
#include "lowering/target.h"
#include "lowering/tiling.h"
#include "memory/buffer.h"

namespace fluxion::lowering {

void register_all_mlir(mlir::DialectRegistry& registry);  // mlir_registry.cpp

using namespace mlir;

namespace {

// ---- the passes -----------------------------------------------------------------------------------
// Before the transform script: named ops become generics so that elementwise producers fuse into
// each other and into reductions; outputs written by materialize_in_destination take over the
// tensor.empty of the op that computes them (no copy).
const char* kFusion =
    "linalg-generalize-named-ops,"
    "fx-fuse-elementwise,"
    "eliminate-empty-tensors,"
    "canonicalize,cse";

// After it: hoist vector accumulators out of loops (on tensors, or they bounce through memory),
// bufferize, free the temporaries (inline+symbol-dce remove the dealloc helper that the bare-pointer
// ABI cannot lower), approximate the math, and lower everything to the LLVM dialect.
const char* kBufferizeAndLower =
    "canonicalize,cse,"
    "loop-invariant-subset-hoisting,"
    "canonicalize,"
    "empty-tensor-to-alloc-tensor,"
    "one-shot-bufferize{allow-return-allocs-from-loops},"
    "canonicalize,cse,canonicalize,"
    "buffer-deallocation-pipeline,inline{default-pipeline=},symbol-dce,canonicalize,"
    "@THREADS@"
    "func.func(fx-lower-copies),"
    "fx-accurate-math,"
    "func.func(fx-math-approx),"
    "func.func(convert-vector-to-scf{full-unroll=1 target-rank=1}),"
    "func.func(convert-linalg-to-loops),"
    "lower-affine,"
    "convert-scf-to-cf,"
    "canonicalize,cse,"
    "convert-vector-to-llvm{reassociate-fp-reductions=1},"
    "func.func(convert-math-to-llvm),"
    "arith-expand{include-bf16=1},"
    "memref-expand,"
    "expand-strided-metadata,"
    "lower-affine,"
    "finalize-memref-to-llvm{use-generic-functions=1},"
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},"
    "convert-arith-to-llvm,"
    "convert-index-to-llvm,"
    "convert-cf-to-llvm,"
    "@OPENMP_TO_LLVM@"
    "reconcile-unrealized-casts";

// Outer-loop threads: scf.forall -> scf.parallel -> omp.parallel + omp.wsloop (libomp, threads
// pinned). canonicalize right after inlines the memref.alloca_scope the conversion wraps around
// the body (else it becomes multi-block and fails to verify); the OpenMP dialect is lowered after
// cf. With one thread the foralls are plain loops.
std::string bufferize_and_lower_passes(int num_threads) {
  std::string s = kBufferizeAndLower;
  auto put = [&](const std::string& key, const std::string& text) { s.replace(s.find(key), key.size(), text); };
  if (num_threads > 1) {
    put("@THREADS@", "scf-forall-to-parallel,convert-scf-to-openmp{num-threads=" + std::to_string(num_threads) +
                         "},canonicalize,");
    put("@OPENMP_TO_LLVM@", "convert-openmp-to-llvm,");
  } else {
    put("@THREADS@", "scf-forall-to-for,");
    put("@OPENMP_TO_LLVM@", "");
  }
  return s;
}

// libomp for LLVM 19 is not packaged; LLVM 14's runs the code MLIR 19 emits. Threads are pinned
// (OMP_PROC_BIND): unpinned, OpenMP on these VMs was slower than one thread.
const char* kLibOmp = "/usr/lib/llvm-14/lib/libomp.so";

int usable_threads(int requested) {
  if (requested <= 1) return 1;
  static const bool have_omp = [] {
    FILE* f = std::fopen(kLibOmp, "rb");
    if (!f) return false;
    std::fclose(f);
    setenv("OMP_PROC_BIND", "true", 0);
    return true;
  }();
  return have_omp ? requested : 1;
}

// Polynomial approximations of exp, log, tanh, erf, and of sin and cos where fx-accurate-math left
// them (f32; fx-accurate-math has replaced the other math ops the lowering emits by calls).
struct MathApproxPass : public PassWrapper<MathApproxPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MathApproxPass)
  StringRef getArgument() const final { return "fx-math-approx"; }
  StringRef getDescription() const final { return "vectorizable polynomial approximations of f32 math"; }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<arith::ArithDialect, math::MathDialect, vector::VectorDialect>();
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
  }
};

// linalg-fuse-elementwise-ops with one more rule: a producer that calls libm (an op the vectorizer
// cannot handle) is not fused into a reduction, whose vectorization would then fail; it stays a
// scalar loop of its own and the reduction still vectorizes.
bool calls_out(Operation* op) {
  bool found = false;
  op->walk([&](func::CallOp) { found = true; });
  return found;
}

struct FuseElementwisePass : public PassWrapper<FuseElementwisePass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FuseElementwisePass)
  StringRef getArgument() const final { return "fx-fuse-elementwise"; }
  StringRef getDescription() const final { return "elementwise producer-consumer fusion of linalg.generic ops"; }
  void getDependentDialects(DialectRegistry& r) const override { r.insert<linalg::LinalgDialect, tensor::TensorDialect>(); }
  void runOnOperation() override {
    linalg::ControlFusionFn control = [](OpOperand* fused) {
      Operation* producer = fused->get().getDefiningOp();
      if (!producer || !producer->hasOneUse()) return false;
      auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
      if (consumer && consumer.getNumReductionLoops() > 0 && calls_out(producer)) return false;
      return true;
    };
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
  }
};

// memref.copy (a yielded carry, insert_slice, concatenate, pad) would become a call into
// libmlir_c_runner_utils. Lowered here instead, after vectorization has run: a loop nest over the
// outer dims moving whole vectors along the innermost one when both sides are contiguous along it
// and the element is at least a byte; otherwise linalg.copy, which becomes scalar loops. (As scalar
// loops, the copy of an RNN's carry cost a tenth of each step.)
int64_t copy_vector_length(int64_t n) {
  if (n <= 64) return n;
  for (int64_t d = 64; d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

bool unit_inner_stride(MemRefType t) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(getStridesAndOffset(t, strides, offset)) && !strides.empty() && strides.back() == 1;
}

struct LowerCopiesPass : public PassWrapper<LowerCopiesPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerCopiesPass)
  StringRef getArgument() const final { return "fx-lower-copies"; }
  StringRef getDescription() const final { return "memref.copy -> vector loops (or linalg.copy)"; }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<linalg::LinalgDialect, scf::SCFDialect, vector::VectorDialect, arith::ArithDialect>();
  }
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp op) { copies.push_back(op); });
    for (memref::CopyOp op : copies) {
      OpBuilder b(op);
      auto src = cast<MemRefType>(op.getSource().getType()), dst = cast<MemRefType>(op.getTarget().getType());
      const Type elem = src.getElementType();
      const int64_t vl = src.hasStaticShape() && src.getRank() > 0 ? copy_vector_length(src.getShape().back()) : 1;
      if (vl < 4 || !elem.isIntOrFloat() || elem.getIntOrFloatBitWidth() < 8 || !unit_inner_stride(src) ||
          !unit_inner_stride(dst)) {
        b.create<linalg::CopyOp>(op.getLoc(), op.getSource(), op.getTarget());
        op.erase();
        continue;
      }
      const Location loc = op.getLoc();
      const ArrayRef<int64_t> shape = src.getShape();
      const int64_t rank = src.getRank();
      auto index = [&](int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v).getResult(); };
      SmallVector<Value> ivs;
      for (int64_t d = 0; d < rank; ++d) {
        auto loop = b.create<scf::ForOp>(loc, index(0), index(shape[size_t(d)]), index(d + 1 == rank ? vl : 1));
        ivs.push_back(loop.getInductionVar());
        b.setInsertionPoint(loop.getBody()->getTerminator());
      }
      auto vt = VectorType::get({vl}, elem);
      SmallVector<bool> in_bounds{true};
      Value pad = b.create<arith::ConstantOp>(loc, elem, b.getZeroAttr(elem));
      Value v = b.create<vector::TransferReadOp>(loc, vt, op.getSource(), ivs, pad, in_bounds);
      b.create<vector::TransferWriteOp>(loc, v, op.getTarget(), ivs, in_bounds);
      op.erase();
    }
  }
};

// ---- the context ----------------------------------------------------------------------------------
struct Jit {
  std::mutex mutex;
  std::unique_ptr<MLIRContext> ctx;
};

Jit& jit() {
  static Jit* j = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    DialectRegistry registry;
    register_all_mlir(registry);
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    registerOpenMPDialectTranslation(registry);
    PassRegistration<MathApproxPass>();
    PassRegistration<LowerCopiesPass>();
    register_accurate_math_pass();
    PassRegistration<FuseElementwisePass>();
    auto* jj = new Jit;
    jj->ctx = std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
    // Only the dialects the lowering emits; passes load what they depend on. Loading all of the
    // registry made every canonicalization pattern set (and each compile) several times larger.
    for (llvm::StringRef d : {"builtin", "func", "arith", "math", "linalg", "tensor", "memref", "scf", "vector", "bufferization", "llvm"})
      jj->ctx->getOrLoadDialect(d);
    return jj;
  }();
  return *j;
}

// One PassManager per pass list, parsed and initialized once and reused by every compile (under
// the context's mutex). Initialization (each canonicalize collects the patterns of every loaded
// dialect) was half of a one-op kernel's pass time when done per compile. The module is verified
// once after each list, not after every pass.
PassManager* pass_manager(MLIRContext& ctx, const std::string& passes, std::string& diagnostics) {
  static std::map<std::string, std::unique_ptr<PassManager>> managers;
  // FLUXION_PASS_TIMING: a fresh manager per compile, whose timing report goes to stderr when the
  // next compile replaces it.
  static const bool timing = std::getenv("FLUXION_PASS_TIMING") != nullptr;
  std::unique_ptr<PassManager>& pm = managers[passes];
  if (!pm || timing) {
    auto fresh = std::make_unique<PassManager>(&ctx);  // anchored on builtin.module: the list is its body
    if (timing) fresh->enableTiming();
    fresh->enableVerifier(false);
    std::string err;
    llvm::raw_string_ostream es(err);
    if (failed(parsePassPipeline(passes, *fresh, es))) {
      diagnostics += "\n  " + err;
      managers.erase(passes);
      return nullptr;
    }
    pm = std::move(fresh);
  }
  return pm.get();
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

class JitKernel : public CompiledKernel {
 public:
  std::unique_ptr<ExecutionEngine> engine;
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

std::string print(ModuleOp m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os);
  return s;
}

// ---- the on-disk cache ------------------------------------------------------------------------------
// One file per fingerprint, <cache_dir>/<fingerprint hash>.fxkernel: a header that holds the whole
// fingerprint (so a hash collision or a file from another version is a miss, never a wrong
// kernel), then the module in the LLVM dialect as the pipeline left it. A hit skips lowering and
// every MLIR pass; LLVM still generates the code (ExecutionEngine cannot load an object file).
// Files are written under a temporary name and renamed, so readers never see half a file.
// v2: kernels call libmvec and the runtime's scratch allocator. The host CPU and the libmvec
// variant are part of the header: a cache directory shared with another machine (or with a run
// under FLUXION_LIBMVEC=0) must not hand it AVX-512 calls it cannot make.
std::string disk_header(const std::string& key) {
  static const std::string host = "cpu " + cpu_target().id() + ", " + load_vector_libm() + "\n";
  return "fluxion-kernel v2 mlir-19\n" + host + std::to_string(key.size()) + "\n" + key + "\n";
}

std::string hex_hash(const std::string& s) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016zx", std::hash<std::string>{}(s));
  return buf;
}

// Whether every function a cached module declares but does not define can be linked here (the
// runtime's scratch functions, or a symbol of the process: libm, libmvec, the library calls).
bool externals_resolve(ModuleOp m) {
  load_vector_libm();
  bool ok = true;
  m.walk([&](LLVM::LLVMFuncOp f) {
    if (!f.isExternal()) return;
    const std::string name = f.getName().str();
    if (name.rfind("_mlir_memref_to_llvm_", 0) == 0 || name.rfind("__kmpc_", 0) == 0) return;  // bound, or libomp
    if (!dlsym(RTLD_DEFAULT, name.c_str())) ok = false;
  });
  return ok;
}

OwningOpRef<ModuleOp> load_cached_module(MLIRContext& ctx, const std::string& path, const std::string& header) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (text.compare(0, header.size(), header) != 0) return {};
  return parseSourceString<ModuleOp>(llvm::StringRef(text).drop_front(header.size()), &ctx);
}

void store_cached_module(const std::string& path, const std::string& header, const std::string& module_text) {
  static std::atomic<int> counter{0};
  const std::string tmp = path + ".tmp" + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) return;  // an unwritable cache directory only costs the next process a compile
    f << header << module_text;
    if (!f) {
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace

std::unique_ptr<CompiledKernel> compile_cpu(const Program& p, const CompileOptions& options) {
  Jit& j = jit();
  std::lock_guard<std::mutex> lock(j.mutex);
  MLIRContext& ctx = *j.ctx;

  // Every diagnostic is collected here; none reaches stderr.
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic& d) {
    llvm::raw_string_ostream os(diagnostics);
    os << "\n  " << d.getLocation() << ": " << d;
    for (const Diagnostic& note : d.getNotes()) os << "\n    note: " << note;
    return success();
  });
  auto fail = [&](const std::string& stage) -> std::unique_ptr<CompiledKernel> {
    throw CompileError("CompileError: jit: " + stage + " failed for the program\n" + p.str() + "MLIR said:" + diagnostics);
  };
  const bool dump = !options.dump_dir.empty();
  const std::string stem = options.dump_dir + "/" + options.dump_name;
  if (dump) write_file(stem + ".program.txt", p.str());

  auto kernel = std::make_unique<JitKernel>();
  const int threads = usable_threads(options.num_threads);
  const bool use_disk = !options.cache_dir.empty() && !options.cache_key.empty();
  // Named by the whole header (host included): processes on different hosts, or with and without
  // libmvec, sharing a directory keep their own files instead of overwriting each other's.
  const std::string header = use_disk ? disk_header(options.cache_key) : std::string();  // holds the program text: built once
  const std::string disk_path = options.cache_dir + "/" + hex_hash(header) + ".fxkernel";
  OwningOpRef<ModuleOp> module;
  if (use_disk) {
    const size_t quiet = diagnostics.size();  // a stale or damaged file is a miss, not an error
    auto t = Clock::now();
    module = load_cached_module(ctx, disk_path, header);
    if (module && !externals_resolve(*module)) module = nullptr;  // e.g. written under a newer glibc
    diagnostics.resize(quiet);
    kernel->passes_ms = ms_since(t);
    kernel->from_disk_cache = bool(module);
  }
  if (!module) {
  auto t0 = Clock::now();
  module = lower_program(ctx, p, options);  // throws CompileError itself
  if (dump) write_file(stem + ".input.mlir", print(*module));
  if (failed(verify(*module))) return fail("verifying the lowered module");
  kernel->lower_ms = ms_since(t0);

  auto t1 = Clock::now();
  auto run = [&](const std::string& passes, const char* what) {
    PassManager* pm = pass_manager(ctx, passes, diagnostics);
    if (!pm) fail(std::string("parsing the pass list of ") + what);
    if (failed(pm->run(*module))) fail(what);
    if (failed(verify(*module))) fail(std::string("verifying the module after ") + what);
  };
  run(kFusion, "fusion");
  // Row tile-and-fuse where it applies; if its transform fails, the plain per-op plan on the
  // module as it was before.
  if (dump) write_file(stem + ".fused.mlir", print(*module));
  bool row_fused = false;
  if (std::string rows = row_fusion_script(*module, threads); !rows.empty()) {
    OwningOpRef<ModuleOp> before(cast<ModuleOp>((*module)->clone()));
    OwningOpRef<ModuleOp> td = parseSourceString<ModuleOp>(rows, &ctx);
    const size_t quiet = diagnostics.size();
    auto entry = td ? transform::detail::findTransformEntryPoint(*module, *td) : nullptr;
    if (entry && succeeded(transform::applyTransformNamedSequence(*module, entry, *td, transform::TransformOptions()))) {
      row_fused = true;
      if (dump) write_file(stem + ".transform.mlir", rows);
    } else {
      if (dump) write_file(stem + ".rowfusion-failed.mlir", rows + "\n// MLIR said:" + diagnostics.substr(quiet));
      module = std::move(before);
      diagnostics.resize(quiet);
    }
  }
  std::string script = row_fused ? std::string() : tile_and_vectorize_script(*module, threads);
  if (dump && !row_fused) write_file(stem + ".transform.mlir", script);
  if (!script.empty()) {
    OwningOpRef<ModuleOp> td = parseSourceString<ModuleOp>(script, &ctx);
    if (!td) return fail("parsing the tiling script");
    auto entry = transform::detail::findTransformEntryPoint(*module, *td);
    if (!entry || failed(transform::applyTransformNamedSequence(*module, entry, *td, transform::TransformOptions())))
      return fail("tiling and vectorization");
  }
  if (dump) write_file(stem + ".vectorized.mlir", print(*module));
  const std::string lower_passes = bufferize_and_lower_passes(threads);
  run(lower_passes, "bufferization and lowering to LLVM");
  if (dump) write_file(stem + ".lowered.mlir", print(*module));
  kernel->passes_ms = ms_since(t1);
  if (use_disk) store_cached_module(disk_path, header, print(*module));
  }

  auto t2 = Clock::now();
  // The host is detected once (it cost ~0.3 ms a compile); each engine owns its target machine.
  const CpuTarget& target = cpu_target();
  std::optional<llvm::orc::JITTargetMachineBuilder> tmb{llvm::orc::JITTargetMachineBuilder(llvm::Triple(llvm::sys::getProcessTriple()))};
  tmb->setCPU(target.cpu);
  if (!target.features.empty()) {
    std::vector<std::string> features;
    for (llvm::StringRef f : llvm::split(target.features, ',')) features.push_back(f.str());
    tmb->addFeatures(features);
  }
  auto tm = tmb->createTargetMachine();
  if (!tm) {
    diagnostics += "\n  " + llvm::toString(tm.takeError());
    return fail("creating the target machine");
  }
  // LLVM -O3 costs ~10 ms a kernel. MLIR has already fused and vectorized, so small kernels
  // (under 64K elements in every array) skip LLVM's optimizer: compile time dominates for them.
  int64_t largest = 0;
  for (const AbstractArray& t : p.types) largest = std::max<int64_t>(largest, t.size());
  const bool small = largest < (int64_t(1) << 16);
  // FLUXION_JIT_LLVM_OPT=0..3 fixes LLVM's level for every kernel (compile time against speed).
  int opt = small ? 0 : 3;
  if (const char* e = std::getenv("FLUXION_JIT_LLVM_OPT")) opt = std::clamp(std::atoi(e), 0, 3);
  auto optimize = makeOptimizingTransformer(unsigned(opt), 0, tm->get());
  ExecutionEngineOptions eo;
  std::string ll_path = dump ? stem + ".ll" : std::string();
  // ExecutionEngineOptions::transformer is a function_ref: the callable must outlive create().
  std::function<llvm::Error(llvm::Module*)> transform = [optimize, ll_path](llvm::Module* m) -> llvm::Error {
    llvm::Error e = optimize(m);
    if (!e && !ll_path.empty()) {
      std::string s;
      llvm::raw_string_ostream os(s);
      m->print(os, nullptr);
      write_file(ll_path, s);
    }
    return e;
  };
  eo.transformer = transform;
  eo.jitCodeGenOptLevel = opt == 0 ? llvm::CodeGenOptLevel::None : opt == 1 ? llvm::CodeGenOptLevel::Less
                         : opt == 2 ? llvm::CodeGenOptLevel::Default : llvm::CodeGenOptLevel::Aggressive;
  static const llvm::StringRef omp_libs[] = {kLibOmp};
  bool uses_openmp = false;  // only kernels with parallel loops link libomp (a lookup per symbol)
  module->walk([&](Operation* op) {
    if (op->getName().getDialectNamespace() == "omp") uses_openmp = true;
  });
  if (uses_openmp) eo.sharedLibPaths = omp_libs;
  auto engine = ExecutionEngine::create(*module, eo, std::move(*tm));
  if (!engine) {
    diagnostics += "\n  " + llvm::toString(engine.takeError());
    return fail("LLVM code generation");
  }
  // Temporaries come from the runtime's caching allocator (use-generic-functions above).
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap m;
    auto put = [&](const char* name, auto* fn) {
      m[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn), llvm::JITSymbolFlags::Exported};
    };
    put("_mlir_memref_to_llvm_alloc", +[](size_t n) { return scratch_alloc(n); });
    put("_mlir_memref_to_llvm_aligned_alloc", +[](size_t alignment, size_t n) { return scratch_alloc(n, alignment); });
    put("_mlir_memref_to_llvm_free", +[](void* p) { scratch_free(p); });
    return m;
  });
  load_vector_libm();  // kernels from the disk cache call it without having run fx-accurate-math
  auto fn = (*engine)->lookupPacked("kernel");
  if (!fn) {
    diagnostics += "\n  " + llvm::toString(fn.takeError());
    return fail("looking up the kernel");
  }
  kernel->packed = *fn;
  kernel->engine = std::move(*engine);
  kernel->llvm_ms = ms_since(t2);
  return kernel;
}

}  // namespace fluxion::lowering
