// The members of a row kernel (gpu_row_members.h): which linalg ops may join one, and how a
// reduction's combiner maps onto gpu.all_reduce.
#include "lowering/gpu_row_members.h"

#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Interfaces/ViewLikeInterface.h>

#include <set>

namespace fluxion::lowering::gpu_rows {

using namespace mlir;

// The buffer a memref value views (an allocation or a function argument).
Value root_of(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>()) v = view.getViewSource();
  return v;
}

int64_t product(ArrayRef<int64_t> v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

static std::optional<gpu::AllReduceOperation> kind_of(Operation* op) {
  using K = gpu::AllReduceOperation;
  if (isa<arith::AddFOp, arith::AddIOp>(op)) return K::ADD;
  if (isa<arith::MulFOp, arith::MulIOp>(op)) return K::MUL;
  if (isa<arith::MaximumFOp>(op)) return K::MAXIMUMF;
  if (isa<arith::MinimumFOp>(op)) return K::MINIMUMF;
  if (isa<arith::MaxNumFOp>(op)) return K::MAXNUMF;
  if (isa<arith::MinNumFOp>(op)) return K::MINNUMF;
  if (isa<arith::MaxSIOp>(op)) return K::MAXSI;
  if (isa<arith::MinSIOp>(op)) return K::MINSI;
  if (isa<arith::MaxUIOp>(op)) return K::MAXUI;
  if (isa<arith::MinUIOp>(op)) return K::MINUI;
  if (isa<arith::AndIOp>(op)) return K::AND;
  if (isa<arith::OrIOp>(op)) return K::OR;
  if (isa<arith::XOrIOp>(op)) return K::XOR;
  return std::nullopt;
}

std::optional<Combiner> combiner_of(linalg::LinalgOp op, unsigned output) {
  Block* body = op.getBlock();
  BlockArgument acc = op.getRegionOutputArgs()[output];
  Value yielded = body->getTerminator()->getOperand(output);
  Operation* c = yielded.getDefiningOp();
  if (!c || c->getBlock() != body || c->getNumOperands() != 2 || !acc.hasOneUse() || !yielded.hasOneUse())
    return std::nullopt;
  if (!acc.getType().isIntOrFloat()) return std::nullopt;
  auto kind = kind_of(c);
  if (!kind) return std::nullopt;
  for (unsigned i = 0; i < 2; ++i)
    if (c->getOperand(i) == acc) return Combiner{c, i, *kind};
  return std::nullopt;
}

// The combiner's identity in type t.
Value identity(OpBuilder& b, Location loc, gpu::AllReduceOperation k, Type t) {
  using K = gpu::AllReduceOperation;
  if (auto f = dyn_cast<FloatType>(t)) {
    const auto& sem = f.getFloatSemantics();
    APFloat v = APFloat::getZero(sem);
    if (k == K::MUL) v = APFloat::getOne(sem);
    if (k == K::MAXIMUMF || k == K::MAXNUMF) v = APFloat::getInf(sem, /*Negative=*/true);
    if (k == K::MINIMUMF || k == K::MINNUMF) v = APFloat::getInf(sem, /*Negative=*/false);
    return b.create<arith::ConstantOp>(loc, t, b.getFloatAttr(t, v));
  }
  const unsigned w = t.getIntOrFloatBitWidth();
  APInt v = APInt::getZero(w);
  if (k == K::MUL) v = APInt(w, 1);
  if (k == K::AND || k == K::MINUI) v = APInt::getAllOnes(w);
  if (k == K::MAXSI) v = APInt::getSignedMinValue(w);
  if (k == K::MINSI) v = APInt::getSignedMaxValue(w);
  return b.create<arith::ConstantOp>(loc, t, b.getIntegerAttr(t, v));
}


// argmax/argmin's body (lower_reduce.cpp, argminmax_rule): best and index are read only by the
// two selects and by the comparisons of v with best; the strict one says max or min, signed or not.
std::optional<gpu::AllReduceOperation> arg_best_kind(linalg::LinalgOp op) {
  using K = gpu::AllReduceOperation;
  if (op.getNumDpsInits() != 2 || op.getNumDpsInputs() < 1) return std::nullopt;
  Block* body = op.getBlock();
  Value best = op.getRegionOutputArgs()[0], index = op.getRegionOutputArgs()[1];
  if (!best.getType().isIntOrFloat() || !index.getType().isInteger(64)) return std::nullopt;
  Operation* yield = body->getTerminator();
  auto s0 = yield->getOperand(0).getDefiningOp<arith::SelectOp>(), s1 = yield->getOperand(1).getDefiningOp<arith::SelectOp>();
  if (!s0 || !s1 || s0.getCondition() != s1.getCondition() || s0.getFalseValue() != best || s1.getFalseValue() != index)
    return std::nullopt;
  auto cast = s1.getTrueValue().getDefiningOp<arith::IndexCastOp>();
  auto at = cast ? cast.getIn().getDefiningOp<linalg::IndexOp>() : linalg::IndexOp();
  if (!at || op.getIteratorTypesArray()[at.getDim()] != utils::IteratorType::reduction) return std::nullopt;
  if (!llvm::all_of(index.getUsers(), [&](Operation* u) { return u == s1.getOperation(); })) return std::nullopt;
  std::optional<K> kind;
  for (Operation* u : best.getUsers()) {
    if (u == s0.getOperation()) continue;
    if (auto f = dyn_cast<arith::CmpFOp>(u)) {
      const auto p = f.getPredicate();
      if (p == arith::CmpFPredicate::ORD) continue;  // "best is not NaN": a NaN, once found, stays
      if (f.getRhs() != best || (p != arith::CmpFPredicate::OGT && p != arith::CmpFPredicate::OLT)) return std::nullopt;
      kind = p == arith::CmpFPredicate::OGT ? K::MAXIMUMF : K::MINIMUMF;
    } else if (auto i = dyn_cast<arith::CmpIOp>(u); i && i.getRhs() == best) {
      switch (i.getPredicate()) {
        case arith::CmpIPredicate::sgt: kind = K::MAXSI; break;
        case arith::CmpIPredicate::slt: kind = K::MINSI; break;
        case arith::CmpIPredicate::ugt: kind = K::MAXUI; break;
        case arith::CmpIPredicate::ult: kind = K::MINUI; break;
        default: return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
  }
  return kind;
}

// The loops of op, if all are static.
std::optional<SmallVector<int64_t>> loops_of(linalg::LinalgOp op) {
  SmallVector<int64_t> l = op.getStaticLoopRanges();
  for (int64_t x : l)
    if (ShapedType::isDynamic(x)) return std::nullopt;
  return l;
}

// op as a member over `rows` (its leading loops), or nothing.
std::optional<Member> member_over(linalg::LinalgOp op, ArrayRef<int64_t> rows) {
  if (!op.hasPureBufferSemantics() || op->getNumRegions() != 1) return std::nullopt;
  auto loops = loops_of(op);
  if (!loops || loops->size() < rows.size() || ArrayRef<int64_t>(*loops).take_front(rows.size()) != rows)
    return std::nullopt;
  Member m{op, SmallVector<int64_t>(ArrayRef<int64_t>(*loops).drop_front(rows.size())), false, {}, false};
  auto it = op.getIteratorTypesArray();
  for (size_t d = 0; d < rows.size(); ++d)
    if (it[d] != utils::IteratorType::parallel) return std::nullopt;
  const size_t reduced = size_t(llvm::count(it, utils::IteratorType::reduction));
  if (reduced == 0) return m;
  if (reduced != m.inner.size()) return std::nullopt;  // reductions innermost, all of them
  // argmax/argmin along one axis, its index a row's position (int32 for the block's all-reduce).
  if (m.inner.size() == 1 && m.inner[0] < (int64_t(1) << 31)) m.arg = arg_best_kind(op);
  for (unsigned o = 0; o < op.getNumDpsInits(); ++o) {
    // Each output indexed by the rows exactly: thread 0 of row r folds the total into out[r].
    AffineMap map = op.getIndexingMapsArray()[op.getNumDpsInputs() + o];
    if (map.getNumResults() != rows.size()) return std::nullopt;
    for (unsigned d = 0; d < rows.size(); ++d)
      if (map.getResult(d) != getAffineDimExpr(d, map.getContext())) return std::nullopt;
    if (m.arg) continue;
    auto c = combiner_of(op, o);
    if (!c) return std::nullopt;
    m.combiners.push_back(*c);
  }
  m.reduction = true;
  return m;
}

// Whether every access of `group` to a buffer some member writes is row-local: through a
// contiguous view of the whole buffer whose leading dims are the rows, at an index whose leading
// coordinates are the row's.
bool row_local(ArrayRef<Member> group, ArrayRef<int64_t> rows) {
  std::set<void*> written_roots;
  for (const Member& m : group)
    for (OpOperand& o : m.op.getDpsInitsMutable()) written_roots.insert(root_of(o.get()).getAsOpaquePointer());
  for (const Member& m : group)
    for (OpOperand& o : m.op->getOpOperands()) {
      if (!isa<MemRefType>(o.get().getType())) continue;
      Value root = root_of(o.get());
      if (!written_roots.count(root.getAsOpaquePointer())) continue;
      auto t = cast<MemRefType>(o.get().getType()), rt = cast<MemRefType>(root.getType());
      if (!t.getLayout().isIdentity() || t.getNumElements() != rt.getNumElements() || t.getRank() < int64_t(rows.size()) ||
          t.getShape().take_front(rows.size()) != rows)
        return false;
      AffineMap map = m.op.getMatchingIndexingMap(&o);
      for (unsigned d = 0; d < rows.size(); ++d)
        if (map.getResult(d) != getAffineDimExpr(d, map.getContext())) return false;
    }
  return true;
}

// The ops of the host function's block that touch no memory and may sit between members.
bool passive(Operation* op) {
  return isa<arith::ConstantOp, memref::AllocOp, ViewLikeOpInterface>(op) && op->getNumRegions() == 0;
}

SmallVector<Value> delinearize(OpBuilder& b, Location loc, Value i, ArrayRef<int64_t> dims) {
  SmallVector<Value> out(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    if (d == 0) {
      out[d] = i;
      break;
    }
    Value n = b.create<arith::ConstantIndexOp>(loc, dims[d]);
    out[d] = b.create<arith::RemUIOp>(loc, i, n);
    i = b.create<arith::DivUIOp>(loc, i, n);
  }
  return out;
}

}  // namespace fluxion::lowering::gpu_rows
