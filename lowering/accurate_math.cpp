// Accuracy fixes to the f32 math that fx-math-approx would otherwise approximate, applied after
// vectorization (pass fx-accurate-math):
//   * sin and cos (below);
//   * log of a subnormal: the polynomial reads the exponent field, so log(1e-40) came out as
//     log(FLT_MIN) = -87.3 instead of -92.1. Subnormal arguments are scaled by 2^24 first and
//     24 ln 2 subtracted after (two selects per vector).
//
// sin and cos:
// MLIR's polynomial sin/cos reduce the argument with one f32 multiple of pi/2, so their error grows
// with |x|: about 1e-6 at |x| = 16, 5e-6 at 100, and for |x| above ~1e7 the result is not even in
// [-1, 1] (sin(1e9) came out as 1.8e12). Instead, where glibc's vector math library is present
// (libmvec: _ZGVeN16v_sinf and friends, a few ulp for every argument), vectors of arguments call
// it: measured on the fused sin(a*b)+exp(c) kernel it is as fast as the polynomial (22.97 vs
// 23.30 ms on one thread). Without libmvec, a vector whose largest |x| is at most
// kPolynomialLimit takes the polynomial (fx-math-approx), any other calls sinf/cosf lane by lane.
// Scalar sin/cos (code the vectorizer left scalar) call sinf/cosf.
#include <dlfcn.h>
#include <llvm/TargetParser/Host.h>
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/Math/IR/Math.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/Vector/IR/VectorOps.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/Pass/Pass.h>

#include <cstdlib>
#include <string>

#include "lowering/passes.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

constexpr float kPolynomialLimit = 16.0f;

// The host's libmvec variant: lanes and name prefix (x86-64 vector ABI: b SSE, d AVX2, e AVX-512).
struct VectorLibm {
  int lanes = 0;  // 0: no libmvec
  std::string prefix;
};

const VectorLibm& vector_libm() {
  static const VectorLibm v = [] {
    VectorLibm r;
    if (const char* e = std::getenv("FLUXION_LIBMVEC"); e && std::string(e) == "0") return r;  // tests the fallback
    if (!dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL)) return r;  // the JIT then finds its symbols
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    if (features.lookup("avx512f")) r = {16, "_ZGVeN16v_"};
    else if (features.lookup("avx2")) r = {8, "_ZGVdN8v_"};
    else r = {4, "_ZGVbN4v_"};
    return r;
  }();
  return v;
}

func::FuncOp declare(ModuleOp m, const std::string& name, Type arg) {
  if (auto f = m.lookupSymbol<func::FuncOp>(name)) return f;
  OpBuilder b(m.getBodyRegion());
  auto f = b.create<func::FuncOp>(m.getLoc(), name, b.getFunctionType({arg}, {arg}));
  f.setPrivate();
  return f;
}

// libm's function on every lane of x (a 1-D vector).
Value libm_vector(OpBuilder& b, Location l, ModuleOp m, Value x, const char* fn) {
  auto vt = cast<VectorType>(x.getType());
  const int64_t n = vt.getNumElements();
  const Type f32 = vt.getElementType();
  Value out = b.create<arith::ConstantOp>(l, vt, b.getZeroAttr(vt));
  const VectorLibm& lib = vector_libm();
  if (lib.lanes == 0) {
    func::FuncOp scalar = declare(m, fn, f32);
    for (int64_t i = 0; i < n; ++i) {
      Value e = b.create<vector::ExtractOp>(l, x, ArrayRef<int64_t>{i});
      Value r = b.create<func::CallOp>(l, scalar, ValueRange{e}).getResult(0);
      out = b.create<vector::InsertOp>(l, r, out, ArrayRef<int64_t>{i});
    }
    return out;
  }
  const int64_t w = lib.lanes;
  auto wt = VectorType::get({w}, f32);
  func::FuncOp vec = declare(m, lib.prefix + fn, wt);
  for (int64_t i = 0; i < n; i += w) {
    const int64_t len = std::min(w, n - i);
    Value chunk = b.create<vector::ExtractStridedSliceOp>(l, x, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{len},
                                                          ArrayRef<int64_t>{1});
    if (len < w) {
      Value pad = b.create<arith::ConstantOp>(l, wt, b.getZeroAttr(wt));
      chunk = b.create<vector::InsertStridedSliceOp>(l, chunk, pad, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{1});
    }
    Value r = b.create<func::CallOp>(l, vec, ValueRange{chunk}).getResult(0);
    if (len < w)
      r = b.create<vector::ExtractStridedSliceOp>(l, r, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{len},
                                                  ArrayRef<int64_t>{1});
    out = b.create<vector::InsertStridedSliceOp>(l, r, out, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{1});
  }
  return out;
}

template <class MathOp>
void rewrite(ModuleOp m, MathOp op, const char* fn) {
  OpBuilder b(op);
  const Location l = op.getLoc();
  Value x = op.getOperand();
  auto vt = dyn_cast<VectorType>(x.getType());
  if (!vt) {  // scalar: libm
    func::FuncOp scalar = declare(m, fn, x.getType());
    op.replaceAllUsesWith(b.create<func::CallOp>(l, scalar, ValueRange{x}).getResult(0));
    op.erase();
    return;
  }
  auto flat_t = VectorType::get({vt.getNumElements()}, vt.getElementType());
  Value flat = vt.getRank() == 1 ? x : b.create<vector::ShapeCastOp>(l, flat_t, x).getResult();
  if (vector_libm().lanes > 0) {
    Value r = libm_vector(b, l, m, flat, fn);
    op.replaceAllUsesWith(vt.getRank() == 1 ? r : b.create<vector::ShapeCastOp>(l, vt, r).getResult());
    op.erase();
    return;
  }
  // any(|x| > limit or NaN) ? libm lane by lane : polynomial
  // max |x| (NaN if any lane is NaN) against the limit: one horizontal max (an OR over a vector of
  // i1 compiled to one extract per lane and halved the throughput of a fused kernel).
  Value largest = b.create<vector::ReductionOp>(l, vector::CombiningKind::MAXIMUMF, b.create<math::AbsFOp>(l, flat));
  Value limit = b.create<arith::ConstantOp>(l, b.getF32FloatAttr(kPolynomialLimit));
  Value any = b.create<arith::CmpFOp>(l, arith::CmpFPredicate::UGT, largest, limit);
  auto branch = b.create<scf::IfOp>(
      l, any,
      [&](OpBuilder& t, Location tl) {
        Value r = libm_vector(t, tl, m, flat, fn);
        if (vt.getRank() != 1) r = t.create<vector::ShapeCastOp>(tl, vt, r);
        t.create<scf::YieldOp>(tl, r);
      },
      [&](OpBuilder& e, Location el) { e.create<scf::YieldOp>(el, e.create<MathOp>(el, x).getResult()); });
  op.replaceAllUsesWith(branch.getResult(0));
  op.erase();
}

// log(x) = log(x * 2^24) - 24 ln 2 for subnormal x; the new math.log is left to fx-math-approx.
void rewrite_log(math::LogOp op) {
  OpBuilder b(op);
  const Location l = op.getLoc();
  Value x = op.getOperand();
  const Type t = x.getType();
  auto splat = [&](float v) -> Value {
    if (auto vt = dyn_cast<VectorType>(t)) return b.create<arith::ConstantOp>(l, vt, DenseElementsAttr::get(vt, v));
    return b.create<arith::ConstantOp>(l, b.getF32FloatAttr(v));
  };
  Value tiny = b.create<arith::CmpFOp>(l, arith::CmpFPredicate::OLT, b.create<math::AbsFOp>(l, x), splat(0x1p-126f));
  Value scaled = b.create<arith::SelectOp>(l, tiny, b.create<arith::MulFOp>(l, x, splat(0x1p24f)), x);
  Value r = b.create<math::LogOp>(l, scaled);
  Value shift = b.create<arith::SelectOp>(l, tiny, splat(24.0f * 0.69314718f), splat(0.0f));
  op.replaceAllUsesWith(b.create<arith::SubFOp>(l, r, shift).getResult());
  op.erase();
}

struct AccurateMathPass : public PassWrapper<AccurateMathPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AccurateMathPass)
  StringRef getArgument() const final { return "fx-accurate-math"; }
  StringRef getDescription() const final { return "f32 sin/cos through libm(vec), log of subnormals"; }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<arith::ArithDialect, func::FuncDialect, math::MathDialect, scf::SCFDialect, vector::VectorDialect>();
  }
  void runOnOperation() override {
    ModuleOp m = getOperation();
    SmallVector<Operation*> ops;
    m.walk([&](Operation* op) {
      if (isa<math::SinOp, math::CosOp, math::LogOp>(op) && getElementTypeOrSelf(op->getResult(0).getType()).isF32())
        ops.push_back(op);
    });
    for (Operation* op : ops) {
      if (auto s = dyn_cast<math::SinOp>(op)) rewrite(m, s, "sinf");
      else if (auto c = dyn_cast<math::CosOp>(op)) rewrite(m, c, "cosf");
      else rewrite_log(cast<math::LogOp>(op));
    }
  }
};

}  // namespace

void register_accurate_math_pass() { PassRegistration<AccurateMathPass>(); }

}  // namespace fluxion::lowering
