// Registration of every MLIR dialect, extension and pass, kept in a translation unit of its own:
// the InitAll headers take 20-40 s to compile, and nothing else here needs them.
#include <mlir/InitAllDialects.h>
#include <mlir/InitAllExtensions.h>
#include <mlir/InitAllPasses.h>

namespace fluxion::lowering {

void register_all_mlir(mlir::DialectRegistry& registry) {
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllPasses();
}

}  // namespace fluxion::lowering
