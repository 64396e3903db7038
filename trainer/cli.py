"""The ``trainer`` command: ``config`` (validated recipe + memory estimate), ``train``, ``sample``, ``gate``,
``diagnose``."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import yaml

from trainer.config import RunConfig, add_run_flags, flags_to_changes
from trainer.errors import TrainerError


def _load(args: argparse.Namespace) -> RunConfig:
    config = RunConfig.from_yaml(args.config) if args.config else RunConfig()
    return config.override(flags_to_changes(args))


def cmd_config(args: argparse.Namespace) -> int:
    from trainer import memory

    config = _load(args)
    plan = estimate = None
    zero_stage = 0
    if args.model_size:
        try:
            shape = memory.parse_size(args.model_size)
            plan = memory.recommend(shape, gpus=args.gpus, gpu_memory_gb=args.gpu_memory,
                                    generation=config.generation)
        except ValueError as exc:
            raise TrainerError(str(exc)) from exc
        explicit = flags_to_changes(args)  # what the user set stays; the plan fills in the rest
        planned = {**plan.as_run_config_changes(), "zero_stage": plan.zero_stage if plan.training_gpus > 1 else 0}
        if plan.generation == "vllm" and plan.vllm_mode == "server":  # the server's GPUs first, training on the rest
            planned.update(vllm_gpu_ids=",".join(map(str, range(plan.vllm_gpus))),
                           gpu_ids=",".join(map(str, range(plan.vllm_gpus, plan.vllm_gpus + plan.training_gpus))))
        config = config.override({k: v for k, v in planned.items() if k not in explicit})
        if config.lora and "lora" not in explicit and "lora" not in config.deviation_reasons:
            config = config.override({"deviation_reasons": {
                **config.deviation_reasons, "lora": f"trainer config --model-size {args.model_size}: full fine-tuning "
                f"does not fit {args.gpus} x {args.gpu_memory:g} GB (the memory plan turned LoRA on)"}})
        zero_stage = config.zero_stage if config.num_gpus > 1 else 0
        estimate = memory.estimate_config(shape, config, gpu_memory_gb=args.gpu_memory, zero_stage=zero_stage)
    deviations = config.validate()
    if args.output:
        from trainer.launch import write_accelerate_config

        try:
            Path(args.output).write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
        except OSError as exc:
            raise TrainerError(f"cannot write the run config {args.output}: {exc}") from exc
        accelerate_path = write_accelerate_config(config, args.output)
        print(f"run config: {args.output}; accelerate config: {accelerate_path} (trainer train --config "
              f"{args.output} --launch)", file=sys.stderr)
    out = sys.stdout
    out.write("# Validated GRPO run config (trainer train --config FILE)\n")
    out.write(yaml.safe_dump(config.to_dict(), sort_keys=False))
    out.write("\n# GRPOConfig keyword values it produces:\n")
    for key, value in config.to_grpo_kwargs().items():
        out.write(f"#   {key} = {value!r}\n")
    out.write("# Deviations from the reference recipe:\n")
    for d in deviations or ["none"]:
        out.write(f"#   - {d}\n")
    if plan is not None and estimate is not None:
        out.write(f"\n# Memory of this config, {args.model_size} on {args.gpus} x {args.gpu_memory:g} GB (the model "
                  f"of docs/grpo-memory-model.md; one-GPU layouts checked against H200 measurements, "
                  f"docs/grpo-memory.md):\n")
        for line in memory.render_estimate(estimate).splitlines():
            out.write(f"#   {line}\n")
        out.write(f"#   ZeRO stage: {zero_stage}\n")
        if not plan.fits:
            out.write(f"#   The cheapest layout tried does not fit either: {plan.reason}\n")
    return 0


def cmd_train(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    config = _load(args)
    deviations = config.validate()
    if not config.model or not config.dataset:
        raise TrainerError("model and dataset are required (in the YAML file or as --model / --dataset)")
    if args.launch:
        from trainer.launch import launch

        if not args.config:
            raise TrainerError("--launch needs the run config file (--config FILE): the accelerate config is "
                               "written beside it and each process reads it")
        child_argv = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--launch"]
        if child_argv and child_argv[0] == "train":
            child_argv = child_argv[1:]
        return launch(config, args.config, child_argv)
    from trainer.train import run_training

    args.interrupted = lambda: _train_kept(config, existed=Path(config.output_dir).exists())
    record = run_training(config, deviations, config_path=args.config, changed=flags_to_changes(args))
    timing = record["reward_timing"] if record is not None else None
    if timing:
        print(f"reward wait: {timing['mean_reward_wait_s']:.2f}s of {timing['mean_step_s']:.2f}s per step "
              f"({timing['mean_share']:.0%} on average, at most {timing['max_share']:.0%})", file=sys.stderr)
    if record is not None:  # None on the other processes of a launch: the main one writes the record
        print(f"run record: {config.output_dir}/run.json", file=sys.stderr)
    return 0


def _train_kept(config: RunConfig, existed: bool) -> str:
    """Ctrl-C before training started: an output directory this run made and left empty is removed."""
    out = Path(config.output_dir)
    if not existed and out.is_dir() and not any(out.iterdir()):
        out.rmdir()
    return "before the first step: nothing kept (no run.json, no checkpoint)"


def _add_data_flags(parser: argparse.ArgumentParser) -> None:
    """The run settings sampling and the gates read (the full set belongs to config and train)."""
    parser.add_argument("--config", help="run config YAML (the one `trainer train` will use)")
    for name, help_text in (("model", "model path or hub id"), ("dataset", "prompt dataset with the spec column"),
                            ("output-dir", "the run's output directory (gates go to OUTPUT_DIR/gates)"),
                            ("gates-dir", "gate records directory (default: OUTPUT_DIR/gates)"),
                            ("verifier", "HOST:PORT of the verifier service"),
                            ("spec-column", "dataset column of the verification specs"), ("seed", "random seed")):
        parser.add_argument(f"--{name}", dest=name.replace("-", "_"), default=None, help=help_text)


def _load_with_data(args: argparse.Namespace):
    from trainer.train import load_prompts

    config = _load(args)
    if not config.dataset:
        raise TrainerError("a dataset is required (in the YAML file or as --dataset)")
    return config, load_prompts(config)


def cmd_sample(args: argparse.Namespace) -> int:
    from trainer.sample import sample_completions, write_samples

    config, dataset = _load_with_data(args)
    if not config.model:
        raise TrainerError("a model is required (in the YAML file or as --model)")
    args.interrupted = lambda: f"while sampling: nothing kept ({args.output} is written when sampling ends)"
    samples = sample_completions(config.model, dataset, n=args.n, temperature=args.sample_temperature,
                                 max_new_tokens=args.max_new_tokens or config.max_completion_length,
                                 spec_column=config.spec_column, prompts=args.prompts, seed=config.seed,
                                 backend=args.backend)
    write_samples(args.output, samples)
    args.interrupted = lambda: f"kept the samples in {args.output}"
    print(f"{len(samples)} completions ({args.n} per prompt) written to {args.output}", file=sys.stderr)
    if args.report is None:
        print(f"read them with `verifier-service inspect --input {args.output} --report DIR`", file=sys.stderr)
        return 0
    # Straight on to the inspection report, against the run's verifier service: the verifier's own `inspect`
    # command, run as a program (the trainer is the service's client, never its command line).
    import subprocess

    status = subprocess.call([sys.executable, "-m", "verifier_service.tools.cli", "inspect",
                              "--input", str(args.output), "--report", str(args.report), "--server", config.verifier,
                              *(["--server-ca", config.verifier_tls_ca] if config.verifier_tls_ca else []),
                              *(["--client-cert", config.verifier_tls_cert, "--client-key", config.verifier_tls_key]
                                if config.verifier_tls_cert else [])])
    if status in (0, 3):
        from trainer.gates import gate_flags

        flags, _ = gate_flags(args.config, {k: v for k, v in vars(args).items() if v is not None})
        print(f"open {args.report}/report.html, record a reading per card, export the labels to "
              f"{args.report}/labels.jsonl, then run `trainer gate inspect {flags + ' ' if flags else ''}--report "
              f"{args.report} --signed-off-by NAME`", file=sys.stderr)
    return status


def _base_rate_kept(config: RunConfig, samples: Path | None, started: float) -> str:
    from trainer import gates

    made = gates.gates_dir(config) / "base_rate_samples.jsonl"
    if samples is None and made.exists() and made.stat().st_mtime >= started:
        return (f"kept the samples in {made} (verify them without sampling again: trainer gate base-rate ... "
                f"--samples {made}); no gate record written")
    return "nothing kept; no gate record written"


def cmd_gate(args: argparse.Namespace) -> int:
    import time

    from trainer import gates

    started = time.time()
    config, dataset = _load_with_data(args)
    if args.gate == "base-rate":
        if not config.model:
            raise TrainerError("a model is required (in the YAML file or as --model)")
        args.interrupted = lambda: _base_rate_kept(config, args.samples, started)
        record, path = gates.run_base_rate_gate(config, dataset, k=args.k, temperature=args.sample_temperature,
                                                prompts=args.prompts, samples_file=args.samples,
                                                backend=args.backend, replace=args.replace)
        k = record["k"]
        lo, hi = record["pass@1_ci"]
        klo, khi = record[f"pass@{k}_ci"]
        per_prompt = sorted({p["n"] for p in record["per_prompt"]})
        each = str(per_prompt[0]) if len(per_prompt) == 1 else f"{per_prompt[0]}-{per_prompt[-1]}"
        source = f"from {args.samples}" if args.samples else f"at temperature {record['temperature']:g}"
        print(f"base rate of {config.model} over {record['prompts']} prompts x {each} samples {source}: "
              f"pass@1 {record['pass@1']:.3f} (95% CI {lo:.3f}-{hi:.3f}), "
              f"pass@{k} {record[f'pass@{k}']:.3f} (95% CI {klo:.3f}-{khi:.3f}); {record['zero_variance_share']:.0%} "
              f"of groups with zero reward variance; {record['infra_errors']} INFRA_ERROR", file=sys.stderr)
        for warning in record["warnings"]:
            print(f"warning: {warning}", file=sys.stderr)
        if not record["passed"]:
            print(f"base-rate gate FAILED: {record['advice']}", file=sys.stderr)
        else:
            print("base-rate gate passed", file=sys.stderr)
        old = record.get("replaced")
        if old:
            print(f"replaced the earlier record ({'passed' if old['passed'] else 'FAILED'}, {old['samples']} samples, "
                  f"{old['created_at']})", file=sys.stderr)
    elif args.gate == "audit":
        from trainer.audit_gate import run_audit_gate

        code, record, path = run_audit_gate(config, dataset, args, embedded=args.embedded)
        print(f"gate record: {path} (reward config {record['reward_config_hash'][:12]})", file=sys.stderr)
        return code
    else:
        record, path = gates.run_inspection_gate(config, dataset, report_dir=args.report, labels_file=args.labels,
                                                 signed_off_by=args.signed_off_by, min_read=args.min_read,
                                                 min_agreement=args.min_agreement)
        print(f"human-verifier agreement {record['agreement']:.1%} over {record['read']} read samples "
              f"(95% CI {record['agreement_ci'][0]:.3f}-{record['agreement_ci'][1]:.3f}); "
              f"{len(record['disagreements'])} disagreement(s)", file=sys.stderr)
        for d in record["disagreements"]:
            print(f"  disagree {d['id']}: verdict {d['verdict']}, reward {d['reward']}: {d['comment']}",
                  file=sys.stderr)
        if record["passed"]:
            print(f"inspection gate passed, signed off by {record['signed_off_by']}", file=sys.stderr)
        else:
            print("inspection gate FAILED:\n  - " + "\n  - ".join(record["problems"]), file=sys.stderr)
    print(f"gate record: {path} (reward config {record['reward_config_hash'][:12]})", file=sys.stderr)
    return 0 if record["passed"] else gates.EXIT_GATE_FAILED


def cmd_diagnose(args: argparse.Namespace) -> int:
    """Exit 0: no finding (healthy); 1: findings (with evidence and a patch); 2: an error."""
    import json

    from trainer import diagnose

    changes = {}
    for item in args.threshold:
        name, sep, value = item.partition("=")
        if not sep:
            raise TrainerError(f"--threshold takes NAME=VALUE, not {item!r}")
        changes[name.strip()] = value.strip()
    report = diagnose.build_report(args.run_dir, diagnose.Thresholds().override(changes), base_config=args.config)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        diagnose.render(report)
    if args.patch_out:
        if report.merged.patch:
            Path(args.patch_out).write_text(diagnose.patch_yaml(report))
            print(f"patched run config: {args.patch_out} (trainer train --config {args.patch_out})", file=sys.stderr)
        else:
            print(f"no patch to write: {args.patch_out} not written", file=sys.stderr)
    if not report.diagnosis.findings and not report.diagnosis.ran:
        raise TrainerError(f"nothing to diagnose: every check was skipped ({len(report.run.history)} log entries in "
                           f"{report.run.source}; a run needs logged training steps: logging_steps below the "
                           "run's length)")
    return diagnose.EXIT_HEALTHY if report.diagnosis.healthy else diagnose.EXIT_FINDINGS


def cmd_data(args: argparse.Namespace) -> int:
    """``trainer data convert``: a benchmark's rows -> prompt + spec JSONL (trainer/convert.py)."""
    from trainer import convert

    try:
        converted = convert.convert(args.format, args.input)
        convert.write_jsonl(converted.rows, args.output)
    except convert.ConvertError as exc:
        raise TrainerError(str(exc)) from exc
    skipped = sum(converted.skipped.values())
    print(f"{args.output}: {len(converted.rows)} problem(s) from {args.input} ({args.format})"
          + (f"; {skipped} skipped: " + ", ".join(f"{n} {why}" for why, n in converted.skipped.items())
             if skipped else ""), file=sys.stderr)
    for rid, why in converted.flagged.items():
        print(f"  flagged {rid}: {why}", file=sys.stderr)
    if not args.check:
        return 0
    from verifier_service.errors import VerifierError
    from verifier_service.tools.sync import verify

    requests = convert.reference_requests(converted.rows)
    if not requests:
        raise TrainerError("--check: the dataset carries no reference solutions to verify")
    from verifier_service.config import load_config

    try:  # the embedded service takes its settings from the environment (RLVR_VERIFIER_SANDBOX_IMAGE, ...)
        results = verify(requests, server=args.server, config=load_config())
    except VerifierError as exc:
        raise TrainerError(f"--check: {exc}") from exc
    failed = [r for r in results if r["verdict"] != "PASSED"]
    for r in failed:
        print(f"  reference of {r['id']}: {r['verdict']}: {r['detail'][:200]}", file=sys.stderr)
    print(f"--check: {len(results) - len(failed)} of {len(results)} reference solution(s) PASSED", file=sys.stderr)
    return 1 if failed else 0


def _format_choice(value: str) -> str:
    from trainer.convert import FORMATS, format_name

    name = format_name(value)
    if name not in FORMATS:
        raise argparse.ArgumentTypeError(f"unknown format {value!r}; formats: {', '.join(sorted(FORMATS))}")
    return name


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trainer", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    config = sub.add_parser("config", help="print the validated run config and its memory estimate")
    config.add_argument("--config", help="a run config YAML to start from")
    config.add_argument("--model-size", help="target size class (0.5B, 1.5B, 3B, 7B, 14B, 32B, 70B)")
    config.add_argument("--gpus", type=int, default=1, help="GPUs available")
    config.add_argument("--gpu-memory", type=float, default=80.0, help="memory of one GPU in GB")
    config.add_argument("--output", help="also write the run config to this YAML file, and its accelerate config "
                        "beside it (FILE.accelerate.yaml) for trainer train --launch")
    add_run_flags(config)
    train = sub.add_parser("train", help="run GRPO against the verifier service")
    train.add_argument("--config", help="run config YAML")
    train.add_argument("--launch", action="store_true", help="run the config's process layout through "
                       "`accelerate launch` (accelerate config written beside the run config; GPUs split from the "
                       "vLLM server's; the server checked first)")
    add_run_flags(train)
    sample = sub.add_parser("sample", help="N completions per prompt from the model, as verify JSONL with prompt")
    _add_data_flags(sample)
    sample.add_argument("--output", type=Path, required=True, help="samples JSONL to write")
    sample.add_argument("--n", type=int, default=4, help="completions per prompt")
    sample.add_argument("--prompts", type=int, default=0, help="prompts drawn at random (0: all)")
    sample.add_argument("--temperature", dest="sample_temperature", type=float, default=1.0,
                        help="sampling temperature (default: 1.0, what GRPO samples at)")
    sample.add_argument("--max-new-tokens", type=int, default=0, help="default: max_completion_length")
    sample.add_argument("--backend", default="auto", choices=("auto", "transformers", "vllm"),
                        help="auto: vLLM when installed and a GPU is present")
    sample.add_argument("--report", type=Path, default=None,
                        help="also verify the samples and write the inspection report here (needs the service)")
    gate = sub.add_parser("gate", help="the pre-training gates: base-rate and inspect")
    gate_sub = gate.add_subparsers(dest="gate", required=True)
    base = gate_sub.add_parser("base-rate", help="does the model ever succeed? pass@1 / pass@k at low temperature")
    _add_data_flags(base)
    base.add_argument("--k", type=int, default=8, help="completions per prompt")
    base.add_argument("--prompts", type=int, default=64, help="prompts drawn at random (0: all)")
    base.add_argument("--temperature", dest="sample_temperature", type=float, default=0.2,
                      help="sampling temperature (low: the gate asks whether the model can succeed at all)")
    base.add_argument("--samples", type=Path, help="verify this samples JSONL instead of sampling")
    base.add_argument("--backend", default="auto", choices=("auto", "transformers", "vllm"))
    base.add_argument("--replace", action="store_true", help="replace a record of this reward config and model "
                      "that measured more samples (refused otherwise)")
    insp = gate_sub.add_parser("inspect", help="sign off the human reading of an inspection report")
    _add_data_flags(insp)
    insp.add_argument("--report", type=Path, required=True, help="the `verifier-service inspect` report directory")
    insp.add_argument("--labels", type=Path, help="labels JSONL (default: REPORT/labels.jsonl)")
    insp.add_argument("--signed-off-by", required=True, help="who read the samples")
    insp.add_argument("--min-read", type=int, default=50, help="read samples needed")
    insp.add_argument("--min-agreement", type=float, default=0.95, help="human-verifier agreement needed")
    from verifier_service.tools.audit.cli import EXIT_CODES as AUDIT_EXIT_CODES
    from verifier_service.tools.audit.cli import add_audit_flags

    audit = gate_sub.add_parser("audit", help="self-test every row: the reference passes, steadily; probes (empty, "
                                "stubs, the prompt's literals, a hack corpus) earn nothing", epilog=AUDIT_EXIT_CODES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_data_flags(audit)
    add_audit_flags(audit, dataset_flag=False)
    audit.add_argument("--embedded", action="store_true",
                       help="verify with a service started in this process (default: the run's verifier)")
    diag = sub.add_parser("diagnose", help="diagnose a run from its logged metrics; propose a validated patch "
                          "(exit 0: healthy, 1: findings, 2: error)")
    diag.add_argument("run_dir", metavar="RUN_DIR", help="the run's output_dir (run.json), a checkpoint directory "
                      "(trainer_state.json), or either file")
    diag.add_argument("--patch-out", metavar="FILE", help="write the run's config with the patch on top (YAML for "
                      "trainer train --config)")
    diag.add_argument("--config", help="the run config YAML to patch (default: the config recorded in run.json)")
    diag.add_argument("--json", action="store_true", help="the report as JSON on stdout")
    diag.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE",
                      help="override a threshold of trainer/diagnose/checks.py Thresholds (repeatable)")
    data = sub.add_parser("data", help="dataset tools: convert a benchmark's rows into prompt + spec JSONL")
    data_sub = data.add_subparsers(dest="data", required=True)
    conv = data_sub.add_parser("convert", help="HumanEval, MBPP, evalplus, CodeContests, LiveCodeBench, GSM8K or "
                               "MATH rows -> {id, prompt, verification, reference} JSONL for trainer train")
    from trainer.convert import FORMATS

    conv.add_argument("--format", required=True, type=_format_choice, metavar="{" + ",".join(sorted(FORMATS)) + "}",
                      help="the input's dataset format (the datasets' own names work too: code_contests, "
                      "mbpp_sanitized, openai_humaneval)")
    conv.add_argument("--input", type=Path, required=True, help="the dataset's rows: JSONL, a JSON list or Parquet")
    conv.add_argument("--output", type=Path, required=True, help="JSONL to write")
    conv.add_argument("--check", action="store_true",
                      help="verify each row's reference solution (exit 1 unless all PASSED)")
    conv.add_argument("--server", help="HOST:PORT of the service for --check (default: an embedded one)")
    return parser


def _close_progress_bars() -> None:
    """Ends the lines of the progress bars still open (the trainer's, the reward calls'): interrupted mid-bar,
    stderr is left mid-line."""
    try:
        from tqdm import tqdm
    except ImportError:
        return
    for bar in list(getattr(tqdm, "_instances", ())):
        try:
            bar.close()
        except Exception:  # noqa: BLE001 - a bar that cannot close must not hide what was kept
            pass


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "config":
            return cmd_config(args)
        if args.command == "sample":
            return cmd_sample(args)
        if args.command == "gate":
            return cmd_gate(args)
        if args.command == "diagnose":
            return cmd_diagnose(args)
        if args.command == "data":
            return cmd_data(args)
        return cmd_train(args, argv)
    except TrainerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        _close_progress_bars()  # the bar's line ends, so the message below starts a line of its own
        kept = getattr(exc, "kept", None) or (args.interrupted() if hasattr(args, "interrupted") else "nothing kept")
        print(f"interrupted (Ctrl-C) {kept}" if kept.startswith(("at step", "before", "while")) else
              f"interrupted (Ctrl-C): {kept}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
