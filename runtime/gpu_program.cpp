#include "runtime/gpu_program.h"

#include "ir/error.h"

namespace fluxion::runtime {

std::vector<void*> pack_params(const GpuLaunch& launch, std::span<const uint64_t> buffers,
                               std::span<const uint64_t> temporaries, std::vector<uint64_t>& slots) {
  slots.assign(launch.params.size(), 0);
  std::vector<void*> pointers(launch.params.size() + 1, nullptr);  // the nullptr ends the list
  for (size_t i = 0; i < launch.params.size(); ++i) {
    const GpuParam& p = launch.params[i];
    const bool temp = p.kind == GpuParam::Kind::temporary;
    const std::span<const uint64_t> from = temp ? temporaries : buffers;
    if (p.index < 0 || size_t(p.index) >= from.size())
      throw DeviceError("DeviceError: kernel " + launch.kernel + " parameter " + std::to_string(i) + " is " +
                        (temp ? "temporary " : "buffer ") + std::to_string(p.index) + ", but the launch has " +
                        std::to_string(from.size()) + (temp ? " temporaries" : " buffers"));
    slots[i] = from[size_t(p.index)];
    pointers[i] = &slots[i];
  }
  return pointers;
}

std::vector<int64_t> call_arguments(const GpuLaunch& launch, std::span<const uint64_t> slots) {
  std::vector<int64_t> out;
  for (const GpuCallArg& a : launch.call_args) {
    if (a.param >= int(slots.size()))
      throw DeviceError("DeviceError: library call " + launch.kernel + " names parameter " + std::to_string(a.param) +
                        " of " + std::to_string(slots.size()));
    out.push_back(a.param >= 0 ? int64_t(slots[size_t(a.param)]) : a.value);
  }
  return out;
}

}  // namespace fluxion::runtime
