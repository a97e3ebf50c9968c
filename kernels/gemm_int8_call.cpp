// fluxion_rt_gemm_int8 (kernels/library_calls.h): compiled kernels' int8 x int8 -> int32 products
// through kernels/gemm_int8.h. An entry of its own, apart from the float one (kernels/gemm_call.cpp),
// so that an exported int8 program links the int8 GEMM and not Eigen's float products.
#include <algorithm>
#include <cstdint>

#include "kernels/gemm_int8.h"
#include "kernels/library_calls.h"
#include "kernels/scratch.h"

using namespace fluxion;

namespace {

// to[c, r] = from[r, c] for a rows x cols byte matrix.
void transpose_bytes(const int8_t* from, int64_t rows, int64_t cols, int8_t* to) {
  constexpr int64_t kBlock = 64;  // blocks of 64 x 64 bytes: both sides stay in L1
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock)
      for (int64_t r = r0; r < std::min(rows, r0 + kBlock); ++r)
        for (int64_t c = c0; c < std::min(cols, c0 + kBlock); ++c) to[c * rows + r] = from[r * cols + c];
}

// int8 x int8 -> int32, batch entries one after another. The kernel takes row-major lhs [m, k] and
// rhs [k, n]: a transposed operand is first copied into that layout (O(mk + kn) bytes against the
// O(mnk) product). The path follows the kernel's target: a[7] is its x86-64 level plus 256 if it
// has AVX512-VNNI and 512 if AVX-VNNI (lowering/lower_dot_general.cpp).
void int8_gemm_call(const int64_t* a) {
  const int64_t batch = a[1], m = a[2], n = a[3], k = a[4];
  const bool trans_lhs = a[5] != 0, trans_rhs = a[6] != 0;
  const int level_word = int(a[7]), threads = int(a[8]);
  const runtime::Int8Path path =
      runtime::int8_gemm_path(level_word & 0xff, (level_word & 256) != 0, (level_word & 512) != 0);
  const auto* lhs = reinterpret_cast<const int8_t*>(a[9]);
  const auto* rhs = reinterpret_cast<const int8_t*>(a[10]);
  auto* out = reinterpret_cast<int32_t*>(a[11]);
  thread_local runtime::Scratch<int8_t> lhs_rows, rhs_rows;
  for (int64_t b = 0; b < batch; ++b) {
    const int8_t* l = lhs + b * m * k;
    const int8_t* r = rhs + b * k * n;
    if (trans_lhs) transpose_bytes(l, k, m, lhs_rows.get(m * k)), l = lhs_rows.data.get();
    if (trans_rhs) transpose_bytes(r, n, k, rhs_rows.get(k * n)), r = rhs_rows.data.get();
    runtime::int8_gemm_with(path, runtime::Int8Gemm{m, n, k, l, false, r, out + b * m * n}, threads);
  }
}

}  // namespace

extern "C" void fluxion_rt_gemm_int8(int64_t* a) { int8_gemm_call(a); }
