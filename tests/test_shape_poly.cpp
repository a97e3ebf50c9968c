// Shape polymorphism, step 1 (docs/shape_polymorphism.md): symbolic dimension expressions in their
// canonical form, polymorphic_shapes specs and constraints checked at call time, symbolic shapes
// through the shape rules that copy and compare dims, and the IR text round trip.
#include <doctest/doctest.h>

#include <fluxion.h>

#include "compile/compile_cache.h"
#include "test_helpers.h"
#include "transforms/polymorphic.h"

#include <map>
#include <string>

namespace fx = fluxion;
using fx::DimExpr;
using Avals = std::vector<fx::AbstractArray>;

namespace {
DimExpr sym(const char* s) { return DimExpr::symbol(s); }
bool mentions(const std::string& what, const std::string& part) { return what.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("shape poly: dimension expressions have one canonical form") {
  DimExpr b = sym("b"), c = sym("c");
  CHECK(b + 1 == 1 + b);
  CHECK(2 * b + c == c + b + b);
  CHECK((b + 1) * (b - 1) == b * b - 1);
  CHECK(b - b == DimExpr(0));
  CHECK((b * c).str() == "b*c");
  CHECK((2 * b + 1).str() == "2*b + 1");
  CHECK((1 - b).str() == "-b + 1");
  CHECK(floordiv(8 * b + 16, 8) == b + 2);  // exact division stays a polynomial
  CHECK(mod(8 * b + 16, 8) == DimExpr(0));
  CHECK(floordiv(b, 8).str() == "b // 8");
  CHECK(floordiv(b + 7, 8).str() == "(b + 7) // 8");
  CHECK((2 * floordiv(b, 8)).str() == "2*(b // 8)");
  CHECK(max(b, 4) == max(DimExpr(4), b));  // commutative operands are ordered
  CHECK(max(b, b) == b);
  CHECK(min(DimExpr(3), DimExpr(5)) == DimExpr(3));
  CHECK(!(b == c));
  CHECK(!(b == b + 1));
  CHECK_THROWS_AS(floordiv(b, 0), fx::ValueError);
  CHECK_THROWS_AS(mod(b, -2), fx::ValueError);
}

TEST_CASE("shape poly: parsing and evaluating dimension expressions matches integer arithmetic") {
  // Differential: each expression evaluated vs the same formula written in C++ (Python's floor
  // semantics for // and %, which the dims of a positive b never leave).
  const char* texts[] = {"2*b + 1", "(b + 7) // 8", "b % 8", "max(b, 4) - min(b, 4)", "b*b - 3*b", "-(b // 3) + 10",
                         "(b + c) * 2", "b // 8 * 8 + b % 8"};
  for (int64_t bv : {1, 7, 8, 64, 1000})
    for (int64_t cv : {1, 3}) {
      std::map<std::string, int64_t> env{{"b", bv}, {"c", cv}};
      int64_t want[] = {2 * bv + 1, (bv + 7) / 8, bv % 8, std::max<int64_t>(bv, 4) - std::min<int64_t>(bv, 4), bv * bv - 3 * bv,
                        -(bv / 3) + 10, (bv + cv) * 2, bv};
      for (size_t i = 0; i < std::size(texts); ++i) {
        DimExpr e = DimExpr::parse(texts[i]);
        CHECK_MESSAGE(e.evaluate(env) == want[i], texts[i]);
        CHECK(DimExpr::parse(e.str()) == e);  // printing and parsing round-trip the canonical form
      }
    }
  CHECK(DimExpr::parse("b // 8 * 8 + b % 8").str() == "b % 8 + 8*(b // 8)");  // terms in key order
  CHECK(DimExpr::parse("-(b // 3)").str() == "-(b // 3)");
  std::string e = test_helpers::error_of<fx::ValueError>([] { DimExpr::parse("b + * 2"); });
  CHECK(mentions(e, "'b + * 2' at position"));
  CHECK_THROWS_AS(DimExpr::parse("max(b 4)"), fx::ValueError);
  CHECK_THROWS_AS(DimExpr::parse("b // c"), fx::ValueError);  // division by a symbol: not a dim
  CHECK(mentions(test_helpers::error_of<fx::ValueError>([] { sym("b").evaluate({}); }), "symbol b"));
}

TEST_CASE("shape poly: symbolic dims encode into a Shape, print and parse back in the IR text") {
  DimExpr b = sym("b");
  int64_t code = fx::encode_dim(b);
  CHECK(fx::is_symbolic_dim(code));
  CHECK(fx::encode_dim(DimExpr::parse("b")) == code);  // equal expressions share one code
  CHECK(fx::encode_dim(b + 0) == code);
  CHECK(fx::encode_dim(DimExpr(5)) == 5);  // a constant is just its value
  fx::AbstractArray a{fx::Shape{code, 784}, fx::float32};
  CHECK(a.str() == "f32[b,784]");
  CHECK(fx::symbolic_shape_problem(a.shape, a.dtype).empty());  // a type may be symbolic ...
  CHECK(mentions(fx::shape_problem(a.shape, a.dtype), "symbolic dimension b"));  // ... an array may not
  CHECK(mentions(fx::symbolic_shape_problem(fx::Shape{code + 1000000, 2}, fx::float32), "arithmetic"));  // a code nobody interned
  fx::Program p = fx::make_ir([](const fx::Array& x) { return fx::exp(x); })(fx::ones({3, 784}));
  std::string text = p.str();
  // The same program over a symbolic batch, written as text: the parser reads "b" and "2*b + 1".
  std::string sym_text = text;
  for (size_t at; (at = sym_text.find("[3,784]")) != std::string::npos;) sym_text.replace(at, 7, "[2*b + 1,784]");
  fx::Program q = fx::parse_program(sym_text);
  CHECK(q.str() == sym_text);
  CHECK(q.in_avals().at(0).str() == "f32[2*b + 1,784]");
  CHECK_THROWS_AS(fx::parse_program(text.substr(0, text.find("[3,784]")) + "[b +,784]" + text.substr(text.find("[3,784]") + 7)),
                  fx::ParseError);
}

TEST_CASE("shape poly: symbolic dims in params (a reshape's sizes, a broadcast's shape) print as names and parse back") {
  fx::Program p = fx::make_ir([](const fx::Array& x) {
    return fx::broadcast_to(fx::reshape(x, {3, 28, 28}), {2, 3, 28, 28});
  })(fx::ones({3, 784}));
  std::string text = p.str();
  REQUIRE(text.find("new_sizes=(3, 28, 28)") != std::string::npos);
  // The same program over b rows, as text: types and params name b (never the code behind it).
  auto replace_all = [](std::string s, const std::string& from, const std::string& to) {
    for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
    return s;
  };
  auto over = [&](const std::string& dim) {
    std::string t = replace_all(replace_all(text, "[3,", "[" + dim + ","), "(3, 28, 28)", "(" + dim + ", 28, 28)");
    return replace_all(replace_all(t, "[2,3,", "[2," + dim + ","), "(2, 3,", "(2, " + dim + ",");
  };
  // "max(4, b)" has a comma of its own: an element of a tuple ends at a ',' outside parentheses.
  for (const std::string dim : {"b", "max(4, b)"}) {
    const fx::Program q = fx::parse_program(over(dim));
    CHECK(q.str() == over(dim));
    CHECK(q.str().find("-46") == std::string::npos);  // no code behind a name
    const fx::IntList& sizes = q.eqns.at(0).params.get_ints("new_sizes");
    CHECK(fx::is_symbolic_dim(sizes.at(0)));
    CHECK(fx::dim_str(sizes.at(0)) == dim);
  }
  const std::string sym_text = over("b");
  CHECK_THROWS_AS(fx::parse_program(replace_all(sym_text, "(b, 28, 28)", "(b +, 28, 28)")), fx::ParseError);
  CHECK_THROWS_AS(fx::parse_program(replace_all(sym_text, "(b, 28, 28)", "(c, 28, 28)")), fx::ParseError);  // no type has c
}

TEST_CASE("shape poly: polymorphic_shapes specs and their errors") {
  auto ps = fx::polymorphic_shapes("b, 784", "(b)", "b % 8 == 0");
  REQUIRE(ps.specs.size() == 2);
  CHECK(ps.specs[0].size() == 2);
  CHECK(ps.specs[1].size() == 1);
  REQUIRE(ps.constraints.size() == 1);
  CHECK(ps.constraints[0].text == "b % 8 == 0");
  CHECK(ps.symbols() == std::vector<std::string>{"b"});
  CHECK(fx::polymorphic_shapes("").specs.at(0).empty());  // a scalar
  CHECK(fx::polymorphic_shapes("_, max(b, 4)").specs.at(0).at(0).any);
  std::string e = test_helpers::error_of<fx::ValueError>([] { fx::polymorphic_shapes("b, 7 +"); });
  CHECK(mentions(e, "in the shape spec 'b, 7 +' at test_shape_poly.cpp:"));
  e = test_helpers::error_of<fx::ValueError>([] { fx::polymorphic_shapes("b, 784", "c >= 2"); });
  CHECK(mentions(e, "names the symbol c"));
}

TEST_CASE("shape poly: the call binds the symbols and checks every constraint, naming symbol and line") {
  auto ps = fx::polymorphic_shapes("b, 784", "b", "b % 8 == 0");
  auto avals = [](int64_t rows, int64_t labels) {
    return std::vector<fx::AbstractArray>{{fx::Shape{rows, 784}, fx::float32}, {fx::Shape{labels}, fx::int32}};
  };
  CHECK(fx::bind_symbols(ps, avals(64, 64), "jit").at("b") == 64);
  std::string e = test_helpers::error_of<fx::ShapeError>([&] { fx::bind_symbols(ps, avals(12, 12), "jit"); });
  CHECK(mentions(e, "b = 12"));
  CHECK(mentions(e, "b % 8 == 0"));
  CHECK(mentions(e, "test_shape_poly.cpp:"));
  e = test_helpers::error_of<fx::ShapeError>([&] { fx::bind_symbols(ps, avals(64, 32), "jit"); });
  CHECK(mentions(e, "the symbol b is 64"));
  e = test_helpers::error_of<fx::ShapeError>([&] {
    fx::bind_symbols(ps, Avals{{fx::Shape{8, 10}, fx::float32}, {fx::Shape{8}, fx::int32}}, "jit");
  });
  CHECK(mentions(e, "784"));
  auto plain = fx::polymorphic_shapes("b, 3");
  e = test_helpers::error_of<fx::ShapeError>([&] { fx::bind_symbols(plain, Avals{{fx::Shape{0, 3}, fx::float32}}, "jit"); });
  CHECK(mentions(e, "b >= 1"));
  auto twice = fx::polymorphic_shapes("b, 2*b");  // an expression dim is checked once b is bound
  CHECK(fx::bind_symbols(twice, Avals{{fx::Shape{5, 10}, fx::float32}}, "jit").at("b") == 5);
  CHECK_THROWS_AS(fx::bind_symbols(twice, Avals{{fx::Shape{5, 11}, fx::float32}}, "jit"), fx::ShapeError);
  CHECK_THROWS_AS(fx::bind_symbols(fx::polymorphic_shapes("2*b"), Avals{{fx::Shape{6}, fx::float32}}, "jit"), fx::ShapeError);
}

TEST_CASE("shape poly: eval_shape of an MLP forward over a symbolic batch") {
  auto key = fx::random::key(0);
  auto w1 = fx::random::normal(key, {784, 32}), w2 = fx::random::normal(key, {32, 10});
  auto b1 = fx::zeros({32});
  auto mlp = [&](const fx::Array& x) {
    fx::Array h = fx::nn::relu(fx::add(fx::matmul(x, w1), b1));
    fx::Array logits = fx::matmul(h, w2);
    fx::Array z = fx::subtract(logits, fx::max(logits, {1}, /*keepdims=*/true));
    return fx::subtract(z, fx::log(fx::sum(fx::exp(z), {1}, true)));  // log-softmax
  };
  auto ps = fx::polymorphic_shapes("b, 784");
  for (int64_t n : {1, 7, 64}) {
    fx::AbstractArray out = fx::eval_shape(mlp, ps)(fx::ones({n, 784}));
    CHECK(out.str() == "f32[b,10]");
    // Differential: the concrete trace has the same types with b replaced by n.
    CHECK(fx::eval_shape(mlp)(fx::ones({n, 784})).str() == "f32[" + std::to_string(n) + ",10]");
  }
  // A reduction over the batch keeps the other dims; a reshape that keeps b as its own dim is served.
  auto colsum = [](const fx::Array& x) { return fx::reshape(fx::sum(x, {0}), {28, 28}); };
  CHECK(fx::eval_shape(colsum, ps)(fx::ones({5, 784})).str() == "f32[28,28]");
  auto split = [](const fx::Array& x) { return fx::reshape(x, {x.shape()[0], 28, 28}); };
  CHECK(fx::eval_shape(split, ps)(fx::ones({5, 784})).str() == "f32[b,28,28]");
  auto tr = [](const fx::Array& x) { return fx::transpose(x); };
  CHECK(fx::eval_shape(tr, ps)(fx::ones({5, 784})).str() == "f32[784,b]");
}

TEST_CASE("shape poly: what the polymorphic trace cannot serve is a ShapeError naming the op and the symbol") {
  auto ps = fx::polymorphic_shapes("b, 784");
  auto x = fx::ones({4, 784});
  // mean over b divides by the size of each call (a sum of ones the kernel computes): served.
  CHECK(fx::eval_shape([](const fx::Array& a) { return fx::mean(a, 0); }, ps)(x).str() == "f32[784]");
  std::string e = test_helpers::error_of<fx::ShapeError>([&] { fx::eval_shape([](const fx::Array& a) { return fx::reshape(a, {-1}); }, ps)(x); });
  CHECK(mentions(e, "reshape"));
  CHECK(mentions(e, "f32[b,784]"));
  e = test_helpers::error_of<fx::ShapeError>([&] {
    fx::eval_shape([](const fx::Array& a) { return fx::concatenate({a, a}, 0); }, ps)(x);
  });
  CHECK(mentions(e, "concatenate"));
  CHECK(mentions(e, "symbolic dimension b"));
  // tile merges a copy axis into b (f32[2,b,1,784] -> [2*b,784]): the reshape rule says so in
  // dims, not in symbol codes and a wrapped element count as it did.
  e = test_helpers::error_of<fx::ShapeError>([&] { fx::eval_shape([](const fx::Array& a) { return fx::tile(a, {2, 1}); }, ps)(x); });
  CHECK(mentions(e, "reshape of f32[2,b,1,784] into f32[2*b,784]"));
  CHECK(mentions(e, "must stay a dimension of its own"));
  CHECK(!mentions(e, "-46116860"));
  // Under the trace zeros of a symbolic shape is a traced broadcast; eagerly it is refused.
  auto plus_zeros = [](const fx::Array& a) { return fx::add(a, fx::zeros(fx::Shape{a.shape()[0], 784})); };
  CHECK(fx::eval_shape(plus_zeros, ps)(x).str() == "f32[b,784]");
  const int64_t b = fx::encode_dim(DimExpr::symbol("b"));
  e = test_helpers::error_of<fx::ShapeError>([&] { fx::zeros(fx::Shape{b, 784}); });
  CHECK(mentions(e, "symbolic dimension b"));
  // Two different symbols never broadcast against each other.
  auto two = fx::polymorphic_shapes("b, 784", "c, 784");
  CHECK_THROWS_AS(fx::eval_shape([](const fx::Array& a, const fx::Array& c) { return fx::add(a, c); }, two)(x, fx::ones({4, 784})),
                  fx::ShapeError);
}

TEST_CASE("shape poly: a program over symbolic dims compiles once for the CPU; the GPU pipeline refuses it") {
  fx::Program p = fx::make_ir([](const fx::Array& x) { return fx::exp(x); })(fx::ones({3, 4}));
  std::string text = p.str();
  for (size_t at; (at = text.find("[3,4]")) != std::string::npos;) text.replace(at, 5, "[b,4]");
  fx::Program q = fx::parse_program(text);
  auto exe = fx::runtime::compile(q);
  CHECK(exe->symbols() == std::vector<std::string>{"b"});
  for (int64_t b : {1, 5, 300}) {
    const fx::Array x = fx::reshape(fx::arange(0.0, double(4 * b)), {b, 4}) * 0.001f;
    const std::vector<fx::Array> y = exe->run(std::vector<fx::Array>{x});
    CHECK(y.at(0).shape() == fx::Shape{b, 4});
    CHECK(test_helpers::max_abs_diff(y[0], fx::exp(x)) < 1e-6);
  }
  // A size that disagrees with the program's other dims of the symbol: a TypeError naming both.
  std::string e = test_helpers::error_of<fx::TypeError>([&] { exe->run(std::vector<fx::Array>{fx::ones({5, 3})}); });
  CHECK(mentions(e, "f32[b,4]"));
  e = test_helpers::error_of<fx::CompileError>([&] { fx::runtime::compile(q, fx::runtime::default_target(fx::Platform::cuda)); });
  CHECK(mentions(e, "f32[b,4]"));
}
