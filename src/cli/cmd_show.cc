#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "report/show.h"
#include "spec/load.h"
#include "spec/stack.h"

namespace dtsim::cli {
namespace {

struct ShowArgs {
  std::string target;
  bool json = false;
  std::int64_t gpus = 0;
  std::int64_t seq = 2048;
};

}  // namespace

void add_show(CLI::App& app, Action& action) {
  auto args = std::make_shared<ShowArgs>();
  CLI::App* show = app.add_subcommand("show", "Print derived facts of a model, cluster, GPU or software stack");
  show->require_subcommand(1);
  CLI::App* model = show->add_subcommand("model", "Parameters, FLOPs per token and per-layer breakdown");
  model->add_option("name", args->target, "Preset name (models/NAME.json), dtsim model file or HF config.json")->required();
  model->add_option("--seq", args->seq, "Sequence length for the attention FLOPs")->check(CLI::Range(1, 1 << 24));
  CLI::App* cluster = show->add_subcommand("cluster", "Nodes and per-link-class bandwidth and latency");
  cluster->add_option("name", args->target, "Preset name (topologies/NAME.json) or file")->required();
  cluster->add_option("--gpus", args->gpus, "GPUs in the job (default: one node)")->check(CLI::Range(1, 1 << 24));
  CLI::App* gpu = show->add_subcommand("gpu", "Peak throughput, memory and bandwidth");
  gpu->add_option("name", args->target, "Preset name (topologies/gpus/NAME.json) or file")->required();
  CLI::App* stack = show->add_subcommand("stack", "A software stack's switches, defaults and per-GPU recipes");
  stack->add_option("name", args->target, "NAME[@VERSION or @YYYY-MM] (calibration/stacks/) or file")->required();
  for (CLI::App* sub : {model, cluster, gpu, stack}) sub->add_flag("--json", args->json, "Print one JSON object");

  model->callback([args, &action] {
    action = [args] {
      std::cout << report::show_model(spec::load_model(args->target), args->seq, args->json);
      return 0;
    };
  });
  cluster->callback([args, &action] {
    action = [args] {
      spec::Cluster c = spec::load_cluster(args->target);
      std::cout << report::show_cluster(c, args->gpus > 0 ? args->gpus : c.gpus_per_node, args->json);
      return 0;
    };
  });
  stack->callback([args, &action] {
    action = [args] {
      std::cout << report::show_stack(spec::load_stack(args->target, "show stack"), args->json);
      return 0;
    };
  });
  gpu->callback([args, &action] {
    action = [args] {
      std::cout << report::show_gpu(spec::load_gpu(args->target), args->json);
      return 0;
    };
  });
}

}  // namespace dtsim::cli
