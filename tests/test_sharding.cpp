// Meshes and shardings (transforms/sharding.h, ir/sharding.h, runtime/mesh.h): device_put onto a
// NamedSharding against slicing the array on the host, the picture, pmap's results as shardings,
// errors. The suite runs with one device and again with 4 and 8 (tests/meson.build): meshes are
// sized from the device count.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <sstream>

#include "test_helpers.h"

namespace fx = fluxion;
using test_helpers::error_of;

namespace {
int64_t ndev() { return int64_t(fx::devices().size()); }
// A 2-d mesh over every device: (n/2, 2) when there are 4 or more, else (n, 1).
fx::Mesh mesh2d() {
  const int64_t n = ndev();
  return n >= 4 ? fx::make_mesh({n / 2, 2}, {"data", "model"}) : fx::make_mesh({n, 1}, {"data", "model"});
}
fx::Array iota2(int64_t r, int64_t c) { return fx::reshape(fx::astype(fx::arange(r * c), fx::float32), {r, c}); }

// The block [r0, r1) x [c0, c1) of a host matrix with c columns.
std::vector<float> host_block(const std::vector<float>& m, int64_t c, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  std::vector<float> b;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t k = c0; k < c1; ++k) b.push_back(m[size_t(r * c + k)]);
  return b;
}
}  // namespace

TEST_CASE("sharding: make_mesh lays the devices out row-major with named axes") {
  const fx::Mesh m = mesh2d();
  CHECK(m.axis_names == std::vector<std::string>{"data", "model"});
  CHECK(m.size() == ndev());
  for (int64_t k = 0; k < m.size(); ++k) CHECK(m.devices[size_t(k)] == fx::devices()[size_t(k)]);
  CHECK(m.coords(m.size() - 1) == std::vector<int64_t>{m.shape[0] - 1, m.shape[1] - 1});
  CHECK(m.axis_size("model") == m.shape[1]);
  CHECK(m.str() == "Mesh('data': " + std::to_string(m.shape[0]) + ", 'model': " + std::to_string(m.shape[1]) + ")");
  const std::string big = error_of([&] { fx::make_mesh({ndev() + 1}, {"x"}); });
  CHECK(big.find("ValueError: make_mesh at test_sharding.cpp") == 0);
  CHECK(big.find("'x'") != std::string::npos);
  CHECK(big.find("needs " + std::to_string(ndev() + 1) + " devices") != std::string::npos);
  CHECK(error_of([&] { fx::make_mesh({1, 1}, {"a", "a"}); }).find("twice") != std::string::npos);
}

TEST_CASE("sharding: device_put onto a NamedSharding holds each device's block") {
  const fx::Mesh m = mesh2d();
  const int64_t rows = 2 * m.shape[0], cols = 3 * m.shape[1];
  const fx::Array x = iota2(rows, cols);
  const std::vector<float> host = x.to_vector<float>();
  // P("data", "model"): block (d, k) on device (d, k); P("data", none): replicated along "model".
  for (const fx::PartitionSpec& spec : {fx::P("data", "model"), fx::P("data", fx::none), fx::P(fx::none, "model"), fx::P()}) {
    CAPTURE(spec.str());
    const fx::Array xs = fx::device_put(x, fx::NamedSharding(m, spec));
    CHECK(xs.shape() == x.shape());
    CHECK(xs.dtype() == fx::float32);
    CHECK(xs.sharding() == fx::NamedSharding(m, spec));
    CHECK(xs.to_vector<float>() == host);
    const std::vector<fx::Array> shards = xs.shards();
    REQUIRE(shards.size() == size_t(m.size()));
    const int64_t br = spec.dim(0).empty() ? rows : rows / m.shape[0], bc = spec.dim(1).empty() ? cols : cols / m.shape[1];
    for (int64_t k = 0; k < m.size(); ++k) {
      const std::vector<int64_t> c = m.coords(k);
      const int64_t r0 = spec.dim(0).empty() ? 0 : c[0] * br, c0 = spec.dim(1).empty() ? 0 : c[1] * bc;
      CHECK(shards[size_t(k)].device() == m.devices[size_t(k)]);
      CHECK(shards[size_t(k)].shape() == fx::Shape{br, bc});
      CHECK(shards[size_t(k)].to_vector<float>() == host_block(host, cols, r0, r0 + br, c0, c0 + bc));
    }
    // Printing and eager ops read the global array.
    std::ostringstream a, b;
    a << xs;
    b << x;
    CHECK(a.str() == b.str());
    CHECK(fx::sum(xs * 2.f).item<float>() == fx::sum(x * 2.f).item<float>());
    CHECK(fx::device_put(xs, fx::NamedSharding(m, spec)).impl() == xs.impl());  // already there
  }
}

TEST_CASE("sharding: several axes split one dimension, the first one major") {
  const fx::Mesh m = mesh2d();
  const int64_t n = m.size();
  const fx::Array x = fx::astype(fx::arange(4 * n), fx::float32);
  const fx::Array xs = fx::device_put(x, fx::NamedSharding(m, fx::P(fx::axes("data", "model"))));
  const std::vector<float> host = x.to_vector<float>();
  for (int64_t k = 0; k < n; ++k)  // device (d, j) holds block d * |model| + j = k
    CHECK(xs.shards()[size_t(k)].to_vector<float>() == std::vector<float>(host.begin() + 4 * k, host.begin() + 4 * k + 4));
  // Re-laid out onto another spec, the values stay.
  const fx::Array again = fx::device_put(xs, fx::NamedSharding(m, fx::P("model")));
  CHECK(again.to_vector<float>() == host);
  CHECK(again.shards()[0].shape() == fx::Shape{4 * n / m.shape[1]});
}

TEST_CASE("sharding: a spec that cannot lay the array out names the dimension, the axis and the line") {
  const fx::Mesh m = fx::make_mesh({ndev()}, {"data"});
  const std::string uneven = error_of([&] { fx::device_put(fx::zeros({2 * ndev() + 1, 2}), fx::NamedSharding(m, fx::P("data"))); });
  if (ndev() > 1) {
    CHECK(uneven.find("ShapeError: device_put at test_sharding.cpp") == 0);
    CHECK(uneven.find("dimension 0") != std::string::npos);
    CHECK(uneven.find("size " + std::to_string(2 * ndev() + 1)) != std::string::npos);
    CHECK(uneven.find("'data' of size " + std::to_string(ndev())) != std::string::npos);
  } else {
    CHECK(uneven == "(no error)");  // one device splits anything evenly
  }
  const std::string axis = error_of([&] { fx::device_put(fx::zeros({4}), fx::NamedSharding(m, fx::P("model"))); });
  CHECK(axis.find("ValueError: device_put at test_sharding.cpp") == 0);
  CHECK(axis.find("'model', which is not an axis of the mesh ('data')") != std::string::npos);
  const std::string rank = error_of([&] { fx::device_put(fx::zeros({4}), fx::NamedSharding(m, fx::P("data", fx::none))); });
  CHECK(rank.find("ShapeError: device_put at test_sharding.cpp") == 0);
  CHECK(rank.find("2 entries for an array of rank 1") != std::string::npos);
  CHECK(error_of([&] { fx::device_put(fx::zeros({4}), fx::NamedSharding(m, fx::P(fx::axes("data", "data")))); })
            .find("twice") != std::string::npos);
}

TEST_CASE("sharding: visualize_sharding draws which device holds which block") {
  const fx::Mesh m = mesh2d();
  const fx::Array x = iota2(2 * m.shape[0], 2 * m.shape[1]);
  const std::string split = fx::debug::sharding_picture(fx::device_put(x, fx::NamedSharding(m, fx::P("data", "model"))));
  const std::string rows = fx::debug::sharding_picture(fx::device_put(x, fx::NamedSharding(m, fx::P("data"))));
  // One cell per block, one line of cells per block row, every device named once.
  for (int64_t k = 0; k < m.size(); ++k) CHECK(split.find(fx::devices()[size_t(k)].str()) != std::string::npos);
  CHECK(std::count(split.begin(), split.end(), '\n') == 2 * m.shape[0] + 1);
  if (ndev() == 4) {
    CHECK(split == "+-------+-------+\n| cpu:0 | cpu:1 |\n+-------+-------+\n| cpu:2 | cpu:3 |\n+-------+-------+\n");
    CHECK(rows == "+---------+\n| cpu:0,1 |\n+---------+\n| cpu:2,3 |\n+---------+\n");
  }
  std::ostringstream os;
  fx::debug::visualize_sharding(fx::device_put(x, fx::NamedSharding(m, fx::P("data"))), os);
  CHECK(os.str() == rows);
  // An unsharded array is one block on its device.
  CHECK(fx::debug::sharding_picture(fx::device_put(fx::ones({3}), fx::devices()[0])) == "+-------+\n| cpu:0 |\n+-------+\n");
}

TEST_CASE("sharding: pmap's results are NamedShardings of a 1-d mesh of the devices") {
  const int64_t n = ndev();
  const fx::Array out = fx::pmap([](const fx::Array& x) { return x * 2.f; }, "i")(iota2(n, 3));
  const fx::NamedSharding s = out.sharding();
  CHECK(s.mesh->axis_names == std::vector<std::string>{"i"});
  CHECK(s.mesh->devices == fx::devices("cpu"));
  CHECK(s.spec == fx::P("i"));
  CHECK(out.shards()[0].shape() == fx::Shape{1, 3});
  CHECK(out.to_vector<float>() == (iota2(n, 3) * 2.f).to_vector<float>());
  // A plain array is a one-device mesh.
  const fx::NamedSharding one = fx::ones({2}).sharding();
  CHECK(one.mesh->devices.size() == 1);
  CHECK(one.spec == fx::P());
}
