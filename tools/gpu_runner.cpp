// The GPU check's runner: its modes (gpu_runner.h) and `env`.
#include <gnu/libc-version.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "runtime/cuda_driver_api.h"
#include "tools/gpu_runner.h"

namespace fluxion::gpu_runner {

int run_env() {
  const std::string path = cuda::driver_path();
  std::cout << "glibc " << gnu_get_libc_version() << "; the CUDA driver " << path;
  const cuda::DriverLibrary* d = cuda::driver();
  if (!d) {
    std::cout << " is not usable: " << cuda::unavailable_reason() << "\n";
    return 1;
  }
  int version = 0;
  d->check(d->api().cuDriverGetVersion(&version), "cuDriverGetVersion");
  std::cout << (d->emulated() ? " (the emulated GPU)" : " loads (found as the library's dlopen finds it)") << ", CUDA "
            << version / 1000 << "." << version % 1000 / 10 << "; " << cuda::device_count() << " device(s), cuda:0 is "
            << cuda::device_name(0) << "\n";
  return 0;
}

}  // namespace fluxion::gpu_runner

namespace {

int usage() {
  std::cerr << "usage: fluxion_gpu_runner env\n"
               "       fluxion_gpu_runner check BUNDLE/check RESULTS SECONDS\n"
               "       fluxion_gpu_runner bench BUNDLE/bench OUT.json REPS\n"
               "(docs/gpu.md, \"The GPU check\"; FLUXION_CUDA_DRIVER names the driver, 'emulate' the emulated GPU)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  namespace r = fluxion::gpu_runner;
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "env" && argc == 2) return r::run_env();
    if (mode == "check" && argc == 5) return r::run_check(argv[2], argv[3], std::atof(argv[4]), "/proc/self/exe");
    if (mode == "worker" && argc == 5) return r::run_worker(argv[2], argv[3], std::stoul(argv[4]));
    if (mode == "bench" && argc == 5) return r::run_bench(argv[2], argv[3], std::atoi(argv[4]));
  } catch (const std::exception& e) {
    std::cerr << "fluxion_gpu_runner " << mode << ": " << e.what() << "\n";
    return 1;
  }
  return usage();
}
