// `check`: every program of a bundle's check/ list, run as the op-table tests run them (gpu_runner.h).
// A supervisor that never touches the GPU starts worker processes; a worker runs programs from a
// given one on until the list ends or an error loses the GPU's context (an illegal address, a
// launch failure: on a GPU only a new process recovers), and the supervisor starts the next worker
// after it. A worker that dies or hangs costs its program (recorded as such), not the run.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include "ir/error.h"
#include "runtime/gpu_launch.h"
#include "tools/gpu_runner.h"

namespace fluxion::gpu_runner {

namespace {

constexpr int kContextLost = 3;  // a worker's exit status after an error that lost the context

// One program: inputs in, outputs and temporaries poisoned, each launch queued and waited for, the
// outputs written to `out`. Empty, or the error.
std::string run_one(cuda::Gpu& gpu, const std::string& dir, const std::string& out) {
  try {
    const Case c = read_case(dir);
    const std::shared_ptr<const void> host_code = prepare_host_code(c);
    DeviceBuffers buffers{gpu, {}}, temporaries{gpu, {}};
    for (const Input& in : c.inputs) put_input(gpu, buffers.add(in.bytes), c, in);
    for (size_t bytes : c.outputs) poison(gpu, buffers.add(bytes), bytes);
    for (size_t bytes : c.program.temporary_bytes) poison(gpu, temporaries.add(bytes), bytes);
    const Loaded loaded(gpu, c.program);
    gpu.synchronize();
    std::vector<uint64_t> slots;
    for (size_t i = 0; i < c.program.launches.size(); ++i) {
      const runtime::GpuLaunch& l = c.program.launches[i];
      try {
        std::vector<void*> params = runtime::pack_params(l, buffers.ptrs, temporaries.ptrs, slots);
        if (l.kind == runtime::GpuLaunch::Kind::library) {
          std::vector<int64_t> args = runtime::call_arguments(l, slots);
          library_call()(gpu, l.kernel, args);
        } else {
          gpu.launch(loaded.functions[i], l.grid.data(), l.block.data(), l.shared_bytes, params.data());
        }
        gpu.synchronize();
      } catch (const std::exception& e) {
        const bool call = l.kind == runtime::GpuLaunch::Kind::library;
        return "launch " + std::to_string(i) + " of " + std::to_string(c.program.launches.size()) + " (" + l.kernel +
               (call ? std::string(", a library call") : " in module " + c.program.modules[size_t(l.module)].name) +
               "): " + e.what();
      }
    }
    std::filesystem::create_directories(out);
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      std::vector<char> host(c.outputs[i]);
      gpu.copy_to_host(host.data(), buffers.ptrs[c.inputs.size() + i], host.size());
      std::ofstream(out + "/out" + std::to_string(i) + ".bin", std::ios::binary).write(host.data(), std::streamsize(host.size()));
    }
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s.empty() ? "an error without a message" : s;
}

// status.txt: case number -> its line's rest ("ok" or the error).
std::map<size_t, std::string> statuses(const std::string& results) {
  std::map<size_t, std::string> out;
  std::ifstream f(results + "/status.txt");
  for (std::string line; std::getline(f, line);)
    if (const size_t space = line.find(' '); space != std::string::npos) out[std::stoul(line)] = line.substr(space + 1);
  return out;
}

void append_status(const std::string& results, size_t n, const std::string& what) {
  std::ofstream(results + "/status.txt", std::ios::app) << n << " " << one_line(what) << "\n";
}

// Starts `self worker dir results first`; its pid.
pid_t start_worker(const char* self, const std::string& dir, const std::string& results, size_t first) {
  const std::string from = std::to_string(first);
  const pid_t pid = fork();
  if (pid == 0) {
    execl(self, self, "worker", dir.c_str(), results.c_str(), from.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  if (pid < 0) throw std::runtime_error("fork failed");
  return pid;
}

// Waits for `pid` until `deadline`; its wait status, or -1 after killing it at the deadline.
int wait_until(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string how_it_ended(int status) {
  if (status == -1) return "still running at the end of the time budget (killed)";
  if (WIFSIGNALED(status)) return "the worker process died of signal " + std::to_string(WTERMSIG(status));
  return "the worker process exited with status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

int run_worker(const std::string& dir, const std::string& results, size_t first) {
  cuda::Gpu& gpu = cuda::Gpu::get(0);
  std::ofstream(results + "/device.txt") << cuda::device_name(0) << "\n";
  const auto cases = read_list(dir + "/cases.txt");
  for (size_t n = first; n < cases.size(); ++n) {
    const std::string error = run_one(gpu, dir + "/" + cases[n].first, results + "/" + cases[n].first);
    append_status(results, n, error.empty() ? "ok" : error);
    if (error.empty()) continue;
    std::cerr << "case " << n << " (" << cases[n].second << "): " << error << "\n";
    if (context_lost(gpu)) return kContextLost;
  }
  return 0;
}

int run_check(const std::string& dir, const std::string& results, double seconds, const char* self) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  std::filesystem::create_directories(results);
  std::filesystem::copy_file(dir + "/cases.txt", results + "/cases.txt", std::filesystem::copy_options::overwrite_existing);
  const size_t total = read_list(dir + "/cases.txt").size();
  size_t first = 0;
  while (first < total && std::chrono::steady_clock::now() < deadline) {
    std::filesystem::remove(results + "/device.txt");
    const int status = wait_until(start_worker(self, dir, results, first), deadline);
    if (!std::filesystem::exists(results + "/device.txt")) {  // it never reached the GPU (its reason is on stderr)
      std::cout << "the worker could not open the GPU: " << how_it_ended(status) << "\n";
      break;
    }
    const auto done = statuses(results);
    const size_t next = done.empty() ? 0 : done.rbegin()->first + 1;
    const bool clean = status != -1 && WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == kContextLost);
    if (!clean && next < total) append_status(results, next, "did not finish: " + how_it_ended(status));
    first = clean ? next : next + 1;
    if (status == -1) break;
  }
  const auto done = statuses(results);
  size_t failed = 0;
  for (const auto& [n, s] : done) failed += s != "ok";
  std::string device;
  std::getline(std::ifstream(results + "/device.txt"), device);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << (device.empty() ? "no device" : device) << ": " << done.size() << " of " << total << " cases ran in "
            << int(took + 0.5) << " s, " << failed << " failed\n";
  size_t shown = 0;
  for (const auto& [n, s] : done)
    if (s != "ok" && shown++ < 40) std::cout << n << " " << s << "\n";
  return 0;
}

}  // namespace fluxion::gpu_runner
