// Internal to the emulated GPU (runtime/cuda_emulator*.cpp): its state -- the allocation table,
// loaded modules, the sticky error -- and the helpers the driver entry points and the launch
// share. Every entry point holds `mu` for its whole call, kernels included.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "runtime/cuda_emulator.h"

namespace fluxion::runtime::cuda::emulator::detail {

// CUresult codes the emulator returns.
enum Code : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNotInitialized = 3,
  kInvalidDevice = 101,
  kInvalidContext = 201,
  kInvalidPtx = 218,
  kInvalidHandle = 400,
  kNotFound = 500,
  kIllegalAddress = 700,
  kLaunchFailed = 719,
  kNotSupported = 801,
};

// What the PTX says of one .entry.
struct PtxEntry {
  std::string name;
  std::vector<std::string> params;          // each parameter's PTX type (".u64", ".f32", ...)
  std::array<uint32_t, 3> maxntid{0, 0, 0};  // 0: no .maxntid
  size_t static_shared = 0;                 // the module's .shared declarations, in bytes
};

/// The entries of a PTX text (the parser of cuda_emulator.cpp).
std::vector<PtxEntry> parse_ptx(const std::string& ptx);

struct Module;
struct Function {
  const Module* module = nullptr;
  PtxEntry entry;
  int max_dynamic_shared = 0;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; 0: not opted in
};

struct Module {
  std::vector<PtxEntry> entries;
  std::weak_ptr<const HostModule> host;
  std::vector<std::unique_ptr<Function>> functions;
};

// A CUDA event: streams run their work at once, so recording one is reading the host's clock.
struct Event {
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
};

struct State {
  std::mutex mu;
  std::map<uint64_t, size_t> allocations;  // device (= host) address -> bytes
  std::set<uint64_t> host_allocations;     // cuMemHostAlloc's
  int sticky = 0;                          // a sticky error's code, or 0
  std::string sticky_detail;
  std::vector<std::unique_ptr<Module>> modules;  // until cuModuleUnload (the library never unloads)
  std::map<const void*, std::unique_ptr<Event>> events;
  std::set<const void*> functions, streams;
  // register_module: PTX hash -> (PTX, its host code) pairs
  std::multimap<size_t, std::pair<std::string, std::weak_ptr<const HostModule>>> registry;
  size_t registry_swept = 64;  // the registry's size after its last sweep of expired entries
};
State& state();

/// Returns `code`, with `detail` as this thread's last error detail (what fxErrorDetail gives).
int fail(int code, const std::string& detail);
/// The same for a sticky error: every later call returns it, with the same detail, until reset().
int fail_sticky(int code, const std::string& detail);

/// Empty when [p, p + bytes) lies inside one live allocation; else why not, in words.
std::string outside_allocations(const State& s, uint64_t p, size_t bytes);

/// "0x7f..." for messages.
std::string hex(uint64_t p);

/// cuLaunchKernel, with `mu` held and the sticky error checked (cuda_emulator_launch.cpp).
int launch(const Function& f, const std::array<uint32_t, 3>& grid, const std::array<uint32_t, 3>& block,
           uint32_t dynamic_shared, void** params, void** extra);

}  // namespace fluxion::runtime::cuda::emulator::detail
