// Transcendentals after vectorization (pass fx-accurate-math), before fx-math-approx turns the
// rest of f32 into polynomials:
//   * f64: every math op calls libmvec's f64 variant (_ZGVeN8v_exp ...; lowered as libm calls,
//     they had kept their loop nest scalar);
//   * sin, cos, and the functions without a polynomial here (log1p, expm1, exp2, tan, the inverse
//     and hyperbolic functions, cbrt, pow, atan2) call glibc's vector math library, libmvec
//     (_ZGVeN16v_sinf and friends on AVX-512: a few ulp for every argument, vectorized). Lowered
//     as scalar libm calls, they kept their whole loop nest scalar and out of fusion.
//   * sin and cos are why libmvec is used at all: MLIR's polynomial reduces the argument with one
//     f32 multiple of pi/2, so its error grows with |x| (about 1e-6 at |x| = 16, 5e-6 at 100) and
//     above ~1e7 the result is not even in [-1, 1] (sin(1e9) came out as 1.8e12). libmvec was as
//     fast as the polynomial on the fused sin(a*b)+exp(c) kernel (fluxion_bench_jit fused: 1.64x
//     of memcpy with the polynomial, 1.69x with libmvec).
//   * log of a subnormal: the polynomial reads the exponent field, so log(1e-40) came out as
//     log(FLT_MIN) = -87.3 instead of -92.1. Subnormal arguments are scaled by 2^24 first and
//     24 ln 2 subtracted after (two selects per vector).
//   * erf(-0) is -0 (the polynomial's sign is put back with copysign).
// Without libmvec (or without one of its functions; FLUXION_LIBMVEC=0 simulates it), a vector
// calls the scalar libm function lane by lane -- except f32 sin and cos, which take the polynomial
// when the largest |x| of the vector is at most kPolynomialLimit. Scalar ops (code the vectorizer
// left scalar) call the scalar libm function.
#include <dlfcn.h>
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/Math/IR/Math.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/Vector/IR/VectorOps.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/Dialect/Math/Transforms/Passes.h>
#include <mlir/Pass/Pass.h>
#include <mlir/Transforms/GreedyPatternRewriteDriver.h>

#include <cstdlib>
#include <string>

#include "ir/settings.h"
#include "lowering/passes.h"
#include "lowering/target.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

constexpr float kPolynomialLimit = 16.0f;

// The math ops routed to libm(vec), by op name: the libm function (f64 name; f32 adds "f"), and
// whether f32 keeps MLIR's polynomial instead (exp, log, tanh, erf: accurate over their domain).
struct MathFunction {
  const char* libm;
  bool f32_polynomial;
};
const llvm::StringMap<MathFunction>& math_functions() {
  static const llvm::StringMap<MathFunction> m = {
      {"math.exp", {"exp", true}},       {"math.log", {"log", true}},       {"math.tanh", {"tanh", true}},
      {"math.erf", {"erf", true}},       {"math.sin", {"sin", false}},      {"math.cos", {"cos", false}},
      {"math.log1p", {"log1p", false}},  {"math.expm1", {"expm1", false}},  {"math.exp2", {"exp2", false}},
      {"math.tan", {"tan", false}},      {"math.asin", {"asin", false}},    {"math.acos", {"acos", false}},
      {"math.atan", {"atan", false}},    {"math.sinh", {"sinh", false}},    {"math.cosh", {"cosh", false}},
      {"math.asinh", {"asinh", false}},  {"math.acosh", {"acosh", false}},  {"math.atanh", {"atanh", false}},
      {"math.cbrt", {"cbrt", false}},    {"math.powf", {"pow", false}},     {"math.atan2", {"atan2", false}},
  };
  return m;
}

// The host's libmvec (x86-64 vector function ABI: ISA letter b SSE, d AVX2, e AVX-512).
struct VectorLibm {
  void* handle = nullptr;  // null: no libmvec
  char isa = 0;
  int bits = 0;  // vector width
  int lanes(Type element) const { return bits / int(element.getIntOrFloatBitWidth()); }
  /// The vector variant of libm's `fn` (e.g. "sinf") for vectors of `element`, or "" when this
  /// libmvec lacks it (glibc < 2.35 has only sin, cos, exp, log and pow).
  std::string variant(const char* fn, Type element, size_t arity = 1) const {
    if (!handle) return {};
    std::string name = std::string("_ZGV") + isa + "N" + std::to_string(lanes(element)) + std::string(arity, 'v') + "_" + fn;
    return dlsym(handle, name.c_str()) ? name : std::string();
  }
};

const VectorLibm& vector_libm() {
  static const VectorLibm v = [] {
    VectorLibm r;
    if (!toggle_setting("FLUXION_LIBMVEC", true)) return r;  // tests the fallback
#if !defined(__x86_64__)
    return r;  // the names below are the x86-64 vector ABI's
#endif
    r.handle = dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL);  // global: the JIT finds its symbols
    if (!r.handle) return r;
    // The variant of the target's width (FLUXION_CPU=x86-64-v3 must not call AVX-512 code).
    const CpuTarget& t = cpu_target();
    if (t.vector_bits >= 512) r.isa = 'e', r.bits = 512;
    else if (t.isa_level >= 3) r.isa = 'd', r.bits = 256;
    else r.isa = 'b', r.bits = 128;
    return r;
  }();
  return v;
}

func::FuncOp declare(ModuleOp m, const std::string& name, Type arg, size_t arity) {
  if (auto f = m.lookupSymbol<func::FuncOp>(name)) return f;
  OpBuilder b(m.getBodyRegion());
  SmallVector<Type> args(arity, arg);
  auto f = b.create<func::FuncOp>(m.getLoc(), name, b.getFunctionType(args, {arg}));
  f.setPrivate();
  return f;
}

// The libm function `fn` on every lane of xs (1-D vectors of one type, one per argument):
// lanes-wide calls of its vector variant `vec_fn` (the last chunk padded), or the scalar function
// lane by lane when vec_fn is "".
Value libm_vector(OpBuilder& b, Location l, ModuleOp m, ValueRange xs, const std::string& fn, const std::string& vec_fn) {
  auto vt = cast<VectorType>(xs[0].getType());
  const int64_t n = vt.getNumElements();
  const Type elem = vt.getElementType();  // f32 or f64
  if (vec_fn.empty()) {
    // Through stack buffers and a loop of scalar calls: unrolled extract/call/insert kept the
    // vector live across every call (spilled and reloaded per lane, half the speed of a scalar
    // loop) and made one call site per lane. The buffers are allocated once, at the top of the
    // function or of a thread's parallel region (outlined into a function of its own): an alloca
    // in the loop body grew the stack every iteration -- scf.for is an allocation scope in MLIR's
    // terms, but its lowering to branches does not free what it allocates.
    func::FuncOp scalar = declare(m, fn, elem, xs.size());
    auto buf_t = MemRefType::get({n}, elem);
    Operation* scope = b.getInsertionBlock()->getParentOp();
    while (!isa<FunctionOpInterface>(scope) && scope->getName().getStringRef() != "omp.parallel")
      scope = scope->getParentOp();
    OpBuilder top = OpBuilder::atBlockBegin(&scope->getRegion(0).front());
    Value c0 = b.create<arith::ConstantIndexOp>(l, 0);
    SmallVector<Value> bufs;
    for (Value x : xs) {
      bufs.push_back(top.create<memref::AllocaOp>(l, buf_t));
      b.create<vector::StoreOp>(l, x, bufs.back(), ValueRange{c0});
    }
    b.create<scf::ForOp>(l, c0, b.create<arith::ConstantIndexOp>(l, n), b.create<arith::ConstantIndexOp>(l, 1),
                         ValueRange{}, [&](OpBuilder& lb, Location ll, Value i, ValueRange) {
                           SmallVector<Value> args;
                           for (Value buf : bufs) args.push_back(lb.create<memref::LoadOp>(ll, buf, ValueRange{i}));
                           Value r = lb.create<func::CallOp>(ll, scalar, args).getResult(0);
                           lb.create<memref::StoreOp>(ll, r, bufs[0], ValueRange{i});
                           lb.create<scf::YieldOp>(ll);
                         });
    return b.create<vector::LoadOp>(l, vt, bufs[0], ValueRange{c0});
  }
  Value out = b.create<arith::ConstantOp>(l, vt, b.getZeroAttr(vt));
  const int64_t w = vector_libm().lanes(elem);
  auto wt = VectorType::get({w}, elem);
  func::FuncOp vec = declare(m, vec_fn, wt, xs.size());
  for (int64_t i = 0; i < n; i += w) {
    const int64_t len = std::min(w, n - i);
    SmallVector<Value> chunks;
    for (Value x : xs) {
      Value chunk = b.create<vector::ExtractStridedSliceOp>(l, x, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{len},
                                                            ArrayRef<int64_t>{1});
      if (len < w) {
        // Padded with the chunk's own first lane, an argument the data already has: zeros sent
        // log or acosh into libmvec's special-value path, one scalar call per lane.
        Value first = b.create<vector::ExtractOp>(l, chunk, ArrayRef<int64_t>{0});
        Value pad = b.create<vector::BroadcastOp>(l, wt, first);
        chunk = b.create<vector::InsertStridedSliceOp>(l, chunk, pad, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{1});
      }
      chunks.push_back(chunk);
    }
    Value r = b.create<func::CallOp>(l, vec, chunks).getResult(0);
    if (len < w)
      r = b.create<vector::ExtractStridedSliceOp>(l, r, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{len},
                                                  ArrayRef<int64_t>{1});
    out = b.create<vector::InsertStridedSliceOp>(l, r, out, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{1});
  }
  return out;
}

// One f32 or f64 math op `op` (unary, or binary: pow, atan2) whose libm function is `fn`.
void rewrite(ModuleOp m, Operation* op, const std::string& fn) {
  OpBuilder b(op);
  const Location l = op->getLoc();
  Value x = op->getOperand(0);
  auto replace = [&](Value v) {
    op->getResult(0).replaceAllUsesWith(v);
    op->erase();
  };
  auto vt = dyn_cast<VectorType>(x.getType());
  if (!vt) {  // scalar: libm
    func::FuncOp scalar = declare(m, fn, x.getType(), op->getNumOperands());
    return replace(b.create<func::CallOp>(l, scalar, op->getOperands()).getResult(0));
  }
  auto flat_t = VectorType::get({vt.getNumElements()}, vt.getElementType());
  SmallVector<Value> flat;
  for (Value v : op->getOperands())
    flat.push_back(vt.getRank() == 1 ? v : b.create<vector::ShapeCastOp>(l, flat_t, v).getResult());
  auto shaped = [&](OpBuilder& bb, Location ll, Value r) {
    return vt.getRank() == 1 ? r : bb.create<vector::ShapeCastOp>(ll, vt, r).getResult();
  };
  const std::string vec_fn = vector_libm().variant(fn.c_str(), vt.getElementType(), op->getNumOperands());
  const bool polynomial_fallback = isa<math::SinOp, math::CosOp>(op) && vt.getElementType().isF32();
  if (!vec_fn.empty() || !polynomial_fallback) return replace(shaped(b, l, libm_vector(b, l, m, flat, fn, vec_fn)));
  // sin/cos without libmvec: max |x| (NaN if any lane is NaN) against the limit -- one horizontal
  // max (an OR over a vector of i1 compiled to one extract per lane) -- then libm lane by lane or
  // the polynomial (the cloned op, which fx-math-approx replaces).
  Value largest = b.create<vector::ReductionOp>(l, vector::CombiningKind::MAXIMUMF, b.create<math::AbsFOp>(l, flat[0]));
  Value limit = b.create<arith::ConstantOp>(l, b.getF32FloatAttr(kPolynomialLimit));
  Value any = b.create<arith::CmpFOp>(l, arith::CmpFPredicate::UGT, largest, limit);
  // (The branches are filled after the op exists: libm_vector looks for the enclosing function.)
  auto branch = b.create<scf::IfOp>(l, TypeRange{vt}, any, /*addThenBlock=*/true, /*addElseBlock=*/true);
  OpBuilder t = OpBuilder::atBlockBegin(branch.thenBlock());
  t.create<scf::YieldOp>(l, shaped(t, l, libm_vector(t, l, m, flat, fn, "")));
  OpBuilder e = OpBuilder::atBlockBegin(branch.elseBlock());
  Value poly = e.clone(*op)->getResult(0);
  if (isa<math::SinOp>(op)) {  // the polynomial gives sin(-0) = +0
    Value zero = e.create<arith::ConstantOp>(l, vt, e.getZeroAttr(vt));
    Value is_zero = e.create<arith::CmpFOp>(l, arith::CmpFPredicate::OEQ, x, zero);
    poly = e.create<arith::SelectOp>(l, is_zero, x, poly);
  }
  e.create<scf::YieldOp>(l, poly);
  replace(branch.getResult(0));
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

// erf is odd and has the sign of its argument; the polynomial gave erf(-0) = +0.
void rewrite_erf(math::ErfOp op) {
  OpBuilder b(op);
  b.setInsertionPointAfter(op);
  auto sign = b.create<math::CopySignOp>(op.getLoc(), op.getResult(), op.getOperand());
  op.getResult().replaceAllUsesExcept(sign.getResult(), sign);
}

struct AccurateMathPass : public PassWrapper<AccurateMathPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AccurateMathPass)
  StringRef getArgument() const final { return "fx-accurate-math"; }
  StringRef getDescription() const final { return "f32/f64 transcendentals through libm(vec); log of subnormals"; }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<arith::ArithDialect, func::FuncDialect, math::MathDialect, memref::MemRefDialect, scf::SCFDialect,
             vector::VectorDialect>();
  }
  void runOnOperation() override {
    ModuleOp m = getOperation();
    SmallVector<Operation*> ops;
    m.walk([&](Operation* op) {
      if (op->getNumOperands() < 1 || op->getNumOperands() > 2 || op->getNumResults() != 1) return;
      const Type t = getElementTypeOrSelf(op->getResult(0).getType());
      if ((t.isF32() || t.isF64()) && math_functions().count(op->getName().getStringRef())) ops.push_back(op);
    });
    for (Operation* op : ops) {
      const MathFunction f = math_functions().lookup(op->getName().getStringRef());
      if (getElementTypeOrSelf(op->getResult(0).getType()).isF64()) rewrite(m, op, f.libm);
      else if (auto log = dyn_cast<math::LogOp>(op)) rewrite_log(log);
      else if (auto erf = dyn_cast<math::ErfOp>(op)) rewrite_erf(erf);
      else if (!f.f32_polynomial) rewrite(m, op, std::string(f.libm) + "f");
    }
  }
};

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

}  // namespace

void register_accurate_math_pass() { PassRegistration<AccurateMathPass>(); }
void register_math_approx_pass() { PassRegistration<MathApproxPass>(); }

std::string load_vector_libm() {
  const VectorLibm& v = vector_libm();
  return v.handle ? std::string("libmvec x86-64 ") + v.isa : "no libmvec";
}

}  // namespace fluxion::lowering
