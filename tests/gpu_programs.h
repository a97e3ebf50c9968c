// The op table's programs that the GPU tests compile and run (test_gpu_ptx.cpp,
// test_gpu_bundle.cpp): each op in each dtype, as the jit would compile it.
#pragma once
#include <sstream>
#include <string>
#include <vector>

#include "lowering/compile_cuda.h"
#include "op_table.h"
#include "prims/registry.h"

namespace optable {

/// The first eqn of `p` whose primitive the GPU pipeline does not lower, or null.
inline const fx::Eqn* not_on_gpu(const fx::Program& p) {
  for (const fx::Eqn& e : p.eqns)
    if (!fx::lowering::gpu_lowers_primitive(e.prim)) return &e;
  return nullptr;
}

/// Whether `p` holds a primitive whose GPU plan may call a GPU library (cuBLAS: prims/registry.h,
/// GpuLowering::library), which the bundle's runner -- a CUDA driver and Python only -- cannot.
inline bool calls_gpu_library(const fx::Program& p) {
  for (const fx::Eqn& e : p.eqns)
    if (fx::rules(e.prim).gpu == fx::GpuLowering::library) return true;
  return false;
}

// Each op in each dtype, on its first sample (or on every sample): the program the jit would compile.
template <class F>
void for_each_program(F&& f, bool every_sample = false) {
  for (const OpInfo& op : op_table()) {
    if (!op.applies(Check::jit)) continue;
    for (fx::DType d : op.dtypes)
      for (size_t i = 0; i < (every_sample ? op.samples.size() : 1); ++i) {
        const Sample& s = op.samples[i];
        std::vector<fx::Array> args = sample_args(s, d);
        try {
          op.op(args);
        } catch (const std::exception&) {
          continue;  // reported by the eager op-table test
        }
        fx::Program p = fx::make_ir([&](const std::vector<fx::Array>& a) { return op.op(a); })(args);
        std::ostringstream what;
        what << op.name << " [" << fx::dtype_name(d) << "] " << s.label;
        f(op, d, args, p, what.str());
      }
  }
}

}  // namespace optable
