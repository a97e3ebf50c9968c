// The random-program fuzzer (issue 35, item 2): programs from the generator in
// tests/random_program.h (about thirty ops, cond, fori_loop, scan and a bounded while_loop among
// them), each checked:
//   jit     jit(f) against f run eagerly (float32);
//   vmap    vmap(f) over a batch of 3 against a loop of f, and with in_axes(2, none, 0);
//   jvp     the jvp's tangent against <grad f, v> (forward against reverse mode, float64);
//   fd      <grad f, v> against central finite differences (float64; programs of smooth ops only);
//   jitgrad jit(grad f) against grad f (float64);
// in float16 and bfloat16, jit against eager (continuous ops only, a tolerance of the type's
// rounding); with the unbounded while_loop, which only forward mode differentiates, jit, vmap and
// jit(jvp) against eager; and integer programs (five dtypes, unbounded while_loops with
// data-dependent trip counts among their steps) bit for bit under jit and vmap.
// The first disagreement is shrunk to the fewest steps that still disagree and reported as the
// program's IR text. The suite runs FLUXION_TEST_RANDOM_PROGRAMS programs (40 by default) from
// seed FLUXION_TEST_RANDOM_SEED (1); a long run sets them (docs/reliability.md has the figures).
#include <doctest/doctest.h>
#include <fluxion.h>

#include "tests/random_program.h"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace fx = fluxion;

namespace {

using namespace random_program;

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

// Integer programs (int8, int32, int64, uint8, uint32): wrapping arithmetic, floor division and
// remainder by any divisor (0 and -1 included, on the type's extremes), bitwise ops, comparisons,
// reductions, cumsum, sort, flip, while_loops (one whose trip count depends on the data, so that
// vmap batches its predicate; one counted, with a pair carry) -- jit and vmap must agree with eager
// bit for bit.
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
      switch (rng() % 18) {
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
        case 15: r = fx::integer_pow(a, int64_t(rng() % 4)); break;
        case 16:  // +7 while the largest element is in (-50, 100): at most 22 steps, never wraps
          r = fx::while_loop(
              [](const fx::Array& c) {
                const fx::Array m = fx::max(c);
                return fx::logical_and(m < 100, m > -50);
              },
              [](const fx::Array& c) { return c + 7; }, a);
          break;
        default: {  // k steps of c * 3 + b (wrapping), k drawn from 0 to 3
          const int k = int(rng() % 4);
          using Carry = std::pair<fx::Array, fx::Array>;
          r = fx::while_loop([k](const Carry& c) { return c.first < k; },
                             [&b](const Carry& c) { return Carry{c.first + 1, c.second * 3 + b}; },
                             Carry{fx::array(0), a})
                  .second;
          break;
        }
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

namespace {

// Runs `check` (the disagreement it finds, "" when none) on every seed of the run
// (FLUXION_TEST_RANDOM_PROGRAMS seeds from FLUXION_TEST_RANDOM_SEED), failing the test case with the
// first three (an exception names its seed); returns how many it reported.
template <class Check>
int report_disagreements(const std::string& what_runs, Check check) {
  const uint64_t count = env_or("FLUXION_TEST_RANDOM_PROGRAMS", 40), first = env_or("FLUXION_TEST_RANDOM_SEED", 1);
  int failures = 0;
  for (uint64_t seed = first; seed < first + count && failures < 3; ++seed) {
    std::string what;
    try {
      what = check(seed);
    } catch (const std::exception& e) {
      what = what_runs + ", seed " + std::to_string(seed) + " raised: " + e.what();
    }
    if (!what.empty()) {
      ++failures;
      FAIL_CHECK(what);
    }
  }
  return failures;
}

}  // namespace

TEST_CASE("random programs: integer programs agree bit for bit under jit and vmap, every integer dtype") {
  CHECK(report_disagreements("integer program", int_disagreement) == 0);
}

namespace {

// float16 and bfloat16 programs, jit against eager. Both compute each op in float32 and round its
// result to the type, but jit fuses ops into one loop and may keep an intermediate in float32 where
// eager rounds it, so they may differ by a few roundings of the type, amplified by what follows:
// the measure is max |jit - eager| / (1 + max |eager|), against `tolerance` (eps of the type times
// a factor measured over many programs, docs/reliability.md). Continuous ops only: a step that
// jumps (where, cond, a data-dependent loop) turns one rounding into any difference at all.
std::string half_disagreement(uint64_t seed, fx::DType dt, double tolerance, double* error) {
  const Case c = case_of(seed);
  const RandomProgram f{c.seed, c.steps, nullptr, OpSet::continuous};
  const Inputs in = inputs(c.seed, c.a, c.b, dt);
  const fx::Array want = f(in.x, in.y, in.z);
  const std::string where = std::string(fx::dtype_name(dt)) + ", seed " + std::to_string(seed) + ":\n" +
                            fx::make_ir(f)(in.x, in.y, in.z).str();
  fx::Array got;
  try {
    got = fx::jit(f)(in.x, in.y, in.z);
  } catch (const fx::Error& e) {
    return "jit raised " + std::string(e.what()) + ", " + where;
  }
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return "jit gives " + got.aval().str() + ", eager " + want.aval().str() + ", " + where;
  const std::vector<double> g = fx::astype(got, fx::float64).to_vector<double>();
  const std::vector<double> w = fx::astype(want, fx::float64).to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) != std::isnan(w[i]) || std::isinf(g[i]) != std::isinf(w[i]))
      return "jit " + num(g[i]) + ", eager " + num(w[i]) + " at element " + std::to_string(i) + ", " + where;
    if (std::isfinite(w[i])) diff = std::max(diff, std::fabs(g[i] - w[i])), scale = std::max(scale, std::fabs(w[i]));
  }
  *error = diff / (1 + scale);
  if (*error > tolerance) return "jit against eager: error " + num(*error) + " (tolerance " + num(tolerance) + "), " + where;
  return "";
}

}  // namespace

TEST_CASE("random programs: float16 and bfloat16 programs under jit agree with eager within the type's rounding") {
  const std::pair<fx::DType, double> types[] = {{fx::float16, 0.004}, {fx::bfloat16, 0.03}};
  for (const auto& [dt, tolerance] : types) {
    double worst = 0;
    const int failures = report_disagreements(std::string(fx::dtype_name(dt)), [&, dt = dt, tolerance = tolerance](uint64_t seed) {
      double error = 0;
      std::string what = half_disagreement(seed, dt, tolerance, &error);
      worst = std::max(worst, error);
      return what;
    });
    MESSAGE(fx::dtype_name(dt) << " programs: largest error " << worst << " (tolerance " << tolerance << ")");
    CHECK(failures == 0);
  }
}

namespace {

// Programs with the unbounded while_loop (the while primitive, whose trip count depends on the
// data): reverse mode refuses it, so these are checked forward only -- jit against eager, vmap
// against a loop (the predicate batched: each lane runs until all are done), and jit(jvp) against
// jvp in float64.
std::string forward_disagreement(uint64_t seed) {
  const Case c = case_of(seed);
  RandomProgram f{c.seed, c.steps};
  f.reverse_mode = false;
  const Inputs in = inputs(c.seed, c.a, c.b, fx::float32);
  const std::string where = "seed " + std::to_string(seed) + ":\n" + fx::make_ir(f)(in.x, in.y, in.z).str();
  const fx::Array want = f(in.x, in.y, in.z);
  try {
    if (double e = max_rel_error(fx::jit(f)(in.x, in.y, in.z), want, 1e-3); e > 1e-3) return "jit: relative error " + num(e) + ", " + where;
  } catch (const fx::Error& e) {
    return "jit raised " + std::string(e.what()) + ", " + where;
  }
  const Inputs bt = inputs(c.seed + 1, c.a, c.b, fx::float32, 3);
  std::vector<fx::Array> loop;
  for (int64_t i = 0; i < 3; ++i) loop.push_back(f(bt.x[i], bt.y[i], bt.z[i]));
  if (double e = max_rel_error(fx::vmap(f)(bt.x, bt.y, bt.z), fx::stack(loop), 1e-3); e > 1e-3)
    return "vmap: relative error " + num(e) + ", " + where;
  const Inputs d = inputs(c.seed, c.a, c.b, fx::float64);
  const fx::Array v = inputs(c.seed + 2, c.a, c.b, fx::float64).x;
  auto tangent = [&](const fx::Array& x, const fx::Array& t) { return fx::jvp([&](const fx::Array& u) { return f(u, d.y, d.z); }, std::tuple{x}, std::tuple{t}).second; };
  try {
    if (double e = max_rel_error(fx::jit(tangent)(d.x, v), tangent(d.x, v), 1e-6); e > 1e-9)
      return "jit(jvp): relative error " + num(e) + ", " + where;
  } catch (const fx::Error& e) {
    return "jit(jvp) raised " + std::string(e.what()) + ", " + where;
  }
  return "";
}

}  // namespace

TEST_CASE("random programs: unbounded while_loops under jit, vmap and jit(jvp) agree with eager") {
  CHECK(report_disagreements("unbounded-while program", forward_disagreement) == 0);
}
