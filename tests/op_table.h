// The op table (after PyTorch's OpInfo): one entry per user-facing op, with a host reference, sample
// inputs and error inputs. tests/test_op_table.cpp runs every generic property over every entry
// (reference agreement per dtype, tracing + verify + text round trip, error kinds and messages);
// later issues add their transforms (jvp, vjp, vmap, jit) to the same driver.
#pragma once
#include <fluxion.h>

#include <functional>
#include <string>
#include <vector>

namespace optable {

namespace fx = fluxion;

/// A host array in double precision: the reference's currency (exact for every int32 and every
/// float of the supported dtypes).
struct HostArray {
  fx::Shape shape;
  std::vector<double> data;
  fx::DType dtype = fx::float64;  // for references that care (integer semantics, output dtype)
};

/// One call of the op: its array operands (converted to the dtype under test unless
/// `fixed_dtype`), plus a label for failure messages.
struct Sample {
  std::vector<HostArray> args;
  std::string label;
  bool fixed_dtype = false;  // args keep their own dtype (index operands, bool masks, ...)
};

/// A call that must fail with an error of `kind` whose message mentions `op_name` and the line.
struct ErrorSample {
  std::vector<HostArray> args;
  fx::ErrorKind kind;
  std::string label;
};

struct OpInfo {
  std::string name;
  /// The op under test, written as a user would call it (the call site is what errors name).
  std::function<fx::Array(const std::vector<fx::Array>&)> op;
  /// The reference on host doubles; `out_dtype` is the dtype the op returned, for rounding.
  std::function<HostArray(const std::vector<HostArray>&, fx::DType out_dtype)> reference;
  std::vector<Sample> samples;
  std::vector<fx::DType> dtypes;  // dtypes the samples are run in
  std::vector<ErrorSample> errors;
  /// Per-op tolerance scale on top of the per-dtype defaults (transcendentals in f16, ...).
  double tol_scale = 1.0;
  bool differentiable = true;
};

/// The whole table (filled once from the op_table_*.cpp files).
const std::vector<OpInfo>& op_table();

void add_elementwise_ops(std::vector<OpInfo>& t);  // tests/op_table_elementwise.cpp
void add_shape_ops(std::vector<OpInfo>& t);        // tests/op_table_shape.cpp
void add_reduce_ops(std::vector<OpInfo>& t);       // tests/op_table_reduce.cpp
void add_linalg_ops(std::vector<OpInfo>& t);       // tests/op_table_linalg.cpp

// ---- helpers for writing entries ------------------------------------------------------------------
/// Deterministic pseudo-random values in [lo, hi) (an LCG seeded by `seed`).
HostArray uniform(fx::Shape shape, double lo, double hi, uint64_t seed);
/// Deterministic integers in [lo, hi).
HostArray integers(fx::Shape shape, int64_t lo, int64_t hi, uint64_t seed, fx::DType dtype = fx::int32);
HostArray host(fx::Shape shape, std::vector<double> data, fx::DType dtype = fx::float64);

/// Converts to/from device arrays.
fx::Array to_array(const HostArray& h, fx::DType dtype);
HostArray to_host(const fx::Array& a);

/// numpy-broadcasting elementwise reference built from a scalar function.
HostArray map_ref(const std::vector<HostArray>& args, const std::function<double(const std::vector<double>&)>& f);

inline const std::vector<fx::DType> kFloatTypes = {fx::float16, fx::bfloat16, fx::float32, fx::float64};
inline const std::vector<fx::DType> kIntTypes = {fx::int8, fx::int32, fx::int64, fx::uint8, fx::uint32};
inline const std::vector<fx::DType> kSignedTypes = {fx::int8, fx::int32, fx::int64, fx::float16, fx::bfloat16,
                                                    fx::float32, fx::float64};
inline const std::vector<fx::DType> kNumericTypes = {fx::int8,    fx::int32,    fx::int64,   fx::uint8,  fx::uint32,
                                                     fx::float16, fx::bfloat16, fx::float32, fx::float64};

}  // namespace optable
