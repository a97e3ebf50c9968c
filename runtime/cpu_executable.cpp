#include "runtime/cpu_executable.h"

#include "ir/profiler.h"
#include "ir/trace.h"
#include "kernels/library_calls.h"

namespace fluxion::runtime {

namespace {
CompileTimes times_of(const Kernel& k) { return {k.lower_ms, k.passes_ms, k.llvm_ms, k.link_ms, k.from_disk_cache}; }
}  // namespace

CpuExecutable::CpuExecutable(std::shared_ptr<Kernel> kernel, std::vector<AbstractArray> in_avals,
                             std::vector<AbstractArray> out_avals, std::string fingerprint)
    : Executable(std::move(in_avals), std::move(out_avals), std::move(fingerprint), Platform::cpu, times_of(*kernel)),
      kernel_(std::move(kernel)) {}

std::vector<Array> CpuExecutable::run(std::span<const Array> inputs, std::span<const std::shared_ptr<Buffer>> into,
                                      const std::optional<RunOn>&) const {
  std::vector<int64_t> sizes = check_inputs(inputs);  // a polymorphic program's symbols
  const std::vector<AbstractArray> out_types = concrete_out_avals(sizes);
  std::vector<Array> outs;
  outs.reserve(out_types.size());
  for (size_t k = 0; k < out_types.size(); ++k) {
    if (k < into.size() && into[k] && into[k]->memory == MemoryKind::host &&
        into[k]->nbytes >= out_types[k].nbytes()) {
      auto impl = std::make_shared<ArrayImpl>();
      impl->aval = out_types[k];
      impl->buffer = into[k];
      outs.emplace_back(std::move(impl));
    } else {
      outs.push_back(make_uninitialized(out_types[k]));
    }
  }
  // The packed ABI: args[i] points at the i-th bare pointer, then at each symbol's value.
  const size_t n_ptrs = inputs.size() + outs.size(), n = n_ptrs + sizes.size();
  constexpr size_t kSmall = 16;
  void* small_ptrs[kSmall];
  void* small_args[kSmall];
  std::vector<void*> big_ptrs, big_args;
  void** ptrs = small_ptrs;
  void** args = small_args;
  if (n > kSmall) {
    big_ptrs.resize(n);
    big_args.resize(n);
    ptrs = big_ptrs.data();
    args = big_args.data();
  }
  for (size_t i = 0; i < inputs.size(); ++i) ptrs[i] = host_data(*inputs[i].impl());
  for (size_t i = 0; i < outs.size(); ++i) ptrs[inputs.size() + i] = outs[i].impl()->buffer->data;
  for (size_t i = 0; i < n_ptrs; ++i) args[i] = &ptrs[i];
  for (size_t j = 0; j < sizes.size(); ++j) args[n_ptrs + j] = &sizes[j];
  {
    profiler::Scope prof("kernel", [&] { return name(); });
    kernel_->packed(args);
  }
  rethrow_library_call_error();  // a callback's exception, kept while the kernel ran
  return outs;
}

}  // namespace fluxion::runtime
