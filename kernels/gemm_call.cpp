// fluxion_rt_gemm (kernels/library_calls.h): compiled kernels' float matmul through Eigen. A file of
// its own so that the AOT runtime (kernels/aot_runtime.cpp) links it without the reference kernels,
// and apart from the int8 entry (kernels/gemm_int8_call.cpp) so that a program of int8 products
// links no Eigen.
#include <cstdint>

#include "ir/dtype.h"
#include "kernels/library_calls.h"
#include "kernels/matmul.h"

using namespace fluxion;

extern "C" void fluxion_rt_gemm(int64_t* a) {
  // a[0]: the output's dtype, and the operands' in bits 8-15 (0: the output's).
  const DType out = DType(a[0] & 0xff), operands = a[0] >> 8 ? DType(a[0] >> 8) : out;
  runtime::Matmul mm;
  mm.is_double = out == DType::float64;
  mm.operands = mm.is_double ? DType::float32 : operands;
  mm.narrow_out = out != DType::float32 && !mm.is_double;
  mm.batch = a[1], mm.m = a[2], mm.n = a[3], mm.k = a[4];
  mm.trans_lhs = a[5] != 0, mm.trans_rhs = a[6] != 0;
  mm.lhs = reinterpret_cast<const void*>(a[9]);
  mm.rhs = reinterpret_cast<const void*>(a[10]);
  mm.out = reinterpret_cast<void*>(a[11]);
  runtime::matmul(mm, int(a[7]), int(a[8]));
}
