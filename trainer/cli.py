"""The ``trainer`` command: ``config`` (validated recipe + memory estimate) and ``train``."""

from __future__ import annotations

import argparse
import logging
import sys

import yaml

from trainer.config import RunConfig, add_run_flags, flags_to_changes
from trainer.errors import TrainerError


def _load(args: argparse.Namespace) -> RunConfig:
    config = RunConfig.from_yaml(args.config) if args.config else RunConfig()
    return config.override(flags_to_changes(args))


def cmd_config(args: argparse.Namespace) -> int:
    from trainer import memory

    config = _load(args)
    plan = None
    if args.model_size:
        try:
            shape = memory.parse_size(args.model_size)
        except ValueError as exc:
            raise TrainerError(str(exc)) from exc
        plan = memory.recommend(shape, gpus=args.gpus, gpu_memory_gb=args.gpu_memory)
        config = config.override({k: v for k, v in plan.as_run_config_changes().items()
                                  if k not in flags_to_changes(args)})
    deviations = config.validate()
    out = sys.stdout
    out.write("# Validated GRPO run config (trainer train --config FILE)\n")
    out.write(yaml.safe_dump(config.to_dict(), sort_keys=False))
    out.write("\n# GRPOConfig keyword values it produces:\n")
    for key, value in config.to_grpo_kwargs().items():
        out.write(f"#   {key} = {value!r}\n")
    out.write("# Deviations from the reference recipe:\n")
    for d in deviations or ["none"]:
        out.write(f"#   - {d}\n")
    if plan is not None:
        out.write(f"\n# Memory plan for {args.model_size} on {args.gpus} x {args.gpu_memory:g} GB "
                  f"(an estimate from a stated model; see docs/grpo-memory-model.md):\n")
        for line in memory.render_estimate(plan.estimate).splitlines():
            out.write(f"#   {line}\n")
        out.write(f"#   ZeRO stage: {plan.zero_stage}\n")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from trainer.train import run_training

    config = _load(args)
    deviations = config.validate()
    if not config.model or not config.dataset:
        raise TrainerError("model and dataset are required (in the YAML file or as --model / --dataset)")
    record = run_training(config, deviations)
    timing = record["reward_timing"]
    if timing:
        print(f"reward wait: {timing['mean_reward_wait_s']:.2f}s of {timing['mean_step_s']:.2f}s per step "
              f"({timing['mean_share']:.0%} on average, at most {timing['max_share']:.0%})", file=sys.stderr)
    print(f"run record: {config.output_dir}/run.json", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trainer", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    config = sub.add_parser("config", help="print the validated run config and its memory estimate")
    config.add_argument("--config", help="a run config YAML to start from")
    config.add_argument("--model-size", help="target size class (0.5B, 1.5B, 3B, 7B, 14B, 32B, 70B)")
    config.add_argument("--gpus", type=int, default=1, help="GPUs available")
    config.add_argument("--gpu-memory", type=float, default=80.0, help="memory of one GPU in GB")
    add_run_flags(config)
    train = sub.add_parser("train", help="run GRPO against the verifier service")
    train.add_argument("--config", help="run config YAML")
    add_run_flags(train)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "config":
            return cmd_config(args)
        return cmd_train(args)
    except TrainerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
