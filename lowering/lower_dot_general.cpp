// Lowering of dot_general (prims/dot_general.cpp): one contraction linalg.generic whose loops are
// (batch..., lhs free..., rhs free..., contracting...), accumulating into a zero-filled tensor.
// Accumulation: the output's compute type for float outputs (f32 for f16/bf16), int64 for integer
// and bool outputs (wrapping; equal to the reference's uint64 modulo 2^bits), then one conversion.
// Complex products are four real ones on the parts (complex_dot_general).
#include <mlir/Dialect/Complex/IR/Complex.h>

#include "ir/dim_expr.h"
#include "lowering/lower.h"
#include "lowering/lower_complex.h"
#include "lowering/target.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

struct DimRoles {
  IntList batch, contracting, free;
};

DimRoles roles(int rank, const IntList& batch, const IntList& contracting) {
  DimRoles r{batch, contracting, {}};
  for (int d = 0; d < rank; ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), d) == contracting.end())
      r.free.push_back(d);
  return r;
}

// The operand's indexing map: batch dim k -> loop k, free dim k -> loop free_base + k, contracting
// dim k -> loop contracting_base + k.
AffineMap operand_map(MLIRContext* ctx, int rank, const DimRoles& r, unsigned free_base, unsigned contracting_base,
                      unsigned loops) {
  SmallVector<AffineExpr> e(static_cast<size_t>(rank));
  for (size_t k = 0; k < r.batch.size(); ++k) e[size_t(r.batch[k])] = getAffineDimExpr(unsigned(k), ctx);
  for (size_t k = 0; k < r.free.size(); ++k) e[size_t(r.free[k])] = getAffineDimExpr(free_base + unsigned(k), ctx);
  for (size_t k = 0; k < r.contracting.size(); ++k)
    e[size_t(r.contracting[k])] = getAffineDimExpr(contracting_base + unsigned(k), ctx);
  return AffineMap::get(loops, 0, e, ctx);
}

// A (batched) matrix product the runtime's library call can do: float32/float64 operands and
// output (or bfloat16/float16 operands, output float32 or theirs, or int8 operands with an int32
// output), batch dims leading and in order on both sides, one contracting dim, each operand of
// rank batch+2 (either orientation). Fills the fluxion_rt_gemm(_int8) layout (kernels/library_calls.h):
// the call runs the Eigen build for the level this kernel is compiled for (FLUXION_CPU included)
// on the kernel's threads, or for int8 the kernels/gemm_int8.h path that level and the target's
// VNNI extensions allow. (uint8 x uint8 stays generated code: the int8 kernel's rhs is signed.)
bool gemm_layout(const LowerCtx& c, const Eqn& e, std::span<const Operand> in, const AbstractArray& out,
                 std::vector<LibraryArg>& layout) {
  const AbstractArray &lhs = in[0].aval, &rhs = in[1].aval;
  const DType d = out.dtype, ops = lhs.dtype;
  const bool narrow = ops == DType::bfloat16 || ops == DType::float16;
  const bool same = ops == d && (narrow || d == DType::float32 || d == DType::float64);
  const bool int8 = ops == DType::int8 && d == DType::int32 && c.matmul != MatmulPath::gpu_library;  // no cuBLAS int8
  if (!(same || int8 || (narrow && d == DType::float32)) || rhs.dtype != ops || in[0].scalar || in[1].scalar) return false;
  const IntList &lb = e.params.get_ints("lhs_batch"), &rb = e.params.get_ints("rhs_batch");
  const IntList &lc = e.params.get_ints("lhs_contracting"), &rc = e.params.get_ints("rhs_contracting");
  const int64_t nb = int64_t(lb.size());
  if (lc.size() != 1 || rc.size() != 1 || lhs.ndim() != nb + 2 || rhs.ndim() != nb + 2) return false;
  for (int64_t k = 0; k < nb; ++k)
    if (lb[size_t(k)] != k || rb[size_t(k)] != k) return false;
  if ((lc[0] != nb && lc[0] != nb + 1) || (rc[0] != nb && rc[0] != nb + 1)) return false;
  const bool trans_lhs = lc[0] == nb, trans_rhs = rc[0] == nb + 1;
  // A size: a constant, or (a symbolic dim of a polymorphic program) read from the buffer at run time.
  auto size = [&](int buffer, const AbstractArray& a, int64_t begin, int64_t end) {
    int64_t v = 1;
    for (int64_t k = begin; k < end; ++k) {
      if (is_symbolic_dim(a.shape[size_t(k)])) {
        return LibraryArg{0, -1, buffer, int(begin), int(end)};
      }
      v *= a.shape[size_t(k)];
    }
    return LibraryArg{v};
  };
  const int64_t mi = trans_lhs ? nb + 1 : nb, ni = trans_rhs ? nb : nb + 1;
  const CpuTarget& t = cpu_target();
  const int64_t level = t.isa_level | (int8 && t.avx512vnni ? 256 : 0) | (int8 && t.avxvnni ? 512 : 0);
  layout = {{int64_t(d) | (ops != d ? int64_t(ops) << 8 : 0)}, size(0, lhs, 0, nb), size(0, lhs, mi, mi + 1),
            size(1, rhs, ni, ni + 1), size(0, lhs, lc[0], lc[0] + 1), {int64_t(trans_lhs)},
            {int64_t(trans_rhs)}, {level}, {c.num_threads}, {0, 0}, {0, 1}, {0, 2}};
  // Symbolic sizes are at least 1: only the known ones can make the product empty.
  int64_t work = 1;
  for (size_t i = 1; i <= 4; ++i) work *= layout[i].dims_of >= 0 ? 1 : layout[i].value;
  return work > 0;
}

std::vector<Value> complex_dot_general(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out);

std::vector<Value> dot_general_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  OpBuilder& b = c.b;
  if (is_complex(out[0].dtype) && in[0].aval.dtype == out[0].dtype && in[1].aval.dtype == out[0].dtype)
    return complex_dot_general(c, e, in, out);
  if (c.matmul != MatmulPath::generated) {
    std::vector<LibraryArg> layout;
    // A polymorphic product's sizes are known at run time only: the library's GEMM serves every size.
    if (gemm_layout(c, e, in, out[0], layout) &&
        (c.matmul == MatmulPath::eigen || c.matmul == MatmulPath::gpu_library || is_symbolic(in[0].aval.shape) ||
         is_symbolic(in[1].aval.shape) ||
         layout[2].value * layout[3].value * layout[4].value >= 32 * 32 * 32)) {
      Value ins[2] = {as_tensor(c, in[0]), as_tensor(c, in[1])};
      AbstractArray in_avals[2] = {in[0].aval, in[1].aval};
      const bool int8 = in[0].aval.dtype == DType::int8;  // gemm_layout took it: int8 x int8 -> int32
      return library_call(c, int8 ? "fluxion_rt_gemm_int8" : "fluxion_rt_gemm", ins, in_avals, out, layout);
    }
  }
  MLIRContext* ctx = b.getContext();
  const AbstractArray &lhs = in[0].aval, &rhs = in[1].aval;
  const DType in_d = lhs.dtype, out_d = out[0].dtype;
  // Accumulators: f32 for the floats below f64, complex in its own precision, integers in i64.
  const DType acc_d = is_complex(out_d) ? out_d
                      : is_float(out_d) ? (out_d == DType::float64 ? DType::float64 : DType::float32)
                                        : DType::int64;
  DimRoles lr = roles(lhs.ndim(), e.params.get_ints("lhs_batch"), e.params.get_ints("lhs_contracting"));
  DimRoles rr = roles(rhs.ndim(), e.params.get_ints("rhs_batch"), e.params.get_ints("rhs_contracting"));
  const unsigned nb = unsigned(lr.batch.size()), nlf = unsigned(lr.free.size()), nrf = unsigned(rr.free.size());
  const unsigned nc = unsigned(lr.contracting.size());
  const unsigned loops = nb + nlf + nrf + nc;
  SmallVector<AffineMap> maps{operand_map(ctx, lhs.ndim(), lr, nb, nb + nlf + nrf, loops),
                              operand_map(ctx, rhs.ndim(), rr, nb + nlf, nb + nlf + nrf, loops)};
  SmallVector<AffineExpr> out_exprs;
  for (unsigned k = 0; k < nb + nlf + nrf; ++k) out_exprs.push_back(getAffineDimExpr(k, ctx));
  maps.push_back(AffineMap::get(loops, 0, out_exprs, ctx));
  SmallVector<utils::IteratorType> iters(loops, utils::IteratorType::parallel);
  for (unsigned k = nb + nlf + nrf; k < loops; ++k) iters[k] = utils::IteratorType::reduction;

  Type acc_elem = storage_type(ctx, acc_d);
  Value init = empty_of(c, out[0].shape, acc_elem);
  if (nc != 0)  // without contracting dims nothing accumulates: the product overwrites it
    init = b.create<linalg::FillOp>(c.loc, ValueRange{constant(b, c.loc, acc_d, 0)}, ValueRange{init}).getResult(0);
  auto g = b.create<linalg::GenericOp>(
      c.loc, TypeRange{RankedTensorType::get(mlir_dims(out[0].shape), acc_elem)},
      ValueRange{as_tensor(c, in[0]), as_tensor(c, in[1])}, ValueRange{init}, maps, iters,
      [&](OpBuilder& nb_, Location nl, ValueRange args) {
        Value x = convert_scalar(nb_, nl, to_compute(nb_, nl, args[0], in_d), in_d, acc_d);
        Value y = convert_scalar(nb_, nl, to_compute(nb_, nl, args[1], in_d), in_d, acc_d);
        Value r = mul_scalars(nb_, nl, x, y, acc_d);
        // With no contracting dims the product is elementwise (an outer product): it must not read
        // its output, which elementwise fusion would replace by the consumer's.
        if (nc != 0)
          r = add_scalars(nb_, nl, args[2], r, acc_d);
        nb_.create<linalg::YieldOp>(nl, r);
      });
  Value r = g.getResult(0);
  if (acc_d == out_d) return {r};
  Operand acc{r, AbstractArray{out[0].shape, acc_d, false}, false};
  return {elementwise(c, out[0], std::span<const Operand>(&acc, 1), [acc_d, out_d](OpBuilder& nb_, Location nl, ValueRange v) {
    return from_compute(nb_, nl, convert_scalar(nb_, nl, v[0], acc_d, out_d), out_d);
  })};
}

// A complex product as four real ones on the parts: (A + iB)(C + iD) = (AC - BD) + i(AD + BC). Each
// is a real dot_general, so large ones become Eigen's GEMM (a complex contraction generic stays
// scalar: MLIR vectors have no complex elements), and the parts' extraction and the combination
// are elementwise passes.
std::vector<Value> complex_dot_general(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  const DType part = real_dtype_of(out[0].dtype);
  auto part_of = [&](const Operand& o, bool imaginary) {
    AbstractArray a{o.aval.shape, part, false};
    Value v = elementwise(c, a, std::span<const Operand>(&o, 1), [imaginary](OpBuilder& b, Location l, ValueRange x) -> Value {
      if (imaginary) return b.create<complex::ImOp>(l, x[0]);
      return b.create<complex::ReOp>(l, x[0]);
    });
    return Operand{v, a, false};
  };
  const Operand parts[2][2] = {{part_of(in[0], false), part_of(in[0], true)}, {part_of(in[1], false), part_of(in[1], true)}};
  const AbstractArray real_out{out[0].shape, part, false};
  const std::vector<Value> kernel_outputs = std::move(c.out_buffers);
  c.out_buffers.clear();  // the real products are temporaries, never the kernel's complex output
  auto product = [&](int i, int j) {
    const Operand ops[2] = {parts[0][i], parts[1][j]};
    return Operand{dot_general_rule(c, e, ops, std::span<const AbstractArray>(&real_out, 1))[0], real_out, false};
  };
  const Operand pp[4] = {product(0, 0), product(1, 1), product(0, 1), product(1, 0)};  // AC, BD, AD, BC
  c.out_buffers = kernel_outputs;
  Type t = storage_type(c.b.getContext(), out[0].dtype);
  return {elementwise(c, out[0], pp, [t](OpBuilder& b, Location l, ValueRange x) -> Value {
    return b.create<complex::CreateOp>(l, t, b.create<arith::SubFOp>(l, x[0], x[1]), b.create<arith::AddFOp>(l, x[2], x[3]));
  })};
}

}  // namespace

void add_dot_general_lowerings(LowerTable& t) { t[size_t(Prim::dot_general)] = &dot_general_rule; }

}  // namespace fluxion::lowering
