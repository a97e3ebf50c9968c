// The CUDA pipeline: the second visible list of stages beside the CPU one (pipeline_cpu.cpp), with
// the same dumps under FLUXION_DUMP.
//
//   check      every primitive is one the GPU pipeline lowers, else CompileError naming it and the
//              user's line (never a silent CPU fallback)
//   lower      Program -> func + linalg on tensors (lower_program.cpp, shared with the CPU)   .input.mlir
//   fuse       the CPU's fusion passes (elementwise producers into consumers)                 .fused.mlir
//   map        bufferize; linalg -> scf.parallel; serial leftovers into one-thread loops;
//              tile 1x..x256; parallel loops -> gpu.launch; outline the kernels               .gpu.mlir
//   ptx        NVVM, then gpu-module-to-binary{format=isa}: NVPTX code generation with libdevice
//              for the math functions                                                          .ptx
//   plan       read the host function: temporaries (memref.alloc) and, per gpu.launch_func, the
//              kernel's name, grid, block and which buffer each parameter is (runtime/gpu_program.h);
//              a launch over a GPU limit is a CompileError
//   emulate    only under the emulated GPU (FLUXION_CUDA_DRIVER=emulate): each kernel, copied
//              after `map` (before NVVM), as host code registered under its PTX   .<module>.emu.mlir
//              (gpu_emulation.h)
//
// What this does not do yet (docs/gpu.md): vectorized loads, control flow inside a program, the
// decompositions, fft; convolutions are a thread per output element (no tensor cores yet), a sort
// a thread per line.
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/GPU/IR/GPUDialect.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/IR/Diagnostics.h>
#include <mlir/IR/Matchers.h>
#include <mlir/IR/Verifier.h>
#include <mlir/Interfaces/ViewLikeInterface.h>
#include <mlir/Parser/Parser.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>

#include "ir/error.h"
#include "ir/profiler.h"
#include "lowering/compile_cuda.h"
#include "lowering/gpu_emulation.h"
#include "lowering/lower.h"
#include "lowering/mlir_session.h"
#include "lowering/passes.h"
#include "lowering/pipeline_state.h"
#include "lowering/tiling.h"
#include "prims/registry.h"
#include "runtime/cuda_driver.h"

#include "fluxion_cuda_config.h"  // FLUXION_CUDA_HOME: the toolkit meson found, or "" (meson.build)

namespace fluxion::lowering {

using namespace mlir;

namespace {

// What the primitive's record says (prims/registry.h, `gpu`): each is checked through ptxas and run
// on the emulated GPU by the op-table tests (tests/test_gpu_ptx.cpp); any other raises CompileError.
bool gpu_lowers(Prim p) { return rules(p).gpu != GpuLowering::none; }

// After the CPU's fusion passes (kFusionPasses, passes.h): bufferize without freeing (the runtime
// owns temporaries: each memref.alloc left in the host function is one), make every op a parallel
// loop, and map the loops to blocks and threads.
const char* kMapToGpu =
    "canonicalize,cse,"
    "func.func(fx-gpu-constants),"
    "empty-tensor-to-alloc-tensor,"
    "one-shot-bufferize{allow-return-allocs-from-loops},"
    "scf-forall-to-parallel,"  // lines in parallel (gpu_lines.h)
    "canonicalize,cse,"
    "canonicalize,"  // a line's copy into itself, its two views one value after cse, folds away
    "func.func(fx-gpu-copies),"
    "func.func(fx-gpu-rows),"
    "func.func(fx-gpu-columns),"
    "func.func(convert-linalg-to-parallel-loops),"
    "func.func(fx-gpu-parallel),"
    "func.func(gpu-map-parallel-loops),"
    "func.func(convert-parallel-loops-to-gpu),"
    "canonicalize,cse,"
    "func.func(fx-gpu-sink-scalars),"
    "gpu-kernel-outlining,"
    "gpu.module(expand-strided-metadata),"  // a view made in a kernel (a line: gpu_lines.h)
    "lower-affine,canonicalize,cse";

// The kernels to PTX for sm_90 (H100/H200), with libdevice from the toolkit for the math.
std::string to_ptx_passes(const std::string& chip, const std::string& toolkit) {
  return "nvvm-attach-target{chip=" + chip + " features=+ptx80 O=3},"
         "gpu.module(fx-gpu-math,convert-scf-to-cf,arith-expand{include-bf16=1},"
         "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},convert-math-to-llvm,canonicalize,cse,"
         "reconcile-unrealized-casts),"
         "gpu-module-to-binary{format=isa toolkit=" + toolkit + "}";
}

class CudaPipeline : PipelineState {
 public:
  CudaPipeline(const Program& p, const CompileOptions& o) : PipelineState(p, o, "jit for the GPU", "cuda.") {}

  runtime::GpuProgram compile() {
    check();
    {
      profiler::Scope prof("mlir", "lower to MLIR");
      // Every float GEMM dot_general the CPU could give Eigen goes to the GPU's library (cuBLAS),
      // whatever its size: a library step of the plan (library_step).
      CompileOptions o = options_;
      o.matmul = MatmulPath::gpu_library;
      module_ = lower_program(session_.context, program_, o);
      dump_module("input.mlir");
    }
    profiler::Scope prof("mlir", "GPU passes and PTX");
    run(kFusionPasses, "fusion");
    dump_module("fused.mlir");
    // A buffer per result: bufferization would otherwise reuse one (softmax's max for its sum),
    // and a row kernel (gpu_rows.cpp) can then neither recompute a temporary from it nor keep
    // its members apart without barriers.
    untie_empty_tensors(*module_);
    run(kMapToGpu, "mapping to the GPU");
    dump_module("gpu.mlir");
    std::vector<EmulationSource> kernels;
    if (runtime::cuda::emulating()) kernels = copy_gpu_modules(*module_);
    record_signatures();
    run(to_ptx_passes(gpu_chip(), cuda_toolkit_path()), "NVVM and PTX generation");
    runtime::GpuProgram out = plan();
    for (const runtime::GpuModule& m : out.modules) dump((m.name + ".ptx").c_str(), m.ptx);
    for (EmulationSource& k : kernels) emulate(k, out);
    return out;
  }

  // Hand-written gpu.modules: the `ptx` and `emulate` stages only.
  runtime::GpuProgram compile_kernels(const std::string& text) {
    module_ = parseSourceString<ModuleOp>(text, &session_.context);
    if (!module_) fail("parsing the hand-written kernels");
    std::vector<EmulationSource> kernels;
    if (runtime::cuda::emulating()) kernels = copy_gpu_modules(*module_);
    record_signatures();
    run(to_ptx_passes(gpu_chip(), cuda_toolkit_path()), "NVVM and PTX generation");
    runtime::GpuProgram out;
    out.target = gpu_chip();
    read_modules(out);
    for (const runtime::GpuModule& m : out.modules) dump((m.name + ".ptx").c_str(), m.ptx);
    for (EmulationSource& k : kernels) emulate(k, out);
    return out;
  }

 private:
  void check() const {
    for (const Eqn& e : program_.eqns) {
      if (gpu_lowers(e.prim)) continue;
      std::vector<AbstractArray> in;
      for (const Atom& a : e.inputs) in.push_back(program_.aval(a));
      op_error(ErrorKind::Compile, "jit", in, e.loc,
               "the primitive '" + std::string(prim_name(e.prim)) +
                   "' has no GPU lowering yet (docs/gpu.md lists what has); it is not run on the CPU instead");
    }
  }

  // The kernel as host code for the emulated GPU, registered under its module's PTX.
  void emulate(EmulationSource& kernel, runtime::GpuProgram& out) {
    profiler::Scope prof("mlir", "host code for the emulated GPU");
    auto it = std::find_if(out.modules.begin(), out.modules.end(), [&](const auto& m) { return m.name == kernel.name; });
    if (it == out.modules.end()) fail("finding the PTX of " + kernel.name + " for the emulated GPU");
    auto host = compile_for_emulation(kernel, diagnostics_, [&](const std::string& suffix, const std::string& text) {
      dump(suffix.c_str(), text);
    });
    if (!host) fail("compiling " + kernel.name + " for the emulated GPU");
    runtime::cuda::emulator::register_module(it->ptx, host);
    it->host_code = host;
  }

  // A launch no GPU would run (the limits the emulated GPU checks too, runtime/cuda_emulator.h).
  void check_limits(const runtime::GpuLaunch& l) const {
    const uint64_t threads = uint64_t(l.block[0]) * l.block[1] * l.block[2];
    const bool ok = threads <= 1024 && l.block[0] <= 1024 && l.block[1] <= 1024 && l.block[2] <= 64 &&
                    l.grid[0] < (uint64_t(1) << 31) && l.grid[1] <= 65535 && l.grid[2] <= 65535;
    if (ok) return;
    const auto three = [](const std::array<uint32_t, 3>& d) {
      return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ")";
    };
    throw CompileError("CompileError: jit for the GPU: the launch of " + l.kernel + " needs grid " + three(l.grid) +
                       " x block " + three(l.block) + ", over a GPU's limits (block 1024 x 1024 x 64 and 1024 threads, "
                       "grid 2^31-1 x 65535 x 65535), for the program\n" + program_.str());
  }

  // Each gpu.module's kernel type, by module name, before the NVVM conversion erases its memref
  // types: read_modules writes it into the PTX as a comment. The emulated GPU finds a module's host
  // code by its PTX, and two kernels differing only in their buffers' static shapes can compile to
  // the same PTX (a fill of 512 floats in 2 blocks and one of 1024 in 4: the extent is the launch's,
  // not the code's) -- then one ran with the other's shapes and bounds checks.
  void record_signatures() {
    module_->walk([&](gpu::GPUFuncOp f) {
      if (!f.isKernel()) return;
      std::string type;
      llvm::raw_string_ostream os(type);
      os << f.getFunctionType();
      signatures_[f->getParentOfType<gpu::GPUModuleOp>().getName().str()] = os.str();
    });
  }

  // The PTX of each gpu.binary, by module name.
  std::map<std::string, int> read_modules(runtime::GpuProgram& out) {
    std::map<std::string, int> module_index;
    module_->walk([&](gpu::BinaryOp bin) {
      for (Attribute a : bin.getObjectsAttr()) {  // one object: the one target attached
        StringRef bytes = cast<gpu::ObjectAttr>(a).getObject().getValue();
        if (!bytes.empty() && bytes.back() == '\0') bytes = bytes.drop_back();  // ptxas rejects the NUL
        std::string ptx = bytes.str();
        if (auto s = signatures_.find(bin.getSymName().str()); s != signatures_.end())
          ptx += "\n// the kernel before NVVM: " + s->second + "\n";
        module_index[bin.getSymName().str()] = int(out.modules.size());
        out.modules.push_back({bin.getSymName().str(), std::move(ptx), nullptr});
      }
    });
    return module_index;
  }

  std::map<std::string, std::string> signatures_;

  // A library call's wrapper (lower_library.cpp: it stores the call's integers and its operands'
  // addresses into an array and calls the runtime's function with it) as a library step: the
  // integers, with each address a parameter, the wrapper's operands.
  runtime::GpuLaunch library_step(func::CallOp call, const std::function<runtime::GpuParam(Value)>& param) {
    auto wrapper = module_->lookupSymbol<func::FuncOp>(call.getCallee());
    runtime::GpuLaunch step;
    step.kind = runtime::GpuLaunch::Kind::library;
    for (Value v : call.getOperands()) step.params.push_back(param(v));
    auto refuse = [&](Operation* at) {
      at->emitError("a library call's wrapper of an unexpected form");
      fail("planning a library call");
    };
    if (!wrapper || wrapper.isExternal()) refuse(call);
    wrapper.walk([&](Operation* op) {
      if (auto inner = dyn_cast<func::CallOp>(op)) step.kernel = inner.getCallee().str();
      auto store = dyn_cast<memref::StoreOp>(op);
      if (!store) return;
      llvm::APInt at;
      if (store.getIndices().size() != 1 || !matchPattern(store.getIndices()[0], m_ConstantInt(&at))) refuse(op);
      const size_t i = at.getZExtValue();
      if (step.call_args.size() <= i) step.call_args.resize(i + 1);
      llvm::APInt value;
      Value v = store.getValueToStore();
      if (matchPattern(v, m_ConstantInt(&value))) {
        step.call_args[i].value = value.getSExtValue();
      } else if (auto cast = v.getDefiningOp<arith::IndexCastOp>()) {
        auto ptr = cast.getIn().getDefiningOp<memref::ExtractAlignedPointerAsIndexOp>();
        auto arg = ptr ? dyn_cast<BlockArgument>(ptr.getSource()) : BlockArgument();
        if (!arg) refuse(op);
        step.call_args[i].param = int(arg.getArgNumber());
      } else {
        refuse(op);
      }
    });
    if (step.kernel.empty()) refuse(wrapper);
    return step;
  }

  // The host function after the passes: constants, temporaries, launches and library calls only.
  runtime::GpuProgram plan() {
    runtime::GpuProgram out;
    out.target = gpu_chip();
    std::map<std::string, int> module_index = read_modules(out);
    auto fn = module_->lookupSymbol<func::FuncOp>("kernel");
    out.num_buffers = int(fn.getNumArguments());
    std::map<Operation*, int> temporaries;
    auto param = [&](Value v, gpu::LaunchFuncOp l) {
      // A view (reshape, cast, subview) passes its source's pointer: with bare pointers the
      // kernel's memref type carries the static offset and strides itself.
      while (auto view = v.getDefiningOp<ViewLikeOpInterface>()) v = view.getViewSource();
      if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner()->getParentOp() == fn)
        return runtime::GpuParam{runtime::GpuParam::Kind::buffer, int(arg.getArgNumber())};
      if (auto it = temporaries.find(v.getDefiningOp()); it != temporaries.end())
        return runtime::GpuParam{runtime::GpuParam::Kind::temporary, it->second};
      if (l) l.emitError("a kernel parameter that is neither a buffer nor a temporary");
      fail("reading the launches");
    };
    auto dim = [&](Value v, gpu::LaunchFuncOp l) {
      llvm::APInt x;
      if (!matchPattern(v, m_ConstantInt(&x))) {
        l.emitError("a launch dimension that is not a constant");
        fail("reading the launches");
      }
      return uint32_t(x.getZExtValue());
    };
    for (Operation& op : fn.getBody().front()) {
      if (isa<arith::ConstantOp, func::ReturnOp, ViewLikeOpInterface>(op)) continue;
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        auto t = alloc.getType();
        if (!t.hasStaticShape()) fail("planning a temporary of dynamic shape");
        temporaries[&op] = int(out.temporary_bytes.size());
        out.temporary_bytes.push_back(size_t(t.getNumElements()) * std::max<size_t>(1, t.getElementTypeBitWidth() / 8));
        continue;
      }
      if (auto l = dyn_cast<gpu::LaunchFuncOp>(op)) {
        runtime::GpuLaunch launch;
        launch.kernel = l.getKernelName().str();
        auto m = module_index.find(l.getKernelModuleName().str());
        if (m == module_index.end()) fail("finding the PTX of " + l.getKernelModuleName().str());
        launch.module = m->second;
        launch.grid = {dim(l.getGridSizeX(), l), dim(l.getGridSizeY(), l), dim(l.getGridSizeZ(), l)};
        launch.block = {dim(l.getBlockSizeX(), l), dim(l.getBlockSizeY(), l), dim(l.getBlockSizeZ(), l)};
        if (Value s = l.getDynamicSharedMemorySize()) launch.shared_bytes = dim(s, l);
        for (Value v : l.getKernelOperands()) launch.params.push_back(param(v, l));
        check_limits(launch);
        out.launches.push_back(std::move(launch));
        continue;
      }
      if (auto call = dyn_cast<func::CallOp>(op); call && call.getCallee().starts_with("fx_libcall_")) {
        out.launches.push_back(library_step(call, [&](Value v) { return param(v, {}); }));
        continue;
      }
      op.emitError("this operation was left on the host: ") << op.getName();
      fail("planning the launches");
    }
    return out;
  }
};

}  // namespace

std::string cuda_toolkit_path() {
  const char* env = std::getenv("FLUXION_CUDA_HOME");
  return env && *env ? env : FLUXION_CUDA_HOME;
}

std::string gpu_chip() {
  const char* env = std::getenv("FLUXION_GPU_ARCH");
  return env && *env ? env : "sm_90";
}

bool gpu_lowers_primitive(Prim p) { return gpu_lowers(p); }

namespace {
void require_toolkit() {
  if (cuda_toolkit_path().empty())
    throw CompileError("CompileError: jit for the GPU: this build of Fluxion has no CUDA toolkit (meson -Dcuda=enabled "
                       "with the toolkit installed, or FLUXION_CUDA_HOME naming one), so no libdevice for PTX generation");
}
}  // namespace

runtime::GpuProgram compile_cuda(const Program& p, const CompileOptions& options) {
  require_toolkit();
  return CudaPipeline(p, options).compile();
}

runtime::GpuProgram compile_cuda_kernels(const std::string& mlir, const CompileOptions& options) {
  require_toolkit();
  static const Program none;
  return CudaPipeline(none, options).compile_kernels(mlir);
}

}  // namespace fluxion::lowering
