#include "network/backend.h"

#include "core/errors.h"
#include "engine/analytical.h"
#include "engine/events.h"
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

Engine parse_engine(const std::string& text, const std::string& flag) {
  if (text == "longest-path") return Engine::longest_path;
  if (text == "events") return Engine::events;
  throw SpecError(flag, "expected longest-path or events, got \"" + text + "\"");
}

const char* to_string(Engine e) { return e == Engine::longest_path ? "longest-path" : "events"; }

engine::StepResult simulate(const schedule::StepSpec& s, Kind kind, Engine eng, engine::Workspace& ws,
                            ReplayStats* stats, std::int64_t cotenant_gpus) {
  if (eng == Engine::events && kind == Kind::simgrid) return replay(s, ws, stats, cotenant_gpus);
  auto net = make_backend(kind, *s.cluster, s.par, s.cal->collectives, cotenant_gpus);
  if (eng == Engine::longest_path) return engine::simulate_into(s, *net, ws);
  schedule::build_step(s, *net, ws.step);
  engine::PricedTransfers priced(*net);
  engine::EventSimulator(s.cal->compute.overlap_slowdown).run(ws.step.graph, priced, ws.timeline);
  return engine::summarize(s, ws);
}

}  // namespace dtsim::network
