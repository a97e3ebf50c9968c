// The random-program generator the differential tests share (issue 35, item 2): a seeded program
// over x:[A,B], y:[B], z:[A,1] composed of about thirty ops -- elementwise (smooth and not),
// broadcasting binaries, reductions, logsumexp, transpose, flip, cumsum, sort, matmul and an outer
// product, slices, concatenation, reshape, broadcast_to, integer_pow (0 included), cond, fori_loop,
// scan, and a while_loop whose trip count depends on the data (bounded, or unbounded for programs
// only forward mode differentiates).
//
// An `OpSet` narrows the ops for a check that cannot take them all: `onnx` keeps what the ONNX
// writer has a form for (no sort, cond, loops); `continuous` drops the steps whose result jumps
// when an input moves by a rounding error (where, cond, a data-dependent loop), so that programs in
// float16/bfloat16, where eager and jit may round differently, can be compared with a tolerance.
// Used by tests/test_random_programs.cpp and tests/test_onnx_random.cpp.
#pragma once
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace fx = fluxion;

namespace random_program {

enum class OpSet { all, onnx, continuous };

inline bool broadcastable(const fx::Shape& a, const fx::Shape& b) {
  for (size_t i = 1; i <= std::min(a.size(), b.size()); ++i) {
    const int64_t p = a[a.size() - i], q = b[b.size() - i];
    if (p != q && p != 1 && q != 1) return false;
  }
  return true;
}

inline constexpr int kKinds = 33;

// Whether step `kind` is in `ops`; a step that is not is replaced by an elementwise one.
inline bool in_set(int kind, OpSet ops) {
  switch (ops) {
    case OpSet::all: return true;
    case OpSet::onnx: return kind != 20 && kind != 28 && kind != 29 && kind != 30 && kind != 32;
    case OpSet::continuous: return kind != 13 && kind != 28 && kind != 32;
  }
  return true;
}

struct RandomProgram {
  uint64_t seed;
  int steps;
  bool* smooth = nullptr;  // set false where a step is not differentiable everywhere
  OpSet ops = OpSet::all;
  // Whether the data-dependent loop is the bounded while_loop (reverse mode runs through it) or the
  // unbounded one, which only forward mode differentiates (JAX's rule too).
  bool reverse_mode = true;

  // One step on operand x (and a partner y that broadcasts with it): the op `kind` picks.
  fx::Array step(int kind, const fx::Array& x, const fx::Array& y, std::mt19937_64& rng) const {
    const int64_t nd = x.ndim(), axis = nd > 0 ? int64_t(rng() % uint64_t(nd)) : 0;
    auto rough = [&] { if (smooth) *smooth = false; };
    if (!in_set(kind, ops)) kind %= 12;
    switch (kind) {
      case 0: return fx::sin(x);
      case 1: return fx::cos(x) * 0.5f;
      case 2: return fx::tanh(x * 1.5f);
      case 3: return fx::nn::sigmoid(x);
      case 4: return fx::square(x) * 0.25f;
      case 5: return fx::log(x * x + 1.f);
      case 6: return fx::sqrt(x * x + 1.f) - 1.f;
      case 7: return fx::exp(-x * x);
      case 8: return x + y;
      case 9: return x - y * 0.5f;
      case 10: return x * y;
      case 11: return x / (y * y + 1.f);
      case 12: return rough(), fx::maximum(x, y);
      case 13: return rough(), fx::where(x > y, x, y * 0.5f);
      case 14: return nd > 0 ? fx::sum(x, {axis}, rng() % 2 == 0) * 0.1f : x * 0.9f;
      case 15: return rough(), nd > 0 ? fx::max(x, {axis}, rng() % 2 == 0) : -x;
      case 16: return nd > 0 ? fx::logsumexp(x, {axis}) : fx::tanh(x);
      case 17: return nd == 2 ? fx::transpose(x) : fx::sin(x * 0.5f);
      case 18: return nd > 0 ? fx::flip(x, {axis}) : x * 1.1f;
      case 19: return nd > 0 ? fx::cumsum(x, axis) * 0.1f : x;
      case 20: return rough(), nd > 0 ? fx::sort(x, axis) : x;
      case 21: return nd == 2 ? fx::matmul(x, fx::transpose(x)) * 0.1f : nd == 1 ? fx::dot(x, x) * 0.1f : x * x;
      case 22: return nd == 1 ? fx::matmul(fx::expand_dims(x, 1), fx::expand_dims(x, 0)) * 0.1f : fx::cos(x);
      case 23: return nd > 0 && x.shape()[0] > 1 ? x[fx::Slice(1, x.shape()[0])] : x * 0.5f;
      case 24: return nd > 0 ? fx::concatenate({x, fx::tanh(x)}, axis) : x;
      case 25: return fx::reshape(x, {-1});
      case 26: return nd == 1 ? fx::broadcast_to(x, {2, x.shape()[0]}) : x - 0.25f;
      case 27: return fx::integer_pow(fx::tanh(x), int64_t(rng() % 4));
      case 28:
        rough();
        return fx::cond(fx::sum(x) > 0.f, [&] { return x * 2.f - 1.f; }, [&] { return fx::sin(x); });
      case 29:  // a loop of static length: recorded as a scan, differentiable
        return fx::fori_loop(0, 3, [](const fx::Array&, fx::Array c) { return fx::sin(c) * 0.9f + 0.1f; }, x);
      case 30: {
        if (nd == 0) return x * 0.7f;
        auto body = [](fx::Array c, fx::Array xi) { return std::pair{c * 0.5f + xi, fx::tanh(c)}; };
        auto [carry, ys] = fx::scan(body, fx::zeros_like(x[0]), x);
        return ys + fx::sum(carry) * 0.1f;
      }
      case 32:  // a while_loop whose trip count (0 to 4) depends on x
        rough();
        if (reverse_mode)  // bounded: a scan, so reverse mode works
          return fx::while_loop([](const fx::Array& c) { return fx::sum(c * c) < 40.f; },
                                [](const fx::Array& c) { return c * 1.25f + 0.25f; }, x, fx::max_steps(4));
        else {  // unbounded: the while primitive; the count in the carry ends it
          using Carry = std::pair<fx::Array, fx::Array>;
          return fx::while_loop([](const Carry& c) { return fx::logical_and(c.first < 4, fx::sum(c.second * c.second) < 40.f); },
                                [](const Carry& c) { return Carry{c.first + 1, c.second * 1.25f + 0.25f}; },
                                Carry{fx::array(0), x})
              .second;
        }
      default: return fx::mean(x) + x * 0.5f;
    }
  }

  fx::Array operator()(const fx::Array& x, const fx::Array& y, const fx::Array& z) const {
    std::mt19937_64 rng(seed);
    std::vector<fx::Array> pool{x, y, z};
    for (int s = 0; s < steps; ++s) {
      const fx::Array& a = pool[rng() % pool.size()];
      std::vector<const fx::Array*> partners;
      for (const fx::Array& p : pool)
        if (broadcastable(a.shape(), p.shape())) partners.push_back(&p);
      const fx::Array& b = *partners[rng() % partners.size()];
      fx::Array r = step(int(rng() % kKinds), a, b, rng);
      if (r.size() > 4096) r = fx::sin(a);  // keep programs small
      pool.push_back(r);
    }
    return pool.back() + fx::sum(pool[pool.size() - 2]) * 0.1f;
  }
};

struct Inputs {
  fx::Array x, y, z;
};
inline Inputs inputs(uint64_t seed, int64_t a, int64_t b, fx::DType dtype, int batch = 0) {
  std::mt19937_64 g(seed * 977 + 13);
  std::uniform_real_distribution<double> u(-2, 2);
  auto make = [&](fx::Shape s) {
    if (batch) s.insert(0, batch);
    std::vector<double> v(size_t(fx::Shape(s).numel()));
    for (double& e : v) e = u(g);
    return fx::astype(fx::array(v, s), dtype);
  };
  Inputs in;
  in.x = make({a, b}), in.y = make({b}), in.z = make({a, 1});
  return in;
}

// max over the elements of |got - want| / (atol + |want|), in float64; INFINITY where the shapes
// differ or one side is NaN and the other not.
inline double max_rel_error(const fx::Array& got, const fx::Array& want, double atol) {
  const std::vector<double> g = fx::astype(got, fx::float64).to_vector<double>();
  const std::vector<double> w = fx::astype(want, fx::float64).to_vector<double>();
  if (g.size() != w.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) != std::isnan(w[i])) return INFINITY;
    if (!std::isnan(g[i])) worst = std::max(worst, std::fabs(g[i] - w[i]) / (atol + std::fabs(w[i])));
  }
  return worst;
}

inline std::string num(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

// A program's seed, length and input sizes, all drawn from the seed.
struct Case {
  uint64_t seed;
  int steps;
  int64_t a, b;
};
inline Case case_of(uint64_t seed) {
  std::mt19937_64 g(seed * 31 + 7);
  return {seed, 2 + int(g() % 15), 1 + int64_t(g() % 5), 1 + int64_t(g() % 6)};
}

inline uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

}  // namespace random_program
