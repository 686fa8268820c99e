#include "calibrate/nccl_tests_vocab.h"

#include <array>

#include "calibrate/nccl_tests_text.h"

namespace dtsim::calibrate::detail {
namespace {

using spec::Collective;

struct DataType {
  std::string_view name;
  std::int64_t bytes;
};
// nccl-tests' test_typenames (src/common.cu), NCCL 1's "char"/"int" and both fp8 spellings.
// clang-format off
constexpr std::array<DataType, 16> kTypes = {{
    {"int8", 1}, {"uint8", 1}, {"int32", 4}, {"uint32", 4}, {"int64", 8}, {"uint64", 8}, {"half", 2}, {"float", 4},
    {"double", 8}, {"bfloat16", 2}, {"f8e4m3", 1}, {"f8e5m2", 1}, {"fp8_e4m3", 1}, {"fp8_e5m2", 1}, {"char", 1},
    {"int", 4}}};
// clang-format on

constexpr std::array<Binary, 12> kBinaries = {{{"all_reduce", Collective::all_reduce},
                                               {"all_gather", Collective::all_gather},
                                               {"reduce_scatter", Collective::reduce_scatter},
                                               {"alltoall", Collective::all_to_all},
                                               {"broadcast", Collective::broadcast},
                                               {"sendrecv", Collective::send_recv},
                                               {"reduce", std::nullopt},
                                               {"gather", std::nullopt},
                                               {"scatter", std::nullopt},
                                               {"hypercube", std::nullopt},
                                               {"alltoallv", std::nullopt},
                                               {"bisection", std::nullopt}}};

}  // namespace

std::optional<std::int64_t> type_bytes(std::string_view name) {
  for (const DataType& t : kTypes)
    if (t.name == name) return t.bytes;
  return std::nullopt;
}

const Binary* binary(std::string_view stem) {
  for (const Binary& b : kBinaries)
    if (b.stem == stem) return &b;
  return nullptr;
}

const Binary* binary_of(std::string_view word) {
  std::string_view base = basename(word);
  return base.ends_with("_perf") ? binary(base.substr(0, base.size() - 5)) : nullptr;
}

// Which collectives print what (nccl-tests src/*.cu): all_gather, reduce_scatter and alltoall print
// the per-rank count, so size = nranks x count x type size; all_gather, alltoall and broadcast print
// redop "none"; broadcast prints its root (>= 0), the others -1.
bool per_rank_count(Collective c) {
  return c == Collective::all_gather || c == Collective::reduce_scatter || c == Collective::all_to_all;
}
bool prints_none(Collective c) {
  return c == Collective::all_gather || c == Collective::all_to_all || c == Collective::broadcast;
}
std::string name(Collective c) { return spec::to_string(c); }

}  // namespace dtsim::calibrate::detail
