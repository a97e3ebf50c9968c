#include "op_table.h"

#include <cmath>

namespace optable {

const std::vector<OpInfo>& op_table() {
  static const std::vector<OpInfo> table = [] {
    std::vector<OpInfo> t;
    add_elementwise_ops(t);
    add_shape_ops(t);
    add_reduce_ops(t);
    add_linalg_ops(t);
    return t;
  }();
  return table;
}

namespace {
uint64_t next(uint64_t& s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return s >> 11;
}
}  // namespace

HostArray uniform(fx::Shape shape, double lo, double hi, uint64_t seed) {
  HostArray h{shape, {}, fx::float64};
  uint64_t s = seed * 7919 + 17;
  for (int64_t i = 0; i < shape.numel(); ++i) h.data.push_back(lo + (hi - lo) * double(next(s)) / double(1ull << 53));
  return h;
}

HostArray integers(fx::Shape shape, int64_t lo, int64_t hi, uint64_t seed, fx::DType dtype) {
  HostArray h{shape, {}, dtype};
  uint64_t s = seed * 104729 + 3;
  for (int64_t i = 0; i < shape.numel(); ++i) h.data.push_back(double(lo + int64_t(next(s) % uint64_t(hi - lo))));
  return h;
}

HostArray host(fx::Shape shape, std::vector<double> data, fx::DType dtype) {
  return HostArray{std::move(shape), std::move(data), dtype};
}

fx::Array to_array(const HostArray& h, fx::DType dtype) {
  std::vector<uint8_t> bytes(h.data.size() * fx::itemsize(dtype) + 1);
  for (size_t i = 0; i < h.data.size(); ++i) {
    double v = h.data[i];
    fx::Literal l = fx::is_float(dtype) ? fx::Literal::of_double(v, dtype) : fx::Literal::of_int(int64_t(v), dtype);
    l.store(bytes.data() + i * fx::itemsize(dtype));
  }
  return fx::make_concrete(fx::AbstractArray{h.shape, dtype, false}, bytes.data());
}

HostArray to_host(const fx::Array& a) {
  HostArray h{a.shape(), {}, a.dtype()};
  const char* p = static_cast<const char*>(a.data());
  for (int64_t i = 0; i < a.size(); ++i)
    h.data.push_back(fx::Literal::load(p + size_t(i) * fx::itemsize(a.dtype()), a.dtype()).as_double());
  return h;
}

HostArray map_ref(const std::vector<HostArray>& args, const std::function<double(const std::vector<double>&)>& f) {
  int rank = 0;
  for (const HostArray& a : args) rank = std::max(rank, a.shape.rank());
  std::vector<int64_t> out(size_t(rank), 1);
  for (const HostArray& a : args)
    for (int i = 0; i < a.shape.rank(); ++i) {
      int64_t& o = out[size_t(rank - a.shape.rank() + i)];
      if (a.shape[size_t(i)] != 1) o = a.shape[size_t(i)];
    }
  fx::Shape os(out);
  HostArray r{os, std::vector<double>(size_t(os.numel())), fx::float64};
  std::vector<double> xs(args.size());
  for (int64_t flat = 0; flat < os.numel(); ++flat) {
    for (size_t k = 0; k < args.size(); ++k) {
      const HostArray& a = args[k];
      int64_t rem = flat, idx = 0, stride = 1;
      for (int d = rank - 1; d >= 0; --d) {
        int64_t i = rem % os[size_t(d)];
        rem /= os[size_t(d)];
        int ad = d - (rank - a.shape.rank());
        if (ad < 0) continue;
        if (a.shape[size_t(ad)] != 1) idx += i * stride;
        stride *= a.shape[size_t(ad)];
      }
      xs[k] = a.data[size_t(idx)];
    }
    r.data[size_t(flat)] = f(xs);
  }
  return r;
}

}  // namespace optable
