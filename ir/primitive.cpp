#include "ir/primitive.h"

#include <array>

namespace fluxion {

namespace {
constexpr std::array<std::string_view, kNumPrims> kNames = {
#define FLUXION_X(id, name) name,
    FLUXION_PRIMITIVES(FLUXION_X)
#undef FLUXION_X
};
}  // namespace

std::string_view prim_name(Prim p) { return kNames[size_t(p)]; }

bool parse_prim(std::string_view name, Prim* out) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) {
      *out = Prim(i);
      return true;
    }
  return false;
}

}  // namespace fluxion
