// The traps a JAX user met in the first week (issue 34), each against what JAX does, written out:
// arange's dtype from its bound, x.at({idx, colon}) updates on every shape, fx::array of a scalar,
// printing a dtype, and loading every array of a checkpoint into a map.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <set>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_helpers.h"

namespace fx = fluxion;

namespace {
using test_helpers::error_of;  // the message of the fluxion::Error a call raises

// JAX's x.at[idx, :].add(v) / .set(v) on the host: x seen as [rows, rest...], v broadcast to
// [len(idx), rest...]; out-of-range indices (after wrapping negatives once) are dropped.
std::vector<double> host_row_update(std::vector<double> x, const fx::Shape& shape, const std::vector<int>& idx,
                                    const std::vector<double>& v, bool add) {
  const int64_t rows = shape[0], rest = shape.numel() / rows;
  for (size_t j = 0; j < idx.size(); ++j) {
    const int64_t r = idx[j] < 0 ? idx[j] + rows : idx[j];
    if (r < 0 || r >= rows) continue;
    for (int64_t k = 0; k < rest; ++k) {
      const double u = v[(j * size_t(rest) + size_t(k)) % v.size()];
      double& t = x[size_t(r * rest + k)];
      t = add ? t + u : u;
    }
  }
  return x;
}
}  // namespace

TEST_CASE("arange: the bound's type picks the dtype, as jnp.arange; no float bound converts silently") {
  fx::Array a = fx::arange(4.f);
  CHECK(a.dtype() == fx::float32);
  CHECK(a.to_vector<float>() == std::vector<float>{0, 1, 2, 3});
  CHECK(fx::arange(4.0).dtype() == fx::float32);  // jnp.arange(4.0): float32 (x64 off)
  CHECK(fx::arange(2.5).to_vector<float>() == std::vector<float>{0, 1, 2});  // ceil(2.5) elements
  CHECK(fx::arange(4).dtype() == fx::int32);
  CHECK(fx::arange(int64_t(3)).dtype() == fx::int32);
  CHECK(fx::arange(size_t(3)).to_vector<int>() == std::vector<int>{0, 1, 2});
  CHECK(fx::arange(4.f, fx::float64).dtype() == fx::float64);
  CHECK(fx::arange(3, fx::float16).dtype() == fx::float16);
  CHECK(fx::arange(-2).shape() == fx::Shape{0});
  // A dtype asked for wins over the bounds' type, and integer dtypes stay integers.
  CHECK(fx::arange(0.0, 5.0, 1.0, fx::int32).dtype() == fx::int32);
  CHECK(fx::arange(0.5, 3.0, 1.0, fx::int32).to_vector<int>() == std::vector<int>{0, 1, 2});  // numpy: [0 1 2]
  CHECK(fx::arange(1, 7, 2, fx::int8).dtype() == fx::int8);
  CHECK(fx::arange(1, 7, 2, fx::int8).to_vector<int>() == std::vector<int>{1, 3, 5});
  CHECK(error_of([] { (void)fx::arange(0.0, INFINITY); }).find("ValueError: arange") == 0);
  // api.md's pmap example needs a float array: pmean of arange(8.f) works under vmap with a name.
  auto centred = fx::vmap([](const fx::Array& x) { return x - fx::pmean(x, "i"); }, fx::in_axes(0), fx::axis_name("i"));
  CHECK(centred(fx::arange(8.f)).to_vector<float>()[0] == -3.5f);
}

TEST_CASE("x.at({idx, colon}).add/.set with an index array: JAX's x.at[idx, :] on every shape") {
  const std::vector<fx::Shape> shapes = {{2, 1, 3}, {2, 3, 1}, {2, 3}, {2, 2, 2}, {3, 4}, {3}};
  const std::vector<std::vector<int>> indices = {{1, 0}, {0, 0}, {1, -1}, {0, 5}, {2}, {-7, 1}};
  for (const fx::Shape& s : shapes)
    for (const std::vector<int>& idx : indices) {
      CAPTURE(s.str());
      CAPTURE(idx.size());
      std::vector<double> xs(size_t(s.numel()));
      for (size_t k = 0; k < xs.size(); ++k) xs[k] = double(k) + 1;
      fx::Array x = fx::array(xs, s);
      fx::Array i = fx::array(std::vector<int32_t>(idx.begin(), idx.end()));
      fx::Shape vs = s;
      vs[0] = int64_t(idx.size());
      std::vector<double> v(size_t(vs.numel()));
      for (size_t k = 0; k < v.size(); ++k) v[k] = 10.0 * double(k + 1);
      fx::Array va = fx::array(v, vs);
      const bool whole_rows = s.rank() == 1;
      fx::Array added = whole_rows ? x.at(i).add(va) : x.at({i, fx::colon}).add(va);
      fx::Array set = whole_rows ? x.at(i).set(va) : x.at({i, fx::colon}).set(va);
      CHECK(added.shape() == s);
      CHECK(added.to_vector<double>() == host_row_update(xs, s, idx, v, true));
      std::set<int64_t> rows;  // set with a repeated row keeps one of the writes: not compared
      size_t in_range = 0;
      for (int r : idx)
        if (int64_t w = r < 0 ? r + s[0] : r; w >= 0 && w < s[0]) rows.insert(w), ++in_range;
      if (rows.size() == in_range)
        CHECK(set.to_vector<double>() == host_row_update(xs, s, idx, v, false));
      // A scalar update broadcasts; traced under jit and vmap it is the same computation.
      auto add_one = [&](const fx::Array& a) { return whole_rows ? a.at(i).add(1.0) : a.at({i, fx::colon}).add(1.0); };
      CHECK(fx::jit(add_one)(x).to_vector<double>() ==
            host_row_update(xs, s, idx, {1.0}, true));
    }
}

TEST_CASE("x.at({idx, colon}) differentiates in x and in the updates") {
  fx::Array x = fx::reshape(fx::arange(0.0, 6.0, 1.0, fx::float64), {2, 3, 1});
  fx::Array v = fx::ones({2, 3, 1}, fx::float64);
  fx::Array i = fx::array({1, 0});
  auto f = [&](const fx::Array& a, const fx::Array& u) { return fx::sum(fx::square(a.at({i, fx::colon}).add(u))); };
  auto [gx, gv] = fx::grad<0, 1>(f)(x, v);
  // d/dx = 2 (x + u at the indexed rows) and d/du = the same at each update's row.
  fx::Array y = x + fx::take(v, fx::array({1, 0}), 0);
  CHECK(fx::allclose(gx, 2.0 * y).item<bool>());
  CHECK(fx::allclose(gv, fx::take(2.0 * y, fx::array({1, 0}), 0)).item<bool>());
}

TEST_CASE("x.at(...) misuse names the user's op and line, not an internal broadcast") {
  fx::Array x = fx::zeros({2, 3});
  fx::Array i = fx::array({1, 0});
  const int line = __LINE__ + 1;
  std::string m = error_of([&] { (void)x.at({i, fx::colon}).add(fx::ones({4})); });
  CHECK(m.find("ShapeError: at(...).add(f32[2,3], f32[4]) at test_first_week.cpp:" + std::to_string(line)) == 0);
  CHECK(m.find("broadcast_to") == std::string::npos);
  CHECK(m.find("[2,3]") != std::string::npos);
  m = error_of([&] { (void)x.at(x > 0.f).set(fx::ones({3, 2})); });
  CHECK(m.find("ShapeError: at(...).set(") == 0);
  m = error_of([&] { (void)x.at(fx::array(std::vector<bool>{true, false, true, false})).set(1.f); });
  CHECK(m.find("ShapeError: at(...).set(") == 0);
  CHECK(m.find("the mask bool[4] does not broadcast") != std::string::npos);
}

TEST_CASE("fx::array of a C++ scalar: a 0-d array, weakly typed as jnp.array(3.0)") {
  fx::Array a = fx::array(3.f);
  CHECK(a.shape() == fx::Shape{});
  CHECK(a.dtype() == fx::float32);
  CHECK(a.weak_type());
  CHECK(a.item<float>() == 3.f);
  CHECK(fx::array(3.0).dtype() == fx::float32);  // a C++ double is a weak float, as a Python float
  CHECK(fx::array(3).dtype() == fx::int32);
  CHECK(fx::array(true).dtype() == fx::bool_);
  CHECK(!fx::array(true).weak_type());
  fx::Array h = fx::astype(fx::ones({2}), fx::float16);
  CHECK((h * fx::array(2.f)).dtype() == fx::float16);  // weak: defers to the array, as in JAX
  // Under a trace it is a literal of the program, not a captured constant.
  fx::Program p = fx::make_ir([](const fx::Array& x) { return x + fx::array(1.f); })(fx::ones({2}));
  CHECK(p.consts.empty());
}

TEST_CASE("std::cout << x.dtype() prints numpy's name") {
  std::ostringstream os;
  os << fx::arange(4.f).dtype() << " " << fx::int32 << " " << fx::bfloat16 << " " << fx::bool_ << " "
     << fx::complex64;
  CHECK(os.str() == "float32 int32 bfloat16 bool complex64");
}

TEST_CASE("fx::load<std::map<std::string, fx::Array>>(path) returns every array of a checkpoint") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("fluxion_first_week_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  struct Saved {
    fx::Array w, b;
  };
  std::map<std::string, fx::Array> tree{{"dense.w", fx::reshape(fx::arange(6.f), {2, 3})},
                                        {"dense.b", fx::arange(3)},
                                        {"step", fx::scalar(int64_t(7))}};
  for (const char* ext : {".safetensors", ".npz"}) {
    const std::string path = (dir / (std::string("ckpt") + ext)).string();
    fx::save(path, tree);
    auto all = fx::load<std::map<std::string, fx::Array>>(path);
    REQUIRE(all.size() == 3);
    CHECK(all.at("dense.w").shape() == fx::Shape{2, 3});
    CHECK(all.at("dense.w").to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5});
    CHECK(all.at("dense.b").dtype() == fx::int32);
    CHECK(all.at("step").dtype() == fx::int64);
    CHECK(all.at("step").item<int64_t>() == 7);
    // With a `like` the map still checks the file against it.
    std::map<std::string, fx::Array> like{{"dense.w", fx::Array()}};
    CHECK_THROWS_AS(fx::load(path, like), fx::ValueError);
  }
  // A nested tree comes back flat, by its dotted names; a lone .npy as arr_0.
  const std::string nested = (dir / "nested.safetensors").string();
  fx::save(nested, std::map<std::string, std::map<std::string, fx::Array>>{{"enc", {{"w", fx::ones({2})}}}});
  CHECK(fx::load<std::map<std::string, fx::Array>>(nested).count("enc.w") == 1);
  const std::string npy = (dir / "one.npy").string();
  fx::save(npy, fx::ones({3}));
  CHECK(fx::load<std::map<std::string, fx::Array>>(npy).at("arr_0").shape() == fx::Shape{3});
  fs::remove_all(dir);
}
