// Faults users rely on Fluxion to survive (issue 35, item 4): a process killed (SIGKILL) while it
// writes a checkpoint leaves the previous one intact and loadable; a write that fails part way (a
// file-size limit: the write call fails as on a full disk) is an IOError and leaves the old file;
// an allocation that fails under a memory limit is a typed error naming the op and the bytes, and
// the process goes on. (A damaged or truncated disk-cache entry is a miss and is recompiled:
// tests/test_disk_cache.cpp.)
#include <doctest/doctest.h>
#include <fluxion.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_helpers.h"

extern char** environ;

namespace fx = fluxion;
namespace fs = std::filesystem;

namespace {

fs::path scratch_dir(const char* what) {
  fs::path d = fs::temp_directory_path() / ("fluxion_faults_" + std::string(what) + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Two checkpoints that differ in every element, large enough that a write takes a while.
std::map<std::string, fx::Array> version(float v) {
  return {{"w", fx::full({1 << 22}, v)}, {"b", fx::full({1024}, -v)}};
}
// Which version the file holds, checking that every element agrees with it (0: neither).
float version_of(const std::string& path) {
  const auto got = fx::load<std::map<std::string, fx::Array>>(path);
  const std::vector<float> w = got.at("w").to_vector<float>(), b = got.at("b").to_vector<float>();
  for (float v : w)
    if (v != w[0]) return 0;
  for (float v : b)
    if (v != -w[0]) return 0;
  return w[0];
}

}  // namespace

TEST_CASE("faults: a process killed while it writes a checkpoint leaves the previous one loadable") {
  const char* child_path = std::getenv("FLUXION_TEST_FAULT_CHECKPOINT");
  if (child_path) {  // the child: rewrites the checkpoint until it is killed
    for (int i = 0;; ++i) fx::save(child_path, version(float(2 + i % 2)));
  }
  const fs::path dir = scratch_dir("kill");
  const std::string path = (dir / "ckpt.safetensors").string();
  fx::save(path, version(1));
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  int killed_mid_run = 0;
  for (int delay_ms : {5, 20, 45, 90, 150, 230, 330, 450}) {
    const std::string env_var = "FLUXION_TEST_FAULT_CHECKPOINT=" + path;
    std::vector<std::string> env{env_var};
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    std::vector<char*> envp;
    for (std::string& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string filter = "--test-case=faults: a process killed*";
    char* argv[] = {const_cast<char*>(self.c_str()), filter.data(), nullptr};
    pid_t pid = 0;
    REQUIRE(posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, envp.data()) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    killed_mid_run += WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    CAPTURE(delay_ms);
    const float v = version_of(path);  // whole, one of the versions: never a mix or a torn file
    CHECK((v == 1.f || v == 2.f || v == 3.f));
  }
  CHECK(killed_mid_run == 8);
  // A killed writer cannot remove its temporary file: it is left beside, named for the checkpoint.
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    CHECK((name == "ckpt.safetensors" || name.rfind("ckpt.safetensors.tmp.", 0) == 0));
  }
  fs::remove_all(dir);
}

TEST_CASE("faults: a write that fails part way (a file-size limit) is an IOError and leaves the old file") {
  const fs::path dir = scratch_dir("fsize");
  for (const char* name : {"ckpt.safetensors", "ckpt.npz"}) {
    const std::string path = (dir / name).string();
    fx::save(path, version(1));
    struct rlimit old {};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
    struct rlimit small = old;
    small.rlim_cur = 1 << 20;  // 1 MiB: the 16 MiB checkpoint's write fails after the first MiB
    void (*old_handler)(int) = ::signal(SIGXFSZ, SIG_IGN);  // EFBIG from write(), not a signal
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    const std::string message = test_helpers::error_of([&] { fx::save(path, version(2)); });
    ::setrlimit(RLIMIT_FSIZE, &old);
    ::signal(SIGXFSZ, old_handler);
    CAPTURE(message);
    CHECK(message.rfind("IOError: " + path + ": write failed", 0) == 0);
    CHECK(version_of(path) == 1.f);
  }
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  CHECK(files == 2);  // the temporary files were removed
  fs::remove_all(dir);
}

TEST_CASE("faults: an allocation that fails under a memory limit is a DeviceError, and the process goes on") {
  // RLIMIT_AS: what this process has mapped now, plus 1 GiB; then ask for 4 GiB.
  std::ifstream status("/proc/self/status");
  uint64_t vm_kb = 0;
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmSize:", 0) == 0) vm_kb = std::stoull(line.substr(7));
  REQUIRE(vm_kb > 0);
  struct rlimit old {};
  REQUIRE(::getrlimit(RLIMIT_AS, &old) == 0);
  struct rlimit limit = old;
  limit.rlim_cur = rlim_t(vm_kb * 1024 + (uint64_t(1) << 30));
  REQUIRE(::setrlimit(RLIMIT_AS, &limit) == 0);
  const std::string message = test_helpers::error_of([] { fx::ones({int64_t(1) << 30}, fx::float32); });
  const float after = fx::sum(fx::ones({1000})).item<float>();  // still under the limit: works
  ::setrlimit(RLIMIT_AS, &old);
  CAPTURE(message);
  CHECK(message.find("DeviceError: broadcast_in_dim") == 0);
  CHECK(message.find("cannot allocate 4294967296 bytes for its result f32[1073741824]") != std::string::npos);
  CHECK(message.find("test_faults.cpp") != std::string::npos);
  CHECK(after == 1000.f);
}
