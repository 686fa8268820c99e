// Names of spec enums, as they appear in JSON and on the command line.
#include "spec/job.h"
#include "spec/model.h"

namespace dtsim::spec {

const char* to_string(Activation a) {
  switch (a) {
    case Activation::gelu: return "gelu";
    case Activation::relu: return "relu";
    case Activation::squared_relu: return "squared_relu";
    case Activation::swiglu: return "swiglu";
    case Activation::gated_gelu: return "gated_gelu";
  }
  return "?";
}

const char* to_string(PositionEmbedding p) {
  switch (p) {
    case PositionEmbedding::learned: return "learned";
    case PositionEmbedding::rotary: return "rotary";
    case PositionEmbedding::alibi: return "alibi";
    case PositionEmbedding::none: return "none";
  }
  return "?";
}

const char* to_string(Norm n) { return n == Norm::layernorm ? "layernorm" : "rmsnorm"; }

const char* to_string(LinearBias b) {
  switch (b) {
    case LinearBias::none: return "none";
    case LinearBias::qkv: return "qkv";
    case LinearBias::all: return "all";
  }
  return "?";
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
    case Recompute::automatic: return "auto";
  }
  return "?";
}

const char* to_string(Optimizer o) { return o == Optimizer::adam ? "adam" : "sgd"; }

}  // namespace dtsim::spec
