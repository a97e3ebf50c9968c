// The C entry points of runtime/library_calls.h.
#include "runtime/library_calls.h"

#include <vector>

#include "ir/primitive.h"
#include "prims/registry.h"
#include "runtime/matmul.h"

namespace fluxion::runtime {

const char* const* library_call_param_names(int prim, int* count) {
  static const char* const sort_names[] = {"dimension", "is_stable", "num_keys"};
  static const char* const polygamma_names[] = {"m"};
  switch (Prim(prim)) {
    case Prim::sort: *count = 3; return sort_names;
    case Prim::polygamma: *count = 1; return polygamma_names;
    default: *count = 0; return nullptr;
  }
}

}  // namespace fluxion::runtime

using namespace fluxion;

extern "C" void fluxion_rt_call_prim(int64_t* a) {
  const Prim prim = Prim(a[0]);
  const int64_t n_in = a[1], n_out = a[2], n_params = a[3];
  int count = 0;
  const char* const* names = runtime::library_call_param_names(int(prim), &count);
  Params params;
  for (int64_t i = 0; i < n_params && i < count; ++i) {
    if (std::string_view(names[i]) == "is_stable") params.set(names[i], a[4 + i] != 0);
    else params.set(names[i], a[4 + i]);
  }
  int64_t* p = a + 4 + n_params;
  std::vector<AbstractArray> avals(size_t(n_in + n_out));
  std::vector<View> views(size_t(n_in + n_out));
  for (size_t i = 0; i < avals.size(); ++i) {
    const DType d = DType(*p++);
    const int64_t rank = *p++;
    Shape s;
    for (int64_t k = 0; k < rank; ++k) s.push_back(*p++);
    avals[i] = AbstractArray{s, d, false};
    views[i] = View{reinterpret_cast<void*>(*p++), nullptr};
  }
  for (size_t i = 0; i < avals.size(); ++i) views[i].aval = &avals[i];
  rules(prim).kernel(std::span<const View>(views.data(), size_t(n_in)),
                     std::span<const View>(views.data() + n_in, size_t(n_out)), params);
}

extern "C" void fluxion_rt_gemm(int64_t* a) {
  runtime::Matmul mm;
  mm.is_double = DType(a[0]) == DType::float64;
  mm.batch = a[1], mm.m = a[2], mm.n = a[3], mm.k = a[4];
  mm.trans_lhs = a[5] != 0, mm.trans_rhs = a[6] != 0;
  mm.lhs = reinterpret_cast<const void*>(a[9]);
  mm.rhs = reinterpret_cast<const void*>(a[10]);
  mm.out = reinterpret_cast<void*>(a[11]);
  runtime::matmul(mm, int(a[7]), int(a[8]));
}
