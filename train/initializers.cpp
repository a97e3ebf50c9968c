#include "train/initializers.h"

#include <cmath>
#include <string>

#include "api/creation.h"
#include "api/elementwise.h"
#include "ir/error.h"

namespace fluxion::nn::initializers {

Initializer zeros() {
  return [](const Array&, const Shape& shape, DType dtype) { return fluxion::zeros(shape, dtype); };
}

Initializer ones() {
  return [](const Array&, const Shape& shape, DType dtype) { return fluxion::ones(shape, dtype); };
}

Initializer constant(double value) {
  return [value](const Array&, const Shape& shape, DType dtype) { return fluxion::full(shape, value, dtype); };
}

Initializer normal(double stddev) {
  return [stddev](const Array& key, const Shape& shape, DType dtype) {
    return random::normal(key, shape, dtype) * stddev;
  };
}

Initializer uniform(double scale) {
  return [scale](const Array& key, const Shape& shape, DType dtype) {
    return random::uniform(key, shape, dtype, 0.0, scale);
  };
}

namespace {

struct Fans {
  double in, out;
};

Fans fans(const Shape& shape, int64_t in_axis, int64_t out_axis) {
  const int64_t rank = shape.rank();
  if (rank < 2)
    throw ShapeError("ShapeError: variance_scaling: a weight needs at least 2 dimensions to have fans, got shape " +
                     shape.str());
  if (in_axis < 0) in_axis += rank;
  if (out_axis < 0) out_axis += rank;
  if (in_axis < 0 || in_axis >= rank || out_axis < 0 || out_axis >= rank || in_axis == out_axis)
    throw ShapeError("ShapeError: variance_scaling: in_axis and out_axis must be two different axes of shape " +
                     shape.str());
  double receptive = 1;
  for (int64_t i = 0; i < rank; ++i)
    if (i != in_axis && i != out_axis) receptive *= double(shape[size_t(i)]);
  return {double(shape[size_t(in_axis)]) * receptive, double(shape[size_t(out_axis)]) * receptive};
}

}  // namespace

Initializer variance_scaling(double scale, FanMode mode, Distribution distribution, int64_t in_axis,
                             int64_t out_axis) {
  return [=](const Array& key, const Shape& shape, DType dtype) {
    Fans f = fans(shape, in_axis, out_axis);
    double fan = mode == FanMode::fan_in ? f.in : mode == FanMode::fan_out ? f.out : (f.in + f.out) / 2;
    double variance = scale / std::max(1.0, fan);
    switch (distribution) {
      case Distribution::normal:
        return random::normal(key, shape, dtype) * std::sqrt(variance);
      case Distribution::truncated_normal: {
        // A normal truncated to [-2, 2] by inverting the CDF of a uniform draw between the bounds'
        // CDF values, then divided by the truncated normal's standard deviation (0.8796...).
        const double lo = std::erf(-2 / std::sqrt(2.0)), hi = std::erf(2 / std::sqrt(2.0));
        Array u = random::uniform(key, shape, dtype, lo, hi);
        Array z = random::erf_inv(u) * std::sqrt(2.0);
        return z * (std::sqrt(variance) / 0.87962566103423978);
      }
      case Distribution::uniform: {
        double limit = std::sqrt(3 * variance);
        return random::uniform(key, shape, dtype, -limit, limit);
      }
    }
    return Array();
  };
}

Initializer glorot_uniform(int64_t in_axis, int64_t out_axis) {
  return variance_scaling(1.0, FanMode::fan_avg, Distribution::uniform, in_axis, out_axis);
}
Initializer glorot_normal(int64_t in_axis, int64_t out_axis) {
  return variance_scaling(1.0, FanMode::fan_avg, Distribution::truncated_normal, in_axis, out_axis);
}
Initializer lecun_normal(int64_t in_axis, int64_t out_axis) {
  return variance_scaling(1.0, FanMode::fan_in, Distribution::truncated_normal, in_axis, out_axis);
}
Initializer lecun_uniform(int64_t in_axis, int64_t out_axis) {
  return variance_scaling(1.0, FanMode::fan_in, Distribution::uniform, in_axis, out_axis);
}
Initializer he_normal(int64_t in_axis, int64_t out_axis) {
  return variance_scaling(2.0, FanMode::fan_in, Distribution::truncated_normal, in_axis, out_axis);
}
Initializer he_uniform(int64_t in_axis, int64_t out_axis) {
  return variance_scaling(2.0, FanMode::fan_in, Distribution::uniform, in_axis, out_axis);
}

}  // namespace fluxion::nn::initializers
