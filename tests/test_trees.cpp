// Trees (ir/tree.h): registered structs and nested std containers flatten to their Array leaves in a
// fixed order, rebuild from them, map leafwise over one or several trees, keep static leaves, and
// pass through make_ir / eval_shape / eval as arguments and results.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <array>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace fx = fluxion;

namespace tree_test {

struct Params {
  fx::Array w1, b1, w2, b2;
};
FLUXION_TREE(Params, w1, b1, w2, b2);

// Static fields (an int, a string, a float vector) sit between the Array fields.
struct Layer {
  fx::Array w;
  int width = 0;
  std::string name;
  fx::Array b;
  std::vector<float> notes;
};
FLUXION_TREE(Layer, w, width, name, b, notes);

struct Model {
  std::vector<Layer> layers;
  std::optional<fx::Array> scale;
  std::map<std::string, fx::Array> extras;
};
FLUXION_TREE(Model, layers, scale, extras);

struct One {
  fx::Array only;
};
FLUXION_TREE(One, only);

}  // namespace tree_test

namespace {

using tree_test::Layer;
using tree_test::Model;
using tree_test::Params;

// Strongly typed float32 (a C++ scalar alone would make a weak array, as jnp.full((n,), v)).
fx::Array vec(float v, int64_t n = 2) { return fx::full({n}, v, fx::float32); }
float first(const fx::Array& a) { return a.to_vector<float>().at(0); }
std::vector<float> firsts(const std::vector<fx::Array>& xs) {
  std::vector<float> out;
  for (const auto& x : xs) out.push_back(first(x));
  return out;
}
bool same(const fx::Array& a, const fx::Array& b) { return a.impl() == b.impl(); }

Model make_model() {
  Model m;
  m.layers.push_back(Layer{vec(1), 4, "in", vec(2), {0.5f}});
  m.layers.push_back(Layer{vec(3), 8, "out", vec(4), {}});
  m.scale = vec(5);
  m.extras["zeta"] = vec(7);  // maps flatten by key: "alpha" before "zeta"
  m.extras["alpha"] = vec(6);
  return m;
}

}  // namespace

TEST_CASE("tree: leaves of registered structs, in field order") {
  Params p{vec(1), vec(2), vec(3), vec(4)};
  auto l = fx::tree::leaves(p);
  REQUIRE(l.size() == 4);
  CHECK(same(l[0], p.w1));
  CHECK(same(l[1], p.b1));
  CHECK(same(l[2], p.w2));
  CHECK(same(l[3], p.b2));
  CHECK(fx::tree::leaves(tree_test::One{vec(9)}).size() == 1);
  // A lone Array is a tree of one leaf; a static value has none.
  CHECK(fx::tree::leaves(vec(1)).size() == 1);
  CHECK(fx::tree::leaves(3).empty());
  CHECK(fx::tree::leaves(std::string("static")).empty());
}

TEST_CASE("tree: nested std containers flatten depth first") {
  using Nested = std::tuple<fx::Array, std::pair<fx::Array, int>, std::vector<fx::Array>, std::array<fx::Array, 2>,
                            std::map<std::string, fx::Array>, std::optional<fx::Array>, std::optional<fx::Array>>;
  Nested t{vec(1),
           {vec(2), 42},
           {vec(3), vec(4)},
           {vec(5), vec(6)},
           {{"b", vec(8)}, {"a", vec(7)}},
           vec(9),
           std::nullopt};
  CHECK(firsts(fx::tree::leaves(t)) == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(firsts(fx::tree::leaves(make_model())) == std::vector<float>{1, 2, 3, 4, 5, 6, 7});
  // Empty containers contribute nothing.
  CHECK(fx::tree::leaves(std::vector<fx::Array>{}).empty());
  CHECK(fx::tree::leaves(std::map<std::string, fx::Array>{}).empty());
  CHECK(fx::tree::leaves(std::optional<Params>{}).empty());
}

TEST_CASE("tree: flatten / unflatten round trip keeps structure and static leaves") {
  Model m = make_model();
  auto [leaves, def] = fx::tree::flatten(m);
  REQUIRE(leaves.size() == 7);
  // Unflattening the same leaves gives back the same handles.
  Model same_m = fx::tree::unflatten(def, leaves);
  CHECK(same(same_m.layers[1].b, m.layers[1].b));
  CHECK(same(*same_m.scale, *m.scale));
  CHECK(same(same_m.extras.at("alpha"), m.extras.at("alpha")));
  // New leaves land in the same positions; static fields are copied from the definition.
  std::vector<fx::Array> doubled;
  for (const auto& a : leaves) doubled.push_back(a * 2.f);
  Model d = fx::tree::unflatten(def, doubled);
  REQUIRE(d.layers.size() == 2);
  CHECK(first(d.layers[0].w) == 2);
  CHECK(first(d.layers[0].b) == 4);
  CHECK(first(d.layers[1].w) == 6);
  CHECK(first(d.layers[1].b) == 8);
  CHECK(first(*d.scale) == 10);
  CHECK(first(d.extras.at("alpha")) == 12);
  CHECK(first(d.extras.at("zeta")) == 14);
  CHECK(d.layers[0].width == 4);
  CHECK(d.layers[1].name == "out");
  CHECK(d.layers[0].notes == std::vector<float>{0.5f});
  // An absent optional stays absent.
  Model bare = m;
  bare.scale.reset();
  auto [bl, bdef] = fx::tree::flatten(bare);
  CHECK(bl.size() == 6);
  CHECK(!fx::tree::unflatten(bdef, bl).scale.has_value());
  // The wrong number of leaves is a ValueError, not a crash.
  leaves.pop_back();
  CHECK_THROWS_AS(fx::tree::unflatten(def, leaves), fx::ValueError);
}

TEST_CASE("tree::map over one tree and over two trees") {
  Params p{vec(1), vec(2), vec(3), vec(4)};
  Params half = fx::tree::map([](const fx::Array& a) { return a * 0.5f; }, p);
  CHECK(first(half.w1) == 0.5f);
  CHECK(first(half.b2) == 2.f);
  Params q{vec(10), vec(20), vec(30), vec(40)};
  Params sum = fx::tree::map([](const fx::Array& a, const fx::Array& b) { return a + b; }, p, q);
  CHECK(firsts(fx::tree::leaves(sum)) == std::vector<float>{11, 22, 33, 44});
  // Three trees, and leafwise order: f(a, b, c) = a - b + c.
  Params r = fx::tree::map([](const fx::Array& a, const fx::Array& b, const fx::Array& c) { return a - b + c; }, q, p, p);
  CHECK(firsts(fx::tree::leaves(r)) == std::vector<float>{10, 20, 30, 40});
  // Static leaves are kept by map.
  Model m = make_model();
  Model neg = fx::tree::map([](const fx::Array& a) { return -a; }, m);
  CHECK(neg.layers[1].width == 8);
  CHECK(neg.layers[0].name == "in");
  CHECK(first(neg.layers[1].b) == -4);
  CHECK(first(neg.extras.at("zeta")) == -7);
  // A std container tree, with a static int inside a pair.
  auto nested = std::pair{std::vector<fx::Array>{vec(1), vec(2)}, 5};
  auto mapped = fx::tree::map([](const fx::Array& a) { return a + 1.f; }, nested);
  CHECK(firsts(mapped.first) == std::vector<float>{2, 3});
  CHECK(mapped.second == 5);
  // Trees with different numbers of leaves cannot be mapped together.
  std::vector<fx::Array> two{vec(1), vec(2)}, three{vec(1), vec(2), vec(3)};
  CHECK_THROWS_AS(fx::tree::map([](const fx::Array& a, const fx::Array& b) { return a + b; }, two, three),
                  fx::ValueError);
}

TEST_CASE("tree: make_ir and eval over tree arguments and tree results") {
  Params p{fx::ones({3, 2}), fx::zeros({2}), fx::ones({2, 1}), fx::zeros({1})};
  auto step = [](const Params& p, const std::map<std::string, fx::Array>& opt, float lr) {
    Params out = fx::tree::map([&](const fx::Array& w) { return w * lr; }, p);
    return std::pair{out, opt.at("m") + 1.f};
  };
  std::map<std::string, fx::Array> opt{{"m", fx::full({2}, 3.f, fx::float32)}};
  fx::Program prog = fx::make_ir(step)(p, opt, 0.5f);
  // Inputs: the 4 + 1 Array leaves in tree order; the float is static (baked in).
  REQUIRE(prog.invars.size() == 5);
  auto in = prog.in_avals();
  CHECK(in[0] == fx::AbstractArray{fx::Shape{3, 2}, fx::float32, false});
  CHECK(in[2] == fx::AbstractArray{fx::Shape{2, 1}, fx::float32, false});
  CHECK(in[4] == fx::AbstractArray{fx::Shape{2}, fx::float32, false});
  auto out = prog.out_avals();
  REQUIRE(out.size() == 5);
  CHECK(out[0].shape == fx::Shape{3, 2});
  CHECK(out[4].shape == fx::Shape{2});
  std::ostringstream os;
  os << prog;
  CHECK(os.str().find("mul") != std::string::npos);

  // eval on the flattened leaves equals calling the function eagerly.
  std::vector<fx::Array> args = fx::tree::leaves(std::tuple{p, opt});
  auto traced = fx::eval(prog, args);
  auto eager = fx::tree::leaves(step(p, opt, 0.5f));
  REQUIRE(traced.size() == eager.size());
  for (size_t i = 0; i < eager.size(); ++i) CHECK(traced[i].to_vector<float>() == eager[i].to_vector<float>());
  // ... and rebuilding the result tree from them restores the structure.
  auto [eager_leaves, def] = fx::tree::flatten(step(p, opt, 0.5f));
  auto rebuilt = fx::tree::unflatten(def, traced);
  CHECK(rebuilt.first.w1.shape() == fx::Shape{3, 2});
  CHECK(first(rebuilt.first.w1) == 0.5f);
  CHECK(first(rebuilt.second) == 4.f);
}

TEST_CASE("tree: eval_shape over trees") {
  Model m = make_model();
  auto f = [](const Model& m) {
    std::vector<fx::Array> outs;
    for (const Layer& l : m.layers) outs.push_back(l.w * l.b + float(l.width));
    return std::tuple{outs, *m.scale, m.extras.at("alpha")};
  };
  auto shapes = fx::eval_shape(f)(m);
  REQUIRE(shapes.size() == 4);
  for (const auto& s : shapes) CHECK(s == fx::AbstractArray{fx::Shape{2}, fx::float32, false});
  // A single Array result gives one AbstractArray.
  auto one = fx::eval_shape([](const Params& p) { return p.w1 + p.b1; })(Params{vec(1, 3), vec(2, 3), vec(3), vec(4)});
  CHECK(one == fx::AbstractArray{fx::Shape{3}, fx::float32, false});
  // Static leaves inside the argument tree reach the traced function unchanged.
  auto widths = fx::eval_shape([](const Model& m) { return fx::full({int64_t(m.layers[1].width)}, 1.f); })(m);
  CHECK(widths.shape == fx::Shape{8});
}
