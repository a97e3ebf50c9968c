// Lowering of the windowed primitives (conv_general_dilated, the reduce_window family): one library
// call of the entry kernels/conv.h's windowed_entry picks -- a float convolution as im2col + the GEMM
// of the level this kernel is compiled for (FLUXION_CPU included) on the kernel's threads, an int8
// one into the int8 GEMM, pooling as strided loops -- or of the reference kernel. docs/nn.md records the measurements behind the choice:
// linalg's convolution op, tiled and vectorized by the pipeline, is kept below as a switch for
// measuring it.
#include <cstdlib>
#include <string>

#include "ir/error.h"
#include "ir/settings.h"
#include "lowering/gpu_lines.h"
#include "lowering/gpu_windows.h"
#include "lowering/library_arrays.h"
#include "lowering/lower.h"
#include "lowering/target.h"
#include "kernels/conv.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

// For measurement only (docs/nn.md): FLUXION_CONV_LOWERING=linalg lowers a plain 2-D float32
// convolution (NCHW x OIHW -> NCHW, no input dilation, no groups, non-negative padding) to
// linalg.conv_2d_nchw_fchw on a zero-padded input, which the pipeline generalizes, tiles and
// vectorizes like any other loop nest, instead of calling the library.
bool linalg_requested() {
  static const bool on = choice_setting("FLUXION_CONV_LOWERING") == "linalg";
  return on;
}

bool plain_2d(const Eqn& e, std::span<const Operand> in, const AbstractArray& out) {
  const IntList canonical{0, 1, 2, 3};
  const Params& p = e.params;
  if (in[0].aval.dtype != DType::float32 || out.dtype != DType::float32 || in[0].aval.ndim() != 4) return false;
  if (p.get_ints("lhs_spec") != canonical || p.get_ints("rhs_spec") != canonical || p.get_ints("out_spec") != canonical)
    return false;
  if (p.get_int("feature_group_count") != 1 || p.get_int("batch_group_count") != 1) return false;
  for (int64_t d : p.get_ints("lhs_dilation"))
    if (d != 1) return false;
  for (int64_t d : p.get_ints("padding"))
    if (d < 0) return false;
  return true;
}

Value linalg_conv(LowerCtx& c, const Eqn& e, std::span<const Operand> in, const AbstractArray& out) {
  OpBuilder& b = c.b;
  const IntList& pad = e.params.get_ints("padding");
  const Shape& xs = in[0].aval.shape;
  AbstractArray padded{Shape{xs[0], xs[1], xs[2] + pad[0] + pad[1], xs[3] + pad[2] + pad[3]}, DType::float32, false};
  Value zero = b.create<arith::ConstantOp>(c.loc, b.getF32FloatAttr(0.f));
  Value x = as_tensor(c, in[0]);
  if (!(padded.shape == xs)) {
    SmallVector<OpFoldResult> off{b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(pad[0]), b.getIndexAttr(pad[2])};
    SmallVector<OpFoldResult> size, step(4, b.getIndexAttr(1));
    for (int64_t d : xs) size.push_back(b.getIndexAttr(d));
    x = b.create<tensor::InsertSliceOp>(c.loc, x, filled(c, padded, zero), off, size, step);
  }
  const IntList &st = e.params.get_ints("window_strides"), &dil = e.params.get_ints("rhs_dilation");
  auto conv = b.create<linalg::Conv2DNchwFchwOp>(
      c.loc, TypeRange{tensor_type(b.getContext(), out)}, ValueRange{x, as_tensor(c, in[1])},
      ValueRange{filled(c, out, zero)}, b.getI64TensorAttr({st[0], st[1]}), b.getI64TensorAttr({dil[0], dil[1]}));
  return conv.getResult(0);
}

std::vector<Value> windowed_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  if (lowering_for_gpu(c)) return gpu_windowed(c, e, in, out);  // the library is host code
  if (e.prim == Prim::conv_general_dilated && linalg_requested() && plain_2d(e, in, out[0]))
    return {linalg_conv(c, e, in, out[0])};
  std::vector<int64_t> params;
  runtime::encode_window_params(e.prim, e.params, params);
  const CpuTarget& t = cpu_target();  // the VNNI bits choose the int8 convolution's GEMM (kernels/conv_int8.h)
  const int64_t level = t.isa_level | (t.avx512vnni ? 256 : 0) | (t.avxvnni ? 512 : 0);
  std::vector<LibraryArg> layout{{int64_t(e.prim)}, {int64_t(in.size())}, {int64_t(out.size())}, {level}, {c.num_threads}};
  for (int64_t v : params) layout.push_back({v});
  std::vector<AbstractArray> in_avals;
  for (const Operand& o : in) in_avals.push_back(o.aval);
  return call_on_arrays(c, runtime::windowed_entry(e.prim, in_avals, out, e.params), std::move(layout), in, out);
}

}  // namespace

void add_conv_lowerings(LowerTable& t) {
  for (Prim p : {Prim::conv_general_dilated, Prim::reduce_window_sum, Prim::reduce_window_max, Prim::reduce_window_min,
                 Prim::select_and_gather_add, Prim::select_and_scatter_add})
    t[size_t(p)] = &windowed_rule;
}

}  // namespace fluxion::lowering
