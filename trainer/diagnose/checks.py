"""``trainer diagnose RUN_DIR``: name what a GRPO run did wrong, from its own metrics, and propose a change.

Start from the base recipe; change to a variant only for a reason you can name.
Each check reads TRL's log history (``run.json``'s ``log_history``, or a
checkpoint's ``trainer_state.json``) and, when it fires, returns a ``Finding``:
the evidence (which metric, which steps, which threshold), a patch of the run
config that addresses it (a preset of ``trainer/variants.py``, GRPOConfig
values under ``grpo_overrides``, or a run-config setting), the reason and the
paper. Two findings carry no patch on purpose: a reward-hacking smell sends
the user back to the inspection gate, and infrastructure noise points at the
verifier; no optimiser setting fixes either.

A check that lacks the metrics it needs (or enough logged steps for a trend)
is skipped and says so: no finding is never silently "healthy" for a metric
that was not logged.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainer.errors import ConfigError, TrainerError
from trainer.variants import DAPO_PAPER, DR_GRPO_PAPER, GSPO_PAPER, Paper, get_variant

CRITICAL, WARNING = "critical", "warning"
CORRECTNESS_KEY = "rewards/verifier_correctness/mean"
FORMAT_KEY = "rewards/verifier_format/mean"
RECIPE_BETA_MAX = 0.04  # top of the recipe's settled beta range (trainer/config.py SETTLED_BETA)


@dataclass(frozen=True)
class Thresholds:
    """When a check fires. Every value is named in the evidence of the finding it triggers.

    Windows: the *early* and *late* windows are the first and last ``window``
    share of the logged steps, at least ``min_window`` steps each (at most half
    the steps); trend checks compare their means and need ``min_points`` logged
    steps, since one logged batch's prompt mix can move a mean by itself.
    """

    window: float = 0.25
    min_window: int = 2
    min_points: int = 6
    # no learning signal: the share of groups whose rewards are all equal (TRL's frac_reward_zero_std)
    zero_std_frac: float = 0.5       # "most groups"
    zero_std_severe: float = 0.9
    all_fail_reward: float = 0.05    # correctness mean at or below this: the groups fail together
    all_pass_reward: float = 0.95    # at or above this: they pass together
    # length
    length_growth: float = 1.5       # late / early completions/mean_length
    # truncation: completions/clipped_ratio = share of completions cut at max_completion_length
    clipped_ratio: float = 0.2
    clipped_severe: float = 0.5      # above this, masking alone leaves too few samples: raise the limit too
    # entropy (nats per token)
    entropy_drop: float = 0.3        # late / early entropy below this ratio
    entropy_floor: float = 0.05      # or late entropy below this, having started above it
    # KL against the reference policy
    kl_max: float = 0.5              # late-window mean
    kl_spike: float = 10.0           # a step's kl this many times the median of the 5 steps before it ...
    kl_spike_min: float = 0.1        # ... and at least this large
    # importance-ratio clipping: share of tokens clipped (clip_ratio/region_mean, or cispo_clip_ratio)
    clip_region: float = 0.1
    # reward hacking smell
    reward_rise: float = 0.1         # late - early of the total reward that counts as "rising"
    correctness_rise: float = 0.02   # a correctness signal rising less than this is "flat"
    # infrastructure
    infra_frac: float = 0.02         # mean share of samples judged INFRA_ERROR
    infra_severe: float = 0.1

    def override(self, changes: dict[str, str]) -> Thresholds:
        known = {f.name: f for f in dataclasses.fields(self)}
        values = {}
        for name, text in changes.items():
            if name not in known:
                raise ConfigError(f"unknown threshold {name!r}; valid: {', '.join(known)}")
            try:
                values[name] = int(text) if known[name].type == "int" else float(text)
            except ValueError:
                raise ConfigError(f"threshold {name} must be a number, not {text!r}") from None
        return dataclasses.replace(self, **values)


@dataclass
class Finding:
    name: str
    severity: str
    summary: str
    evidence: list[str]
    patch: dict[str, Any]      # RunConfig changes: {"variant": ...}, {"grpo_overrides": {...}}, {"beta": ...}
    reason: str                # why the patch addresses the symptom
    paper: Paper | None = None
    action: str = ""           # what to do beyond (or instead of) the patch

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["paper"] = {"title": self.paper.title, "arxiv": self.paper.arxiv} if self.paper else None
        return data


@dataclass
class Diagnosis:
    findings: list[Finding]
    skipped: dict[str, str] = field(default_factory=dict)  # check -> why it could not run
    ran: int = 0  # checks that looked at the run (a finding or none); 0: nothing was diagnosed

    @property
    def healthy(self) -> bool:
        """No finding, from at least one check that ran (a run where every check was skipped is not healthy)."""
        return not self.findings and self.ran > 0


# ---- series and windows ---------------------------------------------------------------

Points = list[tuple[int, float]]


def series(history: Iterable[dict[str, Any]], key: str) -> Points:
    """(step, value) of every log entry holding a finite ``key``."""
    out: Points = []
    for i, entry in enumerate(history):
        value = entry.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out.append((int(entry.get("step", i)), float(value)))
    return out


def _mean(points: Points) -> float:
    return sum(v for _, v in points) / len(points)


def _windows(points: Points, t: Thresholds) -> tuple[Points, Points]:
    w = max(1, min(len(points) // 2, max(t.min_window, int(len(points) * t.window))))
    return points[:w], points[-w:]


def _steps(points: Points, limit: int = 8) -> str:
    steps = [s for s, _ in points]
    if not steps:
        return "none"
    if len(steps) > 2 and steps == list(range(steps[0], steps[0] + len(steps))):
        return f"{steps[0]}-{steps[-1]}"
    text = ", ".join(str(s) for s in steps[:limit])
    return text + (f", ... ({len(steps)} steps)" if len(steps) > limit else "")


def _span(points: Points) -> str:
    return f"step {points[0][0]}" if len(points) == 1 else f"steps {_steps(points)}"


def _first_key(history: Sequence[dict[str, Any]], preferred: str, predicate: Callable[[str], bool]) -> str | None:
    keys = {k for entry in history for k in entry}
    if preferred in keys:
        return preferred
    matches = sorted(k for k in keys if predicate(k))
    return matches[0] if matches else None


def _correctness_key(history: Sequence[dict[str, Any]]) -> str | None:
    return _first_key(history, CORRECTNESS_KEY,
                      lambda k: k.startswith("rewards/") and "correct" in k and k.endswith("/mean"))


def _heldout_keys(history: Sequence[dict[str, Any]]) -> list[str]:
    """Held-out correctness metrics: eval_* (TRL's eval prefix) or eval/* keys that name a pass rate or correctness."""
    keys = {k for entry in history for k in entry}
    return sorted(k for k in keys if (k.startswith(("eval_", "eval/")))
                  and ("pass" in k or "correct" in k or "accuracy" in k) and not k.endswith("/std"))


# ---- the run's settings, when known ----------------------------------------------------


@dataclass
class Context:
    config: dict[str, Any] | None

    def get(self, name: str, default: Any = None) -> Any:
        return (self.config or {}).get(name, default)

    def effective(self) -> dict[str, Any]:
        """The GRPOConfig values the run trained with ({} when its config is unknown or invalid)."""
        if not self.config:
            return {}
        from trainer.config import RunConfig

        try:
            return RunConfig.from_dict(self.config).to_grpo_kwargs()
        except TrainerError:
            return {}


# ---- the checks ------------------------------------------------------------------------


def check_infra_noise(history, t: Thresholds, ctx: Context) -> Finding | str | None:
    frac = series(history, "verifier/verdict/INFRA_ERROR")
    lost = series(history, "verifier/batch_lost")
    counts = series(history, "verifier/infra_errors")
    if not (frac or lost or counts):
        return "no verifier/* metrics logged (not our verifier rewards?)"
    evidence = []
    lost_steps = [(s, v) for s, v in lost if v > 0]
    fires = severe = bool(lost_steps)
    if lost_steps:
        evidence.append(f"verifier/batch_lost > 0 at {_span(lost_steps)}: whole batches unverified after retries "
                        "(threshold: any)")
    if frac:
        mean = _mean(frac)
        bad = [(s, v) for s, v in frac if v > 0]
        if mean > t.infra_frac:
            fires = True
            severe = severe or mean > t.infra_severe
            evidence.append(f"verifier/verdict/INFRA_ERROR: mean {mean:.1%} of samples over {len(frac)} logged steps "
                            f"> infra_frac={t.infra_frac:.0%}; non-zero at {_span(bad)} (max "
                            f"{max(v for _, v in bad):.1%})")
    elif any(v > 0 for _, v in counts):
        fires = True
        bad = [(s, v) for s, v in counts if v > 0]
        evidence.append(f"verifier/infra_errors > 0 at {_span(bad)} (max {max(v for _, v in bad):g} per batch; "
                        "threshold: any, the per-sample fraction was not logged)")
    if not fires:
        return None
    return Finding(
        "infra_noise", CRITICAL if severe else WARNING,
        "reward noise from verifier infrastructure errors",
        evidence, {},
        "an INFRA_ERROR sample scores None and leaves its group's mean, so groups shrink and baselines get noisy; "
        "no GRPO variant fixes a sandbox that cannot judge",
        action="Fix the verifier first: read the verifier service's log (sandbox failures, Docker, timeouts), "
               "check its health, give it capacity (max_concurrency) or a longer deadline (reward_timeout_s), "
               "then re-run before reading the other findings.")


def check_reward_hacking(history, t: Thresholds, ctx: Context) -> Finding | str | None:
    reward = series(history, "reward")
    if len(reward) < t.min_points:
        return f"needs {t.min_points} logged steps of reward, has {len(reward)}"
    early, late = _windows(reward, t)
    rise = _mean(late) - _mean(early)
    if rise < t.reward_rise:
        return None
    flat = []
    heldout = _heldout_keys(history)
    for key in heldout:
        points = series(history, key)
        if len(points) >= 2:
            e_early, e_late = _windows(points, t)
            e_rise = _mean(e_late) - _mean(e_early)
            if e_rise < t.correctness_rise:
                flat.append(f"held-out {key}: {_mean(e_early):.3f} -> {_mean(e_late):.3f} ({e_rise:+.3f} < "
                            f"correctness_rise={t.correctness_rise}) over {_span(points)}")
    key = _correctness_key(history)
    correctness = series(history, key) if key else []
    if len(correctness) >= t.min_points:
        c_early, c_late = _windows(correctness, t)
        c_rise = _mean(c_late) - _mean(c_early)
        if c_rise < t.correctness_rise:
            flat.append(f"{key}: {_mean(c_early):.3f} -> {_mean(c_late):.3f} ({c_rise:+.3f} < "
                        f"correctness_rise={t.correctness_rise}): the correctness reward does not rise")
    if not flat:
        if not heldout and not correctness:
            return "reward rises, but neither a correctness reward nor a held-out eval metric was logged to check it"
        return None
    evidence = [f"reward: {_mean(early):.3f} (early, {_span(early)}) -> {_mean(late):.3f} (late, {_span(late)}), "
                f"{rise:+.3f} >= reward_rise={t.reward_rise}", *flat]
    fmt = series(history, FORMAT_KEY)
    if len(fmt) >= t.min_points:
        f_early, f_late = _windows(fmt, t)
        evidence.append(f"{FORMAT_KEY}: {_mean(f_early):.3f} -> {_mean(f_late):.3f}: the format reward is what rises")
    passed = series(history, "verifier/verdict/PASSED")
    if len(passed) >= t.min_points:
        p_early, p_late = _windows(passed, t)
        evidence.append(f"verifier/verdict/PASSED: {_mean(p_early):.1%} -> {_mean(p_late):.1%} of samples")
    return Finding(
        "reward_hacking_smell", CRITICAL,
        "reward rises while correctness does not",
        evidence, {},
        "the model is optimising something the reward pays for that is not the task (here: most likely the format "
        "component); tuning the optimiser around an uninspected reward trains the wrong target faster",
        action="Back to the inspection gate: sample 50-100 completions of this run's latest checkpoint (trainer "
               "sample), score them with the reward and read them by hand (verifier-service inspect, then trainer "
               "gate inspect); fix the reward (or its weights) before any variant. Only once the reward is right "
               "is preset gdpo (format and correctness normalised apart) an option.")


def _more_generations_patch(ctx: Context) -> dict[str, Any]:
    """num_generations doubled, with gradient accumulation raised until every group stays complete."""
    current = int(ctx.get("num_generations", 8))
    new = current * 2
    patch: dict[str, Any] = {"num_generations": new}
    if ctx.config:
        bs = int(ctx.get("per_device_train_batch_size", 8))
        ga = int(ctx.get("gradient_accumulation_steps", 4))
        processes = 1 if ctx.get("use_cpu") else int(ctx.get("num_gpus", 1))
        new_ga = ga
        while (bs * new_ga * processes) % new:
            new_ga += ga
        if new_ga != ga:
            patch["gradient_accumulation_steps"] = new_ga
    return patch


def check_no_learning_signal(history, t: Thresholds, ctx: Context) -> Finding | str | None:
    zero = series(history, "frac_reward_zero_std")
    if not zero:
        return "frac_reward_zero_std not logged"
    overall = _mean(zero)
    _, late = _windows(zero, t)
    late_mean = _mean(late)
    if overall <= t.zero_std_frac and late_mean <= t.zero_std_frac:
        return None
    above = [(s, v) for s, v in zero if v > t.zero_std_frac]
    evidence = [f"frac_reward_zero_std: mean {overall:.2f} over {len(zero)} logged steps ({_span(zero)}), late window "
                f"{late_mean:.2f} ({_span(late)}) > zero_std_frac={t.zero_std_frac}; above it at {_span(above)}"]
    key = _correctness_key(history) or "reward"
    correctness = series(history, key)
    kind = "mixed"
    if correctness:
        c_late = _mean(_windows(correctness, t)[1])
        if c_late <= t.all_fail_reward:
            kind = "fail"
            evidence.append(f"{key}: {c_late:.3f} (late) <= all_fail_reward={t.all_fail_reward}: the groups fail "
                            "together")
        elif c_late >= t.all_pass_reward:
            kind = "pass"
            evidence.append(f"{key}: {c_late:.3f} (late) >= all_pass_reward={t.all_pass_reward}: the groups pass "
                            "together")
        else:
            evidence.append(f"{key}: {c_late:.3f} (late): groups are uniform but not all at one extreme")
    std = series(history, "reward_std")
    if std:
        evidence.append(f"reward_std: mean {_mean(std):.3f} over {_span(std)}")
    action = ("TRL 1.16 has no DAPO dynamic sampling (dropping zero-variance groups); do it offline: keep prompts "
              "whose pass rate over a few samples is strictly between 0 and 1. ")
    if kind == "fail":
        action += ("Groups that all fail mean the model does not yet succeed on these prompts: the method routes "
                   "back to SFT until the base success rate is non-zero; RL re-weights, it does not install a skill.")
    elif kind == "pass":
        action += "Groups that all pass mean the prompts are too easy for this model now: add harder ones."
    return Finding(
        "no_learning_signal", CRITICAL if late_mean > t.zero_std_severe else WARNING,
        "most groups have zero reward variance (all pass or all fail): no advantage, no gradient",
        evidence, _more_generations_patch(ctx),
        "a group whose completions all score the same has advantage 0 everywhere; more completions per prompt "
        "raise the chance that a group mixes passes and failures (a cost in generation time)",
        DAPO_PAPER, action)


def check_length_bias(history, t: Thresholds, ctx: Context) -> Finding | str | None:
    length = series(history, "completions/mean_length")
    if len(length) < t.min_points:
        return f"needs {t.min_points} logged steps of completions/mean_length, has {len(length)}"
    early, late = _windows(length, t)
    if _mean(early) <= 0 or _mean(late) / _mean(early) < t.length_growth:
        return None
    growth = _mean(late) / _mean(early)
    evidence = [f"completions/mean_length: {_mean(early):.0f} (early, {_span(early)}) -> {_mean(late):.0f} (late, "
                f"{_span(late)}), x{growth:.2f} >= length_growth={t.length_growth}"]
    longest = series(history, "completions/max_length")
    if longest:
        evidence.append(f"completions/max_length: {_mean(_windows(longest, t)[1]):.0f} (late)"
                        + (f" of max_completion_length={ctx.get('max_completion_length')}" if ctx.config else ""))
    key = _correctness_key(history)
    correctness = series(history, key) if key else []
    improving = False
    if len(correctness) >= t.min_points:
        c_early, c_late = _windows(correctness, t)
        improving = _mean(c_late) - _mean(c_early) >= t.correctness_rise
        evidence.append(f"{key}: {_mean(c_early):.3f} -> {_mean(c_late):.3f}: "
                        + ("longer and more correct (may be genuine)" if improving else "longer, not more correct"))
    loss_type = ctx.effective().get("loss_type", ctx.get("loss_type", "grpo"))
    if loss_type == "grpo":
        patch: dict[str, Any] = {"variant": "dr_grpo"}
        reason = ("TRL's grpo loss divides each completion's loss by its own length, so a long wrong answer is "
                  "penalised less per token than a short one; Dr. GRPO normalises by a constant and drops std scaling")
        paper: Paper | None = DR_GRPO_PAPER
    else:
        patch = {"grpo_overrides": {"mask_truncated_completions": True}}
        reason = (f"the loss ({loss_type}) is already length-unbiased; stop truncated completions from being scored "
                  "as failures (DAPO overlong filtering) and inspect what the longer completions contain")
        paper = DAPO_PAPER
    return Finding("length_bias", WARNING if improving else CRITICAL, "completion length runs away",
                   evidence, patch, reason, paper)


def check_truncation(history, t: Thresholds, ctx: Context) -> Finding | str | None:
    clipped = series(history, "completions/clipped_ratio")
    if not clipped:
        return "completions/clipped_ratio not logged"
    _, late = _windows(clipped, t)
    late_mean = _mean(late)
    if late_mean <= t.clipped_ratio:
        return None
    above = [(s, v) for s, v in clipped if v > t.clipped_ratio]
    evidence = [f"completions/clipped_ratio: {late_mean:.0%} of completions truncated (late window, {_span(late)}) > "
                f"clipped_ratio={t.clipped_ratio:.0%}; above it at {_span(above)}"]
    longest = series(history, "completions/max_length")
    mean_length = series(history, "completions/mean_length")
    if longest and mean_length:
        evidence.append(f"completions/mean_length {_mean(_windows(mean_length, t)[1]):.0f}, completions/max_length "
                        f"{_mean(_windows(longest, t)[1]):.0f} (late)"
                        + (f"; max_completion_length={ctx.get('max_completion_length')}" if ctx.config else ""))
    severe = late_mean > t.clipped_severe
    masked = bool(ctx.effective().get("mask_truncated_completions"))
    patch: dict[str, Any] = {}
    reasons = []
    if masked:
        evidence.append("mask_truncated_completions is already on: the truncated completions trained nothing")
    else:
        patch["grpo_overrides"] = {"mask_truncated_completions": True}
        reasons.append("a truncated completion is unfinished, not wrong: scoring it as a failure trains length, "
                       "not correctness; DAPO's overlong filtering leaves it out of the loss")
    action = ""
    if severe or masked:
        why = (f"with more than {t.clipped_severe:.0%} truncated" if severe else "with truncated completions masked")
        if ctx.get("max_completion_length"):
            patch["max_completion_length"] = 2 * int(ctx.get("max_completion_length"))
            reasons.append(f"{why}, too few samples are left to learn from, so the limit doubles (check memory: "
                           "trainer config --model-size)")
        else:
            action = f"{why}, too few samples are left: raise max_completion_length (the run's value is unknown)."
    return Finding("truncation", CRITICAL if severe else WARNING, "truncated completions dominate",
                   evidence, patch, "; ".join(reasons) or "they are masked out of the loss already: they train nothing",
                   DAPO_PAPER, action)


def check_entropy_collapse(history, t: Thresholds, ctx: Context) -> Finding | str | None:
    entropy = series(history, "entropy")
    if len(entropy) < t.min_points:
        return f"needs {t.min_points} logged steps of entropy, has {len(entropy)}"
    early, late = _windows(entropy, t)
    e0, e1 = _mean(early), _mean(late)
    dropped = e0 > 0 and e1 / e0 < t.entropy_drop
    floored = e1 < t.entropy_floor <= e0
    if not (dropped or floored):
        return None
    evidence = [f"entropy: {e0:.3f} nats (early, {_span(early)}) -> {e1:.3f} (late, {_span(late)}); "
                + (f"ratio {e1 / e0:.2f} < entropy_drop={t.entropy_drop}" if dropped
                   else f"below entropy_floor={t.entropy_floor}")]
    std = series(history, "reward_std")
    if len(std) >= t.min_points:
        s0, s1 = (_mean(w) for w in _windows(std, t))
        evidence.append(f"reward_std: {s0:.3f} -> {s1:.3f} (a collapsing policy samples alike completions)")
    effective = ctx.effective()
    loss_type = effective.get("loss_type", "grpo")
    epsilon_high = effective.get("epsilon_high") or effective.get("epsilon", 0.2)
    if loss_type in ("grpo", "dr_grpo", "dapo", "bnpo") and epsilon_high < 0.28:
        patch: dict[str, Any] = {"grpo_overrides": {"epsilon_high": 0.28}}
        reason = ("symmetric clipping caps how fast an unlikely token can gain probability, so exploration dies; "
                  "DAPO's clip-higher raises only the upper bound (0.2 -> 0.28)")
        paper: Paper | None = DAPO_PAPER
    else:
        preset = get_variant("high_entropy")
        patch = {"grpo_overrides": dict(preset.grpo_overrides)}
        reason = ("the upper clip is already raised (or the loss does not clip tokens); train on the high-entropy "
                  "forking tokens only, leaving the confident majority alone")
        paper = preset.paper
    return Finding("entropy_collapse", CRITICAL, "policy entropy collapses", evidence, patch, reason, paper,
                   action="Also check temperature (sampling below 1.0 lowers entropy by itself).")


def _off_policy(history, ctx: Context) -> str | None:
    clipped = [(s, v) for s, v in series(history, "clip_ratio/region_mean") if v > 0]
    if clipped:
        return f"clip_ratio/region_mean > 0 at {_span(clipped)}: importance ratios leave the trust region"
    effective = ctx.effective()
    if effective.get("num_iterations", 1) > 1:
        return f"num_iterations={effective['num_iterations']}"
    return None


def check_kl_blowup(history, t: Thresholds, ctx: Context) -> Finding | str | None:
    kl = series(history, "kl")
    if not kl:
        beta = ctx.get("beta")
        if beta is None:
            return "kl not logged (the run's config, and so its beta, is not known)"
        if float(beta) == 0:
            return "kl not logged (beta=0: no reference model)"
        return (f"kl not logged although beta={float(beta):g} (no training step was logged: logging_steps "
                f"{ctx.get('logging_steps', '?')} of a shorter run?)")
    _, late = _windows(kl, t)
    evidence = []
    if _mean(late) > t.kl_max:
        evidence.append(f"kl: {_mean(late):.3f} (late window, {_span(late)}) > kl_max={t.kl_max}")
    spikes = []
    for i in range(2, len(kl)):
        before = statistics.median(v for _, v in kl[max(0, i - 5):i])
        step, value = kl[i]
        if value >= t.kl_spike_min and value >= t.kl_spike * before:
            spikes.append(f"{step} ({value:.3f} vs median {before:.3f} before)")
    if spikes:
        evidence.append(f"kl spikes >= kl_spike={t.kl_spike:g}x the median of the 5 steps before and >= "
                        f"kl_spike_min={t.kl_spike_min} at step(s) {', '.join(spikes[:6])}")
    if not evidence:
        return None
    off_policy = _off_policy(history, ctx)
    if off_policy:
        evidence.append(off_policy)
        patch: dict[str, Any] = {"variant": "gspo"}
        reason = ("updates are off-policy and token-level ratios swing; GSPO's one sequence-level ratio, clipped "
                  "tightly, keeps the policy near the sampling policy")
        paper: Paper | None = GSPO_PAPER
    else:
        beta = float(ctx.get("beta", 0.01))
        lr = float(ctx.get("learning_rate", 5e-7))
        if beta < RECIPE_BETA_MAX:
            patch = {"beta": RECIPE_BETA_MAX}
            reason = (f"the run is on-policy (no clipping), so no ratio-level variant acts; a stronger KL term "
                      f"(beta {beta:g} -> {RECIPE_BETA_MAX:g}, the top of the recipe's settled range) pulls the "
                      "policy back to the reference")
        else:
            patch = {"learning_rate": max(lr / 2, 1e-7)}
            reason = "beta is already at the top of the settled range: halve the learning rate"
        paper = None
    return Finding("kl_blowup", CRITICAL, "KL to the reference policy blows up", evidence, patch, reason, paper)


def check_clipping(history, t: Thresholds, ctx: Context) -> Finding | str | None:
    key = "clip_ratio/region_mean" if series(history, "clip_ratio/region_mean") else "cispo_clip_ratio"
    region = series(history, key)
    if not region:
        return "clip_ratio/region_mean not logged"
    _, late = _windows(region, t)
    if _mean(late) <= t.clip_region:
        return None
    evidence = [f"{key}: {_mean(late):.1%} of tokens clipped (late window, {_span(late)}) > "
                f"clip_region={t.clip_region:.0%}"]
    high = series(history, "clip_ratio/high_mean")
    low = series(history, "clip_ratio/low_mean")
    h = _mean(_windows(high, t)[1]) if high else 0.0
    lo = _mean(_windows(low, t)[1]) if low else 0.0
    if high or low:
        evidence.append(f"clip_ratio/high_mean {h:.1%}, clip_ratio/low_mean {lo:.1%} (late)")
    effective = ctx.effective()
    epsilon_high = effective.get("epsilon_high") or effective.get("epsilon", 0.2)
    if h >= lo and epsilon_high < 0.28:
        patch: dict[str, Any] = {"grpo_overrides": {"epsilon_high": 0.28}}
        reason = "positive-advantage tokens hit the upper clip: clip-higher lets them rise (DAPO)"
        paper: Paper | None = DAPO_PAPER
    elif h >= lo:
        patch = {"variant": "cispo"}
        reason = ("the upper clip is already raised and still binds: CISPO clips the importance weight instead, so "
                  "clipped tokens keep their gradient")
        paper = get_variant("cispo").paper
    else:
        patch = {"variant": "gspo"}
        reason = ("negative-advantage tokens fall out of the trust region: the updates are too far off-policy at the "
                  "token level; GSPO's sequence-level ratio is the stabler unit")
        paper = GSPO_PAPER
    return Finding("clipping_dominates", WARNING, "importance-ratio clipping binds on many tokens",
                   evidence, patch, reason, paper)


# Order matters: what invalidates the reward comes first, then what starves or distorts the gradient.
CHECKS: tuple[tuple[str, Callable[..., Finding | str | None]], ...] = (
    ("infra_noise", check_infra_noise),
    ("reward_hacking_smell", check_reward_hacking),
    ("no_learning_signal", check_no_learning_signal),
    ("truncation", check_truncation),
    ("length_bias", check_length_bias),
    ("entropy_collapse", check_entropy_collapse),
    ("kl_blowup", check_kl_blowup),
    ("clipping_dominates", check_clipping),
)


def run_checks(history: Sequence[dict[str, Any]], thresholds: Thresholds = Thresholds(),
               config: dict[str, Any] | None = None) -> Diagnosis:
    """Every check over a run's log history; ``config`` (the run's RunConfig dict) sharpens the patches."""
    train = [h for h in history if not any(k.startswith("train_") for k in h)]  # drop the end-of-run summary
    ctx = Context(config)
    diagnosis = Diagnosis([])
    for name, check in CHECKS:
        result = check(train, thresholds, ctx)
        diagnosis.ran += not isinstance(result, str)
        if isinstance(result, Finding):
            diagnosis.findings.append(result)
        elif isinstance(result, str):
            diagnosis.skipped[name] = result
    order = {CRITICAL: 0, WARNING: 1}
    diagnosis.findings.sort(key=lambda f: order.get(f.severity, 2))  # stable: check order within a severity
    return diagnosis


def diagnose(history: Sequence[dict[str, Any]], thresholds: Thresholds = Thresholds(),
             config: dict[str, Any] | None = None) -> list[Finding]:
    return run_checks(history, thresholds, config).findings
