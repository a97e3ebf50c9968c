#include "transforms/sharding.h"

#include <iostream>
#include <sstream>

#include "ir/trace.h"
#include "prims/shard_map.h"
#include "runtime/devices.h"
#include "runtime/mesh.h"

namespace fluxion {

namespace {
std::string list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return s;
}
}  // namespace

Mesh make_mesh(const std::vector<int64_t>& shape, const std::vector<std::string>& axis_names,
               const std::vector<Device>& devices, std::source_location loc) {
  Mesh m;
  m.shape = shape;
  m.axis_names = axis_names;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if (n > int64_t(devices.size())) {
    std::string have;
    for (const Device& d : devices) have += (have.empty() ? "" : ", ") + d.str();
    throw ValueError("ValueError: make_mesh at " + SourceLoc(loc).str() + ": a mesh of shape " + Shape(shape).str() +
                     " over the axes (" + list(axis_names) + ") needs " + std::to_string(n) + " devices, but there are " +
                     std::to_string(devices.size()) + " (" + have +
                     "); FLUXION_CPU_DEVICES sets the number of CPU devices");
  }
  if (n > 0) m.devices.assign(devices.begin(), devices.begin() + n);
  runtime::check_mesh(m, "make_mesh", loc);
  return m;
}

Mesh make_mesh(const std::vector<int64_t>& shape, const std::vector<std::string>& axis_names, std::source_location loc) {
  return make_mesh(shape, axis_names, devices(platform_name(default_device().platform)), loc);
}

NamedSharding replicated(const Mesh& mesh) { return NamedSharding(mesh, PartitionSpec{}); }

Array device_put(const Array& x, const NamedSharding& s, std::source_location loc) {
  return runtime::put_sharded(x, s, "device_put", loc);
}

Array with_sharding_constraint(const Array& x, const NamedSharding& s, std::source_location loc) {
  if (!x.valid()) throw ValueError("ValueError: with_sharding_constraint at " + SourceLoc(loc).str() + ": an empty Array handle");
  runtime::check_mesh(*s.mesh, "with_sharding_constraint", loc);
  check_layout(*s.mesh, s.spec, x.aval(), "with_sharding_constraint", loc);
  if (!is_tracing()) return runtime::put_sharded(x, s, "with_sharding_constraint", loc);
  Params p = mesh_params(*s.mesh);
  p.set("spec", specs_text({s.spec}));
  return bind1(Prim::sharding_constraint, {x}, p, loc);
}

namespace debug {

namespace {
// "cpu:0" or, for a block several devices hold, "cpu:0,2".
std::string holders(const std::vector<Device>& ds) {
  std::string s;
  for (size_t i = 0; i < ds.size(); ++i)
    s += i == 0 ? ds[i].str() : (ds[i].platform == ds[0].platform ? "," + std::to_string(ds[i].id) : "," + ds[i].str());
  return s;
}

std::string grid(const std::vector<std::vector<std::string>>& cells) {
  size_t w = 1;
  for (const auto& row : cells)
    for (const std::string& c : row) w = std::max(w, c.size());
  std::string rule = "+";
  for (size_t c = 0; c < cells[0].size(); ++c) rule += std::string(w + 2, '-') + "+";
  std::string out = rule + "\n";
  for (const auto& row : cells) {
    out += "|";
    for (const std::string& c : row) {
      const size_t left = (w - c.size()) / 2;
      out += " " + std::string(left, ' ') + c + std::string(w - c.size() - left, ' ') + " |";
    }
    out += "\n" + rule + "\n";
  }
  return out;
}
}  // namespace

std::string sharding_picture(const Array& x) {
  const NamedSharding s = x.sharding();
  const Mesh& mesh = *s.mesh;
  const size_t rank = x.shape().size();
  std::vector<int64_t> counts;
  int64_t blocks = 1;
  for (size_t d = 0; d < rank; ++d) blocks *= counts.emplace_back(blocks_along(mesh, s.spec, d));
  std::vector<std::vector<Device>> who(static_cast<size_t>(blocks));
  for (int64_t k = 0; k < mesh.size(); ++k) {
    const std::vector<int64_t> idx = block_index(mesh, s.spec, k, rank);
    int64_t flat = 0;
    for (size_t d = 0; d < rank; ++d) flat = flat * counts[d] + idx[d];
    who[size_t(flat)].push_back(mesh.devices[size_t(k)]);
  }
  if (rank == 1 || rank == 2) {
    const int64_t rows = rank == 2 ? counts[0] : 1, cols = counts[rank - 1];
    std::vector<std::vector<std::string>> cells(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) cells[size_t(r)].push_back(holders(who[size_t(r * cols + c)]));
    return grid(cells);
  }
  std::ostringstream os;
  const Shape block = block_shape(mesh, s.spec, x.shape());
  for (int64_t b = 0; b < blocks; ++b) {
    std::vector<int64_t> idx(rank);
    for (size_t d = rank, rest = size_t(b); d-- > 0; rest /= size_t(counts[d])) idx[d] = int64_t(rest % size_t(counts[d]));
    os << "block [";
    for (size_t d = 0; d < rank; ++d) os << (d ? ", " : "") << idx[d] * block[d] << ":" << (idx[d] + 1) * block[d];
    os << "]: " << holders(who[size_t(b)]) << "\n";
  }
  return os.str();
}

void visualize_sharding(const Array& x, std::ostream& os) { os << sharding_picture(x); }
void visualize_sharding(const Array& x) { visualize_sharding(x, std::cout); }

}  // namespace debug

}  // namespace fluxion
