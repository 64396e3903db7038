"""Where the time of a VerifyBatch goes, for python_assert and json_schema: benchmarks/PROFILE.md.

    python -m benchmarks.profile [--assert-n 256] [--json-n 4096] [--groups 40] [--parallel 4] [--out DIR]

A server process (this module with ``--serve``) runs the service with timers
wrapped around each phase (wrappers installed in that process only; the
service's code is unchanged) and cProfile on its event-loop thread. This
process sends the batches and times them end to end. Phases:

- RPC end to end (client) and the VerifyBatch handler (server);
- request decode / response encode: protobuf parse and serialize of the same
  batch, measured here (grpc does them outside the handler);
- prepare: validating the requests (spec cache, Prepared items);
- engine: ``Engine.verify_all``; within it ``to_proto`` (outcome -> result);
- python_assert (calls on literals) and python_check (HumanEval's
  ``check(candidate)`` of them), both judged by the runner: ``PooledSandbox.run``
  (pool dispatch: queue wait + round trip), ``exchange_async`` (the runner round
  trip on the wire, on the event loop), the runner's own step time in the
  container and its account of each job's CPU time and page faults by process
  (runner, zygote, the steps' processes);
- json_schema: ``PurePool.run_many`` (chunking + dispatch), ``_stream`` (pipe
  round trip to a worker, in a thread) and, measured here, the checks
  themselves and the pickling of a chunk.

Also a GRPO group of 8 (``--groups`` batches of 8, one at a time) of python_assert and of contest stdio
programs with 10 cases, with the client's own work (building the requests, protobuf encode) measured here and
the split of one group's wall time: client and transport, queueing for a sandbox, the runner round trip, and
the candidates' own processes inside the sandbox.

Summed phase times overlap when work runs concurrently (4 sandboxes, 2 pure
workers): read "per item" as busy time, and compare with the wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pickle
import pstats
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from benchmarks import workloads

HERE = Path(__file__).resolve().parent


# ---- the server side: timers around the phases ------------------------------------------------

TIMES: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])  # phase -> [seconds, calls]
USAGE: dict[str, list[float]] = defaultdict(lambda: [0.0, 0, 0])  # process -> [CPU seconds, page faults, jobs]


def _add(phase: str, seconds: float) -> None:
    TIMES[phase][0] += seconds
    TIMES[phase][1] += 1


def _wrap_async(owner, name: str, phase: str, after=None) -> None:
    original = getattr(owner, name)

    async def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            result = await original(*args, **kwargs)
        finally:
            _add(phase, time.perf_counter() - t0)
        if after is not None:
            after(result)
        return result

    setattr(owner, name, timed)


def _wrap_sync(owner, name: str, phase: str, after=None) -> None:
    original = getattr(owner, name)

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            result = original(*args, **kwargs)
        finally:
            _add(phase, time.perf_counter() - t0)
        if after is not None:
            after(result)
        return result

    setattr(owner, name, timed if not isinstance(original, staticmethod) else staticmethod(timed))


def instrument() -> None:
    from verifier_service.doors.grpc import servicer as service
    from verifier_service.engine import engine, pool
    from verifier_service.sandbox import warm
    from verifier_service.service import verifier

    _wrap_async(service.VerifierServicer, "VerifyBatch", "handler (server)")
    _wrap_sync(verifier.Verifier, "_prepare", "prepare (validate requests)")
    _wrap_async(engine.Engine, "verify_all", "engine.verify_all")
    _wrap_sync(engine, "to_proto", "to_proto (outcome -> result)")
    _wrap_async(engine.Engine, "verify", "engine.verify (one sandboxed item)")
    _wrap_async(warm.PooledSandbox, "run", "sandbox.run (pool dispatch + round trip)")
    _wrap_async(warm.PooledSandbox, "_acquire", "pool: wait for an idle sandbox")

    def runner_steps(run) -> None:
        _add("runner steps in the container (the step's processes, judging)", sum(s.duration_s for s in run.steps))
        for part, (cpu, faults) in run.usage.items():
            USAGE[part][0] += cpu
            USAGE[part][1] += faults
            USAGE[part][2] += 1

    _wrap_async(warm, "exchange_async", "exchange (runner round trip, event loop)", runner_steps)
    _wrap_sync(warm.PooledSandbox, "_payload", "job payload (JSON encode)")
    _wrap_async(pool.PurePool, "run_many", "pure pool run_many (dispatch)")
    pool.PurePool._stream = staticmethod(_timed_stream(pool.PurePool._stream))


def _timed_stream(original):
    def timed(worker, tasks, encoded):
        t0 = time.perf_counter()
        try:
            return original(worker, tasks, encoded)
        finally:
            _add("pure worker round trip (pipe + checks, thread)", time.perf_counter() - t0)
    return timed


async def serve(parallel: int, stats_path: Path) -> None:
    from dataclasses import replace

    from verifier_service.config import load_config
    from verifier_service.serve import VerifierApp

    instrument()
    config = replace(load_config(), host="127.0.0.1", port=0, max_concurrency=parallel, max_pending=100000,
                     max_batch_size=10000, result_cache_size=0, sandbox_pool=True)
    app = VerifierApp(config)
    port = await app.start()
    print(json.dumps({"port": port}), flush=True)
    profiler = cProfile.Profile()
    loop = asyncio.get_running_loop()
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if line == "start":
            TIMES.clear()
            USAGE.clear()
            profiler = cProfile.Profile()
            profiler.enable()
        elif line == "stop":
            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(14)
            stats_path.write_text(json.dumps({"phases": dict(TIMES), "usage": dict(USAGE),
                                              "cprofile": text.getvalue()}))
        else:  # "quit" or EOF
            break
        print(json.dumps({"ok": line}), flush=True)
    await app.stop(grace=1.0)


# ---- the client side -------------------------------------------------------------------------------

class Server:
    def __init__(self, parallel: int, stats_path: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.profile", "--serve", "--parallel",
                                      str(parallel), "--stats", str(stats_path)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.port = json.loads(self.proc.stdout.readline())["port"]

    def say(self, word: str) -> None:
        self.proc.stdin.write(word + "\n")
        self.proc.stdin.flush()
        self.proc.stdout.readline()

    def close(self) -> None:
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


async def measure(server: Server, stats_path: Path, kind: str, n: int, chunk: int, rounds: int) -> dict:
    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service.client import VerifierClient
    from verifier_service.spec import request_from_json

    items = workloads.tasks(kind, n)
    client = await VerifierClient.connect(f"127.0.0.1:{server.port}")
    try:
        warm = [request_from_json(workloads.request_json(t, i, "warm")) for i, t in enumerate(items[:chunk])]
        await client.verify_batch(warm)
        batches = []
        t0 = time.perf_counter()
        for r in range(rounds):
            reqs = [request_from_json(workloads.request_json(t, i, f"p{r}")) for i, t in enumerate(items)]
            batches += [reqs[s:s + chunk] for s in range(0, len(reqs), chunk)]
        for b in batches:
            pb.VerifyBatchRequest(requests=b).SerializeToString()
        client_encode = time.perf_counter() - t0
        server.say("start")
        wall = 0.0
        responses = []
        for batch in batches:
            t0 = time.perf_counter()
            results = await client.verify_batch(batch)
            wall += time.perf_counter() - t0
            responses.append(results)
        server.say("stop")
    finally:
        await client.close()
    got = [pb.Verdict.Name(r.verdict) for results in responses for r in results]
    want = [t for _ in range(rounds) for t in items]
    assert all(v == t["expected"] or v in t.get("accept", ()) for v, t in zip(got, want, strict=True)), (
        f"{kind}: a verdict changed")
    stats = json.loads(stats_path.read_text())
    # protobuf work grpc does outside the handler, measured on the same batches
    wire = [pb.VerifyBatchRequest(requests=b).SerializeToString() for b in batches]
    t0 = time.perf_counter()
    for data in wire:
        pb.VerifyBatchRequest.FromString(data)
    decode = time.perf_counter() - t0
    encoded = [pb.VerifyBatchResponse(results=r) for r in responses]
    t0 = time.perf_counter()
    for message in encoded:
        message.SerializeToString()
    encode = time.perf_counter() - t0
    phases = {"RPC end to end (client)": [wall, len(batches)],
              "client: requests built + protobuf encode (measured here)": [client_encode, len(batches)],
              **stats["phases"],
              "request decode (protobuf parse, measured here)": [decode, len(batches)],
              "response encode (protobuf serialize, measured here)": [encode, len(batches)]}
    if kind == "json_schema":
        phases.update(_pure_offline(items, rounds))
    return {"kind": kind, "items": n * rounds, "batch": chunk, "wall_s": wall, "phases": phases,
            "usage": stats.get("usage", {}), "cprofile": stats["cprofile"]}


def _pure_offline(items: list[dict], rounds: int) -> dict:
    """The checks and the pickling a worker round trip carries, measured here on the same items."""
    from verifier_service.config import ServiceConfig
    from verifier_service.engine.engine import Engine
    from verifier_service.kinds import get_kind
    from verifier_service.spec import request_from_json

    engine = Engine(ServiceConfig(), None, None)
    prepared = [engine.prepare(request_from_json(workloads.request_json(t, i, "x"))) for i, t in enumerate(items)]
    kind = get_kind("json_schema")
    t0 = time.perf_counter()
    for _ in range(rounds):
        outcomes = [kind.check(p.completion, p.spec) for p in prepared]
    checks = time.perf_counter() - t0
    message = ("many", [(p.kind.name, p.completion, p.spec) for p in prepared])
    t0 = time.perf_counter()
    for _ in range(rounds):
        pickle.loads(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
        pickle.loads(pickle.dumps(("many", [("ok", o) for o in outcomes]), protocol=pickle.HIGHEST_PROTOCOL))
    pickling = time.perf_counter() - t0
    return {"checks themselves (in one process, measured here)": [checks, rounds],
            "pickle + unpickle of tasks and outcomes (measured here)": [pickling, rounds]}


def summary(run: dict) -> list[str]:
    """The few numbers to read first."""
    p, n, wall = run["phases"], run["items"], run["wall_s"]

    def per_call(name: str) -> float:
        seconds, calls = p.get(name, (0.0, 0))
        return 1000 * seconds / calls if calls else 0.0

    def per_item(name: str) -> float:
        return 1000 * p.get(name, (0.0, 0))[0] / n

    handler = p.get("handler (server)", (0.0, 0))[0]
    out = [f"- outside the handler (gRPC transport, protobuf, the client): {100 * (wall - handler) / wall:.0f}% of "
           "the wall time",
           f"- on the event loop per item: prepare {per_item('prepare (validate requests)'):.3f} ms"]
    if run["kind"] not in ("json_schema", "format"):
        trip = per_call("exchange (runner round trip, event loop)")
        steps = per_call("runner steps in the container (the step's processes, judging)")
        out[-1] += f", result building {per_call('to_proto (outcome -> result)'):.3f} ms"
        if trip:
            out.append(f"- one job's runner round trip: {trip:.1f} ms, of which {steps:.1f} ms "
                       f"({100 * steps / trip:.0f}%) are its step inside the container and {trip - steps:.1f} ms "
                       "the rest (job JSON over the job socket or attach stream, work dir, cleaning up after the "
                       "step, scrub, the done event)")
        usage = run.get("usage", {})
        if usage:
            parts = {"runner": "the runner", "zygote": "the zygote (its forks)",
                     "steps": "the steps' processes (the completion's: the runner judges calls on literals, "
                              "HumanEval's checks of them too; stdio: the program host and a fork per case)"}
            jobs = max(u[2] for u in usage.values())
            cpu = sum(u[0] for u in usage.values())
            out.append(f"- inside the sandbox, by the runner's own account of {jobs} jobs: {1000 * cpu / jobs:.2f} ms "
                       "of CPU per job: " + "; ".join(
                           f"{parts[part]} {1000 * u[0] / jobs:.2f} ms ({u[1] / jobs:.0f} page faults)"
                           for part, u in usage.items() if part in parts))
        if run["batch"] == 8:
            out += group_split(run, per_call)
    else:
        trip = per_item("pure worker round trip (pipe + checks, thread)")
        checks = per_item("checks themselves (in one process, measured here)")
        if trip:
            out.append(f"- the workers: {trip:.3f} ms of round trip per item (summed over the workers), of which "
                       f"the checks themselves are {checks:.3f} ms ({100 * checks / trip:.0f}%)")
    return out


def group_split(run: dict, per_call) -> list[str]:
    """Where one group of 8's wall time goes, from the client's call to its results."""
    groups = run["items"] // 8
    wall = 1000 * run["wall_s"] / groups
    handler = per_call("handler (server)")
    encode = per_call("client: requests built + protobuf encode (measured here)")
    queue = per_call("pool: wait for an idle sandbox")
    trip = per_call("exchange (runner round trip, event loop)")
    steps = per_call("runner steps in the container (the step's processes, judging)")
    usage = run.get("usage", {})
    jobs = max((u[2] for u in usage.values()), default=0)
    own = 1000 * usage["steps"][0] / jobs if jobs and "steps" in usage else 0.0
    rest = 1000 * sum(u[0] for k, u in usage.items() if k != "steps") / jobs if jobs else 0.0
    return [f"- one group of 8: {wall:.1f} ms at the client (+ {encode:.2f} ms building and encoding its requests); "
            f"outside the handler (gRPC, protobuf, the client) {wall - handler:.1f} ms; in the handler "
            f"{handler:.1f} ms, of which prepare {per_call('prepare (validate requests)'):.2f} ms",
            f"- per job (8 jobs on 4 warm sandboxes: two rounds): waiting for a sandbox {queue:.1f} ms on average, "
            f"the runner round trip {trip:.1f} ms, of which {steps:.1f} ms in its steps; by the runner's account, "
            f"CPU per job {own:.2f} ms in the candidate's processes and {rest:.2f} ms in the runner and zygote"]


def render(runs: list[dict], load: tuple[str, str]) -> str:
    lines = ["# Where the time of a VerifyBatch goes", "",
             f"Regenerate: `python -m benchmarks.profile`. Load average {load[0]} at the start, {load[1]} at the "
             "end (other work shared the 2 cores: read shares, not absolute times). Phases nest (the handler "
             "holds prepare and the engine; the engine holds the sandbox or pure-pool work) and overlap where "
             "work runs concurrently (a sum over concurrent calls can exceed the wall time: 'wait for an idle sandbox' "
             "sums the waits of every queued item), so per-item times are busy time; compare them with the wall "
             "time per item.",
             ""]
    for run in runs:
        n = run["items"]
        lines += [f"## {run['kind']}: {n} items in batches of {run['batch']}, wall {1000 * run['wall_s'] / n:.3f} ms "
                  "per item", "", "| phase | calls | per call (ms) | total s | per item (ms) | share of wall |",
                  "|---|---:|---:|---:|---:|---:|"]
        for phase, (seconds, calls) in run["phases"].items():
            lines.append(f"| {phase} | {calls} | {1000 * seconds / max(calls, 1):.3f} | {seconds:.3f} | "
                         f"{1000 * seconds / n:.3f} | {100 * seconds / run['wall_s']:.0f}% |")
        lines += ["", *summary(run)]
        top = [line for line in run["cprofile"].splitlines() if line.strip()]
        start = next((i for i, line in enumerate(top) if line.lstrip().startswith("ncalls")), 0)
        lines += ["", "cProfile of the server's event-loop thread (top by own time):", "", "```",
                  *top[start:start + 15], "```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assert-n", type=int, default=256)
    parser.add_argument("--json-n", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--groups", type=int, default=40, help="groups of 8 per round for the group profile")
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--stats", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(serve(args.parallel, args.stats))
        return 0
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    stats_path = args.out / ".profile-stats.json"
    args.out.mkdir(parents=True, exist_ok=True)
    server = Server(args.parallel, stats_path)
    try:
        runs = [asyncio.run(measure(server, stats_path, "python_assert", args.assert_n, args.assert_n, args.rounds)),
                asyncio.run(measure(server, stats_path, "python_check", args.assert_n, args.assert_n, args.rounds)),
                asyncio.run(measure(server, stats_path, "json_schema", args.json_n, 1000, args.rounds)),
                asyncio.run(measure(server, stats_path, "python_assert", 8 * args.groups, 8, args.rounds)),
                asyncio.run(measure(server, stats_path, "contest10", 8 * max(1, args.groups // 4), 8, args.rounds))]
    finally:
        server.close()
        stats_path.unlink(missing_ok=True)
    load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
    text = render(runs, (load_start, load_end))
    (args.out / "PROFILE.md").write_text(text)
    (args.out / "profile.json").write_text(json.dumps(runs, indent=2) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
