#include "gpu_run.h"

#include <algorithm>

#include "runtime/gpu_executable.h"

namespace gpu_test {

namespace fx = fluxion;
namespace cuda = fluxion::runtime::cuda;

namespace {
size_t bytes_of(const fx::AbstractArray& a) { return std::max<size_t>(1, size_t(a.size()) * fx::itemsize(a.dtype)); }

// Device buffers given back when the run ends, however it ends.
struct Buffers {
  cuda::Gpu& gpu;
  std::vector<cuda::DevicePtr> ptrs;
  ~Buffers() {
    for (cuda::DevicePtr p : ptrs) gpu.release(p);
  }
  cuda::DevicePtr add(size_t bytes) {
    ptrs.push_back(gpu.allocate(bytes));
    return ptrs.back();
  }
};
}  // namespace

std::vector<fx::Array> run(cuda::Gpu& gpu, const fx::runtime::GpuProgram& compiled, const fx::Program& p,
                           const std::vector<fx::Array>& args) {
  fx::runtime::GpuExecutable exe(gpu, compiled);
  Buffers buffers{gpu, {}};
  auto put = [&](const fx::Array& a) {
    const cuda::DevicePtr d = buffers.add(bytes_of(fx::AbstractArray{a.shape(), a.dtype()}));
    if (a.size() > 0) gpu.copy_to_device(d, a.data(), size_t(a.size()) * fx::itemsize(a.dtype()));
  };
  for (const fx::Array& a : args) put(a);
  for (const fx::Array& c : p.consts) put(c);
  for (const fx::Atom& o : p.outvars) {
    const size_t bytes = bytes_of(p.aval(o));
    const std::vector<char> poison(bytes, char(0xFF));
    gpu.copy_to_device(buffers.add(bytes), poison.data(), bytes);
  }
  exe.run(buffers.ptrs);
  gpu.synchronize();
  std::vector<fx::Array> out;
  for (size_t i = 0; i < p.outvars.size(); ++i) {
    const fx::AbstractArray a = p.aval(p.outvars[i]);
    std::vector<char> host(bytes_of(a));
    gpu.copy_to_host(host.data(), buffers.ptrs[args.size() + p.consts.size() + i], host.size());
    out.push_back(fx::detail::array_from_host(host.data(), a.dtype, a.shape, size_t(a.size()), {}));
  }
  return out;
}

}  // namespace gpu_test
