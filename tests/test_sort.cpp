// Focused tests of the sort primitive (prims/sort.cpp): several operands and keys, stability, and
// the permutation it gives; sort and argsort themselves are op-table entries
// (tests/op_table_reduce.cpp).
#include <doctest/doctest.h>

#include <fluxion.h>

#include <sstream>

namespace fx = fluxion;

TEST_CASE("sort primitive: several operands, several keys, the permutation contract") {
  // Two keys: order by k0, ties broken by k1; a third operand rides along.
  fx::Array k0 = fx::array(std::vector<int32_t>{2, 1, 2, 1, 0}, {5});
  fx::Array k1 = fx::array({5.f, 3.f, 1.f, 3.f, 9.f});
  fx::Array payload = fx::arange(5);
  fx::Params p{{"dimension", int64_t(0)}, {"is_stable", true}, {"num_keys", int64_t(2)}};
  auto out = fx::bind(fx::Prim::sort, {k0, k1, payload}, p, {});
  REQUIRE(out.size() == 3);
  CHECK(out[0].to_vector<int32_t>() == std::vector<int32_t>{0, 1, 1, 2, 2});
  CHECK(out[1].to_vector<float>() == std::vector<float>{9, 3, 3, 1, 5});
  CHECK(out[2].to_vector<int32_t>() == std::vector<int32_t>{4, 1, 3, 2, 0});  // stable among equal keys
  // Random permutation binds sort(bits, iota) and takes the second output: a permutation.
  fx::Array rbits = fx::array(std::vector<uint32_t>{77, 3, 4000000000u, 12, 3, 999}, {6});
  fx::Params p1{{"dimension", int64_t(0)}, {"is_stable", true}, {"num_keys", int64_t(1)}};
  auto perm = fx::bind(fx::Prim::sort, {rbits, fx::arange(6)}, p1, {})[1].to_vector<int32_t>();
  CHECK(perm == std::vector<int32_t>{1, 4, 3, 0, 5, 2});
  // Traced: the eqn carries the params and both outputs.
  fx::Program prog = fx::make_ir([&](const fx::Array& b) { return fx::bind(fx::Prim::sort, {b, fx::arange(6)}, p1, {})[1]; })(rbits);
  std::ostringstream os;
  os << prog;
  CHECK(os.str().find("sort[dimension=0 is_stable=True num_keys=1]") != std::string::npos);
  CHECK(fx::eval(prog, {rbits})[0].to_vector<int32_t>() == perm);
  // Along a middle dimension of a 3-d operand.
  fx::Array c = fx::array(std::vector<float>{3, 1, 2, 0, 5, 4, 1, 2}, {2, 2, 2});
  CHECK(fx::sort(c, 1).to_vector<float>() == std::vector<float>{2, 0, 3, 1, 1, 2, 5, 4});
  CHECK(fx::argsort(c, 1).to_vector<int32_t>() == std::vector<int32_t>{1, 1, 0, 0, 1, 1, 0, 0});
}
