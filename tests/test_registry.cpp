// The registry checks, derived from each primitive's one record (prims/registry.h): every primitive
// has registered exactly one complete block, the facts it states agree with its rules, and the
// tables the transforms read hold exactly what the record says.
#include <doctest/doctest.h>

#include <fluxion.h>

#include "ir/eval_rules.h"
#include "lowering/compile.h"
#include "lowering/compile_cuda.h"
#include "prims/registry.h"
#include "interpreters/jvp.h"
#include "interpreters/transpose.h"
#include "interpreters/vmap.h"

namespace fx = fluxion;

namespace {
template <class F>
void for_each_primitive(F f) {
  for (int i = 0; i < fx::kNumPrims; ++i) {
    const fx::Prim p = fx::Prim(i);
    CAPTURE(fx::prim_name(p));
    f(p, fx::rules(p));
  }
}
}  // namespace

TEST_CASE("registry: every primitive has registered exactly one block, naming itself") {
  for_each_primitive([](fx::Prim p, const fx::PrimitiveRules& r) {
    CHECK(fx::registrations(p) == 1);
    CHECK(r.prim == p);
  });
}

TEST_CASE("registry: every primitive can be evaluated -- a shape rule, and a kernel or an impl") {
  for_each_primitive([](fx::Prim, const fx::PrimitiveRules& r) {
    CHECK((r.shape != nullptr));
    CHECK(((r.kernel != nullptr) != (r.impl != nullptr)));  // one or the other
    // Params a library call passes are read by a kernel.
    if (!r.kernel_params.empty()) CHECK((r.kernel != nullptr));
  });
}

TEST_CASE("registry: every primitive has a JVP rule or an explicit zero derivative") {
  for_each_primitive([](fx::Prim, const fx::PrimitiveRules& r) {
    CHECK(((r.jvp != nullptr) != r.zero_derivative));  // one or the other, not both
    if (r.jvp_computes_primal) CHECK((r.jvp != nullptr));
  });
}

TEST_CASE("registry: a primitive has a transpose rule exactly when its record says it is linear") {
  for_each_primitive([](fx::Prim, const fx::PrimitiveRules& r) {
    CHECK(((r.transpose != nullptr) == r.linear.any()));
    if (r.linear.one_at_a_time) CHECK(r.linear.operands != 0);
  });
}

TEST_CASE("registry: every primitive has a batching rule") {
  for_each_primitive([](fx::Prim, const fx::PrimitiveRules& r) { CHECK((r.batch != nullptr)); });
}

TEST_CASE("registry: every primitive is lowered unless its record says it is eager-only") {
  for_each_primitive([](fx::Prim p, const fx::PrimitiveRules& r) { CHECK(fx::lowering::has_lowering(p) != r.eager_only); });
}

TEST_CASE("registry: the tables the transforms read hold what the records say") {
  for_each_primitive([](fx::Prim p, const fx::PrimitiveRules& r) {
    const fx::EvalRules& e = fx::eval_rules(p);
    CHECK((e.shape == r.shape));
    CHECK((e.kernel == r.kernel));
    CHECK((e.impl == r.impl));
    CHECK((e.kernel_params.data() == r.kernel_params.data()));
    CHECK((e.kernel_params.size() == r.kernel_params.size()));
    const fx::JvpRules& j = fx::jvp_rules(p);
    CHECK((j.rule == r.jvp));
    CHECK((j.zero_derivative == r.zero_derivative));
    CHECK((j.computes_primal == r.jvp_computes_primal));
    CHECK((fx::transpose_rule(p) == r.transpose));
    CHECK((fx::batch_rule(p) == r.batch));
  });
}

// The GPU column: a primitive the GPU pipeline lowers generically is one whose CPU lowering it
// reuses, so it must have one; the GPU pipeline's check is the record's; and the column is reported. Whether each claim holds -- the primitive compiled for the GPU computes the CPU's
// values -- is the GPU op table's test (tests/test_gpu_ptx.cpp, on a GPU or the emulated one).
TEST_CASE("registry: the GPU column -- what the GPU pipeline lowers, as the records say") {
  std::string lowered, not_lowered;
  int n = 0;
  for_each_primitive([&](fx::Prim p, const fx::PrimitiveRules& r) {
    const bool gpu = r.gpu != fx::GpuLowering::none;
    CHECK(fx::lowering::gpu_lowers_primitive(p) == gpu);
    if (r.gpu != fx::GpuLowering::none) CHECK(fx::lowering::has_lowering(p));
    if (gpu) CHECK_FALSE(r.eager_only);
    std::string& list = gpu ? lowered : not_lowered;
    list += (list.empty() ? "" : " ") + std::string(fx::prim_name(p));
    n += gpu;
  });
  MESSAGE("the GPU pipeline lowers " << n << " of " << fx::kNumPrims << " primitives: " << lowered
                                     << "\nnot (CompileError on a GPU): " << not_lowered);
  CHECK(n > 0);
}
