// A convolution's window rows as runs of consecutive input elements, and the copies that fill its
// columns from them (kernels/conv_forms.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace fluxion::runtime {

// A row of the window table as runs of consecutive input elements: positions [p, p + len) read
// input elements [src, src + len). With unit strides along the input's innermost dim (NCHW at
// stride 1) a row is a few long runs, which copy much faster than an element-wise gather.
struct Run {
  int64_t p, src, len;
};
struct RowRuns {
  std::vector<Run> runs;
  std::vector<size_t> first;  // per kernel offset: its runs are [first[k], first[k + 1])
};
inline RowRuns row_runs(const std::vector<int64_t>& table, int64_t K, int64_t P) {
  RowRuns r;
  for (int64_t k = 0; k < K; ++k) {
    r.first.push_back(r.runs.size());
    const int64_t* t = table.data() + k * P;
    for (int64_t p = 0; p < P; ++p) {
      if (t[p] < 0) continue;
      const int64_t start = p;
      while (p + 1 < P && t[p + 1] == t[p] + 1) ++p;
      r.runs.push_back({start, t[start], p - start + 1});
    }
  }
  r.first.push_back(r.runs.size());
  return r;
}

// Whether runs pay off for a table: at least 4 elements per run on average.
inline bool long_runs(const RowRuns& r, const std::vector<int64_t>& table) {
  return int64_t(r.runs.size()) * 4 <= int64_t(std::count_if(table.begin(), table.end(), [](int64_t t) { return t >= 0; }));
}

// d[0, bytes) = s[0, bytes) (or zeros, `s` null) inline, for the short runs of a window row: whole
// 64-byte blocks, then the rest as two fixed-size copies that may overlap. A run is typically
// one image row (64 or 128 bytes) and the zeros between runs the padding (2-8 bytes), where a
// call of the library's memmove and memset per run cost about as much as the copies (a 3x3
// window row of a 32x32 bfloat16 image: 10-25% faster inline, float32 unchanged, in a
// single-thread microbenchmark).
inline void copy_short(char* d, const char* s, size_t bytes) {
  auto two = [&](auto size) {  // bytes in [size, 2 size]
    constexpr size_t c = decltype(size)::value;
    if (s) std::memcpy(d, s, c), std::memcpy(d + bytes - c, s + bytes - c, c);
    else std::memset(d, 0, c), std::memset(d + bytes - c, 0, c);
  };
  if (bytes >= 64) {
    size_t i = 0;
    for (; i + 64 <= bytes; i += 64) s ? (void)std::memcpy(d + i, s + i, 64) : (void)std::memset(d + i, 0, 64);
    if (i < bytes) s ? (void)std::memcpy(d + bytes - 64, s + bytes - 64, 64) : (void)std::memset(d + bytes - 64, 0, 64);
  } else if (bytes >= 32) two(std::integral_constant<size_t, 32>{});
  else if (bytes >= 16) two(std::integral_constant<size_t, 16>{});
  else if (bytes >= 8) two(std::integral_constant<size_t, 8>{});
  else if (bytes >= 4) two(std::integral_constant<size_t, 4>{});
  else if (bytes >= 2) two(std::integral_constant<size_t, 2>{});
  else if (bytes == 1) *d = s ? *s : 0;
}

// row[0, n) = the input elements that table row `t` reads from `src` (zeros where it reads none):
// by the row's runs [r0, r1) when `by_runs`, else element by element. (Zero is all-zero bits in
// every T here: float, double and bfloat16's bits.)
template <class T>
void fill_row(T* row, const T* src, const int64_t* t, int64_t n, const Run* r0, const Run* r1, bool by_runs) {
  if (!by_runs) {
    for (int64_t p = 0; p < n; ++p) row[p] = t[p] >= 0 ? src[t[p]] : T(0);
    return;
  }
  auto bytes = [](const T* p) { return reinterpret_cast<const char*>(p); };
  char* out = reinterpret_cast<char*>(row);
  int64_t at = 0;
  for (const Run* run = r0; run != r1; ++run) {
    copy_short(out + at * sizeof(T), nullptr, size_t(run->p - at) * sizeof(T));
    copy_short(out + run->p * sizeof(T), bytes(src + run->src), size_t(run->len) * sizeof(T));
    at = run->p + run->len;
  }
  copy_short(out + at * sizeof(T), nullptr, size_t(n - at) * sizeof(T));
}

// A convolution's GEMM forms over operands of T (float, double, or uint16_t: bfloat16 bits for

}  // namespace fluxion::runtime
