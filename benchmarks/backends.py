"""The two sandbox backends side by side: the same python_assert batch through each warm pool.

    python -m benchmarks.backends [--tasks 200] [--rounds 3] [--parallel 4] [--fresh]

Each round runs the batch through a Docker-backed service, then a bwrap-backed one (both
embedded, gRPC ``VerifyBatch``, warm pools of ``--parallel`` sandboxes, every input unique,
the pool warmed first); rounds alternate the order so load from elsewhere falls on both.
``--fresh`` adds bwrap's one-sandbox-per-job mode. Every verdict is checked. Results:
benchmarks/backends.json and benchmarks/BACKENDS.md (the ratio is what to read).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

from benchmarks import workloads
from benchmarks.run import HERE, local_service, machine_facts


async def one_batch(backend: str, tasks: list[dict], parallel: int, salt: str, pool: bool = True) -> float:
    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service.spec import request_from_json

    def requests(items: list[dict], tag: str) -> list:
        return [request_from_json({"id": str(i), "completion": t["completion"] + f"# {salt}-{tag}-{i}\n",
                                   "spec": {"kind": "python_assert", "tests": t["tests"]}})
                for i, t in enumerate(items)]

    async with local_service(sandbox_backend=backend, max_concurrency=parallel, sandbox_pool=pool,
                             max_batch_size=10000) as client:
        await client.verify_batch(requests(tasks[:parallel * 2], "warm"))
        started = time.perf_counter()
        results = await client.verify_batch(requests(tasks, "timed"))
        seconds = time.perf_counter() - started
    got = [pb.Verdict.Name(r.verdict) for r in results]
    wrong = [(i, g, t["expected"]) for i, (g, t) in enumerate(zip(got, tasks, strict=True)) if g != t["expected"]]
    if wrong:
        raise SystemExit(f"{backend}: wrong verdicts {wrong[:5]}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--fresh", action="store_true", help="also bwrap with a fresh sandbox per job")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    tasks = workloads.tasks("python_assert", args.tasks)
    runs: dict[str, list[float]] = {"docker": [], "bwrap": []}
    if args.fresh:
        runs["bwrap, fresh sandbox per job"] = []
    for r in range(args.rounds):
        order = ["docker", "bwrap"] if r % 2 == 0 else ["bwrap", "docker"]
        for backend in order:
            seconds = asyncio.run(one_batch(backend, tasks, args.parallel, f"{r}"))
            runs[backend].append(seconds)
            print(f"round {r + 1}: {backend} {seconds:.2f}s ({args.tasks / seconds:.1f}/s)", file=sys.stderr)
        if args.fresh:
            seconds = asyncio.run(one_batch("bwrap", tasks, args.parallel, f"{r}f", pool=False))
            runs["bwrap, fresh sandbox per job"].append(seconds)
            print(f"round {r + 1}: bwrap fresh {seconds:.2f}s", file=sys.stderr)
    median = {name: statistics.median(v) for name, v in runs.items()}
    result = {"machine": machine_facts(), "tasks": args.tasks, "parallel": args.parallel, "rounds": runs,
              "median_s": median, "bwrap_vs_docker": median["docker"] / median["bwrap"]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "backends.json").write_text(json.dumps(result, indent=2))
    m = result["machine"]
    lines = ["# Sandbox backends side by side", "",
             f"Machine: {m['cpus']} CPUs ({m['cpu']}), Python {m['python']}, Docker {m['docker']}, kernel "
             f"{m['kernel']}. {args.tasks} unique python_assert checks per batch through gRPC `VerifyBatch`, warm "
             f"pools of {args.parallel}, {args.rounds} rounds in alternating order. Regenerate: "
             f"`python -m benchmarks.backends`.", "",
             "| backend | median seconds | checks/s | rounds (s) |", "|---|---:|---:|---|"]
    for name, values in runs.items():
        lines.append(f"| {name} | {median[name]:.2f} | {args.tasks / median[name]:.1f} | "
                     f"{', '.join(f'{v:.2f}' for v in values)} |")
    lines += ["", f"bwrap warm pool throughput / Docker warm pool throughput: {result['bwrap_vs_docker']:.2f}x"]
    report = "\n".join(lines) + "\n"
    (args.out / "BACKENDS.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
