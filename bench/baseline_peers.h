// The plain C++ loops the GradBench-style rows of the peer table compare against (compiled -O3
// -march=native, no -ffast-math, in a translation unit of their own): the bundle-adjustment
// residuals and the k-means cost, over a range of observations / points so that callers can split
// the work across threads.
#pragma once
#include <cstdint>

namespace fluxion_bench {

/// Writes the 2 weighted reprojection errors of observations [lo, hi) to out[2 * i], out[2 * i + 1].
/// cams [*, 11], points [*, 3], weights [obs], feats [obs, 2], row-major; cam_idx/point_idx [obs].
void ba_residuals_loop(const double* cams, const double* points, const double* weights, const double* feats,
                       const int32_t* cam_idx, const int32_t* point_idx, int64_t lo, int64_t hi, double* out);

/// Sum over points [lo, hi) of the squared distance to the nearest of k centroids (d dimensions).
double kmeans_cost_loop(const double* points, const double* centroids, int64_t k, int64_t d, int64_t lo, int64_t hi);

}  // namespace fluxion_bench
