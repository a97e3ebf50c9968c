// Shape primitives: broadcast_in_dim reshape transpose squeeze rev concatenate pad iota slice.
#include "prims/registry.h"
#include "ir/error.h"

#include <cstring>

namespace fluxion {
namespace {

// broadcast_in_dim[shape=S broadcast_dimensions=B] x: operand dim i becomes output dim B[i]; each
// operand dim is 1 or equal to the output dim; B is strictly increasing.
std::vector<AbstractArray> broadcast_in_dim_rule(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand");
  const IntList& shape = params.get_ints("shape");
  const IntList& bdims = params.get_ints("broadcast_dimensions");
  const AbstractArray& x = in[0];
  if (int(bdims.size()) != x.ndim())
    rule_error(ErrorKind::Shape, "broadcast_dimensions has " + std::to_string(bdims.size()) +
                                     " entries for an operand of rank " + std::to_string(x.ndim()));
  for (size_t i = 0; i < bdims.size(); ++i) {
    int64_t d = bdims[i];
    if (d < 0 || d >= int64_t(shape.size()) || (i && d <= bdims[i - 1]))
      rule_error(ErrorKind::Shape, "broadcast_dimensions must be strictly increasing and within the output rank");
    if (x.shape[i] != 1 && x.shape[i] != shape[size_t(d)])
      rule_error(ErrorKind::Shape, "operand dimension " + std::to_string(i) + " (size " + std::to_string(x.shape[i]) +
                                       ") cannot broadcast to output dimension " + std::to_string(d) + " (size " +
                                       std::to_string(shape[size_t(d)]) + ")");
  }
  for (int64_t s : shape)
    if (s < 0) rule_error(ErrorKind::Shape, "negative dimension in shape");
  return {AbstractArray{Shape(shape), x.dtype, x.weak_type}};
}

void broadcast_in_dim_kernel(std::span<const View> in, std::span<const View> out, const Params& params) {
  const IntList& bdims = params.get_ints("broadcast_dimensions");
  const Shape& os = out[0].shape();
  const Shape& is = in[0].shape();
  const int rank = os.rank();
  // Stride of each output dim in the operand (0 where broadcast).
  std::vector<int64_t> in_strides = strides_of(is), st(size_t(rank), 0);
  for (size_t i = 0; i < bdims.size(); ++i)
    if (is[i] != 1) st[size_t(bdims[i])] = in_strides[i];
  const size_t isz = itemsize(out[0].dtype());
  const char* src = static_cast<const char*>(in[0].data);
  char* dst = static_cast<char*>(out[0].data);
  const int64_t n = out[0].size();
  if (n == 0) return;
  // Innermost run: copy contiguous rows when the last dim is not broadcast, else splat.
  std::vector<int64_t> idx(size_t(rank), 0);
  int64_t inner = rank ? os[size_t(rank - 1)] : 1;
  int64_t inner_st = rank ? st[size_t(rank - 1)] : 0;
  for (int64_t o = 0; o < n; o += inner) {
    int64_t off = 0;
    for (int d = 0; d < rank - 1; ++d) off += idx[size_t(d)] * st[size_t(d)];
    const char* s = src + size_t(off) * isz;
    char* t = dst + size_t(o) * isz;
    if (inner_st == 1) {
      std::memcpy(t, s, size_t(inner) * isz);
    } else {
      for (int64_t k = 0; k < inner; ++k) std::memcpy(t + size_t(k) * isz, s + size_t(k * inner_st) * isz, isz);
    }
    for (int d = rank - 2; d >= 0; --d) {
      if (++idx[size_t(d)] < os[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
}

// iota[dtype shape dimension]: 0, 1, ... along `dimension`, constant along the others.
std::vector<AbstractArray> iota_rule(std::span<const AbstractArray> in, const Params& params) {
  if (!in.empty()) rule_error(ErrorKind::Type, "takes no operands");
  const IntList& shape = params.get_ints("shape");
  int64_t dim = params.get_int("dimension");
  if (dim < 0 || dim >= int64_t(shape.size()))
    rule_error(ErrorKind::Shape, "dimension " + std::to_string(dim) + " is out of range for shape " + Shape(shape).str());
  DType d = params.get_dtype("dtype");
  if (d == DType::bool_) rule_error(ErrorKind::Type, "iota of bool");
  return {AbstractArray{Shape(shape), d, false}};
}

void iota_kernel(std::span<const View>, std::span<const View> out, const Params& params) {
  const Shape& s = out[0].shape();
  int64_t dim = params.get_int("dimension");
  int64_t inner = 1;
  for (int d = int(dim) + 1; d < s.rank(); ++d) inner *= s[size_t(d)];
  int64_t len = s[size_t(dim)];
  const int64_t n = out[0].size();
  dispatch_dtype(out[0].dtype(), [&](auto z) {
    using T = decltype(z);
    T* o = out[0].as<T>();
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(static_cast<compute_t<T>>((i / inner) % len));
  });
}

}  // namespace

void register_shape_prims(RuleTable& t) {
  t[size_t(Prim::iota)] = {&iota_rule, &iota_kernel};
  t[size_t(Prim::broadcast_in_dim)] = {&broadcast_in_dim_rule, &broadcast_in_dim_kernel};
}

}  // namespace fluxion
