#include "gpu_bundle.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lowering/compile_cuda.h"

namespace gpu_bundle {

namespace fs = std::filesystem;

const char* setting(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

namespace {

size_t bytes_of(const fx::AbstractArray& a) { return std::max<size_t>(1, size_t(a.size()) * fx::itemsize(a.dtype)); }

// What a benchmark input is filled with on the GPU: 0.5 in the float types (the pattern of a 16-bit
// one twice), zero bytes in the others. Never all zeros for floats: zeros hide unwritten outputs.
uint32_t fill_pattern(fx::DType d) {
  if (d == fx::float32) return 0x3F000000;
  if (d == fx::bfloat16) return 0x3F003F00;
  if (d == fx::float16) return 0x38003800;
  return 0;
}

void write_bytes(const std::string& path, const void* data, size_t n) {
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(data), std::streamsize(n));
}

// The pipeline's dumps of the compile (CompileOptions::dump_dir): its `map` stage -- the module with
// the kernels as gpu.modules before NVVM -- becomes kernels.mlir, the rest go.
void keep_kernels_mlir(const std::string& dir) {
  fs::rename(dir + "/kernels.cuda.gpu.mlir", dir + "/kernels.mlir");
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("kernels.cuda.", 0) == 0) fs::remove(e.path());
}

void write_plan(std::ostream& plan, const fx::runtime::GpuProgram& g) {
  for (size_t i = 0; i < g.temporary_bytes.size(); ++i) plan << "temp " << i << " " << g.temporary_bytes[i] << "\n";
  for (size_t i = 0; i < g.modules.size(); ++i) plan << "module " << i << " m" << i << ".ptx " << g.modules[i].name << "\n";
  for (const fx::runtime::GpuLaunch& l : g.launches) {
    if (l.kind == fx::runtime::GpuLaunch::Kind::library) {  // call <function> <n> <param>... <m> <arg>...
      plan << "call " << l.kernel << " " << l.params.size();
      for (const fx::runtime::GpuParam& prm : l.params)
        plan << " " << (prm.kind == fx::runtime::GpuParam::Kind::buffer ? "b" : "t") << prm.index;
      plan << " " << l.call_args.size();
      for (const fx::runtime::GpuCallArg& a : l.call_args) {
        if (a.param >= 0) plan << " p" << a.param;
        else plan << " " << a.value;
      }
      plan << "\n";
      continue;
    }
    plan << "launch " << l.module << " " << l.kernel;
    for (uint32_t d : l.grid) plan << " " << d;
    for (uint32_t d : l.block) plan << " " << d;
    plan << " " << l.shared_bytes << " " << l.params.size();
    for (const fx::runtime::GpuParam& prm : l.params)
      plan << " " << (prm.kind == fx::runtime::GpuParam::Kind::buffer ? "b" : "t") << prm.index;
    plan << "\n";
  }
}

}  // namespace

void write_case(const std::string& dir, const fx::Program& p, const std::vector<fx::Array>& args, bool with_data) {
  fs::create_directories(dir);
  fx::lowering::CompileOptions options;
  options.dump_dir = dir;
  options.dump_name = "kernels";
  const fx::runtime::GpuProgram g = fx::lowering::compile_cuda(p, options);
  keep_kernels_mlir(dir);
  std::ofstream plan(dir + "/plan.txt");
  std::vector<fx::Array> inputs = args;
  inputs.insert(inputs.end(), p.consts.begin(), p.consts.end());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const fx::AbstractArray a{inputs[i].shape(), inputs[i].dtype()};
    plan << "in " << i << " " << bytes_of(a) << " ";
    const bool data = with_data || i >= args.size();  // constants always travel
    if (!data) {
      std::ostringstream hex;
      hex << std::hex << fill_pattern(a.dtype);
      plan << "fill32:" << hex.str() << "\n";
      continue;
    }
    plan << "in" << i << ".bin\n";
    write_bytes(dir + "/in" + std::to_string(i) + ".bin", inputs[i].data(), size_t(a.size()) * fx::itemsize(a.dtype));
  }
  for (size_t i = 0; i < p.outvars.size(); ++i) plan << "out " << i << " " << bytes_of(p.aval(p.outvars[i])) << "\n";
  for (size_t i = 0; i < g.modules.size(); ++i) std::ofstream(dir + "/m" + std::to_string(i) + ".ptx") << g.modules[i].ptx;
  write_plan(plan, g);
}

std::map<std::string, Result> read_results(const std::string& dir) {
  std::map<int, std::string> status;
  std::ifstream s(dir + "/status.txt");
  for (std::string line; std::getline(s, line);)
    if (const size_t space = line.find(' '); space != std::string::npos) status[std::stoi(line)] = line.substr(space + 1);
  std::map<std::string, Result> out;
  std::ifstream c(dir + "/cases.txt");
  for (std::string line; std::getline(c, line);) {
    const size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    const int n = std::stoi(line);
    auto it = status.find(n);
    out[line.substr(space + 1)] = Result{n, it == status.end() ? "did not run" : it->second};
  }
  return out;
}

fx::Array read_output(const std::string& dir, int n, size_t i, const fx::AbstractArray& like) {
  std::ifstream f(dir + "/" + std::to_string(n) + "/out" + std::to_string(i) + ".bin", std::ios::binary);
  std::vector<char> bytes(bytes_of(like));
  f.read(bytes.data(), std::streamsize(bytes.size()));
  if (f.gcount() != std::streamsize(bytes.size()))
    throw fx::IOError("IOError: case " + std::to_string(n) + " output " + std::to_string(i) + ": " +
                      std::to_string(f.gcount()) + " of " + std::to_string(bytes.size()) + " bytes");
  return fx::detail::array_from_host(bytes.data(), like.dtype, like.shape, size_t(like.size()), {});
}

}  // namespace gpu_bundle
