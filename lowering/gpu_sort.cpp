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

// The operands as [outer, n, inner] and how many of them are keys.
struct SortKeys {
  std::span<const Operand> in;
  std::vector<Value> ops3;
  int64_t num_keys;
};

// Whether the element at position p (i64) of line (o, k) sorts before the one at q.
Value sorts_before(OpBuilder& b, Location l, const SortKeys& s, Value o, Value k, Value p, Value q) {
  Value pi = b.create<arith::IndexCastOp>(l, b.getIndexType(), p), qi = b.create<arith::IndexCastOp>(l, b.getIndexType(), q);
  Value r;
  for (int64_t t = s.num_keys - 1; t >= 0; --t) {  // lexicographic: the first key decides unless tied
    const DType d = s.in[size_t(t)].aval.dtype;
    Value a = b.create<tensor::ExtractOp>(l, s.ops3[size_t(t)], ValueRange{o, pi, k});
    Value z = b.create<tensor::ExtractOp>(l, s.ops3[size_t(t)], ValueRange{o, qi, k});
    Value lt = key_less(b, l, d, a, z);
    if (!r) {
      r = lt;
      continue;
    }
    Value not_gt = b.create<arith::XOrIOp>(l, key_less(b, l, d, z, a), b.create<arith::ConstantOp>(l, b.getBoolAttr(true)));
    r = b.create<arith::OrIOp>(l, lt, b.create<arith::AndIOp>(l, not_gt, r));
  }
  return r;
}

// One line of 2n positions: [0, n) filled with 0..n-1, then `passes` bottom-up merge passes, each
// from one half into the other (the result in the first half after an even number of passes).
Value merge_sort_line(OpBuilder& nb, Location l, const SortKeys& s, Value o, Value k, Value line, int64_t n, int passes) {
  auto c = [&](OpBuilder& b, int64_t v) -> Value { return b.create<arith::ConstantIndexOp>(l, v); };
  auto first = nb.create<scf::ForOp>(l, c(nb, 0), c(nb, n), c(nb, 1), ValueRange{line}, [&](OpBuilder& b1, Location, Value j, ValueRange acc) {
    Value p = b1.create<arith::IndexCastOp>(l, b1.getI64Type(), j);
    b1.create<scf::YieldOp>(l, ValueRange{b1.create<tensor::InsertOp>(l, p, acc[0], ValueRange{j}).getResult()});
  });
  Value cur = first.getResult(0);
  for (int pass = 0; pass < passes; ++pass) {
    const int64_t width = int64_t(1) << pass, src = pass % 2 == 0 ? 0 : n, dst = n - src;
    // Each pair of runs [lo, mid) and [mid, hi) merged into dst.
    auto runs = nb.create<scf::ForOp>(l, c(nb, 0), c(nb, n), c(nb, 2 * width), ValueRange{cur}, [&](OpBuilder& b1, Location, Value lo, ValueRange acc1) {
      Value mid = b1.create<arith::MinSIOp>(l, b1.create<arith::AddIOp>(l, lo, c(b1, width)), c(b1, n));
      Value hi = b1.create<arith::MinSIOp>(l, b1.create<arith::AddIOp>(l, lo, c(b1, 2 * width)), c(b1, n));
      auto merge = b1.create<scf::ForOp>(l, lo, hi, c(b1, 1), ValueRange{lo, mid, acc1[0]}, [&](OpBuilder& b2, Location, Value at, ValueRange st) {
        Value i = st[0], j = st[1], ln = st[2];
        auto read = [&](Value idx) {  // a run's element, the index clamped into the source half
          Value in_half = b2.create<arith::AddIOp>(l, b2.create<arith::MinSIOp>(l, idx, c(b2, n - 1)), c(b2, src));
          return b2.create<tensor::ExtractOp>(l, ln, ValueRange{in_half}).getResult();
        };
        Value left = read(i), right = read(j);
        using P = arith::CmpIPredicate;
        // The right run's element when it remains and the left run is done or it is strictly
        // smaller: ties go left, so the sort is stable.
        Value take_right = b2.create<arith::AndIOp>(
            l, b2.create<arith::CmpIOp>(l, P::slt, j, hi),
            b2.create<arith::OrIOp>(l, b2.create<arith::CmpIOp>(l, P::sge, i, mid), sorts_before(b2, l, s, o, k, right, left)));
        Value v = b2.create<arith::SelectOp>(l, take_right, right, left);
        Value next = b2.create<tensor::InsertOp>(l, v, ln, ValueRange{b2.create<arith::AddIOp>(l, at, c(b2, dst))});
        Value i2 = b2.create<arith::AddIOp>(l, i, b2.create<arith::SelectOp>(l, take_right, c(b2, 0), c(b2, 1)));
        Value j2 = b2.create<arith::AddIOp>(l, j, b2.create<arith::SelectOp>(l, take_right, c(b2, 1), c(b2, 0)));
        b2.create<scf::YieldOp>(l, ValueRange{i2, j2, next});
      });
      b1.create<scf::YieldOp>(l, ValueRange{merge.getResult(2)});
    });
    cur = runs.getResult(0);
  }
  return cur;
}

// op3 [outer, n, inner] gathered along n by the positions `perm` (i64, the same shape).
Value gathered(LowerCtx& c, Value perm, Value op3, const AbstractArray& o3) {
  OpBuilder& b = c.b;
  SmallVector<utils::IteratorType> iters(3, utils::IteratorType::parallel);
  auto g = b.create<linalg::GenericOp>(
      c.loc, TypeRange{tensor_type(b.getContext(), o3)}, ValueRange{perm}, ValueRange{empty(c, o3)},
      SmallVector<AffineMap>(2, b.getMultiDimIdentityMap(3)), iters, [&](OpBuilder& nb, Location l, ValueRange args) {
        Value p = nb.create<arith::IndexCastOp>(l, nb.getIndexType(), args[0]);
        Value v = nb.create<tensor::ExtractOp>(l, op3, ValueRange{nb.create<linalg::IndexOp>(l, 0), p, nb.create<linalg::IndexOp>(l, 2)});
        nb.create<linalg::YieldOp>(l, v);
      });
  return g.getResult(0);
}

}  // namespace

std::vector<Value> gpu_sort(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  OpBuilder& b = c.b;
  const AbstractArray& x = in[0].aval;
  std::vector<Value> operands;
  for (const Operand& o : in) operands.push_back(as_tensor(c, o));
  if (x.size() == 0) return operands;
  const int64_t axis = e.params.get_int("dimension");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[size_t(d)];
  for (int64_t d = axis + 1; d < x.ndim(); ++d) inner *= x.shape[size_t(d)];
  const int64_t n = x.shape[size_t(axis)];
  const Shape shape3{outer, n, inner};
  SortKeys keys{in, {}, e.params.get_int("num_keys")};
  for (size_t i = 0; i < in.size(); ++i)
    keys.ops3.push_back(reshape_to(c, operands[i], x.shape, AbstractArray{shape3, in[i].aval.dtype, false}));
  int passes = 0;
  while ((int64_t(1) << passes) < n) ++passes;
  // Each line: [0, n) the positions being sorted, [n, 2n) the other half of the merge's ping-pong.
  Value lines = lines_in_parallel(c, empty_of(c, Shape{outer, 2 * n, inner}, b.getI64Type()),
                                  [&](OpBuilder& nb, Location l, Value o, Value k, Value line) {
                                    return merge_sort_line(nb, l, keys, o, k, line, n, passes);
                                  });
  const AbstractArray perm_type{shape3, DType::int64, false};
  Value perm = b.create<tensor::ExtractSliceOp>(
      c.loc, tensor_type(b.getContext(), perm_type), lines,
      SmallVector<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(passes % 2 == 0 ? 0 : n), b.getIndexAttr(0)},
      SmallVector<OpFoldResult>{b.getIndexAttr(outer), b.getIndexAttr(n), b.getIndexAttr(inner)},
      SmallVector<OpFoldResult>(3, b.getIndexAttr(1)));
  std::vector<Value> results;
  for (size_t t = 0; t < in.size(); ++t) {
    const AbstractArray o3{shape3, out[t].dtype, false};
    results.push_back(reshape_to(c, gathered(c, perm, keys.ops3[t], o3), shape3, out[t]));
  }
  return results;
}

}  // namespace fluxion::lowering
