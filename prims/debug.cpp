// debug_callback (prims/debug.h): the table of host functions and the primitive's block.
#include "prims/debug.h"

#include <cstring>
#include <deque>
#include <memory>
#include <mutex>

#include "ir/trace.h"
#include "memory/buffer.h"
#include "prims/registry.h"

namespace fluxion {

namespace {

// One vmap around the callback: the batch dimension of each operand (kNotMapped: not batched) and
// the batch size.
struct Level {
  IntList dims;
  int64_t size = 0;
};

struct Entry {
  DebugCallbackFn fn;
  std::vector<Level> levels;  // innermost vmap first
};

struct Table {
  std::mutex mutex;
  std::deque<std::shared_ptr<const Entry>> entries;
};

Table& table() {
  static Table* t = new Table;  // never destroyed: compiled code may call back during static destruction
  return *t;
}

int64_t add_entry(std::shared_ptr<const Entry> e) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.entries.push_back(std::move(e));
  return int64_t(t.entries.size() - 1);
}

std::shared_ptr<const Entry> entry(int64_t id) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (id < 0 || id >= int64_t(t.entries.size()))
    throw ValueError("ValueError: debug_callback: no host function " + std::to_string(id) +
                     " in this process (a program with debug callbacks cannot be loaded into another process)");
  return t.entries[size_t(id)];
}

// Example `i` of `a` along dimension `dim`: a copy without that dimension.
Array take_example(const Array& a, int64_t dim, int64_t i) {
  const AbstractArray& in = a.aval();
  AbstractArray out = in;
  out.shape = Shape();
  for (int64_t d = 0; d < in.ndim(); ++d)
    if (d != dim) out.shape.push_back(in.shape[size_t(d)]);
  int64_t outer = 1, inner = int64_t(itemsize(in.dtype));
  for (int64_t d = 0; d < dim; ++d) outer *= in.shape[size_t(d)];
  for (int64_t d = dim + 1; d < in.ndim(); ++d) inner *= in.shape[size_t(d)];
  const int64_t n = in.shape[size_t(dim)];
  Array r = make_uninitialized(out);
  const auto* src = static_cast<const unsigned char*>(a.data());
  auto* dst = static_cast<unsigned char*>(r.impl()->buffer->data);
  for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * inner, src + (o * n + i) * inner, size_t(inner));
  return r;
}

// Calls e.fn once per example of the levels [0, level), outermost first.
void call_examples(const Entry& e, size_t level, std::vector<Array>& args, std::vector<int64_t>& index) {
  if (level == 0) {
    e.fn(args, index);
    return;
  }
  const Level& l = e.levels[level - 1];
  for (int64_t i = 0; i < l.size; ++i) {
    std::vector<Array> sliced(args.size());
    for (size_t j = 0; j < args.size(); ++j)
      sliced[j] = l.dims[j] == kNotMapped ? args[j] : take_example(args[j], l.dims[j], i);
    index.push_back(i);
    call_examples(e, level - 1, sliced, index);
    index.pop_back();
  }
}

}  // namespace

int64_t debug_callback_count() {
  std::lock_guard<std::mutex> lock(table().mutex);
  return int64_t(table().entries.size());
}

void bind_debug_callback(DebugCallbackFn fn, std::span<const Array> args, SourceLoc loc) {
  if (!is_tracing()) {
    for (size_t i = 0; i < args.size(); ++i)
      if (!args[i].valid())
        throw ValueError("ValueError: debug_callback at " + loc.str() + ": argument " + std::to_string(i) +
                         " is an empty Array handle");
    fn(args, {});
    return;
  }
  const int64_t id = add_entry(std::make_shared<const Entry>(Entry{std::move(fn), {}}));
  bind(Prim::debug_callback, args, Params{{"callback", id}}, loc);
}

namespace {

// ---- debug_callback -----------------------------------------------------------------------------
// No outputs; any operands.
std::vector<AbstractArray> debug_shape(std::span<const AbstractArray>, const Params& params) {
  if (params.get_int("callback") < 0) rule_error(ErrorKind::Value, "the callback id must be non-negative");
  return {};
}

// The operands are copied into Arrays the callback may keep.
void debug_kernel(std::span<const View> in, std::span<const View>, const Params& params) {
  std::shared_ptr<const Entry> e = entry(params.get_int("callback"));
  std::vector<Array> args;
  args.reserve(in.size());
  for (const View& v : in) args.push_back(make_concrete(*v.aval, v.data));
  std::vector<int64_t> index;
  call_examples(*e, e->levels.size(), args, index);
}

// Once per example: a new host function that slices the batched operands (see the header).
std::vector<BatchedArray> debug_batch(std::span<const BatchedArray> args, const Params& params, int64_t axis_size,
                                      SourceLoc loc) {
  std::shared_ptr<const Entry> inner = entry(params.get_int("callback"));
  Entry batched = *inner;
  Level level{{}, axis_size};
  std::vector<Array> values;
  for (const BatchedArray& a : args) {
    level.dims.push_back(a.dim);
    values.push_back(a.value);
  }
  batched.levels.push_back(std::move(level));
  const int64_t id = add_entry(std::make_shared<const Entry>(std::move(batched)));
  bind(Prim::debug_callback, values, Params{{"callback", id}}, loc);
  return {};
}

constexpr KernelParam kDebugParams[] = {{"callback"}};

// Its operands get no tangents (zero_derivative): under differentiation it prints primal values,
// and partial evaluation keeps it in the forward pass, where those are known.
const Registration debug_callback_registration = PrimitiveRules{
    .prim = Prim::debug_callback,
    .shape = &debug_shape,
    .kernel = &debug_kernel,
    .kernel_params = kDebugParams,
    .effect = true,
    .zero_derivative = true,
    .batch = &debug_batch,
};

}  // namespace

}  // namespace fluxion
