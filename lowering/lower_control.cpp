// Lowerings of the control-flow primitives (prims/control.cpp) to scf ops. Each sub-program is
// lowered in place, inside its region, by the same per-eqn rules as the kernel (lower_subprogram),
// so branches and bodies may hold any lowered primitive, control flow included. Carries are
// tensors threaded through the region arguments and yielded as the body computed them: the
// pipeline bufferizes with allow-return-allocs-from-loops, so a step may hand the next one a fresh
// buffer (freed by the deallocation pipeline) instead of copying it back into the carry's buffer,
// and a yielded value that aliases something outside the loop is copied by bufferization itself
// (scalars end up in registers after the LLVM passes).
//   cond   two branches: scf.if on index != 0; more (switch_): scf.index_switch on the branch
//          index clamped to [0, n-1] (the last branch is the default case); one branch: inlined
//   while  scf.while: the before region lowers the condition on the carry and ends in
//          scf.condition; the after region lowers the body and yields the new carry
//   scan   scf.for over the length with iter_args = carry + the stacked ys; each step slices
//          xs[t] (a rank-reducing tensor.extract_slice), lowers the body and inserts the y rows at
//          t (t = n-1-step when reverse). Length 0: no loop, the carry passes through and the ys
//          (which have no elements) are empty tensors.
#include <mlir/Dialect/SCF/IR/SCF.h>

#include <algorithm>

#include "ir/dim_expr.h"
#include "lowering/lower.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

const Program& sub(const Params& p, const char* key) { return *p.get<ProgramRef>(key); }
size_t count(const Params& p, const char* key) { return size_t(p.get_int(key)); }

std::vector<Value> tensors(LowerCtx& c, std::span<const Operand> in) {
  std::vector<Value> r;
  for (const Operand& o : in) r.push_back(as_tensor(c, o));
  return r;
}

SmallVector<Type> types_of(LowerCtx& c, std::span<const AbstractArray> avals) {
  SmallVector<Type> r;
  for (const AbstractArray& a : avals) r.push_back(tensor_type(c.b.getContext(), a));
  return r;
}

std::vector<Value> concat(std::vector<Value> a, ValueRange b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The temporaries a loop body computes into start as tensor.empty. Without a mark, cse replaces
// them by an identical tensor.empty before the loop (the init of a zero carry, say), the body then
// writes into one buffer allocated outside the loop, and yielding it costs a copy per step. The
// discardable attribute makes them differ from every empty outside a loop body.
void keep_empties_in_loop(Region& body) {
  body.walk([](tensor::EmptyOp e) { e->setAttr("fx.loop_local", UnitAttr::get(e.getContext())); });
}

// ---- cond ---------------------------------------------------------------------------------------
// The reference: branch clamp(int64(index), 0, n-1).
Value clamped_branch(LowerCtx& c, const Operand& index, int64_t n) {
  OpBuilder& b = c.b;
  Value v = index.scalar ? index.value : Value(b.create<tensor::ExtractOp>(c.loc, index.value, ValueRange{}));
  if (v.getType().getIntOrFloatBitWidth() < 64)
    v = is_signed_int(index.aval.dtype) ? Value(b.create<arith::ExtSIOp>(c.loc, b.getI64Type(), v))
                                        : Value(b.create<arith::ExtUIOp>(c.loc, b.getI64Type(), v));
  auto i64c = [&](int64_t k) -> Value { return b.create<arith::ConstantOp>(c.loc, b.getI64IntegerAttr(k)); };
  v = b.create<arith::MaxSIOp>(c.loc, v, i64c(0));
  v = b.create<arith::MinSIOp>(c.loc, v, i64c(n - 1));
  return b.create<arith::IndexCastOp>(c.loc, b.getIndexType(), v);
}

std::vector<Value> cond_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  const ProgramList& branches = e.params.get<ProgramList>("branches");
  const std::vector<Value> ops = tensors(c, in.subspan(1));
  if (branches.size() == 1) return lower_subprogram(c, *branches[0], ops);
  OpBuilder& b = c.b;
  const int64_t n = int64_t(branches.size());
  Value index = clamped_branch(c, in[0], n);
  auto lower_branch_into = [&](Block* block, const Program& branch) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(block);
    std::vector<Value> r = lower_subprogram(c, branch, ops);
    b.create<scf::YieldOp>(c.loc, ValueRange(r));
  };
  if (n == 2) {  // cond: scf.if on index != 0 (branch 1 when true)
    Value zero = b.create<arith::ConstantIndexOp>(c.loc, 0);
    Value pick = b.create<arith::CmpIOp>(c.loc, arith::CmpIPredicate::ne, index, zero);
    auto op = b.create<scf::IfOp>(c.loc, types_of(c, out), pick, /*addThenBlock=*/true, /*addElseBlock=*/true);
    lower_branch_into(op.thenBlock(), *branches[1]);
    lower_branch_into(op.elseBlock(), *branches[0]);
    return std::vector<Value>(op.getResults().begin(), op.getResults().end());
  }
  SmallVector<int64_t> cases;
  for (int64_t k = 0; k + 1 < n; ++k) cases.push_back(k);
  auto sw = b.create<scf::IndexSwitchOp>(c.loc, types_of(c, out), index, cases, unsigned(cases.size()));
  auto lower_branch = [&](Region& region, const Program& branch) {
    OpBuilder::InsertionGuard guard(b);
    b.createBlock(&region);
    std::vector<Value> r = lower_subprogram(c, branch, ops);
    b.create<scf::YieldOp>(c.loc, ValueRange(r));
  };
  for (int64_t k = 0; k + 1 < n; ++k) lower_branch(sw.getCaseRegions()[unsigned(k)], *branches[size_t(k)]);
  lower_branch(sw.getDefaultRegion(), *branches.back());
  return std::vector<Value>(sw.getResults().begin(), sw.getResults().end());
}

// ---- while --------------------------------------------------------------------------------------
std::vector<Value> while_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  const Program& cond = sub(e.params, "cond");
  const Program& body = sub(e.params, "body");
  const size_t nc = count(e.params, "cond_nconsts"), nb = count(e.params, "body_nconsts");
  const std::vector<Value> cond_consts = tensors(c, in.subspan(0, nc)), body_consts = tensors(c, in.subspan(nc, nb));
  const std::vector<Value> init = tensors(c, in.subspan(nc + nb));
  OpBuilder& b = c.b;
  const SmallVector<Type> types = types_of(c, out);
  auto w = b.create<scf::WhileOp>(c.loc, types, init);
  const SmallVector<Location> locs(types.size(), c.loc);
  {
    OpBuilder::InsertionGuard guard(b);
    Block* before = b.createBlock(&w.getBefore(), {}, types, locs);
    std::vector<Value> go = lower_subprogram(c, cond, concat(cond_consts, before->getArguments()));
    Value flag = storage_to_bool(b, c.loc, b.create<tensor::ExtractOp>(c.loc, go[0], ValueRange{}));
    b.create<scf::ConditionOp>(c.loc, flag, before->getArguments());
  }
  {
    OpBuilder::InsertionGuard guard(b);
    Block* after = b.createBlock(&w.getAfter(), {}, types, locs);
    const std::vector<Value> next = lower_subprogram(c, body, concat(body_consts, after->getArguments()));
    keep_empties_in_loop(w.getAfter());
    b.create<scf::YieldOp>(c.loc, ValueRange(next));
  }
  return std::vector<Value>(w.getResults().begin(), w.getResults().end());
}

// ---- scan ---------------------------------------------------------------------------------------
std::vector<Value> scan_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  const Program& body = sub(e.params, "body");
  const size_t nc = count(e.params, "num_consts"), nk = count(e.params, "num_carry");
  const int64_t length = e.params.get_int("length");
  const bool reverse = e.params.get_bool("reverse");
  const std::vector<Value> consts = tensors(c, in.subspan(0, nc));
  const std::vector<Value> carry = tensors(c, in.subspan(nc, nk));
  const std::vector<Value> xs = tensors(c, in.subspan(nc + nk));
  const size_t ny = out.size() - nk;
  std::vector<Value> init = carry;
  for (size_t j = 0; j < ny; ++j) init.push_back(empty(c, out[nk + j]));
  if (length == 0 || init.empty()) return init;  // nothing runs, or nothing is computed

  OpBuilder& b = c.b;
  MLIRContext* ctx = b.getContext();
  // A symbolic length (a polymorphic program's scan over a symbolic leading dim) is a run-time value.
  Value lo = b.create<arith::ConstantIndexOp>(c.loc, 0), hi = dim_value(c, length);
  Value one = b.create<arith::ConstantIndexOp>(c.loc, 1), last = b.create<arith::SubIOp>(c.loc, hi, one);
  auto loop = b.create<scf::ForOp>(c.loc, lo, hi, one, ValueRange(init));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    // With iter_args, scf.for's builder leaves the body without a terminator: the yield is ours.
    Value step = loop.getInductionVar();
    Value t = reverse ? Value(b.create<arith::SubIOp>(c.loc, last, step)) : step;
    // The offsets/sizes/strides of row t of an array of shape `full` (static except the offset).
    auto row = [&](const Shape& full, SmallVector<OpFoldResult>& offsets, SmallVector<OpFoldResult>& sizes,
                   SmallVector<OpFoldResult>& strides) {
      offsets.assign(1, t);
      sizes.assign(1, b.getIndexAttr(1));
      strides.assign(full.size(), b.getIndexAttr(1));
      for (size_t d = 1; d < full.size(); ++d) {
        offsets.push_back(b.getIndexAttr(0));
        sizes.push_back(is_symbolic_dim(full[d]) ? OpFoldResult(dim_value(c, full[d])) : OpFoldResult(b.getIndexAttr(full[d])));
      }
    };
    std::vector<Value> args = consts;
    auto iters = loop.getRegionIterArgs();
    args.insert(args.end(), iters.begin(), iters.begin() + long(nk));
    for (size_t i = 0; i < xs.size(); ++i) {
      const AbstractArray& x = in[nc + nk + i].aval;
      AbstractArray slice = x;
      slice.shape = Shape(x.shape.begin() + 1, x.shape.end());
      SmallVector<OpFoldResult> offsets, sizes, strides;
      row(x.shape, offsets, sizes, strides);
      args.push_back(b.create<tensor::ExtractSliceOp>(c.loc, tensor_type(ctx, slice), xs[i], offsets, sizes, strides));
    }
    std::vector<Value> r = lower_subprogram(c, body, args);
    std::vector<Value> next(r.begin(), r.begin() + long(nk));
    for (size_t j = 0; j < ny; ++j) {
      SmallVector<OpFoldResult> offsets, sizes, strides;
      row(out[nk + j].shape, offsets, sizes, strides);
      next.push_back(b.create<tensor::InsertSliceOp>(c.loc, r[nk + j], iters[unsigned(nk + j)], offsets, sizes, strides));
    }
    b.create<scf::YieldOp>(c.loc, ValueRange(next));
  }
  keep_empties_in_loop(loop.getRegion());
  return std::vector<Value>(loop.getResults().begin(), loop.getResults().end());
}

}  // namespace

void add_control_lowerings(LowerTable& t) {
  t[size_t(Prim::cond)] = &cond_rule;
  t[size_t(Prim::while_)] = &while_rule;
  t[size_t(Prim::scan)] = &scan_rule;
}

}  // namespace fluxion::lowering
