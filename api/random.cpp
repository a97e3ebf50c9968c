// fx::random, reimplementing JAX's threefry PRNG (jax/_src/random: threefry_2x32, _threefry_split,
// _threefry_random_bits, _uniform, ...) on the threefry2x32 primitive and ordinary ops, so that every
// function traces. The non-partitionable bit layout is the one reproduced (see api/random.h).
#include "api/random.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "api/creation.h"
#include "api/operands.h"
#include "ir/trace.h"

namespace fluxion::random {
namespace {

Array u32(uint64_t v, SourceLoc loc) { return scalar(uint32_t(v), loc); }

// x / 2^n for uint32 x: the logical right shift JAX uses (there is no shift primitive).
Array shift_right(const Array& x, int n, SourceLoc loc) { return floor_divide(x, u32(uint64_t(1) << n, loc), loc); }
// lax.rem, as JAX's randint uses it: a span of 2^nbits wraps to 0 in the unsigned dtype, and x rem 0
// is x (jnp.fmod would give 0 there).
Array rem(const Array& x, const Array& y, SourceLoc loc) {
  ArrayLike xs[] = {x, y};
  std::vector<Array> a = detail::elementwise_operands("random.randint", xs, loc);
  return bind1(Prim::rem, {a[0], a[1]}, {}, loc);
}

// ---- shape plumbing (lax's slice, reshape and concatenate) ----------------------------------------
Array slice_1d(const Array& x, int64_t start, int64_t limit, SourceLoc loc) {
  if (start == 0 && limit == x.shape()[0]) return x;
  return bind1(Prim::slice, {x},
               Params{{"start_indices", IntList{start}}, {"limit_indices", IntList{limit}}, {"strides", IntList{1}}},
               loc);
}
Array reshape_to(const Array& x, const Shape& shape, SourceLoc loc) {
  if (x.shape() == shape) return x;
  return bind1(Prim::reshape, {x}, Params{{"new_sizes", shape.dims()}}, loc);
}
Array concatenate_1d(const Array& a, const Array& b, SourceLoc loc) {
  return bind1(Prim::concatenate, {a, b}, Params{{"dimension", int64_t(0)}}, loc);
}

// ---- keys ----------------------------------------------------------------------------------------
struct KeyWords {
  Array k0, k1;
};

void check_key(const char* op, const Array& key, SourceLoc loc) {
  if (!key.valid()) throw ValueError(std::string("ValueError: ") + op + " at " + loc.str() + ": the key is an empty Array");
  if (key.dtype() != DType::uint32 || key.shape() != Shape{2}) {
    AbstractArray aval = key.aval();
    op_error(ErrorKind::Type, op, std::span<const AbstractArray>(&aval, 1), loc,
             "a key is a uint32[2] array (from fx::random::key, split or fold_in)");
  }
}

KeyWords key_words(const char* op, const Array& key, SourceLoc loc) {
  check_key(op, key, loc);
  return {reshape_to(slice_1d(key, 0, 1, loc), Shape{}, loc), reshape_to(slice_1d(key, 1, 2, loc), Shape{}, loc)};
}

// [a, b] from two uint32 scalars.
Array key_from_words(const Array& a, const Array& b, SourceLoc loc) {
  return where(equal(iota(DType::uint32, Shape{2}, 0, loc), u32(0, loc), loc), a, b, loc);
}

// JAX's threefry_2x32(key, iota(count)): the counters are split into halves (the second padded with a
// 0 when count is odd), hashed pairwise, and the two output words concatenated and truncated.
Array hash_iota(const KeyWords& k, int64_t count, const char* op, SourceLoc loc) {
  if (count >= int64_t(std::numeric_limits<uint32_t>::max()))
    throw ValueError(std::string("ValueError: ") + op + " at " + loc.str() + ": " + std::to_string(count) +
                     " random words exceed the 2^32-1 counters of one key; split the key");
  const int64_t half = (count + 1) / 2;
  Array x0 = iota(DType::uint32, Shape{half}, 0, loc);
  Array x1 = add(x0, u32(uint64_t(half), loc), loc);
  if (count % 2) x1 = where(equal(x0, u32(uint64_t(half - 1), loc), loc), u32(0, loc), x1, loc);
  std::vector<Array> y = bind(Prim::threefry2x32, {k.k0, k.k1, x0, x1}, {}, loc);
  return slice_1d(concatenate_1d(y[0], y[1], loc), 0, count, loc);
}

// JAX's _threefry_random_bits for 8, 16 and 32 bits: uint32 values below 2^width, of `shape`. Narrow
// widths cut each 32-bit word into 32/width pieces, least significant first.
Array random_bits(const KeyWords& k, int width, const Shape& shape, const char* op, SourceLoc loc) {
  const int64_t size = shape.numel();
  const int64_t words = (size * width + 31) / 32;
  Array w = hash_iota(k, words, op, loc);
  if (width == 32) return reshape_to(w, shape, loc);
  const int64_t pieces = 32 / width;
  std::vector<uint32_t> scale(size_t(pieces), 1);
  for (int64_t j = 1; j < pieces; ++j) scale[size_t(j)] = scale[size_t(j - 1)] << width;
  Array grid = bind1(Prim::broadcast_in_dim, {w},
                     Params{{"shape", IntList{words, pieces}}, {"broadcast_dimensions", IntList{0}}}, loc);
  Array cut = bitwise_and(floor_divide(grid, array(scale, loc), loc), u32((uint64_t(1) << width) - 1, loc), loc);
  return reshape_to(slice_1d(reshape_to(cut, Shape{words * pieces}, loc), 0, size, loc), shape, loc);
}

// JAX's 64-bit random bits as their (high, low) 32-bit halves: the first and second half of the words.
std::pair<Array, Array> random_bits64(const KeyWords& k, const Shape& shape, const char* op, SourceLoc loc) {
  const int64_t size = shape.numel();
  Array w = hash_iota(k, 2 * size, op, loc);
  return {reshape_to(slice_1d(w, 0, size, loc), shape, loc), reshape_to(slice_1d(w, size, 2 * size, loc), shape, loc)};
}

// Floats in [0, 1) of `dtype`, bit for bit JAX's bitcast(mantissa bits | bits of 1.0) - 1.0: that
// difference is exactly mantissa * 2^-nmant, which is what is computed here (exactly, in float32 or
// float64) since there is no bitcast primitive.
Array unit_floats(const KeyWords& k, const Shape& shape, DType dtype, const char* op, SourceLoc loc) {
  switch (dtype) {
    case DType::float32:
      return multiply(astype(shift_right(random_bits(k, 32, shape, op, loc), 9, loc), DType::float32, loc),
                      scalar(std::ldexp(1.f, -23), loc), loc);
    case DType::float64: {
      auto [hi, lo] = random_bits64(k, shape, op, loc);
      Array high = multiply(astype(hi, DType::float64, loc), scalar(std::ldexp(1.0, -32), loc), loc);
      Array low = multiply(astype(shift_right(lo, 12, loc), DType::float64, loc), scalar(std::ldexp(1.0, -52), loc), loc);
      return add(high, low, loc);
    }
    case DType::float16:  // 16 random bits, 10 mantissa bits
    case DType::bfloat16: {  // JAX draws 8 bits for formats with fewer than 8 mantissa bits: 7 used
      const bool half = dtype == DType::float16;
      const int nmant = half ? 10 : 7, width = half ? 16 : 8;
      Array m = shift_right(random_bits(k, width, shape, op, loc), width - nmant, loc);
      return astype(multiply(astype(m, DType::float32, loc), scalar(std::ldexp(1.f, -nmant), loc), loc), dtype, loc);
    }
    default: {
      AbstractArray aval{shape, dtype};
      op_error(ErrorKind::Type, op, std::span<const AbstractArray>(&aval, 1), loc,
               "expects a floating-point dtype, got " + std::string(dtype_name(dtype)));
    }
  }
}

void check_result_shape(const char* op, const Array& r, const Shape& shape, SourceLoc loc) {
  if (r.shape() == shape) return;
  AbstractArray aval = r.aval();
  op_error(ErrorKind::Shape, op, std::span<const AbstractArray>(&aval, 1), loc,
           "the parameters broadcast to " + r.shape().str() + ", which is not the requested shape " + shape.str());
}

Array uniform_impl(const KeyWords& k, const Shape& shape, DType dtype, const ArrayLike& minval,
                   const ArrayLike& maxval, const char* op, SourceLoc loc) {
  Array unit = unit_floats(k, shape, dtype, op, loc);
  Array lo = detail::as_array(minval, dtype, false, loc), hi = detail::as_array(maxval, dtype, false, loc);
  Array r = maximum(lo, add(multiply(unit, subtract(hi, lo, loc), loc), lo, loc), loc);
  check_result_shape(op, r, shape, loc);
  return r;
}

// Giles, "Approximating the erfinv function" (GPU Gems 4 / 2010), single precision, in XLA's form:
// w = -log1p(-x^2), one polynomial in w - 2.5 (w < 5) or sqrt(w) - 3 (the tails), times x.
Array erf_inv_giles(const Array& x, SourceLoc loc) {
  static constexpr double center[] = {2.81022636e-08,  3.43273939e-07, -3.5233877e-06,
                                      -4.39150654e-06, 0.00021858087,  -0.00125372503,
                                      -0.00417768164,  0.246640727,    1.50140941};
  static constexpr double tail[] = {-0.000200214257, 0.000100950558, 0.00134934322,
                                    -0.00367342844,  0.00573950773,  -0.0076224613,
                                    0.00943887047,   1.00167406,     2.83297682};
  const DType t = x.dtype();
  Array w = negative(log1p(negative(multiply(x, x, loc), loc), loc), loc);
  Array central = less(w, 5.0, loc);
  Array v = where(central, subtract(w, 2.5, loc), subtract(sqrt(w, loc), 3.0, loc), loc);
  auto coefficient = [&](size_t i) {
    return where(central, scalar(center[i], t, loc), scalar(tail[i], t, loc), loc);
  };
  Array p = coefficient(0);
  for (size_t i = 1; i < std::size(center); ++i) p = add(coefficient(i), multiply(p, v, loc), loc);
  return multiply(p, x, loc);
}

}  // namespace

Array key(int64_t seed, SourceLoc loc) {
  const uint64_t s = uint64_t(seed);
  return array(std::vector<uint32_t>{uint32_t(s >> 32), uint32_t(s)}, loc);
}

std::pair<Array, Array> split(const Array& key, SourceLoc loc) {
  // split(key, 2) is [y0; y1] reshaped to [2, 2]: its rows are the two output words themselves.
  KeyWords k = key_words("random.split", key, loc);
  Array x0 = iota(DType::uint32, Shape{2}, 0, loc);
  std::vector<Array> y = bind(Prim::threefry2x32, {k.k0, k.k1, x0, add(x0, u32(2, loc), loc)}, {}, loc);
  return {y[0], y[1]};
}

Array split(const Array& key, int64_t num, SourceLoc loc) {
  KeyWords k = key_words("random.split", key, loc);
  if (num < 0)
    throw ValueError("ValueError: random.split at " + loc.str() + ": num must be >= 0, got " + std::to_string(num));
  return reshape_to(hash_iota(k, 2 * num, "random.split", loc), Shape{num, 2}, loc);
}

Array fold_in(const Array& key, const ArrayLike& data, SourceLoc loc) {
  KeyWords k = key_words("random.fold_in", key, loc);
  if (data.shape().rank() != 0 || !(is_integer(data.dtype()) || data.dtype() == DType::bool_)) {
    AbstractArray avals[] = {key.aval(), data.aval()};
    op_error(ErrorKind::Type, "random.fold_in", avals, loc, "data must be an integer scalar");
  }
  // threefry_2x32(key, seed(data)) with seed(data) = [0, data]: one counter pair, two output words.
  Array d = detail::as_array(data, DType::uint32, false, loc);
  std::vector<Array> y = bind(Prim::threefry2x32, {k.k0, k.k1, u32(0, loc), d}, {}, loc);
  return key_from_words(y[0], y[1], loc);
}

Array bits(const Array& key, const Shape& shape, SourceLoc loc) {
  return random_bits(key_words("random.bits", key, loc), 32, shape, "random.bits", loc);
}

Array uniform(const Array& key, const Shape& shape, DType dtype, const ArrayLike& minval, const ArrayLike& maxval,
              SourceLoc loc) {
  return uniform_impl(key_words("random.uniform", key, loc), shape, dtype, minval, maxval, "random.uniform", loc);
}

Array normal(const Array& key, const Shape& shape, DType dtype, SourceLoc loc) {
  KeyWords k = key_words("random.normal", key, loc);
  // The largest value of dtype below -1's successor toward 0: nextafter(-1, 0).
  double lo = 0;
  switch (dtype) {
    case DType::float32: lo = std::nextafter(-1.f, 0.f); break;
    case DType::float64: lo = std::nextafter(-1.0, 0.0); break;
    case DType::float16: lo = -1.0 + std::ldexp(1.0, -11); break;
    case DType::bfloat16: lo = -1.0 + std::ldexp(1.0, -8); break;
    default: break;  // unit_floats reports the dtype
  }
  Array u = uniform_impl(k, shape, dtype, lo, 1.0, "random.normal", loc);
  return multiply(scalar(std::sqrt(2.0), dtype, loc), erf_inv(u, loc), loc);
}

Array bernoulli(const Array& key, const ArrayLike& p, SourceLoc loc) { return bernoulli(key, p, p.shape(), loc); }

Array bernoulli(const Array& key, const ArrayLike& p, const Shape& shape, SourceLoc loc) {
  KeyWords k = key_words("random.bernoulli", key, loc);
  if (!is_float(p.dtype())) {
    AbstractArray avals[] = {key.aval(), p.aval()};
    op_error(ErrorKind::Type, "random.bernoulli", avals, loc, "p must be a float probability");
  }
  Array r = less(uniform_impl(k, shape, p.dtype(), 0.0, 1.0, "random.bernoulli", loc), p, loc);
  check_result_shape("random.bernoulli", r, shape, loc);
  return r;
}

Array randint(const Array& key, const Shape& shape, const ArrayLike& minval, const ArrayLike& maxval, DType dtype,
              SourceLoc loc) {
  const char* op = "random.randint";
  KeyWords k = key_words(op, key, loc);
  const int nbits = dtype == DType::int32 || dtype == DType::uint32 ? 32 : dtype == DType::int8 || dtype == DType::uint8 ? 8 : 0;
  if (nbits == 0 || !is_integer(minval.dtype()) || !is_integer(maxval.dtype())) {
    AbstractArray avals[] = {key.aval(), minval.aval(), maxval.aval()};
    op_error(ErrorKind::Type, op, avals, loc,
             "expects integer bounds and an 8- or 32-bit integer dtype, got " + std::string(dtype_name(dtype)));
  }
  const DType udtype = nbits == 32 ? DType::uint32 : DType::uint8;
  // JAX clips the bounds into dtype's range; a maxval above dtype's maximum widens the span by one.
  int64_t dmin = 0, dmax = 0;
  dispatch_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    dmin = int64_t(std::numeric_limits<T>::min());
    dmax = int64_t(std::numeric_limits<T>::max());
  });
  Array min64 = broadcast_to(astype(minval, DType::int64, loc), shape, loc);
  Array max64 = broadcast_to(astype(maxval, DType::int64, loc), shape, loc);
  Array max_out_of_range = greater(max64, dmax, loc);
  Array lo = astype(clip(min64, dmin, dmax, loc), dtype, loc), hi = astype(clip(max64, dmin, dmax, loc), dtype, loc);

  auto [k1, k2] = split(key, loc);
  Array higher = astype(random_bits(key_words(op, k1, loc), nbits, shape, op, loc), udtype, loc);
  Array lower = astype(random_bits(key_words(op, k2, loc), nbits, shape, op, loc), udtype, loc);
  Array span = astype(subtract(hi, lo, loc), udtype, loc);
  span = where(less_equal(hi, lo, loc), scalar(1, udtype, loc), span, loc);
  span = where(logical_and(max_out_of_range, greater(hi, lo, loc), loc), add(span, scalar(1, udtype, loc), loc), span, loc);
  // higher * 2^nbits + lower, modulo span, without overflow: (a * b) % n = ((a % n) * (b % n)) % n.
  Array multiplier = rem(scalar(int64_t(1) << (nbits / 2), udtype, loc), span, loc);
  multiplier = rem(multiply(multiplier, multiplier, loc), span, loc);
  Array offset = add(multiply(rem(higher, span, loc), multiplier, loc), rem(lower, span, loc), loc);
  return add(lo, astype(rem(offset, span, loc), dtype, loc), loc);
}

Array permutation(const Array& key, int64_t n, SourceLoc loc) {
  check_key("random.permutation", key, loc);
  if (n < 0)
    throw ValueError("ValueError: random.permutation at " + loc.str() + ": n must be >= 0, got " + std::to_string(n));
  // JAX's heuristic: enough rounds that the chance of any two elements sharing all their sort keys
  // is about n^-1 (exponent 3), i.e. one round below ~1600 elements.
  const int rounds = int(std::ceil(3 * std::log(double(std::max<int64_t>(1, n))) / std::log(4294967295.0)));
  Array x = iota(DType::int32, Shape{n}, 0, loc);
  Array k = key;
  for (int r = 0; r < rounds; ++r) {
    auto [next, sub] = split(k, loc);
    Array sort_keys = bits(sub, Shape{n}, loc);
    x = bind(Prim::sort, {sort_keys, x},
             Params{{"dimension", int64_t(0)}, {"is_stable", true}, {"num_keys", int64_t(1)}}, loc)[1];
    k = next;
  }
  return x;
}

Array erf_inv(const ArrayLike& x, SourceLoc loc) {
  if (!is_float(x.dtype())) {
    AbstractArray aval = x.aval();
    op_error(ErrorKind::Type, "random.erf_inv", std::span<const AbstractArray>(&aval, 1), loc,
             "expects a floating-point operand");
  }
  const DType t = x.dtype();
  Array a = detail::as_array(x, t, x.weak(), loc);
  Array r;
  if (t == DType::float64) {
    // Newton on erf(y) = x from the single-precision estimate: each step squares the relative error.
    r = erf_inv_giles(a, loc);
    const double two_over_sqrt_pi = 2.0 / std::sqrt(std::numbers::pi);
    for (int step = 0; step < 2; ++step) {
      Array slope = multiply(two_over_sqrt_pi, exp(negative(multiply(r, r, loc), loc), loc), loc);
      r = subtract(r, divide(subtract(erf(r, loc), a, loc), slope, loc), loc);
    }
  } else {
    r = astype(erf_inv_giles(astype(a, DType::float32, loc), loc), t, loc);
  }
  // ±1 map to ±inf (the polynomial gives inf * x there, or nan after Newton).
  Array edge = equal(abs(a, loc), 1.0, loc);
  return where(edge, multiply(a, std::numeric_limits<double>::infinity(), loc), r, loc);
}

}  // namespace fluxion::random
