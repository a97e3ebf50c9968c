// Reading back a library call's arrays (kernels/call_arrays.h).
#include "kernels/call_arrays.h"

namespace fluxion::runtime {

CallArrays read_call_arrays(const int64_t*& p, int64_t count) {
  CallArrays r{std::vector<AbstractArray>(size_t(count)), std::vector<View>(size_t(count))};
  for (size_t i = 0; i < size_t(count); ++i) {
    const DType d = DType(*p++);
    const int64_t rank = *p++;
    Shape s;
    for (int64_t k = 0; k < rank; ++k) s.push_back(*p++);
    r.avals[i] = AbstractArray{s, d, false};
    r.views[i] = View{reinterpret_cast<void*>(*p++), &r.avals[i]};
  }
  return r;
}

}  // namespace fluxion::runtime
