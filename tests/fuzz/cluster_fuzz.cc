// Cluster files (the "gpu" they name is loaded from the source tree's presets), and what
// `show cluster` derives for a few GPU counts.
#include "fuzz_common.h"
#include "spec/load.h"
#include "topology/links.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dtsim::fuzz::use_source_tree();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return dtsim::fuzz::guarded([&] {
    dtsim::spec::Cluster c = dtsim::spec::parse_cluster(dtsim::fuzz::text(data, size), "/tmp/fuzz.json");
    for (std::int64_t gpus : {1, 8, 1024, 100000}) {
      (void)c.nodes_for(gpus);
      (void)c.domain_ranks(gpus);
    }
  });
}
