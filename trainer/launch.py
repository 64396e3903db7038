"""``trainer train --launch``: the run config's process layout carried out through ``accelerate launch``.

- ``accelerate_config(config)``: the accelerate config of a validated run config, in the shape of TRL's
  ``accelerate_configs/`` (zero1-3, fsdp2, multi_gpu): DeepSpeed at ``zero_stage`` 1-3, FSDP2 when
  ``sharding: fsdp2``, plain data parallel at stage 0; ``mixed_precision`` bf16 when ``bf16``; one process per
  training GPU (``num_gpus``), or ``num_processes`` CPU processes (torchrun, gloo) with ``use_cpu``.
- ``write_accelerate_config(config, run_config_path)``: that config written beside the run config
  (``run.yaml`` -> ``run.accelerate.yaml``).
- ``check_gpu_split(config)``: the training GPUs (``gpu_ids``) and the vLLM server's (``vllm_gpu_ids``) kept apart.
- ``check_vllm_server(config)``: with ``vllm_mode: server``, the server answers its health endpoint
  (``/health``, what TRL's ``VLLMClient.check_server`` polls) and serves the run's model (``/v1/models``).
- ``launch(config, run_config_path, argv)``: all of that first, then ``accelerate launch`` of ``trainer train``
  in child processes with ``CUDA_VISIBLE_DEVICES`` set to the training GPUs; returns its exit status.

Every refusal is a ``ConfigError`` with a one-line message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from trainer.config import RunConfig
from trainer.errors import ConfigError

SHARDINGS = ("deepspeed", "fsdp2")


def parse_gpu_ids(text: str, name: str) -> list[int]:
    """``"0,1"`` -> ``[0, 1]`` (empty text: no explicit list)."""
    ids = []
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        if not part.isdigit():
            raise ConfigError(f"{name} must be comma-separated GPU indices such as 0,1, not {text!r}")
        ids.append(int(part))
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{name} names a GPU twice: {text!r}")
    return ids


def training_gpu_ids(config: RunConfig) -> list[int]:
    """The training GPUs: ``gpu_ids``, or the first ``num_gpus`` GPUs not given to the vLLM server."""
    explicit = parse_gpu_ids(config.gpu_ids, "gpu_ids")
    if explicit:
        return explicit
    taken = set(parse_gpu_ids(config.vllm_gpu_ids, "vllm_gpu_ids"))
    free = [i for i in range(config.num_gpus + len(taken)) if i not in taken]
    return free[:config.num_gpus]


def check_gpu_split(config: RunConfig) -> list[int]:
    """The training GPU ids, after refusing a split where training and the vLLM server share a GPU."""
    train = training_gpu_ids(config)
    if config.use_cpu:
        return []
    if len(train) != config.num_gpus:
        raise ConfigError(f"gpu_ids names {len(train)} GPU(s) ({config.gpu_ids}) but num_gpus is {config.num_gpus}")
    server = parse_gpu_ids(config.vllm_gpu_ids, "vllm_gpu_ids")
    overlap = sorted(set(train) & set(server))
    if overlap:
        raise ConfigError(f"GPU(s) {','.join(map(str, overlap))} are given both to training (gpu_ids "
                          f"{','.join(map(str, train))}) and to the vLLM server (vllm_gpu_ids {config.vllm_gpu_ids}): "
                          "keep them apart")
    return train


def accelerate_config(config: RunConfig) -> dict[str, Any]:
    """The accelerate config (a mapping for ``accelerate launch --config_file``) of a validated run config."""
    processes = config.processes
    base: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE", "debug": False, "downcast_bf16": "no", "machine_rank": 0,
        "main_training_function": "main", "mixed_precision": "bf16" if config.bf16 else "no", "num_machines": 1,
        "num_processes": processes, "rdzv_backend": "static", "same_network": True, "tpu_env": [],
        "tpu_use_cluster": False, "tpu_use_sudo": False, "use_cpu": config.use_cpu,
    }
    if config.use_cpu:
        # accelerate 1.15 starts MULTI_CPU (and `--cpu --num_processes 2`) as ONE process unless mpirun is given a
        # hostfile; MULTI_GPU goes through torchrun, whose processes then join as MULTI_CPU over gloo (use_cpu).
        return {**base, "distributed_type": "MULTI_GPU" if processes > 1 else "NO"}
    if config.sharding == "fsdp2":
        return {**base, "distributed_type": "FSDP", "enable_cpu_affinity": False, "fsdp_config": {
            "fsdp_activation_checkpointing": False, "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_cpu_ram_efficient_loading": True, "fsdp_offload_params": False,
            "fsdp_reshard_after_forward": True, "fsdp_state_dict_type": "FULL_STATE_DICT", "fsdp_version": 2}}
    if config.zero_stage:
        deepspeed = {"deepspeed_multinode_launcher": "standard", "offload_optimizer_device": "none",
                     "offload_param_device": "none", "zero3_init_flag": config.zero_stage == 3,
                     "zero_stage": config.zero_stage}
        if config.zero_stage == 3:
            deepspeed["zero3_save_16bit_model"] = True
        return {**base, "distributed_type": "DEEPSPEED", "deepspeed_config": deepspeed}
    return {**base, "distributed_type": "MULTI_GPU" if processes > 1 else "NO", "gpu_ids": "all"}


def accelerate_config_path(run_config_path: str | Path) -> Path:
    path = Path(run_config_path)
    return path.with_name(f"{path.stem}.accelerate.yaml")


def write_accelerate_config(config: RunConfig, run_config_path: str | Path) -> Path:
    """The accelerate config written beside the run config; returns its path."""
    path = accelerate_config_path(run_config_path)
    try:
        path.write_text(f"# accelerate launch --config_file of the run config {Path(run_config_path).name}, rewritten "
                        "by every `trainer train --launch`: change the run config, not this file\n"
                        + yaml.safe_dump(accelerate_config(config), sort_keys=False))
    except OSError as exc:
        raise ConfigError(f"cannot write the accelerate config {path}: {exc}") from exc
    return path


def _get_json(url: str, timeout_s: float) -> Any:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        if response.status != 200:
            raise ConfigError(f"{url} answered HTTP {response.status}")
        body = response.read()
    return json.loads(body) if body else None


def check_vllm_server(config: RunConfig, timeout_s: float = 10.0) -> str:
    """With ``vllm_mode: server``: the server is healthy and serves ``config.model``; returns the served model id."""
    base = f"http://{config.vllm_server_host}:{config.vllm_server_port}"
    try:
        _get_json(f"{base}/health", timeout_s)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConfigError(f"the vLLM server at {base} is unreachable ({reason}): start it first, e.g. "
                          f"CUDA_VISIBLE_DEVICES={config.vllm_gpu_ids or '0'} trl vllm-serve --model {config.model} "
                          f"--port {config.vllm_server_port}") from exc
    try:
        models = _get_json(f"{base}/v1/models", timeout_s)
        served = [m.get("id") for m in (models or {}).get("data", []) if isinstance(m, dict)]
    except (urllib.error.URLError, OSError, ValueError, AttributeError) as exc:
        raise ConfigError(f"the vLLM server at {base} is healthy but does not list its model at /v1/models "
                          f"({getattr(exc, 'reason', exc)}): is it `trl vllm-serve` of a matching TRL version?") \
            from exc
    if config.model not in served:
        raise ConfigError(f"the vLLM server at {base} serves {', '.join(map(str, served)) or 'no model'}, not the "
                          f"run's model {config.model}: restart it with --model {config.model}")
    return config.model


def launch_command(accelerate_path: Path, train_argv: list[str], processes: int = 1) -> list[str]:
    """The ``accelerate launch`` command; several processes rendezvous on a port free now (one machine), not on
    torchrun's fixed 29500, which another run on the host may hold."""
    from trainer.vllm_env import free_port

    port = ["--main_process_port", str(free_port())] if processes > 1 else []
    return [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(accelerate_path), *port,
            "-m", "trainer.cli", "train", *train_argv]


def launch(config: RunConfig, run_config_path: str | Path, train_argv: list[str]) -> int:
    """Checks the layout, writes the accelerate config beside the run config and runs ``accelerate launch``.

    ``train_argv``: the ``trainer train`` arguments each process gets (the run config and flags, not --launch).
    """
    import importlib.util

    if importlib.util.find_spec("accelerate") is None:
        raise ConfigError("accelerate is not installed: pip install -e '.[trainer]'")
    if config.sharding not in SHARDINGS:
        raise ConfigError(f"sharding must be one of {', '.join(SHARDINGS)}, not {config.sharding!r}")
    train = check_gpu_split(config)
    if config.generation == "vllm" and config.vllm_mode == "server":
        check_vllm_server(config)
    path = write_accelerate_config(config, run_config_path)
    env = dict(os.environ)
    if train:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, train))
    command = launch_command(path, train_argv, config.processes)
    print(f"launching {config.processes} training process(es)"
          + (f" on GPU(s) {env['CUDA_VISIBLE_DEVICES']}" if train else " on the CPU")
          + f" with {path}", file=sys.stderr)
    return subprocess.run(command, env=env, check=False).returncode
