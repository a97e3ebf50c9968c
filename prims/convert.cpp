// convert_element_type[new_dtype=... weak_type=...]: numpy's astype. Float to integer truncates
// toward zero and saturates (NaN gives 0), so no conversion is undefined behaviour. Real to
// complex is exact (imaginary part 0); complex to real keeps the real part and drops the imaginary
// one (numpy's astype, which only warns; JAX's convert_element_type): use real()/abs() to say which.
#include <cmath>
#include <cstring>
#include <limits>

#include "lax/lax.h"
#include "prims/elementwise.h"

namespace fluxion {
namespace {
using namespace elementwise;

std::vector<AbstractArray> convert_shape(std::span<const AbstractArray> in, const Params& params) {
  if (in.size() != 1) rule_error(ErrorKind::Type, "expects 1 operand");
  return {AbstractArray{in[0].shape, params.get_dtype("new_dtype"), params.get_bool("weak_type")}};
}

// float64 -> float32 rounded to odd: toward zero, the last bit set where it was inexact. Rounded
// again to float16 (11 bits < 24 - 2) this gives the float16 nearest the float64, where rounding
// to nearest twice can land on a tie and go the wrong way (1 + 2^-11 + 2^-40 became 1.0, not 1 + 2^-10).
float round_to_odd_float(double x) {
  float f = float(x);
  if (std::isnan(x) || double(f) == x) return f;
  if (std::abs(double(f)) > std::abs(x)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1u;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <class To, class From>
To convert_real(From v) {
  using C = compute_t<From>;
  C x = static_cast<C>(v);
  if constexpr (std::is_same_v<To, bool>) {
    return x != C(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<C>) {
    if (x != x) return To(0);
    if (x <= C(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (x >= C(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return To(x);
  } else if constexpr (std::is_same_v<To, float16_t> && std::is_same_v<C, double>) {
    return To(round_to_odd_float(x));
  } else if constexpr (std::is_same_v<To, float16_t> || std::is_same_v<To, bfloat16_t>) {
    return To(float(x));  // bfloat16 from float64 through float32, as XLA converts it
  } else {
    return To(x);
  }
}

template <class To, class From>
To convert_one(From v) {
  if constexpr (is_complex_type<From>) {
    if constexpr (is_complex_type<To>) return To(v);
    else return convert_one<To>(v.real());
  } else if constexpr (is_complex_type<To>) {
    return To(convert_one<typename To::value_type>(v));
  } else {
    return convert_real<To>(v);
  }
}

void convert_kernel(std::span<const View> in, std::span<const View> out, const Params&) {
  dispatch_dtype_complex(in[0].dtype(), [&](auto a) {
    using From = decltype(a);
    dispatch_dtype_complex(out[0].dtype(), [&](auto b) {
      using To = decltype(b);
      const From* x = in[0].as<const From>();
      To* y = out[0].as<To>();
      const int64_t n = out[0].size();
      for (int64_t i = 0; i < n; ++i) y[i] = convert_one<To>(x[i]);
    });
  });
}

// Between float types the conversion is linear: tangents convert forward, cotangents back. Into an
// integer or bool type the derivative is zero (jvp_eval drops tangents of non-float outputs).
std::vector<Array> convert_jvp(std::span<const Array>, std::span<const Array> t, std::span<const Array> y,
                               const Params&, SourceLoc) {
  if (!is_inexact(y[0].dtype())) return {Array()};
  return {lax::convert(t[0], y[0].dtype(), y[0].weak_type())};
}
std::vector<Array> convert_transpose(std::span<const Array> ct, std::span<const LinearArg> a, const Params&,
                                     SourceLoc) {
  if (!is_inexact(a[0].aval.dtype)) return {Array()};
  return {lax::convert(ct[0], a[0].aval.dtype, a[0].aval.weak_type)};
}

const Registration convert_element_type_registration = PrimitiveRules{
    .prim = Prim::convert_element_type,
    .shape = &convert_shape,
    .kernel = &convert_kernel,
    .jvp = &convert_jvp,
    .transpose = &convert_transpose,
    .linear = kLinear,
    .batch = &batch_elementwise<Prim::convert_element_type>,
    .shard = &shard_elementwise,
    .gpu = GpuLowering::generic,
    .reads = Reads::elementwise,
};

}  // namespace
}  // namespace fluxion
