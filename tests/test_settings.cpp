// The settings table (ir/settings.h): every kind of setting takes its values and refuses others
// with a ValueError naming the setting, the value and what it takes; a bad value set while a
// program runs is raised at its compile, not ignored and not cached; unknown names get a
// suggestion. The settings read inside library calls (the convolution and GEMM choices) were the
// ones silently ignoring a typo before.
#include <doctest/doctest.h>

#include <fluxion.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "ir/settings.h"
#include "tests/test_helpers.h"

namespace fx = fluxion;

namespace {

using test_helpers::ScopedEnv;

std::string value_error(const char* name) {
  try {
    fx::setting_value(name);
  } catch (const fx::ValueError& e) {
    return e.what();
  }
  return "(no error)";
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("settings: each kind takes its values") {
  {
    ScopedEnv e("FLUXION_KERNEL_PARTS", "0");
    CHECK(fx::integer_setting("FLUXION_KERNEL_PARTS", 128) == 0);
  }
  CHECK(fx::integer_setting("FLUXION_KERNEL_PARTS", 128) == 128);
  {
    ScopedEnv e("FLUXION_JIT_LLVM_OPT", "3");
    CHECK(fx::integer_setting("FLUXION_JIT_LLVM_OPT", -1) == 3);
  }
  {
    ScopedEnv e("FLUXION_COLLECTIVE_TIMEOUT", "2.5");
    CHECK(fx::seconds_setting("FLUXION_COLLECTIVE_TIMEOUT", 60) == 2.5);
  }
  for (const char* off : {"0", "false", "off"}) {
    ScopedEnv e("FLUXION_ROW_BLOCKS", off);
    CHECK_FALSE(fx::toggle_setting("FLUXION_ROW_BLOCKS", true));
  }
  for (const char* on : {"1", "true", "on"}) {
    ScopedEnv e("FLUXION_DEBUG_NANS", on);
    CHECK(fx::toggle_setting("FLUXION_DEBUG_NANS", false));
  }
  {
    ScopedEnv e("FLUXION_CONV_FORM", "by_feature");
    CHECK(fx::choice_setting("FLUXION_CONV_FORM") == "by_feature");
  }
  {
    ScopedEnv e("FLUXION_CONV_FORM", "");  // empty reads as unset
    CHECK_FALSE(fx::choice_setting("FLUXION_CONV_FORM").has_value());
  }
}

TEST_CASE("settings: a value a setting does not take is a ValueError naming it, the value and the choices") {
  struct Bad {
    const char* name;
    const char* value;
    const char* says;
  };
  for (const Bad& b : {Bad{"FLUXION_CONV_FORM", "im2cl", "is not one of im2col,by_feature,col2im"},
                       Bad{"FLUXION_CONV_F32", "Eigen", "is not one of tiles,eigen"},
                       Bad{"FLUXION_BF16_GEMM", "wide", "is not one of native,widen"},
                       Bad{"FLUXION_KERNEL_PARTS", "abc", "is not an integer >= 0"},
                       Bad{"FLUXION_KERNEL_PARTS", "-1", "is not an integer >= 0"},
                       Bad{"FLUXION_JIT_LLVM_OPT", "4", "is not an integer in 0..3"},
                       Bad{"FLUXION_JIT_LLVM_OPT", "abc", "is not an integer in 0..3"},
                       Bad{"FLUXION_COLLECTIVE_TIMEOUT", "0", "is not a positive number of seconds"},
                       Bad{"FLUXION_COLLECTIVE_TIMEOUT", "10s", "is not a positive number of seconds"},
                       Bad{"FLUXION_ROW_BLOCKS", "no", "is not 1 or 0"},
                       Bad{"FLUXION_ALLOCATOR_CACHE_MB", "1GB", "is not an integer >= 0"},
                       Bad{"FLUXION_CPU_DEVICES", "0", "is not a positive integer"}}) {
    const std::string setting = std::string(b.name) + "=" + b.value;
    CAPTURE(setting);
    ScopedEnv e(b.name, b.value);
    const std::string m = value_error(b.name);
    CHECK(contains(m, std::string(b.name) + "='" + b.value + "' " + b.says));
    CHECK(contains(m, "unset it "));
    CHECK_THROWS_AS(fx::check_settings(), fx::ValueError);
  }
}

TEST_CASE("settings: a bad choice is raised at the compile, not ignored inside the library call, and not cached") {
  auto f = [](fx::Array x, fx::Array w) {
    return fx::conv_general_dilated(x, w, {1, 1}, {{1, 1}, {1, 1}}, {}, {}, fx::conv_dimension_numbers("NCHW", "OIHW", "NCHW"));
  };
  fx::Array x = fx::ones({2, 3, 8, 8});
  fx::Array w = fx::ones({4, 3, 3, 3});
  auto jf = fx::jit(f);
  {
    ScopedEnv e("FLUXION_CONV_FORM", "im2cl");
    try {
      jf(x, w);
      FAIL("FLUXION_CONV_FORM=im2cl was ignored");
    } catch (const fx::ValueError& err) {
      CHECK(contains(err.what(), "FLUXION_CONV_FORM='im2cl' is not one of im2col,by_feature,col2im"));
    }
  }
  fx::Array y = jf(x, w);  // the setting fixed, the same program compiles and runs
  CHECK(test_helpers::max_abs_diff(y, f(x, w)) == 0);  // sums of 12 to 27 ones: exact on both paths
}

TEST_CASE("settings: every setting the library reads is in the table, unknown names get the nearest one") {
  for (const fx::Setting& s : fx::settings()) {
    const std::string name = s.name, if_unset = s.if_unset;
    CAPTURE(name);
    CHECK(fx::find_setting(s.name) == &s);
    CHECK(std::string(s.what).size() > 10);
    if (s.kind != fx::SettingKind::tool) CHECK((if_unset.rfind("for ", 0) == 0 || if_unset.rfind("to ", 0) == 0));  // "unset it ..."
  }
  CHECK(fx::find_setting("FLUXION_TEST_ANYTHING") != nullptr);  // a prefix entry
  REQUIRE(fx::closest_setting("FLUXION_NUM_THREAD") != nullptr);
  CHECK(std::string(fx::closest_setting("FLUXION_NUM_THREAD")->name) == "FLUXION_NUM_THREADS");
  CHECK(std::string(fx::closest_setting("FLUXION_CONVFORM")->name) == "FLUXION_CONV_FORM");
  CHECK(fx::closest_setting("FLUXION_SOMETHING_ELSE") == nullptr);
  ScopedEnv e("FLUXION_NUM_THREAD", "2");  // a typo: warned on stderr, not an error
  CHECK_NOTHROW(fx::check_settings());
  CHECK_THROWS_AS(fx::setting_value("FLUXION_NOT_IN_TABLE"), std::logic_error);
}

TEST_CASE("settings: eager ops refuse a bad value too, not only jit and devices (issue 35)") {
  if (const char* name = std::getenv("FLUXION_TEST_EAGER_CHILD")) {  // the child: nothing has checked yet
    const std::string m = test_helpers::error_of([] { fx::sin(fx::ones({3})); });
    CHECK(contains(m, std::string("ValueError: ") + name + "="));
    CHECK_THROWS_AS(fx::sum(fx::array({1.f, 2.f})), fx::ValueError);  // still refused: a failed check is not cached
    return;
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string log = "/tmp/fluxion_test_eager_settings_" + std::to_string(::getpid()) + ".log";
  for (const char* setting : {"FLUXION_NUM_THREADS=banana", "FLUXION_CPU_DEVICES=-2"}) {
    const std::string name = std::string(setting).substr(0, std::string(setting).find('='));
    CAPTURE(setting);
    const std::string cmd = std::string(setting) + " FLUXION_TEST_EAGER_CHILD=" + name + " " + self +
                            " '--test-case=settings: eager ops refuse*' > " + log + " 2>&1";
    const int rc = std::system(cmd.c_str());
    std::ifstream in(log);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CAPTURE(text);
    CHECK(rc == 0);
    CHECK(contains(text, "1 passed"));
  }
  std::filesystem::remove(log);
}
