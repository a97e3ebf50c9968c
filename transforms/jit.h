// fx::jit(f): compile f once per input signature and call native code afterwards.
//
//   auto f = fx::jit([](const fx::Array& a, const fx::Array& b) { return fx::sin(a * b); });
//   fx::Array y = f(a, b);   // traces, compiles (MLIR -> LLVM), runs
//   y = f(a, b);             // runs the cached kernel
//   f.compilations();        // 1
//
// The signature of a call is the structure of its argument trees, the types of their Array leaves
// and the values of every other leaf (those are static: part of the key, baked into the program).
// Arrays that f closes over become extra kernel inputs. Computation follows data: arguments on a GPU
// (fx::device_put to cuda:k) compile the program for the GPU and run it there (jit_detail::placement). Called while another transformation is
// tracing (make_ir, grad, vmap, an outer jit), jit inlines f's program into that trace, so it
// composes with everything.
//
//   auto step = fx::jit(update, fx::donate_argnums(0, 1));   // jax.jit(update, donate_argnums=(0, 1))
//   std::tie(params, state) = step(params, state, grads);    // outputs may reuse params' and state's buffers
//
// Buffer donation: the leaves of the donated arguments are deleted by the call (using one
// afterwards raises ValueError naming it), and an output of the same shape and dtype may be written
// into a donated leaf's buffer -- where the compiled code provably reads that input before writing
// the output (interpreters/donation.h) and the array owns its buffer alone; otherwise the output gets
// a fresh buffer as without donation. Inside another trace donation does nothing.
//
//   auto step = fx::jit(train_step, fx::in_shardings(ps, xs_s), fx::out_shardings(ps));   // sharded jit
//
// Sharded jit: the arguments' leaves are laid out by in_shardings (one NamedSharding per argument,
// for every leaf of it, or fx::leaf_shardings({...}) per leaf), the outputs by out_shardings (one
// for all, or one per output leaf; without it, what propagation gives). The traced program is
// partitioned over the mesh (interpreters/partition.h): layouts propagate eqn by eqn through each
// primitive's sharding rule, fx::with_sharding_constraint fixes one, and collectives go where a
// layout changes. The result is one per-device program run as a shard_map over the mesh, compiled
// once per signature; FLUXION_DUMP writes it with every inserted collective and the bytes it moves.
#pragma once
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <variant>

#include "ir/poly_shapes.h"
#include "ir/sharding.h"
#include "ir/tree.h"
#include "ir/trace.h"
#include "compile/compile_cache.h"
#include "transforms/make_ir.h"

namespace fluxion {

namespace jit_detail {

template <class T>
concept StdHashable = requires(const T& t) { std::hash<T>{}(t); };

/// Appends the part of the call signature that `t` determines. With `avals`, the Array leaves'
/// types are taken from there in order instead (a polymorphic jit's symbolic types).
template <class T>
void signature(const T& t, std::string& s, const AbstractArray** avals = nullptr) {
  using namespace tree::detail;
  if constexpr (std::is_same_v<T, Array>) {
    s += avals ? (*avals)++->str() : t.valid() ? t.aval().str() : std::string("<empty>");
    s += ';';
  } else if constexpr (is_tuple<T>::value) {
    s += '(';
    std::apply([&](const auto&... xs) { (signature(xs, s, avals), ...); }, t);
    s += ')';
  } else if constexpr (is_vector<T>::value || is_std_array<T>::value) {
    s += '[' + std::to_string(t.size()) + ':';
    for (const auto& x : t) signature(x, s, avals);
    s += ']';
  } else if constexpr (is_string_map<T>::value) {
    s += '{';
    for (const auto& kv : t) {
      s += std::to_string(kv.first.size()) + '#' + kv.first + ':';
      signature(kv.second, s, avals);
    }
    s += '}';
  } else if constexpr (is_optional<T>::value) {
    if (t) {
      s += '?';
      signature(*t, s, avals);
    } else {
      s += '-';
    }
  } else if constexpr (registered<T>) {
    s += '<';
    std::apply([&](auto... m) { (signature(t.*m, s, avals), ...); }, fluxion_tree_members(static_cast<const T*>(nullptr)));
    s += '>';
  } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &t, sizeof(T));  // exact, also for floating values
    s += typeid(T).name();
    s += '=';
    s.append(bytes, sizeof(T));
    s += ';';
  } else if constexpr (std::is_same_v<T, std::string>) {
    s += "s" + std::to_string(t.size()) + '#' + t + ';';
  } else if constexpr (StdHashable<T>) {
    s += typeid(T).name();
    s += '#' + std::to_string(std::hash<T>{}(t)) + ';';
  } else {
    static_assert(StdHashable<T>, "fx::jit: a static (non-Array) argument must be arithmetic, an enum, a string, "
                                  "a container of those, or hashable with std::hash");
  }
}

/// fx::donate_argnums(i...): the arguments whose buffers a jitted call may take (see the top).
struct DonateArgnums {
  std::vector<int> argnums;
};

/// fx::leaf_shardings({...}): one layout per leaf of a tree argument or of the outputs.
struct LeafShardings {
  std::vector<NamedSharding> shardings;
};
using ShardingTree = std::variant<NamedSharding, LeafShardings>;
/// Sharded jit's layouts (see the top): per argument (or one for all), per output leaf (or one for
/// all, or none).
struct Shardings {
  std::vector<ShardingTree> in, out;
};

/// What one signature compiled to.
struct Compiled {
  std::shared_ptr<const runtime::Executable> executable;
  std::optional<runtime::RunOn> on;   // a GPU program: the device it runs on (nullopt: the host)
  std::vector<Array> consts;          // closure arrays: extra kernel inputs
  std::shared_ptr<const void> out_like;  // the output tree (leaves emptied), of f's result type
  Program program;                    // what was compiled: debug_nans re-runs it op by op
  std::string stem;                   // its name in dumps and traces (the user's line)
  std::vector<int> donation;          // per output: the donated input it may be written into, or -1
};

/// The per-callable cache (shared by copies of the callable).
struct JitCache {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const Compiled>> entries;
  std::vector<std::vector<std::string>> signatures;  // the argument types of each compile (FLUXION_LOG_COMPILES)
  int64_t compilations = 0;
  int64_t count() {
    std::lock_guard<std::mutex> lock(mutex);
    return compilations;
  }
};

/// The compiled signature `key` of the callable, or null.
inline std::shared_ptr<const Compiled> lookup(JitCache& cache, const std::string& key) {
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.entries.find(key);
  return it == cache.entries.end() ? nullptr : it->second;
}

/// The structure of a traced output tree, without its dead tracers (they would keep the trace
/// alive): what the results of every later call are rebuilt into.
template <class R>
std::shared_ptr<const void> structure_of(const R& out) {
  std::vector<Array> no_leaves(tree::leaves(out).size());
  const Array* empty_it = no_leaves.data();
  return std::make_shared<const R>(tree::rebuild(out, empty_it));
}

/// A call's results, rebuilt into the output tree of f's result type R.
template <class R>
R rebuild_results(const Compiled& c, const std::vector<Array>& results) {
  const Array* it = results.data();
  return tree::rebuild(*static_cast<const R*>(c.out_like.get()), it);
}

/// Where a call runs -- computation follows data: on a GPU when an argument leaf is committed to one
/// (every committed leaf must then be on it: DeviceError naming jit, the devices and `loc`, the line
/// of fx::jit, otherwise), or, with no committed leaf, when a leaf lives in a GPU's memory or the
/// default device is a GPU; nullopt: on the host, as CPU programs always run.
std::optional<runtime::RunOn> placement(std::span<const Array> leaves, SourceLoc loc);

/// Compiles a traced program (runtime::compile, for `target`, or for the GPU `on` names) and counts
/// it for the callable. `donated`: per invar, whether it is donated (empty: none).
std::shared_ptr<const Compiled> compile_signature(JitCache& cache, const std::string& key, Program program,
                                                  std::shared_ptr<const void> out_like,
                                                  const runtime::CompileTarget& target = runtime::default_target(),
                                                  const std::vector<bool>& donated = {},
                                                  const std::optional<runtime::RunOn>& on = std::nullopt);
/// Whether FLUXION_LOG_COMPILES is on.
bool log_compiles();
/// FLUXION_LOG_COMPILES: one line on stderr for a compile of the callable defined at `loc` -- why
/// (its first call, or new argument types and the ones it compiled for before), where it runs, and
/// how long tracing, the passes and the backend took.
void log_compile(JitCache& cache, SourceLoc loc, std::span<const Array> leaves, const Compiled& c,
                 const std::optional<runtime::RunOn>& on, double trace_ms, double total_ms);
/// Sharded jit: partitions a traced program for the layouts (arguments' leaves start at
/// leaf_start[i]) and compiles the shard_map that runs it (see the top).
std::shared_ptr<const Compiled> compile_sharded(JitCache& cache, const std::string& key, Program program,
                                                std::shared_ptr<const void> out_like, const Shardings& shardings,
                                                const std::vector<size_t>& leaf_start, SourceLoc loc);
/// Runs a compiled signature on the flattened Array arguments.
std::vector<Array> run_compiled(const Compiled& c, std::span<const Array> args);
/// The same, donating the leaves flagged in `donated` (leaf i belongs to argument leaf_argument[i]).
std::vector<Array> run_donating(const Compiled& c, std::span<const Array> args, const std::vector<bool>& donated,
                                const std::vector<int>& leaf_argument);
/// Which leaves the donated arguments hold; checks the argument numbers (ValueError).
std::vector<bool> donated_leaves(const DonateArgnums& d, const std::vector<int>& leaf_argument, int num_args);

}  // namespace jit_detail

template <class F>
class Jitted {
 public:
  explicit Jitted(F f, jit_detail::DonateArgnums donate = {}, SourceLoc loc = {},
                  std::shared_ptr<const jit_detail::Shardings> shardings = nullptr,
                  std::shared_ptr<const PolymorphicShapes> poly = nullptr)
      : f_(std::move(f)), donate_(std::move(donate)), loc_(loc), shardings_(std::move(shardings)),
        poly_(std::move(poly)), cache_(std::make_shared<jit_detail::JitCache>()) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    using R = std::decay_t<decltype(std::apply(f_, std::tuple<Args...>{args...}))>;
    std::vector<Array> leaves;
    std::vector<int> leaf_argument;  // per leaf, the argument it belongs to
    int argument = 0;
    ((tree::flatten_into(args, leaves), leaf_argument.resize(leaves.size(), argument++)), ...);
    if (is_tracing()) {
      // Inside another trace: trace f and inline its program there.
      auto [program, out] = detail::trace_to_program(f_, args...);
      std::vector<Array> results = eval_program(program, leaves);
      const Array* it = results.data();
      return tree::rebuild(out, it);
    }
    if (shardings_) return call_sharded<R>(leaves, args...);
    if (poly_) return call_polymorphic<R>(leaves, args...);
    const std::optional<runtime::RunOn> on = jit_detail::placement(leaves, loc_);
    std::string key;
    ((key += typeid(Args).name(), key += '|', jit_detail::signature(args, key)), ...);
    if (on) key += "@" + on->device.str();
    const std::vector<bool> donated =
        donate_.argnums.empty() ? std::vector<bool>{}
                                : jit_detail::donated_leaves(donate_, leaf_argument, int(sizeof...(Args)));
    std::shared_ptr<const jit_detail::Compiled> compiled = jit_detail::lookup(*cache_, key);
    if (!compiled) {
      const auto start = std::chrono::steady_clock::now();
      auto [program, out] = detail::trace_to_program(f_, args...);
      const auto traced = std::chrono::steady_clock::now();
      compiled = jit_detail::compile_signature(*cache_, key, std::move(program), jit_detail::structure_of<R>(out),
                                               runtime::default_target(on ? on->device.platform : Platform::cpu),
                                               donated, on);
      if (jit_detail::log_compiles()) {
        using ms = std::chrono::duration<double, std::milli>;
        jit_detail::log_compile(*cache_, loc_, leaves, *compiled, on, ms(traced - start).count(),
                                ms(std::chrono::steady_clock::now() - start).count());
      }
    }
    if (!donated.empty())
      return jit_detail::rebuild_results<R>(*compiled, jit_detail::run_donating(*compiled, leaves, donated, leaf_argument));
    return jit_detail::rebuild_results<R>(*compiled, jit_detail::run_compiled(*compiled, leaves));
  }

  /// How many signatures this callable (and its copies) compiled.
  int64_t compilations() const { return cache_->count(); }

 private:
  // One compile for every size the symbols take: the key holds the symbolic types, the trace runs
  // on them, and the kernel reads the sizes of each call (docs/shape_polymorphism.md).
  template <class R, class... Args>
  R call_polymorphic(const std::vector<Array>& leaves, const Args&... args) const {
    std::vector<AbstractArray> actual;
    actual.reserve(leaves.size());
    for (const Array& a : leaves) actual.push_back(a.aval());
    bind_symbols(*poly_, actual, "jit");  // a misfit: ShapeError naming the symbol and the constraint
    if (const std::optional<runtime::RunOn> on = jit_detail::placement(leaves, loc_))
      throw CompileError("CompileError: jit at " + loc_.str() + ": the arguments are on " + on->device.str() +
                         "; the GPU pipeline does not compile symbolic dimensions yet (docs/shape_polymorphism.md)");
    const std::vector<AbstractArray> symbolic = symbolic_avals(*poly_, actual);
    std::string key;
    const AbstractArray* types = symbolic.data();
    ((key += typeid(Args).name(), key += '|', jit_detail::signature(args, key, &types)), ...);
    std::shared_ptr<const jit_detail::Compiled> compiled = jit_detail::lookup(*cache_, key);
    if (!compiled) {
      const auto start = std::chrono::steady_clock::now();
      auto [program, out] = detail::trace_with_avals(f_, symbolic, args...);
      const auto traced = std::chrono::steady_clock::now();
      compiled = jit_detail::compile_signature(*cache_, key, std::move(program), jit_detail::structure_of<R>(out));
      if (jit_detail::log_compiles()) {
        using ms = std::chrono::duration<double, std::milli>;
        jit_detail::log_compile(*cache_, loc_, leaves, *compiled, std::nullopt, ms(traced - start).count(),
                                ms(std::chrono::steady_clock::now() - start).count());
      }
    }
    return jit_detail::rebuild_results<R>(*compiled, jit_detail::run_compiled(*compiled, leaves));
  }

  template <class R, class... Args>
  R call_sharded(const std::vector<Array>& leaves, const Args&... args) const {
    std::string key;
    ((key += typeid(Args).name(), key += '|', jit_detail::signature(args, key)), ...);
    std::shared_ptr<const jit_detail::Compiled> compiled = jit_detail::lookup(*cache_, key);
    if (!compiled) {
      std::vector<size_t> start;
      std::vector<Array> counted;
      ((start.push_back(counted.size()), tree::flatten_into(args, counted)), ...);
      start.push_back(counted.size());
      auto [program, out] = detail::trace_to_program(f_, args...);
      compiled = jit_detail::compile_sharded(*cache_, key, std::move(program), jit_detail::structure_of<R>(out),
                                             *shardings_, start, loc_);
    }
    return jit_detail::rebuild_results<R>(*compiled, jit_detail::run_compiled(*compiled, leaves));
  }

  F f_;
  jit_detail::DonateArgnums donate_;
  SourceLoc loc_;  // where fx::jit was called: errors of a call name it
  std::shared_ptr<const jit_detail::Shardings> shardings_;
  std::shared_ptr<const PolymorphicShapes> poly_;  // fx::polymorphic_shapes: one compile for every size
  std::shared_ptr<jit_detail::JitCache> cache_;
};

/// jax.jit: see the top of this file.
template <class F>
Jitted<F> jit(F f, std::source_location loc = std::source_location::current()) {
  return Jitted<F>(std::move(f), {}, loc);
}

/// jax.jit(f, donate_argnums=...): see the top of this file.
template <class F>
Jitted<F> jit(F f, jit_detail::DonateArgnums donate, std::source_location loc = std::source_location::current()) {
  return Jitted<F>(std::move(f), std::move(donate), loc);
}

/// jit(f, fx::polymorphic_shapes("b, 784", "b")): one compile serves every size of the symbols
/// (b >= 1 and the spec's constraints; a misfit is a ShapeError naming the symbol, the constraint
/// and the spec's line). The kernel runs on dynamic extents (docs/shape_polymorphism.md).
template <class F>
Jitted<F> jit(F f, PolymorphicShapes shapes, std::source_location loc = std::source_location::current()) {
  return Jitted<F>(std::move(f), {}, loc, nullptr, std::make_shared<const PolymorphicShapes>(std::move(shapes)));
}

/// fx::in_shardings(s...): one layout per argument (a NamedSharding for every leaf of it, or
/// fx::leaf_shardings per leaf), or one for all; fx::out_shardings likewise per output leaf.
struct InShardings {
  std::vector<jit_detail::ShardingTree> s;
};
struct OutShardings {
  std::vector<jit_detail::ShardingTree> s;
};
template <class... S>
InShardings in_shardings(const S&... s) {
  return InShardings{{jit_detail::ShardingTree(s)...}};
}
template <class... S>
OutShardings out_shardings(const S&... s) {
  return OutShardings{{jit_detail::ShardingTree(s)...}};
}
inline jit_detail::LeafShardings leaf_shardings(std::vector<NamedSharding> s) { return {std::move(s)}; }

/// Sharded jit (jax.jit(f, in_shardings=..., out_shardings=...)): see the top of this file.
template <class F>
Jitted<F> jit(F f, InShardings in, OutShardings out, std::source_location loc = std::source_location::current()) {
  return Jitted<F>(std::move(f), {}, loc,
                   std::make_shared<const jit_detail::Shardings>(jit_detail::Shardings{std::move(in.s), std::move(out.s)}));
}
template <class F>
Jitted<F> jit(F f, InShardings in, std::source_location loc = std::source_location::current()) {
  return jit(std::move(f), std::move(in), OutShardings{}, loc);
}

/// The arguments (by position) a jitted function may take the buffers of: fx::donate_argnums(0, 2).
template <class... I>
  requires(std::is_integral_v<I> && ...)
jit_detail::DonateArgnums donate_argnums(I... argnums) {
  return {{int(argnums)...}};
}

}  // namespace fluxion
