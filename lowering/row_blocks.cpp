// Row blocking (row_blocks.h). vmap of jacfwd of a small function (GradBench's bundle adjustment:
// 15 parameters, 30,000 observations) fuses into ~44 loops over [rows] and [rows, 15], joined by
// the slices, concatenates and reshapes of the function's parameter handling; each loop went
// through memory (3.6 MB temporaries) and no tile-and-fuse crosses the slices (docs/performance.md).
// Here the whole kernel becomes the body of one loop over row blocks instead, by classifying each
// op of the function once:
//   * row ops: those reading or producing values with rows (dim 0 = the outputs' dim 0), each of
//     which must compute row r of its results from row r of its operands only -- checked per op
//     kind below; any other use of a row value (a gather's table, a reduction over the rows, an
//     unknown op) leaves the kernel as it is;
//   * everything else is free of rows and of side effects, and stays before the loop (the basis
//     tangents of jacfwd, constants).
// The row ops are cloned into the loop with [block, ...] types; inputs and outputs become subviews
// of the kernel's buffers at the block's offset.
#include "lowering/row_blocks.h"

#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Bufferization/IR/Bufferization.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/Tensor/IR/Tensor.h>
#include <mlir/IR/IRMapping.h>
#include <mlir/Interfaces/SideEffectInterfaces.h>

#include <optional>
#include <vector>

namespace fluxion::lowering {

using namespace mlir;

namespace {

// A block's row values together stay under this many bytes per array (L1/L2-sized temporaries),
// in blocks of at most kMaxBlock rows and at least kMinBlock.
constexpr int64_t kBlockBytes = 32 << 10;
constexpr int64_t kMaxBlock = 256, kMinBlock = 8;
// A row op may read an array without rows (a constant, the basis of jacfwd) of at most this many
// elements: larger ones (a matmul's weights) are what the per-op plans tile for.
constexpr int64_t kMaxSharedElements = 4096;

bool has_rows(Type t, int64_t rows) {
  auto s = dyn_cast<ShapedType>(t);
  return s && s.hasRank() && s.getRank() >= 1 && s.getDimSize(0) == rows;
}

Type with_rows(Type t, int64_t rows) {
  auto s = cast<ShapedType>(t);
  SmallVector<int64_t> shape(s.getShape());
  shape[0] = rows;
  return s.clone(shape);
}

bool is_static(OpFoldResult r, int64_t v) {
  std::optional<int64_t> c = getConstantIntValue(r);
  return c && *c == v;
}

struct RowKernel {
  func::FuncOp fn;
  int64_t rows = -1;
  DenseSet<Value> row_values;
  std::vector<Operation*> row_ops;  // in program order
  int64_t row_bytes = 0;            // the widest row value's bytes per row
  int row_generics = 0;
  bool crosses = false;  // some row value with several users, or a non-generic between generics
};

// Whether a generic computes row r of its results from row r of its row operands: loop 0 runs over
// the rows in parallel, every row operand is indexed by it in dim 0 only, the others not at all.
bool row_local_generic(linalg::GenericOp g, const RowKernel& k) {
  if (g.getNumLoops() == 0 || g.getIteratorTypesArray()[0] != utils::IteratorType::parallel) return false;
  SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  if (ranges[0] != k.rows) return false;
  for (OpOperand& o : g->getOpOperands()) {
    AffineMap m = g.getMatchingIndexingMap(&o);
    const bool row = k.row_values.contains(o.get());
    if (!row && g.isDpsInit(&o)) return false;
    for (unsigned i = 0; i < m.getNumResults(); ++i) {
      const bool is_d0 = m.getResult(i) == getAffineDimExpr(0, g.getContext());
      if (row && i == 0 ? !is_d0 : m.getResult(i).isFunctionOfDim(0)) return false;
    }
    if (!row)
      if (auto s = dyn_cast<ShapedType>(o.get().getType()); s && (!s.hasStaticShape() || s.getNumElements() > kMaxSharedElements))
        return false;
  }
  return true;
}

// A reshape keeps rows apart when dim 0 is alone in its group but for unit dims.
bool keeps_rows(ShapedType expanded, ArrayRef<ReassociationIndices> groups) {
  if (groups.empty() || groups[0].empty() || groups[0][0] != 0) return false;
  for (size_t i = 1; i < groups[0].size(); ++i)
    if (expanded.getDimSize(groups[0][i]) != 1) return false;
  return true;
}

bool full_rows(ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes, ArrayRef<OpFoldResult> strides, int64_t rows) {
  return is_static(offsets[0], 0) && is_static(sizes[0], rows) && is_static(strides[0], 1);
}

// Whether `op` (with row operands or results) is a row op of a kind this rewrite can re-type.
bool row_local(Operation* op, const RowKernel& k) {
  auto rows = [&](Value v) { return k.row_values.contains(v); };
  if (auto g = dyn_cast<linalg::GenericOp>(op)) return row_local_generic(g, k);
  if (auto t = dyn_cast<bufferization::ToTensorOp>(op)) return isa<BlockArgument>(t.getMemref());
  if (isa<tensor::EmptyOp>(op)) return cast<ShapedType>(op->getResult(0).getType()).hasStaticShape();
  if (auto m = dyn_cast<bufferization::MaterializeInDestinationOp>(op))
    return rows(m.getSource()) && isa<BlockArgument>(m.getDest()) && has_rows(m.getDest().getType(), k.rows);
  if (auto s = dyn_cast<tensor::ExtractSliceOp>(op))
    return rows(s.getSource()) && has_rows(s.getType(), k.rows) &&
           full_rows(s.getMixedOffsets(), s.getMixedSizes(), s.getMixedStrides(), k.rows);
  if (auto s = dyn_cast<tensor::InsertSliceOp>(op))
    return rows(s.getSource()) && rows(s.getDest()) && has_rows(s.getSourceType(), k.rows) &&
           full_rows(s.getMixedOffsets(), s.getMixedSizes(), s.getMixedStrides(), k.rows);
  if (auto e = dyn_cast<tensor::ExpandShapeOp>(op))
    return rows(e.getSrc()) && e.getStaticOutputShape()[0] == k.rows &&
           keeps_rows(e.getResultType(), e.getReassociationIndices());
  if (auto c = dyn_cast<tensor::CollapseShapeOp>(op))
    return rows(c.getSrc()) && keeps_rows(c.getSrcType(), c.getReassociationIndices());
  return false;
}

std::optional<RowKernel> classify(func::FuncOp fn) {
  RowKernel k;
  k.fn = fn;
  if (!fn.getBody().hasOneBlock()) return std::nullopt;
  for (auto m : fn.getOps<bufferization::MaterializeInDestinationOp>()) {
    auto t = dyn_cast<ShapedType>(m.getDest().getType());
    if (!t || !t.hasRank() || t.getRank() == 0) return std::nullopt;
    if (k.rows >= 0 && t.getDimSize(0) != k.rows) return std::nullopt;
    k.rows = t.getDimSize(0);
  }
  if (k.rows < 2 * kMinBlock) return std::nullopt;
  for (Operation& op : fn.getBody().front()) {
    if (isa<func::ReturnOp>(op)) continue;
    bool reads_rows = false, nested_rows = false;
    for (Value v : op.getOperands()) reads_rows = reads_rows || k.row_values.contains(v);
    op.walk([&](Operation* inner) {
      if (inner != &op)
        for (Value v : inner->getOperands()) nested_rows = nested_rows || k.row_values.contains(v);
    });
    if (nested_rows) return std::nullopt;  // a row value read inside a body (a gather's table)
    bool makes_rows = false;
    for (Value r : op.getResults()) makes_rows = makes_rows || has_rows(r.getType(), k.rows);
    const bool row_source = isa<bufferization::ToTensorOp, tensor::EmptyOp>(op) && makes_rows;
    if (reads_rows || row_source || isa<bufferization::MaterializeInDestinationOp>(op) ||
        (isa<linalg::GenericOp>(op) && makes_rows)) {
      if (!row_local(&op, k)) return std::nullopt;
      k.row_ops.push_back(&op);
      for (Value r : op.getResults()) {
        k.row_values.insert(r);
        auto s = cast<ShapedType>(r.getType());
        if (!s.hasStaticShape()) return std::nullopt;
        const int64_t bits = s.getElementType().isIntOrFloat() ? s.getElementType().getIntOrFloatBitWidth() : 64;
        k.row_bytes = std::max<int64_t>(k.row_bytes, s.getNumElements() / k.rows * std::max<int64_t>(bits / 8, 1));
        if (!r.hasOneUse() && !isa<bufferization::ToTensorOp, tensor::EmptyOp>(op)) k.crosses = true;
      }
      if (isa<linalg::GenericOp>(op)) ++k.row_generics;
      else if (!isa<bufferization::ToTensorOp, tensor::EmptyOp, bufferization::MaterializeInDestinationOp>(op)) k.crosses = true;
      continue;
    }
    // Stays before the loop: must not write (reading an input without rows is fine).
    if (!isa<bufferization::ToTensorOp>(op) && !isMemoryEffectFree(&op)) return std::nullopt;
  }
  if (k.row_generics < 2 || !k.crosses) return std::nullopt;
  return k;
}

// Rows per block: a power of two that keeps each block array under kBlockBytes, or a multiple of
// kMinBlock not below half of it that divides the rows (no leftover block to compile; whole
// vectors over the rows).
int64_t block_size(const RowKernel& k) {
  int64_t b = kMaxBlock;
  while (b > kMinBlock && (b * k.row_bytes > kBlockBytes || 2 * b > k.rows)) b /= 2;
  for (int64_t d = b; d >= std::max(b / 2, kMinBlock); d -= kMinBlock)
    if (k.rows % d == 0) return d;
  return b;
}

Value block_view(OpBuilder& b, Location loc, Value memref, Value offset, int64_t rows) {
  auto t = cast<MemRefType>(memref.getType());
  SmallVector<OpFoldResult> offsets(size_t(t.getRank()), b.getIndexAttr(0)), sizes, strides(size_t(t.getRank()), b.getIndexAttr(1));
  offsets[0] = offset;
  for (int64_t d : t.getShape()) sizes.push_back(b.getIndexAttr(d));
  sizes[0] = b.getIndexAttr(rows);
  return b.create<memref::SubViewOp>(loc, memref, offsets, sizes, strides);
}

// The row ops once more at `offset`, on blocks of `rows` rows.
void emit_block(OpBuilder& b, const RowKernel& k, Value offset, int64_t rows) {
  IRMapping map;
  for (Operation* op : k.row_ops) {
    const Location loc = op->getLoc();
    if (auto t = dyn_cast<bufferization::ToTensorOp>(op)) {
      Value view = block_view(b, loc, t.getMemref(), offset, rows);
      map.map(t.getResult(), b.create<bufferization::ToTensorOp>(loc, view, t.getRestrict(), t.getWritable()).getResult());
      continue;
    }
    if (auto m = dyn_cast<bufferization::MaterializeInDestinationOp>(op)) {
      Value view = block_view(b, loc, m.getDest(), offset, rows);
      b.create<bufferization::MaterializeInDestinationOp>(loc, TypeRange{}, map.lookup(m.getSource()), view, m.getRestrict(),
                                                          m.getWritable());
      continue;
    }
    Operation* c = b.clone(*op, map);
    for (Value r : c->getResults()) r.setType(with_rows(r.getType(), rows));
    auto first_size = [&](ArrayRef<int64_t> s) {
      SmallVector<int64_t> v(s);
      v[0] = rows;
      return v;
    };
    if (auto s = dyn_cast<tensor::ExtractSliceOp>(c)) s.setStaticSizes(first_size(s.getStaticSizes()));
    if (auto s = dyn_cast<tensor::InsertSliceOp>(c)) s.setStaticSizes(first_size(s.getStaticSizes()));
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(c)) e.setStaticOutputShape(first_size(e.getStaticOutputShape()));
  }
}

}  // namespace

bool block_rows(ModuleOp module) {
  std::optional<RowKernel> found;
  int kernels = 0;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal()) continue;
    ++kernels;
    found = classify(fn);
  }
  if (kernels != 1 || !found) return false;
  RowKernel& k = *found;
  const int64_t block = block_size(k);
  const int64_t full = k.rows / block;
  if (full < 2) return false;

  Operation* ret = k.fn.getBody().front().getTerminator();
  OpBuilder b(ret);
  const Location loc = ret->getLoc();
  auto loop = b.create<scf::ForallOp>(loc, ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
                                      ArrayRef<OpFoldResult>{b.getIndexAttr(full * block)},
                                      ArrayRef<OpFoldResult>{b.getIndexAttr(block)}, ValueRange{}, std::nullopt);
  OpBuilder inner(loop.getBody()->getTerminator());
  emit_block(inner, k, loop.getInductionVar(0), block);
  if (k.rows % block != 0) {
    Value offset = b.create<arith::ConstantIndexOp>(loc, full * block);
    emit_block(b, k, offset, k.rows % block);
  }
  for (auto it = k.row_ops.rbegin(); it != k.row_ops.rend(); ++it) (*it)->erase();
  return true;
}

}  // namespace fluxion::lowering
