// The training command of a Megatron-LM launch script and the job size its launcher gives:
// torchrun --nnodes N --nproc_per_node G (also python -m torch.distributed.launch/run), deepspeed
// --num_nodes N --num_gpus G, srun --nodes N --ntasks-per-node G, mpirun -np T, else the script's
// WORLD_SIZE or GPUS_PER_NODE x NNODES variables.
#include <initializer_list>
#include <string>
#include <utility>

#include "core/errors.h"
#include "core/text.h"
#include "imports/megatron.h"

namespace dtsim::imports::megatron {
namespace {

constexpr std::int64_t kMaxGpus = std::int64_t{1} << 24;  // as dtsim's --gpus

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}
std::string basename(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Index of the word naming the Python program (a word ending in ".py"), if any.
std::optional<std::size_t> program_index(const std::vector<shell::Word>& words) {
  for (std::size_t i = 0; i < words.size(); ++i)
    if (ends_with(words[i].text, ".py")) return i;
  return std::nullopt;
}

// The variables that size a job, by the names launch scripts commonly give them.
constexpr const char* kSizing[] = {"WORLD_SIZE", "GPUS_PER_NODE", "NPROC_PER_NODE", "NGPUS_PER_NODE",
                                   "NNODES",     "NUM_NODES",     "N_NODES"};

Launch make_launch(const shell::Command& c, std::size_t py, const shell::Variables& vars) {
  Launch l;
  l.launcher.assign(c.words.begin(), c.words.begin() + static_cast<std::ptrdiff_t>(py));
  l.program = basename(c.words[py].text);
  l.args.assign(c.words.begin() + static_cast<std::ptrdiff_t>(py) + 1, c.words.end());
  for (const char* name : kSizing)
    if (const shell::Value* v = vars.find(name); v != nullptr && !v->items.empty()) l.sizing[name] = v->items[0];
  return l;
}

// The launcher that starts the processes: a per-node spawner (torchrun, python -m
// torch.distributed.launch/run, deepspeed) wins over an outer srun/mpirun that starts it.
enum class Kind { spawner, slurm, mpi };
struct Launcher {
  Kind kind = Kind::spawner;
  std::string name;
  std::size_t at = 0;  ///< index of its word
};

std::optional<Launcher> find_launcher(const std::vector<shell::Word>& words) {
  std::optional<Launcher> spawner, outer;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (!words[i].known) continue;
    std::string b = basename(words[i].text);
    bool module = i > 0 && words[i - 1].text == "-m" && starts_with(b, "torch.distributed.");
    if (b == "torchrun" || b == "deepspeed") spawner = Launcher{Kind::spawner, b, i};
    else if (module) spawner = Launcher{Kind::spawner, "python -m " + printable(b), i};
    else if (b == "srun") outer = Launcher{Kind::slurm, b, i};
    else if (b == "mpirun" || b == "mpiexec") outer = Launcher{Kind::mpi, b, i};
  }
  return spawner ? spawner : outer;
}

// The launcher's options as NAME -> value word (--opt=value or --opt value; the last one wins).
std::map<std::string, shell::Word> launcher_options(const std::vector<shell::Word>& words, std::size_t from) {
  std::map<std::string, shell::Word> out;
  for (std::size_t i = from; i < words.size(); ++i) {
    const shell::Word& w = words[i];
    if (w.text.rfind('-', 0) != 0) continue;
    if (auto option = split_option(w); option) out[option->first] = option->second;
    else if (w.known && i + 1 < words.size() && !(words[i + 1].known && starts_with(words[i + 1].text, "-")))
      out[w.text] = words[i + 1];
  }
  return out;
}

// One count of the job: an integer, or nullopt with a note when it is decided at run time.
struct Count {
  std::optional<std::int64_t> value;
  std::string name;  ///< the option or variable, for notes
};

std::optional<Count> count(const std::map<std::string, shell::Word>& options,
                           std::initializer_list<const char*> names, const std::string& file, Imported& out,
                           bool& unknown) {
  for (const char* n : names) {
    auto it = options.find(n);
    if (it == options.end()) continue;
    const shell::Word& w = it->second;
    std::optional<std::int64_t> v = w.known ? parse_integer(w.text) : std::nullopt;
    if (v && (*v < 1 || *v > kMaxGpus))
      throw SpecError(file + ":" + std::to_string(w.line()),
                      integer_range(1, kMaxGpus) + " for " + n + ", got " + std::to_string(*v));
    if (!v && w.known && w.text != "gpu" && w.text != "auto" && w.text.find(':') == std::string::npos)
      throw SpecError(file + ":" + std::to_string(w.line()), "expected an integer for " + std::string(n) + ", got " +
                                                                 quoted(w.text));
    if (!v) {  // $SLURM_NNODES, torchrun's "gpu"/"auto" or an elastic "1:4": known only at run time
      out.notes.push_back("gpus: " + std::string(n) + " is " + quoted(w.text) +
                          (w.known ? ", decided at run time" : ", set outside the script") + "; pass --gpus");
      unknown = true;
    }
    return Count{v, n};
  }
  return std::nullopt;
}

void set_gpus(JobDraft& job, Imported& out, std::int64_t nodes, std::int64_t per_node, const std::string& how,
              const std::string& file) {
  std::int64_t gpus = 0;
  if (__builtin_mul_overflow(nodes, per_node, &gpus) || gpus > kMaxGpus)
    throw SpecError(file, "expected at most " + std::to_string(kMaxGpus) + " GPUs, got " + std::to_string(nodes) +
                              " nodes x " + std::to_string(per_node));
  job.gpus = gpus;
  out.notes.push_back("gpus = " + std::to_string(nodes) + " nodes x " + std::to_string(per_node) + " (" + how + ")");
}

// WORLD_SIZE, or GPUS_PER_NODE x NNODES, as the script set them.
bool gpus_from_variables(const Launch& l, const std::string& file, JobDraft& job, Imported& out) {
  bool unknown = false;
  if (auto total = count(l.sizing, {"WORLD_SIZE"}, file, out, unknown); total) {
    if (total->value) {
      job.gpus = total->value;
      out.notes.push_back("gpus = " + std::to_string(*total->value) + " (the script's WORLD_SIZE)");
    }
    return true;
  }
  auto per_node = count(l.sizing, {"GPUS_PER_NODE", "NPROC_PER_NODE", "NGPUS_PER_NODE"}, file, out, unknown);
  auto nodes = count(l.sizing, {"NNODES", "NUM_NODES", "N_NODES"}, file, out, unknown);
  if (!per_node || !nodes) return unknown;
  if (per_node->value && nodes->value)
    set_gpus(job, out, *nodes->value, *per_node->value, "the script's " + nodes->name + " x " + per_node->name, file);
  return true;
}

// gpus from the launcher's own options; false when it does not give them.
bool gpus_from_launcher(const Launcher& l, const std::map<std::string, shell::Word>& o, const std::string& file,
                        JobDraft& job, Imported& out) {
  bool unknown = false;
  if (l.kind != Kind::spawner) {
    auto total = count(o, {"-np", "-n", "--np", "--ntasks"}, file, out, unknown);
    if (total && total->value) {
      job.gpus = total->value;
      out.notes.push_back("gpus = " + std::to_string(*total->value) + " (" + l.name + " " + total->name + ")");
    }
    if (total || l.kind == Kind::mpi) return total.has_value();
  }
  auto per_node = l.kind == Kind::spawner
                      ? count(o, {"--nproc_per_node", "--nproc-per-node", "--num_gpus", "--num-gpus"}, file, out, unknown)
                      : count(o, {"--ntasks-per-node"}, file, out, unknown);
  auto nodes = count(o, {"--nnodes", "--num_nodes", "--num-nodes", "--nodes", "-N"}, file, out, unknown);
  if (unknown) return true;
  if (!per_node || (!nodes && l.kind == Kind::slurm)) return false;
  std::string how = l.name + " " + (nodes ? nodes->name : "without a node count: 1 node") + " x " + per_node->name;
  set_gpus(job, out, nodes ? *nodes->value : 1, *per_node->value, how, file);
  return true;
}

}  // namespace

Launch find_launch(const std::string& text, const std::string& file) {
  std::optional<Launch> best;
  bool best_trains = false;
  std::vector<shell::Word> words;  // every command's words, for an args file
  int first_line = 1;
  shell::read_script(text, file, [&](const shell::Command& c, const shell::Variables& vars) {
    if (words.empty()) first_line = c.line;
    words.insert(words.end(), c.words.begin(), c.words.end());
    std::optional<std::size_t> py = program_index(c.words);
    if (!py) return;
    bool trains = basename(c.words[*py].text).find("train") != std::string::npos;
    if (!best || (trains && !best_trains)) {
      best = make_launch(c, *py, vars);
      best_trains = trains;
    }
  });
  if (best) return std::move(*best);
  if (!words.empty() && words[0].known && starts_with(words[0].text, "--")) {
    Launch l;
    l.args = std::move(words);
    return l;
  }
  throw SpecError(file + ":" + std::to_string(first_line),
                  "expected a launch script running a Python training program (torchrun ... pretrain_gpt.py ...) "
                  "or an args file (--flag value ...), got " +
                      (words.empty() ? std::string("no command") : "a command " + quoted(words[0].text) +
                                                                      " and no Python program"));
}

void read_gpus(const Launch& l, const std::string& file, JobDraft& job, Imported& out) {
  if (std::optional<Launcher> launcher = find_launcher(l.launcher); launcher) {
    if (gpus_from_launcher(*launcher, launcher_options(l.launcher, launcher->at + 1), file, job, out)) return;
  }
  if (gpus_from_variables(l, file, job, out)) return;
  out.notes.push_back(
      "gpus: the script does not say (no torchrun --nnodes/--nproc_per_node, deepspeed --num_nodes/--num_gpus, "
      "srun --nodes/--ntasks-per-node, mpirun -np, WORLD_SIZE or GPUS_PER_NODE x NNODES); pass --gpus");
}

}  // namespace dtsim::imports::megatron
