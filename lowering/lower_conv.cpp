// Lowering of the windowed primitives (conv_general_dilated, the reduce_window family): one library
// call of fluxion_rt_windowed (runtime/conv.h), which runs a float convolution as im2col + the GEMM
// of the level this kernel is compiled for (FLUXION_CPU included) on the kernel's threads, and the
// other cases through the reference kernel. docs/nn.md records the measurements behind the choice
// (linalg's convolution ops, tiled and vectorized, against the library call).
#include "ir/error.h"
#include "lowering/library_arrays.h"
#include "lowering/lower.h"
#include "lowering/target.h"
#include "runtime/conv.h"

namespace fluxion::lowering {

using namespace mlir;

namespace {

std::vector<Value> windowed_rule(LowerCtx& c, const Eqn& e, std::span<const Operand> in, std::span<const AbstractArray> out) {
  std::vector<int64_t> params;
  runtime::encode_window_params(e.prim, e.params, params);
  std::vector<LibraryArg> layout{{int64_t(e.prim)}, {int64_t(in.size())}, {int64_t(out.size())},
                                 {cpu_target().isa_level}, {c.num_threads}};
  for (int64_t v : params) layout.push_back({v});
  return call_on_arrays(c, "fluxion_rt_windowed", std::move(layout), in, out);
}

}  // namespace

void add_conv_lowerings(LowerTable& t) {
  for (Prim p : {Prim::conv_general_dilated, Prim::reduce_window_sum, Prim::reduce_window_max, Prim::reduce_window_min,
                 Prim::select_and_gather_add, Prim::select_and_scatter_add})
    t[size_t(p)] = &windowed_rule;
}

}  // namespace fluxion::lowering
