// The op table (after PyTorch's OpInfo): one entry per user-facing op, with a host reference, sample
// inputs, error inputs, the checks that apply to it and its tolerances. The entries live in
// tests/op_table_<family>.cpp, one file per family of ops; one driver per transformation runs every
// entry through it:
//   test_op_table_eager.cpp   eager result == host reference, every dtype, element by element
//   test_op_table_trace.cpp   make_ir verifies, round-trips as text, and interprets like eager
//   test_op_table_errors.cpp  error samples raise their kind naming the op and the user's line,
//                             eagerly and under tracing
//   test_op_table_jvp.cpp     jvp == finite differences (float64), narrow dtypes track float64,
//                             piecewise-constant entries get zero tangents
//   test_op_table_vjp.cpp     vjp dot-product identity, linearize, second order, derived programs
//   test_op_table_vmap.cpp    vmap == the op stacked over the batch, every batch placement
//   test_op_table_jit.cpp     jit == eager
// Focused tests of a family sit in test_<family>.cpp; the registry checks (derived from each
// primitive's record, prims/registry.h) in test_registry.cpp.
#pragma once
#include <fluxion.h>

#include <functional>
#include <set>
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

/// A call that must fail with an error of `kind` whose message names the op and the user's line.
struct ErrorSample {
  std::vector<HostArray> args;
  fx::ErrorKind kind;
  std::string label;
};

/// The checks the drivers run (see the file comment).
enum class Check { eager, trace, errors, jvp, vjp, vmap, jit };

/// |got - want| <= atol + rtol * |want|; NaN matches NaN and infinities match exactly.
struct Tolerance {
  double rtol = 0, atol = 0;
};
bool close(double got, double want, Tolerance t);

/// A tolerance for one check and dtype, replacing the default (see OpInfo::tolerance).
struct ToleranceOverride {
  Check check;
  fx::DType dtype;
  Tolerance tol;
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
  /// What error messages must name besides the user's line (empty: the kind and line only).
  std::string error_name;
  /// The reference gives the result's dtype (HostArray::dtype), which the eager driver checks.
  bool reference_dtype = false;
  /// Piecewise constant (comparisons, argmax, ...): its tangents are zero, not finite differences.
  bool differentiable = true;
  /// Checks that do not apply to this entry.
  std::set<Check> skip;
  /// Scale on the default tolerances of the eager and jit checks (transcendentals in f16, ...).
  double tol_scale = 1.0;
  /// Per check and dtype, a tolerance that replaces the scaled default.
  std::vector<ToleranceOverride> tolerances;
  /// The file the entry (and so its op's call site) is written in; stamped by op_table().
  std::string file;

  bool applies(Check c) const { return !skip.count(c); }
  /// The tolerance of check c on results of dtype d.
  Tolerance tolerance(Check c, fx::DType d) const;
};

/// A check's default tolerance on results of dtype d (exact for integers and bool). The eager and
/// jit defaults bound |got - want| elementwise; the autodiff checks' bound the quantities their
/// drivers compare (test_op_table_jvp.cpp, test_op_table_vjp.cpp say which).
Tolerance default_tolerance(Check c, fx::DType d);

/// The whole table (filled once from the op_table_*.cpp files).
const std::vector<OpInfo>& op_table();

void add_elementwise_ops(std::vector<OpInfo>& t);  // tests/op_table_elementwise.cpp
void add_shape_ops(std::vector<OpInfo>& t);        // tests/op_table_shape.cpp
void add_indexing_ops(std::vector<OpInfo>& t);     // tests/op_table_indexing.cpp
void add_reduce_ops(std::vector<OpInfo>& t);       // tests/op_table_reduce.cpp
void add_linalg_ops(std::vector<OpInfo>& t);       // tests/op_table_linalg.cpp
void add_decomposition_ops(std::vector<OpInfo>& t);  // tests/op_table_decomp.cpp
void add_conv_ops(std::vector<OpInfo>& t);         // tests/op_table_conv.cpp
void add_complex_ops(std::vector<OpInfo>& t);      // tests/op_table_complex.cpp
void add_numpy_ops(std::vector<OpInfo>& t);        // tests/op_table_numpy.cpp
void add_sorting_ops(std::vector<OpInfo>& t);      // tests/op_table_sorting.cpp

/// "name [dtype] label (shapes...)": a sample in failure messages.
std::string describe(const OpInfo& op, fx::DType d, const Sample& s);
/// The sample's operands as arrays of dtype d (fixed-dtype samples keep their own).
std::vector<fx::Array> sample_args(const Sample& s, fx::DType d);
/// Equal types and the same values (NaN equal to NaN).
bool identical(const fx::Array& a, const fx::Array& b);

// ---- helpers for writing entries ------------------------------------------------------------------
/// Deterministic pseudo-random values in [lo, hi) (an LCG seeded by `seed`).
HostArray uniform(fx::Shape shape, double lo, double hi, uint64_t seed);
/// Deterministic integers in [lo, hi).
HostArray integers(fx::Shape shape, int64_t lo, int64_t hi, uint64_t seed, fx::DType dtype = fx::int32);
/// Small integers in [lo, hi] (another LCG): exact in every dtype, so products stay exact too.
HostArray small_ints(fx::Shape shape, uint64_t seed, int lo = -3, int hi = 3);
/// Reals in [-1, 1) (another LCG).
HostArray reals(fx::Shape shape, uint64_t seed);
HostArray host(fx::Shape shape, std::vector<double> data, fx::DType dtype = fx::float64);
/// Distinct-looking values in [0, 101), or 0/1 for bool: exact in every dtype.
HostArray distinct_values(fx::Shape shape, fx::DType dtype = fx::float64, int64_t seed = 0);
/// Values in [0, 10] (0/1 for bool), for sums that must stay exact in int8 and uint8.
HostArray small_values(fx::Shape shape, fx::DType dtype, int64_t seed = 0);
/// Integer data as given (int32 unless said): index operands.
HostArray index_values(fx::Shape shape, std::vector<double> data, fx::DType dtype = fx::int32);
/// The same elements under another shape and dtype.
HostArray with_shape(const HostArray& x, fx::Shape shape, fx::DType dtype);
/// Row-major index arithmetic on host arrays.
std::vector<int64_t> unravel(int64_t flat, const fx::Shape& s);
int64_t ravel(const std::vector<int64_t>& idx, const fx::Shape& s);

/// A sample whose operands keep their own dtypes (indices, masks).
Sample fixed(std::vector<HostArray> args, std::string label);
ErrorSample error_sample(std::vector<HostArray> args, fx::ErrorKind kind, std::string label);

/// Converts to/from device arrays.
fx::Array to_array(const HostArray& h, fx::DType dtype);
HostArray to_host(const fx::Array& a);

/// Sets entry `op`'s tolerance of check c for each of `dtypes`.
void set_tolerance(OpInfo& op, Check c, const std::vector<fx::DType>& dtypes, Tolerance t);

/// numpy-broadcasting elementwise reference built from a scalar function.
HostArray map_ref(const std::vector<HostArray>& args, const std::function<double(const std::vector<double>&)>& f);

inline const std::vector<fx::DType> kFloatTypes = {fx::float16, fx::bfloat16, fx::float32, fx::float64};
inline const std::vector<fx::DType> kIntTypes = {fx::int8, fx::int32, fx::int64, fx::uint8, fx::uint32};
inline const std::vector<fx::DType> kSignedTypes = {fx::int8, fx::int32, fx::int64, fx::float16, fx::bfloat16,
                                                    fx::float32, fx::float64};
inline const std::vector<fx::DType> kNumericTypes = {fx::int8,    fx::int32,    fx::int64,   fx::uint8,  fx::uint32,
                                                     fx::float16, fx::bfloat16, fx::float32, fx::float64};
inline const std::vector<fx::DType> kAllTypes = {fx::int8,    fx::int32,    fx::int64,   fx::uint8,  fx::uint32, fx::float16,
                                                 fx::bfloat16, fx::float32, fx::float64, fx::bool_};

}  // namespace optable
