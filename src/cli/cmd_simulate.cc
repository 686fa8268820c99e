// `dtsim simulate` and `dtsim memory`.
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/job_flags.h"
#include "core/errors.h"
#include "cost/memory.h"
#include "engine/analytical.h"
#include "engine/simulate.h"
#include "network/backend.h"
#include "topology/links.h"
#include "report/html.h"
#include "report/kernels.h"
#include "report/simulate_report.h"
#include "spec/json_reader.h"
#include "spec/load.h"

namespace dtsim::cli {
namespace {

// --recompute auto: the least recomputation that fits (none, then selective, then full).
void choose_recompute(Job& j) {
  if (!j.auto_recompute) return;
  j.train = cost::least_recompute_that_fits(j.model, j.cluster, j.par, j.train, j.software);
  j.notes.push_back("recompute auto -> " + cost::recompute_text(j.train));
}

report::JobView view(const Job& j) {
  return {&j.model, &j.cluster, j.calibration.name, j.gpus, j.par, j.train, j.software, j.stack.label(),
          j.calibration.compute.speed_spread, j.notes, j.network, j.engine};
}

struct SimulateArgs {
  JobFlags flags;
  std::string trace, html, svg;
  std::string network = "analytical";
  std::int64_t cotenant = 0;
  std::string engine = "longest-path";
  bool kernels = false;
};

}  // namespace

void add_simulate(CLI::App& app, Action& action) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* sim = app.add_subcommand("simulate", "Simulate one optimizer step of a training job");
  add_job_flags(*sim, args->flags, true);
  add_residuals_flag(*sim, args->flags);
  sim->add_option("--trace", args->trace, "Write a Chrome trace (Perfetto) of the step to FILE");
  sim->add_option("--html", args->html, "Write a self-contained HTML report (breakdown, pipeline timeline) to FILE");
  sim->add_option("--svg", args->svg, "Write the plots alone: PREFIX-breakdown.svg and PREFIX-timeline.svg");
  sim->add_option("--network", args->network,
                  "analytical|simgrid: price collectives analytically, or slow each by the contention SimGrid "
                  "finds when every group of its kind runs at once on the cluster's links");
  sim->add_option("--cotenant-gpus", args->cotenant,
                  "With --network simgrid: another job all-reducing over N GPUs on the hosts after this one's, "
                  "sharing the fabric")
      ->check(CLI::Range(2, 1 << 24));
  sim->add_option("--engine", args->engine,
                  "longest-path|events: the one-pass fast path, or the event-driven engine (with --network "
                  "simgrid it replays every transfer, in passes too, as SimGrid flows, so transfers of different "
                  "kinds share links)");
  sim->add_flag("--kernels", args->kernels,
                "Also list one layer's kernels on one rank: shape, work, traffic, priced time and what bounds it "
                "(with --json: a \"kernels\" member)");
  sim->callback([args, sim, &action] {
    apply_imports(*sim, args->flags);
    action = [args] {
      Job j = resolve_job(args->flags);
      calibrate::Uncertainty u = job_uncertainty(args->flags, j.cluster, j.stack.name, j.gpus, j.train.precision);
      choose_recompute(j);
      schedule::StepSpec s{&j.model, &j.cluster, j.par, j.train, &j.calibration, j.software};
      network::Kind kind = network::parse_kind(args->network);
      if (args->cotenant > 0 && kind != network::Kind::simgrid)
        throw SpecError("--cotenant-gpus", "expected --network simgrid with it, got --network " + args->network);
      if (args->cotenant > 0) {
        std::int64_t first = (j.gpus + j.cluster.gpus_per_node - 1) / j.cluster.gpus_per_node;
        std::int64_t last = first + (args->cotenant + j.cluster.gpus_per_node - 1) / j.cluster.gpus_per_node - 1;
        if (last >= topology::max_nodes(j.cluster))
          throw SpecError("--cotenant-gpus", "expected the two jobs to fit the fabric's " +
                                                 std::to_string(topology::max_nodes(j.cluster)) + " nodes, got " +
                                                 std::to_string(last + 1));
        j.notes.push_back("co-tenant: another job all-reducing over " + std::to_string(args->cotenant) +
                          " GPUs on nodes " + std::to_string(first) + "-" + std::to_string(last) +
                          " shares the fabric (SimGrid)");
      }
      network::Engine eng = network::parse_engine(args->engine);
      engine::Workspace ws;
      network::ReplayStats st;
      engine::Simulation sim;
      sim.result = network::simulate(s, kind, eng, ws, &st, args->cotenant);
      sim.step = std::move(ws.step);
      sim.timeline = std::move(ws.timeline);
      if (st.flows > 0 || st.events > 0)
        j.notes.push_back("SimGrid replay: " + std::to_string(st.transfers) + " transfers as " +
                          std::to_string(st.flows) + " flows, " + std::to_string(st.events) +
                          " engine events; passes' communication in " +
                          (st.rounds > 1 ? "up to " + std::to_string(st.rounds) + " rounds (one per layer)"
                                         : std::string("one round")));
      j.network = network::to_string(kind);
      j.engine = args->engine;
      auto mem = cost::estimate_memory(j.model, j.cluster, j.par, j.train, j.software);
      if (!args->trace.empty()) {
        spec::write_text_file("--trace", args->trace, report::chrome_trace(sim));
      }
      if (!args->html.empty()) spec::write_text_file("--html", args->html, report::simulate_html(view(j), sim, mem, u));
      if (!args->svg.empty()) {
        std::string title = j.model.name + " on " + std::to_string(j.gpus) + " x " + j.cluster.gpu.name;
        spec::write_text_file("--svg", args->svg + "-breakdown.svg", report::breakdown_svg(sim.result, title));
        spec::write_text_file("--svg", args->svg + "-timeline.svg", report::timeline_svg(sim, title));
      }
      calibrate::Uncertainty peak = job_peak_uncertainty(args->flags, j.cluster, j.stack.name, j.gpus, j.train.precision);
      std::string out = report::simulate_report(view(j), sim.result, mem, u, args->flags.json, &peak);
      if (args->kernels && args->flags.json) {
        nlohmann::json o = nlohmann::json::parse(out);
        o["kernels"] = report::kernels_json(schedule::listed_kernels(s));
        out = spec::json_text(o) + "\n";
      } else if (args->kernels) {
        out += "\n" + report::kernels_table(schedule::listed_kernels(s));
      }
      std::cout << out;
      return 0;
    };
  });
}

void add_memory(CLI::App& app, Action& action) {
  auto args = std::make_shared<JobFlags>();
  CLI::App* mem = app.add_subcommand("memory", "Memory per GPU of a training job, and whether it fits");
  add_job_flags(*mem, *args, true);
  add_residuals_flag(*mem, *args);
  mem->callback([args, mem, &action] {
    apply_imports(*mem, *args);
    action = [args] {
      Job j = resolve_job(*args);
      choose_recompute(j);
      auto est = cost::estimate_memory(j.model, j.cluster, j.par, j.train, j.software);
      calibrate::Uncertainty peak = job_peak_uncertainty(*args, j.cluster, j.stack.name, j.gpus, j.train.precision);
      std::cout << report::memory_report(view(j), est, args->json, &peak);
      return 0;
    };
  });
}

}  // namespace dtsim::cli
