#include <charconv>
#include "imports/draft.h"

#include <limits>

#include "core/errors.h"
#include "core/text.h"
#include "spec/pipeline_layout.h"

namespace dtsim::imports {
namespace {

void add(std::vector<std::string>& out, const char* flag, const std::optional<std::int64_t>& v) {
  if (v) out.insert(out.end(), {flag, std::to_string(*v)});
}
void add(std::vector<std::string>& out, const char* flag, const std::optional<std::string>& v) {
  if (v) out.insert(out.end(), {flag, *v});
}
void add(std::vector<std::string>& out, const char* flag, const std::optional<bool>& v) {
  if (v) out.insert(out.end(), {flag, *v ? "on" : "off"});
}

}  // namespace

void set_pipeline_layout(JobDraft& j, const std::string& layout, const std::string& where, const std::string& vp_where,
                         std::vector<std::string>& notes) {
  std::int64_t stages = spec::pipeline_layout_stages(layout, where), pp = j.pp.value_or(1);
  if (stages % pp != 0)
    throw SpecError(where, "expected a multiple of the pipeline size (" + std::to_string(pp) + ") stages, got " +
                               std::to_string(stages) + " in \"" + layout + "\"");
  if (j.vp && *j.vp != stages / pp)
    throw SpecError(vp_where, "expected " + std::to_string(stages / pp) + " virtual stages per rank (the layout's " +
                                  std::to_string(stages) + " over pp " + std::to_string(pp) + "), got " +
                                  std::to_string(*j.vp));
  j.pipeline_layout = layout;
  j.vp = stages / pp;
  notes.push_back("pipeline layout \"" + layout + "\": " + std::to_string(stages) + " virtual stages, vp = " +
                  std::to_string(*j.vp));
}

std::vector<std::string> job_flags(const JobDraft& j) {
  std::vector<std::string> out;
  add(out, "--model", j.model);
  add(out, "--gpus", j.gpus);
  add(out, "--tp", j.tp);
  add(out, "--pp", j.pp);
  add(out, "--dp", j.dp);
  add(out, "--vp", j.vp);
  add(out, "--cp", j.cp);
  add(out, "--ep", j.ep);
  add(out, "--etp", j.etp);
  add(out, "--pipeline-layout", j.pipeline_layout);
  if (j.sp) out.push_back("--sp");
  add(out, "--mbs", j.mbs);
  add(out, "--gbs", j.gbs);
  add(out, "--seq", j.seq);
  add(out, "--precision", j.precision);
  add(out, "--recompute", j.recompute);
  add(out, "--recompute-layers", j.recompute_layers);
  add(out, "--recompute-modules", j.recompute_modules);
  if (j.zero) out.insert(out.end(), {"--zero", std::to_string(*j.zero)});
  add(out, "--grad-dtype", j.grad_dtype);
  add(out, "--optimizer", j.optimizer);
  add(out, "--attention", j.attention);
  add(out, "--tp-comm-overlap", j.tp_comm_overlap);
  add(out, "--tp-overlap-rs", j.tp_overlap_rs);
  add(out, "--overlap-grad-reduce", j.overlap_grad_reduce);
  add(out, "--overlap-param-gather", j.overlap_param_gather);
  add(out, "--fp8-recipe", j.fp8_recipe);
  add(out, "--fp8-param-gather", j.fp8_param_gather);
  add(out, "--framework", j.framework);
  add(out, "--peft", j.peft);
  add(out, "--lora-rank", j.lora_rank);
  add(out, "--lora-targets", j.lora_targets);
  return out;
}

std::optional<std::int64_t> parse_integer(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s.size() > 19) return std::nullopt;  // 19 digits fit in a uint64
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
  auto x = static_cast<std::int64_t>(v);
  return negative ? -x : x;
}

std::optional<double> parse_probability(std::string_view s) {
  double v = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end || !(v >= 0 && v < 1)) return std::nullopt;
  return v;
}

std::string quoted(std::string_view s) {
  constexpr std::size_t kShown = 80;
  std::string shown = printable(s.substr(0, kShown));
  return "\"" + shown + (s.size() > kShown ? "...\"" : "\"");
}

std::string integer_range(std::int64_t min, std::int64_t max) {
  if (max == std::numeric_limits<std::int64_t>::max()) return "expected an integer >= " + std::to_string(min);
  return "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

bool glob_matches(const std::string& name, std::string pattern) {
  bool any_prefix = !pattern.empty() && pattern.front() == '*', any_suffix = pattern.size() > 1 && pattern.back() == '*';
  if (any_prefix) pattern.erase(0, 1);
  if (any_suffix) pattern.pop_back();
  if (any_prefix && any_suffix) return name.find(pattern) != std::string::npos;
  if (any_prefix)
    return name.size() >= pattern.size() && name.compare(name.size() - pattern.size(), pattern.size(), pattern) == 0;
  if (any_suffix) return name.rfind(pattern, 0) == 0;
  return name == pattern;
}

std::string ignore_reason(const std::string& name, std::span<const IgnoreReason> reasons) {
  for (const IgnoreReason& r : reasons)
    if (glob_matches(name, r.pattern)) return r.why;
  return "not read by dtsim";
}

}  // namespace dtsim::imports
