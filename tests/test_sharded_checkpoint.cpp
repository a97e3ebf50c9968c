// Sharded checkpoints (fx::save / fx::load of a directory; runtime/sharded_checkpoint.h): a tree of
// arrays laid out over a mesh, saved block by block, loads equal to the same tree saved as one
// unsharded file -- on the mesh it was saved on, resharded onto a 2-d mesh, whole, and as a map --
// with each block written once; saving again replaces it whole; hand-written manifests that are
// malformed, hostile or disagree with the files, and trees that disagree with the checkpoint, give
// typed errors. Meshes are sized from the device count (the suite runs with 1, 4 and 8 devices).
#include <doctest/doctest.h>
#include <fluxion.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "runtime/checkpoint_manifest.h"
#include "test_helpers.h"

namespace fx = fluxion;
namespace fs = std::filesystem;
using test_helpers::error_of;
using test_helpers::max_abs_diff;

namespace sharded_ckpt_test {
struct State {
  fx::Array w, b, step, e;
};
FLUXION_TREE(State, w, b, step, e);
}  // namespace sharded_ckpt_test

namespace {
using sharded_ckpt_test::State;

int64_t ndev() { return int64_t(fx::devices().size()); }
fx::NamedSharding at(const fx::Mesh& m, fx::PartitionSpec p) { return fx::NamedSharding(m, std::move(p)); }

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("fx_sharded_ckpt_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d.parent_path());
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> shard_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().filename().string().starts_with("shards-")) out.push_back(f.path().filename().string());
  return out;
}

// The state's values, unsharded: every dtype kind a model holds (f32, bf16, an int step).
State values() {
  const int64_t n = ndev();
  return State{fx::random::normal(fx::random::key(1), {4 * n, 6}), fx::random::normal(fx::random::key(2), {6}),
               fx::scalar(int32_t(41)),
               fx::astype(fx::random::normal(fx::random::key(3), {2 * n, 3 * n}), fx::bfloat16)};
}

State laid_out(const State& s, const fx::Mesh& m, const fx::PartitionSpec& w, const fx::PartitionSpec& e) {
  return State{fx::device_put(s.w, at(m, w)), fx::device_put(s.b, fx::replicated(m)), s.step, fx::device_put(s.e, at(m, e))};
}

void check_equal(const State& got, const State& want) {
  CHECK(max_abs_diff(got.w, want.w) == 0);
  CHECK(max_abs_diff(got.b, want.b) == 0);
  CHECK(max_abs_diff(got.step, want.step) == 0);
  CHECK(max_abs_diff(got.e, want.e) == 0);
  CHECK(got.e.dtype() == fx::bfloat16);
  CHECK(got.step.dtype() == fx::int32);
}
}  // namespace

TEST_CASE("sharding: a sharded checkpoint loads equal to the unsharded one, on its mesh, onto another mesh, whole") {
  const int64_t n = ndev();
  const fx::Mesh line = fx::make_mesh({n}, {"data"});
  const fx::Mesh grid = n >= 4 ? fx::make_mesh({n / 2, 2}, {"data", "model"}) : fx::make_mesh({n, 1}, {"data", "model"});
  const State plain = values();
  const State saved = laid_out(plain, line, fx::P("data"), fx::P(fx::none, "data"));
  const fs::path dir = fresh_dir("state"), file = fresh_dir("plain.safetensors");
  fx::save(dir.string(), saved);
  fx::save(file.string(), plain);
  const State reference = fx::load<State>(file.string(), plain);

  // Each process writes its devices' blocks: one file here, each distinct block once (the
  // replicated b and the unsharded step once, not once per device).
  REQUIRE(fs::exists(dir / "manifest.json"));
  const std::vector<std::string> files = shard_files(dir);
  REQUIRE(files.size() == 1);
  const auto blocks = fx::load<std::map<std::string, fx::Array>>((dir / files[0]).string());
  CHECK(blocks.size() == size_t(2 * n + 2));
  CHECK(blocks.at("w#0").shape() == fx::Shape{4, 6});
  CHECK(blocks.at("e#0").shape() == fx::Shape{2 * n, 3});
  CHECK(blocks.at("b#0").shape() == fx::Shape{6});

  // On the mesh it was saved on: the same layout, the same values.
  const State same = fx::load<State>(dir.string(), saved);
  check_equal(same, reference);
  CHECK(same.w.sharding() == saved.w.sharding());
  CHECK(same.e.sharding() == saved.e.sharding());
  CHECK(same.w.shards().size() == size_t(n));

  // Resharded onto a 2-d mesh in other layouts: each device's block cut from the saved ones.
  const State like2 = laid_out(plain, grid, fx::P(fx::axes("model", "data")), fx::P("data", "model"));
  const State other = fx::load<State>(dir.string(), like2);
  check_equal(other, reference);
  CHECK(other.w.sharding() == like2.w.sharding());
  CHECK(other.e.sharding() == at(grid, fx::P("data", "model")));
  CHECK(other.b.sharding() == fx::replicated(grid));

  // Into an unsharded tree: whole arrays. As a map: every array, laid out as saved.
  const State whole = fx::load<State>(dir.string(), plain);
  check_equal(whole, reference);
  CHECK(!whole.w.is_sharded());
  const auto all = fx::load<std::map<std::string, fx::Array>>(dir.string());
  REQUIRE(all.size() == 4);
  CHECK(max_abs_diff(all.at("w"), reference.w) == 0);
  CHECK(all.at("w").sharding() == saved.w.sharding());
  CHECK(max_abs_diff(all.at("e"), reference.e) == 0);

  // Saving again replaces the checkpoint whole: a new generation, the old files gone.
  const State twice{saved.w * 2.f, saved.b, fx::scalar(int32_t(42)), saved.e};
  fx::save(dir.string(), twice);
  CHECK(shard_files(dir).size() == 1);
  CHECK(shard_files(dir)[0] != files[0]);
  CHECK(slurp(dir / "manifest.json").find("\"generation\":1") != std::string::npos);
  const State again = fx::load<State>(dir.string(), saved);
  CHECK(max_abs_diff(again.w, plain.w * 2.f) == 0);
  CHECK(again.step.item<int32_t>() == 42);
  fs::remove_all(dir.parent_path());
}

namespace {
// A checkpoint written by hand: f32 a = [0, 1, 2, 3] in two blocks of one file, and the manifest
// with `find` replaced by `replace` in its text, so that each case below changes one thing.
fs::path hand_written(const std::string& find = "", const std::string& replace = "") {
  const fs::path dir = fresh_dir("hand");
  fs::create_directories(dir);
  fx::save((dir / "s.safetensors").string(),
           std::map<std::string, fx::Array>{{"a#0", fx::array({0.f, 1.f})}, {"a#1", fx::array({2.f, 3.f})}});
  std::string m =
      R"({"format":"fluxion-sharded-checkpoint","version":1,"generation":0,"arrays":{"a":{"dtype":"float32","shape":[4],)"
      R"("blocks":[{"file":"s.safetensors","tensor":"a#0","start":[0],"shape":[2]},)"
      R"({"file":"s.safetensors","tensor":"a#1","start":[2],"shape":[2]}]}}})";
  if (!find.empty()) {
    const size_t at = m.find(find);
    REQUIRE(at != std::string::npos);
    m.replace(at, find.size(), replace);
  }
  std::ofstream(dir / "manifest.json") << m;
  return dir;
}

std::string load_error(const fs::path& dir) {
  return error_of([&] { fx::load<std::map<std::string, fx::Array>>(dir.string()); });
}
bool starts(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("sharding: sharded checkpoint manifests that are malformed, hostile or disagree with the files are IOErrors") {
  // The format as documented: a hand-written manifest loads.
  const auto good = fx::load<std::map<std::string, fx::Array>>(hand_written().string());
  CHECK(good.at("a").to_vector<float>() == std::vector<float>{0, 1, 2, 3});

  const std::vector<std::tuple<std::string, std::string, std::string>> cases{
      {R"("format":"fluxion-sharded-checkpoint")", R"("format":"other")", "not a sharded checkpoint"},
      {R"("version":1)", R"("version":2)", "version 2"},
      {R"("version":1,)", "", "has no \"version\""},
      {R"("file":"s.safetensors","tensor":"a#1")", R"("file":"../s.safetensors","tensor":"a#1")", "not a plain file name"},
      {R"("file":"s.safetensors","tensor":"a#1")", R"("file":"/etc/passwd","tensor":"a#1")", "not a plain file name"},
      {R"("start":[2])", R"("start":[1])", "overlap"},
      {R"("start":[2],"shape":[2])", R"("start":[2],"shape":[1])", "the blocks hold 3 of the array's 4 elements"},
      {R"("start":[2])", R"("start":[3])", "outside the array"},
      {R"("start":[2])", R"("start":[-2])", "outside the array"},
      {R"("start":[2])", R"("start":[2,0])", "another rank"},
      {R"("tensor":"a#1")", R"("tensor":"a#7")", "has no tensor 'a#7'"},
      {R"("file":"s.safetensors","tensor":"a#1")", R"("file":"gone.safetensors","tensor":"a#1")", "gone.safetensors"},
      {R"("dtype":"float32")", R"("dtype":"int32")", "the manifest says i32[2]"},
      {R"("dtype":"float32")", R"("dtype":"float99")", "unknown dtype 'float99'"},
      {R"("shape":[2]}])", R"("shape":"2"}])", "\"shape\" is not of the expected kind"},
      {R"("arrays":{)", R"("arrays":[)", "malformed JSON"},
  };
  for (const auto& [find, replace, expect] : cases) {
    CAPTURE(replace);
    const std::string e = load_error(hand_written(find, replace));
    CHECK(starts(e, "IOError: "));
    CHECK(has(e, expect));
  }
  // A shape no array can have is a ShapeError, as in a single file.
  const std::string neg = load_error(hand_written(R"("shape":[4])", R"("shape":[-4])"));
  CHECK(starts(neg, "ShapeError: load("));
  // No manifest, or not JSON at all.
  const fs::path none = hand_written();
  fs::remove(none / "manifest.json");
  CHECK(starts(load_error(none), "IOError: "));
  CHECK(has(load_error(none), "manifest.json"));
  std::ofstream(none / "manifest.json") << "{\"format\": ";
  CHECK(starts(load_error(none), "IOError: "));
  fs::remove_all(none.parent_path());
}

TEST_CASE("sharding: a tree that disagrees with a sharded checkpoint gets the errors of a single file") {
  const fs::path dir = hand_written();
  using Map = std::map<std::string, fx::Array>;
  const std::string shape = error_of([&] { fx::load(dir.string(), Map{{"a", fx::zeros({5})}}); });
  CHECK(starts(shape, "ShapeError: load("));
  CHECK(has(shape, "'a' is f32[4] in the file, f32[5] in the tree"));
  const std::string dtype = error_of([&] { fx::load(dir.string(), Map{{"a", fx::zeros({4}, fx::int32)}}); });
  CHECK(starts(dtype, "TypeError: load("));
  const std::string missing = error_of([&] { fx::load(dir.string(), Map{{"a", fx::zeros({4})}, {"b", fx::zeros({1})}}); });
  CHECK(starts(missing, "ValueError: load("));
  CHECK(has(missing, "no array named 'b'"));
  const std::string complex =
      error_of([&] { fx::save((dir.parent_path() / "c").string(), Map{{"z", fx::astype(fx::zeros({2}), fx::complex64)}}); });
  CHECK(starts(complex, "TypeError: save("));
  fs::remove_all(dir.parent_path());
}

// A device's region is read from the saved blocks' bytes that hold it, not from whole files: the
// bytes read are the region's, however the region cuts the blocks (a row range, a column range,
// a corner; a block spanned whole in its trailing dims is one read).
TEST_CASE("sharding: a region of a sharded checkpoint reads only its bytes from the files") {
  namespace mf = fx::runtime::manifest;
  const int64_t n = ndev();
  const fx::Mesh line = fx::make_mesh({n}, {"data"});
  const fx::Array w = fx::reshape(fx::arange(0.0, double(8 * n * 64)), {8 * n, 64});  // f32[8n, 64], 8 rows a device
  const fs::path dir = fresh_dir("regions");
  fx::save(dir.string(), std::map<std::string, fx::Array>{{"w", fx::device_put(fx::astype(w, fx::float32), at(line, fx::P("data")))}});
  const mf::Manifest m = mf::read(dir.string());
  const mf::SavedArray& a = m.arrays.at("w");
  REQUIRE(a.blocks.size() == size_t(n));
  const std::vector<float> all = fx::astype(w, fx::float32).to_vector<float>();
  struct Region {
    std::vector<int64_t> start;
    fx::Shape shape;
  };
  for (const Region& r : {Region{{0, 0}, {3, 64}}, Region{{5, 0}, {8 * n - 6, 64}}, Region{{0, 10}, {8 * n, 7}},
                          Region{{2, 60}, {1, 4}}, Region{{0, 0}, {8 * n, 64}}}) {
    CAPTURE(r.shape.str());
    mf::BlockReader reader(dir.string());
    const fx::Array got = reader.region(a, r.start, r.shape);
    CHECK(reader.bytes_read() == uint64_t(r.shape.numel()) * 4);
    REQUIRE(got.shape() == r.shape);
    const std::vector<float> g = got.to_vector<float>();
    bool same = true;
    for (int64_t i = 0; i < r.shape[0]; ++i)
      for (int64_t j = 0; j < r.shape[1]; ++j)
        same = same && g[size_t(i * r.shape[1] + j)] == all[size_t((r.start[0] + i) * 64 + r.start[1] + j)];
    CHECK(same);
  }
  fs::remove_all(dir);
}
