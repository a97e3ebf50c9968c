// The GPU pipeline's kernels as host code for the emulated GPU (gpu_emulation.h says what and why).
#include "lowering/gpu_emulation.h"

#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/GPU/IR/GPUDialect.h>
#include <mlir/Dialect/GPU/Transforms/Passes.h>
#include <mlir/Dialect/LLVMIR/LLVMDialect.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/IR/Verifier.h>
#include <mlir/Interfaces/ViewLikeInterface.h>
#include <mlir/Transforms/GreedyPatternRewriteDriver.h>

#include "lowering/codegen_cpu.h"
#include "lowering/mlir_session.h"
#include "lowering/passes.h"
#include "lowering/to_llvm_passes.h"

namespace fluxion::lowering {

using namespace mlir;
namespace emu = runtime::cuda::emulator;

namespace {

constexpr int kIds = 12;  // thread x y z, block x y z, block dims x y z, grid dims x y z

std::string text(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

MemRefType without_memory_space(MemRefType t) {
  return MemRefType::get(t.getShape(), t.getElementType(), t.getLayout(), Attribute());
}

size_t element_bytes(Type t) {
  if (t.isIndex()) return 8;
  if (auto c = dyn_cast<ComplexType>(t)) return 2 * element_bytes(c.getElementType());
  return std::max<size_t>(1, (t.getIntOrFloatBitWidth() + 7) / 8);
}

// The bytes from a memref's pointer to the end of the last element it reaches.
size_t extent_bytes(MemRefType t) {
  if (t.getNumElements() == 0) return 0;
  auto [strides, offset] = getStridesAndOffset(t);
  int64_t last = offset;
  for (size_t d = 0; d < strides.size(); ++d) last += (t.getDimSize(d) - 1) * strides[d];
  return size_t(last + 1) * element_bytes(t.getElementType());
}

func::FuncOp declare(ModuleOp m, StringRef name, FunctionType type) {
  if (auto f = m.lookupSymbol<func::FuncOp>(name)) return f;
  OpBuilder b(m.getBodyRegion());
  b.setInsertionPointToEnd(m.getBody());
  auto f = b.create<func::FuncOp>(m.getLoc(), name, type);
  f.setPrivate();
  return f;
}

// The host function of one kernel, under construction.
struct HostFunction {
  ModuleOp module;
  func::FuncOp fn;
  emu::HostKernel& info;
  unsigned num_params = 0, num_shared = 0;
  Value context;
  SmallVector<Value, kIds> ids;

  Value id(int base, gpu::Dimension d) const { return ids[size_t(base + int(d))]; }
  Value call(OpBuilder& b, Location loc, StringRef name, ValueRange args, TypeRange results) {
    SmallVector<Type> inputs;
    for (Value a : args) inputs.push_back(a.getType());
    func::FuncOp callee = declare(module, name, b.getFunctionType(inputs, results));
    auto c = b.create<func::CallOp>(loc, callee, args);
    return results.empty() ? Value() : c.getResult(0);
  }
};

// gpu.func -> func.func @kernel: the parameters, then the workgroup buffers, the ids, the context.
HostFunction make_host_function(ModuleOp m, gpu::GPUFuncOp f, emu::HostKernel& info) {
  OpBuilder b(m.getBodyRegion());
  b.setInsertionPointToEnd(m.getBody());
  const Location loc = f.getLoc();
  const unsigned params = f.getNumArguments(), shared = f.getNumWorkgroupAttributions();
  const unsigned privates = f.getNumPrivateAttributions();
  SmallVector<Type> inputs(f.getArgumentTypes());
  for (Type t : inputs) {
    auto mt = dyn_cast<MemRefType>(t);
    info.params.push_back(mt ? emu::HostParam{true, extent_bytes(mt), text(t)} : emu::HostParam{false, element_bytes(t), text(t)});
  }
  for (BlockArgument a : f.getWorkgroupAttributions()) {
    auto t = cast<MemRefType>(a.getType());
    info.shared_buffers.push_back(extent_bytes(t));
    inputs.push_back(without_memory_space(t));
  }
  inputs.append(kIds, b.getIndexType());
  inputs.push_back(LLVM::LLVMPointerType::get(b.getContext()));
  auto fn = b.create<func::FuncOp>(loc, "kernel", b.getFunctionType(inputs, {}));
  fn.getBody().takeBody(f.getBody());
  Block& entry = fn.getBody().front();
  OpBuilder eb(&entry, entry.begin());
  for (unsigned i = 0; i < privates; ++i) {  // private attributions -> allocas
    BlockArgument a = entry.getArgument(params + shared);
    Value alloca = eb.create<memref::AllocaOp>(loc, without_memory_space(cast<MemRefType>(a.getType())));
    a.replaceAllUsesWith(alloca);
    entry.eraseArgument(params + shared);
  }
  HostFunction h{m, fn, info, params, shared, Value(), {}};
  for (int i = 0; i < kIds; ++i) h.ids.push_back(entry.addArgument(b.getIndexType(), loc));
  h.context = entry.addArgument(inputs.back(), loc);
  return h;
}

// A shuffle through fluxion_emu_shuffle: the value's bits as i64 there and back.
LogicalResult replace_shuffle(HostFunction& h, gpu::ShuffleOp op) {
  OpBuilder b(op);
  const Location loc = op.getLoc();
  Type t = op.getValue().getType();
  if (t.getIntOrFloatBitWidth() != 32) return op.emitError("the emulated GPU shuffles 32-bit values");
  Value bits = op.getValue();
  if (isa<FloatType>(t)) bits = b.create<arith::BitcastOp>(loc, b.getI32Type(), bits);
  bits = b.create<arith::ExtUIOp>(loc, b.getI64Type(), bits);
  emu::ShuffleMode mode = emu::ShuffleMode::idx;
  switch (op.getMode()) {
    case gpu::ShuffleMode::XOR: mode = emu::ShuffleMode::xor_; break;
    case gpu::ShuffleMode::UP: mode = emu::ShuffleMode::up; break;
    case gpu::ShuffleMode::DOWN: mode = emu::ShuffleMode::down; break;
    case gpu::ShuffleMode::IDX: mode = emu::ShuffleMode::idx; break;
  }
  Value m = b.create<arith::ConstantIntOp>(loc, int64_t(mode), 32);
  Value r = h.call(b, loc, "fluxion_emu_shuffle", {h.context, bits, op.getOffset(), op.getWidth(), m}, {b.getI64Type()});
  r = b.create<arith::TruncIOp>(loc, b.getI32Type(), r);
  if (isa<FloatType>(t)) r = b.create<arith::BitcastOp>(loc, t, r);
  Value valid = h.call(b, loc, "fluxion_emu_shuffle_valid", {h.context}, {b.getI32Type()});
  Value zero = b.create<arith::ConstantIntOp>(loc, 0, 32);
  valid = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, valid, zero);
  op.replaceAllUsesWith(ValueRange{r, valid});
  op.erase();
  h.info.synchronizes = true;
  return success();
}

// The thread's linear index within its block (x fastest), for lane and subgroup ids.
Value linear_thread(HostFunction& h, OpBuilder& b, Location loc) {
  auto x = h.id(0, gpu::Dimension::x), y = h.id(0, gpu::Dimension::y), z = h.id(0, gpu::Dimension::z);
  auto bx = h.id(6, gpu::Dimension::x), by = h.id(6, gpu::Dimension::y);
  Value zy = b.create<arith::AddIOp>(loc, y, b.create<arith::MulIOp>(loc, by, z));
  return b.create<arith::AddIOp>(loc, x, b.create<arith::MulIOp>(loc, bx, zy));
}

// Each gpu.* op of the body: ids -> arguments, barrier and shuffle -> the emulator's, return.
LogicalResult replace_gpu_ops(HostFunction& h) {
  SmallVector<Operation*> ops;
  h.fn.walk([&](Operation* op) {
    if (isa<gpu::GPUDialect>(op->getDialect())) ops.push_back(op);
  });
  for (Operation* op : ops) {
    OpBuilder b(op);
    const Location loc = op->getLoc();
    auto warp = [&] { return b.create<arith::ConstantIndexOp>(loc, 32).getResult(); };
    if (auto t = dyn_cast<gpu::ThreadIdOp>(op)) t.replaceAllUsesWith(h.id(0, t.getDimension()));
    else if (auto t = dyn_cast<gpu::BlockIdOp>(op)) t.replaceAllUsesWith(h.id(3, t.getDimension()));
    else if (auto t = dyn_cast<gpu::BlockDimOp>(op)) t.replaceAllUsesWith(h.id(6, t.getDimension()));
    else if (auto t = dyn_cast<gpu::GridDimOp>(op)) t.replaceAllUsesWith(h.id(9, t.getDimension()));
    else if (isa<gpu::SubgroupSizeOp>(op)) op->replaceAllUsesWith(ValueRange{warp()});
    else if (isa<gpu::LaneIdOp>(op))
      op->replaceAllUsesWith(ValueRange{b.create<arith::RemUIOp>(loc, linear_thread(h, b, loc), warp())});
    else if (isa<gpu::SubgroupIdOp>(op))
      op->replaceAllUsesWith(ValueRange{b.create<arith::DivUIOp>(loc, linear_thread(h, b, loc), warp())});
    else if (isa<gpu::ReturnOp>(op)) b.create<func::ReturnOp>(loc);
    else if (isa<gpu::BarrierOp>(op)) h.call(b, loc, "fluxion_emu_barrier", {h.context}, {}), h.info.synchronizes = true;
    else if (auto s = dyn_cast<gpu::ShuffleOp>(op)) {
      if (failed(replace_shuffle(h, s))) return failure();
      continue;
    } else {
      return op->emitError("the emulated GPU does not run ") << op->getName();
    }
    op->erase();
  }
  return success();
}

// Workgroup and private memrefs lose their memory space: on the host, memory is memory.
void strip_memory_spaces(func::FuncOp fn) {
  auto strip = [](Value v) {
    if (auto t = dyn_cast<MemRefType>(v.getType()); t && t.getMemorySpace()) v.setType(without_memory_space(t));
  };
  fn.walk([&](Operation* op) {
    for (Value r : op->getResults()) strip(r);
    for (Region& region : op->getRegions())
      for (Block& block : region)
        for (BlockArgument a : block.getArguments()) strip(a);
  });
  for (BlockArgument a : fn.getBody().front().getArguments()) strip(a);
}

// What an access reaches, for the fault's message: "store to parameter 2 (memref<30xf32>)".
std::string site_name(HostFunction& h, Operation* op, Value memref) {
  const char* verb = isa<memref::LoadOp>(op) ? "load from " : isa<memref::StoreOp>(op) ? "store to " : "atomic update of ";
  Value root = memref;
  while (auto view = root.getDefiningOp<ViewLikeOpInterface>()) root = view.getViewSource();
  std::string what = "a local buffer";
  if (auto a = dyn_cast<BlockArgument>(root); a && a.getOwner() == &h.fn.getBody().front()) {
    if (a.getArgNumber() < h.num_params) what = "parameter " + std::to_string(a.getArgNumber());
    else what = "shared buffer " + std::to_string(a.getArgNumber() - h.num_params);
  }
  return verb + what + " (" + text(memref.getType()) + ")";
}

// One access guarded: in the shape, it happens; outside, the emulator hears of every index (it
// keeps those out of range) and a load yields zero.
LogicalResult guard_access(HostFunction& h, Operation* op, Value memref, ValueRange indices) {
  auto type = cast<MemRefType>(memref.getType());
  if (indices.empty()) return success();
  OpBuilder b(op);
  const Location loc = op->getLoc();
  const int64_t site = int64_t(h.info.sites.size());
  h.info.sites.push_back(site_name(h, op, memref));
  Value ok = b.create<arith::ConstantIntOp>(loc, 1, 1);
  SmallVector<Value> sizes;
  for (size_t d = 0; d < indices.size(); ++d) {
    sizes.push_back(type.isDynamicDim(d) ? b.create<memref::DimOp>(loc, memref, int64_t(d)).getResult()
                                         : b.create<arith::ConstantIndexOp>(loc, type.getDimSize(d)).getResult());
    ok = b.create<arith::AndIOp>(loc, ok, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, indices[d], sizes.back()));
  }
  Type result = op->getNumResults() ? op->getResult(0).getType() : Type();
  TypedAttr zero = result ? dyn_cast_or_null<TypedAttr>(b.getZeroAttr(result)) : TypedAttr();
  if (result && !zero) return op->emitError("the emulated GPU cannot check an access of ") << result;
  auto guard = b.create<scf::IfOp>(loc, result ? TypeRange{result} : TypeRange{}, ok, /*withElseRegion=*/true);
  OpBuilder in = guard.getThenBodyBuilder();
  Operation* access = in.clone(*op);
  if (result) in.create<scf::YieldOp>(loc, access->getResult(0));
  OpBuilder out = guard.getElseBodyBuilder();
  Value s = out.create<arith::ConstantIndexOp>(loc, site);
  for (size_t d = 0; d < indices.size(); ++d) {
    Value dim = out.create<arith::ConstantIndexOp>(loc, int64_t(d));
    h.call(out, loc, "fluxion_emu_out_of_bounds", {h.context, s, dim, indices[d], sizes[d]}, {});
  }
  if (result) {
    out.create<scf::YieldOp>(loc, out.create<arith::ConstantOp>(loc, zero).getResult());
    op->getResult(0).replaceAllUsesWith(guard.getResult(0));
  }
  op->erase();
  return success();
}

LogicalResult guard_accesses(HostFunction& h) {
  SmallVector<Operation*> ops;
  h.fn.walk([&](Operation* op) {
    if (isa<memref::LoadOp, memref::StoreOp, memref::AtomicRMWOp>(op)) ops.push_back(op);
  });
  for (Operation* op : ops) {
    LogicalResult r = success();
    if (auto l = dyn_cast<memref::LoadOp>(op)) r = guard_access(h, op, l.getMemRef(), l.getIndices());
    else if (auto s = dyn_cast<memref::StoreOp>(op)) r = guard_access(h, op, s.getMemRef(), s.getIndices());
    else if (auto a = dyn_cast<memref::AtomicRMWOp>(op)) r = guard_access(h, op, a.getMemref(), a.getIndices());
    if (failed(r)) return failure();
  }
  return success();
}

// The module's one kernel as func.func @kernel, with everything but the math in host terms.
LogicalResult to_host_form(ModuleOp m, emu::HostKernel& info) {
  SmallVector<gpu::GPUModuleOp> modules(m.getOps<gpu::GPUModuleOp>());
  if (modules.size() != 1) return m.emitError("the emulation expects one gpu.module");
  gpu::GPUModuleOp gm = modules.front();
  SmallVector<gpu::GPUFuncOp> kernels(gm.getOps<gpu::GPUFuncOp>());
  if (kernels.size() != 1) return gm.emitError("the emulation expects one kernel per gpu.module");
  gpu::GPUFuncOp kernel = kernels.front();
  info.name = kernel.getName().str();
  {  // MLIR's GPU rewrites (all_reduce, global ids, 64-bit shuffles) and the PTX path's math
     // expansions, on the gpu.module: the all_reduce rewrite matches the gpu.func itself
    RewritePatternSet patterns(m.getContext());
    populateGpuRewritePatterns(patterns);
    populate_gpu_math_patterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(gm, std::move(patterns)))) return gm.emitError("GPU rewrites failed");
  }
  // The module's other functions (libm declarations) move out of the gpu.module beside the kernel.
  for (Operation& op : llvm::make_early_inc_range(gm.getBody()->getOperations()))
    if (isa<func::FuncOp>(op)) op.moveBefore(m.getBody(), m.getBody()->end());
  HostFunction h = make_host_function(m, kernel, info);
  gm.erase();
  if (failed(replace_gpu_ops(h))) return failure();
  strip_memory_spaces(h.fn);
  if (failed(guard_accesses(h))) return failure();
  return verify(m);
}

}  // namespace

std::vector<EmulationSource> copy_gpu_modules(ModuleOp m) {
  std::vector<EmulationSource> out;
  for (gpu::GPUModuleOp gm : m.getOps<gpu::GPUModuleOp>()) {
    OpBuilder b(m.getContext());
    EmulationSource s{gm.getName().str(), OwningOpRef<ModuleOp>(ModuleOp::create(gm.getLoc()))};
    b.setInsertionPointToEnd(s.module->getBody());
    b.clone(*gm.getOperation());
    out.push_back(std::move(s));
  }
  return out;
}

std::shared_ptr<const emu::HostModule> compile_for_emulation(
    EmulationSource& source, std::string& diagnostics, const std::function<void(const std::string&, const std::string&)>& dump) {
  auto host = std::make_shared<emu::HostModule>();
  emu::HostKernel info;
  ModuleOp m = *source.module;
  if (failed(to_host_form(m, info))) return nullptr;
  if (dump) {
    std::string s;
    llvm::raw_string_ostream os(s);
    m.print(os);
    dump(source.name + ".emu.mlir", s);
  }
  PassManager* pm = pass_manager("canonicalize,cse," + to_llvm_passes({}), diagnostics);
  if (!pm || failed(pm->run(m)) || failed(verify(m))) return nullptr;
  const ObjectCode object = emit_object(m, /*opt_level=*/0);
  std::unique_ptr<runtime::Kernel> kernel = link_object(object.bytes, "the emulated kernel " + source.name);
  info.run = kernel->packed;
  host->kernels.push_back(std::move(info));
  host->code.push_back(std::shared_ptr<const void>(std::move(kernel)));
  return host;
}

}  // namespace fluxion::lowering
