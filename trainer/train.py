"""``trainer train``: GRPO with the remote verifier as the reward, from a validated run config."""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path
from typing import Any

from trainer.config import RunConfig, verifier_credentials
from trainer.errors import ConfigError, TrainerError
from trainer.gates import check_gates
from trainer.grpo import build_trainer
from trainer.rewards import ShadowReward, VerifierRewards
from trainer.timing import RewardWaitCallback, rollout_wait_summary

log = logging.getLogger(__name__)
LOCAL_DATA = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


def load_prompts(config: RunConfig):
    """A prompt-only dataset from a local file or the hub; it must hold the spec column."""
    from datasets import load_dataset

    path = Path(config.dataset)
    try:
        if path.suffix in LOCAL_DATA and path.exists():
            dataset = load_dataset(LOCAL_DATA[path.suffix], data_files=str(path), split="train")
        elif path.suffix in LOCAL_DATA:
            raise ConfigError(f"dataset file {path} does not exist")
        else:
            dataset = load_dataset(config.dataset, split=config.dataset_split)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(f"cannot load dataset {config.dataset!r}: {exc}") from exc
    if config.verifier_ref and config.spec_column not in dataset.column_names:
        dataset = dataset.add_column(config.spec_column, ["{}"] * len(dataset))  # an entry with no per-sample field
    for column in ("prompt", config.spec_column):
        if column not in dataset.column_names:
            raise ConfigError(f"dataset {config.dataset!r} has no {column!r} column (columns: "
                              f"{', '.join(dataset.column_names)})")
    if config.verifier_ref:
        dataset = dataset.map(lambda row: {config.spec_column: catalog_spec(row[config.spec_column],
                                                                            config.verifier_ref)})
    return dataset


def catalog_spec(raw: Any, verifier: str) -> str:
    """A row's spec with the run's catalog verifier where it names no kind or verifier (JSON text)."""
    try:
        obj = (json.loads(raw) if isinstance(raw, str) else raw) or {}
    except ValueError as exc:
        raise ConfigError(f"the spec column does not hold JSON: {exc}") from exc
    if isinstance(obj, dict) and "kind" not in obj and "verifier" not in obj:
        obj = {"verifier": verifier, **obj}
    return json.dumps(obj)


def check_generation_backend(config: RunConfig) -> None:
    if config.generation == "vllm" and importlib.util.find_spec("vllm") is None:
        raise ConfigError("vLLM is not installed: install it (pip install vllm) for the recipe's generation, or set "
                          "generation: transformers (--generation transformers) to generate with transformers, "
                          "which is much slower and recorded as a deviation")


def _gather_process_stats(trainer, rewards: VerifierRewards, timing: RewardWaitCallback) -> list[dict[str, Any]]:
    """Each training process's own verifier traffic (its VerifyBatch calls), gathered on every process."""
    from accelerate.utils import gather_object

    mine = {
        "process": trainer.accelerator.process_index,
        "verifier_batches": len(rewards.history),
        "verifier_batch_sizes": [s.size for s in rewards.history],
        "verifier_infra_errors": sum(s.infra_errors for s in rewards.history),
        "verifier_lost_batches": sum(1 for s in rewards.history if s.lost),
        "verifier_wait_s": rewards.total_wait_s,
        "reward_timing": timing.summary(),
    }
    if trainer.accelerator.num_processes == 1:
        return [mine]
    return sorted(gather_object([mine]), key=lambda p: p["process"])


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during ``trainer.train()``; ``kept`` says what the run left (run.json, checkpoints)."""

    def __init__(self, kept: str):
        super().__init__(kept)
        self.kept = kept


def _record_interruption(config: RunConfig, deviations: list[str], trainer, timing, gates) -> str:
    """Writes run.json for a run cut short (``interrupted: true``, the metrics logged so far: `trainer diagnose`
    reads it) on the main process; returns what was kept, in words."""
    out = Path(config.output_dir)
    step = trainer.state.global_step
    checkpoints = sorted(p.name for p in out.glob("checkpoint-*")) if out.is_dir() else []
    if trainer.accelerator.is_main_process:
        record = {"interrupted": True, "config": config.to_dict(), "deviations": deviations,
                  "global_step": step, "log_history": trainer.state.log_history, "reward_timing": timing.summary(),
                  "gates": gates}
        out.mkdir(parents=True, exist_ok=True)
        (out / "run.json").write_text(json.dumps(record, indent=2, default=str))
    kept = (f"checkpoint(s) {', '.join(checkpoints)}" if checkpoints else "no checkpoint (save_steps "
            f"{config.save_steps})")
    return (f"at step {step} of {config.max_steps if config.max_steps > 0 else 'the epochs'}: kept {out}/run.json "
            f"({len(trainer.state.log_history)} logged step(s), `trainer diagnose {out}` reads it) and {kept}; no "
            "final model was saved")


def run_training(config: RunConfig, deviations: list[str], *, shadow_reward: ShadowReward | None = None,
                 shadow_every: int = 1, callbacks: list | None = None, config_path: str | None = "run.yaml",
                 changed: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Runs GRPO; returns the run record (also written to output_dir/run.json), on the main process only
    (None on the other processes of a launch). Each process sends its own batches to the verifier; the record
    sums their counts and keeps each process's (``processes``).

    ``shadow_reward``: an in-process reward computed on the same batches, timed apart from the remote wait (it never
    affects training), on every ``shadow_every``-th batch; ``callbacks``: extra TrainerCallbacks (e.g. a time budget).
    """
    check_generation_backend(config)
    vllm_env = {}
    if config.generation == "vllm" and config.vllm_mode == "colocate":
        from trainer.vllm_env import colocate_environment

        vllm_env = colocate_environment()  # before TRL starts vLLM in this process
        if vllm_env:
            log.info("colocated vLLM: set %s", ", ".join(f"{k}={v}" for k, v in sorted(vllm_env.items())))
    dataset = load_prompts(config)
    gates = check_gates(config, dataset, config_path, changed)  # refuses bad gates before anything expensive
    rewards = VerifierRewards(config.verifier, spec_column=config.spec_column, timeout_s=config.reward_timeout_s,
                              credentials=verifier_credentials(config), shadow=shadow_reward,
                              shadow_every=shadow_every)

    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(config.model)
    except Exception as exc:
        raise ConfigError(f"cannot load the tokenizer of {config.model!r}: {exc}") from exc
    timing = RewardWaitCallback(rewards)
    if config.trainer == "async_grpo":  # scored in a spawned child: no reward_weights there, no wait to bracket here
        reward_funcs = rewards.reward_funcs(config.rewards, weights=config.reward_weights)
        extra = []
    else:
        reward_funcs = rewards.reward_funcs(config.rewards)
        extra = [timing]
    trainer = build_trainer(config, reward_funcs=reward_funcs, dataset=dataset,
                            tokenizer=tokenizer, callbacks=[*extra, *(callbacks or [])])
    for deviation in deviations:
        log.warning("deviation from the recipe: %s", deviation)
    try:
        result = trainer.train()
    except KeyboardInterrupt:
        raise TrainingInterrupted(_record_interruption(config, deviations, trainer, timing, gates)) from None
    trainer.save_model(config.output_dir)  # every process takes part (sharded weights are gathered)
    processes = _gather_process_stats(trainer, rewards, timing)
    if not trainer.accelerator.is_main_process:
        return None
    record = {
        "config": config.to_dict(),
        "deviations": deviations,
        "train_metrics": result.metrics,
        "log_history": trainer.state.log_history,
        "reward_timing": (rollout_wait_summary(trainer.state.log_history) if config.trainer == "async_grpo"
                          else timing.summary()),
        "verifier_batches": sum(p["verifier_batches"] for p in processes),
        "verifier_infra_errors": sum(p["verifier_infra_errors"] for p in processes),
        "processes": processes,
        "shadow_disagreements": (sum(s.shadow_disagreements or 0 for s in rewards.history)
                                 if shadow_reward is not None else None),
        "gates": gates,
        "vllm_environment": vllm_env,
        "trainer": config.trainer,
        # async_grpo scores in AsyncGRPOTrainer's child process: the verifier counts above are this process's (0)
        "rewards_scored_in": "rollout child process" if config.trainer == "async_grpo" else "trainer process",
    }
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(json.dumps(record, indent=2, default=str))
    return record


__all__ = ["TrainerError", "TrainingInterrupted", "build_trainer", "load_prompts", "run_training"]
