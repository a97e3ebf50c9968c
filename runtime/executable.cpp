#include "runtime/executable.h"

#include "ir/error.h"
#include "ir/profiler.h"
#include "ir/trace.h"
#include "memory/buffer.h"
#include "kernels/library_calls.h"

namespace fluxion::runtime {

namespace {
// The primitives of the program text in a fingerprint (each eqn reads "outs = prim[params] ins"),
// repeats counted: "kernel: tanh+mul x2+reduce_sum".
std::string kernel_name(const std::string& fingerprint) {
  std::vector<std::pair<std::string, int>> prims;
  size_t pos = 0;
  while ((pos = fingerprint.find(" = ", pos)) != std::string::npos) {
    pos += 3;
    size_t end = fingerprint.find_first_of("[ \n", pos);
    std::string prim = fingerprint.substr(pos, end - pos);
    if (!prims.empty() && prims.back().first == prim) ++prims.back().second;
    else prims.emplace_back(prim, 1);
  }
  std::string name = "kernel:";
  for (size_t i = 0; i < prims.size(); ++i) {
    if (i == 12) return name + "+... (" + std::to_string(prims.size() - i) + " more)";
    name += (i ? "+" : " ") + prims[i].first;
    if (prims[i].second > 1) name += " x" + std::to_string(prims[i].second);
  }
  return name;
}
}  // namespace

Executable::Executable(std::shared_ptr<Kernel> kernel, std::vector<AbstractArray> in_avals,
                       std::vector<AbstractArray> out_avals, std::string fingerprint)
    : kernel_(std::move(kernel)), in_avals_(std::move(in_avals)), out_avals_(std::move(out_avals)),
      fingerprint_(std::move(fingerprint)), name_(kernel_name(fingerprint_)) {}

double Executable::lower_ms() const { return kernel_->lower_ms; }
double Executable::passes_ms() const { return kernel_->passes_ms; }
double Executable::llvm_ms() const { return kernel_->llvm_ms; }
double Executable::link_ms() const { return kernel_->link_ms; }
bool Executable::from_disk_cache() const { return kernel_->from_disk_cache; }

std::vector<Array> Executable::run(std::span<const Array> inputs) const { return run(inputs, {}); }

std::vector<Array> Executable::run(std::span<const Array> inputs, std::span<const std::shared_ptr<Buffer>> into) const {
  if (inputs.size() != in_avals_.size())
    throw TypeError("TypeError: jit: the executable takes " + std::to_string(in_avals_.size()) + " arrays, got " +
                    std::to_string(inputs.size()));
  std::vector<Array> outs;
  outs.reserve(out_avals_.size());
  for (size_t k = 0; k < out_avals_.size(); ++k) {
    if (k < into.size() && into[k]) {
      auto impl = std::make_shared<ArrayImpl>();
      impl->aval = out_avals_[k];
      impl->buffer = into[k];
      outs.emplace_back(std::move(impl));
    } else {
      outs.push_back(make_uninitialized(out_avals_[k]));
    }
  }
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
  {
    profiler::Scope prof("kernel", [&] { return name_; });
    kernel_->packed(args);
  }
  rethrow_library_call_error();  // a callback's exception, kept while the kernel ran
  return outs;
}

}  // namespace fluxion::runtime
