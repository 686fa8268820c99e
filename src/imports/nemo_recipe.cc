// Typed reads of a recipe tree by dotted path, with FILE:LINE errors and OmegaConf's
// interpolations (omegaconf docs, "Variable interpolation": ${a.b} absolute, ${.b} relative to
// the node's parent, one more dot per level up).
#include <string>
#include <utility>

#include "core/errors.h"
#include "core/text.h"
#include "imports/draft.h"
#include "imports/nemo.h"

namespace dtsim::imports::nemo {
namespace {

constexpr int kMaxHops = 16;  // interpolations followed in a row (a cycle ends here)

constexpr const char* kData = "data and tokenizer: not simulated";

// Why a key has no place in a simulated step.
constexpr IgnoreReason kReasons[] = {
    {"exp_manager", kLogging}, {"logger", kLogging}, {"checkpoint", kLogging}, {"profiling", kLogging},
    {"trainer.log*", kLogging}, {"trainer.val_check_interval", kLogging}, {"trainer.limit_*", kLogging},
    {"trainer.enable_checkpointing", kLogging}, {"trainer.num_sanity_val_steps", kLogging},
    {"trainer.callbacks", kLogging}, {"*tokenizer*", kData}, {"*.data", kData},
    {"data", kData}, {"dataset", kData}, {"*fusion*", kKernelChoice},
    {"*flash_attention*", "attention kernel: dtsim's default is flash"},
    {"*.fp8_*", "fp8 scaling details: dtsim prices fp8 GEMMs by --fp8-recipe"}, {"*native_amp*", kNoEffect},
    {"*hysteresis*", kNoEffect}, {"*loss_scale*", kNoEffect}, {"*dropout*", kNoEffect}, {"*init_method_std*", kNoEffect},
    {"*epsilon*", kNoEffect}, {"*seed*", kNoEffect}, {"*rotary_base*", kNoEffect}, {"*rotary_percent*", kNoEffect},
    {"*.lr", kNoEffect}, {"*.min_lr", kNoEffect}, {"*weight_decay*", kNoEffect}, {"*.betas", kNoEffect},
    {"*.sched", kNoEffect}, {"scheduler", kNoEffect}, {"*max_steps*", kNoEffect}, {"*max_epochs*", kNoEffect},
    {"*train_iters*", kNoEffect}, {"*clip_grad*", kNoEffect}, {"*gradient_clip*", kNoEffect},
    {"*._target_", "a Python class name"},
};

std::string reason(const std::string& path) { return ignore_reason(path, kReasons); }

// The interpolation a whole scalar is ("${model.x}" -> "model.x"), or "" when it is none.
std::string interpolation(const yaml::Node& n) {
  const std::string& v = n.value;
  if (n.kind != yaml::Node::Kind::scalar || v.size() < 4 || v.rfind("${", 0) != 0 || v.back() != '}') return "";
  std::string inside = v.substr(2, v.size() - 3);
  if (inside.find_first_of("${}:") != std::string::npos) return "";  // nested, or a resolver
  return inside;
}

std::optional<std::int64_t> yaml_integer(const yaml::Node& n) {
  if (n.kind != yaml::Node::Kind::scalar || !n.plain) return std::nullopt;
  std::string digits;  // YAML 1.1 allows 1_000
  for (char c : n.value)
    if (c != '_') digits += c;
  if (digits.size() > 1 && (digits[0] == '0' || ((digits[0] == '-' || digits[0] == '+') && digits[1] == '0')))
    return std::nullopt;  // octal in YAML 1.1: not taken on trust
  return parse_integer(digits);
}

}  // namespace

Paths model_paths(const std::string& key) { return {"model." + key, "model.config." + key}; }

Recipe::Recipe(std::shared_ptr<const yaml::Node> root, std::string file) : root_(std::move(root)), file_(std::move(file)) {}

const yaml::Node* Recipe::lookup(const std::string& path) const {
  const yaml::Node* n = root_.get();
  std::size_t from = 0;
  while (n != nullptr) {
    std::size_t dot = path.find('.', from);
    n = n->kind == yaml::Node::Kind::mapping ? n->find(path.substr(from, dot - from)) : nullptr;
    if (dot == std::string::npos) return n;
    from = dot + 1;
  }
  return nullptr;
}

const yaml::Node* Recipe::resolve(const yaml::Node* n, const std::string& path) const {
  std::string at = path;
  for (int hop = 0; hop < kMaxHops && n != nullptr; ++hop) {
    std::string target = interpolation(*n);
    if (target.empty()) return n;
    if (target[0] == '.') {  // relative: from the mapping holding `at`, one level up per extra dot
      std::string base = at.substr(0, at.rfind('.') == std::string::npos ? 0 : at.rfind('.'));
      std::size_t dots = target.find_first_not_of('.');
      if (dots == std::string::npos) return n;
      for (std::size_t up = 1; up < dots; ++up) base = base.substr(0, base.rfind('.') == std::string::npos ? 0 : base.rfind('.'));
      target = (base.empty() ? "" : base + ".") + target.substr(dots);
    }
    const yaml::Node* next = lookup(target);
    if (next == nullptr) return n;  // dangling: the text stays, and a typed read says so
    n = next;
    at = target;
  }
  return n;
}

std::optional<Recipe::Found> Recipe::find(const Paths& paths) {
  for (const std::string& p : paths) {
    for (std::size_t dot = p.find('.'); dot != std::string::npos; dot = p.find('.', dot + 1))
      sections_.insert(p.substr(0, dot));
    const yaml::Node* n = lookup(p);
    if (n == nullptr) continue;
    read_.insert(p);
    n = resolve(n, p);
    if (!n->is_null()) return Found{n, p};
  }
  return std::nullopt;
}

std::string Recipe::where(const Found& f) const { return file_ + ":" + std::to_string(f.node->line); }

void Recipe::fail(const Found& f, const std::string& message) const {
  std::string unresolved = f.node->value.rfind("${", 0) == 0 ? " (an interpolation dtsim does not resolve)" : "";
  throw SpecError(where(f), message + unresolved);
}

std::optional<std::int64_t> Recipe::integer(const Paths& paths, std::int64_t min, std::int64_t max) {
  std::optional<Found> f = find(paths);
  if (!f) return std::nullopt;
  std::optional<std::int64_t> v = yaml_integer(*f->node);
  if (!v) fail(*f, "expected an integer for " + f->path + ", got " + yaml::describe(*f->node));
  if (*v < min || *v > max) fail(*f, integer_range(min, max) + " for " + f->path + ", got " + std::to_string(*v));
  return v;
}

std::optional<double> Recipe::probability(const Paths& paths) {
  std::optional<Found> f = find(paths);
  if (!f) return std::nullopt;
  std::optional<double> v;
  if (f->node->kind == yaml::Node::Kind::scalar && f->node->plain) v = parse_probability(f->node->value);
  if (!v) fail(*f, "expected a probability in [0, 1) for " + f->path + ", got " + yaml::describe(*f->node));
  return v;
}

std::optional<Sized> Recipe::sized(const Paths& paths, std::int64_t min, std::int64_t max) {
  std::optional<std::int64_t> v = integer(paths, min, max);
  if (!v) return std::nullopt;
  std::optional<Found> f = find(paths);
  return Sized{*v, where(*f), f->path};
}

std::optional<bool> yaml_bool(const yaml::Node& n) {
  if (n.kind != yaml::Node::Kind::scalar || !n.plain) return std::nullopt;
  for (const char* t : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
    if (n.value == t) return true;
  for (const char* t : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
    if (n.value == t) return false;
  return std::nullopt;
}

std::optional<bool> Recipe::boolean(const Paths& paths) {
  std::optional<Found> f = find(paths);
  if (!f) return std::nullopt;
  std::optional<bool> b = yaml_bool(*f->node);
  if (!b) fail(*f, "expected true or false for " + f->path + ", got " + yaml::describe(*f->node));
  return b;
}

std::optional<std::string> Recipe::text(const Paths& paths) {
  std::optional<Found> f = find(paths);
  if (!f) return std::nullopt;
  if (f->node->kind != yaml::Node::Kind::scalar) fail(*f, "expected a value for " + f->path + ", got " + yaml::describe(*f->node));
  return f->node->value;
}

std::optional<std::string> Recipe::choice(const Paths& paths, std::initializer_list<const char*> choices) {
  std::optional<std::string> v = text(paths);
  if (!v) return std::nullopt;
  std::string list;
  for (const char* c : choices) {
    if (*v == c) return v;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  std::optional<Found> f = find(paths);
  fail(*f, "expected one of " + list + " for " + f->path + ", got " + quoted(*v));
}

bool Recipe::has(const std::string& key) const {
  return root_->kind == yaml::Node::Kind::mapping && root_->find(key) != nullptr;
}

void Recipe::walk(const yaml::Node& n, const std::string& prefix, Imported& out) const {
  for (const auto& [key, child] : n.entries) {
    std::string path = prefix.empty() ? key : prefix + "." + key;
    if (read_.count(path) != 0) continue;
    if (sections_.count(path) != 0 && child->kind == yaml::Node::Kind::mapping) walk(*child, path, out);
    else out.ignored.push_back(printable(path) + " (" + reason(path) + ")");
  }
}

void Recipe::ignore_rest(Imported& out) const {
  if (root_->kind == yaml::Node::Kind::mapping) walk(*root_, "", out);
}

}  // namespace dtsim::imports::nemo
