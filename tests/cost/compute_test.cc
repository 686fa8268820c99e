#include <catch2/catch.hpp>

#include "cost/compute.h"
#include "cost/layer_shape.h"
#include "spec/load.h"

using namespace dtsim;
using Catch::Matchers::WithinRel;

namespace {

cost::LayerShape gpt3_tp4() {
  spec::Model m = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/gpt3-175b.json");
  return cost::layer_shape(m, spec::Parallel{.tp = 4, .sequence_parallel = true}, 1, 2048);
}

const cost::Op& named(const std::vector<cost::Op>& ops, const std::string& name) {
  for (const cost::Op& op : ops)
    if (op.name == name) return op;
  FAIL("no op named " << name);
  return ops.front();
}

double total_flops(const std::vector<cost::Op>& ops) {
  double f = 0;
  for (const cost::Op& op : ops) f += op.flops.value();
  return f;
}

}  // namespace

TEST_CASE("cost::tp_overlap_shape: Transformer Engine's userbuffer defaults", "[cost]") {
  // No TP or no overlap: GEMMs keep their shape.
  for (auto o : {cost::tp_overlap_shape(1, true, 132), cost::tp_overlap_shape(8, false, 132)}) {
    CHECK(o.ring_splits == 1);
    CHECK(o.pipeline_splits == 1);
    CHECK(o.pipeline_sm_share == 1);
  }
  // Ring exchange: tp chunks; pipeline: 4 chunks on the SMs left after 16 are reserved.
  cost::TpOverlapShape o = cost::tp_overlap_shape(4, true, 132);
  CHECK(o.ring_splits == 4);
  CHECK(o.pipeline_splits == 4);
  CHECK_THAT(o.pipeline_sm_share, WithinRel(116.0 / 132.0, 1e-12));
}

TEST_CASE("cost::layer_forward/backward: TP overlap chunks GEMM rows, keeps FLOPs, costs time", "[cost]") {
  cost::LayerShape sh = gpt3_tp4();
  cost::TpOverlapShape o = cost::tp_overlap_shape(4, true, 132);
  auto attn = spec::AttentionKernel::flash;
  auto plain_f = cost::layer_forward(sh, attn, spec::Dtype::bf16);
  auto plain_b = cost::layer_backward(sh, attn, spec::Dtype::bf16);
  auto over_f = cost::layer_forward(sh, attn, spec::Dtype::bf16, o);
  auto over_b = cost::layer_backward(sh, attn, spec::Dtype::bf16, o);
  CHECK_THAT(total_flops(over_f), WithinRel(total_flops(plain_f), 1e-12));
  CHECK_THAT(total_flops(over_b), WithinRel(total_flops(plain_b), 1e-12));

  // Ring-exchange GEMMs: 2048 tokens as 4 chunks of 512 rows.
  const cost::Op& qkv = named(over_f, "attn.qkv");
  CHECK(qkv.m == 512);
  CHECK(qkv.batch == 4);
  CHECK(named(over_b, "mlp.fc2.dgrad").m == 512);
  // Pipeline GEMMs: 4 chunks on 116 of 132 SMs.
  const cost::Op& fc2 = named(over_f, "mlp.fc2");
  CHECK(fc2.m == 512);
  CHECK_THAT(fc2.sm_share, WithinRel(116.0 / 132.0, 1e-12));
  // Bulk overlaps and weight gradients keep their GEMMs whole.
  CHECK(named(over_b, "mlp.fc1.dgrad").m == named(plain_b, "mlp.fc1.dgrad").m);
  CHECK(named(over_b, "mlp.fc1.wgrad").k == 2048);

  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  spec::Gpu gpu = spec::load_gpu("h100-sxm5-80gb");
  spec::Calibration cal = spec::load_calibration("dgx-h100");
  cost::ComputeContext ctx{&gpu, &cal.compute, spec::Dtype::bf16};
  // Smaller chunks run lower on the efficiency curve; a reserved-SM GEMM takes 132/116 as long
  // as the same chunks on all SMs.
  CHECK(cost::ops_time(over_f, ctx).value() > cost::ops_time(plain_f, ctx).value());
  cost::Op all_sms = fc2;
  all_sms.sm_share = 1;
  double overhead = cal.compute.kernel_overhead.value() * fc2.kernels;
  CHECK_THAT(cost::op_time(fc2, ctx).value() - overhead,
             WithinRel((cost::op_time(all_sms, ctx).value() - overhead) * 132.0 / 116.0, 1e-9));
}
