// fx::to_dot: the dot text is read back (nodes, edges, clusters) and checked against the program
// it draws -- every equation a node labelled with its primitive and output types, every use of a
// value an edge from the node that makes it, inputs, constants and outputs marked, every
// sub-program a cluster -- and, where Graphviz is installed, `dot -Tsvg` renders it.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace fx = fluxion;

namespace {

struct Dot {
  std::map<std::string, std::string> labels;  // node id -> label text (escapes as written)
  std::multiset<std::pair<std::string, std::string>> edges;
  std::set<std::string> clusters;
};

Dot parse_dot(const std::string& text) {
  static const std::regex node(R"re(^\s*(p\d+_\w+) \[label="((?:[^"\\]|\\.)*)")re");
  static const std::regex edge(R"(^\s*(p\d+_\w+) -> (p\d+_\w+) \[)");
  static const std::regex cluster(R"(^\s*subgraph cluster_(p\d+) \{)");
  Dot d;
  std::istringstream in(text);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, edge)) d.edges.insert({m[1], m[2]});
    else if (std::regex_search(line, m, node)) d.labels[m[1]] = m[2];
    else if (std::regex_search(line, m, cluster)) d.clusters.insert(m[1]);
  }
  return d;
}

/// Checks program p as drawn under `id`; `next` numbers the sub-programs in the order to_dot meets
/// them (depth first, parameters in order). Returns the number of edges p accounts for.
size_t check_program(const Dot& d, const fx::Program& p, const std::string& id, int& next) {
  std::map<int32_t, std::string> producer;
  for (size_t k = 0; k < p.constvars.size(); ++k) producer[p.constvars[k]] = id + "_c" + std::to_string(k);
  for (size_t k = 0; k < p.invars.size(); ++k) producer[p.invars[k]] = id + "_i" + std::to_string(k);
  for (const auto& [var, node] : producer) {
    REQUIRE(d.labels.count(node));
    CHECK(d.labels.at(node).find(p.type(var).str()) != std::string::npos);
  }
  size_t edges = 0;
  auto check_use = [&](const fx::Atom& a, const std::string& lit, const std::string& to) {
    const std::string from = a.is_literal() ? lit : producer.at(a.var);
    INFO(from << " -> " << to);
    CHECK(d.edges.count({from, to}) >= 1);
    if (a.is_literal()) CHECK(d.labels.at(lit) == a.lit.value_str());
    ++edges;
  };
  for (size_t k = 0; k < p.eqns.size(); ++k) {
    const fx::Eqn& e = p.eqns[k];
    const std::string node = id + "_e" + std::to_string(k);
    REQUIRE(d.labels.count(node));
    const std::string& label = d.labels.at(node);
    CHECK(label.rfind(std::string(fx::prim_name(e.prim)), 0) == 0);
    for (int32_t v : e.outputs) CHECK(label.find(p.type(v).str()) != std::string::npos);
    size_t incoming = 0;
    for (const auto& [from, to] : d.edges) incoming += to == node;
    CHECK(incoming == e.inputs.size());
    for (size_t j = 0; j < e.inputs.size(); ++j)
      check_use(e.inputs[j], id + "_l" + std::to_string(k) + "_" + std::to_string(j), node);
    for (int32_t v : e.outputs) producer[v] = node;
    fx::any_sub_program(e, [&](const fx::Program& q) {
      const std::string sub = "p" + std::to_string(++next);
      CHECK(d.clusters.count(sub));
      CHECK(d.edges.count({node, sub + "_anchor"}) == 1);
      edges += 1 + check_program(d, q, sub, next);
      return false;  // every sub-program, not only the first
    });
  }
  for (size_t k = 0; k < p.outvars.size(); ++k) {
    const std::string out = id + "_o" + std::to_string(k);
    REQUIRE(d.labels.count(out));
    check_use(p.outvars[k], id + "_lo" + std::to_string(k), out);
  }
  CHECK_FALSE(d.labels.count(id + "_i" + std::to_string(p.invars.size())));
  CHECK_FALSE(d.labels.count(id + "_e" + std::to_string(p.eqns.size())));
  return edges;
}

/// The whole check: every part of the program drawn, and no edge or cluster beyond them.
void check_dot(const fx::Program& p, const std::string& text) {
  const Dot d = parse_dot(text);
  int next = 0;
  const size_t edges = check_program(d, p, "p0", next);
  CHECK(d.edges.size() == edges);
  CHECK(d.clusters.size() == size_t(next));
}

bool have_dot() { return std::system("command -v dot >/dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("to_dot: every equation a node, every use an edge, inputs, constants and outputs marked") {
  const fx::Array c = fx::array({1.f, 2.f, 3.f});
  auto f = [&](const fx::Array& x, const fx::Array& y) {
    fx::Array s = fx::sin(x * y);
    return std::pair{s + x * 2.f + c, fx::sum(s)};
  };
  const fx::Program p = fx::make_ir(f)(fx::ones({3}), fx::ones({3}));
  REQUIRE(p.constvars.size() == 1);
  const std::string text = fx::to_dot(p, "f \"quoted\"");
  CHECK(text.rfind("digraph \"f \\\"quoted\\\"\" {", 0) == 0);
  check_dot(p, text);
  // The literal 2.0 is a node of its own, and the reduction's parameter is in its label.
  CHECK(text.find("[label=\"2.0\"") != std::string::npos);
  CHECK(text.find("reduce_sum\\naxes=(0,)") != std::string::npos);
}

TEST_CASE("to_dot: scan, cond, while_loop and custom_jvp bodies are clusters") {
  auto sq = fx::custom_jvp([](const fx::Array& x) { return x * x; }, [](const auto& primals, const auto& tangents) {
    const fx::Array& x = std::get<0>(primals);
    return std::pair{x * x, 2.f * x * std::get<0>(tangents)};
  });
  auto f = [&](const fx::Array& xs) {
    auto [carry, ys] = fx::scan(
        [](const fx::Array& c, const fx::Array& x) {
          fx::Array n = fx::cond(x > 0.f, [&] { return c + x; }, [&] { return c - x; });
          return std::pair{n, n * 2.f};
        },
        fx::zeros({}), xs);
    fx::Array w = fx::while_loop([](const fx::Array& v) { return v < 10.f; }, [](const fx::Array& v) { return v * 2.f; },
                                 carry + 1.f);
    return sq(w) + fx::sum(ys);
  };
  const fx::Program p = fx::make_ir(f)(fx::array({1.f, -2.f, 3.f}));
  int subs = 0;
  std::function<void(const fx::Program&)> count = [&](const fx::Program& q) {
    for (const fx::Eqn& e : q.eqns) fx::any_sub_program(e, [&](const fx::Program& r) { ++subs, count(r); return false; });
  };
  count(p);
  REQUIRE(subs >= 5);  // the scan body, the two branches, the loop's condition and body, the rule
  const std::string text = fx::to_dot(p);
  check_dot(p, text);
  CHECK(text.find("label=\"scan ") != std::string::npos);
  CHECK(text.find("label=\"cond branches[1]\"") != std::string::npos);
}

TEST_CASE("to_dot: Graphviz renders it (skipped where dot is not installed)" * doctest::skip(!have_dot())) {
  auto f = [](const fx::Array& x) {
    return fx::cond(fx::sum(x) > 0.f, [&] { return fx::exp(x); }, [&] { return -x; });
  };
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("fluxion_dot_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "f.dot") << fx::to_dot(fx::make_ir(f)(fx::ones({4})));
  const std::string cmd = "dot -Tsvg " + (dir / "f.dot").string() + " -o " + (dir / "f.svg").string() + " 2>" +
                          (dir / "err.txt").string();
  const int rc = std::system(cmd.c_str());
  std::ifstream err(dir / "err.txt"), svg(dir / "f.svg");
  const std::string err_text(std::istreambuf_iterator<char>(err), {}), svg_text(std::istreambuf_iterator<char>(svg), {});
  INFO(err_text);
  CHECK(rc == 0);
  CHECK(err_text.empty());  // no warning either (bad attributes, a missing cluster)
  CHECK(svg_text.find("<svg") != std::string::npos);
  CHECK(svg_text.find("cond branches[0]") != std::string::npos);
  std::filesystem::remove_all(dir);
}
