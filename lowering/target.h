// The CPU that compiled kernels are generated for: the host, or the one FLUXION_CPU names.
//
// FLUXION_CPU takes an LLVM CPU name ("haswell", "znver3", "skylake-avx512", ...) or an x86-64
// micro-architecture level ("x86-64-v2", "x86-64-v3", "x86-64-v4"); unset, "native" or "host" mean
// the host. Code for an older CPU runs on any newer one, so an AVX-512 machine can produce and test
// exactly what an AVX2 user runs. A name LLVM does not know, or a CPU with a feature this host
// lacks, is a CompileError at the first compile (running such code would be an illegal instruction).
//
// Everything that depends on the instruction set follows this one choice: LLVM's target machine,
// the libmvec variant, the vector widths of the tiling plans, the matmul library path, the compile
// cache fingerprint and the disk-cache header. No MLIR or LLVM type crosses this header.
#pragma once
#include <string>

namespace fluxion::lowering {

struct CpuTarget {
  std::string cpu;       // LLVM CPU name: the host's ("znver4") or FLUXION_CPU's
  std::string features;  // LLVM feature string, every feature explicit ("+avx2,+fma,-avx512f,...")
  /// x86-64 micro-architecture level the features reach: 1 baseline (SSE2), 2 (SSE4.2, POPCNT),
  /// 3 (AVX2, FMA, F16C, BMI2), 4 (AVX-512 F/BW/CD/DQ/VL). 0 on other architectures.
  int isa_level = 0;
  int vector_bits = 128;  // widest vector register the target has: 128, 256 or 512
  bool avx512bf16 = false;  // the CPU has AVX512-BF16: the library's bf16 GEMM may run (code generation turns it off)
  bool f16c = false;        // native f16 <-> f32 conversion
  bool avx512vnni = false;  // vpdpbusd on 512-bit registers: the int8 GEMM's widest path
  bool avxvnni = false;     // vpdpbusd (VEX) on 256-bit registers
  bool overridden = false;  // chosen by FLUXION_CPU rather than detected
  /// "cpu features": part of the compile-cache fingerprint and of the disk-cache header.
  std::string id() const { return cpu + " " + features; }
};

/// The target of every compile in this process (read once). Throws CompileError when FLUXION_CPU
/// is not a CPU LLVM knows, or needs a feature this host does not have.
const CpuTarget& cpu_target();

/// While alive, cpu_target() on this thread is `target` (fx::export_ compiles for a named CPU
/// without changing the process's jit target).
class ScopedCpuTarget {
 public:
  explicit ScopedCpuTarget(CpuTarget target);
  ~ScopedCpuTarget();
  ScopedCpuTarget(const ScopedCpuTarget&) = delete;
  ScopedCpuTarget& operator=(const ScopedCpuTarget&) = delete;

 private:
  CpuTarget target_;
  const CpuTarget* saved_;
};
/// The target FLUXION_CPU=`name` would give on this host (the same checks); "" is the host.
CpuTarget resolve_cpu_target(const std::string& name);

}  // namespace fluxion::lowering
