#include "ir/array.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <ostream>
#include <string>

#include "ir/program.h"
#include "memory/buffer.h"

namespace fluxion {

const ArrayImpl& Array::checked() const {
  if (!impl_) throw ValueError("ValueError: use of an empty Array handle (default-constructed or moved from)");
  return *impl_;
}

namespace {
[[noreturn]] void concretization(const ArrayImpl& a, const char* what, SourceLoc loc) {
  throw ConcretizationError(std::string("ConcretizationError: ") + what + "() at " + loc.str() +
                            " asks for the value of a traced array " + a.aval.str() +
                            // A tracer without a line is an argument of the transformed function.
                            (a.loc.known() ? " (created at " + a.loc.str() + ")"
                                           : " (an argument of the transformed function)") +
                            ". Inside make_ir/grad/vmap/jit values are abstract. Use fx::where for elementwise "
                            "choices, fx::cond/fx::switch_ for branches and fx::while_loop/fx::fori_loop for "
                            "loops whose trip count depends on data.");
}
}  // namespace

void Array::read(void* dst, DType as, size_t count, const char* what, SourceLoc loc) const {
  const ArrayImpl& a = checked();
  if (a.trace) concretization(a, what, loc);
  if (count != size_t(a.aval.size()))
    throw ValueError(std::string("ValueError: ") + what + "() at " + loc.str() + " on an array of type " +
                     a.aval.str() + ": only one-element arrays have an item()");
  const char* src = static_cast<const char*>(host_data(a));
  size_t in_size = itemsize(a.aval.dtype), out_size = itemsize(as);
  char* out = static_cast<char*>(dst);
  for (size_t i = 0; i < count; ++i) {
    Literal l = Literal::load(src + i * in_size, a.aval.dtype);
    if (is_inexact(as)) {  // complex -> real drops the imaginary part, as numpy's astype does
      Literal::of_complex(l.as_double(), l.im, as).store(out + i * out_size);
    } else if (is_inexact(a.aval.dtype)) {
      Literal::of_int(int64_t(l.f), as).store(out + i * out_size);
    } else {
      Literal::of_int(is_unsigned_int(a.aval.dtype) ? int64_t(l.u) : l.i, as).store(out + i * out_size);
    }
  }
}

Array::operator bool() const {
  const ArrayImpl& a = checked();
  if (a.trace) concretization(a, "operator bool", a.loc);
  if (a.aval.size() != 1)
    throw ValueError("ValueError: the truth value of an array of type " + a.aval.str() +
                     " is ambiguous; use fx::any or fx::all");
  return Literal::load(host_data(a), a.aval.dtype).as_double() != 0;
}

const void* Array::data(SourceLoc loc) const {
  const ArrayImpl& a = checked();
  if (a.trace) concretization(a, "data", loc);
  return host_data(a);
}

// ---- devices and shards ---------------------------------------------------------------------------
namespace {
// Copies every block into one host buffer, each from the first shard that holds it. A block no
// shard of this process holds lives in another process: the global value cannot be read here.
std::shared_ptr<Buffer> gather(const AbstractArray& global, const Sharding& s) {
  auto out = Buffer::allocate(global.nbytes());
  const Mesh& mesh = *s.layout.mesh;
  const Shape block = block_shape(mesh, s.layout.spec, global.shape);
  std::vector<char> done(size_t(mesh.size()), 0);  // per block (there are at most mesh.size())
  size_t covered = 0, blocks = 1;
  for (size_t d = 0; d < global.shape.size(); ++d) blocks *= size_t(blocks_along(mesh, s.layout.spec, d));
  for (const Array& shard : s.shards) {
    const int64_t k = mesh.position(shard.impl()->buffer->device);
    const std::vector<int64_t> idx = block_index(mesh, s.layout.spec, k, global.shape.size());
    size_t flat = 0;
    std::vector<int64_t> start(idx.size());
    for (size_t d = 0; d < idx.size(); ++d) {
      flat = flat * size_t(blocks_along(mesh, s.layout.spec, d)) + size_t(idx[d]);
      start[d] = idx[d] * block[d];
    }
    if (done[flat]) continue;
    done[flat] = 1;
    ++covered;
    copy_block_in(out->data, global.shape, host_data(*shard.impl()), block, start, itemsize(global.dtype));
  }
  if (covered != blocks)
    throw DeviceError("DeviceError: reading the sharded array " + global.str() + " (" + s.layout.str() +
                      "): this process holds " + std::to_string(covered) + " of its " + std::to_string(blocks) +
                      " blocks; the others live in other processes (read shards(), or gather inside the program)");
  return out;
}
}  // namespace

void* host_data(const ArrayImpl& a) {
  if (a.buffer) return const_cast<void*>(a.buffer->host_bytes());
  if (a.deleted) throw ValueError(*a.deleted);
  if (!a.sharding) throw ValueError("ValueError: an array without data (internal)");
  Sharding& s = *a.sharding;
  std::call_once(s.gather_once, [&] { s.gathered = gather(a.aval, s); });
  return s.gathered->data;
}

Device Array::device(std::source_location loc) const {
  const ArrayImpl& a = checked();
  if (a.trace) concretization(a, "device", loc);
  if (a.sharding) {
    std::string names;
    for (const Device& d : a.sharding->layout.mesh->devices) names += (names.empty() ? "" : ", ") + d.str();
    throw DeviceError("DeviceError: device() at " + SourceLoc(loc).str() + ": the array " + a.aval.str() +
                      " is sharded over " + names + " (" + a.sharding->layout.spec.str() +
                      "); shards() gives the per-device pieces");
  }
  if (a.deleted) throw ValueError(*a.deleted);
  return a.buffer->device;
}

void Array::block_until_ready() const {
  const ArrayImpl& a = checked();
  if (a.buffer) a.buffer->synchronize();
  if (a.sharding)
    for (const Array& s : a.sharding->shards) s.block_until_ready();
}

NamedSharding Array::sharding(std::source_location loc) const {
  const ArrayImpl& a = checked();
  if (a.trace) concretization(a, "sharding", loc);
  if (a.sharding) return a.sharding->layout;
  if (a.deleted) throw ValueError(*a.deleted);
  Mesh one;
  one.devices.push_back(a.buffer->device);
  return NamedSharding(std::move(one), PartitionSpec{});
}

std::vector<Array> Array::shards() const {
  const ArrayImpl& a = checked();
  if (a.sharding) return a.sharding->shards;
  return {*this};
}

// ---- numpy-like printing ------------------------------------------------------------------------
namespace {
std::string format_element(const Literal& l, bool all_integral) {
  if (l.dtype == DType::bool_) return l.i ? "True" : "False";
  if (!is_float(l.dtype)) return l.value_str();
  double v = l.f;
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (all_integral) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 0);
    return std::string(buf, r.ptr) + ".";
  }
  char buf[64];
  std::to_chars_result r;
  if (l.dtype == DType::float64)
    r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 8);
  else
    r = std::to_chars(buf, buf + sizeof buf, float(v), std::chars_format::general, 8);
  std::string s(buf, r.ptr);
  // numpy style: drop trailing zeros of the mantissa but keep the point.
  if (s.find('e') == std::string::npos && s.find('.') == std::string::npos) s += ".";
  return s;
}

void print_rec(std::ostream& os, const std::vector<std::string>& cells, const Shape& shape, size_t dim, size_t& pos,
               size_t width, int indent, bool summarize) {
  if (shape.rank() == 0) {
    os << cells[0];
    return;
  }
  os << '[';
  int64_t n = shape[dim];
  const int64_t edge = 3;
  int64_t inner = 1;
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * edge && i == edge) {
      os << (dim + 1 == shape.size() ? " ..." : "\n" + std::string(size_t(indent) + 1, ' ') + "...");
      pos += size_t((n - 2 * edge) * inner);
      i = n - edge - 1;
      continue;
    }
    if (i) {
      if (dim + 1 == shape.size())
        os << ' ';
      else
        os << std::string(shape.size() - dim - 1, '\n') << std::string(size_t(indent) + 1, ' ');
    }
    if (dim + 1 == shape.size()) {
      const std::string& c = cells[pos++];
      os << std::string(width > c.size() ? width - c.size() : 0, ' ') << c;
    } else {
      print_rec(os, cells, shape, dim + 1, pos, width, indent + 1, summarize);
    }
  }
  os << ']';
}
}  // namespace

std::ostream& operator<<(std::ostream& os, const Array& a) {
  if (!a.valid()) return os << "Array(<empty>)";
  if (a.is_tracer()) return os << "Traced<" << a.aval().str() << ">";
  const AbstractArray& av = a.aval();
  const char* src = static_cast<const char*>(a.data());
  size_t isz = itemsize(av.dtype);
  bool summarize = av.size() > 1000;
  std::vector<Literal> vals;
  vals.reserve(size_t(av.size()));
  for (int64_t i = 0; i < av.size(); ++i) vals.push_back(Literal::load(src + size_t(i) * isz, av.dtype));
  bool all_integral = is_float(av.dtype);
  for (const Literal& l : vals)
    if (is_float(av.dtype) && (!std::isfinite(l.f) || l.f != std::floor(l.f) || std::fabs(l.f) >= 1e16))
      all_integral = false;
  std::vector<std::string> cells;
  cells.reserve(vals.size());
  size_t width = 0;
  for (const Literal& l : vals) {
    cells.push_back(format_element(l, all_integral));
    width = std::max(width, cells.back().size());
  }
  size_t pos = 0;
  print_rec(os, cells, av.shape, 0, pos, width, 0, summarize);
  return os;
}

}  // namespace fluxion
