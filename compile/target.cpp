#include "compile/target.h"

#include "ir/settings.h"

namespace fluxion::runtime {

const CompileTarget& default_target(Platform platform) {
  static const CompileTarget cpu = [] {
    check_settings();  // the first compile: before any kernel can meet a bad setting in a library call
    return CompileTarget{Platform::cpu, thread_setting()};
  }();
  static const CompileTarget cuda{Platform::cuda, 1};
  return platform == Platform::cpu ? cpu : cuda;
}

}  // namespace fluxion::runtime
