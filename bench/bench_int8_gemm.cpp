// The int8 GEMM (kernels/gemm_int8.h) on every path this CPU has against the float32 product the
// jit's dot_general calls (runtime::matmul at the host's level), 1024^3 by default, in one run so
// the numbers share the machine's load. Prints the CPU's SIMD flags first (the paths depend on them).
// Usage: fluxion_bench_int8_gemm [size] [threads] [repeats]
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/timing.h"
#include "kernels/gemm_int8.h"
#include "kernels/matmul.h"

namespace {

// The avx* and *vnni* words of /proc/cpuinfo's first flags line.
std::string simd_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, word, kept;
  while (std::getline(in, line))
    if (line.starts_with("flags")) {
      std::istringstream words(line);
      while (words >> word)
        if (word.starts_with("avx") || word.find("vnni") != std::string::npos) kept += word + " ";
      break;
    }
  return kept.empty() ? "(none found)" : kept;
}

}  // namespace

int main(int argc, char** argv) {
  namespace rt = fluxion::runtime;
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1024;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 5;
  std::printf("CPU SIMD flags: %s\nsize %lld^3, %d thread(s), best of %d\n", simd_flags().c_str(), (long long)n,
              threads, repeats);
  std::mt19937 rng(1);
  std::vector<int8_t> a8(size_t(n * n)), b8(size_t(n * n));
  std::vector<float> af(size_t(n * n)), bf(size_t(n * n)), outf(size_t(n * n));
  std::vector<int32_t> out32(size_t(n * n));
  for (size_t i = 0; i < a8.size(); ++i) a8[i] = int8_t(rng()), b8[i] = int8_t(rng()), af[i] = a8[i], bf[i] = b8[i];
  const double ops = 2.0 * double(n) * double(n) * double(n);
  rt::Matmul mm;
  mm.m = mm.n = mm.k = n, mm.lhs = af.data(), mm.rhs = bf.data(), mm.out = outf.data();
  const int level = rt::host_isa_level();
  const double f32 = fluxion_bench::best_ms([&] { rt::matmul(mm, level, threads); }, repeats);
  std::printf("%-28s %9.2f ms %8.1f GFLOP/s\n", ("f32 " + rt::matmul_implementation(level)).c_str(), f32, ops / f32 / 1e6);
  for (rt::Int8Path path : {rt::Int8Path::portable, rt::Int8Path::avx2, rt::Int8Path::avx_vnni, rt::Int8Path::avx512_vnni}) {
    if (!rt::int8_path_available(path)) continue;
    const rt::Int8Gemm g{n, n, n, a8.data(), false, b8.data(), out32.data()};
    const double ms = fluxion_bench::best_ms([&] { rt::int8_gemm_with(path, g, threads); }, repeats);
    std::printf("%-28s %9.2f ms %8.1f GOP/s  %.2fx f32%s\n", ("int8 " + rt::int8_path_name(path)).c_str(), ms,
                ops / ms / 1e6, f32 / ms, path == rt::int8_gemm_path(level) ? "  (chosen)" : "");
  }
}
