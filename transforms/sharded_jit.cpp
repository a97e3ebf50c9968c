// Sharded jit (transforms/jit.h, compile_sharded): the layouts resolved per leaf, the traced program
// through the jit's passes, partitioned over the mesh (interpreters/partition.h), and wrapped as
// one shard_map, which the jit runs on the mesh's devices (transforms/shard_map.cpp).
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "interpreters/jit_passes.h"
#include "interpreters/partition.h"
#include "prims/shard_map.h"
#include "runtime/mesh.h"
#include "transforms/jit.h"

namespace fluxion::jit_detail {

namespace {

std::string at(SourceLoc loc) { return "jit at " + loc.str() + ": "; }

// The layout of each leaf of the arguments (`start`: each argument's first leaf).
std::vector<NamedSharding> in_layouts(const std::vector<ShardingTree>& in, const std::vector<size_t>& start, SourceLoc loc) {
  const size_t nargs = start.size() - 1;
  if (in.size() != 1 && in.size() != nargs)
    throw ValueError("ValueError: " + at(loc) + "in_shardings has " + std::to_string(in.size()) + " entries for " +
                     std::to_string(nargs) + " arguments");
  std::vector<NamedSharding> r;
  for (size_t a = 0; a < nargs; ++a) {
    const ShardingTree& t = in.size() == 1 ? in[0] : in[a];
    const size_t leaves = start[a + 1] - start[a];
    if (const auto* each = std::get_if<LeafShardings>(&t)) {
      if (each->shardings.size() != leaves)
        throw ValueError("ValueError: " + at(loc) + "leaf_shardings gives " + std::to_string(each->shardings.size()) +
                         " layouts for argument " + std::to_string(a) + ", which has " + std::to_string(leaves) + " leaves");
      r.insert(r.end(), each->shardings.begin(), each->shardings.end());
    } else {
      r.insert(r.end(), leaves, std::get<NamedSharding>(t));
    }
  }
  return r;
}

// The layout asked for each output leaf (nullopt: whatever propagation gives).
std::vector<std::optional<NamedSharding>> out_layouts(const std::vector<ShardingTree>& out, size_t nout, SourceLoc loc) {
  if (out.empty()) return std::vector<std::optional<NamedSharding>>(nout);
  if (out.size() == 1 && std::holds_alternative<NamedSharding>(out[0]))
    return std::vector<std::optional<NamedSharding>>(nout, std::get<NamedSharding>(out[0]));
  std::vector<std::optional<NamedSharding>> r;
  for (const ShardingTree& t : out) {
    if (const auto* each = std::get_if<LeafShardings>(&t)) r.insert(r.end(), each->shardings.begin(), each->shardings.end());
    else r.push_back(std::get<NamedSharding>(t));
  }
  if (r.size() != nout)
    throw ValueError("ValueError: " + at(loc) + "out_shardings gives " + std::to_string(r.size()) + " layouts for " +
                     std::to_string(nout) + " output leaves");
  return r;
}

void same_mesh(const Mesh& mesh, const NamedSharding& s, SourceLoc loc) {
  if (!(*s.mesh == mesh))
    throw ValueError("ValueError: " + at(loc) + "the shardings lay arrays out over different meshes, " + mesh.str() +
                     " and " + s.mesh->str() + "; sharded jit runs over one mesh");
}

void dump(const std::string& stem, const Mesh& mesh, const Partitioned& p) {
  const char* dir = std::getenv("FLUXION_DUMP");
  if (!dir) return;
  std::error_code ignored;
  std::filesystem::create_directories(dir, ignored);
  std::ofstream os(std::string(dir) + "/" + stem + ".partitioned.txt");
  os << "partitioned over " << mesh.str() << "\n";
  for (size_t i = 0; i < p.in_specs.size(); ++i) os << "input " << i << ": " << p.in_specs[i].str() << "\n";
  for (size_t j = 0; j < p.out_specs.size(); ++j) os << "output " << j << ": " << p.out_specs[j].str() << "\n";
  for (const std::string& n : p.notes) os << n << "\n";
  os << "collectives move " << p.collective_bytes << " bytes per call in all\n";
  os << "per-device program:\n" << p.body.str() << "\n";
}

}  // namespace

std::shared_ptr<const Compiled> compile_sharded(JitCache& cache, const std::string& key, Program program,
                                                std::shared_ptr<const void> out_like, const Shardings& shardings,
                                                const std::vector<size_t>& leaf_start, SourceLoc loc) {
  const std::vector<NamedSharding> in = in_layouts(shardings.in, leaf_start, loc);
  const std::vector<std::optional<NamedSharding>> out = out_layouts(shardings.out, program.outvars.size(), loc);
  const NamedSharding* first = !in.empty() ? &in[0] : nullptr;
  for (const auto& o : out)
    if (!first && o) first = &*o;
  if (!first) throw ValueError("ValueError: " + at(loc) + "sharded jit needs at least one layout");
  const Mesh mesh = *first->mesh;
  runtime::check_mesh(mesh, "jit", loc);
  std::vector<PartitionSpec> in_specs;
  for (size_t i = 0; i < in.size(); ++i) {
    same_mesh(mesh, in[i], loc);
    check_layout(mesh, in[i].spec, program.type(program.invars[i]), "jit", loc, "argument leaf " + std::to_string(i) + ":");
    in_specs.push_back(in[i].spec);
  }
  std::vector<std::optional<PartitionSpec>> out_specs;
  const std::vector<AbstractArray> out_avals = program.out_avals();
  for (size_t j = 0; j < out.size(); ++j) {
    if (out[j]) {
      same_mesh(mesh, *out[j], loc);
      check_layout(mesh, out[j]->spec, out_avals[j], "jit", loc, "output leaf " + std::to_string(j) + ":");
    }
    out_specs.push_back(out[j] ? std::optional<PartitionSpec>(out[j]->spec) : std::nullopt);
  }
  const std::string stem = jit_dump_stem(program);
  Program global = jit_passes(std::move(program), stem + "-global");
  const Partitioned part = partition_program(global, mesh, in_specs, out_specs);
  dump(stem, mesh, part);
  TraceScope scope;
  std::vector<Array> inputs;
  for (int32_t v : global.invars) inputs.push_back(scope.new_input(global.type(v)));
  std::vector<Array> results = bind_shard_map(inputs, part.body, mesh, part.in_specs, part.out_specs, loc);
  return compile_signature(cache, key, scope.finish(results), std::move(out_like));
}

}  // namespace fluxion::jit_detail
