#include "nccl_check.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dtsim::bench {
namespace {

std::uint32_t float_bits(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// IEEE half from an exactly representable float: same sign, exponent rebiased 127 -> 15, the top
// 10 of the 23 mantissa bits (the other 13 are zero for an exact value).
std::uint32_t half_from_float_bits(std::uint32_t f) {
  if ((f & 0x7fffffffu) == 0) return f >> 16;
  int exp = static_cast<int>((f >> 23) & 0xffu) - 127 + 15;
  if (exp < 1 || exp > 30 || (f & 0x1fffu) != 0) throw std::logic_error("value_bits: not exact in half");
  return ((f >> 16) & 0x8000u) | (static_cast<std::uint32_t>(exp) << 10) | ((f >> 13) & 0x3ffu);
}

// Where a rank's input and output start: the send and receive buffers out of place, the receive
// buffer at nccl-tests' in-place offsets (x rank) in place.
struct Layout {
  bool input_in_recv = false;
  std::int64_t input_offset = 0, output_offset = 0;
};

Layout layout_of(const NcclCounts& k, bool in_place, int rank) {
  if (!in_place) return {};
  return {true, k.send_inplace_offset * rank, k.recv_inplace_offset * rank};
}

void add(std::vector<NcclSegment>& v, bool recv, std::int64_t offset, std::int64_t count, std::int64_t value) {
  if (count > 0) v.push_back({recv, offset, count, value});
}

// One input value over the whole input, one expected value over the whole output.
void plan_uniform(NcclCheckPlan& p, const NcclCounts& k, const Layout& l, std::int64_t in, std::int64_t out) {
  add(p.fills, l.input_in_recv, l.input_offset, k.send_count, in);
  add(p.expect, true, l.output_offset, k.recv_count, out);
}

void plan_all_gather(NcclCheckPlan& p, const NcclCounts& k, const Layout& l, int rank, int n, NcclDtype t) {
  add(p.fills, l.input_in_recv, l.input_offset, k.count, tag_value(rank, t));
  for (int j = 0; j < n; ++j) add(p.expect, true, j * k.count, k.count, tag_value(j, t));
}

// Rank r sends block j (value: pair r -> j) to rank j, and receives block i from rank i.
void plan_all_to_all(NcclCheckPlan& p, const NcclCounts& k, int rank, int n, NcclDtype t) {
  for (int j = 0; j < n; ++j) add(p.fills, false, j * k.count, k.count, tag_value(std::int64_t{rank} * n + j, t));
  for (int i = 0; i < n; ++i) add(p.expect, true, i * k.count, k.count, tag_value(std::int64_t{i} * n + rank, t));
}

}  // namespace

std::int64_t exact_integer_limit(NcclDtype t) {
  switch (t) {
    case NcclDtype::float32: return std::int64_t{1} << 24;  // 24 significand bits
    case NcclDtype::float16: return std::int64_t{1} << 11;  // 11
    case NcclDtype::bfloat16: return std::int64_t{1} << 8;  // 8
  }
  throw std::logic_error("unknown NcclDtype");
}

std::uint32_t value_bits(NcclDtype t, std::int64_t value) {
  if (value < 0 || value > exact_integer_limit(t))
    throw std::logic_error("value_bits: " + std::to_string(value) + " is not exact in " + to_string(t));
  std::uint32_t f = float_bits(static_cast<float>(value));
  switch (t) {
    case NcclDtype::float32: return f;
    case NcclDtype::bfloat16: return f >> 16;  // bfloat16 is the top half of a float
    case NcclDtype::float16: return half_from_float_bits(f);
  }
  throw std::logic_error("unknown NcclDtype");
}

std::int64_t sum_input(int rank, int nranks, NcclDtype t) {
  std::int64_t m = std::min<std::int64_t>(exact_integer_limit(t) / nranks, nranks);
  if (m < 1) return rank == 0 ? 1 : 0;
  return 1 + rank % m;
}

std::int64_t sum_total(int nranks, NcclDtype t) {
  std::int64_t s = 0;
  for (int r = 0; r < nranks; ++r) s += sum_input(r, nranks, t);
  return s;
}

std::int64_t tag_value(std::int64_t index, NcclDtype t) { return 1 + index % exact_integer_limit(t); }

NcclCheckPlan check_plan(NcclCollective c, const NcclCounts& k, bool in_place, int rank, int nranks, NcclDtype t) {
  NcclCheckPlan p;
  if (in_place && (c == NcclCollective::all_to_all || c == NcclCollective::send_recv)) {
    p.checked = false;  // send and receive alias: nccl-tests does not check these either
    return p;
  }
  // Zero what the output may land on, so a missing write shows (every expected value is > 0).
  add(p.fills, true, 0, std::max(k.send_count, k.recv_count), 0);
  Layout l = layout_of(k, in_place, rank);
  switch (c) {
    case NcclCollective::all_reduce:
    case NcclCollective::reduce_scatter:
      plan_uniform(p, k, l, sum_input(rank, nranks, t), sum_total(nranks, t));
      break;
    case NcclCollective::all_gather: plan_all_gather(p, k, l, rank, nranks, t); break;
    case NcclCollective::all_to_all: plan_all_to_all(p, k, rank, nranks, t); break;
    case NcclCollective::broadcast:  // root 0 sends its tag; the others' inputs are not read
      if (rank == root_of(c)) add(p.fills, l.input_in_recv, l.input_offset, k.send_count, tag_value(rank, t));
      add(p.expect, true, 0, k.recv_count, tag_value(root_of(c), t));
      break;
    case NcclCollective::send_recv:  // ring: from rank - 1
      plan_uniform(p, k, l, tag_value(rank, t), tag_value((rank - 1 + nranks) % nranks, t));
      break;
  }
  return p;
}

std::int64_t count_mismatches(const unsigned char* data, std::int64_t count, std::size_t elem_bytes,
                              std::uint32_t bits) {
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    std::uint32_t v = 0;
    if (elem_bytes == 4) std::memcpy(&v, data + i * 4, 4);
    else {
      std::uint16_t h = 0;
      std::memcpy(&h, data + i * 2, 2);
      v = h;
    }
    wrong += v != bits;
  }
  return wrong;
}

}  // namespace dtsim::bench
