// A program using dtsim as a library (find_package(dtsim) / dtsim::dtsim): the Megatron-LM
// README's GPT-3 175B job simulated, its memory checked, and a plan for the same GPUs.
#include <cstdio>

#include <dtsim/dtsim.h>

int main() {
  dtsim::Job job{.model = "gpt3-175b", .cluster = "dgx-a100", .gpus = 1024, .tp = 8, .pp = 16, .gbs = 1536, .seq = 2048};
  job.precision = "fp16";
  try {
    dtsim::StepResult step = dtsim::simulate(job);
    std::printf("dtsim %s\nstep_time_s %.12f\nmfu %.4f\npeak_gib %.2f fits %s\n", dtsim::version().c_str(),
                step.step_time_s, step.mfu, step.memory.peak / (1u << 30), step.memory.fits ? "yes" : "no");
    dtsim::PlanResult plan = dtsim::plan(job, {.top = 3});
    const dtsim::PlanConfig& best = plan.configs.at(0);
    std::printf("plan evaluated %lld; best tp %lld pp %lld dp %lld vp %lld: %.3f s\n",
                static_cast<long long>(plan.evaluated), static_cast<long long>(best.tp),
                static_cast<long long>(best.pp), static_cast<long long>(best.dp), static_cast<long long>(best.vp),
                best.step_time_s);
    job.gpus = 112;  // TP 7 x PP 16 with DP 1
    job.tp = 7;
    (void)dtsim::simulate(job);
  } catch (const dtsim::Error& e) {
    std::printf("error: %s\n", e.what());  // TP 7 does not divide GPT-3's 96 heads
    return 0;
  }
  return 1;
}
