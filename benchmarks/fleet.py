"""Per-replica throughput, for the sizing rule in docs/scale-out.md.

    python -m benchmarks.fleet [--replicas 1 2] [--concurrency 4] [--seconds 20]

Starts N ``verifier-service serve`` processes on loopback and drives them through
one client (round_robin over all of them) with bursts of VerifyBatch calls
(every completion unique, every verdict checked) for three workloads:

- ``cheap``: json_schema and format checks (the pure worker pool);
- ``python``: trivial python_assert checks (sandbox round trip floor);
- ``python_200ms``: python_assert checks that take 0.2 s each (bound by the pool's concurrency).

Results: benchmarks/fleet.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

from benchmarks.run import HERE, machine_facts
from verifier_service.testing import ServedProcess, wait_all_serving

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]}
WORKLOADS = {
    "cheap": {"batch": 512, "parallel": 6},
    "python": {"batch": 32, "parallel": 4},
    "python_200ms": {"batch": 32, "parallel": 4},
}


def _items(workload: str, start: int, n: int) -> list[tuple[dict, str]]:
    from verifier_service.spec import request_from_json

    out = []
    for i in range(start, start + n):
        want = "PASSED"
        if workload == "cheap":
            spec = {"kind": "json_schema", "schema": SCHEMA} if i % 2 else {"kind": "format", "pattern": r"answer: \d+"}
            obj = {"id": str(i), "completion": f'{{"n": {i}}}' if i % 2 else f"answer: {i}", "spec": spec}
        else:
            work = "import time\ntime.sleep(0.2)\n" if workload == "python_200ms" else ""
            obj = {"id": str(i), "completion": f"{work}def f():\n    return {i}\n",
                   "spec": {"kind": "python_assert", "extract": "raw", "tests": f"assert f() == {i}"}}
        out.append((request_from_json(obj), want))
    return out


async def drive(addresses: list[str], workload: str, seconds: float) -> dict:
    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service.client import VerifierClient

    shape = WORKLOADS[workload]
    client = await VerifierClient.connect(addresses)
    counter = {"next": 0, "done": 0, "wrong": 0, "batches": 0}
    latencies: list[float] = []

    async def worker():
        while time.perf_counter() < stop:
            start = counter["next"]
            counter["next"] += shape["batch"]
            items = _items(workload, start, shape["batch"])
            t0 = time.perf_counter()
            results = await client.verify_batch([r for r, _ in items], timeout_s=300)
            latencies.append(time.perf_counter() - t0)
            counter["batches"] += 1
            counter["done"] += len(results)
            counter["wrong"] += sum(pb.Verdict.Name(r.verdict) != want for r, (_, want) in zip(results, items,
                                                                                                 strict=True))

    try:
        warm = _items(workload, 10**9, shape["batch"])  # imports, pools
        await client.verify_batch([r for r, _ in warm], timeout_s=300)
        began = time.perf_counter()
        stop = began + seconds
        await asyncio.gather(*(worker() for _ in range(shape["parallel"])))
        elapsed = time.perf_counter() - began
    finally:
        await client.close()
    latencies.sort()
    return {"workload": workload, "verifications": counter["done"], "wrong": counter["wrong"],
            "seconds": round(elapsed, 2), "per_s": round(counter["done"] / elapsed, 1),
            "batch": shape["batch"], "parallel_batches": shape["parallel"],
            "batch_p50_s": round(latencies[len(latencies) // 2], 3),
            "batch_p95_s": round(latencies[int(len(latencies) * 0.95)], 3)}


def start_replicas(n: int, concurrency: int) -> list[ServedProcess]:
    out = [ServedProcess("--max-concurrency", str(concurrency), "--log-level", "WARNING", "--max-pending",
                         "100000").start(wait=False) for _ in range(n)]
    try:
        wait_all_serving(out, timeout=120)
    except RuntimeError as exc:
        for replica in out:
            replica.stop(10)
        raise SystemExit(f"a replica did not start: {exc}") from exc
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    args = parser.parse_args(argv)
    rows = []
    for n in args.replicas:
        replicas = start_replicas(n, args.concurrency)
        try:
            for workload in args.workloads:
                row = asyncio.run(drive([r.address for r in replicas], workload, args.seconds))
                row.update(replicas=n, concurrency=args.concurrency,
                           per_replica_per_s=round(row["per_s"] / n, 1))
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            for replica in replicas:
                replica.stop(60)
    out = {"machine": {**machine_facts(), "cpus": os.cpu_count()}, "rows": rows}
    Path(HERE, "fleet.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
