#include "runtime/gpu_executable.h"

#include <string>

#include "ir/error.h"
#include "ir/profiler.h"
#include "ir/trace.h"
#include "runtime/gpu_launch.h"
#include "runtime/gpu_library.h"

namespace fluxion::runtime {

GpuExecutable::GpuExecutable(GpuProgram program, std::vector<AbstractArray> in_avals,
                             std::vector<AbstractArray> out_avals, std::string fingerprint, CompileTimes times)
    : Executable(std::move(in_avals), std::move(out_avals), std::move(fingerprint), Platform::cuda, times),
      program_(std::move(program)) {}

GpuExecutable::GpuExecutable(cuda::Gpu& gpu, GpuProgram program)
    : Executable({}, {}, "", Platform::cuda, {}), program_(std::move(program)), gpu_(&gpu) {
  functions_on(gpu);
}

const std::vector<cuda::Handle>& GpuExecutable::functions_on(cuda::Gpu& gpu) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = functions_.find(gpu.ordinal());
  if (it != functions_.end()) return it->second;
  return functions_.emplace(gpu.ordinal(), load_gpu_program(gpu, program_).functions).first->second;
}

void GpuExecutable::run(std::span<const cuda::DevicePtr> buffers) const {
  if (!gpu_) throw DeviceError("DeviceError: this GPU program was not loaded on a GPU at construction (use launch)");
  launch(*gpu_, buffers);
}

void GpuExecutable::launch(cuda::Gpu& gpu, std::span<const cuda::DevicePtr> buffers) const {
  if (int(buffers.size()) != program_.num_buffers)
    throw DeviceError("DeviceError: a GPU program of " + std::to_string(program_.num_buffers) + " buffers was given " +
                      std::to_string(buffers.size()));
  launch_gpu_program(gpu, program_, functions_on(gpu), buffers, run_library_call);
}

namespace {

// Where a call runs when the caller does not say (RunOn): the GPU its committed inputs are on (two
// different ones are a DeviceError), else one an input is on, else the default device when it is a
// GPU, else cuda:0.
RunOn placement_of(std::span<const Array> inputs) {
  std::optional<RunOn> at;
  std::optional<Device> any;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Buffer* b = inputs[i].impl()->buffer.get();
    if (!b || b->memory != MemoryKind::device) continue;
    if (!any) any = b->device;
    if (!b->committed) continue;
    if (at && !(at->device == b->device))
      throw DeviceError("DeviceError: jit: the arguments are committed to different devices, " + at->device.str() +
                        " and " + b->device.str() + " (argument " + std::to_string(i) +
                        "); move one with fx::device_put");
    at = RunOn{b->device, true};
  }
  if (at) return *at;
  if (any) return {*any, false};
  const Device d = default_device();
  return {d.platform == Platform::cuda ? d : Device{Platform::cuda, 0}, false};
}

}  // namespace

std::vector<Array> GpuExecutable::run(std::span<const Array> inputs, std::span<const std::shared_ptr<Buffer>> into,
                                      const std::optional<RunOn>& on) const {
  check_inputs(inputs);
  const RunOn at = on ? *on : placement_of(inputs);
  cuda::Gpu& gpu = cuda::Gpu::get(at.device.id);
  std::vector<cuda::DevicePtr> addresses;
  addresses.reserve(inputs.size() + out_avals().size());
  std::vector<std::shared_ptr<Buffer>> staged;  // host inputs copied to the device for this call
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ArrayImpl& a = *inputs[i].impl();
    const Buffer* b = a.buffer.get();
    if (b && b->memory == MemoryKind::device && b->device == at.device) {
      addresses.push_back(b->address);
      continue;
    }
    if (b && b->memory == MemoryKind::device && b->committed)
      throw DeviceError("DeviceError: jit: argument " + std::to_string(i) + " (" + a.aval.str() + ") is committed to " +
                        b->device.str() + ", but the program runs on " + at.device.str() +
                        "; move it with fx::device_put");
    const void* host = host_data(a);  // host memory, a gathered sharded array, or another GPU's copy
    auto s = Buffer::allocate_on(at.device, a.aval.nbytes());
    if (a.aval.nbytes()) gpu.copy_to_device(s->address, host, a.aval.nbytes());
    addresses.push_back(s->address);
    staged.push_back(std::move(s));
  }
  std::vector<Array> outs;
  outs.reserve(out_avals().size());
  for (size_t k = 0; k < out_avals().size(); ++k) {
    auto impl = std::make_shared<ArrayImpl>();
    impl->aval = out_avals()[k];
    const bool reuse = k < into.size() && into[k] && into[k]->memory == MemoryKind::device && into[k]->device == at.device;
    impl->buffer = reuse ? into[k] : Buffer::allocate_on(at.device, impl->aval.nbytes());
    if (reuse) impl->buffer->device_written();
    impl->buffer->committed = at.committed;
    addresses.push_back(impl->buffer->address);
    outs.emplace_back(std::move(impl));
  }
  profiler::Scope prof("kernel", [&] { return name() + " (queued on " + at.device.str() + ")"; });
  launch(gpu, addresses);
  return outs;  // `staged` is released here: stream order keeps the blocks until the launches ran
}

}  // namespace fluxion::runtime
