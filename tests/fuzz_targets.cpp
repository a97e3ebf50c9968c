// The fuzz targets (tests/fuzz_targets.h). The file readers take a path, so each input is written to
// a scratch file first (in /dev/shm where it exists: a write per input is cheap in memory).
#include "tests/fuzz_targets.h"

#include <fluxion.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "ir/serialize.h"
#include "train/checkpoint.h"
#include "train/data.h"

namespace fx = fluxion;
namespace fs = std::filesystem;
namespace ckpt = fluxion::checkpoint_io;

namespace fuzz_targets {

namespace {

// A finding: an input accepted that breaks a property (round trip, shape against bytes).
struct FuzzFinding : std::logic_error {
  using std::logic_error::logic_error;
};
void expect(bool ok, const std::string& what) {
  if (!ok) throw FuzzFinding("fuzz finding: " + what);
}

// The process's scratch folder, removed when the process exits normally (a fuzzer's crash leaves it).
struct Scratch {
  fs::path dir;
  Scratch() {
    fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    dir = base / ("fluxion_fuzz_" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
};
const fs::path& scratch() {
  static const Scratch s;
  return s.dir;
}

std::string put(const std::string& name, std::string_view bytes) {
  const std::string path = (scratch() / name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

// The array's bytes (compared whole by same(): a shape that claims more than was allocated is read
// past its buffer there, which ASan reports).
std::string_view bytes_of(const fx::Array& a) {
  return {static_cast<const char*>(a.data()), size_t(a.size()) * fx::itemsize(a.dtype())};
}

bool same(const fx::Array& a, const fx::Array& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && bytes_of(a) == bytes_of(b);
}

bool same(const ckpt::Entries& a, const ckpt::Entries& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || !same(a[i].array, b[i].array)) return false;
  return true;
}

// Accepted entries, written back in the same format and read again, are the same entries. (The
// writer may refuse what the reader took, e.g. a name it cannot store: that is an Error, not a
// finding.)
template <class Write, class Read>
void round_trip(const ckpt::Entries& got, const char* ext, Write write, Read read) {
  const std::string again = (scratch() / (std::string("again.") + ext)).string();
  try {
    write(again, got);
  } catch (const fx::Error&) {
    return;
  }
  expect(same(read(again), got), std::string(ext) + ": the arrays read back differ from the arrays written");
}

bool program_text(std::string_view bytes) {
  fx::Program p = fx::parse_program(bytes);
  const std::string text = p.str();
  fx::Program q = fx::parse_program(text);
  expect(q == p && q.str() == text, "parse_program(p.str()) is not p:\n" + text);
  return true;
}

bool program_serialized(std::string_view bytes) {
  fx::Program p = fx::deserialize(bytes);
  std::string text;
  try {
    text = fx::serialize(p);
  } catch (const fx::Error&) {
    return true;  // a program serialize refuses (no concrete constants): read, not written back
  }
  expect(fx::serialize(fx::deserialize(text)) == text, "deserialize(serialize(p)) is not p:\n" + text);
  return true;
}

bool safetensors(std::string_view bytes) {
  ckpt::Entries got = ckpt::read_safetensors(put("in.safetensors", bytes));
  round_trip(got, "safetensors", ckpt::write_safetensors, ckpt::read_safetensors);
  return true;
}

bool npz(std::string_view bytes) {
  ckpt::Entries got = ckpt::read_npz(put("in.npz", bytes));
  round_trip(got, "npz", ckpt::write_npz, ckpt::read_npz);
  return true;
}

bool npy(std::string_view bytes) {
  fx::Array a = ckpt::read_npy(put("in.npy", bytes));
  const std::string again = (scratch() / "again.npy").string();
  ckpt::write_npy(again, a);
  expect(same(ckpt::read_npy(again), a), "npy: the array read back differs from the array written");
  return true;
}

bool idx(std::string_view bytes) {
  fx::Array a = fx::data::read_idx(put("in.idx", bytes));
  // The data is what follows the header (4 bytes and 4 per dimension), exactly (in the file as
  // read: a gzip file is the IDX file once inflated).
  const bool gzip = bytes.size() >= 2 && bytes[0] == '\x1f' && bytes[1] == '\x8b';
  expect(gzip || 4 + 4 * size_t(a.ndim()) + bytes_of(a).size() == bytes.size(), "idx: the array does not cover the file");
  return true;
}

bool cifar(std::string_view bytes) {
  const fs::path dir = scratch() / "cifar";
  fs::create_directories(dir);
  std::ofstream((dir / "test_batch.bin").string(), std::ios::binary | std::ios::trunc)
      .write(bytes.data(), std::streamsize(bytes.size()));
  fx::data::Dataset d = fx::data::cifar10_binary(dir.string(), "test");
  const fx::Array& images = d.at("image");
  const fx::Array& labels = d.at("label");
  expect(size_t(images.size()) == bytes.size() / 3073 * 3072 && labels.size() == images.shape()[0],
         "cifar: the dataset does not cover the file");
  for (int32_t label : labels.to_vector<int32_t>()) expect(label >= 0 && label <= 9, "cifar: a label past 9");
  return true;
}

// A refusal with fluxion::Error is the right answer to bad input: false. Anything else escapes.
template <bool (*Run)(std::string_view)>
bool guarded(std::string_view bytes) {
  try {
    return Run(bytes);
  } catch (const fx::Error&) {
    return false;
  }
}

}  // namespace

const std::vector<Target>& all() {
  static const std::vector<Target> targets = {
      {"program_text", guarded<program_text>}, {"program_serialized", guarded<program_serialized>},
      {"safetensors", guarded<safetensors>},   {"npz", guarded<npz>},
      {"npy", guarded<npy>},                   {"idx", guarded<idx>},
      {"cifar", guarded<cifar>},
  };
  return targets;
}

const Target* find(std::string_view name) {
  for (const Target& t : all())
    if (name == t.name) return &t;
  return nullptr;
}

}  // namespace fuzz_targets
