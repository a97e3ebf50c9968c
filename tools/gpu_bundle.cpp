// Reading a bundle's program (gpu_runner.h). plan.txt, one fact a line, in this order:
//
//   in <i> <bytes> <source>        input buffer i: <source> is a file of the case (in0.bin) or
//                                  fill32:<hex> (a 32-bit pattern filled on the GPU)
//   out <i> <bytes>                output buffer i (buffer number: inputs + i)
//   temp <i> <bytes>               temporary i (GpuProgram::temporary_bytes)
//   module <i> <file> <name>       PTX module i, its file and its gpu.module's name
//   launch <module> <kernel> <grid x y z> <block x y z> <shared bytes> <n> <param>...
//                                  a launch; each parameter is b<k> (buffer k) or t<k> (temporary k)
//   call <function> <n> <param>... <m> <arg>...
//                                  a library step (runtime/gpu_library.h: cuBLAS): its parameters as a
//                                  launch's, then its integers, each a number or p<j> (the address of
//                                  parameter j)
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tools/gpu_runner.h"

namespace fluxion::gpu_runner {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// One plan line's words, read in order; a missing or malformed word names the line.
struct Words {
  std::istringstream in;
  std::string where;
  std::string word() {
    std::string w;
    if (!(in >> w)) throw std::runtime_error(where + ": a word is missing");
    return w;
  }
  uint64_t number() {
    const std::string w = word();
    char* end = nullptr;
    const uint64_t n = std::strtoull(w.c_str(), &end, 10);
    if (w.empty() || *end) throw std::runtime_error(where + ": '" + w + "' is not a number");
    return n;
  }
};

void read_params(Words& w, runtime::GpuLaunch& l) {
  const uint64_t n = w.number();
  for (uint64_t i = 0; i < n; ++i) {
    const std::string p = w.word();
    if (p.size() < 2 || (p[0] != 'b' && p[0] != 't')) throw std::runtime_error(w.where + ": parameter '" + p + "'");
    runtime::GpuParam prm;
    prm.kind = p[0] == 'b' ? runtime::GpuParam::Kind::buffer : runtime::GpuParam::Kind::temporary;
    prm.index = std::atoi(p.c_str() + 1);
    l.params.push_back(prm);
  }
}

void read_launch(Words& w, Case& c) {
  runtime::GpuLaunch l;
  l.module = int(w.number());
  l.kernel = w.word();
  for (uint32_t& d : l.grid) d = uint32_t(w.number());
  for (uint32_t& d : l.block) d = uint32_t(w.number());
  l.shared_bytes = uint32_t(w.number());
  read_params(w, l);
  c.program.launches.push_back(std::move(l));
}

void read_call(Words& w, Case& c) {
  runtime::GpuLaunch l;
  l.kind = runtime::GpuLaunch::Kind::library;
  l.kernel = w.word();
  read_params(w, l);
  const uint64_t m = w.number();
  for (uint64_t i = 0; i < m; ++i) {
    const std::string a = w.word();
    runtime::GpuCallArg arg;
    char* end = nullptr;
    if (a.size() > 1 && a[0] == 'p') arg.param = int(std::strtol(a.c_str() + 1, &end, 10));
    else arg.value = std::strtoll(a.c_str(), &end, 10);
    if (a.empty() || *end) throw std::runtime_error(w.where + ": call argument '" + a + "'");
    l.call_args.push_back(arg);
  }
  c.program.launches.push_back(std::move(l));
}

void read_line(Words& w, Case& c) {
  const std::string what = w.word();
  if (what == "launch") return read_launch(w, c);
  if (what == "call") return read_call(w, c);
  const uint64_t i = w.number();
  auto in_order = [&](size_t have) {
    if (i != have) throw std::runtime_error(w.where + ": " + what + " " + std::to_string(i) + " out of order");
  };
  if (what == "in") {
    in_order(c.inputs.size());
    Input in;
    in.bytes = w.number();
    const std::string source = w.word();
    if (source.rfind("fill32:", 0) == 0) in.pattern = uint32_t(std::strtoul(source.c_str() + 7, nullptr, 16));
    else in.file = source;
    c.inputs.push_back(in);
  } else if (what == "out") {
    in_order(c.outputs.size());
    c.outputs.push_back(w.number());
  } else if (what == "temp") {
    in_order(c.program.temporary_bytes.size());
    c.program.temporary_bytes.push_back(w.number());
  } else if (what == "module") {
    in_order(c.program.modules.size());
    runtime::GpuModule m;
    const std::string file = w.word();
    m.name = w.word();
    m.ptx = read_file(c.dir + "/" + file);
    c.program.modules.push_back(std::move(m));
  } else {
    throw std::runtime_error(w.where + ": '" + what + "' is not a plan line this runner reads");
  }
}

}  // namespace

Case read_case(const std::string& dir) {
  Case c;
  c.dir = dir;
  std::istringstream plan(read_file(dir + "/plan.txt"));
  int n = 0;
  for (std::string line; std::getline(plan, line);) {
    ++n;
    if (line.empty()) continue;
    Words w{std::istringstream(line), dir + "/plan.txt:" + std::to_string(n)};
    read_line(w, c);
  }
  c.program.num_buffers = int(c.inputs.size() + c.outputs.size());
  return c;
}

std::vector<std::pair<std::string, std::string>> read_list(const std::string& path) {
  std::istringstream in(read_file(path));
  std::vector<std::pair<std::string, std::string>> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    out.emplace_back(line.substr(0, space), space == std::string::npos ? "" : line.substr(space + 1));
  }
  return out;
}

}  // namespace fluxion::gpu_runner
