"""The reference GRPO recipe as a typed, validated run config.

``RunConfig`` holds what a training engineer sets; ``validate`` refuses what
the method forbids (fewer than 8 generations without an explicit override, a
reward list without both a format and a correctness component, batch shapes
TRL would reject) and records every departure from the recipe as a
*deviation*; ``to_grpo_kwargs`` produces the GRPOConfig keyword values,
setting explicitly each value where TRL 1.16's defaults differ from the recipe.
One dataclass drives the YAML file, the CLI flags and the docs (``metadata["help"]``).
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from trainer.errors import ConfigError

MIN_GENERATIONS = 8
SETTLED_LEARNING_RATE = (1e-7, 1e-6)  # the recipe starts at 5e-7
SETTLED_BETA = (0.001, 0.04)          # the recipe starts at 0.01
REWARD_COMPONENTS = ("format", "correctness")


def _f(default: Any, help: str, **kw: Any) -> Any:
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help, **kw})
    return field(default=default, metadata={"help": help, **kw})


@dataclass
class RunConfig:
    # What to train, on what, against which verifier.
    model: str = _f("", "model path or hub id (an SFT checkpoint)")
    dataset: str = _f("", "prompt-only dataset: a local .jsonl/.json/.parquet file or a hub dataset id")
    dataset_split: str = _f("train", "split of a hub dataset")
    output_dir: str = _f("./outputs-grpo", "checkpoints and metrics go here")
    verifier: str = _f("127.0.0.1:50051", "HOST:PORT of the verifier service")
    spec_column: str = _f("verification", "dataset column holding each prompt's verification spec (JSON)")
    verifier_ref: str = _f("", "catalog verifier (team/name@version) for rows whose spec names none: such rows "
                               "hold only their per-sample fields (the API key comes from RLVR_VERIFIER_API_KEY)")
    verifier_tls_ca: str = _f("", "PEM CA of the verifier's TLS certificate: connect over TLS ('' = plaintext)")
    verifier_tls_cert: str = _f("", "PEM client certificate for a verifier that asks for mutual TLS")
    verifier_tls_key: str = _f("", "PEM key of verifier_tls_cert")
    rewards: list = _f(["format", "correctness"], "reward components, each computed by the verifier")
    reward_weights: list = _f([0.2, 0.8], "TRL reward_weights, one per reward component")
    reward_timeout_s: float = _f(300.0, "deadline of one VerifyBatch call")
    # The reference recipe.
    num_generations: int = _f(8, "completions per prompt; 8 is the floor of the method")
    learning_rate: float = _f(5e-7, "AdamW learning rate")
    beta: float = _f(0.01, "KL coefficient against the reference policy")
    loss_type: str = _f("grpo", "TRL loss_type; the base recipe is plain GRPO")
    variant: str = _f("", "GRPO variant preset applied on top of the recipe (trainer/variants.py)")
    grpo_overrides: dict = _f({}, "extra GRPOConfig keyword values (from a variant or a diagnose patch)")
    per_device_train_batch_size: int = _f(8, "completions per device per micro-batch")
    gradient_accumulation_steps: int = _f(4, "micro-batches per optimizer step")
    bf16: bool = _f(True, "bfloat16 training")
    logging_steps: int = _f(10, "log every N steps")
    seed: int = _f(3407, "random seed")
    max_completion_length: int = _f(512, "completion tokens generated")
    temperature: float = _f(1.0, "sampling temperature")
    max_steps: int = _f(-1, "optimizer steps (-1: run num_train_epochs)")
    num_train_epochs: float = _f(1.0, "passes over the dataset")
    save_steps: int = _f(500, "checkpoint every N steps")
    report_to: str = _f("none", "where TRL also logs metrics: none, or a comma-separated list of trackers TRL "
                                "knows (tensorboard, wandb, trackio, mlflow, ...); run.json is written either way")
    gradient_checkpointing: bool = _f(True, "recompute activations to save memory")
    trainer: str = _f("grpo", "grpo: TRL's GRPOTrainer (the recipe); async_grpo: trl.experimental.async_grpo's "
                              "AsyncGRPOTrainer, which scores rewards in a child process while a vLLM server goes "
                              "on generating (vllm_mode: server; no KL term)", choices=("grpo", "async_grpo"))
    # Generation and hardware.
    generation: str = _f("vllm", "vllm, or transformers (only when asked for: it is much slower)",
                         choices=("vllm", "transformers"))
    vllm_mode: str = _f("colocate", "colocate (one GPU) or server (a vLLM server on its own GPUs)",
                        choices=("colocate", "server"))
    vllm_server_host: str = _f("127.0.0.1", "vLLM server host (vllm_mode=server)")
    vllm_server_port: int = _f(8000, "vLLM server port (vllm_mode=server)")
    vllm_gpu_memory_utilization: float = _f(0.3, "GPU memory share of colocated vLLM")
    vllm_enable_sleep_mode: bool = _f(False, "colocated vLLM frees its weights and KV cache during the optimizer "
                                             "step (less peak memory, slower steps: 0.46 vs 0.28 s on the H200)")
    num_gpus: int = _f(1, "GPUs used for training")
    use_cpu: bool = _f(False, "train on the CPU (tests and smoke runs)")
    # The launch (trainer train --launch writes the accelerate config of these beside the run config).
    num_processes: int = _f(0, "training processes accelerate launches (0: num_gpus, or 1 with use_cpu)")
    zero_stage: int = _f(0, "DeepSpeed ZeRO stage of a multi-GPU launch (0: plain data parallel)",
                         choices=(0, 1, 2, 3))
    sharding: str = _f("deepspeed", "deepspeed (ZeRO at zero_stage), or fsdp2 (FSDP2 full shard)",
                       choices=("deepspeed", "fsdp2"))
    gpu_ids: str = _f("", "training GPUs, e.g. 1 or 1,2,3 (empty: the first num_gpus not in vllm_gpu_ids)")
    vllm_gpu_ids: str = _f("", "GPUs of the vLLM server (vllm_mode=server), e.g. 0; never shared with gpu_ids")
    lora: bool = _f(False, "train LoRA adapters instead of every weight")
    lora_r: int = _f(16, "LoRA rank")
    lora_alpha: int = _f(32, "LoRA alpha")
    # Overrides of the method's rules: allowed only when set, and always recorded.
    allow_fewer_generations: bool = _f(False, "accept num_generations < 8 (recorded as a deviation)")
    deviation_reasons: dict = _f({}, "why each deviation from the recipe was made: {field: reason}")
    # The pre-training gates (trainer/gates.py): train refuses unless both passed for this reward config.
    gates_dir: str = _f("", "directory of the gate records (empty: <output_dir>/gates)")
    skip_gates: bool = _f(False, "train without the base-rate and inspection gates (a deviation, kept in run.json)")
    audit_override: str = _f("", "train although the reward audit (trainer gate audit) flagged rows or was not run: "
                                 "the reason, kept in run.json (a deviation)")

    # ---- loading -------------------------------------------------------

    @classmethod
    def from_yaml(cls, path: str | Path) -> RunConfig:
        import yaml

        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read run config {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"run config {path} must be a mapping of settings")
        return cls.from_dict(data, where=str(path))

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "run config") -> RunConfig:
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ConfigError(f"{where}: unknown setting(s) {unknown}")
        values = {}
        for name, value in data.items():
            values[name] = _coerce(known[name], value, where)
        return cls(**values)

    def override(self, changes: dict[str, Any]) -> RunConfig:
        known = {f.name: f for f in fields(self)}
        return dataclasses.replace(self, **{k: _coerce(known[k], v, "flag") for k, v in changes.items()})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    # ---- the rules -----------------------------------------------------

    def validate(self) -> list[str]:
        """Raises ConfigError for what the method forbids; returns the deviations from the recipe."""
        deviations: list[str] = []
        for f in fields(self):
            choices = f.metadata.get("choices")
            if choices and getattr(self, f.name) not in choices:
                raise ConfigError(f"{f.name} must be one of {', '.join(map(str, choices))}, "
                                  f"not {getattr(self, f.name)!r}")
        if self.num_generations < 2:
            raise ConfigError("num_generations must be at least 2: GRPO's advantage compares completions of a prompt")
        if self.num_generations < MIN_GENERATIONS:
            if not self.allow_fewer_generations:
                raise ConfigError(
                    f"num_generations={self.num_generations} is below the recipe's floor of {MIN_GENERATIONS}: fewer "
                    "completions per prompt give a noisy group baseline. Set allow_fewer_generations: true "
                    "(--allow-fewer-generations) to run anyway; it is recorded as a deviation.")
            deviations.append(f"num_generations={self.num_generations} < {MIN_GENERATIONS} (override set)")
        missing = [c for c in REWARD_COMPONENTS if c not in self.rewards]
        if missing:
            raise ConfigError(f"rewards must include both a format and a correctness component (missing: "
                              f"{', '.join(missing)}): correctness alone scores a malformed output and a "
                              "well-formed wrong one the same")
        unknown = [r for r in self.rewards if r not in REWARD_COMPONENTS]
        if unknown:
            raise ConfigError(f"unknown reward component(s) {unknown}; valid: {', '.join(REWARD_COMPONENTS)}")
        if len(self.reward_weights) != len(self.rewards):
            raise ConfigError(f"reward_weights has {len(self.reward_weights)} values for {len(self.rewards)} rewards")
        if any(not isinstance(w, (int, float)) or w <= 0 for w in self.reward_weights):
            raise ConfigError("reward_weights must be positive: a zero format weight scores malformed and "
                              "well-formed wrong outputs the same")
        for name in ("per_device_train_batch_size", "gradient_accumulation_steps", "num_gpus", "logging_steps",
                     "max_completion_length"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive")
        if self.num_processes < 0:
            raise ConfigError("num_processes must be 0 (one per training GPU) or positive")
        if self.num_processes and not self.use_cpu and self.num_processes != self.num_gpus:
            raise ConfigError(f"num_processes={self.num_processes} on {self.num_gpus} GPU(s): a GPU run has one "
                              "process per training GPU (set num_gpus)")
        processes = self.processes
        generation_batch = self.per_device_train_batch_size * self.gradient_accumulation_steps * processes
        if generation_batch % self.num_generations:
            raise ConfigError(
                f"the generation batch (per_device_train_batch_size {self.per_device_train_batch_size} x "
                f"gradient_accumulation_steps {self.gradient_accumulation_steps} x {processes} process(es) = "
                f"{generation_batch}) must be divisible by num_generations ({self.num_generations}), so that "
                "every prompt's group is complete")
        if self.use_cpu and self.bf16:
            raise ConfigError("use_cpu with bf16 is refused by TRL: set bf16: false for CPU runs")
        if self.generation == "vllm" and self.use_cpu:
            raise ConfigError("vLLM generation needs a GPU: use generation: transformers for CPU runs")
        if self.generation == "vllm" and self.vllm_mode == "colocate" and self.num_gpus > 1:
            deviations.append(f"vllm_mode=colocate on {self.num_gpus} GPUs (the recipe uses server mode there)")
        if self.generation == "vllm" and self.vllm_mode == "server" and self.num_gpus == 1:
            deviations.append("vllm_mode=server with one training GPU (the recipe colocates on a single GPU)")
        if self.generation == "transformers":
            deviations.append("generation=transformers instead of vLLM (slower; chosen explicitly)")
        if self.trainer == "async_grpo":
            if self.generation != "vllm" or self.vllm_mode != "server":
                raise ConfigError(
                    "trainer: async_grpo generates through a vLLM server (AsyncGRPOTrainer has no colocated or "
                    "transformers generation): set generation: vllm and vllm_mode: server, with the server started "
                    "by `vllm serve` on a GPU of its own (its NCCL weight sync refuses a GPU shared with training)")
            if self.use_cpu:
                raise ConfigError("trainer: async_grpo needs a GPU (NCCL weight sync to the vLLM server)")
            deviations.append("trainer=async_grpo (trl.experimental AsyncGRPOTrainer: samples up to max_staleness "
                              "weight versions old, no KL term, rewards weighted inside the reward functions)")
        lo, hi = SETTLED_LEARNING_RATE
        if not lo <= self.learning_rate <= hi:
            deviations.append(f"learning_rate={self.learning_rate:g} outside the settled range [{lo:g}, {hi:g}]")
        lo, hi = SETTLED_BETA
        if not lo <= self.beta <= hi:
            deviations.append(f"beta={self.beta:g} outside the settled range [{lo:g}, {hi:g}]"
                              + (" (no KL term: the reference model is not loaded)" if self.beta == 0 else ""))
        if self.loss_type != "grpo":
            deviations.append(f"loss_type={self.loss_type} instead of the base recipe's grpo")
        deviations += self._variant_deviations()
        for name, value in (("per_device_train_batch_size", 8), ("gradient_accumulation_steps", 4),
                            ("seed", 3407)):
            if getattr(self, name) != value:
                deviations.append(f"{name}={getattr(self, name)} (recipe: {value})")
        if self.lora:
            deviations.append(f"lora=true (rank {self.lora_r}, alpha {self.lora_alpha}): adapters instead of the "
                              "recipe's full fine-tuning")
        if self.skip_gates:
            deviations.append("skip_gates=true: trained without the base-rate and inspection gates")
        if self.audit_override and not self.skip_gates:
            deviations.append(f"audit_override: trained without a clean reward audit ({self.audit_override})")
        return [self._with_reason(d) for d in deviations]

    def _variant_deviations(self) -> list[str]:
        """The variant preset and each extra GRPOConfig value, checked and recorded (trainer/variants.py)."""
        from trainer.variants import check_overrides, get_variant

        deviations = []
        if self.variant:
            preset = get_variant(self.variant)
            preset_loss = preset.grpo_overrides.get("loss_type")
            if preset_loss and self.loss_type not in ("grpo", preset_loss):
                raise ConfigError(f"variant={self.variant} sets loss_type={preset_loss}, which contradicts "
                                  f"loss_type={self.loss_type}: choose one")
            deviations.append(f"variant={self.variant} ({preset.overrides_text()}): {preset.reason} [{preset.paper}]")
        if self.grpo_overrides:
            owned = {f.name for f in fields(self)} | {"use_vllm", "activation_checkpointing"}
            check_overrides(self.grpo_overrides, owned=owned, trainer=self.trainer)
            deviations += [f"grpo_overrides.{k}={v!r}" for k, v in self.grpo_overrides.items()]
        return deviations

    def _with_reason(self, deviation: str) -> str:
        name = deviation.split("=", 1)[0].split(" ", 1)[0]
        reason = self.deviation_reasons.get(name)
        return f"{deviation}; reason: {reason}" if reason else deviation

    @property
    def processes(self) -> int:
        """Training processes of the launch: one per training GPU, or ``num_processes`` (default 1) on the CPU."""
        if self.use_cpu:
            return self.num_processes or 1
        return self.num_gpus

    # ---- TRL -------------------------------------------------------------

    def to_grpo_kwargs(self) -> dict[str, Any]:
        """GRPOConfig keyword values (validate first)."""
        kwargs: dict[str, Any] = dict(
            output_dir=self.output_dir,
            num_generations=self.num_generations,
            learning_rate=self.learning_rate,
            beta=self.beta,
            loss_type=self.loss_type,
            per_device_train_batch_size=self.per_device_train_batch_size,
            gradient_accumulation_steps=self.gradient_accumulation_steps,
            bf16=self.bf16,
            logging_steps=self.logging_steps,
            seed=self.seed,
            max_completion_length=self.max_completion_length,
            temperature=self.temperature,
            max_steps=self.max_steps,
            num_train_epochs=self.num_train_epochs,
            save_steps=self.save_steps,
            gradient_checkpointing=self.gradient_checkpointing,
            reward_weights=[float(w) for w in self.reward_weights],
            use_vllm=self.generation == "vllm",
            use_cpu=self.use_cpu,
            report_to=[t.strip() for t in self.report_to.split(",") if t.strip()] if "," in self.report_to
            else (self.report_to.strip() or "none"),
        )
        if self.generation == "vllm":
            kwargs["vllm_mode"] = self.vllm_mode
            if self.vllm_mode == "colocate":
                kwargs["vllm_gpu_memory_utilization"] = self.vllm_gpu_memory_utilization
                kwargs["vllm_enable_sleep_mode"] = self.vllm_enable_sleep_mode
            else:
                kwargs["vllm_server_host"] = self.vllm_server_host
                kwargs["vllm_server_port"] = self.vllm_server_port
        if self.variant:  # the preset first (its loss_type replaces the recipe's), explicit overrides last
            from trainer.variants import get_variant

            kwargs.update(get_variant(self.variant).grpo_overrides)
        kwargs.update(self.grpo_overrides)
        return kwargs


    def to_async_grpo_kwargs(self) -> dict[str, Any]:
        """AsyncGRPOConfig keyword values (validate first): the GRPOConfig ones it has, and the vLLM server's URL.
        It has no ``beta`` (no KL term), ``loss_type`` or ``reward_weights`` (the reward functions weight
        themselves: ``VerifierRewards.reward_funcs(weights=...)``), and always generates on a vLLM server."""
        from trl.experimental.async_grpo import AsyncGRPOConfig

        known = set(AsyncGRPOConfig.__dataclass_fields__)
        kwargs = self.to_grpo_kwargs()
        if "activation_checkpointing" in known:  # transformers >= 5.2x renamed it
            kwargs["activation_checkpointing"] = kwargs.pop("gradient_checkpointing")
        kwargs = {k: v for k, v in kwargs.items() if k in known}
        kwargs["vllm_server_base_url"] = f"http://{self.vllm_server_host}:{self.vllm_server_port}"
        return kwargs


def _coerce(f: dataclasses.Field, value: Any, where: str) -> Any:
    default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
    kind = type(default)
    if kind is bool:
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        if isinstance(value, bool):
            return value
    elif kind is int and not isinstance(value, bool):
        try:
            return int(value)
        except (TypeError, ValueError):
            pass
    elif kind is float and not isinstance(value, bool):
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    elif kind is str and isinstance(value, str):
        return value
    elif kind is list:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
            if f.name == "reward_weights":
                value = [float(v) for v in value]
        if isinstance(value, list):
            return value
    elif kind is dict and isinstance(value, dict):
        return value
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "a mapping"}
    raise ConfigError(f"{where}: {f.name} must be {names.get(kind, kind.__name__)}, not {value!r}")


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """One ``--flag`` per RunConfig field (None when absent, so YAML values stand)."""
    for f in fields(RunConfig):
        flag = f"--{f.name.replace('_', '-')}"
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        if isinstance(default, bool):
            parser.add_argument(flag, dest=f.name, default=None, action=argparse.BooleanOptionalAction,
                                help=f.metadata["help"])
        elif isinstance(default, dict):
            continue  # YAML only
        else:
            parser.add_argument(flag, dest=f.name, default=None, help=f"{f.metadata['help']} (default: {default!r})")


def flags_to_changes(args: argparse.Namespace) -> dict[str, Any]:
    return {f.name: getattr(args, f.name) for f in fields(RunConfig)
            if getattr(args, f.name, None) is not None}


def verifier_credentials(config: RunConfig):
    """The API key (RLVR_VERIFIER_API_KEY, never in the run config) and the run's TLS settings: what every
    call of the run to the verifier presents (the reward functions and the gates alike)."""
    from verifier_service.credentials import Credentials

    return Credentials.from_env(tls_ca=config.verifier_tls_ca or None, tls_cert=config.verifier_tls_cert,
                                tls_key=config.verifier_tls_key)
