// The launch plans of the GPU check's training workloads (tests/test_gpu_bundle_bench.cpp): what
// each program becomes on the GPU, read from the plan without running it. Speed needs a GPU; that
// every product of the MLP step is cuBLAS's GEMM and not a kernel of a thread per output element
// looping over the contraction does not.
#include <doctest/doctest.h>

#include "bench/models.h"
#include "interpreters/jit_passes.h"
#include "lowering/compile_cuda.h"

namespace {

namespace fx = fluxion;
using Arrays = std::vector<fx::Array>;

bool no_toolkit() { return fx::lowering::cuda_toolkit_path().empty(); }

int count_prims(const fx::Program& p, fx::Prim prim) {
  int n = 0;
  for (const fx::Eqn& e : p.eqns) n += e.prim == prim;
  return n;
}

int library_steps(const fx::runtime::GpuProgram& g) {
  int n = 0;
  for (const fx::runtime::GpuLaunch& l : g.launches) n += l.kind == fx::runtime::GpuLaunch::Kind::library;
  return n;
}

}  // namespace

TEST_CASE("gpu plans: every product of the MLP training step (forward and backward) is a cuBLAS GEMM step" *
          doctest::skip(no_toolkit())) {
  // The GPU check's MLP step: batch 256, 784-512-10, SGD (tests/test_gpu_bundle_bench.cpp).
  const int64_t b = 256, i = 784, h = 512, o = 10;
  const Arrays mlp{fx::zeros({i, h}), fx::zeros({h}), fx::zeros({h, o}), fx::zeros({o}), fx::zeros({b, i}), fx::zeros({b, o})};
  auto step = [](const Arrays& a) {
    const bench::Mlp p{a[0], a[1], a[2], a[3]};
    auto [loss, g] = fx::value_and_grad(bench::mlp_loss)(p, a[4], a[5]);
    return Arrays{loss, p.w1 - 0.01f * g.w1, p.b1 - 0.01f * g.b1, p.w2 - 0.01f * g.w2, p.b2 - 0.01f * g.b2};
  };
  const fx::Program p = fx::jit_passes(fx::make_ir(step)(mlp), "mlp_step");  // as fx::jit hands it over
  // x.w1 and h.w2 forward; dw2 = h^T.dz, dh = dz.w2^T and dw1 = x^T.dh' backward (dx is not needed).
  const int products = count_prims(p, fx::Prim::dot_general);
  CHECK(products == 5);
  const fx::runtime::GpuProgram g = fx::lowering::compile_cuda(p, {});
  CHECK(library_steps(g) == products);
  for (const fx::runtime::GpuLaunch& l : g.launches)
    if (l.kind == fx::runtime::GpuLaunch::Kind::library) CHECK(l.kernel == "fluxion_rt_gemm");
}
