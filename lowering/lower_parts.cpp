// A large program with library calls becomes several functions: @kernel allocates the buffers
// that pass between parts and calls one function per part, each a run of eqns that starts at a
// library call (lower_program.cpp's lower_function builds it as it builds a whole kernel).
//
// Why: MLIR's function-wide passes are superlinear in the size of one function. A jitted
// `grad(grad(...))` of an unrolled spectral PDE loop (an FFT every six eqns) took 25 s to compile
// at 20 RK4 steps -- One-Shot Bufferize's alias analysis, SCF-to-CF's block splitting and the
// deallocation simplification each grew with the function. Cut into parts of a bounded size,
// each pass costs the same per part, so compile time grows linearly with the program. A cut loses
// no fusion: the elementwise code cannot fuse across the library call it stands before anyway.
// Programs without library calls (which fuse into few loops and already compile in linear time)
// and small programs stay one function.
#include <mlir/Dialect/MemRef/IR/MemRef.h>

#include <cstdlib>
#include <string>

#include "ir/settings.h"
#include "lowering/lower.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

// A part holds at least this many eqns (then is cut before its next library call): small enough
// that a part's superlinear passes stay cheap, large enough that the per-function costs do not
// dominate (measured in bench/bench_compile.cpp's "spectral" row). FLUXION_KERNEL_PARTS=N sets
// it; 0 makes every kernel one function (the A/B of that row).
size_t part_eqns() {
  return size_t(integer_setting("FLUXION_KERNEL_PARTS", 128));
}

// Where each part starts (indices into p.eqns): the first at 0, every next at the first library
// call at least min_eqns eqns after the previous start.
std::vector<size_t> part_starts(std::span<const Eqn> eqns, size_t min_eqns) {
  std::vector<size_t> starts{0};
  for (size_t i = 0; i < eqns.size(); ++i)
    if (i - starts.back() >= min_eqns && is_library_call(eqns[i])) starts.push_back(i);
  return starts;
}

// The parts' functions: which vars each reads from outside (kernel inputs or earlier parts) and
// which it writes for later parts; the last one writes the program's outputs.
std::vector<FunctionView> part_views(const Program& p, const FunctionView& whole, const std::vector<size_t>& starts) {
  const int n = int(starts.size());
  std::vector<int> defined_in(p.types.size(), -1), last_use(p.types.size(), -1);
  std::vector<FunctionView> parts(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    const size_t end = k + 1 < n ? starts[size_t(k + 1)] : whole.eqns.size();
    parts[size_t(k)].eqns = whole.eqns.subspan(starts[size_t(k)], end - starts[size_t(k)]);
  }
  // Inputs: in order of first use; `seen` stamps a var with the last part that listed it.
  std::vector<int> seen(p.types.size(), -1);
  auto read = [&](int k, const Atom& a) {
    if (a.is_literal()) return;
    const size_t v = size_t(a.var);
    last_use[v] = std::max(last_use[v], k);
    if (defined_in[v] != k && seen[v] != k) {
      seen[v] = k;
      parts[size_t(k)].ins.push_back(a.var);
    }
  };
  for (int k = 0; k < n; ++k)
    for (const Eqn& e : parts[size_t(k)].eqns) {
      for (const Atom& a : e.inputs) read(k, a);
      for (int32_t v : e.outputs) defined_in[size_t(v)] = k;
    }
  for (const Atom& a : whole.outs) read(n - 1, a);
  parts.back().outs = whole.outs;
  for (int k = 0; k + 1 < n; ++k)
    for (const Eqn& e : parts[size_t(k)].eqns)
      for (int32_t v : e.outputs)
        if (last_use[size_t(v)] > k) parts[size_t(k)].outs.push_back(v);
  return parts;
}

}  // namespace

bool lower_in_parts(LowerCtx& c, const Program& p, const FunctionView& whole) {
  const size_t min_eqns = part_eqns();
  if (min_eqns == 0) return false;
  const std::vector<size_t> starts = part_starts(whole.eqns, min_eqns);
  if (starts.size() < 2) return false;
  const std::vector<FunctionView> parts = part_views(p, whole, starts);

  MLIRContext* ctx = c.b.getContext();
  OpBuilder& b = c.b;
  Block* entry = &add_function(c, p, whole, "kernel").getBody().front();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  const Location loc = b.getUnknownLoc();

  std::vector<Value> buffers(p.types.size());
  for (size_t i = 0; i < whole.ins.size(); ++i) buffers[size_t(whole.ins[i])] = entry->getArgument(unsigned(i));
  for (size_t k = 0; k < parts.size(); ++k) {
    const FunctionView& part = parts[k];
    SmallVector<Value> operands;
    for (int32_t v : part.ins) operands.push_back(buffers[size_t(v)]);
    if (k + 1 < parts.size()) {
      for (const Atom& a : part.outs) {
        Value& buffer = buffers[size_t(a.var)];
        buffer = b.create<memref::AllocOp>(loc, buffer_type(ctx, p.type(a.var)), b.getI64IntegerAttr(64));
        operands.push_back(buffer);
      }
    } else {
      for (size_t i = 0; i < whole.outs.size(); ++i) operands.push_back(entry->getArgument(unsigned(whole.ins.size() + i)));
    }
    func::FuncOp fn = lower_function(c, p, part, "kernel_part_" + std::to_string(k));
    fn.setPrivate();
    fn->setAttr(kPartAttr, b.getUnitAttr());
    b.create<func::CallOp>(loc, fn, operands);
  }
  b.create<func::ReturnOp>(loc);
  return true;
}

}  // namespace fluxion::lowering
