"""A per-GPU memory model of the reference GRPO recipe, per target model size class.

Every term is computed from a model shape (the published Qwen2.5 configurations),
byte counts per parameter and per token, and a few fixed overheads. Each
coefficient is a named module constant with a docstring that says what it stands
for and whether it was measured. The one-GPU layout (ZeRO-0, ``trainer train``'s
default load in float32, bf16 autocast) was checked against peaks measured on an
H200 (``benchmarks/grpo_memory.py``, ``docs/grpo-memory.md``): 0.5B-7B, full
fine-tuning and LoRA, transformers generation, within 7 %; and with vLLM colocated
at the default share (0.3), 0.5B-3B, full and LoRA, within 3.4 % (issue 35). The multi-GPU (ZeRO) and
vLLM server terms are not measured. The method, the assumptions and what is left
out are written up in ``docs/grpo-memory-model.md``.

The public API:

* ``ModelShape``, ``SIZE_CLASSES`` and ``parse_size(text)``: the size classes.
* ``estimate(shape, ...) -> MemoryEstimate``: per-GPU GiB of one layout, term by term.
* ``estimate_config(shape, run_config, gpu_memory_gb=...)``: the estimate of one run config as it is.
* ``recommend(shape, gpus=..., gpu_memory_gb=...) -> Plan``: the cheapest layout that fits.
* ``table(...)`` and ``render_table(rows)``: the smallest fitting GPU count per size class.
* ``render_estimate(estimate)``: a plain-text breakdown.

``python -m trainer.memory --gpu-memory 80`` prints the table as Markdown.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import dataclass, field
from typing import Any

GIB = 1024**3
"""Bytes in a GiB. Every figure this module reports is in GiB."""

BF16_BYTES = 2
"""Bytes of one bfloat16 value."""

FP32_BYTES = 4
"""Bytes of one float32 value."""

# ---------------------------------------------------------------------------
# Training state: bytes per parameter
# ---------------------------------------------------------------------------

POLICY_LOAD_BYTES_PER_PARAM = FP32_BYTES
"""Measured. ``trainer train`` passes the model as a path, and TRL 1.16's ``GRPOTrainer`` loads it in float32 unless
``model_init_kwargs`` sets a dtype: after loading, each model copy held 4.0 bytes per parameter on the H200 (0.5B-7B,
full and LoRA). bf16 training is autocast over fp32 weights. Used at ZeRO-0 (one process per GPU, no DeepSpeed)."""

WEIGHT_BYTES_PER_PARAM = BF16_BYTES
"""ZeRO >= 1 (DeepSpeed bf16, not measured): the engine converts the model to bf16 and keeps an fp32 master copy in
the optimizer; the reference model is bf16 too."""

GRADIENT_BYTES_PER_PARAM = BF16_BYTES
"""ZeRO >= 1 (not measured): one bf16 gradient per trainable parameter. At ZeRO-0 gradients have the weights' dtype
(fp32, 4 bytes; measured)."""

ADAM_MOMENT_BYTES_PER_PARAM = 2 * FP32_BYTES
"""AdamW keeps two fp32 moments (exp_avg, exp_avg_sq) per trainable parameter: 8 bytes (measured at ZeRO-0)."""

MASTER_WEIGHT_BYTES_PER_PARAM = FP32_BYTES
"""ZeRO >= 1 (DeepSpeed bf16, not measured): an fp32 master copy of every trainable bf16 weight. At ZeRO-0 the
weights already are fp32 and there is no separate copy. Either way full fine-tuning holds 16 bytes per parameter
(fp32: 4 weight + 4 gradient + 8 moments; DeepSpeed: 2 + 2 + 4 + 8)."""

AUTOCAST_CACHE_BYTES_PER_PARAM = BF16_BYTES
"""Measured (fitted with the activations at ZeRO-0): under bf16 autocast, the forward casts each fp32 weight that
requires grad to bf16 once and keeps the cast until the forward's autocast region ends, so full fine-tuning holds a
bf16 copy of every trainable weight during the training forward/backward (a frozen LoRA base is re-cast per use and
not cached). Not charged under DeepSpeed bf16 (the weights are bf16 already)."""

LORA_RANK = 16
"""LoRA rank: ``RunConfig.lora_r``'s default."""

LORA_ADAPTER_WEIGHT_BYTES = FP32_BYTES
"""LoRA adapter weights are fp32 (PEFT's ``autocast_adapter_dtype=True``; with the default fp32 load the base is fp32
as well, ``POLICY_LOAD_BYTES_PER_PARAM``)."""

LORA_ADAPTER_GRADIENT_BYTES = FP32_BYTES
"""Gradients of the fp32 adapters are fp32."""

LORA_ADAPTER_OPTIMIZER_BYTES = ADAM_MOMENT_BYTES_PER_PARAM
"""AdamW moments of the adapters; no separate master copy (the adapters already are fp32)."""

# ---------------------------------------------------------------------------
# Activations: bytes per token
# ---------------------------------------------------------------------------

CHECKPOINT_BYTES_PER_TOKEN_HIDDEN = BF16_BYTES
"""Gradient checkpointing (transformers: one checkpoint per decoder layer) keeps each layer's bf16 input hidden
state: ``2 * hidden`` bytes per token per layer."""

LAYER_ACTIVATION_BYTES_PER_TOKEN_HIDDEN = 34
"""Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models"), 16-bit, no tensor or
sequence parallelism: one transformer layer keeps ``s*b*h*(34 + 5*a*s/h)`` bytes, i.e. ``34 * hidden`` bytes per
token plus the attention-score term below. Derived for a GPT layer with a 4h GeLU MLP and dropout; Qwen2.5's SwiGLU
MLP (intermediate 2.7-5.4 x hidden), grouped-query attention and the absence of dropout are not corrected for."""

ATTENTION_SCORE_BYTES_PER_TOKEN_HEAD_POSITION = 5
"""Korthikanti et al.'s attention term: ``5 * heads * seq`` bytes per token (softmax input/output and dropout mask
of the materialised ``seq x seq`` score matrix per head). Kept by default: no flash-attention correction. With
flash or memory-efficient SDPA kernels the score matrix is never stored; ``estimate(flash_attention=True)`` drops
the term."""

# ---------------------------------------------------------------------------
# Log-probabilities (the LM head)
# ---------------------------------------------------------------------------

FUSED_LM_HEAD_TOKEN_TILE = 4096
"""TRL 1.16's fused LM head (``trl.kernels.chunked_logprob.TOKEN_CHUNK_SIZE``) projects at most this many tokens at a
time; GRPOTrainer calls the model with ``fused_lm_head=True`` and never materialises ``(batch, seq, vocab)``."""

FUSED_LM_HEAD_VOCAB_TILE = 32768
"""...and this many vocabulary rows at a time (``trl.trainer.utils._CHUNKED_LOGPROB_CHUNK_SIZE``); the tile is a
bf16 buffer under autocast."""

FUSED_LM_HEAD_GRAD_BYTES = FP32_BYTES
"""The fused head's backward accumulates the hidden-state gradient (tokens x hidden) and, when the LM head is
trained (full fine-tuning; LoRA "all-linear" leaves it frozen), the LM-head weight gradient (vocab x hidden) in
fp32."""

MATERIALIZED_LOGITS_BYTES = FP32_BYTES
"""Without the fused head (``estimate(fused_lm_head=False)``, older TRL): the completion logits
``batch * completion * vocab`` at 4 bytes per element, one fp32 copy (or, equivalently, the bf16 logits kept for
backward plus the bf16 log-softmax output)."""

# ---------------------------------------------------------------------------
# ZeRO / FSDP
# ---------------------------------------------------------------------------

ZERO_STAGES = (0, 1, 2, 3)
"""0: plain DDP; 1: optimizer states sharded; 2: + gradients; 3: + weights (FSDP full-shard counts as 3)."""

ZERO3_LIVE_LAYERS = 2
"""ZeRO-3 gathers the bf16 weights of the layer being computed and prefetches the next: two decoder layers' full
weights live at once on every GPU."""

# ---------------------------------------------------------------------------
# vLLM
# ---------------------------------------------------------------------------

KV_CACHE_BYTES = BF16_BYTES
"""vLLM's KV cache is bf16 (the model dtype): ``2 (K and V) * layers * kv_heads * head_dim * 2`` bytes per token."""

VLLM_KV_BATCH_FRACTION = 1.0
"""Fraction of one generation batch (all completions of one optimizer step, at full prompt+completion length)
whose KV cache vLLM must hold at once. 1.0 asks for single-wave generation; below that vLLM still runs, in several
waves (slower)."""

VLLM_RUNTIME_OVERHEAD_GIB = 2.0
"""vLLM's own working memory inside its budget besides weights and KV cache: profiled forward activations, CUDA
graphs, sampler buffers."""

VLLM_SERVER_GPU_MEMORY_UTILIZATION = 0.9
"""``trl vllm-serve --gpu-memory-utilization`` default: the share of each vLLM-server GPU vLLM may use."""

COLOCATE_DEFAULT_UTILIZATION = 0.3
"""``vllm_gpu_memory_utilization`` default (TRL 1.16 and ``RunConfig``): colocated vLLM's share of the GPU."""

COLOCATE_UTILIZATION_STEP = 0.05
"""``recommend`` rounds a colocated vLLM share up to a multiple of this."""

COLOCATE_MAX_UTILIZATION = 0.9
"""The largest colocated vLLM share ``recommend`` will consider."""

# ---------------------------------------------------------------------------
# Fixed overhead
# ---------------------------------------------------------------------------

CUDA_CONTEXT_GIB = 0.8
"""Measured: device memory a training process holds outside PyTorch's caching allocator (CUDA context, kernels,
library handles): 0.75-0.80 GiB on the H200 with PyTorch 2.11 / CUDA 13, for every size."""

ALLOCATOR_FRAGMENTATION_FRACTION = 0.05
"""Measured: the caching allocator's peak reserved memory exceeded its peak allocated memory by 3-8 % (one point of
16 %, at 0.5B LoRA's 3.8 GiB); charged on the allocated terms."""

NCCL_BUFFERS_GIB = 0.5
"""Not measured: NCCL communication buffers per GPU when training spans several GPUs."""

# ---------------------------------------------------------------------------
# Generation with transformers (``generation: transformers``)
# ---------------------------------------------------------------------------

GENERATION_BYTES_PER_PROMPT_TOKEN_HIDDEN = 111
"""Fitted on the H200 measurements (four LoRA points, 0.5B-7B; within 10 % each): besides the bf16 KV cache, the
generation phase (``model.generate`` on the whole generation batch, then the no-grad log-prob forwards) peaks at
about ``111 * hidden`` bytes per prompt token of the generation batch: the prefill's per-layer working tensors
(the SwiGLU intermediate is 5.3-5.8 x hidden in these shapes) at bf16, and their fp32 casts."""

# ---------------------------------------------------------------------------
# The recipe's batch shape, and how recommend searches
# ---------------------------------------------------------------------------

RECIPE_PER_DEVICE_BATCH = 8
"""``per_device_train_batch_size=8``: completions per GPU per micro-batch."""

RECIPE_GRADIENT_ACCUMULATION = 4
"""``gradient_accumulation_steps=4``."""

RECIPE_NUM_GENERATIONS = 8
"""``num_generations=8``: the method's floor."""

RECIPE_PROMPT_LEN = 512
"""``max_prompt_length`` (``RunConfig`` default)."""

RECIPE_COMPLETION_LEN = 512
"""``max_completion_length`` (``RunConfig`` default)."""

RECIPE_BETA = 0.01
"""KL coefficient: > 0, so a reference model is kept."""

MICRO_BATCH_LADDER = (8, 4, 2, 1)
"""Per-device micro-batches ``recommend`` tries, largest first, raising gradient accumulation to keep the number of
completions per optimizer step."""

SMALL_NODE_GPUS = 4
"""Up to this many GPUs, the vLLM server starts with one GPU of its own ..."""

LARGE_NODE_VLLM_SHARE = 4
"""... above it, one GPU in this many (2 of 8) goes to vLLM. Either is raised to the tensor-parallel size the
weights need."""

VLLM_TENSOR_PARALLEL_SIZES = (1, 2, 4, 8)
"""Tensor-parallel sizes tried for the vLLM server, smallest first (each must divide the attention heads)."""

RECOMMEND_HEADROOM_FRACTION = 0.10
"""``recommend`` accepts a layout only when its estimate leaves this fraction of the GPU free: the model is not yet
measured, and PyTorch's allocator peaks above the sum of live tensors. (``MemoryEstimate.fits`` has no margin.)"""

MAX_GPUS_SEARCHED = 64
"""When nothing fits, ``recommend`` doubles the GPU count up to this to say how many GPUs would be needed."""


# ---------------------------------------------------------------------------
# Model shapes
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer (Qwen2 architecture: RMSNorm, SwiGLU MLP, GQA with q/k/v biases)."""

    label: str  # the nominal size class, e.g. "7B"
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int
    tie_embeddings: bool = False
    qkv_bias: bool = True

    @property
    def params_per_layer(self) -> int:
        h, q, kv = self.hidden_size, self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        attention = h * q + 2 * h * kv + q * h          # q, k, v, o projections
        if self.qkv_bias:
            attention += q + 2 * kv
        mlp = 3 * h * self.intermediate_size             # gate, up, down
        norms = 2 * h                                     # two RMSNorm weights
        return attention + mlp + norms

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    @property
    def num_params(self) -> int:
        embeddings = self.embedding_params * (1 if self.tie_embeddings else 2)
        return self.num_layers * self.params_per_layer + embeddings + self.hidden_size  # + final norm

    @property
    def params_b(self) -> float:
        """Parameters in billions, computed from the shape."""
        return self.num_params / 1e9

    def lora_params(self, rank: int = LORA_RANK) -> int:
        """Adapter parameters for LoRA on every linear layer of the decoder ("all-linear": not the LM head)."""
        h, q, kv, i = self.hidden_size, self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim, \
            self.intermediate_size
        in_plus_out = (h + q) + 2 * (h + kv) + (q + h) + 2 * (h + i) + (i + h)
        return self.num_layers * rank * in_plus_out

    def kv_cache_bytes_per_token(self) -> int:
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * KV_CACHE_BYTES


def _qwen25(label: str, layers: int, hidden: int, heads: int, kv_heads: int, intermediate: int, *,
            vocab: int, tied: bool, head_dim: int = 128) -> ModelShape:
    return ModelShape(label=label, num_layers=layers, hidden_size=hidden, num_heads=heads, num_kv_heads=kv_heads,
                      head_dim=head_dim, vocab_size=vocab, intermediate_size=intermediate, tie_embeddings=tied)


QWEN25_SMALL_VOCAB = 151936
"""``vocab_size`` of Qwen2.5-0.5B/1.5B/3B (their config.json)."""

QWEN25_LARGE_VOCAB = 152064
"""``vocab_size`` of Qwen2.5-7B/14B/32B/72B (their config.json: the embedding is padded to 152064 rows)."""

SIZE_CLASSES: dict[str, ModelShape] = {
    "0.5B": _qwen25("0.5B", 24, 896, 14, 2, 4864, vocab=QWEN25_SMALL_VOCAB, tied=True, head_dim=64),
    "1.5B": _qwen25("1.5B", 28, 1536, 12, 2, 8960, vocab=QWEN25_SMALL_VOCAB, tied=True),
    "3B": _qwen25("3B", 36, 2048, 16, 2, 11008, vocab=QWEN25_SMALL_VOCAB, tied=True),
    "7B": _qwen25("7B", 28, 3584, 28, 4, 18944, vocab=QWEN25_LARGE_VOCAB, tied=False),
    "14B": _qwen25("14B", 48, 5120, 40, 8, 13824, vocab=QWEN25_LARGE_VOCAB, tied=False),
    "32B": _qwen25("32B", 64, 5120, 40, 8, 27648, vocab=QWEN25_LARGE_VOCAB, tied=False),
    "72B": _qwen25("72B", 80, 8192, 64, 8, 29568, vocab=QWEN25_LARGE_VOCAB, tied=False),
}
"""The size classes, from the published Qwen2.5 configurations."""

SIZE_ALIASES = {"70B": "72B"}
"""Other names of a size class (70B-class models are sized as Qwen2.5-72B)."""


def parse_size(text: str) -> ModelShape:
    """``"7B"``, ``"7b"``, ``"7"``, ``"0.5B"``, ``"70B"`` -> the size class; anything else raises ValueError."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*[bB]?\s*", str(text))
    if match:
        number = float(match.group(1))
        for label in (*SIZE_CLASSES, *SIZE_ALIASES):
            if float(label[:-1]) == number:
                return SIZE_CLASSES[SIZE_ALIASES.get(label, label)]
    known = ", ".join(SIZE_CLASSES)
    aliases = ", ".join(f"{a} = {c}" for a, c in SIZE_ALIASES.items())
    raise ValueError(f"unknown model size {text!r}: known size classes are {known} (aliases: {aliases})")


def _shape(shape: ModelShape | str) -> ModelShape:
    return parse_size(shape) if isinstance(shape, str) else shape


# ---------------------------------------------------------------------------
# The estimate
# ---------------------------------------------------------------------------

COMPONENT_NAMES = {
    "policy_weights_gib": "policy weights",
    "gradients_gib": "gradients",
    "autocast_cache_gib": "autocast bf16 weight casts",
    "optimizer_gib": "optimizer states",
    "reference_gib": "reference model",
    "zero3_gather_gib": "ZeRO-3 gathered layers",
    "activations_gib": "activations",
    "logits_gib": "LM head / log-probs",
    "generation_gib": "transformers generation (KV cache, prefill)",
    "vllm_gib": "vLLM (colocated share)",
    "overhead_gib": "CUDA context / fragmentation",
}
"""The per-GPU terms of a MemoryEstimate and their display names, in display order."""

TRAINING_PHASE_TERMS = ("gradients_gib", "autocast_cache_gib", "activations_gib", "logits_gib")
"""Terms alive only during the forward/backward of a micro-batch (gradients are freed after each optimizer step)."""

GENERATION_PHASE_TERMS = ("generation_gib",)
"""Terms alive only while generating with transformers; the peak is the larger of the two phases."""


@dataclass(frozen=True)
class MemoryEstimate:
    """Per-GPU memory of one training GPU, in GiB, term by term."""

    label: str
    gpu_memory_gb: float
    policy_weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    reference_gib: float
    zero3_gather_gib: float
    activations_gib: float
    logits_gib: float
    vllm_gib: float
    overhead_gib: float
    autocast_cache_gib: float = 0.0
    generation_gib: float = 0.0
    vllm_required_gib: float = 0.0
    """What colocated vLLM needs inside its share (weights + KV cache + runtime); 0 in server mode."""
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def components(self) -> dict[str, float]:
        """Display name -> GiB, in display order."""
        return {name: getattr(self, key) for key, name in COMPONENT_NAMES.items()}

    def largest(self, n: int = 3) -> list[tuple[str, float]]:
        return sorted(self.components().items(), key=lambda kv: -kv[1])[:n]

    @property
    def training_phase_gib(self) -> float:
        return sum(getattr(self, key) for key in TRAINING_PHASE_TERMS)

    @property
    def generation_phase_gib(self) -> float:
        return sum(getattr(self, key) for key in GENERATION_PHASE_TERMS)

    @property
    def total_gib(self) -> float:
        """The peak: the terms held throughout, plus the larger of the training and the generation phase."""
        transient = set(TRAINING_PHASE_TERMS) | set(GENERATION_PHASE_TERMS)
        held = sum(getattr(self, key) for key in COMPONENT_NAMES if key not in transient)
        return held + max(self.training_phase_gib, self.generation_phase_gib)

    @property
    def problems(self) -> list[str]:
        out = []
        if self.total_gib > self.gpu_memory_gb:
            out.append(f"{self.total_gib:.1f} GiB per training GPU exceeds {self.gpu_memory_gb:g} GB")
        if self.vllm_required_gib > self.vllm_gib:
            out.append(f"colocated vLLM needs {self.vllm_required_gib:.1f} GiB but its share is "
                       f"{self.vllm_gib:.1f} GiB")
        return out

    @property
    def fits(self) -> bool:
        return not self.problems


def vllm_required_gib(shape: ModelShape, *, sequences: int, seq_len: int, tensor_parallel: int = 1,
                      data_parallel: int = 1) -> float:
    """GiB one vLLM GPU needs: its slice of the bf16 weights, of the KV cache of ``sequences`` full-length
    sequences (times VLLM_KV_BATCH_FRACTION), and VLLM_RUNTIME_OVERHEAD_GIB."""
    weights = shape.num_params * WEIGHT_BYTES_PER_PARAM / tensor_parallel
    kv = (shape.kv_cache_bytes_per_token() * sequences * seq_len * VLLM_KV_BATCH_FRACTION
          / (tensor_parallel * data_parallel))
    return (weights + kv) / GIB + VLLM_RUNTIME_OVERHEAD_GIB


def estimate(shape: ModelShape | str, *, gpus: int = 1, gpu_memory_gb: float = 80.0, lora: bool = False,
             gradient_checkpointing: bool = True, zero_stage: int = 0,
             per_device_batch: int = RECIPE_PER_DEVICE_BATCH, prompt_len: int = RECIPE_PROMPT_LEN,
             completion_len: int = RECIPE_COMPLETION_LEN, num_generations: int = RECIPE_NUM_GENERATIONS,
             beta: float = RECIPE_BETA, vllm_mode: str = "colocate",
             vllm_gpu_memory_utilization: float = COLOCATE_DEFAULT_UTILIZATION,
             gradient_accumulation_steps: int = RECIPE_GRADIENT_ACCUMULATION, lora_rank: int = LORA_RANK,
             fused_lm_head: bool = True, flash_attention: bool = True,
             generation: str = "vllm") -> MemoryEstimate:
    """Per-GPU memory of one *training* GPU.

    ``gpus`` counts the training processes (the ZeRO sharding degree); in server mode the vLLM GPUs are extra and
    not counted here. ``per_device_batch`` counts completions (sequences of prompt + completion tokens).
    ``generation="transformers"`` generates with the policy on the training GPU (no vLLM): its KV cache and prefill
    replace the vLLM share. ``flash_attention=True`` (transformers' default SDPA kernels on a GPU, the measured setup)
    stores no ``seq x seq`` score matrix; False keeps Korthikanti et al.'s score term (eager attention).
    """
    shape = _shape(shape)
    if zero_stage not in ZERO_STAGES:
        raise ValueError(f"zero_stage must be one of {ZERO_STAGES} (FSDP full-shard counts as 3), not {zero_stage}")
    if vllm_mode not in ("colocate", "server"):
        raise ValueError(f"vllm_mode must be colocate or server, not {vllm_mode!r}")
    if generation not in ("vllm", "transformers"):
        raise ValueError(f"generation must be vllm or transformers, not {generation!r}")
    if gpus < 1 or per_device_batch < 1:
        raise ValueError("gpus and per_device_batch must be positive")
    notes: list[str] = []
    n = shape.num_params
    shard_weights = gpus if zero_stage >= 3 else 1
    shard_grads = gpus if zero_stage >= 2 else 1
    shard_optimizer = gpus if zero_stage >= 1 else 1

    # Weights, gradients, optimizer states. ZeRO-0 (measured): the policy as TRL loads it (fp32), bf16 autocast.
    # ZeRO >= 1 (DeepSpeed bf16, not measured): bf16 weights and gradients, fp32 master weights in the optimizer.
    deepspeed = zero_stage >= 1
    weight_bytes = WEIGHT_BYTES_PER_PARAM if deepspeed else POLICY_LOAD_BYTES_PER_PARAM
    base_weights = n * weight_bytes
    autocast_cache = 0.0
    if lora:
        adapters = shape.lora_params(lora_rank)
        weights = base_weights + adapters * LORA_ADAPTER_WEIGHT_BYTES
        grads = adapters * LORA_ADAPTER_GRADIENT_BYTES
        optimizer = adapters * LORA_ADAPTER_OPTIMIZER_BYTES
        autocast_cache = adapters * AUTOCAST_CACHE_BYTES_PER_PARAM
        notes.append(f"LoRA r={lora_rank} on all linear layers: {adapters / 1e6:.1f}M fp32 adapter parameters; "
                     f"the {'bf16' if deepspeed else 'fp32'} base is frozen")
    elif deepspeed:
        weights = base_weights
        grads = n * GRADIENT_BYTES_PER_PARAM
        optimizer = n * (ADAM_MOMENT_BYTES_PER_PARAM + MASTER_WEIGHT_BYTES_PER_PARAM)
        notes.append("full fine-tuning, DeepSpeed bf16: bf16 weights and gradients, fp32 master weights and AdamW "
                     "moments (16 bytes per parameter before sharding; not measured)")
    else:
        weights = base_weights
        grads = n * weight_bytes
        optimizer = n * ADAM_MOMENT_BYTES_PER_PARAM
        autocast_cache = n * AUTOCAST_CACHE_BYTES_PER_PARAM
        notes.append("full fine-tuning: fp32 weights (TRL's default load) and gradients, fp32 AdamW moments "
                     "(16 bytes per parameter), plus a bf16 autocast copy of the weights during the forward")
    if not deepspeed:
        notes.append("the policy is loaded in float32 (TRL's default when the model is a path): 4 bytes per "
                     "parameter, measured")

    # Reference model: TRL builds it like the policy (same dtype).
    if beta > 0 and not lora:
        reference = base_weights / shard_weights
        notes.append(f"beta={beta:g} > 0: a {'bf16' if deepspeed else 'fp32'} reference model is loaded"
                     + (" (ZeRO-3 shards it too)" if zero_stage >= 3 else ""))
    elif beta > 0:
        reference = 0.0
        notes.append("LoRA: the reference policy is the base model with the adapters disabled (no extra copy)")
    else:
        reference = 0.0
        notes.append("beta=0: no reference model")

    zero3_gather = ZERO3_LIVE_LAYERS * shape.params_per_layer * WEIGHT_BYTES_PER_PARAM if zero_stage >= 3 else 0
    if zero_stage:
        notes.append(f"ZeRO-{zero_stage} over {gpus} GPU(s): optimizer states sharded"
                     + (", gradients sharded" if zero_stage >= 2 else "")
                     + (", weights sharded (two layers gathered at a time)" if zero_stage >= 3 else ""))

    # Activations of one micro-batch.
    seq = prompt_len + completion_len
    tokens = per_device_batch * seq
    attention_term = 0 if flash_attention else ATTENTION_SCORE_BYTES_PER_TOKEN_HEAD_POSITION * shape.num_heads * seq
    one_layer = tokens * (LAYER_ACTIVATION_BYTES_PER_TOKEN_HIDDEN * shape.hidden_size + attention_term)
    if gradient_checkpointing:
        activations = tokens * shape.num_layers * shape.hidden_size * CHECKPOINT_BYTES_PER_TOKEN_HIDDEN + one_layer
        notes.append(f"gradient checkpointing: one bf16 hidden state per layer per token, plus one layer's full "
                     f"activations while it is recomputed ({per_device_batch} x {seq} tokens per micro-batch)")
    else:
        activations = shape.num_layers * one_layer
        notes.append(f"no gradient checkpointing: every layer keeps its activations ({per_device_batch} x {seq} "
                     "tokens per micro-batch)")
    notes.append("activation coefficients from Korthikanti et al. 2022 (34*hidden + 5*heads*seq bytes per token "
                 "per layer, bf16); " + ("the attention-score term is dropped (flash attention)" if flash_attention
                                         else "no flash-attention correction: the score term is kept"))

    # LM head / log-probs of the completion tokens.
    completion_tokens = per_device_batch * completion_len
    if fused_lm_head:
        tile = (min(completion_tokens, FUSED_LM_HEAD_TOKEN_TILE) * min(shape.vocab_size, FUSED_LM_HEAD_VOCAB_TILE)
                * BF16_BYTES)
        grad_hidden = completion_tokens * shape.hidden_size * FUSED_LM_HEAD_GRAD_BYTES
        grad_head = shape.embedding_params * FUSED_LM_HEAD_GRAD_BYTES if deepspeed and not lora else 0
        gathered_head = shape.embedding_params * WEIGHT_BYTES_PER_PARAM if zero_stage >= 3 else 0
        logits = tile + grad_hidden + grad_head + gathered_head
        notes.append("TRL 1.16 fused LM head: logits are computed in tiles, never as (batch, seq, vocab); its "
                     "backward keeps fp32 hidden-state" + (" and LM-head weight" if grad_head else "") + " gradients")
    else:
        logits = completion_tokens * shape.vocab_size * MATERIALIZED_LOGITS_BYTES
        notes.append("materialised logits: batch x completion x vocab x 4 bytes")

    # Generation: vLLM (its share of the GPU, or its own GPUs) or transformers on the training GPU.
    sequences = per_device_batch * gradient_accumulation_steps  # this GPU's generation batch
    generation_mem = 0.0
    if generation == "transformers":
        vllm, required = 0.0, 0.0
        kv = sequences * seq * shape.kv_cache_bytes_per_token()
        prefill = sequences * prompt_len * shape.hidden_size * GENERATION_BYTES_PER_PROMPT_TOKEN_HIDDEN
        generation_mem = kv + prefill
        notes.append(f"transformers generation on this GPU: bf16 KV cache of {sequences} sequences x {seq} tokens "
                     f"plus the prefill's working memory (fitted); no vLLM")
    elif vllm_mode == "colocate":
        vllm = vllm_gpu_memory_utilization * gpu_memory_gb * GIB
        required = vllm_required_gib(shape, sequences=sequences, seq_len=seq)
        notes.append(f"vLLM colocated: {vllm_gpu_memory_utilization:g} of the GPU; it needs {required:.1f} GiB "
                     "(bf16 weights, the KV cache of this GPU's generation batch, runtime)")
    else:
        vllm, required = 0.0, 0.0
        notes.append("vLLM in server mode on its own GPUs: nothing on the training GPUs")
    notes.append("peak = what is held throughout + the larger of the training phase (gradients, autocast casts, "
                 "activations, LM head) and the generation phase")

    allocated = (weights / shard_weights + optimizer / shard_optimizer + reference + zero3_gather
                 + max(grads / shard_grads + autocast_cache + activations + logits, generation_mem))
    overhead = CUDA_CONTEXT_GIB * GIB + ALLOCATOR_FRAGMENTATION_FRACTION * allocated
    if gpus > 1:
        overhead += NCCL_BUFFERS_GIB * GIB
    generation_batch = per_device_batch * gradient_accumulation_steps * gpus
    if generation_batch % num_generations:
        notes.append(f"warning: per-device {per_device_batch} x accumulation {gradient_accumulation_steps} x "
                     f"{gpus} GPU(s) = {generation_batch} is not divisible by num_generations={num_generations}")
    notes.append("num_generations does not change per-GPU memory: per_device_batch counts completions")
    notes.append(f"GPU capacity: the nominal {gpu_memory_gb:g} GB is compared as GiB (an '80 GB' GPU reports "
                 "about 79.6 GiB)")

    settings = {
        "gpus": gpus, "lora": lora, "gradient_checkpointing": gradient_checkpointing, "zero_stage": zero_stage,
        "per_device_batch": per_device_batch, "prompt_len": prompt_len, "completion_len": completion_len,
        "num_generations": num_generations, "beta": beta, "vllm_mode": vllm_mode,
        "vllm_gpu_memory_utilization": vllm_gpu_memory_utilization,
        "gradient_accumulation_steps": gradient_accumulation_steps, "generation": generation,
    }
    return MemoryEstimate(
        label=shape.label, gpu_memory_gb=gpu_memory_gb,
        policy_weights_gib=weights / shard_weights / GIB,
        gradients_gib=grads / shard_grads / GIB,
        optimizer_gib=optimizer / shard_optimizer / GIB,
        reference_gib=reference / GIB,
        zero3_gather_gib=zero3_gather / GIB,
        activations_gib=activations / GIB,
        logits_gib=logits / GIB,
        vllm_gib=vllm / GIB,
        overhead_gib=overhead / GIB,
        autocast_cache_gib=autocast_cache / GIB,
        generation_gib=generation_mem / GIB,
        vllm_required_gib=required,
        settings=settings, notes=notes)


def estimate_config(shape: ModelShape | str, config: Any, *, gpu_memory_gb: float, zero_stage: int = 0,
                    prompt_len: int = RECIPE_PROMPT_LEN) -> MemoryEstimate:
    """The estimate of exactly this run config (``trainer.config.RunConfig``: its GPUs, tuning, batch shape,
    lengths, beta, generation backend and vLLM settings); ``zero_stage`` is the launcher's setting."""
    return estimate(shape, gpus=config.num_gpus, gpu_memory_gb=gpu_memory_gb, lora=config.lora,
                    gradient_checkpointing=config.gradient_checkpointing, zero_stage=zero_stage,
                    per_device_batch=config.per_device_train_batch_size, prompt_len=prompt_len,
                    completion_len=config.max_completion_length, num_generations=config.num_generations,
                    beta=config.beta, vllm_mode=config.vllm_mode,
                    vllm_gpu_memory_utilization=config.vllm_gpu_memory_utilization,
                    gradient_accumulation_steps=config.gradient_accumulation_steps, lora_rank=config.lora_r,
                    generation=config.generation)


# ---------------------------------------------------------------------------
# Recommendation
# ---------------------------------------------------------------------------


@dataclass
class Plan:
    """A layout for the recipe on ``gpus`` GPUs, with its estimate (of one training GPU)."""

    shape: ModelShape
    gpus: int
    gpu_memory_gb: float
    training_gpus: int
    vllm_mode: str
    vllm_gpus: int                 # GPUs of the vLLM server (0 when colocated)
    vllm_tensor_parallel_size: int
    vllm_data_parallel_size: int
    vllm_gpu_memory_utilization: float  # colocated share, or the server's --gpu-memory-utilization
    lora: bool
    zero_stage: int
    gradient_checkpointing: bool
    per_device_train_batch_size: int
    gradient_accumulation_steps: int
    num_generations: int
    estimate: MemoryEstimate
    vllm_server_gib: float | None  # per vLLM-server GPU; None when colocated
    fits: bool
    reason: str = ""               # why it does not fit ("" when it does)
    notes: list[str] = field(default_factory=list)
    generation: str = "vllm"       # or "transformers": every GPU trains and generates, no vLLM

    def as_run_config_changes(self) -> dict[str, Any]:
        """Keys of ``trainer.config.RunConfig`` (``zero_stage`` is not one: it is the launcher's setting)."""
        changes: dict[str, Any] = {
            "num_gpus": self.training_gpus,
            "lora": self.lora,
            "gradient_checkpointing": self.gradient_checkpointing,
            "per_device_train_batch_size": self.per_device_train_batch_size,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
        }
        if self.generation == "vllm":
            changes.update(vllm_mode=self.vllm_mode, vllm_gpu_memory_utilization=self.vllm_gpu_memory_utilization)
        return changes

    @property
    def batch_shape(self) -> str:
        return (f"{self.per_device_train_batch_size} x {self.gradient_accumulation_steps} x {self.training_gpus}, "
                f"{self.num_generations} gen")

    @property
    def vllm_layout(self) -> str:
        if self.generation == "transformers":
            return "none (transformers generation)"
        if self.vllm_mode == "colocate":
            return f"colocate ({self.vllm_gpu_memory_utilization:.2f})"
        layout = f"server ({self.vllm_gpus} GPU{'s' if self.vllm_gpus > 1 else ''}"
        if self.vllm_tensor_parallel_size > 1:
            layout += f", TP {self.vllm_tensor_parallel_size}"
        if self.vllm_data_parallel_size > 1:
            layout += f", DP {self.vllm_data_parallel_size}"
        return layout + ")"


def _accumulation_for(per_device: int, training_gpus: int, num_generations: int) -> int:
    """Gradient accumulation keeping the recipe's completions per device per step, divisible by num_generations."""
    accum = math.ceil(RECIPE_PER_DEVICE_BATCH * RECIPE_GRADIENT_ACCUMULATION / per_device)
    while (per_device * accum * training_gpus) % num_generations:
        accum += 1
    return accum


def _colocate_utilizations(shape: ModelShape, gpu_memory_gb: float, seq_len: int) -> list[float]:
    """The recipe's share when vLLM fits in it, then the smallest share that holds vLLM."""
    need = vllm_required_gib(shape, sequences=RECIPE_PER_DEVICE_BATCH * RECIPE_GRADIENT_ACCUMULATION,
                             seq_len=seq_len)
    steps = math.ceil(need / gpu_memory_gb / COLOCATE_UTILIZATION_STEP - 1e-9)
    smallest = round(steps * COLOCATE_UTILIZATION_STEP, 4)
    if smallest > COLOCATE_MAX_UTILIZATION:
        return []
    return sorted({max(COLOCATE_DEFAULT_UTILIZATION, smallest), smallest}, reverse=True)


def _server_layout(shape: ModelShape, gpus: int, gpu_memory_gb: float, seq_len: int):
    """(vllm_gpus, tp, dp, per-GPU GiB) of the smallest vLLM server that holds the model, or None."""
    base = 1 if gpus <= SMALL_NODE_GPUS else max(1, gpus // LARGE_NODE_VLLM_SHARE)
    budget = VLLM_SERVER_GPU_MEMORY_UTILIZATION * gpu_memory_gb
    for tp in VLLM_TENSOR_PARALLEL_SIZES:
        if shape.num_heads % tp:
            continue
        vllm_gpus = math.ceil(max(base, tp) / tp) * tp
        training = gpus - vllm_gpus
        if training < 1:
            break
        sequences = RECIPE_PER_DEVICE_BATCH * RECIPE_GRADIENT_ACCUMULATION * training
        dp = vllm_gpus // tp
        need = vllm_required_gib(shape, sequences=sequences, seq_len=seq_len, tensor_parallel=tp, data_parallel=dp)
        if need <= budget:
            return vllm_gpus, tp, dp, need
    return None


def _search(shape: ModelShape, gpus: int, gpu_memory_gb: float, *, prompt_len: int, completion_len: int,
            num_generations: int, beta: float, allow_lora: bool = True,
            generation: str = "vllm") -> tuple[Plan | None, Plan | None, str]:
    """(the first fitting plan, the most frugal plan tried, why nothing fits)."""
    seq = prompt_len + completion_len
    if generation == "transformers":  # every GPU trains and generates; the vLLM settings are unused
        vllm_mode, training, vllm_gpus, tp, dp, server_gib = "server", gpus, 0, 1, 1, None
        utilizations = [0.0]
    elif gpus == 1:
        utilizations = _colocate_utilizations(shape, gpu_memory_gb, seq)
        if not utilizations:
            return None, None, (f"colocated vLLM alone needs more than {COLOCATE_MAX_UTILIZATION:g} of a "
                                f"{gpu_memory_gb:g} GB GPU")
        vllm_mode, training, vllm_gpus, tp, dp, server_gib = "colocate", 1, 0, 1, 1, None
    else:
        layout = _server_layout(shape, gpus, gpu_memory_gb, seq)
        if layout is None:
            return None, None, (f"a vLLM server holding the {shape.label} weights and KV cache leaves no training "
                                f"GPU of {gpus}")
        vllm_gpus, tp, dp, server_gib = layout
        vllm_mode, training = "server", gpus - vllm_gpus
        utilizations = [VLLM_SERVER_GPU_MEMORY_UTILIZATION]
    zero_stages = (0,) if training == 1 else (2, 3)
    last: Plan | None = None
    for lora in (False, True) if allow_lora else (False,):
        for per_device in MICRO_BATCH_LADDER:
            for zero in zero_stages:
                for utilization in utilizations:
                    accum = _accumulation_for(per_device, training, num_generations)
                    est = estimate(shape, gpus=training, gpu_memory_gb=gpu_memory_gb, lora=lora,
                                   gradient_checkpointing=True, zero_stage=zero, per_device_batch=per_device,
                                   prompt_len=prompt_len, completion_len=completion_len,
                                   num_generations=num_generations, beta=beta, vllm_mode=vllm_mode,
                                   vllm_gpu_memory_utilization=utilization, gradient_accumulation_steps=accum,
                                   generation=generation)
                    last = Plan(shape=shape, gpus=gpus, gpu_memory_gb=gpu_memory_gb, training_gpus=training,
                                vllm_mode=vllm_mode, vllm_gpus=vllm_gpus, vllm_tensor_parallel_size=tp,
                                vllm_data_parallel_size=dp, vllm_gpu_memory_utilization=utilization, lora=lora,
                                zero_stage=zero, gradient_checkpointing=True, per_device_train_batch_size=per_device,
                                gradient_accumulation_steps=accum, num_generations=num_generations, estimate=est,
                                vllm_server_gib=server_gib, fits=_fits_with_headroom(est), generation=generation)
                    if last.fits:
                        return last, last, ""
    assert last is not None
    headroom = (f"{last.estimate.total_gib:.1f} GiB per training GPU leaves less than "
                f"{RECOMMEND_HEADROOM_FRACTION:.0%} of {gpu_memory_gb:g} GB free")
    problems = last.estimate.problems or [headroom]
    tried = "LoRA" if allow_lora else "full fine-tuning"
    return None, last, "; ".join(problems) + f" even with {tried}, ZeRO and a micro-batch of 1"


def _fits_with_headroom(est: MemoryEstimate) -> bool:
    return est.fits and est.total_gib <= (1 - RECOMMEND_HEADROOM_FRACTION) * est.gpu_memory_gb


def _plan_notes(plan: Plan) -> list[str]:
    notes = []
    if plan.generation == "transformers":
        notes.append(f"transformers generation on the {plan.training_gpus} training GPU(s): no vLLM")
    elif plan.vllm_mode == "server":
        notes.append(f"vLLM server on {plan.vllm_gpus} GPU(s) (tensor parallel {plan.vllm_tensor_parallel_size}, "
                     f"data parallel {plan.vllm_data_parallel_size}): about {plan.vllm_server_gib:.1f} GiB per GPU "
                     f"of its {VLLM_SERVER_GPU_MEMORY_UTILIZATION:g} x {plan.gpu_memory_gb:g} GB budget; start it "
                     f"with trl vllm-serve --tensor-parallel-size {plan.vllm_tensor_parallel_size} "
                     f"--data-parallel-size {plan.vllm_data_parallel_size}; train on the other "
                     f"{plan.training_gpus}")
    else:
        notes.append(f"vLLM colocated with {plan.vllm_gpu_memory_utilization:g} of the GPU "
                     f"(needs {plan.estimate.vllm_required_gib:.1f} GiB)")
        if plan.vllm_gpu_memory_utilization != COLOCATE_DEFAULT_UTILIZATION:
            notes.append(f"vllm_gpu_memory_utilization changed from the default {COLOCATE_DEFAULT_UTILIZATION:g}")
    notes.append("LoRA: full fine-tuning does not fit" if plan.lora else "full fine-tuning")
    if plan.per_device_train_batch_size != RECIPE_PER_DEVICE_BATCH:
        notes.append(f"micro-batch lowered to {plan.per_device_train_batch_size}; gradient accumulation raised to "
                     f"{plan.gradient_accumulation_steps} to keep the completions per optimizer step")
    return notes


def recommend(shape: ModelShape | str, *, gpus: int, gpu_memory_gb: float, prompt_len: int = RECIPE_PROMPT_LEN,
              completion_len: int = RECIPE_COMPLETION_LEN, num_generations: int = RECIPE_NUM_GENERATIONS,
              beta: float = RECIPE_BETA, allow_lora: bool = True, generation: str = "vllm") -> Plan:
    """The cheapest layout of the recipe that fits ``gpus`` GPUs of ``gpu_memory_gb`` each.

    vLLM colocates on one GPU and runs as a server on its own GPUs otherwise; full fine-tuning before LoRA; then
    the recipe's micro-batch before smaller ones (gradient accumulation raised to keep the completions per step);
    for each micro-batch, ZeRO 0 on one training GPU, else 2 before 3, and the colocated vLLM share at the recipe's
    0.3 before the smallest share that holds vLLM. A layout
    fits when its estimate leaves RECOMMEND_HEADROOM_FRACTION of the GPU free. When nothing fits, ``fits`` is False,
    ``reason`` says why and how many GPUs would do, and the plan is the most frugal layout tried.
    ``allow_lora=False`` considers full fine-tuning only. ``generation="transformers"``: no vLLM, every GPU trains.
    """
    shape = _shape(shape)
    if gpus < 1:
        raise ValueError("gpus must be positive")
    if generation not in ("vllm", "transformers"):
        raise ValueError(f"generation must be vllm or transformers, not {generation!r}")
    kw = {"prompt_len": prompt_len, "completion_len": completion_len, "num_generations": num_generations, "beta": beta,
          "generation": generation}
    plan, frugal, why = _search(shape, gpus, gpu_memory_gb, allow_lora=allow_lora, **kw)
    if plan is not None:
        plan.notes = _plan_notes(plan)
        plan.estimate.notes.extend(f"plan: {note}" for note in plan.notes)  # so render_estimate shows the layout
        return plan
    more = gpus * 2
    while more <= MAX_GPUS_SEARCHED and _search(shape, more, gpu_memory_gb, allow_lora=allow_lora, **kw)[0] is None:
        more *= 2
    need = (f"{shape.label} needs at least {more} x {gpu_memory_gb:g} GB GPUs" if more <= MAX_GPUS_SEARCHED
            else f"{shape.label} does not fit {MAX_GPUS_SEARCHED} x {gpu_memory_gb:g} GB GPUs")
    reason = f"{need} ({gpus}: {why})"
    if frugal is None:
        est = estimate(shape, gpus=1, gpu_memory_gb=gpu_memory_gb, lora=True, per_device_batch=1,
                       vllm_mode="colocate" if gpus == 1 else "server", **kw)  # only vLLM layouts end here
        frugal = Plan(shape=shape, gpus=gpus, gpu_memory_gb=gpu_memory_gb, training_gpus=max(1, gpus - 1),
                      vllm_mode=est.settings["vllm_mode"], vllm_gpus=0 if gpus == 1 else 1,
                      vllm_tensor_parallel_size=1, vllm_data_parallel_size=1,
                      vllm_gpu_memory_utilization=(COLOCATE_DEFAULT_UTILIZATION if gpus == 1
                                                   else VLLM_SERVER_GPU_MEMORY_UTILIZATION),
                      lora=True, zero_stage=0,
                      gradient_checkpointing=True, per_device_train_batch_size=1,
                      gradient_accumulation_steps=_accumulation_for(1, max(1, gpus - 1), num_generations),
                      num_generations=num_generations, estimate=est, vllm_server_gib=None, fits=False)
    frugal.generation = generation
    frugal.fits = False
    frugal.reason = reason
    frugal.notes = [reason]
    frugal.estimate.notes.append(f"plan: {reason}")
    return frugal


# ---------------------------------------------------------------------------
# Tables and rendering
# ---------------------------------------------------------------------------


def table(gpu_memory_gb: float = 80, gpu_counts: tuple[int, ...] = (1, 2, 4, 8), *,
          allow_lora: bool = True) -> list[dict[str, Any]]:
    """Per size class: the smallest GPU count of ``gpu_counts`` where ``recommend`` fits, with its plan (or the
    plan at the largest count, not fitting). ``allow_lora=False``: full fine-tuning only."""
    rows = []
    for label, shape in SIZE_CLASSES.items():
        plan = None
        for count in sorted(gpu_counts):
            plan = recommend(shape, gpus=count, gpu_memory_gb=gpu_memory_gb, allow_lora=allow_lora)
            if plan.fits:
                break
        assert plan is not None
        rows.append({"size": label, "params_b": shape.params_b, "gpus": plan.gpus, "plan": plan, "fits": plan.fits,
                         "total_gib": plan.estimate.total_gib, "gpu_memory_gb": gpu_memory_gb})
    return rows


def render_table(rows: list[dict[str, Any]]) -> str:
    """The rows of ``table`` as a Markdown table."""
    header = ("| size | params | GPUs | vLLM | tuning | ZeRO | grad ckpt | batch (per-device x accum x GPUs, "
              "generations) | per-GPU estimate, GiB (largest terms) | fits |")
    lines = [header, "|" + "---|" * header.count(" | ") + "---|"]
    for row in rows:
        plan: Plan = row["plan"]
        est = plan.estimate
        largest = ", ".join(f"{name} {gib:.1f}" for name, gib in est.largest(3))
        fits = "yes" if plan.fits else f"no: {plan.reason}"
        lines.append(f"| {row['size']} | {row['params_b']:.2f}B | {plan.gpus} | {plan.vllm_layout} | "
                     f"{'LoRA' if plan.lora else 'full'} | {plan.zero_stage} | "
                     f"{'on' if plan.gradient_checkpointing else 'off'} | {plan.batch_shape} | "
                     f"{est.total_gib:.1f} of {plan.gpu_memory_gb:g} ({largest}) | {fits} |")
    return "\n".join(lines)


def render_estimate(estimate: MemoryEstimate) -> str:
    """Plain-text breakdown of one estimate."""
    s = estimate.settings
    tuning = "LoRA" if s.get("lora") else "full fine-tuning"
    title = (f"{estimate.label} class, per training GPU ({s.get('gpus')} training GPU(s), {tuning}, "
             f"ZeRO-{s.get('zero_stage')}, "
             + ("transformers generation" if s.get("generation") == "transformers" else f"vLLM {s.get('vllm_mode')}")
             + f", micro-batch {s.get('per_device_batch')} x "
             f"{s.get('prompt_len', 0) + s.get('completion_len', 0)} tokens):")
    lines = [title]
    width = max(len(name) for name in COMPONENT_NAMES.values())
    for name, gib in estimate.components().items():
        lines.append(f"  {name:<{width}}  {gib:7.2f} GiB")
    verdict = "fits" if estimate.fits else "does NOT fit: " + "; ".join(estimate.problems)
    lines.append(f"  {'total':<{width}}  {estimate.total_gib:7.2f} GiB of {estimate.gpu_memory_gb:g} -> {verdict}")
    lines.append("Assumptions (an estimate from a stated model, not a measurement):")
    lines.extend(f"  - {note}" for note in estimate.notes)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainer.memory",
                                     description="GRPO recipe memory estimate per model size class (Markdown).")
    parser.add_argument("--gpu-memory", type=float, default=80.0, help="memory of one GPU in GB (default 80)")
    parser.add_argument("--gpu-counts", default="1,2,4,8", help="GPU counts to try, comma-separated")
    parser.add_argument("--size", help="print one size class's plan and breakdown instead (e.g. 7B)")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs for --size (default 1)")
    parser.add_argument("--full-only", action="store_true", help="consider full fine-tuning only (no LoRA)")
    args = parser.parse_args(argv)
    if args.size:
        try:
            plan = recommend(parse_size(args.size), gpus=args.gpus, gpu_memory_gb=args.gpu_memory,
                             allow_lora=not args.full_only)
        except ValueError as exc:
            parser.error(str(exc))
        print(f"Plan for {args.size} on {args.gpus} x {args.gpu_memory:g} GB: "
              + ("fits" if plan.fits else f"does not fit: {plan.reason}"))
        for note in plan.notes:
            print(f"  - {note}")
        print(f"RunConfig changes: {plan.as_run_config_changes()}; ZeRO stage {plan.zero_stage}")
        print(render_estimate(plan.estimate))
        return 0
    counts = tuple(int(c) for c in args.gpu_counts.split(",") if c.strip())
    print(render_table(table(args.gpu_memory, counts, allow_lora=not args.full_only)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
