// The random-program fuzzer (issue 35, item 2): a seeded generator composes well-typed programs
// over x:[A,B], y:[B], z:[A,1] from about thirty ops -- elementwise (smooth and not), broadcasting
// binaries, reductions, logsumexp, transpose, flip, cumsum, sort, matmul and an outer product,
// slices, concatenation, reshape, broadcast_to, integer_pow (0 included), cond, fori_loop, scan --
// and checks each:
//   jit     jit(f) against f run eagerly (float32);
//   vmap    vmap(f) over a batch of 3 against a loop of f, and with in_axes(2, none, 0);
//   jvp     the jvp's tangent against <grad f, v> (forward against reverse mode, float64);
//   fd      <grad f, v> against central finite differences (float64; programs of smooth ops only);
//   jitgrad jit(grad f) against grad f (float64).
// The first disagreement is shrunk to the fewest steps that still disagree and reported as the
// program's IR text. The suite runs FLUXION_TEST_RANDOM_PROGRAMS programs (40 by default) from
// seed FLUXION_TEST_RANDOM_SEED (1); a long run sets them (docs/reliability.md has the figures).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace fx = fluxion;

namespace {

bool broadcastable(const fx::Shape& a, const fx::Shape& b) {
  for (size_t i = 1; i <= std::min(a.size(), b.size()); ++i) {
    const int64_t p = a[a.size() - i], q = b[b.size() - i];
    if (p != q && p != 1 && q != 1) return false;
  }
  return true;
}

struct RandomProgram {
  uint64_t seed;
  int steps;
  bool* smooth = nullptr;  // set false where a step is not differentiable everywhere

  // One step on operand x (and a partner y that broadcasts with it): the op `kind` picks.
  fx::Array step(int kind, const fx::Array& x, const fx::Array& y, std::mt19937_64& rng) const {
    const int64_t nd = x.ndim(), axis = nd > 0 ? int64_t(rng() % uint64_t(nd)) : 0;
    auto rough = [&] { if (smooth) *smooth = false; };
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
      fx::Array r = step(int(rng() % 32), a, b, rng);
      if (r.size() > 4096) r = fx::sin(a);  // keep programs small
      pool.push_back(r);
    }
    return pool.back() + fx::sum(pool[pool.size() - 2]) * 0.1f;
  }
};

struct Inputs {
  fx::Array x, y, z;
};
Inputs inputs(uint64_t seed, int64_t a, int64_t b, fx::DType dtype, int batch = 0) {
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

double max_rel_error(const fx::Array& got, const fx::Array& want, double atol) {
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

std::string num(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

// The first check the program fails ("" when it passes all), with what was measured.
std::string first_disagreement(const RandomProgram& f, int64_t a, int64_t b) {
  const Inputs in = inputs(f.seed, a, b, fx::float32);
  const fx::Array want = f(in.x, in.y, in.z);
  try {
    auto jf = fx::jit(f);
    if (double e = max_rel_error(jf(in.x, in.y, in.z), want, 1e-3); e > 1e-3)
      return "jit: relative error " + num(e);
    if (jf.compilations() != 1) return "jit: " + std::to_string(jf.compilations()) + " compilations, not 1";
  } catch (const fx::Error& e) {
    return std::string("jit: raised ") + e.what();
  }
  const Inputs bt = inputs(f.seed + 1, a, b, fx::float32, 3);
  const fx::Array batched = fx::vmap(f)(bt.x, bt.y, bt.z);
  std::vector<fx::Array> loop;
  for (int64_t i = 0; i < 3; ++i) loop.push_back(f(bt.x[i], bt.y[i], bt.z[i]));
  if (double e = max_rel_error(batched, fx::stack(loop), 1e-3); e > 1e-3) return "vmap: relative error " + num(e);
  // Mixed placements: x batched along its last axis, y not batched, z along its first.
  const fx::Array mixed = fx::vmap(f, fx::in_axes(2, fx::none, 0))(fx::moveaxis(bt.x, 0, 2), in.y, bt.z);
  std::vector<fx::Array> mixed_loop;
  for (int64_t i = 0; i < 3; ++i) mixed_loop.push_back(f(bt.x[i], in.y, bt.z[i]));
  if (double e = max_rel_error(mixed, fx::stack(mixed_loop), 1e-3); e > 1e-3)
    return "vmap in_axes(2, none, 0): relative error " + num(e);

  // Derivatives in float64, of a scalar of f's result, along a random direction v of x.
  const Inputs d = inputs(f.seed, a, b, fx::float64);
  auto scalar = [&](const fx::Array& x) { return fx::sum(fx::tanh(f(x, d.y, d.z))); };
  const fx::Array v = inputs(f.seed + 2, a, b, fx::float64).x;
  const fx::Array g = fx::grad(scalar)(d.x);
  const double gv = fx::sum(g * v).item<double>();
  const double tangent = fx::jvp(scalar, std::tuple{d.x}, std::tuple{v}).second.item<double>();
  if (std::fabs(tangent - gv) > 1e-9 + 1e-9 * std::fabs(gv))
    return "jvp: tangent " + num(tangent) + ", <grad, v> " + num(gv);
  if (f.smooth && *f.smooth) {
    const double h = 1e-5;
    const double fd = (scalar(d.x + v * h).item<double>() - scalar(d.x - v * h).item<double>()) / (2 * h);
    if (std::fabs(fd - gv) > 1e-6 + 1e-5 * std::fabs(gv))
      return "fd: finite differences " + num(fd) + ", <grad, v> " + num(gv);
  }
  // An absolute floor of 1e-13 (1e-9 of atol 1e-4): where tanh saturates, its derivative 1 - t*t is
  // a difference of numbers near 1, so one ulp of t (compiled tanh is within 1.2 ulp, libm's 0.5)
  // moves it by ~1e-16 absolute -- 1e-7 relative to a gradient of 1e-9 (seed 42482).
  try {
    if (double e = max_rel_error(fx::jit(fx::grad(scalar))(d.x), g, 1e-4); e > 1e-9)
      return "jitgrad: relative error " + num(e);
  } catch (const fx::Error& e) {
    return std::string("jitgrad: raised ") + e.what();
  }
  return "";
}

struct Case {
  uint64_t seed;
  int steps;
  int64_t a, b;
};
Case case_of(uint64_t seed) {
  std::mt19937_64 g(seed * 31 + 7);
  return {seed, 2 + int(g() % 15), 1 + int64_t(g() % 5), 1 + int64_t(g() % 6)};
}

std::string run(const Case& c, bool* smooth) {
  *smooth = true;
  try {
    RandomProgram f{c.seed, c.steps, smooth};
    const Inputs in = inputs(c.seed, c.a, c.b, fx::float32);
    f(in.x, in.y, in.z);  // sets *smooth before the checks read it
    return first_disagreement(f, c.a, c.b);
  } catch (const std::exception& e) {
    return std::string("raised: ") + e.what();
  }
}

// The disagreement shrunk to the fewest steps that still show it, as the program's IR text.
std::string report(Case c, const std::string& what) {
  bool smooth = true;
  for (int s = 1; s < c.steps; ++s) {
    Case shorter = c;
    shorter.steps = s;
    const std::string w = run(shorter, &smooth);
    if (!w.empty() && w.substr(0, w.find(':')) == what.substr(0, what.find(':'))) {
      c = shorter;
      break;
    }
  }
  const std::string w = run(c, &smooth);
  const Inputs in = inputs(c.seed, c.a, c.b, fx::float32);
  std::ostringstream out;
  out << "seed " << c.seed << ", " << c.steps << " steps, x:[" << c.a << "," << c.b << "]: " << w << "\n"
      << fx::make_ir(RandomProgram{c.seed, c.steps})(in.x, in.y, in.z).str();
  return out.str();
}

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// Integer programs (int8, int32, int64, uint8, uint32): wrapping arithmetic, floor division and
// remainder by any divisor (0 and -1 included, on the type's extremes), bitwise ops, comparisons,
// reductions, cumsum, sort, flip -- jit and vmap must agree with eager bit for bit.
struct IntProgram {
  uint64_t seed;
  int steps;

  fx::Array operator()(const fx::Array& x, const fx::Array& y) const {
    std::mt19937_64 rng(seed);
    std::vector<fx::Array> pool{x, y};
    for (int s = 0; s < steps; ++s) {
      const fx::Array& a = pool[rng() % pool.size()];
      const fx::Array& b = pool[rng() % pool.size()];  // x and y share a shape, as does every step
      const int64_t axis = int64_t(rng() % 2);
      fx::Array r;
      switch (rng() % 16) {
        case 0: r = a + b; break;
        case 1: r = a - b; break;
        case 2: r = a * b; break;
        case 3: r = fx::floor_divide(a, b); break;
        case 4: r = fx::remainder(a, b); break;
        case 5: r = -a; break;
        case 6: r = fx::abs(a); break;
        case 7: r = fx::maximum(a, b); break;
        case 8: r = fx::where(a > b, a, b - a); break;
        case 9: r = fx::bitwise_xor(a, b); break;
        case 10: r = fx::bitwise_and(a, b + a); break;
        case 11: r = fx::cumsum(a, axis); break;
        case 12: r = fx::sort(a, axis); break;
        case 13: r = fx::flip(a, {axis}); break;
        case 14: r = a + fx::sum(b, {axis}, true); break;
        default: r = fx::integer_pow(a, int64_t(rng() % 4)); break;
      }
      pool.push_back(fx::astype(r, x.dtype()));  // sums of small types widen: back to the type
    }
    return pool.back();
  }
};

fx::Array int_input(uint64_t seed, fx::Shape s, fx::DType dtype) {
  std::mt19937_64 g(seed);
  std::vector<int64_t> v(size_t(s.numel()));
  // The type's ends, 0, +-1 and small numbers: where division, negation and wrapping go wrong.
  const int64_t ends[] = {0, 1, -1, 2, -7, 127, -128, 255, 2147483647, -2147483647 - 1, 4294967295,
                          INT64_MAX, INT64_MIN};
  for (int64_t& e : v) e = g() % 3 == 0 ? ends[g() % 13] : int64_t(g() % 41) - 20;
  // Through a wrapping cast from int64: the ends become the target type's values.
  return fx::astype(fx::array(v, s), dtype);
}

std::string int_disagreement(uint64_t seed) {
  const fx::DType types[] = {fx::int8, fx::int32, fx::int64, fx::uint8, fx::uint32};
  std::mt19937_64 g(seed * 131 + 5);
  const fx::DType dt = types[g() % 5];
  const fx::Shape shape{1 + int64_t(g() % 4), 1 + int64_t(g() % 5)};
  IntProgram f{seed, 2 + int(g() % 12)};
  const fx::Array x = int_input(seed, shape, dt), y = int_input(seed + 1, shape, dt);
  const fx::Array want = f(x, y);
  auto bits = [](const fx::Array& a) { return fx::astype(a, fx::int64).to_vector<int64_t>(); };
  std::string where = "dtype " + std::string(fx::dtype_name(dt)) + ", seed " + std::to_string(seed) + ":\n" +
                      fx::make_ir(f)(x, y).str();
  try {
    if (bits(fx::jit(f)(x, y)) != bits(want)) return "int jit differs from eager, " + where;
  } catch (const fx::Error& e) {
    return "int jit raised " + std::string(e.what()) + ", " + where;
  }
  const fx::Array xb = fx::stack({x, y, x}), yb = fx::stack({y, x, x});
  if (bits(fx::vmap(f)(xb, yb)) != bits(fx::stack({f(x, y), f(y, x), f(x, x)})))
    return "int vmap differs from a loop, " + where;
  return "";
}

}  // namespace

TEST_CASE("random programs: jit, vmap, jvp, grad against finite differences and jit(grad) agree") {
  const uint64_t count = env_or("FLUXION_TEST_RANDOM_PROGRAMS", 40), first = env_or("FLUXION_TEST_RANDOM_SEED", 1);
  uint64_t smooth_count = 0, failures = 0;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    const Case c = case_of(seed);
    bool smooth = true;
    const std::string what = run(c, &smooth);
    smooth_count += smooth;
    if (!what.empty()) {
      ++failures;
      FAIL_CHECK(report(c, what));
      if (failures >= 3) break;  // the first few, shrunk; the rest would repeat them
    }
  }
  MESSAGE(count << " random programs from seed " << first << ", " << smooth_count << " of them checked against finite differences");
  CHECK(smooth_count > 0);
}

TEST_CASE("random programs: integer programs agree bit for bit under jit and vmap, every integer dtype") {
  const uint64_t count = env_or("FLUXION_TEST_RANDOM_PROGRAMS", 40), first = env_or("FLUXION_TEST_RANDOM_SEED", 1);
  int failures = 0;
  for (uint64_t seed = first; seed < first + count && failures < 3; ++seed) {
    std::string what;
    try {
      what = int_disagreement(seed);
    } catch (const std::exception& e) {
      what = "seed " + std::to_string(seed) + " raised: " + e.what();
    }
    if (!what.empty()) {
      ++failures;
      FAIL_CHECK(what);
    }
  }
  CHECK(failures == 0);
}
