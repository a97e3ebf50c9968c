// cuBLAS, loaded with dlopen (libcublas.so.13, then .12) as the driver is, so that one build runs
// with and without it: the library steps of a GPU launch plan (runtime/gpu_library.h) on a real GPU.
// Part of the GPU driver's library (runtime/meson.build), which the GPU check's runner links alone.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "runtime/cuda_driver.h"

namespace fluxion::runtime {

/// Queues library call `function` on gpu's stream through cuBLAS. Only "fluxion_rt_gemm" exists
/// (kernels/library_calls.h's layout: dtype code, batch, m, n, k, trans_lhs, trans_rhs, isa level,
/// threads, lhs, rhs, out). DeviceError naming the call when it is unknown, cuBLAS cannot be
/// loaded, or cuBLAS refuses.
void cublas_library_call(cuda::Gpu& gpu, const std::string& function, std::span<int64_t> args);

/// The cuBLAS GEMM's parameters for fluxion_rt_gemm's row-major layout (exposed for tests):
/// out^T = rhs^T lhs^T in cuBLAS's column-major terms.
struct CublasGemm {
  int transa = 0, transb = 0;  // CUBLAS_OP_N (0) / CUBLAS_OP_T (1)
  int m = 0, n = 0, k = 0;
  int lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  int batch = 0;
  int a_type = 0, b_type = 0, c_type = 0;  // cudaDataType
  int compute = 0;                         // cublasComputeType_t
  uint64_t a = 0, b = 0, c = 0;            // device addresses: rhs, lhs, out
};
/// Throws DeviceError for a layout cuBLAS cannot take (a dtype it lacks, a dimension over 2^31-1).
CublasGemm cublas_gemm_of(std::span<const int64_t> args);

}  // namespace fluxion::runtime
