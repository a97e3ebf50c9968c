// sort on the GPU. On the CPU the jit calls the reference kernel (lower_library.cpp), host code; on
// a GPU a thread per line (gpu_lines.h) sorts the line's positions with a bottom-up merge sort,
// then every operand is gathered by them. The order is the reference's (prims/sort.cpp):
// lexicographic over the first num_keys operands, NaN last, -0.0 equal to 0.0, complex by real and
// then imaginary part, and stable (a merge takes from the left run on ties), so the result is the
// CPU's exactly. O(n log n) per line with a line per thread: right for batched sorts (rows of
// scores, argsort, top_k over rows); one long line is one thread -- a parallel (bitonic or radix)
// sort for that case is still to do (docs/gpu.md).
#include <mlir/Dialect/Complex/IR/Complex.h>
#include <mlir/Dialect/SCF/IR/SCF.h>

#include "lowering/gpu_lines.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

// Whether a < b in the reference's order for one key dtype (storage values in, i1 out), and b < a.
Value key_less(OpBuilder& b, Location l, DType d, Value x, Value y) {
  if (is_complex(d)) {
    Value xr = b.create<complex::ReOp>(l, x), yr = b.create<complex::ReOp>(l, y);
    Value xi = b.create<complex::ImOp>(l, x), yi = b.create<complex::ImOp>(l, y);
    const DType part = d == DType::complex64 ? DType::float32 : DType::float64;
    Value re_lt = key_less(b, l, part, xr, yr), re_gt = key_less(b, l, part, yr, xr);
    Value tie = b.create<arith::XOrIOp>(l, b.create<arith::OrIOp>(l, re_lt, re_gt),
                                        b.create<arith::ConstantOp>(l, b.getBoolAttr(true)));
    return b.create<arith::OrIOp>(l, re_lt, b.create<arith::AndIOp>(l, tie, key_less(b, l, part, xi, yi)));
  }
  if (is_float(d)) {
    using P = arith::CmpFPredicate;
    Value a = to_compute(b, l, x, d), c = to_compute(b, l, y, d);
    // NaN last: a number is below NaN; NaN is below nothing.
    Value a_num = b.create<arith::CmpFOp>(l, P::ORD, a, a), c_nan = b.create<arith::CmpFOp>(l, P::UNO, c, c);
    return b.create<arith::OrIOp>(l, b.create<arith::AndIOp>(l, a_num, c_nan), b.create<arith::CmpFOp>(l, P::OLT, a, c));
  }
  using P = arith::CmpIPredicate;
  return b.create<arith::CmpIOp>(l, is_signed_int(d) ? P::slt : P::ult, x, y);
}

}  // namespace

std::vector<Value> gpu_sort(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  OpBuilder& b = c.b;
  const Location l = c.loc;
  const AbstractArray& x = in[0].aval;
  std::vector<Value> operands;
  for (const Operand& o : in) operands.push_back(as_tensor(c, o));
  if (x.size() == 0) return operands;
  const int64_t axis = e.params.get_int("dimension"), num_keys = e.params.get_int("num_keys");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[size_t(d)];
  for (int64_t d = axis + 1; d < x.ndim(); ++d) inner *= x.shape[size_t(d)];
  const int64_t n = x.shape[size_t(axis)];
  const Shape shape3{outer, n, inner};
  std::vector<Value> ops3;
  for (size_t i = 0; i < in.size(); ++i)
    ops3.push_back(reshape_to(c, operands[i], x.shape, AbstractArray{shape3, in[i].aval.dtype, false}));

  auto cidx = [&](OpBuilder& nb, int64_t v) -> Value { return nb.create<arith::ConstantIndexOp>(l, v); };
  // Each line: [0, n) the positions being sorted, [n, 2n) the other half of the merge's ping-pong.
  int passes = 0;
  while ((int64_t(1) << passes) < n) ++passes;
  const int64_t result_at = passes % 2 == 0 ? 0 : n;
  Value lines = lines_in_parallel(c, empty_of(c, Shape{outer, 2 * n, inner}, b.getI64Type()),
                                  [&](OpBuilder& nb, Location, Value o, Value k, Value line) {
    // Whether the element at position p sorts before the one at q (positions as i64).
    auto less = [&](OpBuilder& bb, Value p, Value q) {
      Value pi = bb.create<arith::IndexCastOp>(l, bb.getIndexType(), p);
      Value qi = bb.create<arith::IndexCastOp>(l, bb.getIndexType(), q);
      Value r;
      for (int64_t t = num_keys - 1; t >= 0; --t) {
        const DType d = in[size_t(t)].aval.dtype;
        Value a = bb.create<tensor::ExtractOp>(l, ops3[size_t(t)], ValueRange{o, pi, k});
        Value z = bb.create<tensor::ExtractOp>(l, ops3[size_t(t)], ValueRange{o, qi, k});
        Value lt = key_less(bb, l, d, a, z);
        if (!r) {
          r = lt;
          continue;
        }
        Value gt = key_less(bb, l, d, z, a);
        Value not_gt = bb.create<arith::XOrIOp>(l, gt, bb.create<arith::ConstantOp>(l, bb.getBoolAttr(true)));
        r = bb.create<arith::OrIOp>(l, lt, bb.create<arith::AndIOp>(l, not_gt, r));
      }
      return r;
    };
    auto first = nb.create<scf::ForOp>(l, cidx(nb, 0), cidx(nb, n), cidx(nb, 1), ValueRange{line},
                                       [&](OpBuilder& b1, Location, Value j, ValueRange acc) {
      Value p = b1.create<arith::IndexCastOp>(l, b1.getI64Type(), j);
      b1.create<scf::YieldOp>(l, ValueRange{b1.create<tensor::InsertOp>(l, p, acc[0], ValueRange{j}).getResult()});
    });
    Value cur = first.getResult(0);
    for (int pass = 0; pass < passes; ++pass) {
      const int64_t width = int64_t(1) << pass, src = pass % 2 == 0 ? 0 : n, dst = n - src;
      // Each pair of runs [lo, mid) and [mid, hi) merged into dst.
      auto runs = nb.create<scf::ForOp>(l, cidx(nb, 0), cidx(nb, n), cidx(nb, 2 * width), ValueRange{cur},
                                        [&](OpBuilder& b1, Location, Value lo, ValueRange acc1) {
        Value mid = b1.create<arith::MinSIOp>(l, b1.create<arith::AddIOp>(l, lo, cidx(b1, width)), cidx(b1, n));
        Value hi = b1.create<arith::MinSIOp>(l, b1.create<arith::AddIOp>(l, lo, cidx(b1, 2 * width)), cidx(b1, n));
        auto merge = b1.create<scf::ForOp>(l, lo, hi, cidx(b1, 1), ValueRange{lo, mid, acc1[0]},
                                           [&](OpBuilder& b2, Location, Value at, ValueRange s) {
          Value i = s[0], j = s[1], ln = s[2];
          auto read = [&](Value idx) {  // a run's element, clamped into the run's half
            Value in_half = b2.create<arith::MinSIOp>(l, idx, cidx(b2, n - 1));
            return b2.create<tensor::ExtractOp>(l, ln, ValueRange{b2.create<arith::AddIOp>(l, in_half, cidx(b2, src))}).getResult();
          };
          Value left = read(i), right = read(j);
          using P = arith::CmpIPredicate;
          Value left_done = b2.create<arith::CmpIOp>(l, P::sge, i, mid);
          Value right_left = b2.create<arith::CmpIOp>(l, P::slt, j, hi);
          // Take the right run's element when it remains and the left is done or it is strictly
          // smaller (ties go left: stable).
          Value take_right = b2.create<arith::AndIOp>(l, right_left, b2.create<arith::OrIOp>(l, left_done, less(b2, right, left)));
          Value v = b2.create<arith::SelectOp>(l, take_right, right, left);
          Value next = b2.create<tensor::InsertOp>(l, v, ln, ValueRange{b2.create<arith::AddIOp>(l, at, cidx(b2, dst))});
          Value one = cidx(b2, 1), zero = cidx(b2, 0);
          Value i2 = b2.create<arith::AddIOp>(l, i, b2.create<arith::SelectOp>(l, take_right, zero, one));
          Value j2 = b2.create<arith::AddIOp>(l, j, b2.create<arith::SelectOp>(l, take_right, one, zero));
          b2.create<scf::YieldOp>(l, ValueRange{i2, j2, next});
        });
        b1.create<scf::YieldOp>(l, ValueRange{merge.getResult(2)});
      });
      cur = runs.getResult(0);
    }
    return cur;
  });

  // The sorted positions, then each operand gathered by them.
  MLIRContext* ctx = b.getContext();
  const AbstractArray perm_type{shape3, DType::int64, false};
  Value perm = b.create<tensor::ExtractSliceOp>(
      l, tensor_type(ctx, perm_type), lines,
      SmallVector<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(result_at), b.getIndexAttr(0)},
      SmallVector<OpFoldResult>{b.getIndexAttr(outer), b.getIndexAttr(n), b.getIndexAttr(inner)},
      SmallVector<OpFoldResult>(3, b.getIndexAttr(1)));
  std::vector<Value> results;
  SmallVector<utils::IteratorType> iters(3, utils::IteratorType::parallel);
  for (size_t t = 0; t < in.size(); ++t) {
    const AbstractArray o3{shape3, out[t].dtype, false};
    auto g = b.create<linalg::GenericOp>(
        l, TypeRange{tensor_type(ctx, o3)}, ValueRange{perm}, ValueRange{empty(c, o3)},
        SmallVector<AffineMap>(2, b.getMultiDimIdentityMap(3)), iters, [&](OpBuilder& nb, Location, ValueRange args) {
          Value p = nb.create<arith::IndexCastOp>(l, nb.getIndexType(), args[0]);
          Value v = nb.create<tensor::ExtractOp>(l, ops3[t], ValueRange{nb.create<linalg::IndexOp>(l, 0), p,
                                                                          nb.create<linalg::IndexOp>(l, 2)});
          nb.create<linalg::YieldOp>(l, v);
        });
    results.push_back(reshape_to(c, g.getResult(0), shape3, out[t]));
  }
  return results;
}

}  // namespace fluxion::lowering
