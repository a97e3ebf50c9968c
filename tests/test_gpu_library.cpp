// dot_general on the GPU as a library step of the launch plan (runtime/gpu_library.h): the plan
// (a step calling fluxion_rt_gemm on the right buffers, beside the kernels of the fused ops around
// it), the cuBLAS parameters it maps to (checked by a column-major GEMM written out here, as cuBLAS
// defines it, against the row-major product), and the values on the emulated GPU, whose host
// implementation is the CPU's GEMM. cuBLAS itself is checked only on a GPU.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <functional>
#include <vector>

#include "lowering/compile_cuda.h"
#include "runtime/gpu_library.h"
#include "test_helpers.h"

namespace fx = fluxion;
using test_helpers::ramp;

namespace {

bool no_toolkit() { return fx::lowering::cuda_toolkit_path().empty(); }
bool no_gpu() { return no_toolkit() || fx::devices("cuda").empty(); }

using Fn2 = std::function<fx::Array(const fx::Array&, const fx::Array&)>;

void check_like_cpu(const Fn2& f, const fx::Array& a, const fx::Array& b, double rtol, double atol) {
  const fx::Array want = f(a, b);
  const fx::Device gpu = fx::devices("cuda").at(0);
  const fx::Array got = fx::jit(f)(fx::device_put(a, gpu), fx::device_put(b, gpu));
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  const std::vector<double> g = fx::astype(got, fx::float64).to_vector<double>();
  const std::vector<double> w = fx::astype(want, fx::float64).to_vector<double>();
  int wrong = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (std::abs(g[i] - w[i]) > atol + rtol * std::abs(w[i]) && ++wrong <= 3)
      FAIL_CHECK("element " << i << ": " << g[i] << " on the GPU, " << w[i] << " on the CPU");
}

fx::Array values(const fx::Shape& shape, float lo, float hi) {
  return fx::reshape(fx::array(ramp(shape.numel(), lo, hi)), shape);
}

// cuBLAS's strided batched GEMM as its documentation defines it, column-major:
// C[i + j*ldc] = sum_p op(A)[i, p] op(B)[p, j], op(X)[i, p] = X[i + p*ld] (N) or X[p + i*ld] (T).
void column_major_gemm(const fx::runtime::CublasGemm& g, const double* a, const double* b, double* c) {
  for (int s = 0; s < g.batch; ++s)
    for (int i = 0; i < g.m; ++i)
      for (int j = 0; j < g.n; ++j) {
        double acc = 0;
        for (int p = 0; p < g.k; ++p) {
          const double x = a[s * g.stride_a + (g.transa ? p + int64_t(i) * g.lda : i + int64_t(p) * g.lda)];
          const double y = b[s * g.stride_b + (g.transb ? j + int64_t(p) * g.ldb : p + int64_t(j) * g.ldb)];
          acc += x * y;
        }
        c[s * g.stride_c + i + int64_t(j) * g.ldc] = acc;
      }
}

}  // namespace

TEST_CASE("gpu library: the cuBLAS GEMM of every orientation computes the row-major batched product") {
  const int64_t batch = 2, m = 3, n = 5, k = 4;
  for (int tl = 0; tl < 2; ++tl)
    for (int tr = 0; tr < 2; ++tr) {
      CAPTURE(tl);
      CAPTURE(tr);
      // lhs [b, m, k] (or [b, k, m]), rhs [b, k, n] (or [b, n, k]), row-major.
      std::vector<double> lhs(size_t(batch * m * k)), rhs(size_t(batch * k * n)), want(size_t(batch * m * n)), got(want.size());
      for (size_t i = 0; i < lhs.size(); ++i) lhs[i] = double(i % 7) - 3;
      for (size_t i = 0; i < rhs.size(); ++i) rhs[i] = double(i % 5) * 0.5 - 1;
      for (int64_t s = 0; s < batch; ++s)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double acc = 0;
            for (int64_t p = 0; p < k; ++p)
              acc += lhs[size_t(s * m * k + (tl ? p * m + i : i * k + p))] * rhs[size_t(s * k * n + (tr ? j * k + p : p * n + j))];
            want[size_t(s * m * n + i * n + j)] = acc;
          }
      const std::vector<int64_t> layout{int64_t(fx::DType::float64), batch, m, n, k, tl, tr, 0, 1,
                                        int64_t(uintptr_t(lhs.data())), int64_t(uintptr_t(rhs.data())),
                                        int64_t(uintptr_t(got.data()))};
      const fx::runtime::CublasGemm g = fx::runtime::cublas_gemm_of(layout);
      CHECK(g.batch == batch);
      CHECK(g.compute == 70);  // CUBLAS_COMPUTE_64F
      column_major_gemm(g, reinterpret_cast<const double*>(g.a), reinterpret_cast<const double*>(g.b),
                        reinterpret_cast<double*>(g.c));
      CHECK(got == want);
    }
  // bf16 operands into f32: 16BF inputs, 32F output and compute (no TF32: CUBLAS_COMPUTE_32F).
  const std::vector<int64_t> mixed{int64_t(fx::DType::float32) | (int64_t(fx::DType::bfloat16) << 8), 1, 2, 2, 2, 0, 0, 0, 1, 0, 0, 0};
  const fx::runtime::CublasGemm g = fx::runtime::cublas_gemm_of(mixed);
  CHECK(g.a_type == 14);
  CHECK(g.c_type == 0);
  CHECK(g.compute == 68);
  const std::vector<int64_t> ints{int64_t(fx::DType::int32), 1, 2, 2, 2, 0, 0, 0, 1, 0, 0, 0};
  CHECK_THROWS_AS(fx::runtime::cublas_gemm_of(ints), fx::DeviceError);
}

TEST_CASE("gpu library: a float dot_general is a library step on the program's buffers, between the kernels" *
          doctest::skip(no_toolkit())) {
  const Fn2 f = [](const fx::Array& x, const fx::Array& w) { return fx::nn::relu(fx::matmul(fx::exp(x), w) + 1.f); };
  const fx::runtime::GpuProgram g =
      fx::lowering::compile_cuda(fx::make_ir(f)(fx::zeros({64, 128}), fx::zeros({128, 32})), {});
  int steps = 0;
  for (const fx::runtime::GpuLaunch& l : g.launches) {
    if (l.kind != fx::runtime::GpuLaunch::Kind::library) continue;
    ++steps;
    CHECK(l.kernel == "fluxion_rt_gemm");
    REQUIRE(l.call_args.size() >= 12);
    CHECK(l.call_args[1].value == 1);   // batch
    CHECK(l.call_args[2].value == 64);  // m
    CHECK(l.call_args[3].value == 32);  // n
    CHECK(l.call_args[4].value == 128); // k
    for (int i = 9; i < 12; ++i) CHECK(l.call_args[size_t(i)].param >= 0);
    CHECK(l.params.size() == 3);
  }
  CHECK(steps == 1);
  CHECK(g.launches.size() >= 3);  // exp before it, the bias and relu after
  // An integer product is no GEMM cuBLAS has: it maps as generic loops, without a library step.
  const fx::runtime::GpuProgram ints = fx::lowering::compile_cuda(
      fx::make_ir(Fn2([](const fx::Array& a, const fx::Array& b) { return fx::matmul(a, b); }))(
          fx::zeros({8, 16}, fx::int32), fx::zeros({16, 4}, fx::int32)), {});
  for (const fx::runtime::GpuLaunch& l : ints.launches) CHECK(l.kind == fx::runtime::GpuLaunch::Kind::kernel);
}

TEST_CASE("gpu library: matmuls on the emulated GPU give the CPU's values" * doctest::skip(no_gpu())) {
  const fx::Array x = values({37, 50}, -1.f, 1.f), w = values({50, 21}, -2.f, 2.f);
  check_like_cpu([](const fx::Array& a, const fx::Array& b) { return fx::matmul(a, b); }, x, w, 1e-5, 1e-5);
  check_like_cpu([](const fx::Array& a, const fx::Array& b) { return fx::tanh(fx::matmul(a * 2.f, b)) - 1.f; }, x, w, 1e-5, 1e-5);
  // Transposed operands, batched, f64, bf16 and f16.
  check_like_cpu([](const fx::Array& a, const fx::Array& b) { return fx::matmul(fx::transpose(a), fx::transpose(b)); },
                 values({50, 37}, -1.f, 1.f), values({21, 50}, -1.f, 1.f), 1e-5, 1e-5);
  const fx::Array bx = values({3, 17, 40}, -1.f, 1.f), bw = values({3, 40, 9}, -1.f, 1.f);
  check_like_cpu([](const fx::Array& a, const fx::Array& b) { return fx::matmul(a, b); }, bx, bw, 1e-5, 1e-5);
  check_like_cpu([](const fx::Array& a, const fx::Array& b) { return fx::matmul(a, b); }, fx::astype(bx, fx::float64),
                 fx::astype(bw, fx::float64), 1e-12, 1e-12);
  check_like_cpu([](const fx::Array& a, const fx::Array& b) { return fx::matmul(a, b); }, fx::astype(bx, fx::bfloat16),
                 fx::astype(bw, fx::bfloat16), 1e-2, 1e-2);
  check_like_cpu([](const fx::Array& a, const fx::Array& b) { return fx::matmul(a, b); }, fx::astype(bx, fx::float16),
                 fx::astype(bw, fx::float16), 2e-3, 2e-3);
  // An integer product: generic loops.
  check_like_cpu([](const fx::Array& a, const fx::Array& b) { return fx::matmul(a, b); }, fx::astype(x * 10.f, fx::int32),
                 fx::astype(w * 10.f, fx::int32), 0, 0);
}
