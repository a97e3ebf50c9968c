// Shapes whose element or byte count does not fit in an int64 (Shape::numel() would wrap): a
// ShapeError naming the operation, the shape and the user's line wherever a shape is made --
// creation functions, broadcasting, reshape, traced programs, a parsed program's verify -- never an
// array whose size() wrapped to 0 (issue 35: fx::zeros({2^40, 2^40}).size() was 0). The file
// readers' side of it is in test_bad_files.cpp.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <string>

#include "test_helpers.h"

namespace fx = fluxion;
using test_helpers::error_of;

namespace {

constexpr int64_t k2_32 = int64_t(1) << 32, k2_40 = int64_t(1) << 40;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The error is a ShapeError naming `op`, `shape` and this file.
template <class F>
void check_refused(F call, const std::string& op, const std::string& shape, const std::string& why) {
  std::string kind = "(no error)", message;
  try {
    call();
  } catch (const fx::ShapeError& e) {
    kind = "ShapeError", message = e.what();
  } catch (const std::exception& e) {
    kind = "another exception", message = e.what();
  }
  CAPTURE(message);
  CHECK(kind == "ShapeError");
  CHECK(has(message, op));
  CHECK(has(message, shape));
  CHECK(has(message, why));
  CHECK(has(message, "test_shape_limits.cpp"));
}

}  // namespace

TEST_CASE("shape limits: shape_problem names negative dimensions and counts past int64") {
  CHECK(fx::shape_problem(fx::Shape{2, 3}, fx::float32).empty());
  CHECK(fx::shape_problem(fx::Shape{}, fx::float64).empty());
  CHECK(fx::shape_problem(fx::Shape{0, 5}, fx::float32).empty());
  CHECK(fx::shape_problem(fx::Shape{int64_t(1) << 62}, fx::uint8).empty());
  CHECK(has(fx::shape_problem(fx::Shape{2, -3}, fx::float32), "negative dimension"));
  CHECK(has(fx::shape_problem(fx::Shape{k2_32, k2_32}, fx::uint8), "more elements than an int64 counts"));
  CHECK(has(fx::shape_problem(fx::Shape{int64_t(1) << 62}, fx::float32), "float32 takes more bytes than an int64 counts"));
  // A zero dimension does not make the others free: the strides of [0, 2^40, 2^40] would wrap.
  CHECK(has(fx::shape_problem(fx::Shape{0, k2_40, k2_40}, fx::float32), "more elements"));
}

TEST_CASE("shape limits: creation functions refuse shapes too large to count") {
  const std::string big = "[1099511627776,1099511627776]";
  check_refused([] { fx::zeros({k2_40, k2_40}); }, "zeros", big, "more elements than an int64 counts");
  check_refused([] { fx::ones({k2_40, k2_40}, fx::float64); }, "ones", big, "more elements");
  check_refused([] { fx::full({k2_40, k2_40}, 2.f); }, "full", big, "more elements");
  check_refused([] { fx::zeros({int64_t(1) << 62}, fx::float32); }, "zeros", "[4611686018427387904]", "more bytes");
  check_refused([] { fx::iota(fx::int32, {k2_40, k2_40}, 0); }, "iota", big, "more elements");
  check_refused([] { fx::array(std::vector<float>{}, {0, k2_40, k2_40}); }, "array", "[0,", "more elements");
  // Inside a trace the same, not a program with a wrapped type.
  check_refused([] { fx::make_ir([](const fx::Array& x) { return x + fx::zeros({k2_40, k2_40}); })(fx::scalar(1.f)); }, "zeros",
                big, "more elements");
}

TEST_CASE("shape limits: broadcasting and reshaping refuse results too large to count") {
  const fx::Array x = fx::ones({4});
  check_refused([&] { fx::broadcast_to(x, {k2_32, k2_32, 4}); }, "broadcast_in_dim", "[4294967296,4294967296,4]",
                "more elements");
  // 4 * (2^62 + 1) wraps to 4: the element count of x, so only the overflow check can refuse it.
  check_refused([&] { fx::reshape(x, {4, (int64_t(1) << 62) + 1}); }, "reshape", "[4,4611686018427387905]", "more elements");
  check_refused([&] { fx::make_ir([](const fx::Array& a) { return fx::broadcast_to(a, {k2_32, k2_32, 4}); })(x); },
                "broadcast_in_dim", "[4294967296,4294967296,4]", "more elements");
}

TEST_CASE("shape limits: parse_program and verify refuse types too large to count") {
  // Text: a ParseError at the type (deserialize reads a constant of that many bytes after it).
  std::string message = error_of([] { fx::parse_program("{ lambda ; a:u8[4294967296,4294967296]. let  in (a) }"); });
  CHECK(has(message, "ParseError: line 1, column 14: expected a type whose size fits in int64"));
  CHECK(has(message, "more elements than an int64 counts"));
  message = error_of([] { fx::deserialize("fluxion-program 1\n{ lambda a:u8[4294967296,4294967296] ; . let  in (a) }\nconsts 1\nu8[4294967296,4294967296] \n"); });
  CHECK(has(message, "ParseError"));
  // A program built in code: verify names the eqn whose result is too large.
  fx::Program p = fx::make_ir([](const fx::Array& a) { return fx::broadcast_to(a, {3, 5}); })(fx::scalar(1.f));
  REQUIRE(p.eqns.size() == 1);
  const fx::Shape big{k2_32, k2_32};
  p.eqns[0].params = fx::Params{{"shape", big.dims()}, {"broadcast_dimensions", fx::IntList{}}};
  p.types[size_t(p.eqns[0].outputs[0])].shape = big;
  message = error_of([&] { fx::verify(p); });
  CHECK(has(message, "ShapeError: verify: eqn 0 (broadcast_in_dim) output 0 has type f32[4294967296,4294967296]"));
  CHECK(has(message, "more elements than an int64 counts"));
  // An input of such a type, the same, naming the input.
  p.types[size_t(p.invars[0])].shape = fx::Shape{k2_32, k2_32, 2};
  message = error_of([&] { fx::verify(p); });
  CHECK(has(message, "ShapeError: verify: invar 0 has type f32[4294967296,4294967296,2]"));
}

TEST_CASE("shape limits: a shape that counts but does not fit in memory is a DeviceError naming the op and the bytes") {
  const std::string message = error_of([] { fx::zeros({int64_t(1) << 50}, fx::uint8); });
  CAPTURE(message);
  CHECK(has(message, "DeviceError: broadcast_in_dim"));
  CHECK(has(message, "test_shape_limits.cpp"));
  CHECK(has(message, "cannot allocate 1125899906842624 bytes for its result u8[1125899906842624]"));
  CHECK(fx::sum(fx::ones({4})).item<float>() == 4.f);  // and the process goes on
}
