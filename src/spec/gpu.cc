#include "spec/gpu.h"

#include "core/errors.h"
#include "spec/json_reader.h"
#include "spec/load.h"

namespace dtsim::spec {

FlopsPerSecond Gpu::peak(Dtype d) const {
  switch (d) {
    case Dtype::fp32: return peak_fp32;
    case Dtype::tf32: return peak_tf32;
    case Dtype::fp16: return peak_fp16;
    case Dtype::bf16: return peak_bf16;
    case Dtype::fp8: return peak_fp8;
    case Dtype::fp4: return peak_fp4;
  }
  return FlopsPerSecond(0);
}

const char* to_string(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::tf32: return "tf32";
    case Dtype::fp16: return "fp16";
    case Dtype::bf16: return "bf16";
    case Dtype::fp8: return "fp8";
    case Dtype::fp4: return "fp4";
  }
  return "?";
}

double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::fp32:
    case Dtype::tf32: return 4;
    case Dtype::fp16:
    case Dtype::bf16: return 2;
    case Dtype::fp8: return 1;
    case Dtype::fp4: return 0.5;
  }
  return 0;
}

Gpu parse_gpu(const std::string& text, const std::string& file) {
  nlohmann::json j = parse_json_text(text, file);
  ObjectReader r(j, file, "");
  Gpu g;
  g.name = r.string("name");
  ObjectReader p = r.object("peak_tflops");
  g.peak_fp32 = tflops(p.positive("fp32"));
  g.peak_tf32 = tflops(p.positive("tf32"));
  g.peak_fp16 = tflops(p.positive("fp16"));
  g.peak_bf16 = tflops(p.positive("bf16"));
  g.peak_fp8 = tflops(p.optional_positive("fp8").value_or(0));  // null: no fp8 tensor cores
  g.peak_fp4 = tflops(p.optional_positive("fp4").value_or(0));  // null: no fp4 tensor cores
  p.finish();
  g.memory = gib(r.positive("memory_GiB"));
  g.hbm_bandwidth = gbytes_per_s(r.positive("hbm_bandwidth_GBps"));
  g.sm_count = r.integer("sm_count", 1, 100000);
  g.power_w = r.optional_positive("power_W").value_or(0);
  g.boost_clock_ghz = r.optional_positive("boost_clock_GHz").value_or(0);
  r.skip("sources");
  r.finish();
  return g;
}

Gpu load_gpu(const std::string& name_or_path, const std::string& flag) {
  return load_spec("topologies/gpus", name_or_path, flag, parse_gpu);
}

}  // namespace dtsim::spec
