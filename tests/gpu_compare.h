// What the emulated-GPU tests of the reduction kernels share (test_gpu_rows.cpp,
// test_gpu_columns.cpp): jit on cuda:0 against eager on the CPU, the inputs, the tolerances.
#pragma once
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <functional>
#include <vector>

#include "lowering/compile_cuda.h"
#include "test_helpers.h"

namespace gpu_compare {

namespace fx = fluxion;

inline bool no_toolkit() { return fx::lowering::cuda_toolkit_path().empty(); }
inline bool no_gpu() { return no_toolkit() || fx::devices("cuda").empty(); }

using Fn = std::function<fx::Array(const fx::Array&)>;

inline fx::runtime::GpuProgram compiled(const Fn& f, const fx::Array& x) {
  return fx::lowering::compile_cuda(fx::make_ir(f)(x), {});
}

/// jit on the GPU against eager on the CPU, elementwise within atol + rtol |cpu| (NaN matches NaN).
inline void check_like_cpu(const Fn& f, const fx::Array& x, double rtol, double atol = 0) {
  const fx::Array want = f(x);
  const fx::Array got = fx::jit(f)(fx::device_put(x, fx::devices("cuda").at(0)));
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  const std::vector<double> g = fx::astype(got, fx::float64).to_vector<double>();
  const std::vector<double> w = fx::astype(want, fx::float64).to_vector<double>();
  int wrong = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool same = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i] ||
                      std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]);
    if (!same && ++wrong <= 3) FAIL_CHECK("element " << i << ": " << g[i] << " on the GPU, " << w[i] << " on the CPU");
  }
}

/// Values of dtype d spread over [lo, hi] (a ramp), shaped.
inline fx::Array values(const fx::Shape& shape, fx::DType d, float lo, float hi) {
  return fx::astype(fx::reshape(fx::array(test_helpers::ramp(shape.numel(), lo, hi)), shape), d);
}

/// Per-dtype relative tolerance of a GPU reduction against the CPU's (integers and bools: exact).
inline double tolerance(fx::DType d) {
  if (d == fx::float16) return 4e-3;
  if (d == fx::bfloat16) return 2e-2;
  if (d == fx::float32) return 2e-5;
  if (d == fx::float64) return 1e-12;
  return 0;
}

}  // namespace gpu_compare
