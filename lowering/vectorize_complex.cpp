// fx-vectorize-complex: the elementwise linalg.generic ops over complex memrefs become vector
// loops on the planar parts.
//
// The tensor-level vectorizer leaves a generic with a complex operand scalar: an MLIR vector
// cannot hold complex<f32>, and no tensor or memref op views a complex buffer as its floats. This
// pass runs after bufferization and convert-complex-to-standard, when such a body is arith and
// math on the parts between complex.re, complex.im and complex.create. Every complex value of the
// body becomes two vectors (re, im) and every real value one, so the body is the same arith/math
// ops on vectors -- transcendentals then take fx-accurate-math's libmvec path like real code.
// Memory is addressed through the buffer's aligned pointer as an array of parts (floats for
// complex<f32>), at 2 * (offset + sum of index * stride): a complex operand contiguous along the
// innermost loop is one load of 2 VL parts split by vector.deinterleave (a store: vector.interleave
// and one store); a strided one moves lane by lane; one the innermost loop does not index is
// loaded once and broadcast. The innermost loop runs in steps of VL; the remainder (n mod VL) is
// the original generic on subviews, scalar.
//
// Left scalar: generics with a reduction loop, a non-elementwise body op (a libm call, linalg.index)
// or a bool (i1) memref, and those whose innermost loop is shorter than VL.
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Complex/IR/Complex.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/LLVMIR/LLVMDialect.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/Math/IR/Math.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/Vector/IR/VectorOps.h>
#include <mlir/Pass/Pass.h>

#include "lowering/passes.h"
#include "lowering/target.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

// The scalar a memref element is stored as: the part type of a complex, the type itself otherwise.
Type part_type(Type element) {
  if (auto c = dyn_cast<ComplexType>(element)) return c.getElementType();
  return element;
}

bool is_scalar(Type t) { return t.isIntOrFloat() || isa<ComplexType>(t); }

// A body op this pass can give vector types: the complex plumbing, or an elementwise arith/math op
// on real scalars.
bool supported_body_op(Operation& op) {
  if (isa<linalg::YieldOp, complex::ReOp, complex::ImOp, complex::CreateOp, complex::ConstantOp>(op)) return true;
  if (!op.hasTrait<OpTrait::Elementwise>() || op.getNumRegions() != 0) return false;
  if (!isa<arith::ArithDialect, math::MathDialect>(op.getDialect())) return false;
  auto real = [](Type t) { return t.isIntOrFloat(); };
  return llvm::all_of(op.getOperandTypes(), real) && llvm::all_of(op.getResultTypes(), real);
}

bool vectorizable(linalg::GenericOp g) {
  if (!g.hasPureBufferSemantics() || g.getNumLoops() == 0 || g.getNumParallelLoops() != g.getNumLoops()) return false;
  bool any_complex = false;
  for (OpOperand& o : g->getOpOperands()) {
    auto t = dyn_cast<MemRefType>(o.get().getType());
    if (!t || !isStrided(t)) return false;
    const Type part = part_type(t.getElementType());
    if (!part.isIntOrFloat() || part.getIntOrFloatBitWidth() < 8) return false;
    any_complex |= isa<ComplexType>(t.getElementType());
    const AffineMap m = g.getMatchingIndexingMap(&o);
    if (g.isDpsInit(&o) ? !m.isPermutation() : !m.isProjectedPermutation(/*allowZeroInResults=*/true)) return false;
  }
  if (!any_complex) return false;
  for (Operation& op : g.getBody()->getOperations()) {
    if (!supported_body_op(op)) return false;
    for (Value v : op.getOperands())  // values from above are broadcast: scalars only
      if (v.getParentBlock() != g.getBody() && !is_scalar(v.getType())) return false;
  }
  return true;
}

// A value of the body at one vector step: one vector, or two (re, im) for a complex value.
struct Planar {
  Value re, im;
};

// How one operand is addressed (its map a projected permutation, with 0 for a broadcast unit
// dimension): element (i_0, ...) of the memref is part number
// parts * (offset + sum_k i_k * strides[k]) (+1 for the imaginary part) of `ptr`.
struct Access {
  Value ptr, offset;
  SmallVector<Value> strides;
  AffineMap map;
  Type part;
  int64_t parts = 1;
  int inner = -1;           // the memref dimension the innermost loop indexes; -1: none (broadcast)
  bool contiguous = false;  // unit stride along `inner`, known statically
};

class Vectorizer {
 public:
  Vectorizer(linalg::GenericOp g, int64_t vl) : g_(g), b_(g), loc_(g.getLoc()), vl_(vl) {}

  void run() {
    const unsigned loops = g_.getNumLoops();
    SmallVector<Value> lbs, ubs, steps;
    for (Range r : linalg::LinalgOp(g_).createLoopRanges(b_, loc_)) {
      lbs.push_back(index(0));
      ubs.push_back(getValueOrCreateConstantIndexOp(b_, loc_, r.size));
      steps.push_back(index(1));
    }
    for (OpOperand& o : g_->getOpOperands()) access_.push_back(access_of(o));
    Value n = ubs.back();
    Value main = b_.create<arith::SubIOp>(loc_, n, b_.create<arith::RemUIOp>(loc_, n, index(vl_)));
    ubs.back() = main;
    steps.back() = index(vl_);
    scf::buildLoopNest(b_, loc_, lbs, ubs, steps, [&](OpBuilder& b, Location, ValueRange ivs) {
      OpBuilder::InsertionGuard guard(b_);
      b_.setInsertionPoint(b.getInsertionBlock(), b.getInsertionPoint());
      step(ivs);
    });
    const int64_t static_n = g_.getStaticLoopRanges()[loops - 1];
    if (ShapedType::isDynamic(static_n) || static_n % vl_ != 0) remainder(main, n);
    g_.erase();
  }

 private:
  Value index(int64_t v) { return b_.create<arith::ConstantIndexOp>(loc_, v); }
  VectorType vec(Type t, int64_t lanes) const { return VectorType::get({lanes}, t); }

  Access access_of(OpOperand& o) {
    Value m = o.get();
    auto t = cast<MemRefType>(m.getType());
    Access a;
    a.map = g_.getMatchingIndexingMap(&o);
    a.part = part_type(t.getElementType());
    a.parts = isa<ComplexType>(t.getElementType()) ? 2 : 1;
    auto meta = b_.create<memref::ExtractStridedMetadataOp>(loc_, m);
    a.offset = meta.getOffset();
    a.strides.assign(meta.getStrides().begin(), meta.getStrides().end());
    Value address = b_.create<memref::ExtractAlignedPointerAsIndexOp>(loc_, m);
    Value as_int = b_.create<arith::IndexCastOp>(loc_, b_.getI64Type(), address);
    a.ptr = b_.create<LLVM::IntToPtrOp>(loc_, LLVM::LLVMPointerType::get(b_.getContext()), as_int);
    const unsigned innermost = g_.getNumLoops() - 1;
    for (unsigned k = 0; k < a.map.getNumResults(); ++k)
      if (a.map.getResult(k) == getAffineDimExpr(innermost, b_.getContext())) a.inner = int(k);
    SmallVector<int64_t> strides;
    int64_t offset;
    a.contiguous = a.inner >= 0 && succeeded(getStridesAndOffset(t, strides, offset)) && strides[a.inner] == 1;
    return a;
  }

  // The address of part `part` of the operand's element at loop point `ivs`, plus `lane` steps
  // along the innermost loop.
  Value address(const Access& a, ValueRange ivs, int64_t lane, int64_t part) {
    Value lin = a.offset;
    for (unsigned k = 0; k < a.map.getNumResults(); ++k) {
      auto dim = dyn_cast<AffineDimExpr>(a.map.getResult(k));
      if (!dim) continue;  // a constant 0: the one element of a broadcast unit dimension
      Value i = ivs[dim.getPosition()];
      if (int(k) == a.inner && lane) i = b_.create<arith::AddIOp>(loc_, i, index(lane));
      lin = b_.create<arith::AddIOp>(loc_, lin, b_.create<arith::MulIOp>(loc_, i, a.strides[k]));
    }
    lin = b_.create<arith::MulIOp>(loc_, lin, index(a.parts));
    if (part) lin = b_.create<arith::AddIOp>(loc_, lin, index(part));
    Value i64 = b_.create<arith::IndexCastOp>(loc_, b_.getI64Type(), lin);
    return b_.create<LLVM::GEPOp>(loc_, a.ptr.getType(), a.part, a.ptr, ValueRange{i64});
  }
  unsigned align(const Access& a) const { return a.part.getIntOrFloatBitWidth() / 8; }

  Planar load(const Access& a, ValueRange ivs) {
    if (a.contiguous) {
      Value v = b_.create<LLVM::LoadOp>(loc_, vec(a.part, a.parts * vl_), address(a, ivs, 0, 0), align(a));
      if (a.parts == 1) return {v, {}};
      auto split = b_.create<vector::DeinterleaveOp>(loc_, v);
      return {split.getRes1(), split.getRes2()};
    }
    Planar p;
    for (int64_t part = 0; part < a.parts; ++part) {
      Value& out = part ? p.im : p.re;
      if (a.inner < 0) {  // the same element in every lane
        Value s = b_.create<LLVM::LoadOp>(loc_, a.part, address(a, ivs, 0, part), align(a));
        out = b_.create<vector::BroadcastOp>(loc_, vec(a.part, vl_), s);
        continue;
      }
      out = b_.create<arith::ConstantOp>(loc_, b_.getZeroAttr(vec(a.part, vl_)));
      for (int64_t lane = 0; lane < vl_; ++lane) {
        Value s = b_.create<LLVM::LoadOp>(loc_, a.part, address(a, ivs, lane, part), align(a));
        out = b_.create<vector::InsertOp>(loc_, s, out, lane);
      }
    }
    return p;
  }

  void store(const Access& a, ValueRange ivs, Planar p) {
    if (a.contiguous) {
      Value v = a.parts == 1 ? p.re : b_.create<vector::InterleaveOp>(loc_, p.re, p.im).getResult();
      b_.create<LLVM::StoreOp>(loc_, v, address(a, ivs, 0, 0), align(a));
      return;
    }
    for (int64_t part = 0; part < a.parts; ++part)
      for (int64_t lane = 0; lane < vl_; ++lane) {
        Value s = b_.create<vector::ExtractOp>(loc_, part ? p.im : p.re, lane);
        b_.create<LLVM::StoreOp>(loc_, s, address(a, ivs, lane, part), align(a));
      }
  }

  // A value from above the body (a scalar), in every lane.
  Planar broadcast(Value v) {
    if (auto c = dyn_cast<ComplexType>(v.getType())) {
      Value re = b_.create<complex::ReOp>(loc_, v), im = b_.create<complex::ImOp>(loc_, v);
      return {b_.create<vector::BroadcastOp>(loc_, vec(c.getElementType(), vl_), re),
              b_.create<vector::BroadcastOp>(loc_, vec(c.getElementType(), vl_), im)};
    }
    return {b_.create<vector::BroadcastOp>(loc_, vec(v.getType(), vl_), v), {}};
  }

  Planar lookup(Value v) {
    auto it = values_.find(v);
    if (it != values_.end()) return it->second;
    return values_[v] = broadcast(v);
  }

  Value splat(Type part, Attribute value) {
    return b_.create<arith::ConstantOp>(loc_, DenseElementsAttr::get(vec(part, vl_), value));
  }

  // One body op on vectors.
  void convert(Operation& op) {
    if (auto re = dyn_cast<complex::ReOp>(op)) {
      values_[re] = {lookup(re.getComplex()).re, {}};
    } else if (auto im = dyn_cast<complex::ImOp>(op)) {
      values_[im] = {lookup(im.getComplex()).im, {}};
    } else if (auto create = dyn_cast<complex::CreateOp>(op)) {
      values_[create] = {lookup(create.getReal()).re, lookup(create.getImaginary()).re};
    } else if (auto k = dyn_cast<complex::ConstantOp>(op)) {
      const Type part = k.getType().getElementType();
      values_[k] = {splat(part, k.getValue()[0]), splat(part, k.getValue()[1])};
    } else if (auto k = dyn_cast<arith::ConstantOp>(op)) {
      values_[k] = {splat(k.getType(), k.getValue()), {}};
    } else {
      SmallVector<Value> operands;
      for (Value v : op.getOperands()) operands.push_back(lookup(v).re);
      SmallVector<Type> types;
      for (Type t : op.getResultTypes()) types.push_back(vec(t, vl_));
      Operation* v = b_.create(loc_, op.getName().getIdentifier(), operands, types, op.getAttrs());
      for (auto [scalar, vector] : llvm::zip(op.getResults(), v->getResults())) values_[scalar] = {vector, {}};
    }
  }

  // The body at loop point `ivs` (the innermost index the first of VL lanes).
  void step(ValueRange ivs) {
    values_.clear();
    for (OpOperand& o : g_->getOpOperands()) {
      BlockArgument arg = g_.getMatchingBlockArgument(&o);
      if (!arg.use_empty()) values_[arg] = load(access_[o.getOperandNumber()], ivs);
    }
    for (Operation& op : g_.getBody()->without_terminator()) convert(op);
    Operation* yield = g_.getBody()->getTerminator();
    for (OpOperand& init : g_.getDpsInitsMutable())
      store(access_[init.getOperandNumber()], ivs, lookup(yield->getOperand(init.getOperandNumber() - g_.getNumDpsInputs())));
  }

  // Innermost indices [main, n): the original generic on subviews of its operands.
  void remainder(Value main, Value n) {
    Value rest = b_.create<arith::SubIOp>(loc_, n, main);
    SmallVector<Value> operands;
    for (OpOperand& o : g_->getOpOperands()) {
      const Access& a = access_[o.getOperandNumber()];
      operands.push_back(o.get());
      if (a.inner < 0) continue;
      auto t = cast<MemRefType>(o.get().getType());
      SmallVector<OpFoldResult> offsets(t.getRank(), b_.getIndexAttr(0)), sizes, strides(t.getRank(), b_.getIndexAttr(1));
      for (int64_t d = 0; d < t.getRank(); ++d) sizes.push_back(memref::getMixedSize(b_, loc_, o.get(), d));
      offsets[a.inner] = main;
      sizes[a.inner] = rest;
      operands.back() = b_.create<memref::SubViewOp>(loc_, o.get(), offsets, sizes, strides);
    }
    Operation* tail = b_.clone(*g_.getOperation());
    tail->setOperands(operands);
  }

  linalg::GenericOp g_;
  OpBuilder b_;
  Location loc_;
  const int64_t vl_;
  SmallVector<Access> access_;
  DenseMap<Value, Planar> values_;
};

// Lanes per step: two registers of the widest part type.
int64_t vector_length(linalg::GenericOp g) {
  unsigned bits = 8;
  for (Value v : g->getOperands())
    bits = std::max(bits, part_type(cast<MemRefType>(v.getType()).getElementType()).getIntOrFloatBitWidth());
  return std::max<int64_t>(2, 2 * cpu_target().vector_bits / int64_t(bits));
}

struct VectorizeComplexPass : public PassWrapper<VectorizeComplexPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(VectorizeComplexPass)
  StringRef getArgument() const final { return "fx-vectorize-complex"; }
  StringRef getDescription() const final { return "elementwise generics on complex memrefs -> vector loops on the parts"; }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<LLVM::LLVMDialect, scf::SCFDialect, vector::VectorDialect, arith::ArithDialect, memref::MemRefDialect,
             complex::ComplexDialect>();
  }
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> todo;
    getOperation().walk([&](linalg::GenericOp g) {
      if (vectorizable(g)) todo.push_back(g);
    });
    for (linalg::GenericOp g : todo) {
      const int64_t vl = vector_length(g);
      const int64_t n = g.getStaticLoopRanges().back();
      if (!ShapedType::isDynamic(n) && n < vl) continue;  // nothing to vectorize
      Vectorizer(g, vl).run();
    }
  }
};

}  // namespace

void register_vectorize_complex_pass() { PassRegistration<VectorizeComplexPass>(); }

}  // namespace fluxion::lowering
