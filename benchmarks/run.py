"""Throughput of sandboxed verification next to the harnesses people use today, in one run.

    python -m benchmarks.run [--tasks 96] [--parallel 4] [--quick]

Same inputs, same parallelism, every input unique (no caching anywhere):
- reference: an unsandboxed HumanEval-style ``check_correctness`` (a forked
  process per check, a Manager list for the result, a timeout);
- naive Docker: ``docker run --rm`` per check (the service's one-shot runner image);
- bare fork floor: fork, exec the program in the child, wait (no isolation at all);
- this service through gRPC ``VerifyBatch``, Docker isolation on (warm pool);
- GRPO group latency (``VerifyBatch`` of 8): p50 / p99;
- cheap verifiers (json_schema, format) per second through gRPC;
- growth of batch time with batch size.
Every verdict is checked against the expected one. Results: benchmarks/results.json and
benchmarks/RESULTS.md (ratios are what to read; absolute times depend on the machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent


# ---- the workload -------------------------------------------------------------

def python_tasks(n: int) -> list[dict]:
    """n unique function tasks with assert tests; every third one is wrong."""
    tasks = []
    for i in range(n):
        wrong = i % 3 == 2
        body = f"    return a * b + {i}" + (" + 1" if wrong else "")
        tasks.append({
            "completion": f"def f(a, b):\n{body}\n",
            "tests": f"assert f(2, 3) == {6 + i}\nassert f(0, 5) == {i}\nassert f(-1, 4) == {i - 4}",
            "expected": "FAILED" if wrong else "PASSED",
        })
    return tasks


def program(task: dict) -> str:
    return task["completion"] + "\n" + task["tests"] + "\n"


# ---- reference and floor harnesses (no isolation) ---------------------------------------

def _unsafe_execute(source: str, result) -> None:
    try:
        exec(compile(source, "<check>", "exec"), {"__name__": "__check__"})
        result.append("PASSED")
    except BaseException:  # noqa: BLE001
        result.append("FAILED")


def reference_check(source: str, timeout: float = 5.0) -> str:
    """The HumanEval ``check_correctness`` pattern: a Manager list, a forked Process, join with timeout."""
    with mp.Manager() as manager:
        result = manager.list()
        proc = mp.get_context("fork").Process(target=_unsafe_execute, args=(source, result))
        proc.start()
        proc.join(timeout)
        if proc.is_alive():
            proc.kill()
            return "TIMEOUT"
        return result[0] if result else "FAILED"


def fork_floor_check(source: str, timeout: float = 5.0) -> str:
    pid = os.fork()
    if pid == 0:
        try:
            exec(compile(source, "<check>", "exec"), {"__name__": "__check__"})
            os._exit(0)
        except BaseException:  # noqa: BLE001
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return "PASSED" if os.waitstatus_to_exitcode(status) == 0 else "FAILED"


def naive_docker_check(source: str, image: str, timeout: float = 5.0) -> str:
    job = {"files": {"check.py": source}, "steps": [{"name": "check", "argv": ["python3", "-I", "check.py"],
                                                     "timeout_s": timeout}]}
    proc = subprocess.run(["docker", "run", "--rm", "-i", "--network", "none", "--read-only", "--tmpfs",
                           "/tmp:rw,exec,size=64m", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
                           "--user", "10001:10001", "--memory", "512m", "--pids-limit", "64", image],
                          input=json.dumps(job), capture_output=True, text=True, timeout=timeout + 60, check=False)
    for line in proc.stdout.splitlines():
        event = json.loads(line)
        if event.get("event") == "step":
            return "PASSED" if event.get("exit_code") == 0 else "FAILED"
    return "INFRA_ERROR"


def run_threaded(check, tasks: list[dict], parallel: int, *args) -> tuple[float, list[str]]:
    started = time.perf_counter()
    with ThreadPoolExecutor(parallel) as pool:
        verdicts = list(pool.map(lambda t: check(program(t), *args), tasks))
    return time.perf_counter() - started, verdicts


# ---- the service --------------------------------------------------------------------------

async def service_benchmarks(tasks: list[dict], parallel: int, quick: bool) -> dict:
    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service.client import VerifierClient
    from verifier_service.config import ServiceConfig
    from verifier_service.server import VerifierApp
    from verifier_service.spec import request_from_json

    config = ServiceConfig(host="127.0.0.1", port=0, max_concurrency=parallel, max_pending=100000,
                           max_batch_size=10000)
    app = VerifierApp(config)
    port = await app.start()
    client = await VerifierClient.connect(f"127.0.0.1:{port}")
    out: dict = {}
    salt = [0]

    def assert_requests(items: list[dict]) -> list:
        salt[0] += 1  # every input unique, run after run
        return [request_from_json({"id": str(i), "completion": t["completion"] + f"# {salt[0]}-{i}\n",
                                   "spec": {"kind": "python_assert", "tests": t["tests"]}})
                for i, t in enumerate(items)]

    try:
        await client.verify_batch(assert_requests(tasks[:parallel * 2]))  # warm the pool
        started = time.perf_counter()
        results = await client.verify_batch(assert_requests(tasks))
        elapsed = time.perf_counter() - started
        verdicts = [pb.Verdict.Name(r.verdict) for r in results]
        out["service"] = {"seconds": elapsed, "verdicts": verdicts}

        latencies = []
        for g in range(10 if quick else 30):
            group = assert_requests(tasks[(g * 8) % (len(tasks) - 8):][:8])
            t0 = time.perf_counter()
            await client.verify_batch(group)
            latencies.append(time.perf_counter() - t0)
        latencies.sort()
        out["group_of_8"] = {"p50_ms": 1000 * statistics.median(latencies),
                             "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]}

        cheap = {}
        for kind, n in (("json_schema", 2000 if quick else 10000), ("format", 2000 if quick else 10000)):
            if kind == "json_schema":
                spec = {"kind": "json_schema", "schema": {"type": "object", "required": ["a"],
                                                          "properties": {"a": {"type": "integer"}}}}
                reqs = [request_from_json({"id": str(i), "completion": json.dumps({"a": i}), "spec": spec})
                        for i in range(n)]
            else:
                spec = {"kind": "format", "pattern": r"<answer>\d+</answer>"}
                reqs = [request_from_json({"id": str(i), "completion": f"<answer>{i}</answer>", "spec": spec})
                        for i in range(n)]
            t0 = time.perf_counter()
            res = []
            for start in range(0, n, 1000):
                res += await client.verify_batch(reqs[start:start + 1000])
            dt = time.perf_counter() - t0
            assert all(r.verdict == pb.PASSED for r in res), kind
            cheap[kind] = n / dt
        out["cheap_per_s"] = cheap

        scaling = {}
        for size in ((8, 64, 256) if quick else (8, 64, 512)):
            items = (tasks * (size // len(tasks) + 1))[:size]
            t0 = time.perf_counter()
            await client.verify_batch(assert_requests(items))
            scaling[f"python_assert/{size}"] = time.perf_counter() - t0
        spec = {"kind": "json_schema", "schema": {"type": "object"}}
        for size in (8, 64, 512, 4096):
            reqs = [request_from_json({"id": str(i), "completion": json.dumps({"i": i, "s": salt[0]}), "spec": spec})
                    for i in range(size)]
            t0 = time.perf_counter()
            await client.verify_batch(reqs)
            scaling[f"json_schema/{size}"] = time.perf_counter() - t0
        out["scaling_s"] = scaling
    finally:
        await client.close()
        await app.stop(grace=1.0)
    return out


# ---- report ---------------------------------------------------------------------------------

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
            "kernel": platform.release()}


def render(result: dict) -> str:
    n = result["tasks"]
    rows = result["throughput"]
    ref = rows["reference (unsandboxed, HumanEval check_correctness pattern)"]["per_s"]
    floor = rows["bare fork floor (no isolation)"]["per_s"]
    lines = [
        "# Verifier benchmark", "",
        f"Machine: {result['machine']['cpus']} CPUs ({result['machine']['cpu']}), Python {result['machine']['python']},"
        f" Docker {result['machine']['docker']}, kernel {result['machine']['kernel']}. "
        f"{n} unique Python assert tasks, parallelism {result['parallel']}. Regenerate: `python -m benchmarks.run`.",
        "", "| harness | isolation | checks/s | vs reference | vs fork floor | verdicts correct |",
        "|---|---|---:|---:|---:|---|",
    ]
    for name, row in rows.items():
        shown = ", ".join(f"#{i} {got} (expected {want})" for i, got, want in row["wrong"][:3])
        correct = "all" if row["correct"] else f"{len(row['wrong'])} wrong: {shown}"
        lines.append(f"| {name} | {row['isolation']} | {row['per_s']:.1f} | {row['per_s'] / ref:.2f}x | "
                     f"{row['per_s'] / floor:.2f}x | {correct} |")
    g = result["group_of_8"]
    lines += ["", f"GRPO group of 8 through `VerifyBatch`: p50 {g['p50_ms']:.1f} ms, p99 {g['p99_ms']:.1f} ms.", "",
              "| cheap verifier through gRPC | verifications/s |", "|---|---:|"]
    for kind, rate in result["cheap_per_s"].items():
        lines.append(f"| {kind} | {rate:.0f} |")
    lines += ["", "| batch | seconds | per item (ms) |", "|---|---:|---:|"]
    for key, seconds in result["scaling_s"].items():
        size = int(key.split("/")[1])
        lines.append(f"| {key} | {seconds:.3f} | {1000 * seconds / size:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=96)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help="smaller runs (a smoke check of the benchmark)")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    tasks = python_tasks(args.tasks)
    expected = [t["expected"] for t in tasks]
    from verifier_service.config import ServiceConfig

    image = ServiceConfig().sandbox_image
    throughput = {}
    naive_tasks = tasks[: max(args.parallel * 2, len(tasks) // 4)]
    for name, isolation, check, extra, subset in (
        ("reference (unsandboxed, HumanEval check_correctness pattern)", "none", reference_check, (), tasks),
        ("bare fork floor (no isolation)", "none", fork_floor_check, (), tasks),
        ("naive docker run --rm per check", "Docker", naive_docker_check, (image,), naive_tasks),
    ):
        seconds, verdicts = run_threaded(check, subset, args.parallel, *extra)
        wrong = [(i, got, t["expected"]) for i, (got, t) in enumerate(zip(verdicts, subset, strict=True))
                 if got != t["expected"]]
        throughput[name] = {"isolation": isolation, "per_s": len(subset) / seconds, "correct": not wrong,
                            "wrong": wrong}
        print(f"{name}: {len(subset) / seconds:.1f}/s", file=sys.stderr)
    service = asyncio.run(service_benchmarks(tasks, args.parallel, args.quick))
    wrong = [(i, got, want) for i, (got, want) in enumerate(zip(service["service"]["verdicts"], expected, strict=True))
             if got != want]
    throughput["this service, gRPC VerifyBatch (warm pool)"] = {
        "isolation": "Docker", "per_s": len(tasks) / service["service"]["seconds"], "correct": not wrong,
        "wrong": wrong}
    result = {"machine": machine_facts(), "tasks": len(tasks), "parallel": args.parallel, "throughput": throughput,
              **{k: v for k, v in service.items() if k != "service"}}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=2))
    report = render(result)
    (args.out / "RESULTS.md").write_text(report)
    print(report)
    return 0 if all(row["correct"] for row in throughput.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
