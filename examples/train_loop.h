// The examples' epoch loop: trains over a loader with a one-line progress bar (batch count, running
// loss, elapsed time), evaluates after every epoch, and checks the final accuracy against a floor.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>

namespace example {

inline void progress(int64_t done, int64_t total, double loss, double seconds) {
  const int width = 30;
  int filled = int(width * done / total);
  std::printf("\r  [%.*s%s%*s] %4lld/%lld  loss %.4f  %.1fs", filled, "==============================",
              filled < width ? ">" : "", width - filled - (filled < width), "", (long long)done, (long long)total, loss,
              seconds);
  std::fflush(stdout);
}

/// Where a run picks up: epochs before `first_epoch` were trained by an earlier process (the loader
/// is set to shuffle as that epoch would), and `after_epoch(e)` runs after each epoch (a checkpoint).
struct Resume {
  int first_epoch = 1;
  std::function<void(int epoch)> after_epoch;
};

/// Epochs `resume.first_epoch`..`epochs` over `loader`: `step(batch)` trains on one batch and returns
/// its loss, `accuracy()` measures the test accuracy after each epoch. Returns the last accuracy.
template <class Loader, class Step, class Accuracy>
double train_epochs(int epochs, Loader& loader, Step&& step, Accuracy&& accuracy, const Resume& resume = {}) {
  auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const int64_t total = loader.num_batches(), every = total > 100 ? 20 : 5;
  double acc = resume.first_epoch > epochs ? accuracy() : 0;  // a finished run: measure it again
  loader.set_epoch(resume.first_epoch - 1);
  for (int epoch = resume.first_epoch; epoch <= epochs; ++epoch) {
    std::printf("epoch %d/%d\n", epoch, epochs);
    double loss_sum = 0;
    int64_t n = 0;
    for (const auto& batch : loader) {
      loss_sum += step(batch);
      if (++n % every == 0 || n == total) progress(n, total, loss_sum / double(n), seconds());
    }
    acc = accuracy();
    std::printf("\n  epoch %d: train loss %.4f, test accuracy %.2f%%, %.1fs\n", epoch, loss_sum / double(n), 100 * acc,
                seconds());
    std::fflush(stdout);  // the epoch's line reaches a log file even if the run is stopped next
    if (resume.after_epoch) resume.after_epoch(epoch);
  }
  std::printf("final test accuracy %.2f%% after %.1fs\n", 100 * acc, seconds());
  return acc;
}

/// The exit status: 1 (with a message) when the accuracy is below the floor.
inline int check_accuracy(const char* program, double accuracy, double min_accuracy) {
  if (accuracy >= min_accuracy) return 0;
  std::fprintf(stderr, "%s: accuracy %.4f is below --min-accuracy %.4f\n", program, accuracy, min_accuracy);
  return 1;
}

}  // namespace example
