// cuBLAS loaded with dlopen (runtime/cublas.h). In the GPU driver's library (runtime/meson.build):
// it needs the driver wrapper and ir/error.h, nothing else of Fluxion, so the GPU check's runner
// makes the same calls as the library.
#include "runtime/cublas.h"

#include <dlfcn.h>

#include <map>
#include <mutex>

#include "ir/dtype.h"
#include "ir/error.h"

namespace fluxion::runtime {

namespace {

// cuBLAS's enums, as its headers number them (no CUDA header is included: see cuda_driver.h).
constexpr int kCudaR32F = 0, kCudaR64F = 1, kCudaR16F = 2, kCudaR16BF = 14;
constexpr int kCompute32F = 68, kCompute64F = 70;  // CUBLAS_COMPUTE_32F (no TF32), CUBLAS_COMPUTE_64F
constexpr int kGemmDefault = -1;                   // CUBLAS_GEMM_DEFAULT

int cuda_type(DType d) {
  switch (d) {
    case DType::float32: return kCudaR32F;
    case DType::float64: return kCudaR64F;
    case DType::float16: return kCudaR16F;
    case DType::bfloat16: return kCudaR16BF;
    default: throw DeviceError("DeviceError: cuBLAS GEMM of operands of dtype code " + std::to_string(int(d)) + ": not a type it takes");
  }
}

int as_int(int64_t v, const char* what) {
  if (v < 0 || v > INT32_MAX)
    throw DeviceError(std::string("DeviceError: cuBLAS GEMM: ") + what + " " + std::to_string(v) + " is over 2^31-1");
  return int(v);
}

// libcublas, loaded once per process.
struct Cublas {
  using Create = int (*)(void**);
  using SetStream = int (*)(void*, void*);
  using GemmEx = int (*)(void*, int, int, int, int, int, const void*, const void*, int, int, long long, const void*, int,
                         int, long long, const void*, void*, int, int, long long, int, int, int);
  using StatusString = const char* (*)(int);
  void* lib = nullptr;
  std::string name, reason;
  Create create = nullptr;
  SetStream set_stream = nullptr;
  GemmEx gemm = nullptr;
  StatusString status_string = nullptr;
  std::mutex mu;
  std::map<int, void*> handles;  // per GPU ordinal

  Cublas() {
    for (const char* candidate : {"libcublas.so.13", "libcublas.so.12"}) {
      lib = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
      if (lib) {
        name = candidate;
        break;
      }
      const char* why = dlerror();
      reason += std::string(reason.empty() ? "" : "; ") + (why ? why : candidate);
    }
    if (!lib) return;
    create = reinterpret_cast<Create>(dlsym(lib, "cublasCreate_v2"));
    set_stream = reinterpret_cast<SetStream>(dlsym(lib, "cublasSetStream_v2"));
    gemm = reinterpret_cast<GemmEx>(dlsym(lib, "cublasGemmStridedBatchedEx"));
    status_string = reinterpret_cast<StatusString>(dlsym(lib, "cublasGetStatusString"));
    if (!create || !set_stream || !gemm) reason = name + " lacks cublasCreate_v2, cublasSetStream_v2 or cublasGemmStridedBatchedEx";
  }
  bool usable() const { return lib && create && set_stream && gemm; }

  void check(int status, const char* call) const {
    if (status == 0) return;
    const char* text = status_string ? status_string(status) : nullptr;
    throw DeviceError(std::string("DeviceError: ") + call + ": cuBLAS status " + std::to_string(status) +
                      (text ? std::string(" (") + text + ")" : std::string()));
  }

  // The GPU's handle, bound to its stream (created on first use, kept for the process).
  void* handle(cuda::Gpu& gpu) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = handles.find(gpu.ordinal());
    if (it != handles.end()) return it->second;
    void* h = nullptr;
    check(create(&h), "cublasCreate_v2");
    check(set_stream(h, gpu.stream()), "cublasSetStream_v2");
    return handles.emplace(gpu.ordinal(), h).first->second;
  }

  static Cublas& get() {
    static Cublas c;
    return c;
  }
};

void gemm_on_gpu(cuda::Gpu& gpu, std::span<const int64_t> args) {
  const CublasGemm g = cublas_gemm_of(args);
  Cublas& lib = Cublas::get();
  if (!lib.usable())
    throw DeviceError("DeviceError: jit on " + std::string("cuda:") + std::to_string(gpu.ordinal()) +
                      ": dot_general needs cuBLAS, which could not be loaded: " + lib.reason);
  gpu.make_current();
  void* h = lib.handle(gpu);
  const float alpha32 = 1, beta32 = 0;
  const double alpha64 = 1, beta64 = 0;
  const bool f64 = g.compute == kCompute64F;
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
  lib.check(lib.gemm(h, g.transa, g.transb, g.m, g.n, g.k, alpha, reinterpret_cast<const void*>(g.a), g.a_type, g.lda,
                     g.stride_a, reinterpret_cast<const void*>(g.b), g.b_type, g.ldb, g.stride_b, beta,
                     reinterpret_cast<void*>(g.c), g.c_type, g.ldc, g.stride_c, g.batch, g.compute, kGemmDefault),
            "cublasGemmStridedBatchedEx");
}

}  // namespace

CublasGemm cublas_gemm_of(std::span<const int64_t> args) {
  if (args.size() < 12) throw DeviceError("DeviceError: cuBLAS GEMM: a layout of " + std::to_string(args.size()) + " integers, not 12");
  const DType out = DType(args[0] & 0xff);
  const DType ops = (args[0] >> 8) ? DType(args[0] >> 8) : out;
  const int64_t m = args[2], n = args[3], k = args[4];
  const bool trans_lhs = args[5] != 0, trans_rhs = args[6] != 0;
  CublasGemm g;
  // Row-major out[m, n] = lhs[m, k] rhs[k, n] is column-major out^T[n, m] = rhs^T[n, k] lhs^T[k, m]:
  // a row-major [r, c] matrix is a column-major [c, r] one with leading dimension c.
  g.transa = trans_rhs ? 1 : 0;
  g.transb = trans_lhs ? 1 : 0;
  g.m = as_int(n, "n");
  g.n = as_int(m, "m");
  g.k = as_int(k, "k");
  g.lda = as_int(trans_rhs ? k : n, "a leading dimension");
  g.ldb = as_int(trans_lhs ? m : k, "a leading dimension");
  g.ldc = as_int(n, "a leading dimension");
  g.stride_a = n * k;
  g.stride_b = m * k;
  g.stride_c = m * n;
  g.batch = as_int(args[1], "the batch");
  g.a_type = g.b_type = cuda_type(ops);
  g.c_type = cuda_type(out);
  g.compute = out == DType::float64 ? kCompute64F : kCompute32F;
  g.a = uint64_t(args[10]);
  g.b = uint64_t(args[9]);
  g.c = uint64_t(args[11]);
  return g;
}

void cublas_library_call(cuda::Gpu& gpu, const std::string& function, std::span<int64_t> args) {
  if (function != "fluxion_rt_gemm")
    throw DeviceError("DeviceError: a GPU launch plan calls " + function + ", which no GPU library provides");
  gemm_on_gpu(gpu, args);
}

}  // namespace fluxion::runtime
