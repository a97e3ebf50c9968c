// Hostile files through every reader (.npy, .npz, .safetensors, IDX): each is a typed error -- an
// IOError, or a ShapeError for a shape no array can have -- that names the file, what is wrong and
// where, never a crash, a read past the buffer, an exception of the standard library, or an array
// that "loads" (issue 35). The table below is docs/reliability.md's table of bad inputs.
#include <doctest/doctest.h>
#include <fluxion.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "test_helpers.h"

namespace fx = fluxion;
namespace fs = std::filesystem;

namespace {

void le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += char((v >> (8 * i)) & 0xFF);
}
void be32(std::string& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out += char((v >> s) & 0xFF);
}

// A version 1.0 .npy file: the header dict as given, then `data`.
std::string npy(const std::string& descr, const std::string& shape, const std::string& data = "") {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }\n";
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  le(out, dict.size(), 2);
  return out + dict + data;
}

// A zip of stored members; `central_extra` is written into each central directory entry's extra
// field, with `xlen` as the length it declares (a lie when they differ), and `usize`/`local` override
// the central entry's fields where not ~0.
struct ZipTweaks {
  std::string central_extra;
  uint64_t xlen = ~0ull, usize = ~0ull, local = ~0ull, method = 0, cdir = ~0ull;
};
std::string zip(const std::vector<std::pair<std::string, std::string>>& members, const ZipTweaks& t = {}) {
  std::string out, central;
  for (const auto& [name, data] : members) {
    const uint64_t at = out.size();
    le(out, 0x04034b50, 4), le(out, 20, 2), le(out, 0, 2), le(out, t.method, 2), le(out, 0, 4), le(out, 0, 4);
    le(out, data.size(), 4), le(out, data.size(), 4), le(out, name.size(), 2), le(out, 0, 2);
    out += name + data;
    le(central, 0x02014b50, 4), le(central, 20, 2), le(central, 20, 2), le(central, 0, 2), le(central, t.method, 2);
    le(central, 0, 4), le(central, 0, 4), le(central, data.size(), 4);
    le(central, t.usize != ~0ull ? t.usize : data.size(), 4);
    le(central, name.size(), 2), le(central, t.xlen != ~0ull ? t.xlen : t.central_extra.size(), 2), le(central, 0, 2);
    le(central, 0, 2), le(central, 0, 2), le(central, 0, 4), le(central, t.local != ~0ull ? t.local : at, 4);
    central += name + t.central_extra;
  }
  const uint64_t cdir = out.size();
  out += central;
  le(out, 0x06054b50, 4), le(out, 0, 4), le(out, members.size(), 2), le(out, members.size(), 2);
  le(out, central.size(), 4), le(out, t.cdir != ~0ull ? t.cdir : cdir, 4), le(out, 0, 2);
  return out;
}

std::string safetensors(const std::string& header, const std::string& data = "") {
  std::string out;
  le(out, header.size(), 8);
  return out + header + data;
}

std::string idx_u8(const std::vector<uint32_t>& dims, const std::string& data = "") {
  std::string out{'\0', '\0', '\x08', char(dims.size())};
  for (uint32_t d : dims) be32(out, d);
  return out + data;
}

// A gzip file holding `data` in one stored (uncompressed) deflate block, as gzip -0 would.
std::string gzip_stored(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;  // CRC-32 (IEEE), bit by bit: the gzip trailer's check
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  out += '\x01';  // the final block, stored
  le(out, data.size(), 2), le(out, ~data.size() & 0xFFFF, 2);
  out += data;
  le(out, ~crc, 4), le(out, data.size(), 4);
  return out;
}

// CIFAR-10 records of `label` with 3072 image bytes each.
std::string cifar(std::initializer_list<int> labels) {
  std::string out;
  for (int l : labels) out += char(l) + std::string(3072, char(l * 3));
  return out;
}

struct BadFile {
  const char* what;      // the case, as the table in docs/reliability.md names it
  const char* name;      // the file's name (its extension picks the reader)
  std::string bytes;
  const char* kind;      // "IOError" or "ShapeError"
  std::vector<std::string> says;  // substrings the message must hold (besides the file's path)
};

std::vector<BadFile> bad_files() {
  const std::string four_floats(16, '\0');
  ZipTweaks long_extra;  // the issue's case: an extra field whose length runs past the end
  long_extra.central_extra = std::string("\x01\x00\x08\x00", 4) + std::string(8, '\xff');
  long_extra.xlen = 0xFFFF;
  ZipTweaks short_zip64;  // a zip64 field too short for the sizes it must hold
  short_zip64.central_extra = std::string("\x01\x00\x04\x00\0\0\0\0", 8);
  short_zip64.usize = 0xFFFFFFFFu;
  ZipTweaks far_local, far_cdir, huge_inflate;
  far_local.local = 1u << 30;
  far_cdir.cdir = 1u << 30;
  huge_inflate.method = 8, huge_inflate.usize = 0xFFFFFFF0u;
  const std::string a = npy("<f4", "(4,)", four_floats);
  return {
      {"npy: negative dimension", "neg.npy", npy("<f4", "(-4,)", four_floats), "ShapeError", {"load(", "negative dimension", "(-4,)"}},
      {"npy: a 20-digit dimension", "big.npy", npy("<f4", "(99999999999999999999,)"), "ShapeError", {"load(", "past int64"}},
      {"npy: element count past int64", "wrap.npy", npy("|u1", "(4294967296, 4294967296)"), "ShapeError", {"more elements than an int64"}},
      {"npy: byte count past int64", "bytes.npy", npy("<f8", "(2305843009213693952,)"), "ShapeError", {"more bytes than an int64"}},
      {"npy: shape not a tuple of integers", "junk.npy", npy("<f4", "(2 2)", four_floats), "IOError", {"not a tuple of integers"}},
      {"npy: data shorter than the shape", "short.npy", npy("<f4", "(5,)", four_floats), "IOError", {"16 bytes, the header says 20"}},
      {"npy: header longer than the file", "trunc.npy", npy("<f4", "(4,)").substr(0, 20), "IOError", {"truncated"}},
      {"npz: extra field runs past the end", "extra.npz", zip({{"w.npy", a}}, long_extra), "IOError", {"central directory entry 0", "past the end"}},
      {"npz: zip64 field too short", "zip64.npz", zip({{"w.npy", a}}, short_zip64), "IOError", {"zip64 field", "too short"}},
      {"npz: local header outside the file", "local.npz", zip({{"w.npy", a}}, far_local), "IOError", {"member 'w.npy'", "no local header"}},
      {"npz: central directory outside the file", "cdir.npz", zip({{"w.npy", a}}, far_cdir), "IOError", {"central directory entry 0", "byte 1073741824"}},
      {"npz: inflated size beyond any deflate ratio", "bomb.npz", zip({{"w.npy", a}}, huge_inflate), "IOError", {"4294967280 bytes inflate from"}},
      {"npz: two members of one name", "twice.npz", zip({{"w.npy", a}, {"w.npy", a}}), "IOError", {"two arrays are named 'w'"}},
      {"npz: member with a negative dimension", "negm.npz", zip({{"w.npy", npy("<f4", "(-4,)", four_floats)}}), "ShapeError", {"w.npy", "negative dimension"}},
      {"safetensors: shape [-2,-2]", "neg.safetensors", safetensors(R"({"w":{"dtype":"F32","shape":[-2,-2],"data_offsets":[0,16]}})", four_floats), "ShapeError", {"load(", "tensor 'w'", "negative dimension"}},
      {"safetensors: element count past int64", "wrap.safetensors", safetensors(R"({"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})"), "ShapeError", {"tensor 'w'", "more elements than an int64"}},
      {"safetensors: a 20-digit dimension", "big.safetensors", safetensors(R"({"w":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,0]}})"), "IOError", {"does not fit in 64 bits", "at byte"}},
      {"safetensors: negative data offsets", "offs.safetensors", safetensors(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[-16,0]}})", four_floats), "IOError", {"tensor 'w'", "data_offsets"}},
      {"safetensors: offsets past the data", "range.safetensors", safetensors(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})", four_floats), "IOError", {"tensor 'w'", "[8, 24)"}},
      {"safetensors: shape not a list", "shape.safetensors", safetensors(R"({"w":{"dtype":"F32","shape":4,"data_offsets":[0,16]}})", four_floats), "IOError", {"not a list"}},
      {"safetensors: entry not an object", "entry.safetensors", safetensors(R"({"w":5})"), "IOError", {"tensor 'w'", "not an object"}},
      {"safetensors: bad \\u escape", "escape.safetensors", safetensors(R"({"\u00zz":{}})"), "IOError", {"four hex digits", "at byte"}},
      {"safetensors: a lone minus sign", "minus.safetensors", safetensors(R"({"w":{"dtype":"F32","shape":[-],"data_offsets":[0,0]}})"), "IOError", {"malformed number"}},
      {"safetensors: header length past the file", "hlen.safetensors", safetensors(R"({})").substr(0, 9), "IOError", {"header length exceeds the file"}},
      {"idx: dimensions whose product wraps", "wrap-idx1-ubyte", idx_u8({65536, 65536, 65536, 65536}), "ShapeError", {"read_idx(", "more elements than an int64"}},
      {"idx: data shorter than the dimensions", "short-idx1-ubyte", idx_u8({5}, "abc"), "IOError", {"3 bytes, the header says 5"}},
      {"idx: truncated header", "trunc-idx1-ubyte", idx_u8({5, 5}).substr(0, 7), "IOError", {"truncated IDX header"}},
      {"gzip: the stream cut before its trailer (all data there)", "cut-idx1-ubyte.gz", gzip_stored(idx_u8({2, 2}, "abcd")).substr(0, 31), "IOError", {"gzip stream ends early (unexpected end of file) after 16 bytes inflated", "truncated"}},
      {"gzip: the stream cut mid-data", "half-idx1-ubyte.gz", gzip_stored(idx_u8({2, 2}, "abcd")).substr(0, 20), "IOError", {"gzip stream ends early", "truncated"}},
      {"gzip: a data byte changed (its CRC)", "crc-idx1-ubyte.gz", gzip_stored(idx_u8({2, 2}, "abcd")).replace(27, 1, "x"), "IOError", {"read failed", "incorrect data check"}},
      {"cifar: a record's label past 9", "label/test_batch.bin", cifar({3, 10}), "IOError", {"record 1 has label 10"}},
      {"cifar: a size not a whole number of records", "size/test_batch.bin", cifar({3, 4}).substr(0, 5000), "IOError", {"size 5000 is not a multiple of a record"}},
      {"cifar: gzip cut at a record's end", "cut/test_batch.bin", gzip_stored(cifar({1, 2})).substr(0, 10 + 5 + 3073), "IOError", {"gzip stream ends early", "3073 bytes inflated"}},
  };
}

// The reader a file's name picks: fx::load for checkpoints, read_idx for IDX, cifar10_binary for
// a CIFAR-10 test batch (its folder).
void read_any(const fs::path& p) {
  const std::string s = p.string();
  if (p.filename() == "test_batch.bin") fx::data::cifar10_binary(p.parent_path().string(), "test");
  else if (s.find("idx") != std::string::npos) fx::data::read_idx(s);
  else fx::load<std::map<std::string, fx::Array>>(s);
}

}  // namespace

TEST_CASE("bad files: every reader gives a typed error naming the file, what and where") {
  const fs::path dir = fs::temp_directory_path() / ("fluxion_bad_files_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const BadFile& f : bad_files()) {
    const fs::path p = dir / f.name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << f.bytes;
    CAPTURE(f.what);
    std::string kind = "(no error)", message;
    try {
      read_any(p);
    } catch (const fx::ShapeError& e) {
      kind = "ShapeError", message = e.what();
    } catch (const fx::IOError& e) {
      kind = "IOError", message = e.what();
    } catch (const fx::Error& e) {
      kind = "another fx::Error", message = e.what();
    } catch (const std::exception& e) {
      kind = "a std::exception", message = e.what();
    }
    CAPTURE(message);
    CHECK(kind == f.kind);
    CHECK(message.rfind(std::string(f.kind) + ": ", 0) == 0);
    CHECK(message.find(p.string()) != std::string::npos);
    for (const std::string& s : f.says) {
      CAPTURE(s);
      CHECK(message.find(s) != std::string::npos);
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("bad files: the hand-made writers above make files the readers accept") {
  // So that each bad file differs from a good one only in what its case names.
  const fs::path dir = fs::temp_directory_path() / ("fluxion_good_files_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string floats;
  for (float v : {1.f, 2.f, 3.f, 4.f}) floats.append(reinterpret_cast<const char*>(&v), 4);
  std::ofstream(dir / "a.npy", std::ios::binary) << npy("<f4", "(2, 2)", floats);
  std::ofstream(dir / "a.npz", std::ios::binary) << zip({{"w.npy", npy("<f4", "(4,)", floats)}});
  std::ofstream(dir / "a.safetensors", std::ios::binary)
      << safetensors(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", floats);
  std::ofstream(dir / "a-idx1-ubyte", std::ios::binary) << idx_u8({2, 2}, "abcd");
  CHECK(fx::load<fx::Array>((dir / "a.npy").string()).shape() == fx::Shape{2, 2});
  CHECK(fx::load<std::map<std::string, fx::Array>>((dir / "a.npz").string()).at("w").to_vector<float>() ==
        std::vector<float>{1, 2, 3, 4});
  CHECK(fx::load<std::map<std::string, fx::Array>>((dir / "a.safetensors").string()).at("w").to_vector<float>() ==
        std::vector<float>{1, 2, 3, 4});
  CHECK(fx::data::read_idx((dir / "a-idx1-ubyte").string()).shape() == fx::Shape{2, 2});
  std::ofstream(dir / "b-idx1-ubyte.gz", std::ios::binary) << gzip_stored(idx_u8({2, 2}, "abcd"));
  CHECK(fx::data::read_idx((dir / "b-idx1-ubyte.gz").string()).to_vector<uint8_t>() == std::vector<uint8_t>{'a', 'b', 'c', 'd'});
  std::ofstream(dir / "test_batch.bin", std::ios::binary) << gzip_stored(cifar({1, 2}));
  CHECK(fx::data::cifar10_binary(dir.string(), "test").at("label").to_vector<int32_t>() == std::vector<int32_t>{1, 2});
  fs::remove_all(dir);
}

TEST_CASE("bad files: a gzip bomb is an IOError at FLUXION_MAX_FILE_MB, not an exhausted memory") {
  // 64 MiB of zeros deflate to about 64 KB; with the bound at 16 MiB the reader stops inflating there.
  const fs::path path = fs::temp_directory_path() / ("fluxion_bomb_" + std::to_string(::getpid()) + "-idx1-ubyte.gz");
  gzFile f = gzopen(path.c_str(), "wb9");
  REQUIRE(f);
  const std::string header = idx_u8({64 << 20}, "").substr(0, 8), zeros(1 << 20, '\0');
  gzwrite(f, header.data(), unsigned(header.size()));
  for (int i = 0; i < 64; ++i) gzwrite(f, zeros.data(), unsigned(zeros.size()));
  gzclose(f);
  CHECK(fs::file_size(path) < (1 << 20));
  {
    test_helpers::ScopedEnv bound("FLUXION_MAX_FILE_MB", "16");
    const std::string msg = test_helpers::error_of<fx::IOError>([&] { fx::data::read_idx(path.string()); });
    CHECK_MESSAGE(msg.find(path.string()) != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("inflates more than 16 MiB") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("FLUXION_MAX_FILE_MB") != std::string::npos, msg);
  }
  // Under the default bound (half the memory) the same file reads: the bound is not a size limit on data.
  CHECK(fx::data::read_idx(path.string()).shape() == fx::Shape{64 << 20});
  fs::remove(path);
}
