// Focused tests of the products' API (api/linalg.h): error text that names the op, the operands and
// the line; the programs matmul and einsum build; einsum's subscript errors. Their values are
// op-table entries (tests/op_table_linalg.cpp).
#include <doctest/doctest.h>

#include <fluxion.h>

namespace fx = fluxion;

TEST_CASE("matmul error text names the op, the operands and the line; programs stay minimal") {
  fx::Array a = fx::zeros({2, 3}), b = fx::zeros({4, 5});
  try {
    fx::matmul(a, b);
    FAIL("expected a ShapeError");
  } catch (const fx::ShapeError& e) {
    CHECK(std::string(e.what()).rfind("ShapeError: matmul(f32[2,3], f32[4,5]) at test_linalg.cpp:", 0) == 0);
    CHECK(std::string(e.what()).find("contracting dimensions differ (3 vs 4)") != std::string::npos);
  }
  // x @ W with a batched x is one dot_general, W is not broadcast.
  auto dense = [](const fx::Array& x, const fx::Array& w) { return fx::matmul(x, w); };
  fx::Program p = fx::make_ir(dense)(fx::zeros({8, 3, 4}), fx::zeros({4, 5}));
  CHECK(p.eqns.size() == 1);
  CHECK(p.out_avals()[0].shape == fx::Shape{8, 3, 5});
  // Mixed dtypes promote first (one convert), and the product has the promoted dtype.
  fx::Program q = fx::make_ir(dense)(fx::zeros({3, 4}, fx::int32), fx::zeros({4, 5}, fx::float16));
  CHECK(q.out_avals()[0].dtype == fx::float16);
  CHECK(q.eqns.size() == 2);
  // einsum's batched contraction is a single dot_general already in output order.
  auto attn = [](const fx::Array& x, const fx::Array& y) { return fx::einsum("bhqd,bhkd->bhqk", x, y); };
  fx::Program r = fx::make_ir(attn)(fx::zeros({2, 3, 4, 5}), fx::zeros({2, 3, 6, 5}));
  CHECK(r.eqns.size() == 1);
  CHECK(r.out_avals()[0].shape == fx::Shape{2, 3, 4, 6});
  // A weak scalar defers to the array's dtype.
  CHECK(fx::dot(fx::zeros({3}, fx::float16), 2.0).dtype() == fx::float16);
}

TEST_CASE("einsum rejects malformed subscripts with ValueError naming the subscripts") {
  fx::Array m = fx::zeros({3, 3});
  auto msg = [&](auto call) -> std::string {
    try {
      call();
    } catch (const fx::ValueError& e) {
      return e.what();
    }
    return "(no ValueError)";
  };
  CHECK(msg([&] { fx::einsum("ii->i", m); }).find("repeats within operand 0") != std::string::npos);
  CHECK(msg([&] { fx::einsum("ij->k", m); }).find("'k' appears in no operand") != std::string::npos);
  CHECK(msg([&] { fx::einsum("ij->ii", m); }).find("repeats") != std::string::npos);
  CHECK(msg([&] { fx::einsum("i1", m); }).find("unexpected character '1'") != std::string::npos);
  CHECK(msg([&] { fx::einsum("ij,jk", m); }).find("2 operand terms for 1 operands") != std::string::npos);
  CHECK(msg([&] { fx::einsum("ij->i->j", m); }).find("unexpected character") != std::string::npos);
  CHECK(msg([&] { fx::einsum("ij", std::vector<fx::Array>{}); }).find("at least one operand") != std::string::npos);
  CHECK(msg([&] { fx::einsum("ij", m); }) == "(no ValueError)");
  CHECK(msg([&] { fx::einsum("..i..", m); }).find("ellipsis") != std::string::npos);
}
