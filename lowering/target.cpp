#include "lowering/target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "ir/error.h"

namespace fluxion::lowering {

namespace {

// The feature names LLVM uses for the x86-64 micro-architecture levels (psABI), cumulatively.
const std::vector<std::vector<const char*>> kLevels = {
    {"sse4.2", "popcnt", "ssse3", "sse4.1"},                           // x86-64-v2
    {"avx", "avx2", "fma", "f16c", "bmi", "bmi2", "lzcnt", "movbe"},  // x86-64-v3
    {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},      // x86-64-v4
};

void fill_derived(CpuTarget& t, const std::function<bool(const char*)>& has) {
#if defined(__x86_64__)
  t.isa_level = 1;
  for (const auto& level : kLevels) {
    bool all = true;
    for (const char* f : level) all = all && has(f);
    if (!all) break;
    ++t.isa_level;
  }
  t.vector_bits = has("avx512f") ? 512 : has("avx") ? 256 : 128;
  t.avx512bf16 = has("avx512bf16");
  t.f16c = has("f16c");
  t.avx512vnni = has("avx512vnni");
  t.avxvnni = has("avxvnni");
#else
  (void)has;
  t.isa_level = 0;
  t.vector_bits = 128;
#endif
}

CpuTarget host_target() {
  CpuTarget t;
  t.cpu = llvm::sys::getHostCPUName().str();
  // Every host feature explicit: a VM may report a CPU name whose defaults it masks (AVX-512 off).
  const llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> names;
  for (const auto& f : features) names.push_back((f.getValue() ? "+" : "-") + f.getKey().str());
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) t.features += (t.features.empty() ? "" : ",") + n;
  fill_derived(t, [&](const char* f) { return features.lookup(f); });
  return t;
}

// Whether a compiler may emit instructions of this feature in computational code: vector and
// arithmetic extensions, not system instructions (a VM often masks pku, mwaitx, wbnoinvd... while
// every compute feature of the CPU is there; FLUXION_CPU=znver3 must still work on such a Zen 4).
bool may_be_generated(llvm::StringRef feature) {
  static const char* const prefixes[] = {"sse", "ssse3", "avx", "fma", "f16c", "bmi", "lzcnt", "popcnt", "movbe",
                                         "adx", "aes", "pclmul", "vpclmulqdq", "gfni", "sha", "sm3", "sm4", "vaes",
                                         "amx", "cx16", "sahf", "cmov", "xop", "tbm", "prfchw", "evex512"};
  for (const char* p : prefixes)
    if (feature.starts_with(p)) return true;
  return false;
}

[[noreturn]] void bad_cpu(const std::string& name, const std::string& why) {
  throw CompileError("CompileError: FLUXION_CPU=" + name + ": " + why +
                     " (use x86-64-v2, x86-64-v3, x86-64-v4, an LLVM CPU name such as haswell or znver3, or "
                     "native)");
}

}  // namespace

CpuTarget resolve_cpu_target(const std::string& name) {
  if (name.empty() || name == "native" || name == "host") return host_target();
  llvm::InitializeNativeTarget();
  const std::string triple = llvm::sys::getProcessTriple();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) bad_cpu(name, "no LLVM target for " + triple + ": " + error);
  // Asked of a generic subtarget first: creating one for an unknown name prints to stderr.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(target->createMCSubtargetInfo(triple, "", ""));
  if (!generic || !generic->isCPUStringValid(name)) bad_cpu(name, "LLVM knows no such CPU for " + triple);
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(triple, name, ""));
  CpuTarget t;
  t.cpu = name;
  t.overridden = true;  // features stay implied by the name (tuning included)
  auto has = [&](const char* f) { return sti->checkFeatures(std::string("+") + f); };
  fill_derived(t, has);
  // Only code this host can run: every ISA feature the named CPU implies must be present here.
  const llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  std::string missing;
  for (const auto& f : host)
    if (!f.getValue() && may_be_generated(f.getKey()) && has(f.getKey().str().c_str()))
      missing += (missing.empty() ? "" : ", ") + f.getKey().str();
  if (!missing.empty())
    bad_cpu(name, "needs " + missing + ", which this CPU (" + llvm::sys::getHostCPUName().str() + ") lacks");
  return t;
}

namespace {
thread_local const CpuTarget* t_override = nullptr;
}

ScopedCpuTarget::ScopedCpuTarget(CpuTarget target) : target_(std::move(target)), saved_(t_override) {
  t_override = &target_;
}
ScopedCpuTarget::~ScopedCpuTarget() { t_override = saved_; }

const CpuTarget& cpu_target() {
  if (t_override) return *t_override;
  // Resolved once; a bad FLUXION_CPU is raised again at every compile, not cached as a success.
  static const std::optional<CpuTarget> target = [] () -> std::optional<CpuTarget> {
    const char* e = std::getenv("FLUXION_CPU");
    try {
      return resolve_cpu_target(e ? e : "");
    } catch (const CompileError&) {
      return std::nullopt;
    }
  }();
  if (!target) {
    const char* e = std::getenv("FLUXION_CPU");
    resolve_cpu_target(e ? e : "");  // throws the error with its message
  }
  return *target;
}

}  // namespace fluxion::lowering
