// The text form of programs (ir/printer.cpp, ir/parser.cpp) and the verifier (ir/verifier.cpp):
// golden texts of traced programs, print(parse(print(p))) == print(p), a table of malformed texts,
// deliberately broken programs, and a seeded fuzz over mutated texts.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace fx = fluxion;

namespace {

// Parses, verifies, and checks that printing the parsed program gives the same text back.
fx::Program round_trip(const std::string& text) {
  fx::Program p = fx::parse_program(text);
  fx::verify(p);
  CHECK(p.str() == text);
  return p;
}

// Checks a traced program against its golden text, then round-trips and evaluates both the
// traced and the parsed program on `args` (the parsed one has no consts, so only closure-free ones).
void check_golden(const fx::Program& traced, const std::string& golden, std::initializer_list<fx::Array> args) {
  CHECK(traced.str() == golden);
  fx::verify(traced);
  fx::Program parsed = round_trip(golden);
  CHECK(parsed == traced);
  CHECK(parsed.hash() == traced.hash());
  if (!traced.constvars.empty()) return;
  auto a = fx::eval(traced, args);
  auto b = fx::eval(parsed, args);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].aval() == b[i].aval());
    CHECK(a[i].to_vector<double>() == b[i].to_vector<double>());
  }
}

std::string expect_parse_error(const std::string& text) {
  try {
    fx::parse_program(text);
  } catch (const fx::ParseError& e) {
    return e.what();
  }
  FAIL("no ParseError for: " << text);
  return "";
}

}  // namespace

TEST_CASE("ir text: golden programs of traced functions round-trip") {
  fx::Array x = fx::array({1.f, -2.f, 3.f});
  fx::Array m = fx::array({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});

  SUBCASE("elementwise math") {
    check_golden(fx::make_ir([](const fx::Array& a, const fx::Array& b) { return fx::sin(a * b) + 1.f; })(x, x),
                 "{ lambda ; a:f32[3] b:f32[3]. let\n"
                 "    c:f32[3] = mul a b\n"
                 "    d:f32[3] = sin c\n"
                 "    e:f32[3] = add d 1.0:f32[]\n"
                 "  in (e) }",
                 {x, x});
  }
  SUBCASE("broadcasting") {
    check_golden(fx::make_ir([](const fx::Array& a, const fx::Array& b) { return a + b; })(m, x),
                 "{ lambda ; a:f32[2,3] b:f32[3]. let\n"
                 "    c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] b\n"
                 "    d:f32[2,3] = add a c\n"
                 "  in (d) }",
                 {m, x});
  }
  SUBCASE("comparison and where") {
    check_golden(fx::make_ir([](const fx::Array& a) { return fx::where(a > 2.f, a, -a); })(x),
                 "{ lambda ; a:f32[3]. let\n"
                 "    b:f32[3] = neg a\n"
                 "    c:bool[3] = gt a 2.0:f32[]\n"
                 "    d:f32[3] = select c a b\n"
                 "  in (d) }",
                 {x});
  }
  SUBCASE("astype") {
    check_golden(fx::make_ir([](const fx::Array& a) { return fx::astype(a, fx::int32) * 3; })(x),
                 "{ lambda ; a:f32[3]. let\n"
                 "    b:i32[3] = convert_element_type[new_dtype=i32 weak_type=False] a\n"
                 "    c:i32[3] = mul b 3:i32[]\n"
                 "  in (c) }",
                 {x});
  }
}

TEST_CASE("ir text: golden programs with constvars, several outputs and literals of every dtype round-trip") {
  fx::Array x = fx::array({1.f, -2.f, 3.f});

  SUBCASE("a closure over a concrete array becomes a constvar") {
    fx::Array c = fx::array({10.f, 20.f, 30.f});
    fx::Program traced = fx::make_ir([c](const fx::Array& a) { return a * c; })(x);
    check_golden(traced,
                 "{ lambda a:f32[3] ; b:f32[3]. let\n"
                 "    c:f32[3] = mul b a\n"
                 "  in (c) }",
                 {x});
    fx::Program parsed = fx::parse_program(traced.str());
    CHECK(traced.consts.size() == 1);
    CHECK(parsed.constvars.size() == 1);
    CHECK(parsed.consts.empty());  // the text holds no values
  }
  SUBCASE("multiple outputs") {
    check_golden(
        fx::make_ir([](const fx::Array& a) { return std::tuple{a + 1.0, a * 2.5f, fx::exp(a)}; })(x),
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = add a 1.0:f32[]\n"
        "    c:f32[3] = mul a 2.5:f32[]\n"
        "    d:f32[3] = exp a\n"
        "  in (b, c, d) }",
        {x});
  }
  SUBCASE("literals of every dtype") {
    auto f = [](const fx::Array& a) {
      return std::tuple{fx::logical_and(a > 0.f, true),
                        fx::astype(a, fx::int8) + fx::scalar(int8_t(-3), fx::int8),
                        fx::astype(a, fx::int32) - 7,
                        fx::astype(a, fx::int64) * fx::scalar(int64_t(-9000000000LL)),
                        fx::astype(a, fx::uint8) + fx::scalar(uint8_t(255)),
                        fx::astype(a, fx::uint32) + fx::scalar(uint32_t(4000000000u)),
                        fx::astype(a, fx::float16) * 0.1,
                        fx::astype(a, fx::bfloat16) * 0.1,
                        a * 0.1f,
                        fx::astype(a, fx::float64) * 0.1};
    };
    fx::Program traced = fx::make_ir(f)(x);
    std::string text = traced.str();
    for (const char* lit : {"True:bool[]", "-3:i8[]", "7:i32[]", "-9000000000:i64[]", "255:u8[]", "4000000000:u32[]",
                            "0.099975586:f16[]", "0.100097656:bf16[]", "0.1:f32[]", "0.1:f64[]"})
      CHECK_MESSAGE(text.find(lit) != std::string::npos, lit);
    fx::Program parsed = round_trip(text);
    // Bit-exact literal values: the parsed literals equal the traced ones.
    REQUIRE(parsed.eqns.size() == traced.eqns.size());
    for (size_t i = 0; i < traced.eqns.size(); ++i) CHECK(parsed.eqns[i].inputs == traced.eqns[i].inputs);
  }
}

TEST_CASE("ir text: literal values round-trip exactly") {
  auto one = [](const fx::Literal& l) {
    fx::Program p;
    int32_t a = p.new_var(fx::AbstractArray{fx::Shape{}, l.dtype, false});
    p.invars = {a};
    int32_t b = p.new_var(fx::AbstractArray{fx::Shape{}, l.dtype, false});
    p.eqns.push_back(fx::Eqn{fx::Prim::max, {}, {fx::Atom(a), fx::Atom(l)}, {b}, {}});
    p.outvars = {fx::Atom(b), fx::Atom(l)};
    fx::verify(p);
    fx::Program q = round_trip(p.str());
    CHECK(q.eqns.at(0).inputs.at(1) == fx::Atom(l));
    CHECK(q.outvars.at(1) == fx::Atom(l));
  };
  const double inf = std::numeric_limits<double>::infinity();
  for (double v : {0.0, -0.0, 1.0, -1.5, 0.1, 1.0 / 3.0, 1e-300, 5e-324, 1.7976931348623157e308, 123456789.125, inf, -inf,
                   std::nan("")})
    for (fx::DType d : {fx::float64, fx::float32, fx::float16, fx::bfloat16})
      for (bool weak : {false, true}) one(fx::Literal::of_double(v, d, weak));
  for (float v : {1e-45f, 3.4028235e38f, 1.17549435e-38f, 16777217.f}) one(fx::Literal::of_double(v, fx::float32));
  for (int64_t v : {int64_t(0), int64_t(-1), int64_t(127), int64_t(-128), std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()}) {
    one(fx::Literal::of_int(v, fx::int64));
    one(fx::Literal::of_int(v, fx::int8, true));
    one(fx::Literal::of_int(v, fx::int32));
    one(fx::Literal::of_int(v, fx::uint8));
    one(fx::Literal::of_int(v, fx::uint32));
  }
  one(fx::Literal::of_int(1, fx::bool_));
  one(fx::Literal::of_int(0, fx::bool_, true));
}

TEST_CASE("ir text: params of every value kind and nested programs round-trip") {
  // threefry2x32 here only carries params; it is parsed and printed but not verified.
  const std::string all_kinds =
      "{ lambda a:f32[] ; b:u32[2] c:i32[]{weak}. let\n"
      "    d:u32[2] e:u32[2] = threefry2x32[axes=(0, -1, 9223372036854775807) big=-9223372036854775808 "
      "branches=(\n"
      "      { lambda ; a:f32[]. let\n"
      "          b:f32[] = neg a\n"
      "        in (b) },\n"
      "      { lambda ; a:f32[]. let\n"
      "        in (a) }) dtype=bf16 empty=() eps=1e-07 flag=True huge=1.7976931348623157e+308 minf=-inf name=\"q\\\"uo\\\\te\\nd\tx\" "
      "nan=nan no=False one=(3,) "
      "only=(\n"
      "      { lambda ;. let\n"
      "        in (1.5:f64[]{weak}) },) "
      "pinf=inf "
      "sub=\n"
      "      { lambda a:f32[2] ; b:f32[2]. let\n"
      "          c:f32[2] = integer_pow[y=3] b\n"
      "          d:f32[2] = add c a\n"
      "        in (d, 2:i32[]) } third=0.3333333333333333] b b\n"
      "  in (d, e, a, c) }";
  fx::Program p = fx::parse_program(all_kinds);
  CHECK(p.str() == all_kinds);
  const fx::Params& ps = p.eqns.at(0).params;
  CHECK(ps.get_ints("axes") == fx::IntList{0, -1, std::numeric_limits<int64_t>::max()});
  CHECK(ps.get_int("big") == std::numeric_limits<int64_t>::min());
  CHECK(ps.get_dtype("dtype") == fx::bfloat16);
  CHECK(ps.get_ints("empty").empty());
  CHECK(ps.get<double>("eps") == 1e-07);
  CHECK(ps.get_bool("flag"));
  CHECK_FALSE(ps.get_bool("no"));
  CHECK(std::isnan(ps.get<double>("nan")));
  CHECK(ps.get<double>("minf") == -std::numeric_limits<double>::infinity());
  CHECK(ps.get<std::string>("name") == "q\"uo\\te\nd\tx");
  CHECK(ps.get_ints("one") == fx::IntList{3});
  CHECK(ps.get<double>("third") == 1.0 / 3.0);
  const fx::ProgramList& branches = ps.get<fx::ProgramList>("branches");
  REQUIRE(branches.size() == 2);
  CHECK(branches[1]->eqns.empty());
  CHECK(branches[1]->outvars.at(0).var == branches[1]->invars.at(0));
  REQUIRE(ps.get<fx::ProgramList>("only").size() == 1);
  const fx::Program& sub = *ps.get<fx::ProgramRef>("sub");
  CHECK(sub.constvars.size() == 1);
  fx::verify(sub);
  for (const fx::ProgramRef& b : branches) fx::verify(*b);
  CHECK(fx::parse_program(p.str()) == p);

  SUBCASE("verify descends into sub-programs") {
    const std::string outer =
        "{ lambda ; a:f32[]. let\n"
        "    b:f32[] = stop_gradient[body=\n"
        "      { lambda ; a:f32[3]. let\n"
        "          b:f32[3] = sin a\n"
        "        in (b) }] a\n"
        "  in (b) }";
    round_trip(outer);
    std::string broken = outer;
    broken.replace(broken.find("b:f32[3] = sin"), 8, "b:f64[3]");
    fx::Program q = fx::parse_program(broken);
    CHECK_THROWS_WITH_AS(fx::verify(q), doctest::Contains("param 'body' of eqn 0 (stop_gradient): eqn 0 (sin)"),
                         fx::TypeError);
  }
}

TEST_CASE("ir text: params and values programs are built with print identically") {
  // Programs built in C++ with each ParamValue kind print, parse back, and compare equal.
  auto inner = std::make_shared<fx::Program>(fx::parse_program("{ lambda ; a:i32[]. let\n  in (a) }"));
  fx::Program p;
  int32_t a = p.new_var(fx::AbstractArray{fx::Shape{2, 3}, fx::float32, false});
  int32_t b = p.new_var(fx::AbstractArray{fx::Shape{2, 3}, fx::float32, false});
  p.invars = {a};
  p.eqns.push_back(fx::Eqn{fx::Prim::stop_gradient,
                           fx::Params{{"i", int64_t(-4)}, {"d", 0.5}, {"s", std::string("a b")}, {"t", fx::float16},
                                      {"l", fx::IntList{}}, {"p", fx::ProgramRef(inner)},
                                      {"ps", fx::ProgramList{inner, inner, inner}}, {"b", false}},
                           {fx::Atom(a)},
                           {b},
                           {}});
  p.outvars = {fx::Atom(b)};
  fx::verify(p);
  fx::Program q = round_trip(p.str());
  CHECK(q == p);
  CHECK(q.eqns[0].params == p.eqns[0].params);
}

TEST_CASE("ir text: variable names that look like keywords and literals") {
  // The printer names the 222nd variable "in", the 5752nd "inf" and the 8802nd "nan".
  fx::Program p;
  int32_t v = p.new_var(fx::AbstractArray{fx::Shape{2}, fx::float32, false});
  p.invars = {v};
  for (int i = 0; i < 9000; ++i) {
    int32_t w = p.new_var(fx::AbstractArray{fx::Shape{2}, fx::float32, false});
    p.eqns.push_back(fx::Eqn{fx::Prim::neg, {}, {fx::Atom(v)}, {w}, {}});
    v = w;
  }
  p.outvars = {fx::Atom(v), fx::Atom(221), fx::Atom(5751), fx::Atom(8801)};
  std::string text = p.str();
  CHECK(text.find("\n    in:f32[2] = neg") != std::string::npos);
  CHECK(text.find(" = neg inf\n") != std::string::npos);
  CHECK(text.find(", in, inf, nan) }") != std::string::npos);
  fx::Program q = round_trip(text);
  CHECK(q.outvars.at(1).var == 221);
  CHECK(q.outvars.at(3).var == 8801);
}

TEST_CASE("ir text: malformed texts raise ParseError with line and column") {
  struct Case {
    const char* text;
    const char* where;     // "line L, column C"
    const char* expected;  // part of the message
  };
  const Case cases[] = {
      {"", "line 1, column 1", "'{' opening a program"},
      {"garbage", "line 1, column 1", "found 'garbage'"},
      {"{ lambda", "line 1, column 9", "constvar binder"},
      {"{ lamda ; . let\n  in () }", "line 1, column 3", "'lambda'"},
      {"{ lambda ; a:f32[3]. let\n    b:f32[3] = frobnicate a\n  in (b) }", "line 2, column 16",
       "no primitive is called 'frobnicate'"},
      {"{ lambda ; a:f33[3]. let\n  in (a) }", "line 1, column 14", "a dtype"},
      {"{ lambda ; a:f32[3]. let\n    b:f32[3] = neg c\n  in (b) }", "line 2, column 20", "'c' is not defined"},
      {"{ lambda ; a:f32[3]. let\n    a:f32[3] = neg a\n  in (a) }", "line 2, column 5", "'a' is already defined"},
      {"{ lambda ; a:f32[3]. let\n    b:f32[3] = neg b\n  in (b) }", "line 2, column 20", "'b' is not defined"},
      {"{ lambda ; a:f32[3] a:f32[3]. let\n  in (a) }", "line 1, column 21", "already defined"},
      {"{ lambda ; a:f32[3]. let\n  in (b) }", "line 2, column 7", "'b' is not defined"},
      {"{ lambda ; a:f32[3. let\n  in (a) }", "line 1, column 18", "a dimension"},
      {"{ lambda ; a:f32[-3]. let\n  in (a) }", "line 1, column 18", "non-negative"},
      {"{ lambda ; a:f32[99999999999999999999]. let\n  in (a) }", "line 1, column 18", "dimension"},
      {"{ lambda ; a:f32[3]. let\n  in (a }", "line 2, column 9", "',' or ')'"},
      {"{ lambda ; a:f32[3]. let\n  in (a)", "line 2, column 9", "'}' closing the program"},
      {"{ lambda ; a:f32[3]. let\n  in (a) } }", "line 2, column 12", "the end of the text"},
      {"{ lambda ; a:f32[3]. let\n    b:f32[3] = add a 2.0:f32[3]\n  in (b) }", "line 2, column 26", "rank-0"},
      {"{ lambda ; a:i8[3]. let\n    b:i8[3] = add a 128:i8[]\n  in (b) }", "line 2, column 21", "range of i8"},
      {"{ lambda ; a:u8[3]. let\n    b:u8[3] = add a -1:u8[]\n  in (b) }", "line 2, column 21", "range of u8"},
      {"{ lambda ; a:i64[]. let\n    b:i64[] = add a 9223372036854775808:i64[]\n  in (b) }", "line 2, column 21",
       "range of i64"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = add a 1e39:f32[]\n  in (b) }", "line 2, column 21", "range of f32"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = add a foo:f32[]\n  in (b) }", "line 2, column 21", "a number, nan"},
      {"{ lambda ; a:bool[]. let\n    b:bool[] = and a true:bool[]\n  in (b) }", "line 2, column 22", "True or False"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = add a 1.0:f32[]{wek}\n  in (b) }", "line 2, column 30", "'{weak}'"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = integer_pow[y=] a\n  in (b) }", "line 2, column 29", "parameter value"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = integer_pow[y=3 a\n  in (b) }", "line 2, column 32", "'=' after"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = integer_pow[y=3 y=4] a\n  in (b) }", "line 2, column 31", "repeated"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = integer_pow[y=99999999999999999999] a\n  in (b) }", "line 2, column 29",
       "a number in range"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = integer_pow[y=(1, x)] a\n  in (b) }", "line 2, column 33", "an integer"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = integer_pow[y=(1, 2] a\n  in (b) }", "line 2, column 34", "closing the tuple"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = integer_pow[y=\"abc] a\n  in (b) }", "line 3, column 11", "'\"' closing"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = integer_pow[y=\"a\\tb\"] a\n  in (b) }", "line 2, column 32", "an escape"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = integer_pow[y=f99] a\n  in (b) }", "line 2, column 29", "parameter value"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = integer_pow[y={ lambda ;. let\n in ( }] a\n  in (b) }", "line 3, column 7",
       "a variable or a literal"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = neg a,\n  in (b) }", "line 2, column 20", "a space or the end of the line"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] neg a\n  in (b) }", "line 2, column 16", "':' and a type after the variable name 'neg'"},
      {"{ lambda ; a:f32[]. let\n    b = neg a\n  in (b) }", "line 2, column 6", "':' and a type"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = neg a", "line 2, column 20", "binder"},
      {"{ lambda ; a:f32[]. let\n    b:f32[] = neg \x01\n  in (b) }", "line 2, column 19", "byte 0x01"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    std::string msg = expect_parse_error(c.text);
    CHECK_MESSAGE(msg.rfind("ParseError: ", 0) == 0, msg);
    CHECK_MESSAGE(msg.find(c.where) != std::string::npos, msg);
    CHECK_MESSAGE(msg.find(c.expected) != std::string::npos, msg);
  }
  // Deep nesting is refused rather than overflowing the stack.
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "{ lambda ;. let\n x:f32[] = neg[p=";
  CHECK_THROWS_WITH_AS(fx::parse_program(deep), doctest::Contains("levels of nested programs"), fx::ParseError);
}

namespace {
const fx::AbstractArray f3{fx::Shape{3}, fx::float32, false};
const fx::AbstractArray f4{fx::Shape{4}, fx::float32, false};
// a:f32[3] -> b = sin a: a program verify accepts, for the cases below to break.
fx::Program base() {
  fx::Program p;
  int32_t a = p.new_var(f3), b = p.new_var(f3);
  p.invars = {a};
  p.eqns.push_back(fx::Eqn{fx::Prim::sin, {}, {fx::Atom(a)}, {b}, {}});
  p.outvars = {fx::Atom(b)};
  return p;
}
}  // namespace

TEST_CASE("ir text: verify rejects broken structure") {
  fx::verify(base());

  SUBCASE("undefined var") {
    fx::Program p = base();
    int32_t c = p.new_var(f3);
    p.eqns[0].inputs[0] = fx::Atom(c);
    CHECK_THROWS_WITH_AS(fx::verify(p), doctest::Contains("eqn 0 (sin) input 0 uses variable 2 (f32[3]) before it is defined"),
                         fx::TypeError);
  }
  SUBCASE("used before its definition") {
    fx::Program p = base();
    int32_t c = p.new_var(f3);
    p.eqns.insert(p.eqns.begin(), fx::Eqn{fx::Prim::cos, {}, {fx::Atom(1)}, {c}, {}});
    CHECK_THROWS_WITH_AS(fx::verify(p), doctest::Contains("eqn 0 (cos) input 0 uses variable 1"), fx::TypeError);
  }
  SUBCASE("double definition") {
    fx::Program p = base();
    p.eqns.push_back(fx::Eqn{fx::Prim::cos, {}, {fx::Atom(0)}, {1}, {}});
    CHECK_THROWS_WITH_AS(fx::verify(p), doctest::Contains("eqn 1 (cos) output 0 rebinds variable 1"), fx::TypeError);
  }
  SUBCASE("an eqn output rebinding an invar") {
    fx::Program p = base();
    p.eqns[0].outputs[0] = 0;
    CHECK_THROWS_AS(fx::verify(p), fx::TypeError);
  }
  SUBCASE("var id out of range") {
    fx::Program p = base();
    p.outvars[0] = fx::Atom(7);
    CHECK_THROWS_WITH_AS(fx::verify(p), doctest::Contains("output 0 is variable 7, out of range"), fx::TypeError);
  }
  SUBCASE("undefined outvar") {
    fx::Program p = base();
    p.outvars.push_back(fx::Atom(p.new_var(f3)));
    CHECK_THROWS_WITH_AS(fx::verify(p), doctest::Contains("output 1 uses variable 2"), fx::TypeError);
  }
}

TEST_CASE("ir text: verify rejects ill-typed eqns and constants") {
  SUBCASE("wrong output type") {
    fx::Program p = base();
    p.types[1] = f4;
    CHECK_THROWS_WITH_AS(fx::verify(p),
                         doctest::Contains("eqn 0 (sin) on inputs (f32[3]) declares outputs (f32[4]) but its shape rule "
                                           "gives (f32[3])"),
                         fx::TypeError);
    p.types[1] = fx::AbstractArray{fx::Shape{3}, fx::float64, false};
    CHECK_THROWS_AS(fx::verify(p), fx::TypeError);
  }
  SUBCASE("wrong number of outputs") {
    fx::Program p = base();
    p.eqns[0].outputs.push_back(p.new_var(f3));
    CHECK_THROWS_WITH_AS(fx::verify(p), doctest::Contains("declares outputs (f32[3], f32[3])"), fx::TypeError);
  }
  SUBCASE("the weak flag is not part of the type check") {
    fx::Program p = base();
    p.types[1].weak_type = true;
    fx::verify(p);
  }
  SUBCASE("the shape rule's own error keeps its kind and names the eqn") {
    fx::Program p = base();
    int32_t c = p.new_var(f4), d = p.new_var(f3);
    p.invars.push_back(c);
    p.eqns.push_back(fx::Eqn{fx::Prim::add, {}, {fx::Atom(0), fx::Atom(c)}, {d}, {}});
    CHECK_THROWS_WITH_AS(fx::verify(p), doctest::Contains("eqn 1 (add) on inputs (f32[3], f32[4])"), fx::ShapeError);
  }
  SUBCASE("missing params are reported, not a std::logic_error") {
    fx::Program p = fx::parse_program(
        "{ lambda ; a:f32[3]. let\n    b:f32[3] = integer_pow a\n  in (b) }");
    CHECK_THROWS_WITH_AS(fx::verify(p), doctest::Contains("eqn 0 (integer_pow)"), fx::TypeError);
  }
  SUBCASE("literals are typed by their dtype") {
    fx::Program p = fx::parse_program(
        "{ lambda ; a:f32[3]. let\n    b:f32[3] = add a 2:i32[]\n  in (b) }");
    CHECK_THROWS_AS(fx::verify(p), fx::TypeError);
  }
  SUBCASE("const values must match their constvars") {
    fx::Array c = fx::array({1.f, 2.f, 3.f});
    fx::Program p = fx::make_ir([c](const fx::Array& a) { return a + c; })(c);
    fx::verify(p);
    p.consts[0] = fx::array({1.f, 2.f});
    CHECK_THROWS_WITH_AS(fx::verify(p), doctest::Contains("constvar 0 has type f32[3] but its value is f32[2]"),
                         fx::TypeError);
    p.consts.clear();
    fx::verify(p);  // a parsed-like program: constvars without values
  }
}

TEST_CASE("ir text: fuzzed texts parse or raise fluxion::Error, and what parses round-trips") {
  fx::Array x = fx::array({1.f, -2.f, 3.f});
  fx::Array m = fx::array({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  std::vector<std::string> seeds = {
      fx::make_ir([](const fx::Array& a, const fx::Array& b) { return fx::where(a + b > 0.f, fx::sin(a), b * 2); })(m, x)
          .str(),
      fx::make_ir([](const fx::Array& a) {
        return std::tuple{fx::astype(a, fx::int8) - 3, fx::astype(a, fx::uint32) + 7u, a > 1.5f, fx::astype(a, fx::float16)};
      })(x).str(),
      "{ lambda a:f32[] ; b:f32[2]{weak}. let\n"
      "    c:f32[2] = stop_gradient[body=\n"
      "      { lambda ; a:f32[]. let\n"
      "          b:f32[] = neg a\n"
      "        in (b, -inf:f64[]) } k=(0, 1) l=(\n"
      "      { lambda ;. let\n"
      "        in (True:bool[]{weak}) },) n=1.5e-07 s=\"a\\\"b\" t=f16 u=True] b\n"
      "    d:f32[2] = iota[dimension=0 dtype=f32 shape=(2,)]\n"
      "  in (c, d, nan:f32[]) }",
  };
  for (const std::string& s : seeds) round_trip(s);
  const std::string alphabet = "{}[](),.:;=\"\\ \nabcfiu0123456789-+e_";
  std::mt19937 rng(20240611);
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string t = seeds[size_t(iter) % seeds.size()];
    int edits = 1 + int(rng() % 3);
    for (int k = 0; k < edits && !t.empty(); ++k) {
      size_t i = rng() % t.size();
      switch (rng() % 5) {
        case 0: t.erase(i, 1 + rng() % 3); break;                                 // delete
        case 1: t.insert(i, 1, t[rng() % t.size()]); break;                        // duplicate a character
        case 2: std::swap(t[i], t[rng() % t.size()]); break;                       // swap two characters
        case 3: t[i] = alphabet[rng() % alphabet.size()]; break;                   // replace
        case 4: t.insert(i, t.substr(rng() % t.size(), 1 + rng() % 8)); break;     // duplicate a run
      }
    }
    CAPTURE(t);
    try {
      fx::Program p = fx::parse_program(t);
      ++parsed;
      std::string printed = p.str();
      CHECK(fx::parse_program(printed).str() == printed);
      try {
        fx::verify(p);
      } catch (const fx::Error&) {
      }
    } catch (const fx::ParseError& e) {
      ++rejected;
      CHECK(std::string(e.what()).find(", column ") != std::string::npos);
    } catch (const fx::Error&) {
      FAIL("parse_program raised a non-ParseError fluxion::Error");
    } catch (const std::exception& e) {
      FAIL("parse/verify raised a non-fluxion exception: " << e.what());
    }
  }
  MESSAGE("fuzz: " << parsed << " parsed, " << rejected << " rejected");
  CHECK(parsed > 0);
  CHECK(rejected > 0);
}

TEST_CASE("ir text: the example of docs/ir.md parses, verifies and round-trips") {
  const std::string example =
      "{ lambda a:f32[3] ; b:f32[2,3] c:i32[]{weak}. let\n"
      "    d:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] a\n"
      "    e:f32[2,3] = mul b d\n"
      "    f:bool[2,3] = gt e 0.0:f32[]\n"
      "    g:f32[2,3] = select f e 2.5:f32[]\n"
      "    h:f32[2,3] = stop_gradient[body=\n"
      "      { lambda ; a:f32[]. let\n"
      "          b:f32[] = neg a\n"
      "        in (b) }] g\n"
      "  in (h, c, -inf:f64[]) }";
  fx::Program p = round_trip(example);
  CHECK(p.constvars.size() == 1);
  CHECK(p.invars.size() == 2);
  CHECK(p.types[size_t(p.invars[1])].weak_type);
  CHECK(p.outvars.at(2).is_literal());
  CHECK(p.outvars.at(2).lit.as_double() == -std::numeric_limits<double>::infinity());
}
