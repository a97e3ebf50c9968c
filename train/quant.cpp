#include "train/quant.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "api/creation.h"
#include "api/reductions.h"
#include "api/shape_ops.h"
#include "ir/trace.h"

namespace fluxion::quant {

std::pair<double, double> dtype_range(DType dtype) {
  switch (dtype) {
    case DType::int8: return {-128, 127};
    case DType::uint8: return {0, 255};
    case DType::int32: return {-2147483648.0, 2147483647.0};
    default:
      throw TypeError("TypeError: quant: " + std::string(dtype_name(dtype)) +
                      " is not a quantized dtype (int8, uint8 or int32)");
  }
}

namespace {

Array to_array(const ArrayLike& a) { return a.is_scalar() ? full(Shape{}, a) : a.array(); }

// scale or zero point as an array broadcasting against x: a scalar, or a vector laid along `axis`.
Array along(const Array& v, const Array& x, std::optional<int64_t> axis, const char* op, SourceLoc loc) {
  if (!axis) {
    if (v.ndim() != 0)
      op_error(ErrorKind::Shape, op, std::vector<AbstractArray>{x.aval(), v.aval()}, loc,
               "per-tensor quantization takes a scalar scale and zero point; give `axis` for per-channel ones");
    return v;
  }
  const int64_t ax = *axis < 0 ? *axis + x.ndim() : *axis;
  if (ax < 0 || ax >= x.ndim() || v.ndim() != 1 || v.shape()[0] != x.shape()[size_t(ax)])
    op_error(ErrorKind::Shape, op, std::vector<AbstractArray>{x.aval(), v.aval()}, loc,
             "per-channel parameters must be a vector as long as axis " + std::to_string(*axis) + " of the operand");
  Shape s(std::vector<int64_t>(size_t(x.ndim()), 1));
  s[size_t(ax)] = x.shape()[size_t(ax)];
  return reshape(v, s, loc);
}

Array as_float(const ArrayLike& a, SourceLoc loc) {
  Array x = to_array(a);
  return is_float(x.dtype()) ? x : astype(x, float32, loc);
}

}  // namespace

Array quantize_array(const ArrayLike& x_, const ArrayLike& scale, const ArrayLike& zero_point, DType dtype,
                     std::optional<int64_t> axis, SourceLoc loc) {
  const Array x = as_float(x_, loc);
  const auto [lo, hi] = dtype_range(dtype);
  const Array s = along(astype(to_array(scale), x.dtype(), loc), x, axis, "quantize_array", loc);
  const Array z = along(astype(to_array(zero_point), x.dtype(), loc), x, axis, "quantize_array", loc);
  return astype(clip(round(x / s, loc) + z, lo, hi, loc), dtype, loc);
}

Array dequantize_array(const ArrayLike& q_, const ArrayLike& scale, const ArrayLike& zero_point,
                       std::optional<int64_t> axis, DType dtype, SourceLoc loc) {
  const Array q = astype(to_array(q_), dtype, loc);
  const Array s = along(astype(to_array(scale), dtype, loc), q, axis, "dequantize_array", loc);
  const Array z = along(astype(to_array(zero_point), dtype, loc), q, axis, "dequantize_array", loc);
  return (q - z) * s;
}

Array fake_quant(const ArrayLike& x_, const ArrayLike& scale, const ArrayLike& zero_point, DType dtype,
                 std::optional<int64_t> axis, SourceLoc loc) {
  const Array x = as_float(x_, loc);
  const auto [lo, hi] = dtype_range(dtype);
  const Array s = along(astype(to_array(scale), x.dtype(), loc), x, axis, "fake_quant", loc);
  const Array z = along(astype(to_array(zero_point), x.dtype(), loc), x, axis, "fake_quant", loc);
  // The value is the round trip; the gradient that of clip(x, lo, hi): the straight-through
  // estimator, zero where the value saturates.
  const Array clipped = clip(x, (lo - z) * s, (hi - z) * s, loc);
  const Array round_trip = (clip(round(x / s, loc) + z, lo, hi, loc) - z) * s;
  return clipped + stop_gradient(round_trip - clipped, loc);
}

Affine affine_for_range(double lo, double hi, DType dtype) {
  const auto [qmin, qmax] = dtype_range(dtype);
  lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
  Affine a;
  a.scale = hi > lo ? float((hi - lo) / (qmax - qmin)) : 1.f;
  a.zero_point = int32_t(std::clamp(std::nearbyint(qmin - lo / a.scale), qmin, qmax));
  return a;
}

}  // namespace fluxion::quant
