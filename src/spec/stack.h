#pragma once
// A training software stack of one time (Megatron-LM 2021, NeMo 24.11, DeepSpeed 2021, ...):
// which kernels, overlaps and fusions it runs and what its published recipes set for fields a
// run does not state. calibration/stacks/NAME.json holds a stack's versions, each with sources;
// `--framework NAME[@VERSION]` picks one, and `dtsim validate` picks each case's from its
// "framework" field. Hardware speed lives in calibration profiles (spec/calibration.h).
#include <optional>
#include <string>
#include <vector>

#include "spec/calibration.h"
#include "spec/gpu.h"
#include "spec/job.h"

namespace dtsim::spec {

/// Attention kernels a stack uses: fused flash attention (what the calibration profile's flash
/// curve measures: cuDNN's fused attention on Hopper and Blackwell, as Transformer Engine runs it by
/// default), Megatron's unfused batched GEMMs with a fused scale-mask-softmax kernel, or
/// FlashAttention-2 (Dao's flash-attn 2.x), which Transformer Engine runs instead of cuDNN when a
/// recipe turns its fused attention off (NVTE_FUSED_ATTN=0) and FlashAttention-3 is not installed;
/// the profile prices it against its flash curve (ComputeCalibration::flash2_fwd_ratio).
/// flash_triton: FlashAttention in Triton (HazyResearch flash_attn_triton.py, the kernel of llm-foundry's
/// `attn_impl: triton` before it supported FlashAttention-2), priced from FlashAttention-2's: "around
/// 1.3-1.5x faster than FlashAttention in Triton in the forward pass and around 2x faster in the
/// backward pass" (Dao, FlashAttention-2, arXiv:2307.08691 sec. 4.1, A100 80GB): 1/1.4 and 1/2.
enum class AttentionKernel { flash, unfused, flash2, flash_triton };

/// The type a stack accumulates and reduces weight gradients in ("main grads").
enum class MainGrads {
  fp32,          ///< always fp32 (DeepSpeed's BF16_Optimizer; NeMo recipes with grad_reduce_in_fp32)
  param,         ///< the training type (Megatron-LM --fp16 without --accumulate-allreduce-grads-in-fp32; NeMo bf16)
  fp32_if_bf16,  ///< fp32 for bf16 runs, else the training type (Megatron-LM since 2022: "bfloat16 requires
                 ///< gradient accumulation and all-reduce to be done in fp32")
};

/// Whether the weight-gradient GEMM accumulates into the main grads (Megatron's gradient
/// accumulation fusion: apex fused_weight_gradient_mlp_cuda, TE fuse_wgrad_accumulation).
/// Without it every micro-batch's gradients are added to the main grads by a separate kernel.
enum class GradAccumFusion {
  off,        ///< not available (Megatron-LM 2021, Megatron-DeepSpeed)
  on,
  fp32_only,  ///< only with fp32 main grads (Megatron-LM 2022 turns it off otherwise, arguments.py)
  /// Not available, and the 16-bit gradient is cast to the main-grad type by a kernel of its own
  /// before the add (DeepSpeed's BF16_Optimizer: hp_grad.add_(lp.grad.to(hp_grad.dtype)) after
  /// every micro-batch's backward, runtime/bf16_optimizer.py update_hp_grads).
  cast,
};

/// How ZeRO-3 / FSDP fetches parameters before a layer runs.
enum class Zero3Gather {
  layer,   ///< one all-gather of the layer's flat parameters (FSDP units, Megatron-FSDP)
  module,  ///< one all-gather per weight matrix, i.e. per Linear submodule (DeepSpeed ZeRO-3;
           ///< biases and norms fall under stage3_param_persistence_threshold and stay resident)
};

/// What a stack does to each layer's unsharded 16-bit weight gradient on its way to the ZeRO-3 /
/// FSDP reduce-scatter (cost::zero3_grad_ops prices each):
enum class Zero3GradPath {
  direct,      ///< nothing: the gradient is reduced where autograd wrote it
  ds_bucket,   ///< DeepSpeed stage 3: copied into the flat ipg bucket, divided in place by dp
  flat_param,  ///< PyTorch FSDP1: per-parameter gradients concatenated into the flat parameter's
               ///< (autograd's SplitWithSizesBackward), cast to the reduce dtype, pre-divided in place
  chunk_cat,   ///< PyTorch FSDP2: copied, cast to the reduce dtype, into the reduce-scatter input
               ///< (torch._chunk_cat); the average is taken inside NCCL (ReduceOp.AVG)
};

/// How a stack overlaps sequence-parallel TP collectives with GEMMs when tp_comm_overlap is on:
/// `userbuffers` -- Transformer Engine's userbuffers, every collective of both passes beside a GEMM
/// (the all-gathers again for the weight gradients); `micro_pipeline` -- PyTorch's async TP
/// (torch/_inductor/fx_passes/micro_pipeline_tp.py: symmetric-memory fused_all_gather_matmul and
/// fused_matmul_reduce_scatter), which fuses an all-gather into the matmuls that consume it and a
/// reduce-scatter into the matmul that produces it -- every TP collective of the forward, the
/// backward's all-gathers of the output gradients, but not the backward's reduce-scatters, whose
/// input is the sum of several matmuls' data gradients (separate q, k, v and w1, w3 projections:
/// pytorch/pytorch PR #149946).
enum class TpOverlapImpl { userbuffers, micro_pipeline };

/// How Transformer Engine scales 8-bit GEMM operands (docs/research/low-precision-training.md):
/// per-tensor scales from an amax history (delayed), per-tensor scales from the tensor itself
/// (current: an amax pass before each cast), or one E8M0 scale per 32 elements (MXFP8, Blackwell).
enum class Fp8Recipe { delayed, current, mxfp8 };

/// How Megatron-Core's MoE layer moves tokens to their experts (moe_token_dispatcher_type):
/// all-to-all of the routed copies; all-gather of every rank's tokens and a reduce-scatter back;
/// or the "flex" dispatcher (DeepEP, HybridEP), which sends a token once per destination node.
enum class MoeDispatcher { alltoall, allgather, flex };

/// How the LM head's vocab-parallel cross-entropy runs (Megatron-Core GPTModel
/// compute_language_model_loss): `unfused` -- tensor_parallel.vocab_parallel_cross_entropy, eager
/// PyTorch ops over an fp32 copy of the logits (cross_entropy_loss_fusion off, Megatron-Core's
/// default, and Megatron-LM before it); `native` -- fusions/fused_cross_entropy.py's jit_fuser (torch.compile)
/// functions (cross_entropy_loss_fusion on); `te` -- Transformer Engine's Triton online-softmax
/// kernels (cross_entropy_fusion_impl "te"); `torch` -- torch.nn.functional.cross_entropy over the
/// whole vocabulary in fp32 (torchtitan, Hugging Face); `xentropy` -- apex's softmax cross-entropy
/// CUDA kernel on the 16-bit logits (flash-attn 1.x's CrossEntropyLoss, which llm-foundry's MPT
/// trains with); `compiled` -- `torch` compiled with the rest of the step (torchtitan's
/// build_loss_fn under --training.compile): Inductor fuses the cast into the row reductions and
/// recomputes the softmax from the 16-bit logits in the backward. cost::cross_entropy_op prices each.
enum class CrossEntropy { unfused, native, te, torch, xentropy, compiled };

/// How a stack's optimizer step runs over the parameters it owns, pass by pass (cost::optimizer_op
/// prices each): `megatron` -- Megatron's MixedPrecisionOptimizer.step (megatron/core/optimizer/
/// optimizer.py, and Megatron-LM before it): the main grads copied to fp32 when they are 16-bit,
/// unscaled and checked for inf/NaN under fp16's loss scaler, the fp32 gradient norm, the fused
/// Adam step on fp32 master weights, then the master weights copied back to the 16-bit model
/// parameters -- each a separate multi-tensor pass; `apex_distributed` -- apex's
/// DistributedFusedAdam (NeMo 1.x): the norm over the 16-bit gradient buckets, then one fused kernel
/// that unscales, steps and writes the 16-bit parameter (and its remainder); `torch` --
/// torch.optim.AdamW over fp32 parameters (FSDP's sharded fp32 copies) after
/// torch.nn.utils.clip_grad_norm_, which always rescales the gradients; `loop` -- the same
/// clipping, then a Python loop over the parameters issuing one eager PyTorch op per term of the
/// update (MosaicML Composer's DecoupledAdamW.adamw).
enum class OptimizerImpl { megatron, apex_distributed, torch, loop };

/// Which parts of a step a stack captures in CUDA graphs (Megatron-Core cuda_graph_impl with
/// cuda_graph_scope; Transformer Engine make_graphed_callables): captured work costs no host time.
struct CudaGraphs {
  bool full_iteration = false;  ///< the whole forward/backward step ("full_iteration")
  bool attn = false;            ///< each layer's attention block
  bool moe_router = false;      ///< the MoE router
  bool moe_preprocess = false;  ///< the MoE dispatcher's preprocessing (token counts, splits)
  bool mamba = false;           ///< each hybrid model's Mamba layer (Megatron-Core scope "mamba")
  bool operator==(const CudaGraphs&) const = default;
};

/// What a stack runs. Flags of `dtsim simulate` override each switch.
/// How Transformer Engine's userbuffers overlap the reduce-scatter after the projection and FC2
/// forward GEMMs (the `proj_fprop` and `fc2_fprop` entries of a ub config, NeMo
/// `ub_tp_comm_overlap_cfg` / `tp_comm_overlap_cfg`): method "pipeline" keeps `num_sm` SMs for the
/// communication kernel while the GEMM runs in 4 chunks on the rest (TE initialize_ub's default,
/// 16 SMs); "ring_exchange" runs tp chunks beside copy-engine transfers on every SM.
struct TpOverlapRs {
  static constexpr int kRing = 0;  ///< ring exchange
  int proj_sms = 16;
  int fc2_sms = 16;
  bool operator==(const TpOverlapRs&) const = default;
};

struct Software {
  AttentionKernel attention = AttentionKernel::flash;
  bool tp_comm_overlap = false;       ///< TP all-gather/reduce-scatter pipelined with GEMMs
  TpOverlapImpl tp_overlap_impl = TpOverlapImpl::userbuffers;  ///< which implementation pipelines them
  /// Without tp_comm_overlap: the column-parallel layers' backward input-gradient all-reduce
  /// (reduce-scatter with SP) runs asynchronously while their weight-gradient GEMMs do (Megatron-LM
  /// LinearWithGradAccumulationAndAsyncCommunication since 2022; Transformer Engine's Linear).
  bool tp_async_backward = true;
  bool overlap_grad_reduce = true;    ///< DP gradient buckets reduced during the last backward
  bool overlap_param_gather = true;   ///< ZeRO-1/2 parameter all-gather overlapped with the next forward
  /// Interleaved pipeline p2p left in flight until the next pass of the same direction
  /// (Megatron-Core overlap_p2p_comm), else each transfer completes before the next pass.
  bool overlap_p2p_comm = false;
  /// Pipeline sends and recvs issued as separate blocking calls (DeepSpeed's PipelineEngine,
  /// runtime/pipe/p2p.py: dist.send / dist.recv, async_op unsupported): both directions between two
  /// neighbouring stages share that pair's NCCL stream, so a step's two transfers (a forward step's
  /// SendGrad then RecvActivation, a backward step's RecvGrad then SendActivation) run one after the
  /// other, where Megatron batches them into one call that runs both at once.
  bool pp_p2p_serial = false;
  /// Backward pipeline sends split over the TP ranks (each sends 1/tp of the activation gradient,
  /// the receiver all-gathers), as the forward's are; false: every TP rank sends it whole
  /// (DeepSpeed's 2020-21 PipelineEngine: is_grad_partitioned = False).
  bool pp_grad_partitioned = true;
  /// Without sequence parallelism, pipeline sends split over the TP ranks (each sends 1/tp of the
  /// b x s x h tensor) and the receiver all-gathers them over its TP group before the pass
  /// (Megatron-LM's --scatter-gather-tensors-in-pipeline, 2021-22, SC'21 sec. 4.1; DeepSpeed's
  /// partitioned pipeline tensors); false: every TP rank sends the whole tensor (Megatron-Core's
  /// p2p, which splits only the sequence-parallel shape). With SP the tensor is already split.
  bool pp_scatter_gather = false;
  MainGrads main_grads = MainGrads::fp32_if_bf16;
  GradAccumFusion grad_accumulation_fusion = GradAccumFusion::on;
  Zero3Gather zero3_gather = Zero3Gather::layer;
  /// ZeRO-3 gathers are prefetched on a side stream and overlap compute; false: each blocks
  /// (DeepSpeed before its PR #1453, which synchronized the device per fetch).
  bool zero3_prefetch = true;
  /// SMs the stack's prefetched ZeRO-3 collectives hold while compute runs beside them (one per
  /// NCCL channel: 24 for a ring all-gather or reduce-scatter on 8-GPU NVSwitch nodes); 0: the
  /// profile's overlap_slowdown prices the overlap (schedule::zero3_overlap_slowdown).
  double zero3_comm_sms = 0;
  /// Host time each ZeRO-3 all-gather call costs before the collective starts, exposed when the
  /// gathers block (DeepSpeed 2021: ~130 us pre-launch + ~250 us launch per all_gather on p4d).
  double zero3_gather_cpu_us = 0;
  /// ZeRO-3 collectives called with a list of one tensor per rank (torch.distributed.all_gather /
  /// reduce_scatter, DeepSpeed before PR #1453): PyTorch's ProcessGroupNCCL gathers into a flat
  /// buffer and copies each rank's slice out (reduce-scatter: in) one copy per rank.
  bool zero3_list_collectives = false;
  /// Host time per rank per list-form ZeRO-3 collective call, before the collective starts: the
  /// framework's Python loop that builds the list of per-rank views (DeepSpeed 2021: narrow,
  /// append, get_rank) and the torch.distributed wrapper's list handling. Needs
  /// zero3_list_collectives.
  double zero3_list_build_us = 0;
  /// Host time per rank per list-form call for PyTorch's staging copies (ProcessGroupNCCL: a view
  /// of the flat buffer, recordStream, copy_ and its cudaMemcpyAsync). A gather's copies are issued
  /// while the collective runs; a reduce-scatter's before it. Needs zero3_list_collectives.
  double zero3_list_copy_cpu_us = 0;
  /// Each ZeRO-3 gather first zero-fills its full-size output buffer (torch.zeros in DeepSpeed's
  /// _allgather_param before PR #1188; torch.empty after): a fill kernel writing the whole
  /// parameter, which the device-wide synchronize before a blocking gather exposes.
  bool zero3_zero_fill = false;
  /// After each fetch the stack evaluates every fetched parameter's norm (DeepSpeed before PR
  /// #1188: a debug print_rank_0 whose f-string formats param.norm() even when nothing prints): a
  /// reduction reading the whole parameter, which the print's .item() waits for.
  bool zero3_fetch_norm = false;
  /// The element-wise passes over each layer's gradient before its reduce-scatter (ZeRO-3, and
  /// FSDP's SHARD_GRAD_OP, which reduces per unit too).
  Zero3GradPath zero3_grad_path = Zero3GradPath::direct;
  /// Each ZeRO-3 all-gather is copied out of the gathered flat buffer into per-parameter tensors on
  /// the compute stream before the layer runs (PyTorch FSDP2: split_with_sizes_copy, 4 bytes per
  /// 16-bit element, forward and backward alike).
  bool zero3_gather_copy_out = false;
  /// Under full recompute, the recomputed forward gathers each ZeRO-3 layer again (DeepSpeed: its
  /// pre-forward hook fetches what the forward released, and the backward fetches once more);
  /// false: the backward's gather comes first and the recompute runs on it (PyTorch FSDP: the
  /// unit's pre-backward hook unshards it before autograd reaches the checkpointed region, whose
  /// re-run forward finds it unsharded; pytorch/pytorch PR #175406 calls a second gather there
  /// redundant).
  bool zero3_recompute_gathers = true;
  /// The sharded parameters are the fp32 masters, and the 16-bit weights exist only gathered
  /// (PyTorch FSDP's mixed precision: FSDP1 casts its fp32 shard into a transient low-precision
  /// shard for each all-gather, FSDP2's MixedPrecisionPolicy casts in the all-gather): no 16-bit
  /// copy is kept beside the master, and SHARD_GRAD_OP (ZeRO-2) shards the fp32 parameters too,
  /// keeping the gathered 16-bit ones from forward to backward (cost::estimate_memory).
  bool fsdp_fp32_params = false;
  /// With pipeline parallelism a ZeRO-3 stage keeps its parameters gathered from forward to
  /// backward and accumulates their gradients unsharded, in the gradient dtype, until the last
  /// micro-batch's backward reduces them (torchtitan's apply_fsdp: reshard_after_forward False
  /// when PP is on; torch.distributed.pipelining turns gradient sync on for the last backward only,
  /// and FSDP2 accumulates the unsharded gradient in its reduce dtype meanwhile).
  bool zero3_pp_gathered = false;
  /// With sequence-parallel TP the column-parallel linears keep the input they gathered whole for
  /// their backward (PyTorch's DTensor tensor parallelism), not the local shard Megatron keeps and
  /// gathers again (memory: cost::layer_activation_bytes; the backward's collectives are priced
  /// without a second gather for every stack without tp_async_backward, schedule::add_tp).
  bool tp_saves_gathered_input = false;
  /// torch.compile (spec::apply_compile) compiles the loss as well as the blocks, turning the
  /// `torch` cross-entropy into `compiled` (torchtitan's build_loss_fn since PR #1033, 2025-04).
  bool compile_loss = false;
  /// Element-wise chains fused into one kernel each (NeMo's names): bias + activation, bias +
  /// dropout + residual add, rotary embedding, RMSNorm; false: eager PyTorch ops (cost::Fusions).
  bool bias_activation_fusion = true;
  bool bias_dropout_add_fusion = true;
  bool rope_fusion = true;
  bool rmsnorm_fusion = true;
  /// The linears add their biases in the GEMM's epilogue (PyTorch nn.Linear; cost::Fusions).
  bool linear_bias_epilogue = false;
  /// The attention unpads Q, K and V and pads its output back every layer (cost::Fusions).
  bool attention_unpad = false;
  /// The scaling recipe of fp8 runs (Megatron-Core --fp8-recipe; delayed is its default).
  Fp8Recipe fp8_recipe = Fp8Recipe::delayed;
  /// A run at `precision` under this stack has block-scaled (MXFP8) fp8 GEMMs.
  [[nodiscard]] bool mxfp8(Dtype precision) const {
    return precision == Dtype::fp8 && fp8_recipe == Fp8Recipe::mxfp8;
  }
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  CrossEntropy cross_entropy = CrossEntropy::unfused;
  /// Cross-entropy forwards the trainer runs over each micro-batch's logits outside autograd for
  /// its training metrics, as torch.nn.CrossEntropyLoss in fp32 (Composer's train_metrics: 2).
  std::int64_t train_metric_passes = 0;
  OptimizerImpl optimizer_impl = OptimizerImpl::megatron;
  /// The distributed optimizer stores bf16 parameters' fp32 remainders, not fp32 master copies
  /// (NeMo 1.x sets apex DistributedFusedAdam's store_param_remainders for bf16 models).
  bool param_remainders = false;
  /// Expert-parallel dispatch and combine of one micro-batch overlapped with another's compute
  /// (Megatron-Core overlap_moe_expert_parallel_comm, Megatron-Bridge moe_a2a_overlap).
  bool moe_a2a_overlap = false;
  CudaGraphs cuda_graphs;
  TpOverlapRs tp_overlap_rs;
  bool operator==(const Software&) const = default;
};

/// What a stack's recipes of the time set for the fields a run may leave unstated (the
/// validation README's rule: "assume what the framework's published recipe would have used").
/// nullopt: the generic rule (recompute: least that fits; SP: on when tp > 1; ZeRO 1; bf16; mbs 1).
struct StackDefaults {
  std::optional<Recompute> recompute;
  std::optional<bool> sequence_parallel;  ///< true: on whenever tp > 1
  std::optional<int> zero_stage;
  std::optional<Dtype> precision;
  std::optional<std::int64_t> micro_batch;
  /// Expert tensor-parallel degree of the stack's MoE recipes (nullopt: Megatron's default, tp).
  std::optional<std::int64_t> expert_tensor_parallel;
  /// fp8 runs keep and all-gather parameters in fp8 (Megatron-Bridge precision presets).
  std::optional<bool> fp8_param_gather;
  /// fp8 current-scaling runs keep this many transformer layers in bf16 at each end of the model
  /// (Megatron-Bridge bf16_with_fp8_current_scaling_mixed: first_last_layers_bf16, 1 + 1).
  std::optional<std::int64_t> current_scaling_bf16_layers;
  /// What the stack's selective recompute recomputes (spec::recompute_module bits; torchtitan's
  /// selective_ac_option "op": op_sac), when a job says selective and names no modules.
  std::optional<std::uint32_t> recompute_modules;
  bool operator==(const StackDefaults&) const = default;
};

/// The layers kept in bf16 at each end of an fp8 run by `defaults` (current scaling only), else 0.
[[nodiscard]] std::int64_t current_scaling_bf16_layers(const StackDefaults& defaults, Dtype precision, Fp8Recipe recipe);

/// What a stack's recipes set on one GPU, over its `software` (Megatron-Bridge keeps a
/// performance config per model and GPU: its GB200 and GB300 MoE recipes dispatch with HybridEP).
struct GpuRecipe {
  std::string gpu;  ///< the GPU preset's name as its file gives it ("GB200")
  std::optional<MoeDispatcher> moe_dispatcher;
  std::optional<AttentionKernel> attention;  ///< the kernel the stack's attention call reaches on this GPU
  bool operator==(const GpuRecipe&) const = default;
};

/// One version of a stack.
struct Stack {
  std::string name;      ///< "megatron-lm"
  std::string version;   ///< "2021", "24.11"
  std::string since;     ///< "YYYY-MM": the first month this version describes
  Software software;
  StackDefaults defaults;
  std::vector<GpuRecipe> gpu_recipes;
  bool operator==(const Stack&) const = default;
  /// "megatron-lm@2021".
  [[nodiscard]] std::string label() const { return name + "@" + version; }
};

/// A stack file: every version, oldest first.
struct StackFamily {
  std::string name;
  /// Other names validation files and users give the same software ("torchtitan" for
  /// pytorch-fsdp): a case naming one runs on this family.
  std::vector<std::string> aliases;
  std::vector<Stack> versions;
};

/// The stack `dtsim simulate`, `memory` and `plan` assume without --framework: today's Megatron-Core.
inline constexpr const char* kDefaultFramework = "megatron-core";

[[nodiscard]] const char* to_string(AttentionKernel k);
/// Throws SpecError naming `where` when `attention` needs a measurement `cal` lacks
/// (FlashAttention-2 without the profile's flash2_ratio).
void check_attention(AttentionKernel attention, const ComputeCalibration& cal, const std::string& cal_name,
                     const std::string& where);
[[nodiscard]] const char* to_string(MainGrads g);
[[nodiscard]] const char* to_string(Fp8Recipe r);
[[nodiscard]] const char* to_string(MoeDispatcher d);
[[nodiscard]] const char* to_string(CrossEntropy c);
[[nodiscard]] const char* to_string(OptimizerImpl o);
[[nodiscard]] const char* to_string(Zero3GradPath p);
[[nodiscard]] const char* to_string(TpOverlapImpl t);
[[nodiscard]] const char* to_string(GradAccumFusion g);
[[nodiscard]] const char* to_string(Zero3Gather g);
/// "none", "full_iteration", or the captured scopes joined by ",": "attn,moe_router".
[[nodiscard]] std::string to_string(const CudaGraphs& g);
/// Parses that form (what stack files, recipes and --cuda-graphs write); throws SpecError naming
/// `where` for an unknown scope.
[[nodiscard]] CudaGraphs parse_cuda_graphs(const std::string& text, const std::string& where);

/// torch.compile over eager model code (torchtitan's --training.compile / compile.enable): each
/// transformer block is compiled whole, so Inductor fuses its element-wise chains -- the norms, the
/// SiLU and multiply of SwiGLU, the residual adds, the rotary embedding -- into a kernel each, as a
/// stack with fused kernels runs them. Sets the four fusion flags; the rest of `s` is unchanged.
void apply_compile(Software& s);

/// "PROJ,FC2", each "ring" or the pipelined overlap's SM count: "24,20", "ring,ring".
[[nodiscard]] std::string to_string(const TpOverlapRs& o);
/// Parses that form (stack files, recipes, --tp-overlap-rs); throws SpecError naming `where`.
[[nodiscard]] TpOverlapRs parse_tp_overlap_rs(const std::string& text, const std::string& where);

/// The main-grad type of `sw` for a run in `precision` (fp32, or fp16/bf16 for 16-bit runs).
[[nodiscard]] Dtype main_grad_dtype(const Software& sw, Dtype precision);
/// Whether a run keeps fp32 remainders instead of master weights: the stack does it, the optimizer
/// is Adam, and the parameters are bf16 (bf16, fp8 or fp4 compute without fp8 parameters). NeMo 1.x
/// (megatron_base_model.py setup_optimization): store_param_remainders only when the optimizer's
/// fp32 state meets bf16 model parameters; fp16 models and fp8 parameters keep fp32 masters.
[[nodiscard]] bool param_remainders(const Software& sw, const Training& t);
/// What a run sets itself over a stack's per-GPU recipes (a flag, a case's recipe): the recipe's
/// value still applies, but it is no longer the stack's to note.
struct RecipeOverrides {
  bool moe_dispatcher = false;
  bool attention = false;
};

/// The stack's software on a GPU named `gpu` (spec::Gpu::name): `software` with what a
/// gpu_recipes entry for that GPU sets; `notes` gets one line per field it changed ("moe
/// dispatcher flex (nemo-megatron-bridge@25.11 recipes on GB200)", the dispatcher only when `moe`:
/// only MoE runs dispatch), except for fields `set` says the run overrides.
[[nodiscard]] Software software_on(const Stack& stack, const std::string& gpu, bool moe,
                                   std::vector<std::string>* notes = nullptr, RecipeOverrides set = {});

/// Whether the weight-gradient GEMMs accumulate into the main grads of a run in `precision`.
[[nodiscard]] bool fused_grad_accumulation(const Software& sw, Dtype precision);

/// Parses calibration/stacks/NAME.json; throws SpecError (file + JSON pointer) on a malformed one
/// (versions out of date order, a "since" that is not YYYY-MM, unknown keys).
[[nodiscard]] StackFamily parse_stack_family(const std::string& text, const std::string& file);

/// "NAME" (its latest version), "NAME@VERSION" (a version string as the file writes it) or
/// "NAME@YYYY[-MM]" (the latest version out by then); NAME a preset of calibration/stacks/ or a
/// file. Throws SpecError naming `flag` for an unknown name or version.
[[nodiscard]] Stack load_stack(const std::string& spec, const std::string& flag = "--framework");

/// The stack a run used, from its framework fields: `version` when it names one in the file,
/// else the latest version out by `date` (YYYY or YYYY-MM; a year alone means its end), else the
/// latest. Throws SpecError naming `where` for a name with no stack file.
[[nodiscard]] Stack find_stack(const std::string& name, const std::optional<std::string>& version,
                               const std::optional<std::string>& date, const std::string& where);

/// Stack names with a file in calibration/stacks/, sorted.
[[nodiscard]] std::vector<std::string> stack_names();

/// The stack file `name` selects: its own, or the one whose `aliases` list it ("torchtitan" ->
/// "pytorch-fsdp"); nullopt when neither exists. Case, '_' or ' ' for '-' and a repository owner
/// ("NVIDIA/Megatron-LM") do not matter.
[[nodiscard]] std::optional<std::string> stack_file_for(const std::string& name);

}  // namespace dtsim::spec
