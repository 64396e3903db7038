"""Verifier throughput against the sandbox count (the warm pool's size) with the bwrap backend, on this machine.

    python -m benchmarks.verifier_scaling [--workers 1,2,4,8,16] [--items 512] [--rounds 2] [--bwrap-path bwrap]
                                          [--samples FILE] [--out DIR]

For each worker count an embedded service (gRPC ``VerifyBatch`` on loopback, bwrap warm pool of that many
sandboxes, warmed first) verifies:
- **throughput**: one batch of ``--items`` unique completions, ``--rounds`` times (checks/s, median);
- **a training batch**: 64 completions (8 prompts x 8, the e2e run's step), ``--rounds`` + 1 times (seconds,
  median), the reward wait a GRPO step sees when nothing else loads the machine.
The workload is the e2e run's ``python_io`` tasks (``examples/e2e/tasks.py``, level 3): per task a completion that
passes (a lookup table of the task's cases), one that fails and one that is malformed; or real model completions
(``--samples``: verify-JSONL with ``completion`` and ``spec``, e.g. the base-rate gate's samples). With the
synthetic workload every verdict is checked; with ``--samples`` the verdicts are counted (INFRA_ERROR must be 0).
The knee: the smallest worker count whose throughput is within 10 % of the best. Results:
``DIR/verifier_scaling.json`` and ``DIR/VERIFIER_SCALING.md`` (default benchmarks/).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from benchmarks.run import cpu_model, local_service

HERE = Path(__file__).resolve().parent
TRAIN_BATCH = 64
KNEE_WITHIN = 0.10


def synthetic_items(count: int, levels: tuple[int, ...] = (3,)) -> list[dict]:
    """Unique python_io completions of the e2e tasks with the verdict each must get."""
    from examples.e2e import tasks

    rows = [t.row() for t in tasks.generate(3407, max(1, count // 3 + 1), heldout=False, levels=levels)]
    items = []
    for row in rows:
        spec = json.loads(row["verification"])
        entry = spec["entry_point"]
        table = json.dumps({json.dumps(c["args"]): c["expected"] for c in spec["cases"]})
        right = (f"```python\nimport json\n_T = json.loads({table!r})\ndef {entry}(*args):\n"
                 f"    return _T[json.dumps(list(args))]\n```")
        items += [{"completion": right, "spec": spec, "expected": "PASSED"},
                  {"completion": f"```python\ndef {entry}(*a):\n    return None\n```", "spec": spec,
                   "expected": "FAILED"},
                  {"completion": f"def {entry}(*a): return None", "spec": spec, "expected": "MALFORMED"}]
    return items[:count]


def sample_items(path: Path, count: int) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not rows:
        raise SystemExit(f"{path} holds no samples")
    return [{"completion": rows[i % len(rows)]["completion"], "spec": rows[i % len(rows)]["spec"], "expected": None}
            for i in range(count)]


async def measure(workers: int, items: list[dict], rounds: int, bwrap_path: str, salt: str) -> dict:
    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service.spec import request_from_json

    def requests(chosen: list[dict], tag: str) -> list:
        # a unique trailing comment per request: no cache anywhere can answer it
        return [request_from_json({"id": str(i), "completion": it["completion"] + f"\n# {salt}-{tag}-{i}\n",
                                   "spec": it["spec"]}) for i, it in enumerate(chosen)]

    verdicts: Counter = Counter()
    wrong: list = []

    async def run(chosen: list[dict], tag: str) -> tuple[float, list]:
        started = time.perf_counter()
        results = await client.verify_batch(requests(chosen, tag))
        seconds = time.perf_counter() - started
        for it, r in zip(chosen, results, strict=True):
            got = pb.Verdict.Name(r.verdict)
            verdicts[got] += 1
            # the synthetic workload's verdicts are known; a real completion's verdict only may not be INFRA_ERROR
            if (it["expected"] and got != it["expected"]) or got == "INFRA_ERROR":
                wrong.append((got, it["expected"], r.detail[:200]))
        return seconds, results

    async with local_service(sandbox_backend="bwrap", bwrap_path=bwrap_path, max_concurrency=workers,
                             max_batch_size=100000) as client:
        await run(items[:workers * 2], "warm")
        throughput = []
        for r in range(rounds):
            seconds, _ = await run(items, f"t{r}")
            throughput.append(seconds)
        batch, queue, run_s = [], [], []
        for r in range(rounds + 1):
            chosen = [items[(r * TRAIN_BATCH + i) % len(items)] for i in range(TRAIN_BATCH)]
            seconds, results = await run(chosen, f"b{r}")
            batch.append(seconds)
            queue.append(max(x.timings.queue_s for x in results))
            run_s.append(max(x.timings.run_s for x in results))
    median = statistics.median(throughput)
    return {"workers": workers, "items": len(items), "rounds_s": throughput, "median_s": median,
            "checks_per_s": len(items) / median, "train_batch_s": batch, "train_batch_median_s":
            statistics.median(batch), "train_batch_max_queue_s": queue, "train_batch_max_run_s": run_s,
            "verdicts": dict(verdicts), "wrong": wrong[:10], "wrong_count": len(wrong)}


def knee(rows: list[dict]) -> int:
    best = max(r["checks_per_s"] for r in rows)
    return min(r["workers"] for r in rows if r["checks_per_s"] >= (1 - KNEE_WITHIN) * best)


def machine() -> dict:
    return {"cpus": os.cpu_count(), "cpu": cpu_model(), "python": platform.python_version(),
            "kernel": platform.release(),
            "load_start": " ".join(f"{x:.2f}" for x in os.getloadavg())}


def render(result: dict) -> str:
    m = result["machine"]
    rows = result["rows"]
    lines = ["# Verifier throughput against sandbox count (bwrap)", "",
             f"Machine: {m['cpus']} CPUs ({m['cpu']}), Python {m['python']}, kernel {m['kernel']}, load at start "
             f"{m['load_start']}. Workload: {result['workload']}; {rows[0]['items']} unique completions per "
             f"throughput batch, {result['rounds']} rounds; a {TRAIN_BATCH}-completion training batch "
             f"{result['rounds'] + 1} times. gRPC `VerifyBatch` on loopback to an embedded service, bwrap warm pool "
             "of N sandboxes. Regenerate: `python -m benchmarks.verifier_scaling` (the numbers below come from "
             f"{result.get('where', 'this machine')}).", "",
             "| sandboxes | checks/s (median) | speed-up vs 1 | 64-completion batch, median s | max queue s / max "
             "run s (last batch) | verdicts |", "|---:|---:|---:|---:|---|---|"]
    base = rows[0]["checks_per_s"]
    for r in rows:
        verdicts = ", ".join(f"{k} {v}" for k, v in sorted(r["verdicts"].items()))
        lines.append(f"| {r['workers']} | {r['checks_per_s']:.1f} | {r['checks_per_s'] / base:.2f}x | "
                     f"{r['train_batch_median_s']:.3f} | {r['train_batch_max_queue_s'][-1]:.3f} / "
                     f"{r['train_batch_max_run_s'][-1]:.3f} | {verdicts} |")
    lines += ["", f"Knee (the fewest sandboxes within {KNEE_WITHIN:.0%} of the best throughput): **{result['knee']}**.",
              f"Wrong or INFRA_ERROR verdicts: {sum(r['wrong_count'] for r in rows)}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4,8,16")
    parser.add_argument("--items", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--bwrap-path", default="bwrap")
    parser.add_argument("--samples", type=Path, default=None, help="verify-JSONL of real completions")
    parser.add_argument("--where", default="", help="where it ran (for the report)")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    items = sample_items(args.samples, args.items) if args.samples else synthetic_items(args.items)
    workload = (f"real completions from {args.samples.name}" if args.samples else
                "e2e python_io tasks of level 3, each as a passing, a failing and a malformed completion")
    rows = []
    for workers in [int(x) for x in args.workers.split(",")]:
        row = asyncio.run(measure(workers, items, args.rounds, args.bwrap_path, f"w{workers}"))
        rows.append(row)
        print(f"{workers:>3} sandboxes: {row['checks_per_s']:.1f} checks/s, 64-batch "
              f"{row['train_batch_median_s']:.3f}s ({row['wrong_count']} wrong)", file=sys.stderr)
    result = {"machine": machine(), "workload": workload, "rounds": args.rounds, "rows": rows, "knee": knee(rows),
              "where": args.where or platform.node()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "verifier_scaling.json").write_text(json.dumps(result, indent=2))
    report = render(result)
    (args.out / "VERIFIER_SCALING.md").write_text(report)
    print(report)
    return 0 if not any(r["wrong_count"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
