// Run under `mpirun -np N` (tests/distributed/run_mpi.sh): every process checks pmap and the
// collectives across processes against values it computes on its own, and exits 0 when all agree.
//   distributed_check            collectives, grad, the global device list
//   distributed_check mismatch   process 1 calls pmap with other shapes: every process raises
//                                DeviceError naming both
//   distributed_check hang       process 1 stops answering: the others raise DeviceError within
//                                FLUXION_COLLECTIVE_TIMEOUT seconds (and exit 3, ending the job)
//   distributed_check checkpoint DIR   a sharded checkpoint in DIR: each process writes its own
//                                devices' blocks; loading on the mesh it was saved on, onto the
//                                devices in reverse order (blocks from the other processes' files)
//                                and whole gives the array every process knows
#include <fluxion.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

namespace fx = fluxion;

namespace {
int failures = 0;
void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "process %d: FAILED %s\n", fx::distributed::process_index(), what.c_str());
  }
}

int collectives() {
  const int procs = fx::distributed::process_count(), me = fx::distributed::process_index();
  const int64_t local = int64_t(fx::local_devices("cpu").size()), global = int64_t(fx::devices("cpu").size());
  expect(global == local * procs, "the global device list has every process's devices");
  expect(fx::local_devices("cpu")[0].id == me * local, "this process owns its block of the list");
  // Device k (global) holds [k, 10k]; the sums are over every process's devices.
  std::vector<float> v;
  for (int64_t k = 0; k < local; ++k) v.insert(v.end(), {float(me * local + k), float(10 * (me * local + k))});
  fx::Array x = fx::array(v, {local, 2});
  auto f = [](const fx::Array& x) {
    const int64_t n = fx::axis_size("i");
    std::vector<std::pair<int64_t, int64_t>> shift;
    for (int64_t r = 0; r < n; ++r) shift.push_back({r, (r + 1) % n});
    return std::vector<fx::Array>{fx::psum(x, "i"), fx::pmax(x, "i"), fx::all_gather(x, "i"), fx::ppermute(x, "i", shift),
                                  fx::axis_index("i"), fx::pmean(fx::astype(x, fx::float16), "i")};
  };
  std::vector<fx::Array> out = fx::pmap(f, "i")(x);
  const float sum = float(global * (global - 1) / 2);
  for (int64_t k = 0; k < local; ++k) {
    const int64_t g = me * local + k, prev = (g + global - 1) % global;
    std::vector<float> s = out[0].shards()[size_t(k)].to_vector<float>();
    expect(s[0] == sum && s[1] == 10 * sum, "psum");
    expect(out[1].shards()[size_t(k)].to_vector<float>()[0] == float(global - 1), "pmax");
    std::vector<float> all = out[2].shards()[size_t(k)].to_vector<float>();
    bool gathered = all.size() == size_t(2 * global);
    for (int64_t c = 0; gathered && c < global; ++c) gathered = all[size_t(2 * c)] == float(c);
    expect(gathered, "all_gather");
    expect(out[3].shards()[size_t(k)].to_vector<float>()[0] == float(prev), "ppermute");
    expect(out[4].shards()[size_t(k)].item<int32_t>() == int32_t(g), "axis_index");
    expect(std::fabs(out[5].shards()[size_t(k)].to_vector<float>()[0] - sum / float(global)) < 0.01f, "pmean f16");
  }
  // pmap of grad with a pmean'd loss: the gradient is each device's own 2x.
  fx::Array g = fx::pmap(fx::grad([](const fx::Array& x) { return fx::pmean(fx::sum(x * x), "i"); }), "i")(x);
  std::vector<float> gv = g.to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) expect(gv[i] == 2 * v[i], "grad of pmean'd loss");
  return failures;
}

int mismatch() {
  const int me = fx::distributed::process_index();
  const int64_t local = int64_t(fx::local_devices("cpu").size());
  try {
    fx::pmap([](const fx::Array& x) { return fx::psum(x, "i"); }, "i")(fx::zeros({local, me == 1 ? 3 : 2}));
  } catch (const fx::DeviceError& e) {
    const std::string m = e.what();
    const std::string l = std::to_string(local);
    expect(m.find("different arguments") != std::string::npos && m.find("f32[" + l + ",3]") != std::string::npos &&
               m.find("f32[" + l + ",2]") != std::string::npos,
           "the mismatch names both signatures: " + m);
    return failures;
  }
  expect(false, "a mismatch was not detected");
  return failures;
}

int hang() {
  const int me = fx::distributed::process_index();
  const int64_t local = int64_t(fx::local_devices("cpu").size());
  if (me == 1) {  // stops answering
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    fx::pmap([](const fx::Array& x) { return fx::psum(x, "i"); }, "i")(fx::ones({local, 2}));
  } catch (const fx::DeviceError& e) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("process %d raised DeviceError after %.1f s: %s\n", me, s, e.what());
    std::fflush(stdout);
    std::_Exit(3);  // MPI is unusable now: end the job (the launcher stops the others)
  }
  std::printf("process %d: FAILED no DeviceError\n", me);
  return 1;
}
bool same(const fx::Array& a, const fx::Array& b) {
  return a.shape() == b.shape() && a.to_vector<float>() == b.to_vector<float>();
}

int checkpoint(const std::string& dir) {
  const int procs = fx::distributed::process_count(), me = fx::distributed::process_index();
  const int64_t n = int64_t(fx::devices("cpu").size()), local = int64_t(fx::local_devices("cpu").size());
  const fx::Array x = fx::reshape(fx::arange(float(4 * n * 3)), {4 * n, 3});  // the same in every process
  const fx::Mesh mesh = fx::make_mesh({n}, {"data"});
  std::map<std::string, fx::Array> tree{{"x", fx::device_put(x, fx::NamedSharding(mesh, fx::P("data")))},
                                        {"step", fx::scalar(7.f)}};
  fx::save(dir, tree);
  fx::save(dir, tree);  // again: the new generation replaces the first
  // One file per process, holding its own devices' blocks (and process 0 the unsharded step).
  int files = 0;
  std::string own;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    const std::string name = f.path().filename().string();
    files += name.starts_with("shards-");
    if (name.starts_with("shards-" + std::to_string(me) + ".")) own = f.path().string();
  }
  expect(files == procs, "one shard file per process, got " + std::to_string(files));
  const auto mine = fx::load<std::map<std::string, fx::Array>>(own);
  expect(int64_t(mine.size()) == local + (me == 0 ? 1 : 0), "a process's file holds its blocks only");
  for (int64_t k = 0; k < local; ++k)
    expect(mine.count("x#" + std::to_string(me * local + k)) == 1, "block " + std::to_string(me * local + k) + " in its owner's file");
  // On the mesh it was saved on, onto the devices in reverse order, and whole.
  const auto back = fx::load(dir, tree);
  std::vector<fx::Device> reversed = fx::devices("cpu");
  std::reverse(reversed.begin(), reversed.end());
  const fx::NamedSharding flipped(fx::make_mesh({n}, {"data"}, reversed), fx::P("data"));
  const auto moved = fx::load(dir, std::map<std::string, fx::Array>{{"x", fx::device_put(x, flipped)}, {"step", fx::scalar(0.f)}});
  for (int64_t k = 0; k < local; ++k) {
    const int64_t g = me * local + k;
    const fx::Array want = fx::slice(x, {4 * g, 0}, {4 * g + 4, 3});
    expect(same(back.at("x").shards()[size_t(k)], want), "block " + std::to_string(g) + " on the saved mesh");
    // Position p of the reversed mesh is device n-1-p; this process's device g sits at n-1-g.
    const int64_t p = n - 1 - g;
    const std::vector<fx::Array> shards = moved.at("x").shards();
    bool found = false;
    for (const fx::Array& s : shards) found = found || same(s, fx::slice(x, {4 * p, 0}, {4 * p + 4, 3}));
    expect(found && moved.at("x").sharding() == flipped, "block " + std::to_string(p) + " resharded onto device " + std::to_string(g));
  }
  expect(back.at("step").item<float>() == 7.f, "the unsharded leaf");
  const auto whole = fx::load(dir, std::map<std::string, fx::Array>{{"x", x}, {"step", fx::scalar(0.f)}});
  expect(!whole.at("x").is_sharded() && same(whole.at("x"), x), "the whole array, read from every process's file");
  return failures;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    fx::distributed::initialize();
    const std::string mode = argc > 1 ? argv[1] : "";
    const int rc = mode == "mismatch" ? mismatch() : mode == "hang" ? hang() : mode == "checkpoint" && argc > 2 ? checkpoint(argv[2]) : collectives();
    if (rc == 0) std::printf("process %d of %d: ok\n", fx::distributed::process_index(), fx::distributed::process_count());
    return rc == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "process %d: %s\n", fx::distributed::process_index(), e.what());
    return 1;
  }
}
