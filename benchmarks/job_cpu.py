"""CPU per job inside the sandbox, by the runner's own account: what the runner and the zygote spend on a job
outside the candidate's processes (benchmarks/PROFILE.md, "CPU per job").

    python -m benchmarks.job_cpu [--backend bwrap|docker] [--jobs 200] [--kinds python_assert,python_check,humaneval]

One warm sandbox (``max_concurrency`` 1), jobs one after another through the python_assert kind (the real job
its ``verify`` builds, result cache off), each completion unique. The runner's ``done`` event carries the job's
CPU microseconds and page faults by process (``SandboxRun.usage``): the runner, the zygote and the steps'
processes (the candidate's: forked by the zygote). CPU time, not wall time, so a loaded machine still gives a
usable number (its noise: the timer ticks a busy host's scheduler charges); the first ``--warmup`` jobs are
left out (the first imports, the first forks).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import time
from dataclasses import replace

from benchmarks import workloads
from verifier_service.config import ServiceConfig
from verifier_service.kinds import get_kind
from verifier_service.kinds.base import Context
from verifier_service.sandbox import make_sandbox
from verifier_service.sandbox.base import SandboxRun
from verifier_service.spec import spec_from_json


def _children(pid: int) -> list[int]:
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as fh:
            out += [int(p) for p in fh.read().split()]
    return out


def _start_strace(sandbox, path: str) -> tuple[subprocess.Popen, int, int]:
    """strace -f of the (only) warm sandbox's runner and zygote (bwrap backend: host pids)."""
    (instance,) = sandbox._instances.values()
    runner = instance.handle.child_pid
    (zygote,) = [p for p in _children(runner)]
    proc = subprocess.Popen(["strace", "-f", "-qq", "-o", path, "-p", str(runner), "-p", str(zygote)],
                            stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached
    return proc, runner, zygote


def _syscalls(path: str, runner: int, zygote: int, jobs: int) -> dict:
    """System calls per job by process: the runner, the zygote, the rest (the standbys and what they fork)."""
    counts: dict[str, dict[str, int]] = {"runner": {}, "zygote": {}, "steps": {}}
    pattern = re.compile(r"^(\d+)\s+(?:<\.\.\. )?([a-z_0-9]+)[( ]")
    for line in open(path, errors="replace"):
        m = pattern.match(line)
        if not m or "resumed>" in line:
            continue
        pid, name = int(m.group(1)), m.group(2)
        who = "runner" if pid == runner else "zygote" if pid == zygote else "steps"
        counts[who][name] = counts[who].get(name, 0) + 1
    return {who: {"per_job": round(sum(c.values()) / jobs, 2),
                  "top": {k: round(v / jobs, 2) for k, v in sorted(c.items(), key=lambda kv: -kv[1])[:14]}}
            for who, c in counts.items()}


async def _measure(config: ServiceConfig, kind: str, jobs: int, warmup: int, strace: str = "") -> dict:
    sandbox = make_sandbox(config)
    await sandbox.start()
    runs: list[SandboxRun] = []
    original = sandbox.run

    async def recorded(job, on_step=None, **kwargs):
        run = await original(job, on_step=on_step, **kwargs)
        runs.append(run)
        return run

    sandbox.run = recorded
    verdicts: dict[str, int] = {}
    wrong = 0
    try:
        tasks = workloads.tasks(kind, jobs + warmup)
        started = time.monotonic()
        tracer = None
        for i, task in enumerate(tasks):
            if strace and i == warmup:
                tracer, runner, zygote = _start_strace(sandbox, strace)
            request = workloads.request_json(task, i, f"cpu{os.getpid()}")
            spec = spec_from_json(request["spec"])
            verifier = get_kind(spec.kind)
            spec = verifier.validate(spec)
            ctx = Context(config=config, sandbox=sandbox, pure_pool=None, timeout_s=config.default_timeout_s)
            outcome = await verifier.verify(request["completion"], spec, ctx)
            name = outcome.verdict.name
            verdicts[name] = verdicts.get(name, 0) + 1
            if name != task["expected"] and name not in task.get("accept", []):
                wrong += 1
        wall = time.monotonic() - started
        if tracer is not None:
            tracer.send_signal(signal.SIGINT)
            tracer.wait()
    finally:
        await sandbox.close()
    kept = runs[warmup:]
    calls = _syscalls(strace, runner, zygote, len(kept)) if tracer is not None else None
    parts: dict[str, list[float]] = {}
    for run in kept:
        for part, (cpu, faults) in run.usage.items():
            parts.setdefault(part, []).append(cpu * 1e3)
            parts.setdefault(part + "_faults", []).append(faults)
    overhead = [r.usage.get("runner", (0, 0))[0] * 1e3 + r.usage.get("zygote", (0, 0))[0] * 1e3 for r in kept]
    return {"kind": kind, "jobs": len(kept), "wall_s": round(wall, 3), "verdicts": verdicts, "unexpected": wrong,
            "mean_ms": {p: round(statistics.fmean(v), 3) for p, v in parts.items()},
            "median_ms": {p: round(statistics.median(v), 3) for p, v in parts.items()},
            "overhead_mean_ms": round(statistics.fmean(overhead), 3) if overhead else None,
            "overhead_median_ms": round(statistics.median(overhead), 3) if overhead else None,
            **({"syscalls": calls} if calls else {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="bwrap", choices=("bwrap", "docker"))
    parser.add_argument("--image", default=os.environ.get("RLVR_VERIFIER_SANDBOX_IMAGE", "rlvr-sandbox-python:latest"))
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--kinds", default="python_assert,python_check,humaneval")
    parser.add_argument("--out", default="")
    parser.add_argument("--strace", default="", help="FILE: count the system calls per job (bwrap; CPU numbers then "
                        "include strace's cost: take them from a run without it)")
    args = parser.parse_args()
    config = replace(ServiceConfig(), sandbox_backend=args.backend, sandbox_image=args.image, max_concurrency=1,
                     memory_mb=256, default_timeout_s=10.0, pool_max_jobs=100_000, pool_max_age_s=100_000.0)
    results = [asyncio.run(_measure(config, kind, args.jobs, args.warmup, args.strace))
               for kind in args.kinds.split(",")]
    for r in results:
        print(json.dumps(r))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
