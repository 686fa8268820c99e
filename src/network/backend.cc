#include "network/backend.h"

#include "core/errors.h"
#include "engine/analytical.h"
#include "network/simgrid_network.h"

namespace dtsim::network {

Kind parse_kind(const std::string& text, const std::string& flag) {
  if (text == "analytical") return Kind::analytical;
  if (text == "simgrid") return Kind::simgrid;
  throw SpecError(flag, "expected analytical or simgrid, got \"" + text + "\"");
}

const char* to_string(Kind k) { return k == Kind::analytical ? "analytical" : "simgrid"; }

std::unique_ptr<engine::NetworkBackend> make_backend(Kind kind, const spec::Cluster& c, const spec::Parallel& par,
                                                     const spec::CollectiveCalibration& cal, std::int64_t cotenant_gpus) {
  if (kind == Kind::simgrid) return std::make_unique<SimgridNetwork>(c, par, cal, cotenant_gpus);
  return std::make_unique<engine::AnalyticalNetwork>(c, par, cal);
}

}  // namespace dtsim::network
