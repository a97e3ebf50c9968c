// The RNN recurrence of bench_control.cpp written by hand, compiled apart (baseline_rnn.cpp) with
// -O3 -march=native -ffast-math like the jit's own baselines. Both return sum(h_T) + mean(h_1..T).
#pragma once
#include <cstdint>

namespace fluxion_bench {
// Row-major matrix-vector loops and std::tanh.
double rnn_hand_loop(const float* w, const float* u, const float* b, const float* xs, int64_t steps, int64_t width);
// What an Eigen user writes: h = tanh(W h + U x_t + b) on Map'd matrices (Eigen's vectorized tanh).
double rnn_hand_eigen(const float* w, const float* u, const float* b, const float* xs, int64_t steps, int64_t width);
}  // namespace fluxion_bench
