#include "runtime/executable.h"

#include "ir/error.h"
#include "ir/trace.h"
#include "memory/buffer.h"

namespace fluxion::runtime {

Executable::Executable(std::shared_ptr<Kernel> kernel, std::vector<AbstractArray> in_avals,
                       std::vector<AbstractArray> out_avals, std::string fingerprint)
    : kernel_(std::move(kernel)), in_avals_(std::move(in_avals)), out_avals_(std::move(out_avals)),
      fingerprint_(std::move(fingerprint)) {}

double Executable::lower_ms() const { return kernel_->lower_ms; }
double Executable::passes_ms() const { return kernel_->passes_ms; }
double Executable::llvm_ms() const { return kernel_->llvm_ms; }
double Executable::link_ms() const { return kernel_->link_ms; }
bool Executable::from_disk_cache() const { return kernel_->from_disk_cache; }

std::vector<Array> Executable::run(std::span<const Array> inputs) const {
  if (inputs.size() != in_avals_.size())
    throw TypeError("TypeError: jit: the executable takes " + std::to_string(in_avals_.size()) + " arrays, got " +
                    std::to_string(inputs.size()));
  std::vector<Array> outs;
  outs.reserve(out_avals_.size());
  for (const AbstractArray& a : out_avals_) outs.push_back(make_uninitialized(a));
  // The packed ABI: args[i] points at the i-th bare pointer.
  const size_t n = inputs.size() + outs.size();
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
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid() || !inputs[i].aval().same_type(in_avals_[i]))
      throw TypeError("TypeError: jit: argument " + std::to_string(i) + " has type " +
                      (inputs[i].valid() ? inputs[i].aval().str() : std::string("<empty>")) +
                      ", the executable expects " + in_avals_[i].str());
    ptrs[i] = host_data(*inputs[i].impl());
  }
  for (size_t i = 0; i < outs.size(); ++i) ptrs[inputs.size() + i] = outs[i].impl()->buffer->data;
  for (size_t i = 0; i < n; ++i) args[i] = &ptrs[i];
  kernel_->packed(args);
  return outs;
}

}  // namespace fluxion::runtime
