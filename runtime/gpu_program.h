// A Program compiled for a GPU (lowering/compile.h: compile_cuda): PTX text plus the host side's
// plan -- the temporaries to allocate and the kernels to launch, each with its grid, block and the
// buffers its parameters are. MLIR produces only the kernels; the C++ runtime does the launches
// (shared/notes/mlir19 §3: MLIR's own host runtime is not used).
//
// Kernel parameter ABI (convert-gpu-to-nvvm with bare pointers, static shapes): one 64-bit device
// address per memref. The parameter order is the order in which the launch body first used each
// buffer, NOT the kernel's argument order, so each launch records its own list.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace fluxion::runtime {

/// One kernel parameter: the address of buffer `index` of the program's kernel ABI
/// (runtime/kernel.h: invars, constvars, outputs), or of temporary `index`.
struct GpuParam {
  enum class Kind : uint8_t { buffer, temporary };
  Kind kind = Kind::buffer;
  int index = 0;
  friend bool operator==(const GpuParam&, const GpuParam&) = default;
};

/// One PTX module: MLIR outlines each launch into a gpu.module of its own, compiled separately
/// (each has its own .version/.target header, and entries of different modules share names).
struct GpuModule {
  std::string name;  // the gpu.module's symbol
  std::string ptx;   // PTX text, without the NUL MLIR appends (ptxas rejects it; c_str() adds it back)
  /// Under the emulated GPU (FLUXION_CUDA_DRIVER=emulate), the module's kernels as host code,
  /// registered with the emulator under `ptx` (runtime/cuda_emulator.h): what cuModuleLoadDataEx
  /// finds there lives as long as this. Null otherwise.
  std::shared_ptr<const void> host_code;
};

/// One integer of a library call's argument array: `value`, or (param >= 0) the device address
/// of the step's parameter `param`.
struct GpuCallArg {
  int64_t value = 0;
  int param = -1;
  friend bool operator==(const GpuCallArg&, const GpuCallArg&) = default;
};

/// One step of the plan: a kernel launch, or a library call (runtime/gpu_library.h) queued on the
/// same stream -- dot_general as cuBLAS's GEMM -- whose buffers are `params`.
struct GpuLaunch {
  enum class Kind : uint8_t { kernel, library };
  Kind kind = Kind::kernel;
  int module = 0;      // index into GpuProgram::modules (a kernel)
  std::string kernel;  // the PTX entry's name in that module; a library call's function
                       // (kernels/library_calls.h: fluxion_rt_gemm's layout)
  std::vector<GpuCallArg> call_args;  // a library call's integers
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint32_t shared_bytes = 0;  // dynamic shared memory
  std::vector<GpuParam> params;
};

struct GpuProgram {
  std::vector<GpuModule> modules;
  std::string target = "sm_90";
  int num_buffers = 0;                  // invars + constvars + outvars
  std::vector<size_t> temporary_bytes;  // device scratch the launches share, freed after the last
  std::vector<GpuLaunch> launches;      // queued in this order on the device's stream
};

/// The values of a launch's parameters (device addresses), in parameter order; `slots` receives
/// them and the returned pointers (one per parameter, pointing into `slots`, then a nullptr) are
/// what cuLaunchKernel takes: the driver reads as many as the kernel has, the emulated GPU counts
/// up to the nullptr. Throws DeviceError when an index is out of range.
std::vector<void*> pack_params(const GpuLaunch& launch, std::span<const uint64_t> buffers,
                               std::span<const uint64_t> temporaries, std::vector<uint64_t>& slots);

/// A library call's argument array: call_args with each parameter's address (`slots`, filled by
/// pack_params) in place. Throws DeviceError when a parameter index is out of range.
std::vector<int64_t> call_arguments(const GpuLaunch& launch, std::span<const uint64_t> slots);

}  // namespace fluxion::runtime
