// Zero-copy interop (api/interop.h, api/interop_eigen.h): arrays over foreign memory share its
// bytes (the same data pointer), keep it alive exactly as long as an array holds it, and hand
// Fluxion's own bytes out (as_eigen, DLPack) without copying; bad layouts are typed errors.
#include <doctest/doctest.h>

#include <fluxion.h>

#include "api/interop_eigen.h"
#include "tests/test_helpers.h"

namespace fx = fluxion;
using test_helpers::error_of;

TEST_CASE("from_buffer: no copy; the deleter runs when the last array holding the bytes goes") {
  float* p = new float[6]{1, 2, 3, 4, 5, 6};
  int deleted = 0;
  {
    fx::Array x = fx::from_buffer(p, {2, 3}, fx::float32, [&](void* q) {
      ++deleted;
      delete[] static_cast<float*>(q);
    });
    CHECK(x.data() == p);
    fx::Array copy = x;  // another handle to the same array
    CHECK(fx::sum(x * 2.f).item<float>() == 42.f);
    CHECK(fx::jit([](const fx::Array& a) { return fx::sum(a, {1}); })(x).to_vector<float>() == std::vector<float>{6, 15});
    { fx::Array gone = std::move(x); }
    CHECK(deleted == 0);  // `copy` still holds the bytes
    CHECK(copy.to_vector<float>()[5] == 6.f);
  }
  CHECK(deleted == 1);
  // A shared owner instead of a deleter; borrowing (no owner) leaves the memory to the caller.
  auto owner = std::make_shared<std::vector<double>>(std::vector<double>{1, 2, 3});
  std::weak_ptr<std::vector<double>> watch = owner;
  fx::Array y = fx::from_buffer(owner->data(), {3}, fx::float64, std::shared_ptr<void>(owner));
  owner.reset();
  CHECK_FALSE(watch.expired());
  CHECK(y.to_vector<double>() == std::vector<double>{1, 2, 3});
  y = fx::Array();
  CHECK(watch.expired());
  int32_t local[4] = {1, 2, 3, 4};
  fx::Array z = fx::from_buffer(local, {4}, fx::int32, std::shared_ptr<void>());
  local[0] = 10;  // the array reads the caller's bytes (documented, as numpy's views)
  CHECK(z.to_vector<int32_t>()[0] == 10);
  CHECK(error_of([] { fx::from_buffer(nullptr, {2}, fx::float32, std::shared_ptr<void>()); }).find("ValueError: from_buffer(f32[2])") == 0);
  char bytes[16] = {};
  CHECK(error_of([&] { fx::from_buffer(bytes + 1, {2}, fx::float32, std::shared_ptr<void>()); }).find("not aligned") != std::string::npos);
}

TEST_CASE("from_eigen / as_eigen: the same bytes both ways") {
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  RowMajor m(2, 3);
  m << 1, 2, 3, 4, 5, 6;
  const double* p = m.data();
  fx::Array a = fx::from_eigen(std::move(m));  // takes the heap block
  CHECK(a.data() == p);
  CHECK(a.shape() == fx::Shape{2, 3});
  CHECK(fx::sum(a, {0}).to_vector<double>() == std::vector<double>{5, 7, 9});
  auto view = fx::as_eigen<double>(a);
  CHECK(view.data() == p);
  CHECK(view(1, 2) == 6.0);
  fx::Array b = fx::matmul(a, fx::transpose(a));
  CHECK((fx::as_eigen<double>(b) - fx::as_eigen<double>(a) * fx::as_eigen<double>(a).transpose()).norm() == 0.0);
  // A borrowed Map and a vector; column-major matrices are not row-major: a typed error.
  float raw[3] = {1, 2, 3};
  fx::Array v = fx::from_eigen(Eigen::Map<Eigen::VectorXf>(raw, 3), nullptr);
  CHECK(v.data() == raw);
  CHECK(v.shape() == fx::Shape{3});
  Eigen::MatrixXf col_major = Eigen::MatrixXf::Ones(2, 2);
  CHECK(error_of([&] { fx::from_eigen(col_major, nullptr); }).find("ValueError: from_eigen(f32[2,2])") == 0);
  CHECK(error_of([&] { fx::as_eigen<float>(a); }).find("TypeError: as_eigen(f64[2,3])") == 0);
  CHECK(error_of([&] { fx::as_eigen<float>(fx::zeros({2, 2, 2})); }).find("ShapeError: as_eigen") == 0);
}

TEST_CASE("DLPack: export shares the buffer and keeps it alive; import takes ownership") {
  fx::Array x = fx::reshape(fx::arange(0, 6, 1, fx::float32), {2, 3});
  DLManagedTensor* t = fx::to_dlpack(x);
  CHECK(t->dl_tensor.data == x.data());
  CHECK(t->dl_tensor.ndim == 2);
  CHECK(t->dl_tensor.shape[1] == 3);
  CHECK(t->dl_tensor.dtype.code == kDLFloat);
  CHECK(t->dl_tensor.dtype.bits == 32);
  const void* p = x.data();
  x = fx::Array();  // the tensor still holds the bytes
  CHECK(static_cast<const float*>(t->dl_tensor.data)[5] == 5.f);
  fx::Array back = fx::from_dlpack(t);  // round trip: the same bytes again
  CHECK(back.data() == p);
  CHECK(back.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5});
  // A producer's tensor: its deleter runs once, when the last array goes.
  struct Producer {
    std::vector<int64_t> data{1, 2, 3, 4};
    int64_t shape[1] = {4};
    int64_t strides[1] = {1};
    DLManagedTensor tensor{};
    int* deleted = nullptr;
  };
  int deleted = 0;
  auto* prod = new Producer;
  prod->deleted = &deleted;
  prod->tensor.dl_tensor = DLTensor{prod->data.data(), {kDLCPU, 0}, 1, {kDLInt, 64, 1}, prod->shape, prod->strides, 8};
  prod->tensor.manager_ctx = prod;
  void (*release)(DLManagedTensor*) = [](DLManagedTensor* self) {
    auto* owner = static_cast<Producer*>(self->manager_ctx);
    ++*owner->deleted;
    delete owner;
  };
  prod->tensor.deleter = release;
  prod->shape[0] = 3;  // byte_offset 8 skips the first element
  {
    fx::Array y = fx::from_dlpack(&prod->tensor);
    CHECK(y.dtype() == fx::int64);
    CHECK(y.to_vector<int64_t>() == std::vector<int64_t>{2, 3, 4});
    CHECK(deleted == 0);
  }
  CHECK(deleted == 1);
  // Not compact row-major: a ValueError, and the tensor is still released.
  auto* strided = new Producer;
  strided->deleted = &deleted;
  strided->shape[0] = 2;
  strided->strides[0] = 2;
  strided->tensor.dl_tensor = DLTensor{strided->data.data(), {kDLCPU, 0}, 1, {kDLInt, 64, 1}, strided->shape, strided->strides, 0};
  strided->tensor.manager_ctx = strided;
  strided->tensor.deleter = release;
  CHECK(error_of([&] { fx::from_dlpack(&strided->tensor); }).find("not compact row-major") != std::string::npos);
  CHECK(deleted == 2);
}
