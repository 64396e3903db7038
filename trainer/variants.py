"""GRPO variant presets: named sets of GRPOConfig values, each chosen for a named reason.

The base recipe is plain GRPO (``trainer/config.py``). A preset is applied on top
of it only when a run misbehaves in a way the preset addresses (``trainer
diagnose`` names the symptom); ``RunConfig.validate`` records it as a deviation
with the preset's reason. Every value here is a GRPOConfig field of TRL 1.16,
and every preset trains (tests/unit/test_variants.py runs one step of each).

What TRL 1.16 does not offer, and so no preset here pretends to:
- DAPO's *dynamic sampling* (dropping and re-sampling zero-variance groups):
  not implemented by GRPOTrainer. Filter prompts by pass rate offline instead.
- DAPO's *soft overlong punishment* is a reward function
  (``trl.rewards.get_soft_overlong_punishment``), not a config value; our reward
  list is the verifier's format + correctness, so it is not wired in.
- ``loss_type="bnpo"`` in TRL normalises the token losses by the local batch's
  active tokens; it does not implement the BNPO paper's Beta-distribution reward
  normalisation, whose name TRL borrows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from trainer.errors import ConfigError


@dataclass(frozen=True)
class Paper:
    title: str
    arxiv: str

    def __str__(self) -> str:
        return f"{self.title} (arXiv:{self.arxiv})"


@dataclass(frozen=True)
class Variant:
    """One preset: what it changes, when to choose it, and where it comes from."""

    name: str
    description: str
    reason: str  # the symptom it answers, in one line (recorded as the deviation's reason)
    paper: Paper
    grpo_overrides: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""  # what the preset leaves out or needs, in TRL 1.16

    def __post_init__(self) -> None:
        object.__setattr__(self, "grpo_overrides", MappingProxyType(dict(self.grpo_overrides)))

    def overrides_text(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.grpo_overrides.items())


DAPO_PAPER = Paper("DAPO: An Open-Source LLM Reinforcement Learning System at Scale", "2503.14476")
DR_GRPO_PAPER = Paper("Understanding R1-Zero-Like Training: A Critical Perspective", "2503.20783")
GSPO_PAPER = Paper("Group Sequence Policy Optimization", "2507.18071")
BNPO_PAPER = Paper("BNPO: Beta Normalization Policy Optimization", "2506.02864")
CISPO_PAPER = Paper("MiniMax-M1: Scaling Test-Time Compute Efficiently with Lightning Attention", "2506.13585")
SAPO_PAPER = Paper("Soft Adaptive Policy Optimization", "2511.20347")
LUSPO_PAPER = Paper("Length-Unbiased Sequence Policy Optimization: Revealing and Controlling Response Length "
                    "Variation in RLVR", "2602.05261")
VESPO_PAPER = Paper("VESPO: Variational Sequence-Level Soft Policy Optimization for Stable Off-Policy LLM Training",
                    "2602.10693")
LITE_PPO_PAPER = Paper("Part I: Tricks or Traps? A Deep Dive into RL for LLM Reasoning", "2508.08221")
GDPO_PAPER = Paper("GDPO: Group reward-Decoupled Normalization Policy Optimization for Multi-reward RL Optimization",
                   "2601.05242")
HIGH_ENTROPY_PAPER = Paper("Beyond the 80/20 Rule: High-Entropy Minority Tokens Drive Effective Reinforcement "
                           "Learning for LLM Reasoning", "2506.01939")

_PRESETS = (
    Variant(
        "dr_grpo",
        "Dr. GRPO: token losses summed and divided by a constant (max_completion_length), no std scaling",
        "length bias: per-sequence length normalisation rewards long wrong answers and std scaling "
        "over-weights too-easy/too-hard prompts",
        DR_GRPO_PAPER,
        {"loss_type": "dr_grpo", "scale_rewards": "none"},
    ),
    Variant(
        "dapo",
        "DAPO: token-level loss, clip-higher (epsilon 0.2 / epsilon_high 0.28), truncated completions masked",
        "entropy collapse and truncation noise: clip-higher leaves room for low-probability tokens to rise, "
        "overlong filtering stops truncated samples from being scored as failures",
        DAPO_PAPER,
        {"loss_type": "dapo", "epsilon": 0.2, "epsilon_high": 0.28, "mask_truncated_completions": True},
        note="dynamic sampling is not in TRL 1.16 (filter prompts by pass rate offline); soft overlong "
             "punishment is a reward function (trl.rewards.get_soft_overlong_punishment), not wired into our "
             "verifier rewards; the paper trains with beta=0, the recipe's beta stays",
    ),
    Variant(
        "gspo",
        "GSPO: sequence-level importance ratio (geometric mean over tokens), tight clip 3e-4 / 4e-4",
        "unstable off-policy updates (clipped tokens, KL spikes, MoE models): one ratio per sequence matches "
        "the sequence-level reward",
        GSPO_PAPER,
        {"importance_sampling_level": "sequence", "loss_type": "grpo", "epsilon": 3e-4, "epsilon_high": 4e-4},
        note="acts only when training is off-policy (num_iterations > 1 or steps_per_generation > "
             "gradient_accumulation_steps, or vLLM sampling mismatch); on-policy it equals GRPO",
    ),
    Variant(
        "bnpo",
        "TRL's bnpo loss: token losses normalised by the active tokens of the local batch",
        "length bias without DAPO's global token count: every token weighs the same within a micro-batch",
        BNPO_PAPER,
        {"loss_type": "bnpo"},
        note="TRL names this loss after BNPO but does not implement the paper's Beta-distribution reward "
             "normalisation; with per_device_train_batch_size=1 it equals grpo",
    ),
    Variant(
        "cispo",
        "CISPO: clips the importance weight (epsilon_high 5.0) instead of the update, so no token loses its gradient",
        "clipping dominates: PPO-style clipping drops the gradient of rare high-ratio tokens (the reasoning forks)",
        CISPO_PAPER,
        {"loss_type": "cispo", "epsilon_high": 5.0},
    ),
    Variant(
        "sapo",
        "SAPO: a smooth temperature-controlled gate instead of hard clipping",
        "hard clipping is brittle (many clipped tokens, unstable ratios): a soft trust region attenuates "
        "off-policy tokens without zeroing them",
        SAPO_PAPER,
        {"loss_type": "sapo"},
    ),
    Variant(
        "luspo",
        "LUSPO: GSPO's sequence-level ratio with each sequence's loss scaled by its length",
        "completion length collapsing under sequence-level ratios (GSPO): removes GSPO's length bias",
        LUSPO_PAPER,
        {"loss_type": "luspo", "importance_sampling_level": "sequence"},
    ),
    Variant(
        "vespo",
        "VESPO: a closed-form soft reshaping of sequence-level importance weights",
        "severely off-policy or stale rollouts: variance-reduced sequence weights keep training stable",
        VESPO_PAPER,
        {"loss_type": "vespo", "vllm_importance_sampling_mode": "token_truncate"},
        note="TRL 1.16 refuses vespo with vLLM's sequence-level importance-sampling modes: the preset sets "
             "token_truncate",
    ),
    Variant(
        "lite_ppo",
        "Lite PPO: rewards scaled by the batch's std, token-level loss",
        "many groups with zero or tiny variance: group-std scaling blows small differences up; batch std is robust",
        LITE_PPO_PAPER,
        {"scale_rewards": "batch", "loss_type": "dapo"},
    ),
    Variant(
        "gdpo",
        "GDPO: each reward function normalised within its group before the weighted sum",
        "composite reward where one component (format) drowns the other (correctness) in the summed advantage",
        GDPO_PAPER,
        {"multi_objective_aggregation": "normalize_then_sum"},
    ),
    Variant(
        "high_entropy",
        "80/20 rule: policy gradient only on the top 20% highest-entropy tokens",
        "entropy collapse / low-entropy tokens dominating the update: train the forking tokens only",
        HIGH_ENTROPY_PAPER,
        {"top_entropy_quantile": 0.2},
    ),
)

VARIANTS: Mapping[str, Variant] = MappingProxyType({v.name: v for v in _PRESETS})


def get_variant(name: str) -> Variant:
    """The preset called ``name``; an unknown name is refused with the valid ones listed."""
    try:
        return VARIANTS[name]
    except KeyError:
        raise ConfigError(f"unknown variant {name!r}; valid: {', '.join(VARIANTS)}") from None


def grpo_config_fields(trainer: str = "grpo") -> set[str]:
    """The keyword values the trainer's config takes: GRPOConfig, or AsyncGRPOConfig for ``async_grpo``."""
    if trainer == "async_grpo":
        from trl.experimental.async_grpo import AsyncGRPOConfig

        return set(AsyncGRPOConfig.__dataclass_fields__)
    from trl import GRPOConfig

    return set(GRPOConfig.__dataclass_fields__)


def check_overrides(overrides: Mapping[str, Any], owned: set[str], trainer: str = "grpo") -> None:
    """Refuses keys the trainer's config (GRPOConfig, or AsyncGRPOConfig) does not have and keys the run config
    sets itself."""
    if not isinstance(overrides, Mapping):
        raise ConfigError("grpo_overrides must be a mapping of GRPOConfig keyword values")
    known = grpo_config_fields(trainer)
    unknown = sorted(k for k in overrides if k not in known)
    if unknown:
        import difflib

        hints = [f"{k} (did you mean {', '.join(m)}?)" if (m := difflib.get_close_matches(k, known, n=2)) else k
                 for k in unknown]
        raise ConfigError(f"grpo_overrides: not GRPOConfig field(s) of this TRL: {'; '.join(hints)}")
    shadowed = sorted(k for k in overrides if k in owned)
    if shadowed:
        raise ConfigError(f"grpo_overrides: {', '.join(shadowed)} is a run config setting of its own: set it "
                          "there (so validate() can check it and record the deviation)")


__all__ = ["VARIANTS", "Paper", "Variant", "check_overrides", "get_variant"]
