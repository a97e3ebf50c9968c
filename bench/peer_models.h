// The two GradBench-style models of the peer table, written as a Fluxion user would:
//   * bundle adjustment: the weighted reprojection error of one observation, a function of its 15
//     parameters (ADBench/GradBench's BA: camera = Rodrigues rotation 3, center 3, focal 1,
//     principal point 2, radial distortion 2; point 3; weight 1), whose Jacobian is
//     vmap(jacfwd(residual)) over the observations gathered from the camera and point tables;
//   * k-means: the cost (sum over points of the squared distance to the nearest centroid) and its
//     Newton direction, the gradient over the Hessian's diagonal.
// bench/baseline_peers.cpp has the same residual and cost as plain C++ loops; bench/peers/peers_jax.py
// the same functions in JAX.
#pragma once
#include <fluxion.h>

#include <tuple>

namespace bench::peers {

namespace fx = fluxion;

/// The 2 weighted reprojection errors of one observation: p f64[15] (camera 11, point 3, weight 1),
/// feat f64[2] (the observed image point). The rotation is never zero in the data (no branch for
/// theta = 0).
inline fx::Array ba_residual(const fx::Array& p, const fx::Array& feat) {
  auto at = [&](int64_t i) { return fx::reshape(fx::slice(p, {i}, {i + 1}), {}); };
  fx::Array r0 = at(0), r1 = at(1), r2 = at(2);
  fx::Array x0 = at(11) - at(3), x1 = at(12) - at(4), x2 = at(13) - at(5);  // point - camera center
  fx::Array theta = fx::sqrt(r0 * r0 + r1 * r1 + r2 * r2);
  fx::Array k0 = r0 / theta, k1 = r1 / theta, k2 = r2 / theta;  // the unit rotation axis
  fx::Array cos = fx::cos(theta), sin = fx::sin(theta);
  fx::Array kx = (k0 * x0 + k1 * x1 + k2 * x2) * (1.0 - cos);
  fx::Array y0 = x0 * cos + (k1 * x2 - k2 * x1) * sin + k0 * kx;  // Rodrigues: x cos + (k x x) sin + k (k.x)(1 - cos)
  fx::Array y1 = x1 * cos + (k2 * x0 - k0 * x2) * sin + k1 * kx;
  fx::Array y2 = x2 * cos + (k0 * x1 - k1 * x0) * sin + k2 * kx;
  fx::Array u = y0 / y2, v = y1 / y2;
  fx::Array rsq = u * u + v * v;
  fx::Array scale = (1.0 + at(9) * rsq + at(10) * rsq * rsq) * at(6);  // radial distortion, focal length
  return at(14) * (fx::stack({u * scale + at(7), v * scale + at(8)}) - feat);
}

/// [observations, 15]: each observation's camera, point and weight, gathered by index.
inline fx::Array ba_params(const fx::Array& cams, const fx::Array& points, const fx::Array& weights,
                           const fx::Array& cam_idx, const fx::Array& point_idx) {
  return fx::concatenate({fx::take(cams, cam_idx, 0), fx::take(points, point_idx, 0), fx::expand_dims(weights, 1)}, 1);
}

/// The residuals of every observation, f64[observations, 2].
inline fx::Array ba_residuals(const fx::Array& cams, const fx::Array& points, const fx::Array& weights, const fx::Array& feats,
                              const fx::Array& cam_idx, const fx::Array& point_idx) {
  return fx::vmap(ba_residual)(ba_params(cams, points, weights, cam_idx, point_idx), feats);
}

/// The Jacobian of every observation's residual w.r.t. its 15 parameters, f64[observations, 2, 15].
inline fx::Array ba_jacobian(const fx::Array& cams, const fx::Array& points, const fx::Array& weights, const fx::Array& feats,
                             const fx::Array& cam_idx, const fx::Array& point_idx) {
  auto jac = [](const fx::Array& p, const fx::Array& feat) {
    return fx::jacfwd([&](const fx::Array& q) { return ba_residual(q, feat); })(p);
  };
  return fx::vmap(jac)(ba_params(cams, points, weights, cam_idx, point_idx), feats);
}

/// The k-means cost: sum over points of the squared distance to the nearest centroid, with the
/// distances as |p|^2 + |c|^2 - 2 p.c (one matrix product; GradBench's JAX formulation).
inline fx::Array kmeans_cost(const fx::Array& points, const fx::Array& centroids) {
  fx::Array d = fx::sum(points * points, {1}, true) + fx::expand_dims(fx::sum(centroids * centroids, {1}), 0) -
                2.0 * fx::matmul(points, fx::transpose(centroids));
  return fx::sum(fx::min(d, {1}));
}

/// The Newton direction of the k-means cost w.r.t. the centroids: gradient / Hessian diagonal. The
/// Hessian is diagonal, so its product with ones -- a jvp of the gradient -- is that diagonal.
inline fx::Array kmeans_dir(const fx::Array& points, const fx::Array& centroids) {
  auto grad = fx::grad([&](const fx::Array& c) { return kmeans_cost(points, c); });
  auto [g, h] = fx::jvp(grad, std::tuple{centroids}, std::tuple{fx::ones_like(centroids)});
  return g / h;
}

}  // namespace bench::peers
