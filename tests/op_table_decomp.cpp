// Op-table entries for fx::linalg's decompositions and solves. References are plain host loops
// (elimination, substitution, cyclic Jacobi), independent of the Eigen kernels under test. Factors
// with a sign freedom (q, the eigen- and singular vectors) are checked through what does not depend
// on it: reconstructions (q r = a, v diag(w) v^T = a, u diag(s) vt = a), eigenvalues and singular
// values, |r_ii|. Operands are made well conditioned inside the op (a + 4 I, x x^T + n I), so finite
// differences are meaningful; every driver (eager, trace, errors, jvp, vjp, vmap, jit) runs them.
#include <algorithm>
#include <cmath>

#include "op_table.h"

namespace optable {
namespace {

using Mat = std::vector<double>;  // one n x n (or m x n) row-major matrix

// ---- host references, one matrix at a time; batched operands are looped by `per_matrix` ----------------
Mat shifted(const Mat& a, int64_t n, double c) {  // a + c I
  Mat r = a;
  for (int64_t i = 0; i < n; ++i) r[size_t(i * n + i)] += c;
  return r;
}
Mat spd(const Mat& x, int64_t n) {  // x x^T + n I
  Mat r(size_t(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < n; ++k) r[size_t(i * n + j)] += x[size_t(i * n + k)] * x[size_t(j * n + k)];
  return shifted(r, n, double(n));
}
Mat matmul(const Mat& a, const Mat& b, int64_t m, int64_t k, int64_t n) {
  Mat r(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 0; l < k; ++l) r[size_t(i * n + j)] += a[size_t(i * k + l)] * b[size_t(l * n + j)];
  return r;
}
Mat cholesky(const Mat& a, int64_t n) {
  Mat l(size_t(n * n), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    double d = a[size_t(j * n + j)];
    for (int64_t k = 0; k < j; ++k) d -= l[size_t(j * n + k)] * l[size_t(j * n + k)];
    l[size_t(j * n + j)] = std::sqrt(d);
    for (int64_t i = j + 1; i < n; ++i) {
      double s = a[size_t(i * n + j)];
      for (int64_t k = 0; k < j; ++k) s -= l[size_t(i * n + k)] * l[size_t(j * n + k)];
      l[size_t(i * n + j)] = s / l[size_t(j * n + j)];
    }
  }
  return l;
}
// Solves a x = b (b: n x k) by elimination with partial pivoting; also gives det(a).
Mat gauss(Mat a, Mat b, int64_t n, int64_t k, double* det = nullptr) {
  double d = 1;
  for (int64_t c = 0; c < n; ++c) {
    int64_t p = c;
    for (int64_t r = c + 1; r < n; ++r)
      if (std::abs(a[size_t(r * n + c)]) > std::abs(a[size_t(p * n + c)])) p = r;
    if (p != c) {
      d = -d;
      for (int64_t j = 0; j < n; ++j) std::swap(a[size_t(c * n + j)], a[size_t(p * n + j)]);
      for (int64_t j = 0; j < k; ++j) std::swap(b[size_t(c * k + j)], b[size_t(p * k + j)]);
    }
    d *= a[size_t(c * n + c)];
    for (int64_t r = c + 1; r < n; ++r) {
      const double f = a[size_t(r * n + c)] / a[size_t(c * n + c)];
      for (int64_t j = c; j < n; ++j) a[size_t(r * n + j)] -= f * a[size_t(c * n + j)];
      for (int64_t j = 0; j < k; ++j) b[size_t(r * k + j)] -= f * b[size_t(c * k + j)];
    }
  }
  for (int64_t r = n - 1; r >= 0; --r)
    for (int64_t j = 0; j < k; ++j) {
      double s = b[size_t(r * k + j)];
      for (int64_t c = r + 1; c < n; ++c) s -= a[size_t(r * n + c)] * b[size_t(c * k + j)];
      b[size_t(r * k + j)] = s / a[size_t(r * n + r)];
    }
  if (det) *det = d;
  return b;
}
// Eigenvalues of a symmetric matrix, ascending (cyclic Jacobi rotations).
std::vector<double> eigenvalues(Mat a, int64_t n) {
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) off += a[size_t(p * n + q)] * a[size_t(p * n + q)];
    if (off < 1e-30) break;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = a[size_t(p * n + q)];
        if (apq == 0) continue;
        const double theta = (a[size_t(q * n + q)] - a[size_t(p * n + p)]) / (2 * apq);
        const double t = (theta >= 0 ? 1 : -1) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int64_t k = 0; k < n; ++k) {  // a = J^T a J
          const double akp = a[size_t(k * n + p)], akq = a[size_t(k * n + q)];
          a[size_t(k * n + p)] = c * akp - s * akq;
          a[size_t(k * n + q)] = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; ++k) {
          const double apk = a[size_t(p * n + k)], aqk = a[size_t(q * n + k)];
          a[size_t(p * n + k)] = c * apk - s * aqk;
          a[size_t(q * n + k)] = s * apk + c * aqk;
        }
      }
  }
  std::vector<double> w;
  for (int64_t i = 0; i < n; ++i) w.push_back(a[size_t(i * n + i)]);
  std::sort(w.begin(), w.end());
  return w;
}
Mat transposed(const Mat& a, int64_t m, int64_t n) {
  Mat r(a.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) r[size_t(j * m + i)] = a[size_t(i * n + j)];
  return r;
}

// Applies f to every matrix of args[0] (and the matching one of args[1]); f returns one output
// matrix (or vector) of `out_tail` shape.
HostArray per_matrix(const std::vector<HostArray>& xs, fx::Shape out_tail,
                     const std::function<Mat(const Mat& a, const Mat& b)>& f) {
  const fx::Shape& s = xs[0].shape;
  const int64_t a_size = s[size_t(s.rank() - 2)] * s[size_t(s.rank() - 1)];
  const int64_t batch = s.numel() / std::max<int64_t>(a_size, 1);
  const int64_t b_size = xs.size() > 1 ? xs[1].shape.numel() / batch : 0;
  fx::Shape out(std::vector<int64_t>(s.begin(), s.end() - 2));
  for (int64_t d : out_tail) out.push_back(d);
  HostArray r{out, {}, fx::float64};
  for (int64_t b = 0; b < batch; ++b) {
    Mat a(xs[0].data.begin() + b * a_size, xs[0].data.begin() + (b + 1) * a_size), bm;
    if (b_size) bm.assign(xs[1].data.begin() + b * b_size, xs[1].data.begin() + (b + 1) * b_size);
    Mat o = f(a, bm);
    r.data.insert(r.data.end(), o.begin(), o.end());
  }
  return r;
}

fx::Array eye_of(const fx::Array& x) { return fx::eye(x.shape()[size_t(x.ndim() - 1)], x.dtype()); }
fx::Array spd_of(const fx::Array& x) {
  return fx::matmul(x, fx::swapaxes(x, -1, -2)) + eye_of(x) * double(x.shape()[size_t(x.ndim() - 1)]);
}
bool is_square(const fx::Array& x) { return x.shape()[size_t(x.ndim() - 1)] == x.shape()[size_t(x.ndim() - 2)]; }
fx::Array sym_of(const fx::Array& x) { return (x + fx::swapaxes(x, -1, -2)) * 0.5; }

OpInfo entry(std::string name, std::function<fx::Array(const std::vector<fx::Array>&)> op,
             std::function<HostArray(const std::vector<HostArray>&, fx::DType)> ref, std::vector<Sample> samples) {
  OpInfo e;
  e.name = std::move(name);
  e.op = std::move(op);
  e.reference = std::move(ref);
  e.samples = std::move(samples);
  e.dtypes = {fx::float32, fx::float64};
  e.tol_scale = 20;  // factorizations round more than elementwise ops
  return e;
}
Sample one(fx::Shape s, uint64_t seed) { return Sample{{uniform(s, -1, 1, seed)}, "a" + s.str()}; }
Sample two(fx::Shape a, fx::Shape b, uint64_t seed) {
  return Sample{{uniform(a, -1, 1, seed), uniform(b, -1, 1, seed + 1)}, "a" + a.str() + " b" + b.str()};
}
int64_t last(const HostArray& x) { return x.shape[size_t(x.shape.rank() - 1)]; }
int64_t second_last(const HostArray& x) { return x.shape[size_t(x.shape.rank() - 2)]; }

// The factors' reconstructions: l l^T = a (cholesky) and p^T l u = a (lu).
void add_factor_ops(std::vector<OpInfo>& t) {
  namespace la = fx::linalg;
  t.push_back(entry("linalg.cholesky (l l^T = a)",
                    [](const auto& x) {
                      fx::Array l = la::cholesky(spd_of(x[0]));
                      return fx::matmul(l, fx::swapaxes(l, -1, -2));
                    },
                    [](const auto& xs, fx::DType) {
                      const int64_t n = last(xs[0]);
                      return per_matrix(xs, {n, n}, [n](const Mat& a, const Mat&) { return spd(a, n); });
                    },
                    {one({3, 3}, 5), one({2, 4, 4}, 7)}));
  // P a = L U: p^T (l u) with P one-hot from the permutation, against a itself.
  t.push_back(entry("linalg.lu (p^T l u = a)",
                    [](const auto& x) {
                      fx::Array a = x[0] + eye_of(x[0]) * 2.0;
                      auto [packed, pivots, perm] = la::lu(a);
                      const int64_t n = a.shape()[size_t(a.ndim() - 1)];
                      fx::Array lower = fx::astype(fx::expand_dims(fx::arange(n), -1) > fx::arange(n), a.dtype());
                      fx::Array l = packed * lower + eye_of(a), u = packed * (1.0 - lower);
                      fx::Array p = fx::astype(fx::equal(fx::expand_dims(perm, -1), fx::arange(n)), a.dtype());
                      return fx::matmul(fx::swapaxes(p, -1, -2), fx::matmul(l, u));
                    },
                    [](const auto& xs, fx::DType) {
                      const int64_t n = last(xs[0]);
                      return per_matrix(xs, {n, n}, [n](const Mat& a, const Mat&) { return shifted(a, n, 2.0); });
                    },
                    {one({3, 3}, 8), one({2, 4, 4}, 9)}));
}

// cholesky, the solves, inv, det, slogdet: against elimination and substitution on the host.
void add_solve_ops(std::vector<OpInfo>& t) {
  using K = fx::ErrorKind;
  namespace la = fx::linalg;
  {
    // (A non-square operand goes to cholesky as it is: the error sample's ShapeError is cholesky's.)
    OpInfo e = entry("linalg.cholesky", [](const auto& x) { return la::cholesky(is_square(x[0]) ? spd_of(x[0]) : x[0]); },
                     [](const auto& xs, fx::DType) {
                       const int64_t n = last(xs[0]);
                       return per_matrix(xs, {n, n}, [n](const Mat& a, const Mat&) { return cholesky(spd(a, n), n); });
                     },
                     {one({3, 3}, 1), one({2, 4, 4}, 2)});
    e.errors = {ErrorSample{{uniform({2, 3}, -1, 1, 3)}, K::Shape, "not square"}};
    e.error_name = "cholesky(";
    t.push_back(std::move(e));
  }
  t.push_back(entry("linalg.triangular_solve", [](const auto& x) { return la::triangular_solve(x[0] + eye_of(x[0]) * 4.0, x[1]); },
                    [](const auto& xs, fx::DType) {
                      const int64_t n = last(xs[0]), k = last(xs[1]);
                      return per_matrix(xs, {n, k}, [n, k](const Mat& a, const Mat& b) {
                        Mat l = shifted(a, n, 4.0);
                        for (int64_t i = 0; i < n; ++i)
                          for (int64_t j = i + 1; j < n; ++j) l[size_t(i * n + j)] = 0;  // only the lower triangle is read
                        return gauss(l, b, n, k);
                      });
                    },
                    {two({3, 3}, {3, 2}, 11), two({2, 3, 3}, {2, 3, 1}, 13)}));
  t.push_back(entry("linalg.triangular_solve upper transposed right",
                    [](const auto& x) {
                      return la::triangular_solve(x[0] + eye_of(x[0]) * 4.0, x[1], {.left_side = false, .lower = false, .transpose_a = true});
                    },
                    [](const auto& xs, fx::DType) {  // x U^T = b  <=>  U x^T = b^T
                      const int64_t n = last(xs[0]), k = second_last(xs[1]);
                      return per_matrix(xs, {k, n}, [n, k](const Mat& a, const Mat& b) {
                        Mat u = shifted(a, n, 4.0);
                        for (int64_t i = 0; i < n; ++i)
                          for (int64_t j = 0; j < i; ++j) u[size_t(i * n + j)] = 0;
                        return transposed(gauss(u, transposed(b, k, n), n, k), n, k);
                      });
                    },
                    {two({3, 3}, {2, 3}, 15)}));
  {
    OpInfo e = entry("linalg.solve", [](const auto& x) { return la::solve(x[0] + eye_of(x[0]) * 2.0, x[1]); },
                     [](const auto& xs, fx::DType) {
                       const int64_t n = last(xs[0]), k = xs[1].shape.rank() == xs[0].shape.rank() ? last(xs[1]) : 1;
                       fx::Shape tail = xs[1].shape.rank() == xs[0].shape.rank() ? fx::Shape{n, k} : fx::Shape{n};
                       return per_matrix(xs, tail, [n, k](const Mat& a, const Mat& b) { return gauss(shifted(a, n, 2.0), b, n, k); });
                     },
                     {two({3, 3}, {3, 2}, 21), two({4, 4}, {4}, 23), two({2, 3, 3}, {2, 3, 2}, 25)});
    e.errors = {ErrorSample{{uniform({3, 3}, -1, 1, 1), uniform({4}, -1, 1, 2)}, K::Shape, "b's rows differ"}};
    t.push_back(std::move(e));
  }
  t.push_back(entry("linalg.inv", [](const auto& x) { return la::inv(x[0] + eye_of(x[0]) * 2.0); },
                    [](const auto& xs, fx::DType) {
                      const int64_t n = last(xs[0]);
                      return per_matrix(xs, {n, n}, [n](const Mat& a, const Mat&) { return gauss(shifted(a, n, 2.0), shifted(Mat(size_t(n * n)), n, 1.0), n, n); });
                    },
                    {one({3, 3}, 31), one({2, 2, 2}, 33)}));
  t.push_back(entry("linalg.det", [](const auto& x) { return la::det(x[0] + eye_of(x[0])); },
                    [](const auto& xs, fx::DType) {
                      const int64_t n = last(xs[0]);
                      return per_matrix(xs, {}, [n](const Mat& a, const Mat&) {
                        double d = 0;
                        gauss(shifted(a, n, 1.0), Mat(size_t(n)), n, 1, &d);
                        return Mat{d};
                      });
                    },
                    {one({3, 3}, 41), one({2, 4, 4}, 43)}));
  t.push_back(entry("linalg.slogdet (log|det|)", [](const auto& x) { return la::slogdet(x[0] + eye_of(x[0])).second; },
                    [](const auto& xs, fx::DType) {
                      const int64_t n = last(xs[0]);
                      return per_matrix(xs, {}, [n](const Mat& a, const Mat&) {
                        double d = 0;
                        gauss(shifted(a, n, 1.0), Mat(size_t(n)), n, 1, &d);
                        return Mat{std::log(std::abs(d))};
                      });
                    },
                    {one({3, 3}, 45)}));
}

// qr, eigh and svd: reconstructions and the sign-free parts of the factors.
void add_spectral_ops(std::vector<OpInfo>& t) {
  namespace la = fx::linalg;
  auto reconstruct_ref = [](const auto& xs, fx::DType) { return xs[0]; };
  t.push_back(entry("linalg.qr (q r = a)", [](const auto& x) { auto [q, r] = la::qr(x[0]); return fx::matmul(q, r); },
                    reconstruct_ref, {one({4, 3}, 51), one({2, 3, 3}, 53)}));
  t.push_back(entry("linalg.qr (|r_ii|)",
                    [](const auto& x) { return fx::abs(fx::sum(la::qr(x[0]).second * eye_of(x[0]), {-1})); },
                    [](const auto& xs, fx::DType) {  // |r_ii| = L_ii with a^T a = L L^T
                      const int64_t m = second_last(xs[0]), n = last(xs[0]);
                      return per_matrix(xs, {n}, [m, n](const Mat& a, const Mat&) {
                        Mat l = cholesky(matmul(transposed(a, m, n), a, n, m, n), n);
                        Mat d;
                        for (int64_t i = 0; i < n; ++i) d.push_back(l[size_t(i * n + i)]);
                        return d;
                      });
                    },
                    {one({4, 3}, 55)}));
  t.push_back(entry("linalg.eigh (eigenvalues)", [](const auto& x) { return la::eigh(x[0]).first; },
                    [](const auto& xs, fx::DType) {
                      const int64_t n = last(xs[0]);
                      return per_matrix(xs, {n}, [n](const Mat& a, const Mat&) {
                        Mat s = a;
                        for (int64_t i = 0; i < n; ++i)
                          for (int64_t j = 0; j < n; ++j) s[size_t(i * n + j)] = 0.5 * (a[size_t(i * n + j)] + a[size_t(j * n + i)]);
                        return eigenvalues(s, n);
                      });
                    },
                    {one({3, 3}, 61), one({2, 4, 4}, 63)}));
  t.push_back(entry("linalg.eigh (v diag(w) v^T = a)",
                    [](const auto& x) {
                      auto [w, v] = la::eigh(sym_of(x[0]));
                      return fx::matmul(v * fx::expand_dims(w, -2), fx::swapaxes(v, -1, -2));
                    },
                    [](const auto& xs, fx::DType) {
                      const int64_t n = last(xs[0]);
                      return per_matrix(xs, {n, n}, [n](const Mat& a, const Mat&) {
                        Mat s = a;
                        for (int64_t i = 0; i < n; ++i)
                          for (int64_t j = 0; j < n; ++j) s[size_t(i * n + j)] = 0.5 * (a[size_t(i * n + j)] + a[size_t(j * n + i)]);
                        return s;
                      });
                    },
                    {one({3, 3}, 65)}));
  t.push_back(entry("linalg.svd (singular values)", [](const auto& x) { return std::get<1>(la::svd(x[0])); },
                    [](const auto& xs, fx::DType) {  // sqrt(eigenvalues(a^T a)), descending
                      const int64_t m = second_last(xs[0]), n = last(xs[0]), k = std::min(m, n);
                      return per_matrix(xs, {k}, [m, n, k](const Mat& a, const Mat&) {
                        const bool tall = m >= n;
                        Mat g = tall ? matmul(transposed(a, m, n), a, n, m, n) : matmul(a, transposed(a, m, n), m, n, m);
                        std::vector<double> w = eigenvalues(g, k);
                        Mat s;
                        for (auto it = w.rbegin(); it != w.rend(); ++it) s.push_back(std::sqrt(std::max(*it, 0.0)));
                        return s;
                      });
                    },
                    {one({3, 3}, 71), one({4, 3}, 73), one({2, 3, 5}, 75)}));
  t.push_back(entry("linalg.svd (u diag(s) vt = a)",
                    [](const auto& x) {
                      auto [u, s, vt] = la::svd(x[0]);
                      return fx::matmul(u * fx::expand_dims(s, -2), vt);
                    },
                    reconstruct_ref, {one({3, 3}, 77), one({4, 2}, 79), one({2, 2, 3}, 81)}));
}

// cholesky_linear, the primitive of cholesky's JVP (adjoint = false) and VJP (adjoint = true), at
// the factor l of x[0]'s SPD matrix, against its closed forms on the host: L Phi(L^-1 sym(x) L^-T)
// and sym(L^-T Phi(L^T tril(x)) L^-1). Differentiating it in l (JVP, second order) checks its own
// derivative rule.
Mat phi(Mat a, int64_t n) {  // the lower triangle, diagonal halved
  for (int64_t i = 0; i < n; ++i) {
    a[size_t(i * n + i)] *= 0.5;
    for (int64_t j = i + 1; j < n; ++j) a[size_t(i * n + j)] = 0;
  }
  return a;
}
Mat symmetric_part(const Mat& a, int64_t n) {
  Mat s = a, t = transposed(a, n, n);
  for (size_t i = 0; i < s.size(); ++i) s[i] = 0.5 * (s[i] + t[i]);
  return s;
}
Mat cholesky_linear_ref(const Mat& a, const Mat& x, int64_t n, bool adjoint) {
  const Mat l = cholesky(spd(a, n), n), lt = transposed(l, n, n);
  if (!adjoint) {
    Mat z = gauss(l, symmetric_part(x, n), n, n);             // L^-1 sym(x)
    Mat y = transposed(gauss(l, transposed(z, n, n), n, n), n, n);  // z L^-T
    return matmul(l, phi(y, n), n, n, n);
  }
  Mat lower_x = x;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) lower_x[size_t(i * n + j)] = 0;
  Mat w = gauss(lt, phi(matmul(lt, lower_x, n, n, n), n), n, n);  // L^-T Phi(L^T tril(x))
  return symmetric_part(transposed(gauss(lt, transposed(w, n, n), n, n), n, n), n);  // sym(w L^-1)
}
void add_cholesky_linear_ops(std::vector<OpInfo>& t) {
  for (bool adjoint : {false, true})
    t.push_back(entry(adjoint ? "cholesky_linear adjoint (cholesky's VJP)" : "cholesky_linear (cholesky's JVP)",
                      [adjoint](const auto& x) {
                        fx::Array l = fx::linalg::cholesky(spd_of(x[0]));
                        return fx::bind1(fx::Prim::cholesky_linear, {l, x[1]}, fx::Params{{"adjoint", adjoint}},
                                         std::source_location::current());
                      },
                      [adjoint](const auto& xs, fx::DType) {
                        const int64_t n = last(xs[0]);
                        return per_matrix(xs, {n, n}, [n, adjoint](const Mat& a, const Mat& x) {
                          return cholesky_linear_ref(a, x, n, adjoint);
                        });
                      },
                      {two({3, 3}, {3, 3}, 91), two({2, 4, 4}, {2, 4, 4}, 93)}));
}

}  // namespace

void add_decomposition_ops(std::vector<OpInfo>& t) {
  add_factor_ops(t);
  add_cholesky_linear_ops(t);
  add_solve_ops(t);
  add_spectral_ops(t);
}

}  // namespace optable
