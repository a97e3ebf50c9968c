// fx::nn::initializers: functions of (key, shape, dtype) that make a layer's starting parameters
// (jax.nn.initializers names). Every one is a pure function of its key, so a model's parameters are
// reproducible from one seed.
//
//   auto w = fx::nn::initializers::glorot_uniform()(key, {784, 128}, fx::float32);
//
// Fans follow JAX for a weight of shape [..receptive field.., in, out] (the dense layout [in, out]):
// fan_in = in * receptive, fan_out = out * receptive. A convolution weight laid out OIHW gives its
// axes explicitly (in_axis = 1, out_axis = 0).
#pragma once
#include <cstdint>
#include <functional>

#include "api/random.h"

namespace fluxion::nn::initializers {

using Initializer = std::function<Array(const Array& key, const Shape& shape, DType dtype)>;

Initializer zeros();
Initializer ones();
Initializer constant(double value);
/// Normal with mean 0 and standard deviation `stddev`.
Initializer normal(double stddev = 1e-2);
/// Uniform on [0, scale) (jax.nn.initializers.uniform).
Initializer uniform(double scale = 1e-2);

enum class FanMode { fan_in, fan_out, fan_avg };
enum class Distribution { normal, truncated_normal, uniform };
/// Variance `scale / fan`: normal with that variance, a normal truncated to two standard deviations
/// (rescaled so the variance is kept, as JAX does), or uniform on ±sqrt(3 * scale / fan).
Initializer variance_scaling(double scale, FanMode mode, Distribution distribution, int64_t in_axis = -2,
                             int64_t out_axis = -1);

Initializer glorot_uniform(int64_t in_axis = -2, int64_t out_axis = -1);
Initializer glorot_normal(int64_t in_axis = -2, int64_t out_axis = -1);
Initializer lecun_normal(int64_t in_axis = -2, int64_t out_axis = -1);
Initializer lecun_uniform(int64_t in_axis = -2, int64_t out_axis = -1);
Initializer he_normal(int64_t in_axis = -2, int64_t out_axis = -1);
Initializer he_uniform(int64_t in_axis = -2, int64_t out_axis = -1);

}  // namespace fluxion::nn::initializers
