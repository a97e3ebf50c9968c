// Data-parallel training, the seeds' DistributedDataParallel example in Fluxion: an MLP
// (784-512-10) whose every batch is split over the devices; each device computes the gradient of
// its shard's loss, fx::pmean averages the gradients over the devices, and every device applies
// the same SGD update. The program then trains the same model on one device, on whole batches,
// and checks that the parameters after K steps agree within float tolerance.
//
//   FLUXION_CPU_DEVICES=4 build/examples/data_parallel [steps] [global batch]
//   FLUXION_CPU_DEVICES=2 mpirun -np 2 --oversubscribe build/examples/data_parallel 3 64
//
// Under mpirun every process makes the same global batches (the same keys) and feeds the rows of
// its own devices; the gradients are averaged over all processes' devices.
#include <fluxion.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace fx = fluxion;

struct Params {
  fx::Array w1, b1, w2, b2;
};
FLUXION_TREE(Params, w1, b1, w2, b2);

fx::Array loss(const Params& p, const fx::Array& x, const fx::Array& y) {
  fx::Array h = fx::nn::relu(fx::matmul(x, p.w1) + p.b1);
  return -fx::mean(fx::sum(fx::nn::log_softmax(fx::matmul(h, p.w2) + p.b2) * y, -1));
}

Params sgd(const Params& p, const Params& g) {
  auto step = [](const fx::Array& w, const fx::Array& dw) { return w - 0.1f * dw; };
  return Params{step(p.w1, g.w1), step(p.b1, g.b1), step(p.w2, g.w2), step(p.b2, g.b2)};
}

Params init(const fx::Array& key) {
  auto [k1, k2] = fx::random::split(key);
  return Params{fx::random::normal(k1, {784, 512}) * 0.05f, fx::zeros({512}), fx::random::normal(k2, {512, 10}) * 0.05f,
                fx::zeros({10})};
}

// Batch `step`: inputs [batch, 784] and one-hot labels [batch, 10], the same in every process.
std::pair<fx::Array, fx::Array> batch(int step, int64_t size) {
  auto [kx, ky] = fx::random::split(fx::random::fold_in(fx::random::key(1), step));
  fx::Array labels = fx::random::randint(ky, {size}, 0, 10);
  return {fx::random::normal(kx, {size, 784}), fx::nn::one_hot(labels, 10)};
}

// This process's devices' rows of a global batch, as [local devices, rows per device, ...].
fx::Array local_shards(const fx::Array& global) {
  const int64_t devices = int64_t(fx::devices("cpu").size()), local = int64_t(fx::local_devices("cpu").size());
  const int64_t rows = global.shape()[0] / devices, first = fx::local_devices("cpu")[0].id * rows;
  fx::Array mine = fx::slice(global, {first, 0}, {first + local * rows, global.shape()[1]});
  return fx::reshape(mine, {local, rows, global.shape()[1]});
}

int main(int argc, char** argv) {
  fx::distributed::initialize();
  const int steps = argc > 1 ? std::atoi(argv[1]) : 10;
  const int64_t global_batch = argc > 2 ? std::atoll(argv[2]) : 512;
  const int me = fx::distributed::process_index();
  const int64_t devices = int64_t(fx::devices("cpu").size());
  if (global_batch % devices) {
    std::fprintf(stderr, "the global batch %lld is not a multiple of the %lld devices\n", (long long)global_batch,
                 (long long)devices);
    return 2;
  }

  // Each device: the gradient of its shard's loss, averaged over the devices, then the update.
  auto dp_step = fx::pmap(
      [](const Params& p, const fx::Array& x, const fx::Array& y) {
        Params g = fx::tree::map([](const fx::Array& d) { return fx::pmean(d, "batch"); }, fx::grad(loss)(p, x, y));
        return sgd(p, g);
      },
      "batch", fx::in_axes(fx::none, 0, 0), fx::out_axes(fx::none));
  auto single_step = fx::jit([](const Params& p, const fx::Array& x, const fx::Array& y) { return sgd(p, fx::grad(loss)(p, x, y)); });

  const Params start = init(fx::random::key(0));
  Params parallel = start, single = start;
  for (int s = 0; s < steps; ++s) {
    auto [x, y] = batch(s, global_batch);
    parallel = dp_step(parallel, local_shards(x), local_shards(y));
    single = single_step(single, x, y);
  }

  // The two runs agree within float tolerance (sums in different orders).
  double worst = 0;
  const std::vector<fx::Array> a = fx::tree::leaves(parallel), b = fx::tree::leaves(single);
  for (size_t i = 0; i < a.size(); ++i) {
    std::vector<float> u = a[i].to_vector<float>(), v = b[i].to_vector<float>();
    for (size_t k = 0; k < u.size(); ++k) worst = std::max(worst, std::fabs(double(u[k]) - v[k]) / (1e-3 + std::fabs(v[k])));
  }
  auto [x, y] = batch(0, global_batch);
  std::printf("process %d: %d steps on %lld devices (global batch %lld): loss %.5f, largest relative difference "
              "from one device %.2e\n",
              me, steps, (long long)devices, (long long)global_batch, loss(single, x, y).item<float>(), worst);
  if (worst > 1e-3) {
    std::printf("process %d: FAILED the data-parallel parameters differ from the single-device run\n", me);
    return 1;
  }
  return 0;
}
