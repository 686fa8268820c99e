#pragma once
// Internal to src/imports: the pieces of from_megatron. megatron_script.cc finds the training
// command in a script and sizes the job from its launcher; megatron_args.cc groups and reads the
// program's arguments; megatron_read.cc maps them to job flags and a model shape.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "imports/draft.h"
#include "imports/shell.h"

namespace dtsim::imports::megatron {

/// The training command of a script: the launcher's words before the Python program, the
/// program's arguments, and the script's sizing variables (GPUS_PER_NODE...) as it saw them.
struct Launch {
  std::vector<shell::Word> launcher;
  std::string program;  ///< e.g. "pretrain_gpt.py"; empty for an args file
  std::vector<shell::Word> args;
  std::map<std::string, shell::Word> sizing;
};

/// Finds the command running the training program (the first whose Python file's name contains
/// "train", else the first running a Python file), or reads the text as an args file.
/// Throws SpecError("FILE:LINE", ...) when it is neither, or for a shell syntax error.
[[nodiscard]] Launch find_launch(const std::string& text, const std::string& file);

/// Sets job.gpus from the launcher (torchrun/deepspeed/srun/mpirun options) or the sizing
/// variables, with a note saying how; a note instead when the script does not say.
void read_gpus(const Launch& launch, const std::string& file, JobDraft& job, Imported& out);

/// `--name=value` split at its '=' when the name part is known (the value may come from outside
/// the script); nullopt for a word without '=' or whose name is not known.
[[nodiscard]] std::optional<std::pair<std::string, shell::Word>> split_option(const shell::Word& w);

/// One argument of the program: --name, the words after it, and the line of the flag.
struct Arg {
  std::string name;
  std::vector<shell::Word> values;
  int line = 0;
  bool closed = false;  ///< --name=value: takes no further words
};

/// The program's arguments, read by name (the last occurrence wins, as with argparse).
class Args {
 public:
  Args(const std::vector<shell::Word>& words, std::string file, Imported& out);
  [[nodiscard]] bool has(const std::string& name) const;
  /// A flag without a value (store_true); a value after it is an error, unless unknown.
  bool flag(const std::string& name);
  /// An integer in [min, max], or nullopt when absent.
  std::optional<std::int64_t> integer(const std::string& name, std::int64_t min, std::int64_t max);
  /// An integer with where it was given, for the model's shape.
  std::optional<Sized> sized(const std::string& name, std::int64_t min, std::int64_t max);
  /// A probability in [0, 1), or nullopt when absent.
  std::optional<double> probability(const std::string& name);
  /// One of `choices`, or nullopt when absent.
  std::optional<std::string> choice(const std::string& name, std::initializer_list<const char*> choices);
  /// One known value, or nullopt when absent.
  std::optional<std::string> text(const std::string& name);
  /// Every word after `name` (nargs='*'), or nullopt when absent.
  std::optional<std::vector<std::string>> words(const std::string& name);
  /// "FILE:LINE" of the flag `name` (its last occurrence).
  [[nodiscard]] std::string where(const std::string& name) const;
  /// Marks `name` read and lists it in `ignored` with `why` (when present).
  void ignore(const std::string& name, const std::string& why);
  /// Lists every argument never read in `ignored`, each once, with its reason.
  void ignore_rest();

 private:
  const Arg* last(const std::string& name);
  const shell::Word& one_value(const Arg& a, const std::string& what);
  [[noreturn]] void fail(int line, const std::string& message) const;

  std::vector<Arg> args_;
  std::set<std::string> read_;
  std::string file_;
  Imported& out_;
};

/// The model's shape from --num-layers, --hidden-size, ... with Megatron-LM's defaults; the
/// vocabulary padded for `j.tp` (megatron_shape.cc).
[[nodiscard]] ModelDraft read_shape(Args& a, const JobDraft& j, Imported& out);

/// Reads the program's arguments into `job` (and the model shape into --model or out.model).
void read_args(const Launch& launch, const std::string& file, JobDraft& job, Imported& out);

}  // namespace dtsim::imports::megatron
