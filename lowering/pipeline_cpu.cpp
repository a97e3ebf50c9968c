// The CPU pipeline: a flat list of named stages (compile_cpu at the bottom of this file), each
// followed by its dump when FLUXION_DUMP is set.
//
//   lower      Program -> func + linalg on tensors (lower_program.cpp)        .input.mlir
//   fuse       elementwise producer -> consumer fusion                         .fused.mlir
//   tile       row tile-and-fuse, or the per-op tiling script; vectorization   .transform.mlir .vectorized.mlir
//              (row-local kernels first run as one loop over row blocks: .rowblocks.mlir, row_blocks.h)
//   bufferize  bufferization, threads, math, down to the LLVM dialect          .lowered.mlir
//   codegen    LLVM IR, optimized, and object code for the target CPU          .ll .s (codegen_cpu.cpp)
//   link       the object linked into the process                              (codegen_cpu.cpp)
//
// With FLUXION_CACHE_DIR, the object code of each kernel is kept on disk (object_cache.h): a hit
// goes straight to `link`. Every diagnostic is collected into the CompileError; nothing goes to
// stderr and MLIR failures never abort.
#include <mlir/Dialect/Transform/IR/TransformOps.h>
#include <mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h>
#include <mlir/IR/Diagnostics.h>
#include <mlir/IR/Verifier.h>
#include <mlir/Parser/Parser.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>

#include "ir/error.h"
#include "ir/profiler.h"
#include "ir/settings.h"
#include "lowering/codegen_cpu.h"
#include "lowering/compile.h"
#include "lowering/lower.h"
#include "lowering/mlir_session.h"
#include "lowering/object_cache.h"
#include "lowering/passes.h"
#include "lowering/pipeline_state.h"
#include "lowering/row_blocks.h"
#include "lowering/tiling.h"
#include "lowering/to_llvm_passes.h"
#include "kernels/openmp.h"

namespace fluxion::lowering {

using namespace mlir;

// ---- the pass lists -----------------------------------------------------------------------------------
// Before tiling: named ops become generics so that elementwise producers fuse into each other and
// into reductions (runs of elementwise ops grouped first, in linear time); outputs written by materialize_in_destination take over the tensor.empty of the
// op that computes them (no copy). The GPU pipeline (pipeline_cuda.cpp) runs the same list.
const char* const kFusionPasses =
    "linalg-generalize-named-ops,"
    "func.func(fx-group-elementwise),"
    "fx-fuse-elementwise,"
    "eliminate-empty-tensors,"
    "canonicalize,cse,"
    "func.func(fx-scalarize-rank0)";
namespace {

// After it: hoist vector accumulators out of loops (on tensors, or they bounce through memory),
// bufferize, free the temporaries (inlining and symbol-dce remove the dealloc helper that the
// bare-pointer ABI cannot lower; fx-inline-helpers keeps a kernel's parts apart, lower_parts.cpp),
// then (to_llvm_passes.h) approximate the math and lower everything to the LLVM dialect.
const char* kBufferizeAndLower =
    "canonicalize,cse,"
    "loop-invariant-subset-hoisting,"
    "canonicalize,"
    "empty-tensor-to-alloc-tensor,"
    "one-shot-bufferize{allow-return-allocs-from-loops},"
    "canonicalize,cse,canonicalize,"
    "buffer-deallocation-pipeline,fx-inline-helpers,symbol-dce,canonicalize,"
    "@THREADS@"
    "func.func(fx-lower-copies),"
    "convert-complex-to-standard,"  // complex.* -> arith/math on the parts (lower_complex.cpp)
    "@PLANAR_COMPLEX@";  // then complex generics -> vector loops on the parts; then to_llvm_passes()

// FLUXION_PLANAR_COMPLEX=0 leaves complex elementwise loops scalar (fx-vectorize-complex off): the
// A/B of docs/linalg.md.
bool planar_complex() {
  static const bool on = toggle_setting("FLUXION_PLANAR_COMPLEX", true);
  return on;
}

// Outer-loop threads: scf.forall -> scf.parallel -> omp.parallel + omp.wsloop (libomp, threads
// pinned). canonicalize right after inlines the memref.alloca_scope the conversion wraps around
// the body (else it becomes multi-block and fails to verify); the OpenMP dialect is lowered after
// cf. With one thread the foralls are plain loops.
std::string bufferize_and_lower_passes(int num_threads) {
  std::string s = kBufferizeAndLower;
  auto put = [&](const std::string& key, const std::string& text) { s.replace(s.find(key), key.size(), text); };
  put("@PLANAR_COMPLEX@", planar_complex() ? "func.func(fx-vectorize-complex)," : "");
  if (num_threads > 1) {
    put("@THREADS@", "scf-forall-to-parallel,convert-scf-to-openmp{num-threads=" + std::to_string(num_threads) +
                         "},canonicalize,");
  } else {
    put("@THREADS@", "scf-forall-to-for,");
  }
  return s + to_llvm_passes({.reassociate_reductions = true, .linalg_to_loops = true, .complex = true,
                             .openmp = num_threads > 1});
}

// Threads are bound as kernels/openmp.h says (pinned with one CPU device), before libomp loads.
int usable_threads(int requested) {
  if (requested <= 1) return 1;
  static const bool have_omp = [] {
    if (!openmp_available()) return false;
    fluxion::runtime::default_openmp_binding();
    return true;
  }();
  return have_omp ? requested : 1;
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// LLVM -O3 costs ~10 ms a kernel. MLIR has already fused and vectorized, so small kernels (under
// 64K elements in every array) skip LLVM's optimizer: compile time dominates for them.
// FLUXION_JIT_LLVM_OPT=0..3 fixes the level for every kernel (compile time against speed).
int llvm_opt_level(const Program& p) {
  if (const int64_t level = integer_setting("FLUXION_JIT_LLVM_OPT", -1); level >= 0) return int(level);
  if (!program_symbols(p).empty()) return 3;  // sizes known at run time only: any may be large
  int64_t largest = 0;
  for (const AbstractArray& t : p.types) largest = std::max<int64_t>(largest, t.size());
  return largest < (int64_t(1) << 16) ? 0 : 3;
}

// FLUXION_ROW_BLOCKS=0 turns row blocking (row_blocks.h) off: the A/B of docs/performance.md.
bool row_blocking() {
  static const bool on = toggle_setting("FLUXION_ROW_BLOCKS", true);
  return on;
}

// One compile for the CPU: the stages, over the state every pipeline holds (pipeline_state.h), and
// their timings.
class CpuPipeline : PipelineState {
 public:
  CpuPipeline(const Program& p, const CompileOptions& o)
      : PipelineState(p, o, "jit", ""), threads_(usable_threads(o.num_threads)) {}

  void lower() {
    profiler::Scope prof("mlir", "lower to MLIR");
    auto t = Clock::now();
    module_ = lower_program(session_.context, program_, options_, /*in_parts=*/true);  // throws CompileError itself
    dump_module("input.mlir");
    if (failed(verify(*module_))) fail("verifying the lowered module");
    lower_ms_ = ms_since(t);
  }

  void fuse() {
    profiler::Scope prof("mlir", "fusion passes");
    auto t = Clock::now();
    run(kFusionPasses, "fusion");
    dump_module("fused.mlir");
    passes_ms_ += ms_since(t);
  }

  // Row blocking of a row-local kernel that is more than generics (row_blocks.h), or row
  // tile-and-fuse of one made of generics where it applies; if that transform fails, the plain
  // per-op plan on the module as it was before.
  void tile() {
    profiler::Scope prof("mlir", "tiling and vectorization");
    auto t = Clock::now();
    if (!program_symbols(program_).empty()) {
      tile_polymorphic();
      passes_ms_ += ms_since(t);
      return;
    }
    untie_empty_tensors(*module_);
    if (row_blocking() && !only_generics(*module_) && block_rows(*module_)) {
      if (failed(verify(*module_))) fail("verifying the row-blocked module");
      untie_empty_tensors(*module_);  // the blocks' own empties
      dump_module("rowblocks.mlir");
    }
    collapse_short_elementwise_loops(*module_);
    bool row_fused = false;
    if (std::string rows = row_fusion_script(*module_, threads_); !rows.empty())
      row_fused = try_script(rows, "rowfusion-failed.mlir");
    if (!row_fused) {
      const std::string script = tile_and_vectorize_script(*module_, threads_);
      dump("transform.mlir", script);
      if (!script.empty() && !apply_script(script)) fail("tiling and vectorization");
    }
    dump_module("vectorized.mlir");
    passes_ms_ += ms_since(t);
  }

  // A polymorphic program: the row plans need static sizes, so only the per-op plans run -- they
  // tile, thread and vectorize the ops of static extent (a weight update), and the ops whose
  // dynamic loops are all parallel and outside their static loops one step of those at a time
  // (tiling.cpp, planning_ranges); ops with a dynamic inner loop go to LLVM. If the script fails,
  // nothing is tiled.
  void tile_polymorphic() {
    const std::string script = tile_and_vectorize_script(*module_, threads_);
    if (!script.empty() && try_script(script, "tiling-failed.mlir")) dump_module("vectorized.mlir");
  }

  // Applies a transform script; if it fails, the module as it was before, MLIR's words in the dump
  // `failed_dump`, and false.
  bool try_script(const std::string& script, const char* failed_dump) {
    OwningOpRef<ModuleOp> before(cast<ModuleOp>((*module_)->clone()));
    const size_t quiet = diagnostics_.size();
    if (apply_script(script)) {
      dump("transform.mlir", script);
      return true;
    }
    dump(failed_dump, script + "\n// MLIR said:" + diagnostics_.substr(quiet));
    module_ = std::move(before);
    diagnostics_.resize(quiet);
    return false;
  }

  void bufferize() {
    profiler::Scope prof("mlir", "bufferization and lowering to LLVM");
    auto t = Clock::now();
    run(bufferize_and_lower_passes(threads_), "bufferization and lowering to LLVM");
    dump_module("lowered.mlir");
    passes_ms_ += ms_since(t);
  }

  ObjectCode codegen(const std::string& entry = "kernel") {
    profiler::Scope prof("llvm", "LLVM optimization and code generation");
    ObjectCode object = emit_object(*module_, llvm_opt_level(program_), dump_path("ll"), dump_path("s"), entry);
    llvm_ms_ = object.translate_ms + object.optimize_ms + object.codegen_ms;
    return object;
  }

  // Every stage up to object code.
  ObjectCode object(const std::string& entry = "kernel") {
    lower();
    fuse();
    tile();
    bufferize();
    return codegen(entry);
  }

  std::unique_ptr<runtime::Kernel> link(const std::string& object) {
    profiler::Scope prof("llvm", "link");
    std::unique_ptr<runtime::Kernel> k = link_object(object, "the program\n" + program_.str());
    k->lower_ms = lower_ms_;
    k->passes_ms = passes_ms_;
    k->llvm_ms = llvm_ms_;
    return k;
  }

 private:
  bool apply_script(const std::string& script) {
    OwningOpRef<ModuleOp> td = parseSourceString<ModuleOp>(script, &session_.context);
    if (!td) return false;
    auto entry = transform::detail::findTransformEntryPoint(*module_, *td);
    // Without the expensive checks: they compare every live handle with each transformed op, quadratic
    // in a module with thousands of generics (the scripts are generated, not user-written).
    return entry && succeeded(transform::applyTransformNamedSequence(*module_, entry, *td,
                                                                     transform::TransformOptions().enableExpensiveChecks(false)));
  }

  std::string dump_path(const char* suffix) const {
    return options_.dump_dir.empty() ? std::string() : options_.dump_dir + "/" + options_.dump_name + "." + suffix;
  }

  const int threads_;
  double lower_ms_ = 0, passes_ms_ = 0, llvm_ms_ = 0;
};

}  // namespace

std::unique_ptr<runtime::Kernel> compile_cpu(const Program& p, const CompileOptions& options) {
  std::optional<ObjectCacheEntry> disk;
  if (!options.cache_dir.empty() && !options.cache_key.empty()) disk.emplace(options.cache_dir, options.cache_key);
  // A cached object whose symbols do not all resolve here (a libmvec function an older glibc
  // lacks) is a miss: compiled again, the kernel avoids it.
  // A hit needs no MLIR at all (not even the context): only the linker.
  if (disk)
    if (std::optional<std::string> object = disk->read(); object && unresolved_symbols(*object).empty()) {
      profiler::Scope prof("llvm", "link (from the disk cache)");
      std::unique_ptr<runtime::Kernel> k = link_object(*object, "the program\n" + p.str());
      k->from_disk_cache = true;
      return k;
    }

  CpuPipeline pipeline(p, options);
  const ObjectCode object = pipeline.object();
  if (disk) disk->write(object.bytes);
  return pipeline.link(object.bytes);
}

std::string compile_object_cpu(const Program& p, const CompileOptions& options, const std::string& entry) {
  CpuPipeline pipeline(p, options);
  return pipeline.object(entry).bytes;
}

}  // namespace fluxion::lowering
