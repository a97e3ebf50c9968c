// Checkpoints: round trips of trees in every dtype and format; the files read back independently by
// Python's standard library (struct/json/zipfile -- and the `safetensors` package when installed);
// mismatches raise the documented errors; a failed write leaves the old file and no temporary.
#include <doctest/doctest.h>
#include <fluxion.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "test_helpers.h"

namespace fx = fluxion;
namespace fs = std::filesystem;

namespace ckpt_test {
struct Model {
  fx::nn::Linear encoder;
  std::vector<fx::nn::LayerNorm> norms;
  std::map<std::string, fx::Array> extra;
};
FLUXION_TREE(Model, encoder, norms, extra);
}  // namespace ckpt_test

namespace {

using ckpt_test::Model;

fs::path scratch_dir() {
  fs::path d = fs::temp_directory_path() / ("fluxion_ckpt_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

Model make_model() {
  Model m{fx::nn::Linear::init(fx::random::key(0), 3, 2), {fx::nn::LayerNorm::init(2), fx::nn::LayerNorm::init(2)}, {}};
  m.extra["step"] = fx::array({int64_t(7)});
  m.extra["mask"] = fx::array(std::vector<bool>{true, false, true});
  m.extra["half"] = fx::astype(fx::array({1.5f, -2.25f}), fx::float16);
  m.extra["small"] = fx::array(std::vector<int8_t>{-3, 4}, {2});
  m.extra["bytes"] = fx::array(std::vector<uint8_t>{1, 255}, {1, 2});
  m.extra["u32"] = fx::array(std::vector<uint32_t>{4000000000u}, {1});
  m.extra["f64"] = fx::array({{1.0, 2.0}, {3.0, 4.0}});
  m.extra["scalar"] = fx::scalar(3.5f);
  return m;
}

void check_same(const Model& a, const Model& b) {
  auto la = fx::tree::leaves(a), lb = fx::tree::leaves(b);
  REQUIRE(la.size() == lb.size());
  for (size_t i = 0; i < la.size(); ++i) {
    CHECK(la[i].aval() == lb[i].aval());
    CHECK(fx::astype(la[i], fx::float64).to_vector<double>() == fx::astype(lb[i], fx::float64).to_vector<double>());
  }
}

// Runs a Python program on `path`; its exit status.
int python(const std::string& program, const fs::path& path) {
  fs::path script = path.parent_path() / "check.py";
  std::ofstream(script) << program;
  return std::system(("python3 " + script.string() + " " + path.string() + " >/dev/null 2>&1").c_str());
}

}  // namespace

TEST_CASE("checkpoint: trees round trip through safetensors and npz, leaves named by their path") {
  fs::path dir = scratch_dir();
  Model m = make_model();
  auto names = fx::checkpoint_io::leaf_names(m);
  CHECK(names[0] == "encoder.weight");
  CHECK(names[2] == "norms.0.scale");
  CHECK(names.back() == "extra.u32");
  for (const char* file : {"m.safetensors", "m.npz"}) {
    fs::path p = dir / file;
    fx::save(p.string(), m);
    check_same(fx::load(p.string(), m), m);
  }
  // Without a bfloat16 leaf, .npz holds the same; bfloat16 goes to safetensors only.
  m.extra["bf16"] = fx::astype(fx::array({0.5f, 3.f}), fx::bfloat16);
  fx::save((dir / "bf.safetensors").string(), m);
  check_same(fx::load((dir / "bf.safetensors").string(), m), m);
  CHECK_THROWS_AS(fx::save((dir / "bf.npz").string(), m), fx::TypeError);
  // A lone array in .npy; a default-constructed struct as the structure.
  fx::Array a = fx::reshape(fx::arange(6.0, 12.0), {2, 3});
  fx::save((dir / "a.npy").string(), a);
  CHECK(fx::load<fx::Array>((dir / "a.npy").string()).to_vector<float>() == a.to_vector<float>());
  fx::nn::Linear lin = fx::nn::Linear::init(fx::random::key(1), 4, 4);
  fx::save((dir / "lin.safetensors").string(), lin);
  auto back = fx::load<fx::nn::Linear>((dir / "lin.safetensors").string());
  CHECK(back.weight.to_vector<float>() == lin.weight.to_vector<float>());
  // Optimizer state is a tree too.
  auto opt = fx::optim::adam(0.1);
  auto state = opt.update(lin, opt.init(lin), lin).second;
  fx::save((dir / "opt.npz").string(), state);
  auto state_back = fx::load((dir / "opt.npz").string(), state);
  CHECK(state_back[0][0].item<int32_t>() == 1);
  CHECK(state_back[1][0].to_vector<float>() == state[1][0].to_vector<float>());
  fs::remove_all(dir);
}

TEST_CASE("checkpoint: files read back by Python's standard library (and safetensors when installed)") {
  if (std::system("python3 -c 'import json, struct, zipfile' >/dev/null 2>&1") != 0) {
    MESSAGE("python3 is not available: the independent reader is skipped");
    return;
  }
  fs::path dir = scratch_dir();
  std::map<std::string, fx::Array> tree{{"w", fx::array({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}})},
                                         {"n", fx::array({int64_t(-5), int64_t(9)})}};
  fx::save((dir / "t.safetensors").string(), tree);
  fx::save((dir / "t.npz").string(), tree);
  const std::string safetensors_reader = R"PY(
import json, struct, sys
data = open(sys.argv[1], 'rb').read()
(n,) = struct.unpack('<Q', data[:8])
header = json.loads(data[8:8 + n])
body = data[8 + n:]
w, k = header['w'], header['n']
assert w['dtype'] == 'F32' and w['shape'] == [2, 3], w
assert k['dtype'] == 'I64' and k['shape'] == [2], k
b, e = w['data_offsets']
assert list(struct.unpack('<6f', body[b:e])) == [1, 2, 3, 4, 5, 6]
b, e = k['data_offsets']
assert list(struct.unpack('<2q', body[b:e])) == [-5, 9]
try:
    from safetensors.numpy import load_file
except ImportError:
    sys.exit(0)
t = load_file(sys.argv[1])
assert t['w'].tolist() == [[1, 2, 3], [4, 5, 6]] and t['n'].tolist() == [-5, 9]
)PY";
  CHECK(python(safetensors_reader, dir / "t.safetensors") == 0);
  const std::string npz_reader = R"PY(
import ast, struct, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert sorted(z.namelist()) == ['n.npy', 'w.npy'], z.namelist()
assert z.testzip() is None
def npy(name):
    raw = z.read(name)
    assert raw[:6] == b'\x93NUMPY'
    (hlen,) = struct.unpack('<H', raw[8:10])
    assert (10 + hlen) % 64 == 0
    return ast.literal_eval(raw[10:10 + hlen].decode('latin1')), raw[10 + hlen:]
h, body = npy('w.npy')
assert h == {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}, h
assert list(struct.unpack('<6f', body)) == [1, 2, 3, 4, 5, 6]
h, body = npy('n.npy')
assert h['descr'] == '<i8' and h['shape'] == (2,), h
)PY";
  CHECK(python(npz_reader, dir / "t.npz") == 0);
  fs::remove_all(dir);
}

TEST_CASE("checkpoint: reads npz members numpy deflated (savez_compressed), written by Python's zipfile") {
  if (std::system("python3 -c 'import zipfile, zlib' >/dev/null 2>&1") != 0) {
    MESSAGE("python3 is not available: skipped");
    return;
  }
  fs::path dir = scratch_dir();
  const std::string writer = R"PY(
import struct, sys, zipfile
header = "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }"
header += ' ' * ((64 - (10 + len(header) + 1) % 64) % 64) + '\n'
npy = b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) + header.encode() + struct.pack('<3d', 0.5, 1.5, -2.0)
with zipfile.ZipFile(sys.argv[1], 'w', compression=zipfile.ZIP_DEFLATED) as z:
    with z.open('x.npy', 'w', force_zip64=True) as f:
        f.write(npy)
)PY";
  REQUIRE(python(writer, dir / "py.npz") == 0);
  auto back = fx::load<std::map<std::string, fx::Array>>((dir / "py.npz").string(), {{"x", fx::Array()}});
  CHECK(back.at("x").to_vector<double>() == std::vector<double>{0.5, 1.5, -2.0});
  fs::remove_all(dir);
}

TEST_CASE("checkpoint: mismatches and bad files raise ShapeError, TypeError, ValueError, IOError") {
  fs::path dir = scratch_dir();
  fx::nn::Linear lin = fx::nn::Linear::init(fx::random::key(0), 3, 2);
  std::string p = (dir / "lin.safetensors").string();
  fx::save(p, lin);
  CHECK_THROWS_AS(fx::load(p, fx::nn::Linear::init(fx::random::key(0), 4, 2)), fx::ShapeError);
  CHECK_THROWS_AS(fx::load(p, fx::nn::Linear::init(fx::random::key(0), 3, 2, fx::nn::initializers::zeros(),
                                                   fx::nn::initializers::zeros(), fx::float64)),
                  fx::TypeError);
  CHECK_THROWS_AS(fx::load<fx::nn::LayerNorm>(p), fx::ValueError);            // no 'scale' in the file
  CHECK_THROWS_AS(fx::load<fx::nn::Embedding>(p), fx::ValueError);
  CHECK_THROWS_AS(fx::load<fx::nn::Linear>((dir / "missing.safetensors").string()), fx::IOError);
  std::ofstream(dir / "junk.safetensors") << "not a checkpoint at all";
  CHECK_THROWS_AS(fx::load<fx::nn::Linear>((dir / "junk.safetensors").string()), fx::IOError);
  std::ofstream(dir / "junk.npz") << "PK not really";
  CHECK_THROWS_AS(fx::load<fx::nn::Linear>((dir / "junk.npz").string()), fx::IOError);
  CHECK_THROWS_AS(fx::save((dir / "x.pt").string(), lin), fx::ValueError);
  CHECK_THROWS_AS(fx::save((dir / "two.npy").string(), lin), fx::ValueError);
  // safetensors has no complex dtype: a TypeError naming the array and .npz, and no file written;
  // .npz keeps complex arrays.
  std::map<std::string, fx::Array> z{{"z", fx::complex(fx::array({1.f, 2.f}), fx::array({-3.f, 0.5f}))}};
  const std::string e = test_helpers::error_of<fx::TypeError>([&] { fx::save((dir / "z.safetensors").string(), z); });
  CHECK_MESSAGE(e.find("'z' is c64[2]") != std::string::npos, e);
  CHECK_MESSAGE(e.find(".npz") != std::string::npos, e);
  CHECK_FALSE(fs::exists(dir / "z.safetensors"));
  fx::save((dir / "z.npz").string(), z);
  const fx::Array back = fx::load<std::map<std::string, fx::Array>>((dir / "z.npz").string()).at("z");
  CHECK(back.dtype() == fx::complex64);
  CHECK(fx::allclose(back, z.at("z")));
  fs::remove_all(dir);
}

TEST_CASE("checkpoint: a failed write keeps the old file and leaves no temporary behind") {
  fs::path dir = scratch_dir();
  std::string p = (dir / "a.npy").string();
  fx::save(p, fx::array({1.f, 2.f}));
  // bfloat16 has no NumPy dtype: the write fails after the temporary file was opened.
  CHECK_THROWS_AS(fx::save(p, fx::astype(fx::array({3.f}), fx::bfloat16)), fx::TypeError);
  CHECK(fx::load<fx::Array>(p).to_vector<float>() == std::vector<float>{1.f, 2.f});
  // A tracer cannot be saved either: the same guarantee.
  CHECK_THROWS(fx::make_ir([&](const fx::Array& x) {
    fx::save(p, x);
    return x;
  })(fx::ones({2})));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().filename() != "check.py";
  CHECK(files == 1);
  CHECK(fx::load<fx::Array>(p).to_vector<float>() == std::vector<float>{1.f, 2.f});
  // Overwriting replaces the content whole.
  fx::save(p, fx::array({7.0, 8.0, 9.0}));
  CHECK(fx::load<fx::Array>(p).to_vector<double>() == std::vector<double>{7, 8, 9});
  // The file has the mode a plain open(O_CREAT, 0666) gives under the umask, not mkstemp's 0600.
  mode_t mask = ::umask(022);
  ::umask(mask);
  CHECK((unsigned(fs::status(p).permissions()) & 0777u) == (0666u & ~unsigned(mask)));
  fs::remove_all(dir);
}

TEST_CASE("checkpoint: load<std::map<std::string, Array>>(path) returns every array of the file") {
  fs::path dir = scratch_dir();
  std::map<std::string, fx::Array> saved{{"a", fx::array({1.f, 2.f})}, {"b.c", fx::array({int64_t(3)})}};
  for (const char* ext : {".safetensors", ".npz"}) {
    const std::string p = (dir / (std::string("all") + ext)).string();
    fx::save(p, saved);
    auto back = fx::load<std::map<std::string, fx::Array>>(p);
    REQUIRE(back.size() == 2);
    CHECK(back.at("a").to_vector<float>() == std::vector<float>{1.f, 2.f});
    CHECK(back.at("b.c").to_vector<int64_t>() == std::vector<int64_t>{3});
  }
  fx::save((dir / "one.npy").string(), fx::array({5.0}));
  CHECK(fx::load<std::map<std::string, fx::Array>>((dir / "one.npy").string()).at("arr_0").item<double>() == 5.0);
  fs::remove_all(dir);
}
