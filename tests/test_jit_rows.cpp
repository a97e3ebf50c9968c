// Row blocking (lowering/row_blocks.h): a row-local kernel made of more than generics -- vmap of
// jacfwd of a small function of a gathered, concatenated parameter row, as in GradBench's bundle
// adjustment -- compiles to one loop over blocks of rows (the dump's rowblocks stage), with a last
// block of leftover rows when the block does not divide them, and matches eager evaluation.
// Kernels that are not row-local (a gather from a table with as many rows as the output, a sum over
// the rows) are left to the per-op plan, and match too.
#include <doctest/doctest.h>
#include <fluxion.h>

#include "tests/test_helpers.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace fx = fluxion;

namespace {

std::vector<double> wave(int64_t n, double scale, double phase) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = scale * (1.5 + std::sin(0.37 * double(i) + phase));
  return v;
}

std::vector<int32_t> indices(int64_t n, int64_t table, int64_t stride) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = int32_t((i * stride + 3) % table);
  return v;
}

// A small function of a parameter row p f64[6] and an observation f64[2]: slices, a few
// transcendentals, a stack of two results.
fx::Array residual(const fx::Array& p, const fx::Array& obs) {
  auto at = [&](int64_t i) { return fx::reshape(fx::slice(p, {i}, {i + 1}), {}); };
  fx::Array t = fx::sqrt(at(0) * at(0) + at(1) * at(1) + 0.5);
  fx::Array u = at(2) * fx::cos(t) + at(3) * fx::sin(t), v = at(4) / (t + at(5) * at(5));
  return at(5) * (fx::stack({u * v + at(0), v - u * at(1)}) - obs);
}

// [rows, 6] parameters gathered from two tables, then vmap(jacfwd(residual)): f64[rows, 2, 6].
fx::Array jacobians(const fx::Array& a, const fx::Array& b, const fx::Array& obs, const fx::Array& ia, const fx::Array& ib) {
  fx::Array p = fx::concatenate({fx::take(a, ia, 0), fx::take(b, ib, 0)}, 1);
  auto jac = [](const fx::Array& q, const fx::Array& o) {
    return fx::jacfwd([&](const fx::Array& x) { return residual(x, o); })(q);
  };
  return fx::vmap(jac)(p, obs);
}

bool dump_has(const std::string& dir, const std::string& suffix) {
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().string().size() >= suffix.size() &&
        e.path().string().compare(e.path().string().size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  return false;
}

}  // namespace

TEST_CASE("jit: row-blocked vmap(jacfwd) of gathered parameters matches eager, with and without leftover rows") {
  // 37 and 1001 rows leave a last partial block; 4096 is a whole number of blocks; 12 is too few
  // rows to block (the plain plan).
  for (int64_t rows : {int64_t(12), int64_t(37), int64_t(1001), int64_t(4096)}) {
    CAPTURE(rows);
    const std::string dir = "/tmp/fluxion_test_rows_" + std::to_string(::getpid()) + "_" + std::to_string(rows);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const int64_t na = 7, nb = 11;
    fx::Array a = fx::array(wave(na * 3, 0.4, 0.1), fx::Shape{na, 3}), b = fx::array(wave(nb * 3, 0.7, 0.9), fx::Shape{nb, 3});
    fx::Array obs = fx::array(wave(rows * 2, 1.0, 2.0), fx::Shape{rows, 2});
    fx::Array ia = fx::array(indices(rows, na, 5)), ib = fx::array(indices(rows, nb, 3));
    const test_helpers::ScopedEnv dump("FLUXION_DUMP", dir);
    fx::Array got = fx::jit(jacobians)(a, b, obs, ia, ib);
    dump.set(nullptr);
    fx::Array want = jacobians(a, b, obs, ia, ib);
    REQUIRE(got.shape() == fx::Shape{rows, 2, 6});
    CHECK(test_helpers::max_abs_diff(got, want) <= 1e-12);
    CHECK(dump_has(dir, ".rowblocks.mlir") == (rows >= 16));
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("jit: kernels that are not row-local are not row-blocked, and match eager") {
  const std::string dir = "/tmp/fluxion_test_rows_other_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const int64_t rows = 300;
  // The table has as many rows as the output: a gather reads any of its rows, so no blocking.
  fx::Array table = fx::array(wave(rows * 3, 0.5, 0.3), fx::Shape{rows, 3});
  fx::Array idx = fx::array(indices(rows, rows, 7));
  auto gathered = [](const fx::Array& t, const fx::Array& i) {
    fx::Array p = fx::take(t, i, 0);
    fx::Array s = fx::concatenate({fx::sin(p), fx::exp(p) * p}, 1);
    return s * fx::reshape(fx::slice(s, {0, 1}, {300, 2}), {300, 1});
  };
  // A sum over the rows makes a value without rows from row values.
  auto column_sums = [](const fx::Array& t) {
    fx::Array s = fx::concatenate({fx::sin(t), fx::cos(t)}, 1);
    return s - fx::sum(s * s, {0}, true);
  };
  const test_helpers::ScopedEnv dump("FLUXION_DUMP", dir);
  fx::Array g = fx::jit(gathered)(table, idx);
  fx::Array c = fx::jit(column_sums)(table);
  dump.set(nullptr);
  CHECK(test_helpers::max_abs_diff(g, gathered(table, idx)) <= 1e-12);
  CHECK(test_helpers::max_abs_diff(c, column_sums(table)) <= 1e-11);
  CHECK_FALSE(dump_has(dir, ".rowblocks.mlir"));
  std::filesystem::remove_all(dir);
}
