// The emulated GPU's driver entry points but the launch (runtime/cuda_emulator.h): the device,
// its context and streams, device memory and copies, modules, and errors. The launch, its checks
// and the threads of a block are cuda_emulator_launch.cpp's.
#include "runtime/cuda_emulator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>

#include "runtime/cuda_driver_api.h"
#include "runtime/cuda_emulator_state.h"

namespace fluxion::runtime::cuda::emulator {

namespace detail {

State& state() {
  static State* s = new State;  // never destroyed: kernels may run during static destruction
  return *s;
}

namespace {
thread_local std::string last_detail;
}

int fail(int code, const std::string& detail) {
  last_detail = detail;
  return code;
}

int fail_sticky(int code, const std::string& detail) {
  State& s = state();
  if (!s.sticky) {
    s.sticky = code;
    s.sticky_detail = detail;
  }
  return fail(s.sticky, s.sticky_detail);
}

std::string hex(uint64_t p) {
  std::ostringstream os;
  os << "0x" << std::hex << p;
  return os.str();
}

std::string outside_allocations(const State& s, uint64_t p, size_t bytes) {
  auto it = s.allocations.upper_bound(p);
  if (it == s.allocations.begin()) return hex(p) + " lies in no live device allocation";
  --it;
  const uint64_t base = it->first, end = base + it->second;
  if (p >= end) return hex(p) + " lies in no live device allocation";
  if (bytes > end - p)
    return hex(p) + " is " + std::to_string(p - base) + " bytes into an allocation of " + std::to_string(it->second) +
           " bytes at " + hex(base) + ", " + std::to_string(bytes - (end - p)) + " bytes short of the " +
           std::to_string(bytes) + " needed";
  return "";
}

// ---- PTX: entries, parameters, .maxntid, static shared memory ------------------------------------------

namespace {

// The next whitespace-separated word of `s` from `i`, advancing `i`.
std::string word(const std::string& s, size_t& i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  const size_t start = i;
  while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])) && s[i] != '(' && s[i] != ')' && s[i] != ',')
    ++i;
  return s.substr(start, i - start);
}

// Bytes of a `.shared .align A .b8 name[N];` declaration (0 for `.extern .shared`, the dynamic part).
size_t shared_bytes(const std::string& line) {
  if (line.find(".extern") != std::string::npos) return 0;
  size_t element = 1;
  for (const char* t : {".b16", ".u16", ".s16", ".f16"}) if (line.find(t) != std::string::npos) element = 2;
  for (const char* t : {".b32", ".u32", ".s32", ".f32"}) if (line.find(t) != std::string::npos) element = 4;
  for (const char* t : {".b64", ".u64", ".s64", ".f64"}) if (line.find(t) != std::string::npos) element = 8;
  size_t count = 1;
  if (const size_t open = line.find('['); open != std::string::npos) count = std::strtoull(line.c_str() + open + 1, nullptr, 10);
  return count * element;
}

}  // namespace

std::vector<PtxEntry> parse_ptx(const std::string& ptx) {
  std::vector<PtxEntry> entries;
  size_t shared = 0;
  std::istringstream lines(ptx);
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    if (line.compare(first, 7, ".shared") == 0 || line.find(".extern .shared") != std::string::npos) shared += shared_bytes(line);
  }
  for (size_t at = ptx.find(".entry "); at != std::string::npos; at = ptx.find(".entry ", at + 1)) {
    PtxEntry e;
    size_t i = at + 7;
    e.name = word(ptx, i);
    const size_t close = ptx.find(')', i);
    for (size_t p = ptx.find(".param", i); p != std::string::npos && p < close; p = ptx.find(".param", p + 1)) {
      size_t j = p + 6;
      std::string type = word(ptx, j);
      if (type == ".align") {  // `.param .align 8 .b8 name[16]`: a by-value struct
        word(ptx, j);
        type = word(ptx, j);
      }
      e.params.push_back(type);
    }
    const size_t body = ptx.find('{', close);
    if (const size_t m = ptx.find(".maxntid", close); m != std::string::npos && m < body) {
      const char* c = ptx.c_str() + m + 8;
      for (uint32_t& n : e.maxntid) {
        char* end = nullptr;
        n = uint32_t(std::strtoul(c, &end, 10));
        c = end;
        while (*c == ',' || *c == ' ') ++c;
      }
    }
    e.static_shared = shared;
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace detail

using namespace detail;

namespace {

constexpr int kJitErrorLogBuffer = 5, kJitErrorLogBufferBytes = 6;  // CUjit_option
constexpr int kMaxDynamicSharedSizeBytes = 8;                        // CUfunction_attribute
constexpr int kSharedOptInLimit = 227 << 10;                         // sm_90's opt-in bytes a block
constexpr uint64_t kAlignment = 256;                                 // cudaMalloc's
int kContext;                                                        // the primary context's handle

struct Stream {};

// The codes a caller can meet, with CUDA's names and texts.
struct ErrorText {
  int code;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {kSuccess, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {kInvalidDevice, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {kInvalidContext, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {kInvalidPtx, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {kNotFound, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {kIllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {kLaunchFailed, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {kNotSupported, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};
const ErrorText* error_text(int code) {
  for (const ErrorText& e : kErrors)
    if (e.code == code) return &e;
  return nullptr;
}

int ok() { return fail(kSuccess, ""); }
// Calls on the context return the sticky error once there is one.
int sticky() { return fail(state().sticky, state().sticky_detail); }

int init(unsigned flags) { return flags == 0 ? ok() : fail(kInvalidValue, "cuInit takes flags 0"); }

int get_error_name(int code, const char** name) {
  const ErrorText* e = error_text(code);
  if (!e || !name) return kInvalidValue;
  *name = e->name;
  return kSuccess;
}

int get_error_string(int code, const char** text) {
  const ErrorText* e = error_text(code);
  if (!e || !text) return kInvalidValue;
  *text = e->text;
  return kSuccess;
}

int device_get_count(int* n) {
  if (!n) return fail(kInvalidValue, "cuDeviceGetCount: a null count");
  *n = 1;
  return ok();
}

int device_get(int* dev, int ordinal) {
  if (!dev) return fail(kInvalidValue, "cuDeviceGet: a null device");
  if (ordinal != 0) return fail(kInvalidDevice, "the emulated driver has one device, ordinal 0, not " + std::to_string(ordinal));
  *dev = 0;
  return ok();
}

int device_get_name(char* name, int length, int dev) {
  if (dev != 0) return fail(kInvalidDevice, "device " + std::to_string(dev));
  if (!name || length <= 0) return fail(kInvalidValue, "cuDeviceGetName: no room for the name");
  std::strncpy(name, emulator::device_name(), size_t(length) - 1);
  name[length - 1] = '\0';
  return ok();
}

int primary_ctx_retain(Handle* ctx, int dev) {
  if (dev != 0) return fail(kInvalidDevice, "device " + std::to_string(dev));
  *ctx = &kContext;
  return ok();
}

int ctx_set_current(Handle ctx) {
  return ctx == nullptr || ctx == &kContext ? ok() : fail(kInvalidContext, "a context the emulated driver did not make");
}

int stream_create(Handle* stream, unsigned) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().sticky) return sticky();
  auto* s = new Stream;  // never destroyed (there is no cuStreamDestroy in the table)
  state().streams.insert(s);
  *stream = s;
  return ok();
}

// Work runs when it is queued, so a stream is always done; what is left to report is a sticky error.
int stream_synchronize(Handle stream) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (stream && !state().streams.count(stream)) return fail(kInvalidHandle, "cuStreamSynchronize: not a stream");
  return sticky();
}

int mem_alloc(DevicePtr* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().sticky) return sticky();
  if (!p || bytes == 0) return fail(kInvalidValue, "cuMemAlloc of 0 bytes");
  void* mem = std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  if (!mem) return fail(kOutOfMemory, "the host could not give " + std::to_string(bytes) + " bytes");
  std::memset(mem, 0xFF, bytes);  // not zeros: a kernel that reads what it never wrote shows it
  *p = reinterpret_cast<uint64_t>(mem);
  state().allocations.emplace(*p, bytes);
  return ok();
}

int mem_free(DevicePtr p) {
  std::lock_guard<std::mutex> lock(state().mu);
  auto it = state().allocations.find(p);
  if (it == state().allocations.end())
    return fail(kInvalidValue, "cuMemFree of " + hex(p) + ", which is not the start of a live allocation");
  state().allocations.erase(it);
  std::free(reinterpret_cast<void*>(p));
  return state().sticky ? sticky() : ok();
}

int mem_host_alloc(void** p, size_t bytes, unsigned) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().sticky) return sticky();
  if (!p || bytes == 0) return fail(kInvalidValue, "cuMemHostAlloc of 0 bytes");
  *p = std::malloc(bytes);
  if (!*p) return fail(kOutOfMemory, "the host could not give " + std::to_string(bytes) + " pinned bytes");
  state().host_allocations.insert(reinterpret_cast<uint64_t>(*p));
  return ok();
}

int copy(const char* call, void* to, const void* from, size_t bytes, uint64_t device, Handle stream) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().sticky) return sticky();
  if (stream && !state().streams.count(stream)) return fail(kInvalidHandle, std::string(call) + ": not a stream");
  if (bytes == 0) return ok();
  if (std::string why = outside_allocations(state(), device, bytes); !why.empty())
    return fail(kInvalidValue, std::string(call) + " of " + std::to_string(bytes) + " bytes: the device address " + why);
  std::memcpy(to, from, bytes);
  return ok();
}

int memcpy_htod(DevicePtr dst, const void* src, size_t bytes, Handle stream) {
  return copy("cuMemcpyHtoDAsync", reinterpret_cast<void*>(dst), src, bytes, dst, stream);
}

int memcpy_dtoh(void* dst, DevicePtr src, size_t bytes, Handle stream) {
  return copy("cuMemcpyDtoHAsync", dst, reinterpret_cast<const void*>(src), bytes, src, stream);
}

// The JIT's error log, where the caller asked for one (CU_JIT_ERROR_LOG_BUFFER and its size).
void write_log(unsigned n, const int* options, void** values, const std::string& text) {
  char* buffer = nullptr;
  size_t size = 0;
  for (unsigned i = 0; options && values && i < n; ++i) {
    if (options[i] == kJitErrorLogBuffer) buffer = static_cast<char*>(values[i]);
    if (options[i] == kJitErrorLogBufferBytes) size = reinterpret_cast<uintptr_t>(values[i]);
  }
  if (!buffer || size == 0) return;
  std::strncpy(buffer, text.c_str(), size - 1);
  buffer[size - 1] = '\0';
}

int module_load(Handle* module, const void* image, unsigned n, int* options, void** values) {
  std::lock_guard<std::mutex> lock(state().mu);
  State& s = state();
  if (s.sticky) return sticky();
  if (!module || !image) return fail(kInvalidValue, "cuModuleLoadDataEx: no image");
  const std::string ptx = static_cast<const char*>(image);
  std::shared_ptr<const HostModule> host;
  auto [from, to] = s.registry.equal_range(std::hash<std::string>()(ptx));
  for (auto it = from; it != to && !host; ++it)
    if (it->second.first == ptx) host = it->second.second.lock();
  if (!host) {
    const std::string why = "the emulated GPU runs only PTX that compile_cuda made in this process (it has no host code "
                            "for this module, or its GpuProgram is gone)";
    write_log(n, options, values, why);
    return fail(kNotSupported, why);
  }
  auto m = std::make_unique<Module>();
  m->entries = parse_ptx(ptx);
  m->host = host;
  if (m->entries.empty()) {
    write_log(n, options, values, "no .entry in the PTX");
    return fail(kInvalidPtx, "the PTX has no .entry");
  }
  *module = m.get();
  s.modules.push_back(std::move(m));
  return ok();
}

int module_get_function(Handle* fn, Handle module, const char* name) {
  std::lock_guard<std::mutex> lock(state().mu);
  State& s = state();
  if (s.sticky) return sticky();
  Module* m = nullptr;
  for (const auto& owned : s.modules)
    if (owned.get() == module) m = owned.get();
  if (!m) return fail(kInvalidHandle, "cuModuleGetFunction: not a module");
  for (const PtxEntry& e : m->entries)
    if (e.name == name) {
      m->functions.push_back(std::make_unique<Function>(Function{m, e, 0}));
      *fn = m->functions.back().get();
      s.functions.insert(*fn);
      return ok();
    }
  return fail(kNotFound, std::string("the module has no entry ") + name);
}

int func_set_attribute(Handle fn, int attribute, int value) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().sticky) return sticky();
  if (!state().functions.count(fn)) return fail(kInvalidHandle, "cuFuncSetAttribute: not a function");
  auto* f = static_cast<Function*>(fn);
  if (attribute != kMaxDynamicSharedSizeBytes)
    return fail(kNotSupported, "the emulated driver sets only CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES");
  if (value < 0 || size_t(value) + f->entry.static_shared > size_t(kSharedOptInLimit))
    return fail(kInvalidValue, "kernel " + f->entry.name + ": " + std::to_string(value) + " bytes of dynamic shared memory with " +
                                   std::to_string(f->entry.static_shared) + " static exceed the block's " +
                                   std::to_string(kSharedOptInLimit) + " (227 KiB on sm_90)");
  f->max_dynamic_shared = value;
  return ok();
}

int launch_kernel(Handle fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
                  Handle stream, void** params, void** extra) {
  std::lock_guard<std::mutex> lock(state().mu);
  State& s = state();
  if (s.sticky) return sticky();
  if (!s.functions.count(fn)) return fail(kInvalidHandle, "cuLaunchKernel: not a function");
  if (stream && !s.streams.count(stream)) return fail(kInvalidHandle, "cuLaunchKernel: not a stream");
  return launch(*static_cast<const Function*>(fn), {gx, gy, gz}, {bx, by, bz}, shared, params, extra);
}

// ---- what the GPU check's runner needs beyond the library (tools/gpu_runner) --------------------------

int driver_get_version(int* version) {
  if (!version) return fail(kInvalidValue, "cuDriverGetVersion: a null version");
  *version = 13000;  // the CUDA API the emulated driver follows: 13.0
  return ok();
}

// cuMemsetD8Async / cuMemsetD32Async: `count` elements of `element` bytes, checked like a copy.
int fill_memory(const char* call, DevicePtr dst, uint32_t value, size_t element, size_t count, Handle stream) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().sticky) return sticky();
  if (stream && !state().streams.count(stream)) return fail(kInvalidHandle, std::string(call) + ": not a stream");
  if (count == 0) return ok();
  if (element == 4 && dst % 4) return fail(kInvalidValue, std::string(call) + ": " + hex(dst) + " is not 4-byte aligned");
  if (std::string why = outside_allocations(state(), dst, count * element); !why.empty())
    return fail(kInvalidValue, std::string(call) + " of " + std::to_string(count * element) + " bytes: the device address " + why);
  auto* p = reinterpret_cast<unsigned char*>(dst);
  if (element == 1) std::memset(p, int(value & 0xFF), count);
  for (size_t i = 0; element == 4 && i < count; ++i) std::memcpy(p + 4 * i, &value, 4);
  return ok();
}

int memset_d8(DevicePtr dst, unsigned char value, size_t count, Handle stream) {
  return fill_memory("cuMemsetD8Async", dst, value, 1, count, stream);
}

int memset_d32(DevicePtr dst, unsigned value, size_t count, Handle stream) {
  return fill_memory("cuMemsetD32Async", dst, value, 4, count, stream);
}

int memcpy_dtod(DevicePtr dst, DevicePtr src, size_t bytes, Handle stream) {
  {
    std::lock_guard<std::mutex> lock(state().mu);
    if (std::string why = outside_allocations(state(), dst, bytes); !why.empty() && !state().sticky && bytes)
      return fail(kInvalidValue, "cuMemcpyDtoDAsync of " + std::to_string(bytes) + " bytes: the destination " + why);
  }
  return copy("cuMemcpyDtoDAsync", reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes, src, stream);
}

int module_unload(Handle module) {
  std::lock_guard<std::mutex> lock(state().mu);
  State& s = state();
  auto it = std::find_if(s.modules.begin(), s.modules.end(), [&](const auto& m) { return m.get() == module; });
  if (it == s.modules.end()) return fail(kInvalidHandle, "cuModuleUnload: not a module");
  for (const auto& f : (*it)->functions) s.functions.erase(f.get());
  s.modules.erase(it);
  return s.sticky ? sticky() : ok();
}

int event_create(Handle* event, unsigned) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().sticky) return sticky();
  if (!event) return fail(kInvalidValue, "cuEventCreate: a null event");
  auto e = std::make_unique<Event>();
  *event = e.get();
  state().events.emplace(e.get(), std::move(e));
  return ok();
}

int event_destroy(Handle event) {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().events.erase(event) ? ok() : fail(kInvalidHandle, "cuEventDestroy: not an event");
}

int event_record(Handle event, Handle stream) {
  std::lock_guard<std::mutex> lock(state().mu);
  State& s = state();
  if (s.sticky) return sticky();
  auto it = s.events.find(event);
  if (it == s.events.end()) return fail(kInvalidHandle, "cuEventRecord: not an event");
  if (stream && !s.streams.count(stream)) return fail(kInvalidHandle, "cuEventRecord: not a stream");
  *it->second = Event{std::chrono::steady_clock::now(), true};
  return ok();
}

int event_synchronize(Handle event) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!state().events.count(event)) return fail(kInvalidHandle, "cuEventSynchronize: not an event");
  return sticky();
}

int event_elapsed_time(float* ms, Handle start, Handle end) {
  std::lock_guard<std::mutex> lock(state().mu);
  State& s = state();
  auto a = s.events.find(start), b = s.events.find(end);
  if (!ms || a == s.events.end() || b == s.events.end()) return fail(kInvalidHandle, "cuEventElapsedTime: not an event");
  if (!a->second->recorded || !b->second->recorded)
    return fail(kInvalidHandle, "cuEventElapsedTime: an event that was never recorded");
  *ms = std::chrono::duration<float, std::milli>(b->second->at - a->second->at).count();
  return sticky();
}

const char* error_detail() { return last_detail.c_str(); }

}  // namespace

void register_module(const std::string& ptx, std::shared_ptr<const HostModule> module) {
  std::lock_guard<std::mutex> lock(state().mu);
  State& s = state();
  const size_t key = std::hash<std::string>()(ptx);
  auto [from, to] = s.registry.equal_range(key);
  for (auto it = from; it != to;) {  // the same PTX is replaced
    if (it->second.second.expired() || it->second.first == ptx) it = s.registry.erase(it);
    else ++it;
  }
  if (s.registry.size() >= 2 * s.registry_swept) {  // the PTX of programs gone, now and then
    for (auto it = s.registry.begin(); it != s.registry.end();) it = it->second.second.expired() ? s.registry.erase(it) : ++it;
    s.registry_swept = std::max<size_t>(64, s.registry.size());
  }
  s.registry.emplace(key, std::make_pair(ptx, std::weak_ptr<const HostModule>(module)));
}

void fill_api(DriverLibrary::Api& a) {
  a.cuInit = init;
  a.cuGetErrorName = get_error_name;
  a.cuGetErrorString = get_error_string;
  a.cuDeviceGetCount = device_get_count;
  a.cuDeviceGet = device_get;
  a.cuDeviceGetName = device_get_name;
  a.cuDevicePrimaryCtxRetain = primary_ctx_retain;
  a.cuCtxSetCurrent = ctx_set_current;
  a.cuStreamCreate = stream_create;
  a.cuStreamSynchronize = stream_synchronize;
  a.cuMemAlloc = mem_alloc;
  a.cuMemFree = mem_free;
  a.cuMemHostAlloc = mem_host_alloc;
  a.cuMemcpyHtoDAsync = memcpy_htod;
  a.cuMemcpyDtoHAsync = memcpy_dtoh;
  a.cuModuleLoadDataEx = module_load;
  a.cuModuleGetFunction = module_get_function;
  a.cuFuncSetAttribute = func_set_attribute;
  a.cuLaunchKernel = launch_kernel;
  a.cuDriverGetVersion = driver_get_version;
  a.cuMemsetD8Async = memset_d8;
  a.cuMemsetD32Async = memset_d32;
  a.cuMemcpyDtoDAsync = memcpy_dtod;
  a.cuModuleUnload = module_unload;
  a.cuEventCreate = event_create;
  a.cuEventDestroy = event_destroy;
  a.cuEventRecord = event_record;
  a.cuEventSynchronize = event_synchronize;
  a.cuEventElapsedTime = event_elapsed_time;
  a.fxErrorDetail = error_detail;
}

void reset() {
  std::lock_guard<std::mutex> lock(state().mu);
  state().sticky = 0;
  state().sticky_detail.clear();
}

int sticky_error() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().sticky;
}

size_t live_allocations() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().allocations.size();
}

size_t live_bytes() {
  std::lock_guard<std::mutex> lock(state().mu);
  size_t n = 0;
  for (const auto& [p, bytes] : state().allocations) n += bytes;
  return n;
}

const char* device_name() { return "Fluxion emulated GPU (sm_90 limits)"; }

}  // namespace fluxion::runtime::cuda::emulator
