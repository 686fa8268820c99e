// The training program's arguments as argparse sees them: --name, --name value..., --name=value;
// the last occurrence wins. Megatron-LM takes no positional arguments, so every word after a flag
// up to the next flag is one of its values -- except a second word from outside the script
// (--micro-batch-size 1 $EXTRA_ARGS), which stands alone and is listed as not imported.
#include <string>
#include <utility>

#include "core/errors.h"
#include "core/text.h"
#include "imports/draft.h"
#include "imports/megatron.h"

namespace dtsim::imports::megatron {
namespace {

constexpr const char* kData = "data and tokenizer files: not simulated";
constexpr const char* kFusion = kKernelChoice;

// Why an argument dtsim does not read has no place in a simulated step.
constexpr IgnoreReason kReasons[] = {
    {"--use-flash-attn", "dtsim's default attention is flash"},
    {"--rampup-batch-size", "batch-size ramp-up: dtsim simulates a step at the full global batch"},
    {"--lr", kNoEffect}, {"--lr-*", kNoEffect}, {"--min-lr", kNoEffect}, {"--weight-decay*", kNoEffect},
    {"--start-weight-decay", kNoEffect}, {"--end-weight-decay", kNoEffect}, {"--adam-*", kNoEffect},
    {"--sgd-momentum", kNoEffect}, {"--clip-grad", kNoEffect}, {"--init-method-*", kNoEffect},
    {"*-dropout", kNoEffect}, {"--seed", kNoEffect}, {"--train-iters", kNoEffect}, {"--train-samples", kNoEffect},
    {"--exit-*", kNoEffect}, {"--loss-scale*", kNoEffect}, {"--initial-loss-scale", kNoEffect},
    {"--min-loss-scale", kNoEffect}, {"--hysteresis", kNoEffect}, {"--norm-epsilon", kNoEffect},
    {"--layernorm-epsilon", kNoEffect}, {"--rotary-*", kNoEffect}, {"--rope-*", kNoEffect},
    {"--apply-query-key-layer-scaling", kNoEffect}, {"--attention-softmax-in-fp32", kNoEffect},
    {"--override-opt_param-scheduler", kNoEffect}, {"--use-checkpoint-opt_param-scheduler", kNoEffect},
    {"--finetune", kNoEffect}, {"--openai-gelu", kNoEffect}, {"--apply-layernorm-1p", kNoEffect},
    {"--distributed-backend", kNoEffect}, {"--distributed-timeout-minutes", kNoEffect},
    {"--use-cpu-initialization", kNoEffect}, {"--micro-batch-size-*", kNoEffect},
    {"--data-path", kData}, {"*-data-path", kData}, {"--split", kData}, {"--vocab-file", kData},
    {"--merge-file", kData}, {"--tokenizer-model", kData}, {"--data-cache-path", kData}, {"--mock-data", kData},
    {"--num-workers", kData}, {"--dataloader-type", kData}, {"--eod-mask-loss", kData},
    {"--reset-position-ids", kData}, {"--reset-attention-mask", kData}, {"--data-impl", kData},
    {"--no-create-attention-mask-in-dataloader", kData},
    {"--log-*", kLogging}, {"--save*", kLogging}, {"--load*", kLogging}, {"--eval-*", kLogging},
    {"--tensorboard-*", kLogging}, {"--wandb-*", kLogging}, {"--ckpt-*", kLogging}, {"--dist-ckpt-*", kLogging},
    {"--use-dist-ckpt", kLogging}, {"--async-save", kLogging}, {"--no-save-*", kLogging}, {"--profile*", kLogging},
    {"--timing-log-*", kLogging}, {"--no-load-*", kLogging}, {"--pretrained-checkpoint", kLogging},
    {"--exit-signal-handler", kLogging}, {"--logging-level", kLogging}, {"--auto-detect-ckpt-format", kLogging},
    {"*-fusion", kFusion}, {"--transformer-impl", kFusion}, {"--use-mcore-models", kFusion},
    {"--use-legacy-models", kFusion}, {"--no-persist-layer-norm", kFusion},
    {"--deepspeed", "Megatron-DeepSpeed: its ZeRO settings are in the --deepspeed_config file (from_deepspeed)"},
    {"--deepspeed_config", "a DeepSpeed config: import it with from_deepspeed"},
};

std::string reason(const std::string& name) { return ignore_reason(name, kReasons); }

bool is_flag(const shell::Word& w) {
  return w.text.size() > 2 && w.text.rfind("--", 0) == 0 && (w.known || split_option(w).has_value());
}

std::string outside(const shell::Word& w) {
  return quoted(w.text) + " (set outside the script: what it holds is not imported)";
}

}  // namespace

std::optional<std::pair<std::string, shell::Word>> split_option(const shell::Word& w) {
  std::size_t eq = w.text.find('=');
  if (eq == std::string::npos || (!w.known && eq >= w.unknown_from)) return std::nullopt;
  shell::Word v;
  v.text = w.text.substr(eq + 1);
  v.lines = {{0, w.line_at(eq + 1)}};
  v.known = w.known;
  if (!w.known) v.unknown_from = w.unknown_from - (eq + 1);
  return std::pair{w.text.substr(0, eq), std::move(v)};
}

Args::Args(const std::vector<shell::Word>& words, std::string file, Imported& out)
    : file_(std::move(file)), out_(out) {
  for (const shell::Word& w : words) {
    if (is_flag(w)) {
      Arg a;
      a.line = w.line();
      if (auto option = split_option(w); option) {
        a.name = std::move(option->first);
        a.values.push_back(std::move(option->second));
        a.closed = true;
      } else {
        a.name = w.text;
      }
      args_.push_back(std::move(a));
    } else if (!args_.empty() && !args_.back().closed && (w.known || args_.back().values.empty())) {
      args_.back().values.push_back(w);
    } else {
      out_.ignored.push_back(w.known ? quoted(w.text) + " (a positional argument: Megatron-LM takes none)" : outside(w));
    }
  }
}

void Args::fail(int line, const std::string& message) const {
  throw SpecError(file_ + ":" + std::to_string(line), message);
}

bool Args::has(const std::string& name) const {
  for (const Arg& a : args_)
    if (a.name == name) return true;
  return false;
}

const Arg* Args::last(const std::string& name) {
  read_.insert(name);
  const Arg* found = nullptr;
  for (const Arg& a : args_)
    if (a.name == name) found = &a;
  return found;
}

std::string Args::where(const std::string& name) const {
  int line = 0;
  for (const Arg& a : args_)
    if (a.name == name) line = a.line;
  return file_ + ":" + std::to_string(line);
}

const shell::Word& Args::one_value(const Arg& a, const std::string& what) {
  if (a.values.empty()) fail(a.line, "expected " + what + " after " + a.name + ", got nothing");
  if (a.values.size() > 1)
    fail(a.values[1].line(), "expected one value after " + a.name + ", got " + quoted(a.values[1].text) + " as well");
  const shell::Word& v = a.values[0];
  if (!v.known) fail(v.line(), "expected " + what + " for " + a.name + ", got " + quoted(v.text) + " (set outside the script)");
  return v;
}

bool Args::flag(const std::string& name) {
  const Arg* a = last(name);
  if (a == nullptr) return false;
  for (const shell::Word& v : a->values) {
    if (!v.known) out_.ignored.push_back(outside(v));
    else fail(v.line(), "expected a flag after " + name + " (it takes no value), got " + quoted(v.text));
  }
  return true;
}

std::optional<std::int64_t> Args::integer(const std::string& name, std::int64_t min, std::int64_t max) {
  const Arg* a = last(name);
  if (a == nullptr) return std::nullopt;
  const shell::Word& v = one_value(*a, "an integer");
  std::optional<std::int64_t> x = parse_integer(v.text);
  if (!x) fail(v.line(), "expected an integer for " + name + ", got " + quoted(v.text));
  if (*x < min || *x > max) fail(v.line(), integer_range(min, max) + " for " + name + ", got " + std::to_string(*x));
  return x;
}

std::optional<double> Args::probability(const std::string& name) {
  const Arg* a = last(name);
  if (a == nullptr) return std::nullopt;
  const shell::Word& v = one_value(*a, "a probability");
  std::optional<double> x = parse_probability(v.text);
  if (!x) fail(v.line(), "expected a probability in [0, 1) for " + name + ", got " + quoted(v.text));
  return x;
}

std::optional<Sized> Args::sized(const std::string& name, std::int64_t min, std::int64_t max) {
  std::optional<std::int64_t> v = integer(name, min, max);
  if (!v) return std::nullopt;
  const Arg* a = last(name);
  return Sized{*v, file_ + ":" + std::to_string(a->values[0].line()), name};
}

std::optional<std::string> Args::choice(const std::string& name, std::initializer_list<const char*> choices) {
  std::string list;
  for (const char* c : choices) list += (list.empty() ? "" : ", ") + std::string(c);
  const Arg* a = last(name);
  if (a == nullptr) return std::nullopt;
  const shell::Word& v = one_value(*a, "one of " + list);
  for (const char* c : choices)
    if (v.text == c) return v.text;
  fail(v.line(), "expected one of " + list + " for " + name + ", got " + quoted(v.text));
}

std::optional<std::string> Args::text(const std::string& name) {
  const Arg* a = last(name);
  if (a == nullptr) return std::nullopt;
  return one_value(*a, "a value").text;
}

std::optional<std::vector<std::string>> Args::words(const std::string& name) {
  const Arg* a = last(name);
  if (a == nullptr) return std::nullopt;
  std::vector<std::string> out;
  for (const shell::Word& v : a->values) {
    if (!v.known) fail(v.line(), "expected values for " + name + ", got " + quoted(v.text) + " (set outside the script)");
    out.push_back(v.text);
  }
  return out;
}

void Args::ignore(const std::string& name, const std::string& why) {
  if (last(name) != nullptr) out_.ignored.push_back(printable(name) + " (" + why + ")");
}

void Args::ignore_rest() {
  for (const Arg& a : args_) {
    if (read_.count(a.name) != 0) continue;
    read_.insert(a.name);
    out_.ignored.push_back(printable(a.name) + " (" + reason(a.name) + ")");
  }
}

}  // namespace dtsim::imports::megatron
