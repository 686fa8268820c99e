#!/bin/bash
# GPT-3 175B pretraining with Megatron-LM on 128 DGX A100 nodes (1,024 GPUs): TP 8 inside a node,
# PP 16 across nodes, DP 8; fp16, full activation recompute, global batch 1536 of 2048 tokens.
# Shaped after NVIDIA/Megatron-LM examples/gpt3/train_gpt3_175b_distributed.sh and the SC'21 runs
# (Narayanan et al. 2021, Table 1: 175B on 1024 GPUs, t = 8, p = 16, batch 1536).
# Run on every node (e.g. from an sbatch script): NODE_RANK and MASTER_ADDR come from Slurm.
#
#   dtsim imports it as: --model gpt3-175b --gpus 1024 --tp 8 --pp 16 --mbs 1 --gbs 1536 --seq 2048
#                        --precision fp16 --recompute full --zero 0

set -euo pipefail

export CUDA_DEVICE_MAX_CONNECTIONS=1
export NCCL_IB_SL=1

GPUS_PER_NODE=8
NUM_NODES=128
NODE_RANK=${SLURM_NODEID:-0}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=6000
WORLD_SIZE=$((GPUS_PER_NODE * NUM_NODES))

TP=8
PP=16

CHECKPOINT_PATH=$1        # where checkpoints are saved and loaded
TENSORBOARD_LOGS_PATH=$2  # TensorBoard event files
VOCAB_FILE=$3             # gpt2-vocab.json
MERGE_FILE=$4             # gpt2-merges.txt
DATA_PATH=$5              # <prefix>_text_document

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --node_rank $NODE_RANK
    --master_addr $MASTER_ADDR
    --master_port $MASTER_PORT
)

GPT_MODEL_ARGS=(
    --num-layers 96
    --hidden-size 12288
    --num-attention-heads 96
    --seq-length 2048
    --max-position-embeddings 2048
    --use-flash-attn          # FlashAttention kernels
)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 1536
    --rampup-batch-size 16 16 5859375
    --train-iters 500000
    --weight-decay 0.1
    --adam-beta1 0.9
    --adam-beta2 0.95
    --init-method-std 0.006
    --clip-grad 1.0
    --fp16
    --lr 6.0e-5
    --lr-decay-style cosine
    --min-lr 6.0e-6
    --lr-warmup-fraction .001
    --lr-decay-iters 430000
    --recompute-granularity full
    --recompute-method uniform
)

MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size $TP
    --pipeline-model-parallel-size $PP
)

DATA_ARGS=(
    --data-path $DATA_PATH
    --tokenizer-type GPT2BPETokenizer
    --vocab-file $VOCAB_FILE
    --merge-file $MERGE_FILE
    --split 949,50,1
)

EVAL_AND_LOGGING_ARGS=(
    --log-interval 100
    --save-interval 10000
    --eval-interval 1000
    --save "$CHECKPOINT_PATH"
    --load "$CHECKPOINT_PATH"
    --eval-iters 10
    --tensorboard-dir "$TENSORBOARD_LOGS_PATH"
)

echo "Launching GPT-3 175B on ${WORLD_SIZE} GPUs (TP=${TP}, PP=${PP})"

torchrun "${DISTRIBUTED_ARGS[@]}" pretrain_gpt.py \
    "${GPT_MODEL_ARGS[@]}" \
    "${TRAINING_ARGS[@]}" \
    "${MODEL_PARALLEL_ARGS[@]}" \
    "${DATA_ARGS[@]}" \
    "${EVAL_AND_LOGGING_ARGS[@]}" \
    2>&1 | tee "train_gpt3_175b_node${NODE_RANK}.log"
