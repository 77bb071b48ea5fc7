#!/usr/bin/env bash
# Our own example (not from Megatron-LM): a typical Megatron-LM launch of Llama-2-7B on one
# node of 8 GPUs: tensor parallelism 2 with sequence parallelism, data parallelism 4 (the rest
# of the devices), the distributed optimizer, bf16, 1,024 samples of 4,096 tokens per step.
# twinflow reads the flags after pretrain_gpt.py (models/megatron_args.h); the data,
# checkpoint, learning-rate and logging flags are reported as ignored. Paths are placeholders.
export CUDA_DEVICE_MAX_CONNECTIONS=1

torchrun --nproc_per_node 8 --nnodes 1 --master_addr localhost --master_port 6000 \
  pretrain_gpt.py \
  --num-layers 32 \
  --hidden-size 4096 \
  --num-attention-heads 32 \
  --ffn-hidden-size 11008 \
  --seq-length 4096 \
  --max-position-embeddings 4096 \
  --swiglu \
  --normalization RMSNorm \
  --norm-epsilon 1e-5 \
  --position-embedding-type rope \
  --rotary-base 10000 \
  --disable-bias-linear \
  --untie-embeddings-and-output-weights \
  --attention-dropout 0.0 \
  --hidden-dropout 0.0 \
  --transformer-impl transformer_engine \
  --use-flash-attn \
  --tensor-model-parallel-size 2 \
  --pipeline-model-parallel-size 1 \
  --sequence-parallel \
  --use-distributed-optimizer \
  --overlap-grad-reduce \
  --bf16 \
  --global-batch-size 1024 \
  --micro-batch-size 1 \
  --train-iters 250000 \
  --lr 3.0e-4 \
  --min-lr 3.0e-5 \
  --lr-decay-style cosine \
  --lr-warmup-iters 2000 \
  --weight-decay 0.1 \
  --adam-beta1 0.9 \
  --adam-beta2 0.95 \
  --clip-grad 1.0 \
  --init-method-std 0.02 \
  --tokenizer-type Llama2Tokenizer \
  --tokenizer-model /data/llama2/tokenizer.model \
  --data-path 1.0 /data/llama2/corpus_text_document \
  --split 949,50,1 \
  --save /checkpoints/llama2_7b \
  --load /checkpoints/llama2_7b \
  --save-interval 1000 \
  --eval-interval 1000 \
  --eval-iters 10 \
  --log-interval 10 \
  --tensorboard-dir /logs/llama2_7b \
  --seed 1234 \
  --distributed-backend nccl
