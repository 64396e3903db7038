"""The e2e RLVR run in one command: data, model, verifier service, gates, evaluation, GRPO training, report.

    python -m examples.e2e.pipeline --state-dir /tmp/e2e                        # every stage, in order
    python -m examples.e2e.pipeline --state-dir /tmp/e2e --stages train --train-budget-s 480

Stages (``--stages`` runs a subset; what they make persists in the state dir, so later calls continue):

- ``data``: the task splits (``examples/e2e/tasks.py``) -> ``data/train.jsonl``, ``data/heldout.jsonl``
- ``model``: SmolLM2-135M-Instruct from a GGUF (``--gguf``) as an HF folder -> ``model/`` (``--tiny-model``: a
  tiny random model, for CPU tests)
- ``service``: the verifier service on 127.0.0.1 (bwrap backend by default), health, ``doctor`` and a smoke check;
  every stage that needs it starts it again when it is not running (processes do not outlive a GPU call)
- ``inspect-prepare``: >= 60 train-split completions of the base model, verified, as an inspection report
  (``verifier-service inspect``) a person reads; then ``trainer gate inspect`` (see examples/e2e/README.md)
- ``gates``: the base-rate gate (must be non-zero, should be low), and the committed inspection record
  (``examples/e2e/gates/inspection.json``) copied where ``check_gates`` looks
- ``eval-before`` / ``eval-after``: held-out pass@1 and format compliance, Wilson 95% CIs, scored through the
  service and through the reference scorer, with their disagreements (must be 0)
- ``train``: ``run_training`` with the recipe's run config (deviations and reasons in the run config), an
  in-process shadow reward timed on the same batches, a wall-clock budget, a per-step metrics log
- ``report``: ``report/results.json``, the summary that ``examples/e2e/report.py`` renders into docs/e2e-run.md

Exit codes: 0 done, 2 a stage failed (the message says why), 4 a gate failed or is missing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from examples.e2e import tasks
from examples.e2e.service import ServiceError, ServiceHandle, ServiceSettings, doctor, ensure_service

log = logging.getLogger("e2e")
ROOT = Path(__file__).resolve().parents[2]
STAGES = ("data", "model", "service", "inspect-prepare", "gates", "eval-before", "train", "eval-after", "report")
DEFAULT_STAGES = ("data", "model", "service", "gates", "eval-before", "train", "eval-after", "report")
COMMITTED_INSPECTION = ROOT / "examples" / "e2e" / "gates" / "inspection.json"
EXIT_FAILED, EXIT_GATE = 2, 4
TARGETS = {"pass@1_gain": 0.10, "format_after": 0.90, "reward_wait_share": 0.03}


class PipelineError(Exception):
    """A stage cannot go on; ``code`` is the exit status."""

    def __init__(self, message: str, code: int = EXIT_FAILED):
        super().__init__(message)
        self.code = code


@dataclass
class PipelineConfig:
    state_dir: Path = Path("/tmp/e2e")
    seed: int = 3407
    train_tasks: int = 480
    heldout_tasks: int = 120
    levels: str = "1,2,3"
    gguf: str = ""                       # '' = STATE/gguf/SmolLM2-135M-Instruct.Q4_1.gguf (joined by gpu_run.sh)
    tiny_model: bool = False
    service: ServiceSettings = field(default_factory=ServiceSettings)
    max_new_tokens: int = 256
    base_rate_k: int = 8
    base_rate_prompts: int = 64
    base_rate_temperature: float = 0.2
    inspect_prompts: int = 16
    inspect_n: int = 4
    eval_n: int = 1
    eval_temperature: float = 0.0        # greedy: the model's one answer per prompt
    train_budget_s: float = 480.0
    shadow_every: int = 1                # the in-process shadow reward on every n-th batch (it costs step time)
    max_steps: int = 1000                # the budget ends the run first
    num_generations: int = 8
    batch_size: int = 64                 # completions per optimizer step (8 prompts x 8)
    learning_rate: float = 1e-5
    beta: float = 0.01
    generation: str = ""                 # vllm (the recipe) or transformers; '' = vllm, transformers with --cpu
    vllm_gpu_memory_utilization: float = 0.3
    vllm_enable_sleep_mode: bool = False   # the GPU has room for both: sleep mode only slows the steps down
    cpu: bool = False
    skip_gates: bool = False
    inspection_record: Path = COMMITTED_INSPECTION

    @property
    def generation_backend(self) -> str:
        return self.generation or ("transformers" if self.cpu else "vllm")

    @property
    def model_dir(self) -> Path:
        return self.state_dir / "model"

    @property
    def run_dir(self) -> Path:
        return self.state_dir / "run"

    @property
    def gates_dir(self) -> Path:
        return self.state_dir / "gates"

    def data(self, split: str) -> Path:
        return self.state_dir / "data" / f"{split}.jsonl"

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self), default=str))


# ---- the run config of training ---------------------------------------------------------------------------

DEVIATION_REASONS = {
    "learning_rate": "a 135M-parameter model trained for a few minutes: the recipe's 5e-7 (set for 7B-class models) "
                     "moves a model this small too little in ~60 steps",
    "generation": "transformers generation chosen explicitly (--generation transformers, or a CPU run): vLLM "
                  "needs a GPU",
    "per_device_train_batch_size": "8 prompts x 8 completions in one generate call: generation of a 135M model is "
                                   "latency-bound, a wide batch costs little more than a narrow one",
    "gradient_accumulation_steps": "the whole step's batch fits one micro-batch (135M parameters, 1.5 GiB)",
    "grpo_overrides.save_strategy": "no checkpoints: they filled the GPU machine's disk before; the final model "
                                    "is saved once",
}


def run_config(cfg: PipelineConfig, verifier: str):
    """The trainer's run config for this pipeline (validated by the caller)."""
    from trainer.config import RunConfig

    values: dict[str, Any] = dict(
        model=str(cfg.model_dir), dataset=str(cfg.data("train")), output_dir=str(cfg.run_dir), verifier=verifier,
        gates_dir=str(cfg.gates_dir), generation=cfg.generation_backend, num_generations=cfg.num_generations,
        per_device_train_batch_size=cfg.batch_size, gradient_accumulation_steps=1, learning_rate=cfg.learning_rate,
        beta=cfg.beta, max_completion_length=cfg.max_new_tokens, temperature=1.0, max_steps=cfg.max_steps,
        logging_steps=1, save_steps=100000, gradient_checkpointing=False, seed=cfg.seed,
        grpo_overrides={"save_strategy": "no"}, skip_gates=cfg.skip_gates, deviation_reasons=dict(DEVIATION_REASONS),
    )
    if cfg.generation_backend == "vllm":
        values.update(vllm_mode="colocate", vllm_gpu_memory_utilization=cfg.vllm_gpu_memory_utilization,
                      vllm_enable_sleep_mode=cfg.vllm_enable_sleep_mode)
    if cfg.cpu:
        values.update(use_cpu=True, bf16=False)
    return RunConfig.from_dict(values, where="e2e pipeline")


# ---- stages ----------------------------------------------------------------------------------------------------

class Rows(list):
    """Dataset rows as a list that also answers column access (``rows["verification"]``), as the gates read."""

    def __getitem__(self, key):
        if isinstance(key, str):
            return [row[key] for row in self]
        return super().__getitem__(key)

    @property
    def column_names(self) -> list[str]:
        return list(self[0]) if self else []


def read_rows(path: Path) -> Rows:
    if not path.exists():
        raise PipelineError(f"{path} does not exist: run the data stage first")
    return Rows(json.loads(line) for line in path.read_text().splitlines() if line.strip())


class Pipeline:
    def __init__(self, cfg: PipelineConfig):
        self.cfg = cfg
        self.state = cfg.state_dir
        self._service: ServiceHandle | None = None

    # -- helpers
    def service(self) -> ServiceHandle:
        if self._service is None:
            try:
                self._service = ensure_service(self.state, self.cfg.service)
            except ServiceError as exc:
                raise PipelineError(str(exc)) from exc
            log.info("verifier service at %s", self._service.address)
        return self._service

    def close(self) -> None:
        if self._service is not None:
            self._service.stop()
            self._service = None

    def write(self, relative: str, obj: Any) -> Path:
        path = self.state / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(obj, indent=2, default=str))
        return path

    def need_model(self, path: Path) -> None:
        if not (path / "config.json").exists():
            raise PipelineError(f"no model in {path}: run the {'model' if path == self.cfg.model_dir else 'train'} "
                                "stage first")

    # -- stages
    def data(self) -> dict:
        levels = tuple(int(x) for x in self.cfg.levels.split(","))
        paths = tasks.write_splits(self.state / "data", seed=self.cfg.seed, train=self.cfg.train_tasks,
                                   heldout=self.cfg.heldout_tasks, levels=levels)
        return {split: {"path": str(p), "rows": len(p.read_text().splitlines())} for split, p in paths.items()}

    def model(self) -> dict:
        out = self.cfg.model_dir
        if (out / "config.json").exists():
            return {"model": str(out), "reused": True}
        if self.cfg.tiny_model:
            from trainer.tiny_model import build_tiny_model

            if self.cfg.generation_backend == "vllm":  # a head size and a context that vLLM's kernels take
                build_tiny_model(out, hidden_size=256, max_position_embeddings=4096)
            else:
                build_tiny_model(out)
            return {"model": str(out), "tiny": True}
        from examples.e2e.prepare_model import GGUF_NAME, convert

        gguf = Path(self.cfg.gguf) if self.cfg.gguf else self.state / "gguf" / GGUF_NAME
        if not gguf.is_file():
            raise PipelineError(f"no GGUF at {gguf}: join the halves first (examples/e2e/gpu_run.sh does it when "
                                ".gguf/a and .gguf/b have both been carried), or give --gguf")
        started = time.monotonic()
        convert(gguf, out, dtype="float32")  # TRL trains fp32 weights: base and trained model evaluated alike
        return {"model": str(out), "gguf": str(gguf), "dtype": "float32", "convert_s": time.monotonic() - started}

    def service_stage(self) -> dict:
        handle = self.service()
        code = doctor(self.cfg.service, self.state / "logs" / "doctor.txt")
        from trainer.gates import verify_samples

        row = read_rows(self.cfg.data("train"))[0]
        spec = json.loads(row["verification"])
        entry = spec["entry_point"]
        right = "```python\n" + _reference_source(row) + "\n```"
        checks = [{"id": "right", "completion": right, "spec": spec},
                  {"id": "wrong", "completion": f"```python\ndef {entry}(*a):\n    return None\n```", "spec": spec},
                  {"id": "malformed", "completion": f"def {entry}(*a): return None", "spec": spec}]
        results = {r["id"]: r["verdict"] for r in verify_samples(handle.address, checks)}
        expected = {"right": "PASSED", "wrong": "FAILED", "malformed": "MALFORMED"}
        if results != expected:
            raise PipelineError(f"the service's smoke check went wrong: {results}, expected {expected} "
                                f"(log: {handle.log_path})")
        return {"address": handle.address, "backend": self.cfg.service.backend, "doctor_exit": code,
                "smoke": results}

    def inspect_prepare(self) -> dict:
        from trainer.sample import sample_completions, write_samples
        from verifier_service.tools.cli import main as verifier_main

        self.need_model(self.cfg.model_dir)
        rows = read_rows(self.cfg.data("train"))
        samples = sample_completions(str(self.cfg.model_dir), rows, n=self.cfg.inspect_n, temperature=1.0,
                                     max_new_tokens=self.cfg.max_new_tokens, prompts=self.cfg.inspect_prompts,
                                     seed=self.cfg.seed, backend=self.cfg.generation_backend)
        path = self.state / "inspect" / "samples.jsonl"
        write_samples(path, samples)
        report = self.state / "inspect" / "report"
        status = verifier_main(["inspect", "--input", str(path), "--report", str(report), "--server",
                                self.service().address, "--quiet"])
        if status not in (0, 3):
            raise PipelineError(f"verifier-service inspect failed with exit {status}")
        print(f"\nINSPECTION REPORT: {report}/report.html ({len(samples)} samples). Read every card, export the "
              f"labels, then sign off (see examples/e2e/README.md):\n  trainer gate inspect --dataset "
              f"{self.cfg.data('train')} --gates-dir examples/e2e/gates --report {report} --labels LABELS.jsonl "
              "--signed-off-by NAME\n", file=sys.stderr)
        return {"samples": len(samples), "report": str(report)}

    def gates(self) -> dict:
        from trainer.gates import GateError, run_base_rate_gate

        self.need_model(self.cfg.model_dir)
        rows = read_rows(self.cfg.data("train"))
        config = run_config(self.cfg, self.service().address)
        try:
            record, path = run_base_rate_gate(config, rows, k=self.cfg.base_rate_k,
                                              temperature=self.cfg.base_rate_temperature,
                                              prompts=self.cfg.base_rate_prompts,
                                              backend=self.cfg.generation_backend)
        except GateError as exc:
            raise PipelineError(f"base-rate gate: {exc}", EXIT_GATE) from exc
        summary = {k: record.get(k) for k in ("passed", "pass@1", "pass@1_ci", "samples", "prompts", "k",
                                               "zero_variance_share", "all_solved_share", "warnings", "infra_errors")}
        summary["record"] = str(path)
        if not record["passed"] and self.cfg.skip_gates:
            print(f"base-rate gate FAILED (zero successes in {record['samples']} samples); --skip-gates: going on "
                  "(the run records the skip as a deviation)", file=sys.stderr)
            summary["inspection"] = self.place_inspection_record(required=False)
            return summary
        if not record["passed"]:
            print("\n" + "!" * 100 + "\nBASE RATE IS ZERO: the model never solved a train task "
                  f"({record['samples']} samples). Make the tasks easier (--levels 1 or 1,2) and run the gates "
                  f"again; do not skip the gate.\n{record.get('advice', '')}\n" + "!" * 100 + "\n", file=sys.stderr)
            raise PipelineError("base-rate gate failed: zero successes", EXIT_GATE)
        for warning in record["warnings"]:
            print(f"base-rate warning: {warning}", file=sys.stderr)
        summary["inspection"] = self.place_inspection_record(required=False)
        return summary

    def place_inspection_record(self, required: bool) -> str:
        from trainer.gates import INSPECTION_FILE

        target = self.cfg.gates_dir / INSPECTION_FILE
        source = Path(self.cfg.inspection_record)
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            return f"copied {source} -> {target}"
        message = (f"no inspection gate record at {source}. Make it (once; examples/e2e/README.md): run the "
                   "inspect-prepare stage, read the report's cards, write the labels, then\n  trainer gate inspect "
                   f"--dataset {self.cfg.data('train')} --gates-dir {source.parent} --report REPORT_DIR "
                   "--labels LABELS.jsonl --signed-off-by NAME\nand commit it with the labels.")
        if required and not self.cfg.skip_gates:
            raise PipelineError(message, EXIT_GATE)
        print(f"warning: {message}", file=sys.stderr)
        return "missing"

    def evaluate(self, which: str) -> dict:
        from examples.e2e.evaluate import attach_tasks, score_both, summarise, write_jsonl
        from trainer.gates import verify_samples
        from trainer.sample import sample_completions, write_samples

        model = self.cfg.model_dir if which == "before" else self.cfg.run_dir
        self.need_model(model)
        rows = read_rows(self.cfg.data("heldout"))
        started = time.monotonic()
        samples = sample_completions(str(model), rows, n=self.cfg.eval_n, temperature=self.cfg.eval_temperature,
                                     max_new_tokens=self.cfg.max_new_tokens, seed=self.cfg.seed,
                                     backend=self.cfg.generation_backend)
        generate_s = time.monotonic() - started
        attach_tasks(samples, rows)
        write_samples(self.state / "eval" / f"{which}_samples.jsonl", samples)
        started = time.monotonic()
        results = verify_samples(self.service().address, [{k: s[k] for k in ("id", "completion", "spec")}
                                                          for s in samples])
        service_s = time.monotonic() - started
        started = time.monotonic()
        scored = score_both(samples, results)
        reference_s = time.monotonic() - started
        write_jsonl(self.state / "eval" / f"{which}_scored.jsonl", scored)
        summary = {"model": str(model), "generation": self.cfg.generation_backend,
                   "n_per_prompt": self.cfg.eval_n, "temperature": self.cfg.eval_temperature,
                   "max_new_tokens": self.cfg.max_new_tokens, "generate_s": generate_s, "service_s": service_s,
                   "reference_s": reference_s, **summarise(scored)}
        self.write(f"eval/{which}.json", summary)
        if summary["agreement"]["disagreements"]:
            print(f"warning: service and reference disagree on {summary['agreement']['disagreements']} "
                  f"completion(s): {summary['agreement']['examples'][:3]}", file=sys.stderr)
        return {k: summary[k] for k in ("pass@1", "format_compliance", "agreement")}

    def train(self) -> dict:
        from examples.e2e import reference
        from examples.e2e.callbacks import StepLog, TrainBudget
        from trainer.errors import TrainerError
        from trainer.sample import release_vllm
        from trainer.train import run_training

        self.need_model(self.cfg.model_dir)
        self.place_inspection_record(required=True)
        config = run_config(self.cfg, self.service().address)
        try:
            deviations = config.validate()
        except TrainerError as exc:
            raise PipelineError(f"run config refused: {exc}") from exc
        deviations.append("gradient_checkpointing=false; reason: 135M parameters fit without recomputation")
        release_vllm()  # a sampling engine of the gates' stage in this process: training colocates its own
        budget = TrainBudget(self.cfg.train_budget_s)
        steps = StepLog(self.cfg.run_dir / "steps.jsonl")
        try:
            record = run_training(config, deviations, shadow_reward=reference.reward_components,
                                  shadow_every=self.cfg.shadow_every,
                                  callbacks=[budget, steps])
        except TrainerError as exc:
            code = EXIT_GATE if type(exc).__name__ == "GateError" else EXIT_FAILED
            raise PipelineError(f"training refused or failed: {exc}", code) from exc
        self.write("run/budget.json", budget.summary())
        timing = record.get("reward_timing") or {}
        return {"steps": timing.get("steps"), "budget": budget.summary(), "reward_timing": timing,
                "deviations": record["deviations"], "shadow_disagreements": record.get("shadow_disagreements")}

    def report(self) -> dict:
        from examples.e2e.results import collect

        results = collect(self.state, self.cfg.to_dict(), TARGETS)
        path = self.write("report/results.json", results)
        return {"results": str(path), "targets": results["targets"]}

    def run(self, stages: list[str]) -> dict:
        methods = {"data": self.data, "model": self.model, "service": self.service_stage,
                   "inspect-prepare": self.inspect_prepare, "gates": self.gates,
                   "eval-before": lambda: self.evaluate("before"), "train": self.train,
                   "eval-after": lambda: self.evaluate("after"), "report": self.report}
        done = {}
        for stage in stages:
            started = time.monotonic()
            log.info("stage %s", stage)
            outcome = methods[stage]()
            outcome["seconds"] = round(time.monotonic() - started, 2)
            done[stage] = outcome
            self._record(stage, outcome)
            log.info("stage %s done in %.1fs: %s", stage, outcome["seconds"], _short(outcome))
        return done

    def _record(self, stage: str, outcome: dict) -> None:
        path = self.state / "stages.json"
        stages = json.loads(path.read_text()) if path.exists() else {}
        stages[stage] = {"finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **outcome}
        self.write("stages.json", stages)


def _reference_source(row: dict) -> str:
    """A function that returns the expected value of each of the row's cases (a lookup table of its cases): enough
    for a smoke check of the service's plumbing (PASSED), never used as a solution of anything."""
    spec = json.loads(row["verification"])
    table = json.dumps({json.dumps(c["args"]): c["expected"] for c in spec["cases"]})
    return (f"import json\n_T = json.loads({table!r})\n"
            f"def {spec['entry_point']}(*args):\n    return _T[json.dumps(list(args))]")


def _short(outcome: dict) -> str:
    return json.dumps(outcome, default=str)[:400]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m examples.e2e.pipeline", description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    d = PipelineConfig()
    p.add_argument("--stages", default=",".join(DEFAULT_STAGES), help=f"comma-separated, of {', '.join(STAGES)}")
    p.add_argument("--state-dir", type=Path, default=d.state_dir)
    for name in ("seed", "train_tasks", "heldout_tasks", "max_new_tokens", "base_rate_k", "base_rate_prompts",
                 "inspect_prompts", "inspect_n", "eval_n", "max_steps", "num_generations", "batch_size",
                 "shadow_every"):
        p.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(d, name))
    for name in ("base_rate_temperature", "eval_temperature", "train_budget_s", "learning_rate", "beta",
                 "vllm_gpu_memory_utilization"):
        p.add_argument(f"--{name.replace('_', '-')}", type=float, default=getattr(d, name))
    p.add_argument("--levels", default=d.levels, help="task difficulty levels, e.g. 1,2")
    p.add_argument("--gguf", default="", help="the SmolLM2 GGUF (default: STATE/gguf/<name>.gguf)")
    p.add_argument("--tiny-model", action="store_true", help="a tiny random model instead (CPU tests)")
    p.add_argument("--cpu", action="store_true", help="train on the CPU (fp32; transformers generation)")
    p.add_argument("--generation", default="", choices=("", "vllm", "transformers"),
                   help="sampling and training generation: vllm (default on a GPU; colocated with training), or "
                        "transformers (the default with --cpu)")
    p.add_argument("--vllm-enable-sleep-mode", action="store_true",
                   help="colocated vLLM sleeps during the optimizer step (less memory, slower steps)")
    p.add_argument("--skip-gates", action="store_true", help="train without the gates (recorded as a deviation)")
    p.add_argument("--inspection-record", type=Path, default=d.inspection_record)
    p.add_argument("--sandbox-backend", default=d.service.backend, choices=("bwrap", "docker"))
    p.add_argument("--bwrap-path", default=d.service.bwrap_path)
    p.add_argument("--bwrap-python", default=d.service.bwrap_python)
    p.add_argument("--service-concurrency", type=int, default=d.service.max_concurrency)
    return p


def config_from_args(args: argparse.Namespace) -> PipelineConfig:
    service = ServiceSettings(backend=args.sandbox_backend, bwrap_path=args.bwrap_path,
                              bwrap_python=args.bwrap_python, max_concurrency=args.service_concurrency)
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(PipelineConfig)
              if f.name != "service" and hasattr(args, f.name)}
    return PipelineConfig(service=service, **values)


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        print(f"error: unknown stage(s) {unknown}; stages: {', '.join(STAGES)}", file=sys.stderr)
        return EXIT_FAILED
    cfg = config_from_args(args)
    cfg.state_dir.mkdir(parents=True, exist_ok=True)
    (cfg.state_dir / "pipeline.json").write_text(json.dumps(cfg.to_dict(), indent=2))
    pipeline = Pipeline(cfg)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)  # so that `finally` stops the service this run started
    try:
        pipeline.run(stages)
    except PipelineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    finally:
        pipeline.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
