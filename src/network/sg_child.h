#pragma once
// SimGrid in a child process: SimGrid allows one engine per process, so every run forks, builds
// its platform and engine in the child, and sends its result back through a pipe.
#include <simgrid/s4u.hpp>

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "network/flows.h"

namespace dtsim::network::detail {

/// Forks; the child runs `body(fd)`, which writes its result with write_all, and exits. The
/// parent reads exactly `bytes` bytes back. Flushes stdio first (the child would print unwritten
/// output again). Throws std::runtime_error naming `what` when the child fails.
[[nodiscard]] std::vector<char> in_child(const char* what, std::size_t bytes, const std::function<void(int fd)>& body);

/// Writes all of `data` to `fd`; exits the (child) process with status 3 when it cannot.
void write_all(int fd, const void* data, std::size_t n);

/// The child's engine: CM02 without cross-traffic (flows match alpha-beta), quiet logs. Once per child.
[[nodiscard]] simgrid::s4u::Engine& make_engine();

/// One full zone with `links` and a source/destination host pair per route (link indices), sealed.
[[nodiscard]] std::vector<std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*>> make_platform(
    const std::vector<LinkSpec>& links, const std::vector<std::vector<std::size_t>>& routes);

}  // namespace dtsim::network::detail
