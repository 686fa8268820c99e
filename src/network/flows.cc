#include "network/flows.h"

#include <simgrid/s4u.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "network/sg_child.h"

namespace dtsim::network {
namespace detail {

namespace sg4 = simgrid::s4u;

std::vector<char> in_child(const char* what, std::size_t bytes, const std::function<void(int fd)>& body) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string(what) + ": pipe failed");
  // The child inherits unwritten output; SimGrid flushes stdio in it, which would print it twice.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string(what) + ": fork failed");
  if (pid == 0) {
    close(fds[0]);
    body(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::vector<char> out(bytes);
  char* p = out.data();
  std::size_t n = bytes;
  while (n > 0) {
    ssize_t r = read(fds[0], p, n);
    if (r <= 0) break;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (n != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(std::string(what) + ": the SimGrid child process failed");
  return out;
}

void write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) _exit(3);
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

// AddressSanitizer cannot follow SimGrid's hand-made stack switches (its raw and ucontext
// factories: "ASan is ignoring requested __asan_handle_no_return", false reports may follow); a
// sanitized build runs actors as threads, which it follows.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

sg4::Engine& make_engine() {
  static std::vector<std::string> args = {"dtsim", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                                          "--log=root.thres:critical"};
  if (kSanitized && args.size() == 4) args.emplace_back("--cfg=contexts/factory:thread");
  static std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  static int argc = static_cast<int>(argv.size());
  static sg4::Engine engine(&argc, argv.data());
  return engine;
}

std::vector<std::pair<sg4::Host*, sg4::Host*>> make_platform(const std::vector<LinkSpec>& links,
                                                             const std::vector<std::vector<std::size_t>>& routes) {
  // A star zone: each route is its source host's "up" path (the destination adds nothing). A
  // full zone would hold a routing table of hosts x hosts entries.
  sg4::NetZone* zone = sg4::create_star_zone("dtsim");
  std::vector<sg4::Link*> made;
  for (std::size_t i = 0; i < links.size(); ++i)
    made.push_back(zone->create_link("l" + std::to_string(i), links[i].bytes_per_s)->set_latency(links[i].latency_s)->seal());
  std::vector<std::pair<sg4::Host*, sg4::Host*>> ends;
  for (std::size_t f = 0; f < routes.size(); ++f) {
    sg4::Host* src = zone->create_host("s" + std::to_string(f), 1e9);
    sg4::Host* dst = zone->create_host("d" + std::to_string(f), 1e9);
    std::vector<sg4::LinkInRoute> route;
    for (std::size_t l : routes[f]) route.emplace_back(made[l]);
    zone->add_route(src->get_netpoint(), nullptr, nullptr, nullptr, route, false);
    zone->add_route(nullptr, dst->get_netpoint(), nullptr, nullptr, {}, false);
    ends.emplace_back(src, dst);
  }
  if (ends.empty()) ends.emplace_back(zone->create_host("idle", 1e9), nullptr);
  zone->seal();
  return ends;
}

}  // namespace detail

namespace {

namespace sg4 = simgrid::s4u;

// The child: a host pair per flow routed over the flow's links, every flow started at once;
// completion times written to `fd`.
void run_child(const std::vector<LinkSpec>& links, const std::vector<FlowSpec>& flows, int fd) {
  sg4::Engine& engine = detail::make_engine();
  std::vector<std::vector<std::size_t>> routes;
  for (const FlowSpec& f : flows) routes.push_back(f.path);
  auto ends = detail::make_platform(links, routes);
  std::vector<double> done(flows.size(), 0.0);
  sg4::Actor::create("flows", ends.front().first, [&] {
    std::vector<sg4::CommPtr> comms;
    for (std::size_t f = 0; f < flows.size(); ++f)
      comms.push_back(sg4::Comm::sendto_async(ends[f].first, ends[f].second, static_cast<std::uint64_t>(flows[f].bytes)));
    // Each flow's finish time from SimGrid once all are done: waiting on them one by one costs
    // O(n) in all, where wait_any over the pending ones would cost O(n) per completion.
    for (std::size_t f = 0; f < comms.size(); ++f) {
      comms[f]->wait();
      done[f] = comms[f]->get_finish_time();
    }
  });
  engine.run();
  detail::write_all(fd, done.data(), done.size() * sizeof(double));
}

}  // namespace

std::vector<double> simulate_flows(const std::vector<LinkSpec>& links, const std::vector<FlowSpec>& flows) {
  for (const FlowSpec& f : flows) {
    if (f.path.empty()) throw std::invalid_argument("network::simulate_flows: a flow with an empty path");
    for (std::size_t l : f.path)
      if (l >= links.size()) throw std::invalid_argument("network::simulate_flows: a path names link " + std::to_string(l));
  }
  if (flows.empty()) return {};
  std::vector<char> raw = detail::in_child("network::simulate_flows", flows.size() * sizeof(double),
                                           [&](int fd) { run_child(links, flows, fd); });
  std::vector<double> done(flows.size());
  std::memcpy(done.data(), raw.data(), raw.size());
  return done;
}

}  // namespace dtsim::network
