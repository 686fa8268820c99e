#pragma once
// The one place a network backend is chosen (`--network analytical|simgrid`): simulate, validate
// and plan --refine all get theirs here.
#include <memory>
#include <string>

#include "engine/network.h"
#include "engine/simulate.h"
#include "network/replay.h"
#include "schedule/pass_cost.h"
#include "spec/calibration.h"
#include "spec/cluster.h"
#include "spec/job.h"

namespace dtsim::network {

enum class Kind { analytical, simgrid };

/// "analytical" or "simgrid"; throws SpecError naming `flag` otherwise.
[[nodiscard]] Kind parse_kind(const std::string& text, const std::string& flag = "--network");
[[nodiscard]] const char* to_string(Kind k);

/// A backend of `kind` for one job (it keeps references to `c` and `cal`).
/// `cotenant_gpus` (SimGrid only): another job all-reducing over that many GPUs on the hosts after
/// this one's (SimgridNetwork).
[[nodiscard]] std::unique_ptr<engine::NetworkBackend> make_backend(Kind kind, const spec::Cluster& c,
                                                                   const spec::Parallel& par,
                                                                   const spec::CollectiveCalibration& cal,
                                                                   std::int64_t cotenant_gpus = 0);

/// Which engine runs the op graph (`--engine`): the one-pass fast path, or the event-driven
/// engine (with SimGrid: the step replayed transfer by transfer, network::replay).
enum class Engine { longest_path, events };

/// "longest-path" or "events"; throws SpecError naming `flag` otherwise.
[[nodiscard]] Engine parse_engine(const std::string& text, const std::string& flag = "--engine");
[[nodiscard]] const char* to_string(Engine e);

/// One step of `s` on network `kind` run by engine `eng`, its graph and timeline left in `ws`:
/// what simulate, validate and plan --refine all call. `stats` gets the replay's counts (SimGrid
/// with events); `cotenant_gpus` as make_backend, or as network::replay with events.
[[nodiscard]] engine::StepResult simulate(const schedule::StepSpec& s, Kind kind, Engine eng, engine::Workspace& ws,
                                          ReplayStats* stats = nullptr, std::int64_t cotenant_gpus = 0);

}  // namespace dtsim::network
