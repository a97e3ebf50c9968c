// The op table's error samples: each call raises a fluxion::Error of its kind whose message names
// the op (the entry's error_name) and the user's line (the entry's file), eagerly and under make_ir
// alike (shape rules run at trace time).
#include <doctest/doctest.h>

#include "op_table.h"

namespace optable {

namespace {
// Calls f and checks the error it raises.
template <class F>
void check_raises(const OpInfo& op, const ErrorSample& s, const char* mode, F f) {
  INFO(mode);
  bool raised = false;
  try {
    f();
  } catch (const fx::Error& e) {
    raised = true;
    const std::string msg = e.what();
    INFO(msg);
    CHECK_MESSAGE(e.kind() == s.kind, "kind " << fx::error_kind_name(e.kind()));
    CHECK_MESSAGE(msg.find(op.file + ":") != std::string::npos, "the message does not name the user's line");
    if (!op.error_name.empty()) CHECK_MESSAGE(msg.find(op.error_name) != std::string::npos, "the message does not name the op");
  } catch (const std::exception& e) {
    FAIL_CHECK("not a fluxion::Error: " << std::string(e.what()));
    raised = true;
  }
  CHECK_MESSAGE(raised, "no error raised");
}
}  // namespace

TEST_CASE("errors op table: bad inputs raise typed errors naming the op and the user's line") {
  for (const OpInfo& op : op_table()) {
    if (!op.applies(Check::errors)) continue;
    for (const ErrorSample& s : op.errors) {
      const std::string what = op.name + ": " + s.label;
      CAPTURE(what);
      std::vector<fx::Array> args;
      for (const HostArray& h : s.args) args.push_back(to_array(h, h.dtype));
      check_raises(op, s, "eager", [&] { op.op(args); });
      check_raises(op, s, "traced", [&] { fx::make_ir([&](const std::vector<fx::Array>& a) { return op.op(a); })(args); });
    }
  }
}

}  // namespace optable
