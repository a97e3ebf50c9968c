// Eager ops on a GPU (ir/trace.h's DeviceOpRunner for Platform::cuda): each application of a
// primitive is compiled as a one-op program for the GPU -- cached by the compile cache's
// fingerprint, which is the primitive, its params and its operand types, so a loop of eager ops
// compiles each distinct op once -- and queued on the device's stream without waiting. Host
// operands (a C++ scalar, a new array) are copied to the device for the call. No CPU fallback: a
// primitive the GPU pipeline does not lower is a CompileError naming it and the user's line.
#include "compile/compile_cache.h"
#include "compile/one_op.h"
#include "ir/trace.h"
#include "lowering/compile_cuda.h"

namespace fluxion::runtime {

namespace {

std::vector<Array> run_on_gpu(Prim p, std::span<const Array> inputs, const Params& params, const Device& on,
                              bool committed, SourceLoc loc) {
  std::vector<AbstractArray> in_avals;
  for (const Array& x : inputs) in_avals.push_back(x.aval());
  if (!lowering::gpu_lowers_primitive(p))
    op_error(ErrorKind::Compile, prim_name(p), in_avals, loc,
             "the operands are on " + on.str() + ", and the GPU pipeline does not lower '" + std::string(prim_name(p)) +
                 "' (docs/gpu.md lists what it lowers); it is not run on the CPU instead: move the operands "
                 "with fx::device_put(x, fx::devices(\"cpu\").at(0))");
  const Program program = one_op_program(p, in_avals, params, loc);
  const std::shared_ptr<const Executable> exe =
      compile(program, default_target(Platform::cuda), "eager_" + std::string(prim_name(p)));
  return exe->run(inputs, {}, RunOn{on, committed});
}

const bool registered = [] {
  set_device_op_runner(Platform::cuda, &run_on_gpu);
  return true;
}();

}  // namespace

}  // namespace fluxion::runtime
