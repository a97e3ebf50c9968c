#include "lax/lax.h"

namespace fluxion::lax {

namespace {
Array unary(Prim p, const Array& x, const Params& params = {}) { return bind1(p, {x}, params, {}); }
Array binary(Prim p, const Array& x, const Array& y) { return bind1(p, {x, y}, {}, {}); }
}  // namespace

Array neg(const Array& x) { return unary(Prim::neg, x); }
Array sign(const Array& x) { return unary(Prim::sign, x); }
Array floor(const Array& x) { return unary(Prim::floor, x); }
Array abs(const Array& x) { return unary(Prim::abs, x); }
Array exp(const Array& x) { return unary(Prim::exp, x); }
Array log(const Array& x) { return unary(Prim::log, x); }
Array sin(const Array& x) { return unary(Prim::sin, x); }
Array cos(const Array& x) { return unary(Prim::cos, x); }
Array sinh(const Array& x) { return unary(Prim::sinh, x); }
Array cosh(const Array& x) { return unary(Prim::cosh, x); }
Array rsqrt(const Array& x) { return unary(Prim::rsqrt, x); }
Array integer_pow(const Array& x, int64_t n) { return unary(Prim::integer_pow, x, Params{{"y", n}}); }
Array polygamma(int64_t m, const Array& x) { return unary(Prim::polygamma, x, Params{{"m", m}}); }
Array real(const Array& x) { return unary(Prim::real, x); }
Array imag(const Array& x) { return unary(Prim::imag, x); }
Array conj(const Array& x) { return unary(Prim::conj, x); }
Array complex(const Array& re, const Array& im) { return binary(Prim::complex, re, im); }

Array add(const Array& x, const Array& y) { return binary(Prim::add, x, y); }
Array sub(const Array& x, const Array& y) { return binary(Prim::sub, x, y); }
Array mul(const Array& x, const Array& y) { return binary(Prim::mul, x, y); }
Array div(const Array& x, const Array& y) { return binary(Prim::div, x, y); }
Array pow(const Array& x, const Array& y) { return binary(Prim::pow, x, y); }
Array max(const Array& x, const Array& y) { return binary(Prim::max, x, y); }
Array min(const Array& x, const Array& y) { return binary(Prim::min, x, y); }
Array bitwise_and(const Array& x, const Array& y) { return binary(Prim::and_, x, y); }

Array eq(const Array& x, const Array& y) { return binary(Prim::eq, x, y); }
Array ne(const Array& x, const Array& y) { return binary(Prim::ne, x, y); }
Array lt(const Array& x, const Array& y) { return binary(Prim::lt, x, y); }
Array le(const Array& x, const Array& y) { return binary(Prim::le, x, y); }
Array gt(const Array& x, const Array& y) { return binary(Prim::gt, x, y); }
Array ge(const Array& x, const Array& y) { return binary(Prim::ge, x, y); }

Array select(const Array& pred, const Array& on_true, const Array& on_false) {
  return bind1(Prim::select, {pred, on_true, on_false}, {}, {});
}

Array convert(const Array& x, DType dtype, bool weak) {
  if (x.dtype() == dtype && x.weak_type() == weak) return x;
  return unary(Prim::convert_element_type, x, Params{{"new_dtype", dtype}, {"weak_type", weak}});
}

Array scalar_like(const Array& x, double value) {
  const DType d = x.dtype();
  return literal_array(is_inexact(d) ? Literal::of_double(value, d, x.weak_type())
                                   : Literal::of_int(int64_t(value), d, x.weak_type()));
}

Array full(const Shape& shape, const Literal& value, SourceLoc loc) {
  return bind1(Prim::broadcast_in_dim, {literal_array(value)},
               Params{{"shape", shape.dims()}, {"broadcast_dimensions", IntList{}}}, loc);
}
Array zeros(const AbstractArray& aval, SourceLoc loc) { return full(aval.shape, Literal::of_int(0, aval.dtype), loc); }
Array zeros_like(const Array& x, SourceLoc loc) { return zeros(x.aval(), loc); }

Array broadcast_in_dim(const Array& x, const Shape& shape, const IntList& broadcast_dimensions) {
  return unary(Prim::broadcast_in_dim, x, Params{{"shape", shape.dims()}, {"broadcast_dimensions", broadcast_dimensions}});
}
Array reshape(const Array& x, const Shape& new_sizes) {
  return unary(Prim::reshape, x, Params{{"new_sizes", new_sizes.dims()}});
}
Array transpose(const Array& x, const IntList& permutation) {
  return unary(Prim::transpose, x, Params{{"permutation", permutation}});
}
Array reduce_sum(const Array& x, const IntList& axes) { return unary(Prim::reduce_sum, x, Params{{"axes", axes}}); }
Array reduce_sum_all(const Array& x) {
  IntList axes;
  for (int d = 0; d < x.ndim(); ++d) axes.push_back(d);
  return reduce_sum(x, axes);
}
Array iota(DType dtype, const Shape& shape, int64_t dimension) {
  return bind1(Prim::iota, std::span<const Array>{},
               Params{{"dtype", dtype}, {"shape", shape.dims()}, {"dimension", dimension}}, {});
}
Array slice(const Array& x, const IntList& start, const IntList& limit) {
  return unary(Prim::slice, x, Params{{"start_indices", start}, {"limit_indices", limit}});
}
Array slice(const Array& x, const IntList& start, const IntList& limit, const IntList& strides) {
  return unary(Prim::slice, x, Params{{"start_indices", start}, {"limit_indices", limit}, {"strides", strides}});
}
Array pad(const Array& x, const Array& padding_value, const IntList& padding_config) {
  return bind1(Prim::pad, {x, padding_value}, Params{{"padding_config", padding_config}}, {});
}

Array operator-(const Array& x) { return neg(x); }
Array operator+(const Array& x, const Array& y) { return add(x, y); }
Array operator-(const Array& x, const Array& y) { return sub(x, y); }
Array operator*(const Array& x, const Array& y) { return mul(x, y); }
Array operator/(const Array& x, const Array& y) { return div(x, y); }
Array operator+(const Array& x, double c) { return add(x, scalar_like(x, c)); }
Array operator-(const Array& x, double c) { return sub(x, scalar_like(x, c)); }
Array operator*(const Array& x, double c) { return mul(x, scalar_like(x, c)); }
Array operator/(const Array& x, double c) { return div(x, scalar_like(x, c)); }
Array operator+(double c, const Array& x) { return add(scalar_like(x, c), x); }
Array operator-(double c, const Array& x) { return sub(scalar_like(x, c), x); }
Array operator*(double c, const Array& x) { return mul(scalar_like(x, c), x); }
Array operator/(double c, const Array& x) { return div(scalar_like(x, c), x); }

}  // namespace fluxion::lax
