#pragma once
// Flow-level network simulation on SimGrid: links with a capacity and a latency, flows along
// fixed paths of links, bandwidth shared max-min (SimGrid's CM02 model with cross-traffic off,
// which reproduces alpha-beta costs for a lone flow). dtsim builds the links and paths from a
// cluster spec (cluster_flows.h); SimGrid solves the sharing.
#include <cstddef>
#include <vector>

namespace dtsim::network {

/// One direction of one link.
struct LinkSpec {
  double bytes_per_s = 0;
  double latency_s = 0;
};

/// A transfer of `bytes` along `path` (indices into the link list), starting at time 0.
struct FlowSpec {
  std::vector<std::size_t> path;
  double bytes = 0;
};

/// Completion time in seconds of every flow, all started together and sharing `links`. SimGrid
/// allows one engine per process, so each call runs it in a child process (fork) and reads the
/// times back through a pipe; safe to call many times from one single-threaded process. Throws
/// std::invalid_argument for a path naming no link or an unknown link, std::runtime_error when
/// the child fails.
[[nodiscard]] std::vector<double> simulate_flows(const std::vector<LinkSpec>& links, const std::vector<FlowSpec>& flows);

}  // namespace dtsim::network
