#include "baseline_peers.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fluxion_bench {

void ba_residuals_loop(const double* cams, const double* points, const double* weights, const double* feats,
                       const int32_t* cam_idx, const int32_t* point_idx, int64_t lo, int64_t hi, double* out) {
  for (int64_t i = lo; i < hi; ++i) {
    const double* c = cams + 11 * int64_t(cam_idx[i]);
    const double* X = points + 3 * int64_t(point_idx[i]);
    const double x0 = X[0] - c[3], x1 = X[1] - c[4], x2 = X[2] - c[5];
    const double theta = std::sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
    const double k0 = c[0] / theta, k1 = c[1] / theta, k2 = c[2] / theta;
    const double cs = std::cos(theta), sn = std::sin(theta);
    const double kx = (k0 * x0 + k1 * x1 + k2 * x2) * (1.0 - cs);
    const double y0 = x0 * cs + (k1 * x2 - k2 * x1) * sn + k0 * kx;
    const double y1 = x1 * cs + (k2 * x0 - k0 * x2) * sn + k1 * kx;
    const double y2 = x2 * cs + (k0 * x1 - k1 * x0) * sn + k2 * kx;
    const double u = y0 / y2, v = y1 / y2;
    const double rsq = u * u + v * v;
    const double scale = (1.0 + c[9] * rsq + c[10] * rsq * rsq) * c[6];
    out[2 * i] = weights[i] * (u * scale + c[7] - feats[2 * i]);
    out[2 * i + 1] = weights[i] * (v * scale + c[8] - feats[2 * i + 1]);
  }
}

double kmeans_cost_loop(const double* points, const double* centroids, int64_t k, int64_t d, int64_t lo, int64_t hi) {
  double total = 0;
  for (int64_t i = lo; i < hi; ++i) {
    const double* p = points + i * d;
    double best = std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < k; ++j) {
      const double* c = centroids + j * d;
      double dist = 0;
      for (int64_t e = 0; e < d; ++e) dist += (p[e] - c[e]) * (p[e] - c[e]);
      best = std::min(best, dist);
    }
    total += best;
  }
  return total;
}

}  // namespace fluxion_bench
