"""Noisy neighbour (issue 36): another tenant's latency while one tenant attacks, as a ratio to idle.

    python -m benchmarks.noisy_neighbour [--backend bwrap|docker] [--runtime runsc] [--seconds 20] [--out DIR]

One ``verifier-service serve`` (its own process, ``verifier_service.testing``) with two tenants and no quotas
(the default share). Tenant B probes without pause: one ``Verify`` of a trivial python_assert check, then one of
a format check, each with a deadline (``--deadline``), and records each call's latency. Phase ``idle``: B alone.
Then, for each attack, tenant A attacks from the same process (its own channel) while B probes as before:

- ``unclosed_tags``: completions of ``<answer>`` repeated to the size limit (math and python_assert, answer_tag
  extraction: once a quadratic regex on the event loop);
- ``hostile_pure``: format checks whose regex backtracks for ever (each runs to its 10 s limit), 16 in flight;
- ``slow_jobs``: python_assert jobs that sleep 30 s, twice as many as there are sandboxes;
- ``sleep_every_case``: stdio jobs of 30 cases that each sleep just under their 2 s limit.

Reported per phase: B's calls, deadline misses (and errors), p50 / p99 latency and their ratios to idle; the
target: no missed deadline and p99 within 2x of idle. Every B verdict is checked (a wrong one is counted as an
error). Writes noisy_neighbour.json and NOISY_NEIGHBOUR.md (with the load average: this machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks import cpus

HERE = Path(__file__).resolve().parent
TRIVIAL = ("def f():\n    return 1\n", {"kind": "python_assert", "tests": "assert f() == 1", "timeout_s": 10})
FORMAT = ("answer 7", {"kind": "format", "pattern": r"answer \d+"})


def attacks(size_limit: int, concurrency: int) -> dict[str, tuple[int, object]]:
    """name -> (calls in flight, a function of the call's number giving its requests as JSON)."""
    tags = "<answer>" * (size_limit // len("<answer>"))

    def unclosed(i):
        return [{"id": "m", "completion": tags, "spec": {"kind": "math", "gold": "1",
                                                                   "extract": "answer_tag"}},
                {"id": "c", "completion": tags, "spec": {**TRIVIAL[1], "extract": "answer_tag"}}]

    def hostile(i):
        return [{"id": str(i), "completion": "a" * 60 + f"{i}!",
                 "spec": {"kind": "format", "pattern": "(a+)+$", "timeout_s": 10}}]

    def slow(i):
        return [{"id": str(i), "completion": f"def f():\n    return 1\n# {i}\n",
                 "spec": {"kind": "python_assert", "tests": "import time\ntime.sleep(30)\nassert f() == 1",
                          "timeout_s": 40}}]

    def sleeper(i):
        cases = [{"stdin": f"{c}\n", "expected_stdout": f"{c}\n"} for c in range(30)]
        return [{"id": str(i), "completion": f"import time\ntime.sleep(1.8)\nprint(input())\n# {i}\n",
                 "spec": {"kind": "stdio", "case_timeout_s": 2.0, "cases": cases}}]

    return {"unclosed_tags": (4, unclosed), "hostile_pure": (16, hostile), "slow_jobs": (2 * concurrency, slow),
            "sleep_every_case": (2 * concurrency, sleeper)}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def probe(client, seconds: float, deadline: float) -> dict:
    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service.errors import RemoteError
    from verifier_service.spec import request_from_json

    latencies, missed, errors, n = [], 0, 0, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for completion, spec in (TRIVIAL, FORMAT):
            unique = f"\n# {n}\n" if spec["kind"] == "python_assert" else ""  # (no result reuse)
            request = request_from_json({"id": str(n), "completion": completion + unique, "spec": spec})
            n += 1
            started = time.perf_counter()
            try:
                result = await client.verify(request, timeout_s=deadline)
            except RemoteError as exc:
                if exc.code == "DEADLINE_EXCEEDED":
                    missed += 1
                else:
                    errors += 1
                latencies.append(time.perf_counter() - started)
                continue
            latencies.append(time.perf_counter() - started)
            if result.verdict != pb.PASSED:
                errors += 1
    return {"calls": len(latencies), "missed": missed, "errors": errors,
            "p50_ms": 1000 * statistics.median(latencies), "p99_ms": 1000 * percentile(latencies, 0.99)}


async def attack(client, in_flight: int, make) -> None:
    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service.spec import request_from_json

    async def one(worker: int) -> None:
        i = worker
        while True:
            requests = [request_from_json(r) for r in make(i)]
            try:
                await client._call(client._stub.VerifyBatch, pb.VerifyBatchRequest(requests=requests), 120)
            except Exception:  # noqa: BLE001 - the attacker's calls may fail; only B's are measured
                await asyncio.sleep(0.1)
            i += in_flight

    await asyncio.gather(*(one(w) for w in range(in_flight)))


async def run(address: str, keys: dict[str, str], seconds: float, deadline: float, size_limit: int,
              concurrency: int, only: list[str]) -> dict:
    from verifier_service.client import VerifierClient
    from verifier_service.credentials import Credentials

    b = VerifierClient.open(address, credentials=Credentials(api_key=keys["team-b"]))
    a = VerifierClient.open(address, credentials=Credentials(api_key=keys["team-a"]))
    phases: dict[str, dict] = {}
    try:
        for _ in range(60):  # warm: the pools fill (minutes on a loaded machine) before anything is measured
            warm = await probe(b, 1, 120.0)
            if not warm["missed"] and not warm["errors"] and warm["p99_ms"] < 1000 * deadline / 4:
                break
        phases["idle"] = await probe(b, seconds, deadline)
        for name, (in_flight, make) in attacks(size_limit, concurrency).items():
            if only and name not in only:
                continue
            task = asyncio.create_task(attack(a, in_flight, make))
            await asyncio.sleep(2.0)
            phases[name] = await probe(b, seconds, deadline)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await asyncio.sleep(2.0)
            print(f"{name}: {phases[name]}", flush=True)
    finally:
        await a.close()
        await b.close()
    idle = phases["idle"]
    for phase in phases.values():
        phase["p50_ratio"] = phase["p50_ms"] / idle["p50_ms"]
        phase["p99_ratio"] = phase["p99_ms"] / idle["p99_ms"]
        phase["met"] = phase["missed"] == 0 and phase["errors"] == 0 and phase["p99_ratio"] <= 2.0
    return phases


def report(result: dict) -> str:
    lines = ["# Noisy neighbour: another tenant's latency under each attack (issue 36)", "",
             f"Backend {result['backend']}{' (' + result['runtime'] + ')' if result['runtime'] else ''}, "
             f"{result['max_concurrency']} sandboxes, {result['pure_workers']} pure workers, {result['seconds']:g} s "
             f"per phase, B's deadline {result['deadline_s']:g} s; load average at the start "
             f"{result['load_start']:.1f}, at the end {result['load_end']:.1f} on {result['cpus']} CPUs, "
             f"{cpus.describe(result.get('service_cpus', ''), result.get('client_cpus', ''))} (absolute figures "
             "are noisy where other work shares the machine; the ratios are side by side in one run).", "",
             "| phase | B's calls | missed deadlines | errors | p50 ms | p99 ms | p50 / idle | p99 / idle | target |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, p in result["phases"].items():
        lines.append(f"| {name} | {p['calls']} | {p['missed']} | {p['errors']} | {p['p50_ms']:.0f} | {p['p99_ms']:.0f} "
                     f"| {p['p50_ratio']:.2f} | {p['p99_ratio']:.2f} | {'met' if p['met'] else 'missed'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import yaml

    from verifier_service.tenancy.auth import hash_key, new_key
    from verifier_service.testing import ServedProcess

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="bwrap", choices=("bwrap", "docker"))
    parser.add_argument("--runtime", default="", help="docker runtime (runsc: gVisor)")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--deadline", type=float, default=10.0)
    parser.add_argument("--max-concurrency", type=int, default=4)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--out", default=str(HERE))
    parser.add_argument("--allow-host-root", action="store_true",
                        help="bwrap: --bwrap-allow-host-root true (a host whose interpreter is out of an "
                             "unprivileged uid's reach)")
    cpus.add_arguments(parser)
    args = parser.parse_args(argv)
    keys = {name: new_key() for name in ("team-a", "team-b")}
    size_limit = 256 * 1024
    with tempfile.TemporaryDirectory() as tmp:
        tenants = Path(tmp) / "tenants.yaml"
        tenants.write_text(yaml.safe_dump({"tenants": {n: {"keys": [hash_key(k)]} for n, k in keys.items()}}))
        flags = ["--tenants", str(tenants), "--sandbox-backend", args.backend, "--max-concurrency",
                 str(args.max_concurrency), "--pure-workers", "2", "--session-spares", "0"]
        if args.allow_host_root:
            flags += ["--bwrap-allow-host-root", "true"]
        if args.runtime:
            flags += ["--sandbox-runtime", args.runtime]
        load_start = os.getloadavg()[0]
        # (a loaded machine starts slowly)
        with cpus.start_apart(ServedProcess(*flags), args.service_cpus, args.client_cpus, timeout=600) as served:
            phases = asyncio.run(run(served.address, keys, args.seconds, args.deadline, size_limit,
                                     args.max_concurrency, args.only))
        result = {"backend": args.backend, "runtime": args.runtime, "max_concurrency": args.max_concurrency,
                  "pure_workers": 2, "seconds": args.seconds, "deadline_s": args.deadline, "cpus": os.cpu_count(),
                  "service_cpus": args.service_cpus, "client_cpus": args.client_cpus,
                  "load_start": load_start, "load_end": os.getloadavg()[0], "python": platform.python_version(),
                  "phases": phases}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    suffix = f"_{args.backend}" + (f"_{args.runtime}" if args.runtime else "") + \
        ("_own_cores" if args.service_cpus else "")
    (out / f"noisy_neighbour{suffix}.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / f"NOISY_NEIGHBOUR{suffix.upper()}.md").write_text(report(result))
    print(report(result))
    return 0 if all(p["met"] for p in phases.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
