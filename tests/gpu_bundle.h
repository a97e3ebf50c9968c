// The GPU check's bundle, written here and judged here (docs/gpu.md, "The GPU check"): the programs
// the GPU pipeline compiles, as tools/gpu_runner reads them on a machine with only a CUDA driver,
// and the comparison of what it brings back with eager results on the CPU.
//
//   FLUXION_TEST_GPU_BUNDLE=<dir>        writes <dir>/check (test_gpu_bundle.cpp: op-table programs
//                                        and composed transforms, with inputs) and <dir>/bench
//                                        (test_gpu_bundle_bench.cpp: the benchmark programs)
//   FLUXION_TEST_GPU_BUNDLE_EVERY=<k>    check/ holds each op's first program and every k-th one
//                                        (default 1: all of them); CI's small bundle
//   FLUXION_TEST_GPU_BENCH_SIZE=small    the benchmarks at sizes the emulated GPU runs in seconds
//   FLUXION_TEST_GPU_RESULTS=<dir>       compares <dir>'s outputs (the runner's results) with eager
//                                        results, case by case, by name
#pragma once
#include <fluxion.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "op_table.h"

namespace gpu_bundle {

namespace fx = fluxion;

/// The setting's value, or null when it is not set or empty.
const char* setting(const char* name);

/// Compiles `p` for the GPU and writes it as the case directory `dir` (tools/gpu_bundle.cpp reads
/// it): plan.txt, the PTX modules, kernels.mlir (the pipeline's kernels before NVVM: the emulated
/// GPU's host code), and the inputs -- `args` then the program's constants -- as files, or, when
/// `with_data` is false, as fill32 patterns the runner fills on the GPU (0.5 in every float
/// element, 0 in every integer one). Throws the pipeline's CompileError.
void write_case(const std::string& dir, const fx::Program& p, const std::vector<fx::Array>& args, bool with_data);

/// A program of transforms composed (jit of grad, jit of vmap, ...), with its eager result on the
/// CPU and the tolerance to hold it to.
struct Composed {
  std::string what;
  fx::Program program;
  std::vector<fx::Array> args;
  std::function<std::vector<fx::Array>()> eager;
  optable::Tolerance tol;
};
/// The composed cases of the check (gpu_bundle_composed.cpp).
std::vector<Composed> composed_cases();

/// A results directory's cases.txt and status.txt: name -> (case number, "ok" or the error).
struct Result {
  int n = -1;
  std::string status;
};
std::map<std::string, Result> read_results(const std::string& dir);

/// Case `n`'s output `i` from a results directory, as an array of `like`'s type.
fx::Array read_output(const std::string& dir, int n, size_t i, const fx::AbstractArray& like);

}  // namespace gpu_bundle
