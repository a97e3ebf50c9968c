// Each error kind, raised by a realistic misuse, with a message naming the op, the operand types
// and the user's line.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <string>

namespace fx = fluxion;

namespace {
template <class E, class F>
std::string message_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception: ") + e.what();
  }
  return "no exception";
}
bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }
}  // namespace

TEST_CASE("errors: ShapeError names the op, both operand types and the line") {
  fx::Array a = fx::ones({2, 3}), b = fx::ones({4});
  std::string msg = message_of<fx::ShapeError>([&] { return a + b; });
  CAPTURE(msg);
  CHECK(contains(msg, "ShapeError: add(f32[2,3], f32[4])"));
  CHECK(contains(msg, "test_errors.cpp:" + std::to_string(__LINE__ - 3)));
  std::string m2 = message_of<fx::ShapeError>([&] { return fx::array(std::vector<float>(5, 1.f), {2, 3}); });
  CHECK(contains(m2, "5 elements cannot have shape [2,3]"));
}

TEST_CASE("errors: TypeError for dtypes an op does not take") {
  fx::Array x = fx::ones({3});
  std::string msg = message_of<fx::TypeError>([&] { return x & x; });
  CAPTURE(msg);
  CHECK(contains(msg, "bitwise_and(f32[3], f32[3])"));
  CHECK(contains(msg, "test_errors.cpp:"));
  fx::Array b = x > 0.f;
  CHECK(contains(message_of<fx::TypeError>([&] { return b - b; }), "subtract(bool[3], bool[3])"));
  CHECK(contains(message_of<fx::TypeError>([&] { return -b; }), "negative(bool[3])"));
  fx::Array i = fx::arange(3);
  CHECK(contains(message_of<fx::TypeError>([&] { return fx::power(i, i); }), "power(i32[3], i32[3])"));
}

TEST_CASE("errors: ValueError for empty handles and ambiguous truth values") {
  fx::Array empty;
  CHECK(contains(message_of<fx::ValueError>([&] { return fx::sin(empty); }), "empty Array"));
  fx::Array v = fx::ones({2});
  CHECK(contains(message_of<fx::ValueError>([&] { return bool(v); }), "ambiguous"));
  CHECK(contains(message_of<fx::ValueError>([&] { return v.item<float>(); }), "test_errors.cpp"));
}

TEST_CASE("errors: ConcretizationError and TracerLeakError") {
  auto f = [](const fx::Array& x) { return fx::scalar(x.item<float>() * 2); };
  std::string msg = message_of<fx::ConcretizationError>([&] { return fx::make_ir(f)(fx::scalar(1.f)); });
  CHECK(contains(msg, "item()"));
  CHECK(contains(msg, "f32[]"));
  fx::Array keep;
  fx::make_ir([&](const fx::Array& x) {
    keep = x;
    return x;
  })(fx::scalar(1.f));
  CHECK(contains(message_of<fx::TracerLeakError>([&] { return keep * 2.f; }), "mul"));
}

TEST_CASE("errors: ParseError carries line and column") {
  std::string msg = message_of<fx::ParseError>([] { return fx::parse_program("{ lambda ; a:f32[3]. let\n  b = ??? }"); });
  CHECK(contains(msg, "ParseError"));
}

TEST_CASE("errors: every kind is a fluxion::Error and a std::runtime_error") {
  fx::ErrorKind kinds[] = {fx::ErrorKind::Shape,  fx::ErrorKind::Type,   fx::ErrorKind::Concretization,
                           fx::ErrorKind::TracerLeak, fx::ErrorKind::Compile, fx::ErrorKind::Device,
                           fx::ErrorKind::Parse,  fx::ErrorKind::Value};
  for (fx::ErrorKind k : kinds) {
    try {
      fx::throw_error(k, "m");
    } catch (const fx::Error& e) {
      CHECK(e.kind() == k);
      CHECK(std::string(e.what()) == "m");
    }
  }
  CHECK_THROWS_AS(fx::throw_error(fx::ErrorKind::Compile, "x"), fx::CompileError);
  CHECK_THROWS_AS(fx::throw_error(fx::ErrorKind::Device, "x"), std::runtime_error);
}
