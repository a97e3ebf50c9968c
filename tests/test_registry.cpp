// The registry checks, derived from each primitive's one record (prims/registry.h): every primitive
// has registered exactly one complete block, the facts it states agree with its rules, and the
// tables the transforms read hold exactly what the record says.
#include <doctest/doctest.h>

#include <fluxion.h>

#include "ir/eval_rules.h"
#include "lowering/compile.h"
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
