#include "runtime/executable.h"

#include "ir/error.h"

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

Executable::Executable(std::vector<AbstractArray> in_avals, std::vector<AbstractArray> out_avals,
                       std::string fingerprint, Platform platform, CompileTimes times)
    : in_avals_(std::move(in_avals)), out_avals_(std::move(out_avals)), fingerprint_(std::move(fingerprint)),
      platform_(platform), times_(times), name_(kernel_name(fingerprint_)) {}

void Executable::check_inputs(std::span<const Array> inputs) const {
  if (inputs.size() != in_avals_.size())
    throw TypeError("TypeError: jit: the executable takes " + std::to_string(in_avals_.size()) + " arrays, got " +
                    std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].valid() || !inputs[i].aval().same_type(in_avals_[i]))
      throw TypeError("TypeError: jit: argument " + std::to_string(i) + " has type " +
                      (inputs[i].valid() ? inputs[i].aval().str() : std::string("<empty>")) +
                      ", the executable expects " + in_avals_[i].str());
}

}  // namespace fluxion::runtime
