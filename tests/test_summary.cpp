// fx::summary::writer: the event file is read back here, independently of the writer -- records
// framed and checksummed (CRC-32C checked against published vectors first), Event and Summary
// protobufs decoded field by field, the PNG inflated back to its pixels -- and, where the
// `tensorboard` Python package is importable, by TensorBoard's own event reader (skipped otherwise).
#include <doctest/doctest.h>
#include <fluxion.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "tests/test_helpers.h"
#include "train/tfrecord.h"

namespace fx = fluxion;

namespace {

/// A decoded protobuf message: each field number to its values (varints and fixed-width numbers
/// as integers, length-delimited fields as bytes).
struct Proto {
  std::multimap<int, uint64_t> ints;
  std::multimap<int, std::string> bytes;
  std::string str(int f) const { return bytes.count(f) ? bytes.find(f)->second : std::string(); }
  uint64_t num(int f) const { return ints.count(f) ? ints.find(f)->second : 0; }
  double f64(int f) const {
    uint64_t b = num(f);
    double d;
    std::memcpy(&d, &b, 8);
    return d;
  }
  float f32(int f) const {
    uint32_t b = uint32_t(num(f));
    float v;
    std::memcpy(&v, &b, 4);
    return v;
  }
  Proto sub(int f) const;
};

uint64_t read_varint(const std::string& s, size_t& i) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    REQUIRE(i < s.size());
    const auto b = uint8_t(s[i++]);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
}

Proto decode(const std::string& s) {
  Proto p;
  for (size_t i = 0; i < s.size();) {
    const uint64_t key = read_varint(s, i);
    const int field = int(key >> 3), wire = int(key & 7);
    if (wire == 0) {
      p.ints.insert({field, read_varint(s, i)});
    } else if (wire == 1 || wire == 5) {
      const size_t n = wire == 1 ? 8 : 4;
      REQUIRE(i + n <= s.size());
      uint64_t v = 0;
      for (size_t k = 0; k < n; ++k) v |= uint64_t(uint8_t(s[i + k])) << (8 * k);
      p.ints.insert({field, v});
      i += n;
    } else {
      REQUIRE(wire == 2);
      const size_t n = size_t(read_varint(s, i));
      REQUIRE(i + n <= s.size());
      p.bytes.insert({field, s.substr(i, n)});
      i += n;
    }
  }
  return p;
}
Proto Proto::sub(int f) const { return decode(str(f)); }

std::vector<double> packed_doubles(const std::string& s) {
  std::vector<double> v(s.size() / 8);
  std::memcpy(v.data(), s.data(), v.size() * 8);
  return v;
}

uint64_t le(const std::string& s, size_t at, int n) {
  uint64_t v = 0;
  for (int k = 0; k < n; ++k) v |= uint64_t(uint8_t(s[at + size_t(k)])) << (8 * k);
  return v;
}

/// The Event messages of an event file, each record's length and CRCs checked.
std::vector<Proto> read_events(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string file(std::istreambuf_iterator<char>(in), {});
  std::vector<Proto> events;
  for (size_t i = 0; i < file.size();) {
    REQUIRE(i + 12 <= file.size());
    const uint64_t n = le(file, i, 8);
    CHECK(le(file, i + 8, 4) == fx::tfrecord::masked_crc32c(file.data() + i, 8));
    REQUIRE(i + 12 + n + 4 <= file.size());
    const std::string data = file.substr(i + 12, n);
    CHECK(le(file, i + 12 + n, 4) == fx::tfrecord::masked_crc32c(data.data(), data.size()));
    events.push_back(decode(data));
    i += 12 + n + 4;
  }
  return events;
}

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("fluxion_summary_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

/// The pixels of a PNG written by the writer: chunk CRCs checked, the IDAT inflated, filters (all 0) removed.
std::vector<uint8_t> png_pixels(const std::string& png, uint32_t* width, uint32_t* height, int* color_type) {
  REQUIRE(png.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](size_t at) {
    return uint32_t(uint8_t(png[at])) << 24 | uint32_t(uint8_t(png[at + 1])) << 16 |
           uint32_t(uint8_t(png[at + 2])) << 8 | uint32_t(uint8_t(png[at + 3]));
  };
  std::string idat;
  for (size_t i = 8; i < png.size();) {
    const uint32_t n = be32(i);
    const std::string type = png.substr(i + 4, 4);
    CHECK(be32(i + 8 + n) == uint32_t(crc32(0, reinterpret_cast<const Bytef*>(png.data() + i + 4), n + 4)));
    if (type == "IHDR") {
      *width = be32(i + 8), *height = be32(i + 12);
      *color_type = uint8_t(png[i + 17]);
      CHECK(uint8_t(png[i + 16]) == 8);
    }
    if (type == "IDAT") idat += png.substr(i + 8, n);
    i += 12 + n;
  }
  const int channels = *color_type == 0 ? 1 : *color_type == 2 ? 3 : *color_type == 6 ? 4 : 2;
  const size_t row = size_t(*width) * size_t(channels);
  std::vector<uint8_t> raw(size_t(*height) * (row + 1));
  uLongf size = uLongf(raw.size());
  REQUIRE(uncompress(raw.data(), &size, reinterpret_cast<const Bytef*>(idat.data()), uLong(idat.size())) == Z_OK);
  REQUIRE(size == raw.size());
  std::vector<uint8_t> pixels;
  for (size_t y = 0; y < *height; ++y) {
    CHECK(raw[y * (row + 1)] == 0);
    pixels.insert(pixels.end(), raw.begin() + long(y * (row + 1) + 1), raw.begin() + long((y + 1) * (row + 1)));
  }
  return pixels;
}

/// The one Summary.Value of a summary event.
Proto value_of(const Proto& event) { return event.sub(5).sub(1); }

}  // namespace

TEST_CASE("summary: CRC-32C against the published vectors, and the record framing") {
  using fx::tfrecord::crc32c;
  CHECK(crc32c("", 0) == 0u);
  CHECK(crc32c("123456789", 9) == 0xE3069283u);  // the check value of CRC-32C (Castagnoli)
  // RFC 3720 (iSCSI), appendix B.4: 32 bytes of zeros, of ones, ascending, descending.
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, '\0'), down(32, '\0');
  for (int i = 0; i < 32; ++i) up[size_t(i)] = char(i), down[size_t(i)] = char(31 - i);
  CHECK(crc32c(zeros.data(), 32) == 0x8A9136AAu);
  CHECK(crc32c(ones.data(), 32) == 0x62A8AB43u);
  CHECK(crc32c(up.data(), 32) == 0x46DD794Eu);
  CHECK(crc32c(down.data(), 32) == 0x113FDB5Cu);
  // The mask: rotate right by 15, add 0xa282ead8 (TensorFlow's record format).
  const uint32_t c = crc32c("123456789", 9);
  CHECK(fx::tfrecord::masked_crc32c("123456789", 9) == ((c >> 15 | c << 17) + 0xa282ead8u));
  const std::string r = fx::tfrecord::frame("abc");
  REQUIRE(r.size() == 8 + 4 + 3 + 4);
  CHECK(le(r, 0, 8) == 3);
  CHECK(r.substr(12, 3) == "abc");
  CHECK(le(r, 15, 4) == fx::tfrecord::masked_crc32c("abc", 3));
}

TEST_CASE("summary: scalars, histograms, text and the graph decode back to what was written") {
  const auto dir = fresh_dir("fields");
  std::string path;
  const fx::Program program = fx::make_ir([](const fx::Array& x) { return fx::sin(x) * 2.f; })(fx::ones({3}));
  {
    fx::summary::writer tb(dir.string());
    path = tb.path();
    CHECK(std::filesystem::path(path).parent_path() == dir);
    CHECK(std::filesystem::path(path).filename().string().rfind("events.out.tfevents.", 0) == 0);
    tb.scalar("train/loss", 0.25, 7);
    tb.scalar("train/acc", fx::array(0.75f), 8);
    tb.histogram("w", fx::array({0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, NAN}), 9, 4);
    tb.text("notes", "**lr** = 1e-3", 10);
    tb.graph(program);
  }
  const std::vector<Proto> ev = read_events(path);
  REQUIRE(ev.size() == 6);
  CHECK(ev[0].str(3) == "brain.Event:2");
  CHECK(std::abs(ev[0].f64(1) - double(std::time(nullptr))) < 600);
  CHECK(ev[1].num(2) == 7);
  CHECK(value_of(ev[1]).str(1) == "train/loss");
  CHECK(value_of(ev[1]).f32(2) == 0.25f);
  CHECK(ev[2].num(2) == 8);
  CHECK(value_of(ev[2]).f32(2) == 0.75f);
  // The histogram: NaN left out; 4 buckets of width 1.75 over [0, 7], named by their right edges.
  const Proto h = value_of(ev[3]).sub(5);
  CHECK(h.f64(1) == 0.0);
  CHECK(h.f64(2) == 7.0);
  CHECK(h.f64(3) == 8.0);
  CHECK(h.f64(4) == 28.0);
  CHECK(h.f64(5) == 140.0);
  CHECK(packed_doubles(h.str(6)) == std::vector<double>{1.75, 3.5, 5.25, 7.0});
  CHECK(packed_doubles(h.str(7)) == std::vector<double>{2, 2, 2, 2});
  // Text: the text plugin's metadata and a scalar DT_STRING tensor.
  const Proto t = value_of(ev[4]);
  CHECK(t.str(1) == "notes");
  CHECK(t.sub(9).sub(1).str(1) == "text");
  CHECK(t.sub(8).num(1) == 7);
  CHECK(t.sub(8).str(8) == "**lr** = 1e-3");
  // The graph: a node per input, equation, literal and output, each input naming an earlier node.
  const Proto g = decode(ev[5].str(4));
  std::vector<Proto> nodes;
  for (auto [it, end] = g.bytes.equal_range(1); it != end; ++it) nodes.push_back(decode(it->second));
  REQUIRE(nodes.size() == program.invars.size() + program.eqns.size() + 1 + program.outvars.size());
  std::set<std::string> seen;
  for (const Proto& n : nodes) {
    for (auto [it, end] = n.bytes.equal_range(3); it != end; ++it) CHECK(seen.count(it->second));
    seen.insert(n.str(1));
  }
  CHECK(nodes[1].str(2) == "sin");
  CHECK(nodes[1].str(1) == "sin_0");
  CHECK(nodes[1].str(3) == "in_0");
  CHECK(nodes[3].str(2) == "mul");
  CHECK(nodes[3].sub(5).sub(2).str(2) == "f32[3]");
  std::filesystem::remove_all(dir);
}

TEST_CASE("summary: images are PNGs of the pixels given (uint8 as is, floats scaled from [0,1])") {
  const auto dir = fresh_dir("images");
  std::vector<uint8_t> rgb(2 * 3 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = uint8_t(i * 13);
  std::string path;
  {
    fx::summary::writer tb(dir.string());
    path = tb.path();
    tb.image("rgb", fx::array(rgb, {2, 3, 3}), 1);
    tb.image("grey", fx::array({{0.f, 0.5f}, {1.f, 2.f}}), 2);  // 2.0 is clipped to white
  }
  const std::vector<Proto> ev = read_events(path);
  REQUIRE(ev.size() == 3);
  const Proto img = value_of(ev[1]).sub(4);
  CHECK(img.num(1) == 2);
  CHECK(img.num(2) == 3);
  CHECK(img.num(3) == 3);
  uint32_t w = 0, h = 0;
  int color = -1;
  CHECK(png_pixels(img.str(4), &w, &h, &color) == rgb);
  CHECK((w == 3 && h == 2 && color == 2));
  const Proto grey = value_of(ev[2]).sub(4);
  CHECK(png_pixels(grey.str(4), &w, &h, &color) == std::vector<uint8_t>{0, 128, 255, 255});
  CHECK((w == 2 && h == 2 && color == 0));
  std::filesystem::remove_all(dir);
}

TEST_CASE("summary: written through by default; with flush_seconds, buffered until flush() or the end") {
  const auto dir = fresh_dir("flush");
  auto size = [](const std::string& p) { return std::filesystem::file_size(p); };
  fx::summary::writer now(dir.string());
  const auto header = size(now.path());
  now.scalar("a", 1, 0);
  CHECK(size(now.path()) > header);
  std::string path;
  {
    fx::summary::writer later(dir.string(), 3600);
    path = later.path();
    CHECK(path != now.path());
    const auto start = size(path);
    later.scalar("a", 1, 0);
    later.scalar("a", 2, 1);
    CHECK(size(path) == start);
    later.flush();
    CHECK(read_events(path).size() == 3);
    later.scalar("a", 3, 2);
  }
  CHECK(read_events(path).size() == 4);  // the destructor wrote the last one
  std::filesystem::remove_all(dir);
}

TEST_CASE("summary: bad input is a typed error naming the call and the line") {
  const auto dir = fresh_dir("errors");
  fx::summary::writer tb(dir.string());
  using test_helpers::error_of;
  std::string e = error_of([&] { tb.scalar("", 1.0, 0); });
  CHECK(e.rfind("ValueError: summary::scalar", 0) == 0);
  CHECK(e.find("test_summary.cpp") != std::string::npos);
  e = error_of([&] { tb.image("x", fx::zeros({2, 3, 5}), 0); });
  CHECK(e.rfind("ValueError: summary::image(f32[2,3,5])", 0) == 0);
  CHECK(e.find("test_summary.cpp") != std::string::npos);
  CHECK(error_of([&] { tb.image("x", fx::zeros({2, 2}, fx::int32), 0); }).rfind("TypeError: summary::image", 0) == 0);
  CHECK(error_of([&] { tb.histogram("h", fx::array({NAN, INFINITY}), 0); }).find("no finite value") != std::string::npos);
  CHECK(error_of([&] { tb.histogram("h", fx::ones({3}), 0, 0); }).find("bins must be at least 1") != std::string::npos);
  CHECK(error_of([&] { tb.scalar("s", fx::ones({2}), 0); }).rfind("ValueError: summary::scalar(f32[2])", 0) == 0);
  // A directory that cannot be made: under a regular file.
  const std::string blocked = (dir / "file").string();
  std::ofstream(blocked) << "x";
  CHECK(error_of([&] { fx::summary::writer(blocked + "/run"); }).rfind("IOError: " + blocked, 0) == 0);
  std::filesystem::remove_all(dir);
}

namespace {

std::string tensorboard_python() {
  for (const char* var : {"FLUXION_TEST_TENSORBOARD_PYTHON", "FLUXION_TEST_PYTHON"}) {
    const char* p = std::getenv(var);
    if (p && *p && std::system((std::string(p) + " -c 'import tensorboard' >/dev/null 2>&1").c_str()) == 0) return p;
  }
  return std::system("python3 -c 'import tensorboard' >/dev/null 2>&1") == 0 ? "python3" : "";
}

}  // namespace

TEST_CASE("summary: TensorBoard's own reader loads the run (skipped where tensorboard is not importable)" *
          doctest::skip(tensorboard_python().empty())) {
  const auto dir = fresh_dir("tensorboard");
  {
    fx::summary::writer tb(dir.string());
    for (int step = 0; step < 3; ++step) tb.scalar("loss", 1.0 / (step + 1), step);
    tb.histogram("w", fx::array({1.f, 2.f, 2.f, 3.f}), 0, 3);
    tb.image("img", fx::ones({4, 5, 3}, fx::uint8), 0);
    tb.text("note", "hello", 0);
    tb.graph(fx::make_ir([](const fx::Array& x) { return fx::exp(x) + 1.f; })(fx::ones({2})));
  }
  const std::string script = (dir / "read.py").string();
  std::ofstream(script) << R"(import sys
from tensorboard.backend.event_processing import event_accumulator as ea
acc = ea.EventAccumulator(sys.argv[1], size_guidance={ea.TENSORS: 0, ea.SCALARS: 0})
acc.Reload()
tags = acc.Tags()
print('scalars', ' '.join('%d:%.6f' % (e.step, e.value) for e in acc.Scalars('loss')))
h = acc.Histograms('w')[0].histogram_value
print('histogram', h.min, h.max, h.num, list(h.bucket))
i = acc.Images('img')[0]
print('image', i.width, i.height, len(i.encoded_image_string) > 0)
t = acc.Tensors('note')[0].tensor_proto.string_val[0].decode()
print('text', t)
g = acc.Graph()
print('graph', len(g.node), ' '.join(n.op for n in g.node))
)";
  const std::string out = (dir / "out.txt").string();
  const int rc = std::system((tensorboard_python() + " " + script + " " + dir.string() + " >" + out + " 2>&1").c_str());
  std::ifstream in(out);
  const std::string text(std::istreambuf_iterator<char>(in), {});
  INFO(text);
  REQUIRE(rc == 0);
  CHECK(text.find("scalars 0:1.000000 1:0.500000 2:0.333333\n") != std::string::npos);
  CHECK(text.find("histogram 1.0 3.0 4.0 [1.0, 2.0, 1.0]\n") != std::string::npos);
  CHECK(text.find("image 5 4 True\n") != std::string::npos);
  CHECK(text.find("text hello\n") != std::string::npos);
  CHECK(text.find("graph 5 Input exp Literal 1.0 add Output\n") != std::string::npos);
  std::filesystem::remove_all(dir);
}
