// GPU arrays (issue 29): placement, eager ops, jit, transformations and control flow on cuda:0,
// each against the same computation on the CPU. They need a GPU -- the real one, or the emulated
// one of FLUXION_CUDA_DRIVER=emulate, which is how CI runs them (tests/meson.build's gpu_emulated);
// without either they are skipped, not passed.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <string>

#include "test_helpers.h"

namespace fx = fluxion;
using test_helpers::error_of;
using test_helpers::max_abs_diff;
using test_helpers::ramp;

namespace {
bool no_gpu() { return fx::devices("cuda").empty(); }
fx::Device gpu() { return fx::devices("cuda").at(0); }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
bool on_gpu(const fx::Array& x) { return x.device() == gpu(); }
}  // namespace

TEST_CASE("gpu arrays: device_put places an array in GPU memory and copies it back; printing reads it" *
          doctest::skip(no_gpu())) {
  const fx::Array x = fx::reshape(fx::astype(fx::arange(6), fx::float32), {2, 3});
  const fx::Array xg = fx::device_put(x, gpu());
  CHECK(on_gpu(xg));
  CHECK(xg.shape() == x.shape());
  CHECK(xg.dtype() == fx::float32);
  CHECK(xg.to_vector<float>() == x.to_vector<float>());
  std::ostringstream printed, want;
  printed << xg;
  want << x;
  CHECK(printed.str() == want.str());
  CHECK(fx::device_put(xg, gpu()).impl() == xg.impl());  // already there: the same array
  const fx::Array back = fx::device_put(xg, fx::devices("cpu").at(0));
  CHECK(back.device() == fx::devices("cpu").at(0));
  CHECK(back.to_vector<float>() == x.to_vector<float>());
  xg.block_until_ready();
  // Every dtype round-trips bit for bit.
  for (fx::DType d : {fx::bool_, fx::int8, fx::int32, fx::int64, fx::uint8, fx::uint32, fx::float16, fx::bfloat16,
                      fx::float64}) {
    CAPTURE(fx::dtype_name(d));
    const fx::Array a = fx::astype(fx::arange(5) - 2, d);
    CHECK(fx::device_put(a, gpu()).to_vector<double>() == a.to_vector<double>());
  }
}

TEST_CASE("gpu arrays: eager ops run on the GPU and give the CPU's values; results stay there" *
          doctest::skip(no_gpu())) {
  const fx::Array x = fx::array(ramp(1000, -2.f, 2.f), {10, 100});
  const fx::Array xg = fx::device_put(x, gpu());
  auto f = [](const fx::Array& a) { return fx::sum(fx::tanh(a) * 2.f + fx::exp(-a * a), {1}) / 3.f; };
  const fx::Array want = f(x), got = f(xg);
  CHECK(on_gpu(got));
  CHECK(got.shape() == want.shape());
  CHECK(max_abs_diff(got, want) < 1e-4);
  // A host scalar and a new host array are uncommitted: they go where the GPU operand is.
  const fx::Array mixed = xg + fx::ones({100});
  CHECK(on_gpu(mixed));
  CHECK(max_abs_diff(mixed, x + 1.f) == 0);
}

TEST_CASE("gpu arrays: jit compiles for the GPU when its arguments are there; one compile per signature" *
          doctest::skip(no_gpu())) {
  const fx::Array x = fx::array(ramp(4096, -1.f, 3.f), {64, 64});
  const fx::Array w = fx::array(ramp(64, 0.5f, 1.5f));  // closed over: a constant of the program
  auto f = fx::jit([&](const fx::Array& a, const fx::Array& b) { return fx::max(fx::sin(a) * b + w, {0}); });
  const fx::Array want = f(x, x);
  const fx::Array xg = fx::device_put(x, gpu());
  const fx::Array got = f(xg, xg);
  CHECK(on_gpu(got));
  CHECK(max_abs_diff(got, want) < 1e-5);
  CHECK(f.compilations() == 2);  // one for the CPU, one for the GPU
  f(xg, xg);
  CHECK(f.compilations() == 2);
}

TEST_CASE("gpu arrays: grad, vmap and control flow over GPU arrays match the CPU" * doctest::skip(no_gpu())) {
  const fx::Array x = fx::array(ramp(12, -1.f, 1.f), {3, 4});
  const fx::Array xg = fx::device_put(x, gpu());
  auto loss = [](const fx::Array& a) { return fx::sum(fx::tanh(a) * a); };
  const fx::Array g = fx::grad(loss)(xg);
  CHECK(on_gpu(g));
  CHECK(max_abs_diff(g, fx::grad(loss)(x)) < 1e-6);
  auto row = [](const fx::Array& r) { return fx::sum(r * r); };
  CHECK(max_abs_diff(fx::vmap(row)(xg), fx::vmap(row)(x)) < 1e-6);
  auto branch = [](const fx::Array& a) {
    return fx::cond(fx::sum(a) > 0.f, [&] { return a * 2.f; }, [&] { return -a; });
  };
  CHECK(max_abs_diff(branch(xg), branch(x)) == 0);
  CHECK(max_abs_diff(fx::jit(fx::grad(loss))(xg), fx::grad(loss)(x)) < 1e-5);
}

TEST_CASE("gpu arrays: default_device_scope puts new arrays and their ops on the GPU" * doctest::skip(no_gpu())) {
  fx::Array z, a;
  {
    fx::default_device_scope scope(gpu());
    z = fx::zeros({3}) + 1.f;
    a = fx::array({1.f, 2.f, 3.f});
  }
  CHECK(on_gpu(z));
  CHECK(on_gpu(a));
  CHECK(max_abs_diff(z + a, fx::array({2.f, 3.f, 4.f})) == 0);
}

TEST_CASE("gpu arrays: bad placement is a DeviceError or CompileError naming the op, the devices and the line" *
          doctest::skip(no_gpu())) {
  const fx::Array xg = fx::device_put(fx::ones({4}), gpu());
  const fx::Array xc = fx::device_put(fx::ones({4}), fx::devices("cpu").at(0));
  std::string m = error_of([&] { (void)(xg + xc); });
  CHECK_MESSAGE(contains(m, "DeviceError: add"), m);
  CHECK_MESSAGE((contains(m, "cuda:0") && contains(m, "cpu:0")), m);
  CHECK_MESSAGE(contains(m, "test_gpu_arrays.cpp"), m);
  auto f = fx::jit([](const fx::Array& a, const fx::Array& b) { return a * b; });
  m = error_of([&] { f(xg, xc); });
  CHECK_MESSAGE((contains(m, "DeviceError: jit at") && contains(m, "test_gpu_arrays.cpp")), m);
  // A device that does not exist.
  m = error_of([&] { fx::device_put(xc, fx::Device{fx::Platform::cuda, 7}); });
  CHECK_MESSAGE(contains(m, "cuda:7 is not a device"), m);
  // A primitive the GPU pipeline does not lower: no silent CPU fallback.
  m = error_of([&] { (void)fx::lgamma(xg); });
  CHECK_MESSAGE((contains(m, "CompileError: lgamma") && contains(m, "does not lower 'lgamma'")), m);
  CHECK_MESSAGE(contains(m, "test_gpu_arrays.cpp"), m);
}
