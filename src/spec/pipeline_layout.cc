#include "spec/pipeline_layout.h"

#include <algorithm>
#include <cctype>

#include "core/errors.h"

namespace dtsim::spec {
namespace {

constexpr std::size_t kMaxExpanded = 1 << 20;  // characters after unrolling

// Reads the repeat count after a '*' at text[i]; advances i past its digits.
std::size_t repeat_count(const std::string& text, std::size_t& i, const std::string& where) {
  std::size_t start = i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == start || i - start > 6)
    throw SpecError(where, "expected a repeat count of 1-6 digits after '*' at character " + std::to_string(start) +
                               " of \"" + text + "\"");
  return static_cast<std::size_t>(std::stoul(text.substr(start, i - start)));
}

void append_repeated(std::string& out, const std::string& piece, std::size_t n, const std::string& text,
                     const std::string& where) {
  if (piece.size() * n > kMaxExpanded || out.size() + piece.size() * n > kMaxExpanded)
    throw SpecError(where, "expected a layout of at most " + std::to_string(kMaxExpanded) +
                               " layers once unrolled, got more from \"" + text + "\"");
  for (std::size_t k = 0; k < n; ++k) out += piece;
}

// Unrolls "(...)*n" groups (not nested, as Megatron's pattern reads them), then "x*n".
std::string unroll(const std::string& text, const std::string& where) {
  std::string groups;
  for (std::size_t i = 0; i < text.size();) {
    char c = text[i];
    if (c == ',') {  // purely cosmetic
      ++i;
    } else if (c == '(') {
      std::size_t close = text.find(')', i + 1);
      std::size_t nested = text.find('(', i + 1);
      if (close == std::string::npos || (nested != std::string::npos && nested < close))
        throw SpecError(where, "expected a ')' closing the '(' at character " + std::to_string(i) +
                                   " (groups do not nest) in \"" + text + "\"");
      if (close + 1 >= text.size() || text[close + 1] != '*')
        throw SpecError(where, "expected \"*n\" after the group closing at character " + std::to_string(close) +
                                   " of \"" + text + "\"");
      std::size_t j = close + 2;
      std::size_t n = repeat_count(text, j, where);
      std::string inner;
      for (char g : text.substr(i + 1, close - i - 1))
        if (g != ',') inner += g;
      append_repeated(groups, inner, n, text, where);
      i = j;
    } else {
      groups += c;
      ++i;
    }
  }
  std::string out;
  for (std::size_t i = 0; i < groups.size();) {
    if (i + 1 < groups.size() && groups[i + 1] == '*') {
      if (groups[i] == '|' || groups[i] == '*')
        throw SpecError(where, std::string("expected a layer character before '*', got '") + groups[i] + "' in \"" +
                                   text + "\"");
      std::size_t j = i + 2;
      append_repeated(out, std::string(1, groups[i]), repeat_count(groups, j, where), text, where);
      i = j;
    } else {
      out += groups[i++];
    }
  }
  return out;
}

}  // namespace

std::int64_t pipeline_layout_stages(const std::string& text, const std::string& where) {
  std::string flat = unroll(text, where);
  return static_cast<std::int64_t>(std::count(flat.begin(), flat.end(), '|')) + 1;
}

std::vector<std::int64_t> parse_pipeline_layout(const std::string& text, const Model& m, std::int64_t pp,
                                                std::int64_t vp, const std::string& where) {
  std::string flat = unroll(text, where);
  std::vector<std::string> stages{""};
  for (char c : flat) {
    if (c == '|') {
      stages.emplace_back();
    } else if (c == 'E' || c == 't' || c == 'm' || c == 'L') {
      stages.back() += c;
    } else {
      throw SpecError(where, std::string("expected layer characters E, t, m, L (and '|', '*', parentheses, commas), "
                                         "got '") + c + "' in \"" + text + "\"");
    }
  }
  auto n = static_cast<std::int64_t>(stages.size());
  if (n != pp * vp)
    throw SpecError(where, "expected pp x vp = " + std::to_string(pp * vp) + " stages separated by '|' (pp " +
                               std::to_string(pp) + ", vp " + std::to_string(vp) + "), got " + std::to_string(n) +
                               " in \"" + text + "\"");
  auto count = [&](char c) {
    std::int64_t k = 0;
    for (const std::string& s : stages) k += std::count(s.begin(), s.end(), c);
    return k;
  };
  if (flat.find_first_not_of('|') == std::string::npos || flat[flat.find_first_not_of('|')] != 'E' || count('E') != 1)
    throw SpecError(where, "expected the embedding 'E' once, as the first layer, in \"" + text + "\"");
  if (flat[flat.find_last_not_of('|')] != 'L' || count('L') != 1)
    throw SpecError(where, "expected the loss 'L' once, as the last layer, in \"" + text + "\"");
  if (count('t') != m.layers)
    throw SpecError(where, "expected " + std::to_string(m.layers) + " decoder layers 't' (the model's), got " +
                               std::to_string(count('t')) + " in \"" + text + "\"");
  if (count('m') != m.mtp_layers)
    throw SpecError(where, "expected " + std::to_string(m.mtp_layers) + " MTP modules 'm' (the model's), got " +
                               std::to_string(count('m')) + " in \"" + text + "\"");
  if (std::size_t first_m = flat.find('m'); first_m != std::string::npos) {
    if (flat.find('t', first_m) != std::string::npos)
      throw SpecError(where, "expected every decoder layer 't' before the MTP modules 'm', got \"" + text + "\"");
    // dtsim prices the MTP modules with the loss, in the last rank's last chunk (Megatron-Core also
    // lets them stand alone in another rank's last chunk).
    if (stages.back().find('m') == std::string::npos)
      throw SpecError(where, "expected the MTP modules 'm' in the last stage, beside the loss (dtsim does not price "
                             "a standalone MTP stage), got \"" + text + "\"");
  }
  std::vector<std::int64_t> layers;
  for (const std::string& s : stages) layers.push_back(std::count(s.begin(), s.end(), 't'));
  return layers;
}

std::string reference_layout_note(const Model& m, const Parallel& par) {
  if (!par.chunk_layers.empty() || !par.stage_layers.empty()) return "";
  const ReferenceLayout* ref = m.reference_layout(par.pp, par.vp);
  if (ref == nullptr) return "";
  return "pipeline layout " + ref->text + ": " + m.name + "'s reference for pp " + std::to_string(par.pp) + " x vp " +
         std::to_string(par.vp) + " (its model file's pipeline_layouts)";
}

}  // namespace dtsim::spec
