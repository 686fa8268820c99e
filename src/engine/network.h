#pragma once
// How the engine prices communication tasks. The analytical backend uses src/cost's
// alpha-beta collective model on the real topology; a SimGrid backend can replace it.
#include "core/units.h"
#include "schedule/graph.h"

namespace dtsim::engine {

/// Prices the collectives of an op graph (the schedule's CommPricer interface).
using NetworkBackend = schedule::CommPricer;

}  // namespace dtsim::engine
