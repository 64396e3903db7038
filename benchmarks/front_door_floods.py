"""Issue 38: each door flooded by one client while another tenant verifies, side by side in one run.

    python -m benchmarks.front_door_floods [--phase-s 10] [--out benchmarks/]

One ``verifier-service serve --http-port`` (its own process, ``verifier_service.testing.ServedProcess``) with two
tenants: ``victim`` sends one trivial ``python_assert`` Verify at a time (gRPC, from a process of its own) through
every phase; ``attacker`` (or nobody, for the unauthenticated floods) floods a door. Per phase: the victim's p50 /
p99 as a ratio to the idle phase of the same run, where its slowest 2% of calls spent their time (the service's
queue_s and run_s of each), its calls past their deadline (30 s), the service's event loop lag (its
``rlvr_event_loop_lag_seconds``: what any step waits behind others' work on the loop), the service's peak RSS
(VmRSS sampled every 0.2 s) and its log bytes per minute. Loopback only (the idle-connection flood spreads over
127.0.0.2-127.0.0.9 to reach the door's total cap as well as the per-address one). Writes front_door_floods.json
and FLOODS.md (``--runtime runsc``: front_door_floods_runsc.json and FLOODS_RUNSC.md).

Phases: idle; idle connections; slow headers; gzip bodies (15 KB -> 15 MB); large JSON bodies (15 MB); the same sent
in chunks (no declared length); the same as gzip's stored blocks (15 MB as sent and inflated); JSON bodies
of many small values (15 MB, 7.5 million values: a second of the C parser each); gRPC batches of many small
fields (4 million empty requests, 8 MB);
VerifyStreams that send and never read; unauthenticated HTTP; unauthenticated gRPC; a completion's output flood.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import platform
import resource
import socket
import statistics
import tempfile
import time
import zlib
from pathlib import Path

from benchmarks import cpus

HERE = Path(__file__).resolve().parent
DEADLINE_S = 30.0


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def loop_lag(metrics_port: int) -> tuple[dict[float, float], float]:
    """The service's ``rlvr_event_loop_lag_seconds`` now: its cumulative bucket counts by upper bound, its sum
    (none when the service does not answer: a service that died shows as such in its row)."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    buckets: dict[float, float] = {}
    total = 0.0
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=30) as response:
            text = response.read().decode()
    except OSError:
        return buckets, total
    for family in text_string_to_metric_families(text):
        if family.name == "rlvr_event_loop_lag_seconds":
            for sample in family.samples:
                if sample.name.endswith("_bucket"):
                    buckets[float(sample.labels["le"])] = sample.value
                elif sample.name.endswith("_sum"):
                    total = sample.value
    return buckets, total


def lag_between(before, after, elapsed_s: float) -> dict:
    """The loop's lag in a phase, from two readings of ``loop_lag``: the bucket that holds its p99 (an upper
    bound) and the seconds of lag per second of the phase."""
    counts = {le: after[0][le] - before[0].get(le, 0.0) for le in sorted(after[0])}
    n = counts.get(float("inf"), 0.0)
    p99 = next((le for le, c in counts.items() if c >= 0.99 * n), None) if n else None
    return {"samples": n, "p99_at_most_s": p99, "lag_s_per_s": round((after[1] - before[1]) / elapsed_s, 4)}


def gzip_bomb(inflated: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b" " * (1 << 20)
    return b"".join([*(packer.compress(chunk) for _ in range(inflated // len(chunk))), packer.flush()])


def victim(conn, address: str, key: str, request: bytes) -> None:
    """The victim tenant's client, in a process of its own (its own event loop and GIL: in the flooding client's
    process its latency counted the flood's own work, as a tenant's client on another host would not): one trivial
    Verify at a time until told to stop; then sends back each call's (start, latency, the service's queue_s,
    run_s, failed). Its first calls warm the service (the sandbox pool, the first checks' costs) before it says
    it is ready."""
    import grpc

    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service._generated import verifier_pb2_grpc as pb_grpc

    message = pb.VerifyRequest.FromString(request)
    metadata = (("authorization", f"Bearer {key}"),)
    calls = []
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.VerifierStub(channel)
        for _ in range(5):
            stub.Verify(message, metadata=metadata, timeout=120)
        conn.send("ready")
        while not conn.poll():
            started = time.monotonic()
            try:
                result = stub.Verify(message, metadata=metadata, timeout=DEADLINE_S)
                calls.append((started, time.monotonic() - started, result.timings.queue_s, result.timings.run_s,
                              result.verdict != pb.PASSED))
            except grpc.RpcError:
                calls.append((started, time.monotonic() - started, 0.0, 0.0, True))
    conn.send(calls)


class Bench:
    def __init__(self, service, keys, phase_s: float, metrics_port: int):
        self.service = service
        self.metrics_port = metrics_port
        self.keys = keys
        self.phase_s = phase_s
        self.http = f"http://127.0.0.1:{service.http_port}"

    def md(self, tenant: str):
        return (("authorization", f"Bearer {self.keys.key[tenant]}"),)

    # ---- the floods: each runs until stop is set ---------------------------------------------------

    async def idle_connections(self, stop: asyncio.Event) -> None:
        socks = []
        for i in range(1600):  # 200 per address over 8 addresses: past the per-address and the total caps
            host = f"127.0.0.{2 + i % 8}"
            try:
                s = socket.socket()
                s.setblocking(False)
                s.bind((host, 0))
                await asyncio.get_running_loop().sock_connect(s, ("127.0.0.1", self.service.http_port))
                socks.append(s)
            except OSError:
                s.close()
        await stop.wait()
        for s in socks:
            s.close()

    async def slow_headers(self, stop: asyncio.Event) -> None:
        socks = []
        while not stop.is_set():
            for _ in range(50):
                try:
                    s = socket.socket()
                    s.setblocking(False)
                    s.bind((f"127.0.0.{10 + len(socks) % 8}", 0))
                    await asyncio.get_running_loop().sock_connect(s, ("127.0.0.1", self.service.http_port))
                    s.send(b"POST /run_code HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                    socks.append(s)
                except OSError:
                    s.close()
            await asyncio.sleep(1)
        for s in socks:
            s.close()

    async def _post_loop(self, stop, session, path: str, data, headers: dict, parallel: int) -> None:
        """``parallel`` senders of ``data`` (bytes, or what makes a body: an async generator is sent in chunks)."""
        import aiohttp

        async def one():
            while not stop.is_set():
                with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
                    async with session.post(self.http + path, data=data() if callable(data) else data,
                                            headers=headers) as response:
                        await response.read()
                        if response.status == 429:
                            await asyncio.sleep(0.05)

        await asyncio.gather(*(one() for _ in range(parallel)))

    async def gzip_bodies(self, stop, session) -> None:
        bomb = gzip_bomb(15 << 20)
        headers = {"Authorization": f"Bearer {self.keys.key['attacker']}", "Content-Encoding": "gzip",
                   "Content-Type": "application/json"}
        await self._post_loop(stop, session, "/get_reward", bomb, headers, 4)

    async def large_bodies(self, stop, session) -> None:
        body = json.dumps({"query": ["x" * (15 << 20)], "labels": [{"kind": "math", "gold": "1"}]}).encode()
        headers = {"Authorization": f"Bearer {self.keys.key['attacker']}", "Content-Type": "application/json"}
        await self._post_loop(stop, session, "/get_reward", body, headers, 4)

    async def chunked_bodies(self, stop, session) -> None:
        """The large body sent in chunks (no Content-Length): read on the event loop as its chunks come."""
        body = json.dumps({"query": ["x" * (15 << 20)], "labels": [{"kind": "math", "gold": "1"}]}).encode()

        async def chunks():
            for at in range(0, len(body), 1 << 20):
                yield body[at:at + (1 << 20)]

        headers = {"Authorization": f"Bearer {self.keys.key['attacker']}", "Content-Type": "application/json"}
        await self._post_loop(stop, session, "/get_reward", chunks, headers, 4)

    async def large_gzip_bodies(self, stop, session) -> None:
        """The large body compressed in gzip's stored blocks: as large as sent as it is inflated."""
        packer = zlib.compressobj(0, zlib.DEFLATED, 31)
        body = json.dumps({"query": ["x" * (15 << 20)], "labels": [{"kind": "math", "gold": "1"}]}).encode()
        stored = packer.compress(body) + packer.flush()
        headers = {"Authorization": f"Bearer {self.keys.key['attacker']}", "Content-Encoding": "gzip",
                   "Content-Type": "application/json"}
        await self._post_loop(stop, session, "/get_reward", stored, headers, 4)

    async def many_values(self, stop, session) -> None:
        body = b'{"query": [' + b"1," * (15 << 19) + b'1], "labels": []}'
        headers = {"Authorization": f"Bearer {self.keys.key['attacker']}", "Content-Type": "application/json"}
        await self._post_loop(stop, session, "/get_reward", body, headers, 4)

    async def many_fields(self, stop, stub, pb) -> None:
        import grpc

        batch = pb.VerifyBatchRequest(requests=[pb.VerifyRequest()] * 4_000_000)
        metadata = (("authorization", f"Bearer {self.keys.key['attacker']}"),)

        async def one():
            while not stop.is_set():
                with contextlib.suppress(grpc.aio.AioRpcError):
                    await stub.VerifyBatch(batch, metadata=metadata, timeout=30)

        await asyncio.gather(*(one() for _ in range(4)))

    async def unauthenticated_http(self, stop, session) -> None:
        await self._post_loop(stop, session, "/get_reward", b"{}", {"Content-Type": "application/json"}, 8)

    async def unauthenticated_grpc(self, stop, stub, pb, request) -> None:
        import grpc

        async def one():
            while not stop.is_set():
                with contextlib.suppress(grpc.aio.AioRpcError):
                    await stub.Verify(request, timeout=5)

        await asyncio.gather(*(one() for _ in range(8)))

    async def unread_streams(self, stop, stub, pb) -> None:
        schema = {"type": "object", "properties": {"a": {"type": "string", "description": "d" * 50_000}}}
        from verifier_service.spec import request_from_json

        request = request_from_json({"id": "s", "completion": "{}", "spec": {"kind": "json_schema", "schema": schema}})
        batch = pb.VerifyBatchRequest(requests=[request] * 64)

        async def batches():
            while not stop.is_set():
                yield batch

        calls = [stub.VerifyStream(batches(), metadata=self.md("attacker"), timeout=600) for _ in range(4)]
        await stop.wait()
        for call in calls:
            call.cancel()

    async def output_flood(self, stop, session) -> None:
        body = json.dumps({"code": "import sys\nwhile True: sys.stdout.write('x' * 65536)", "language": "python",
                           "run_timeout": 20}).encode()
        headers = {"Authorization": f"Bearer {self.keys.key['attacker']}", "Content-Type": "application/json"}
        await self._post_loop(stop, session, "/run_code", body, headers, 2)


async def run_phases(bench: Bench, phases: list[str]) -> list[dict]:
    import aiohttp
    import grpc

    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service._generated import verifier_pb2_grpc as pb_grpc
    from verifier_service.spec import request_from_json

    request = request_from_json({"id": "v", "completion": "def f(x):\n    return 2 * x\n",
                                 "spec": {"kind": "python_assert", "tests": "assert f(2) == 4"}})
    spawn = multiprocessing.get_context("spawn")
    conn, victim_end = spawn.Pipe()
    victim_process = spawn.Process(target=victim, daemon=True, args=(
        victim_end, bench.service.address, bench.keys.key["victim"], request.SerializeToString()))
    victim_process.start()
    victim_end.close()  # (the victim's end is its own: a victim that dies is then an EOFError here, not a hang)
    if not await asyncio.to_thread(conn.poll, 300) or conn.recv() != "ready":
        raise RuntimeError("the victim's client did not get its first calls answered in 300 s")
    rows: list[dict] = []
    windows: list[tuple[float, float]] = []
    async with grpc.aio.insecure_channel(bench.service.address) as attacker_channel, \
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        attacker_stub = pb_grpc.VerifierStub(attacker_channel)
        for phase in phases:
            stop = asyncio.Event()
            flood = {
                "idle": None,
                "idle_connections": lambda stop=stop: bench.idle_connections(stop),
                "slow_headers": lambda stop=stop: bench.slow_headers(stop),
                "gzip_bodies": lambda stop=stop: bench.gzip_bodies(stop, session),
                "large_bodies": lambda stop=stop: bench.large_bodies(stop, session),
                "chunked_bodies": lambda stop=stop: bench.chunked_bodies(stop, session),
                "large_gzip_bodies": lambda stop=stop: bench.large_gzip_bodies(stop, session),
                "many_values": lambda stop=stop: bench.many_values(stop, session),
                "many_fields": lambda stop=stop: bench.many_fields(stop, attacker_stub, pb),
                "unread_streams": lambda stop=stop: bench.unread_streams(stop, attacker_stub, pb),
                "unauthenticated_http": lambda stop=stop: bench.unauthenticated_http(stop, session),
                "unauthenticated_grpc": lambda stop=stop: bench.unauthenticated_grpc(stop, attacker_stub, pb, request),
                "output_flood": lambda stop=stop: bench.output_flood(stop, session),
            }[phase]
            log_before = bench.service.log_path.stat().st_size
            flood_task = asyncio.create_task(flood()) if flood is not None else None
            await asyncio.sleep(1.0 if flood is not None else 0)
            lag_before = await asyncio.to_thread(loop_lag, bench.metrics_port)
            peak, started = 0.0, time.monotonic()
            while time.monotonic() - started < bench.phase_s:
                peak = max(peak, rss_mb(bench.service.pid))
                await asyncio.sleep(0.2)
            windows.append((started, time.monotonic()))  # (the victim's calls that started in it count)
            lag = lag_between(lag_before, await asyncio.to_thread(loop_lag, bench.metrics_port),
                              time.monotonic() - started)
            stop.set()
            if flood_task is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(flood_task, 60)
            elapsed = time.monotonic() - started
            with open(bench.service.log_path, "rb") as log:  # the flood's lines: not the victim's own
                log.seek(log_before)
                log_bytes = sum(len(line) for line in log if b'"tenant": "victim"' not in line)
            rows.append({"phase": phase, "peak_rss_mb": round(peak, 1), "loop_lag": lag,
                         "flood_log_bytes_per_min": round(log_bytes / elapsed * 60),
                         "alive": bench.service.running(), "exit": bench.service.proc.poll()})
            print(json.dumps(rows[-1]), flush=True)
            await asyncio.sleep(2)
    conn.send("stop")
    every = await asyncio.to_thread(conn.recv)
    victim_process.join(30)
    for row, (begin, end) in zip(rows, windows, strict=True):
        calls = sorted(call[1:] for call in every if begin <= call[0] < end)
        latencies = [call[0] for call in calls]
        slowest = calls[int(0.98 * len(calls)):]  # where the slowest 2% of the victim's calls spent their time
        row.update({"calls": len(calls), "missed": sum(call[3] for call in calls),
                    "p50_s": statistics.median(latencies) if latencies else None,
                    "p99_s": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] if latencies else None,
                    "slowest_2pct": {"latency_s": statistics.fmean(c[0] for c in slowest),
                                     "queue_s": statistics.fmean(c[1] for c in slowest),
                                     "run_s": statistics.fmean(c[2] for c in slowest)} if slowest else None})
    idle = rows[0]
    for row in rows:
        row["p50_ratio"] = round(row["p50_s"] / idle["p50_s"], 2) if row["p50_s"] and idle["p50_s"] else None
        row["p99_ratio"] = round(row["p99_s"] / idle["p99_s"], 2) if row["p99_s"] and idle["p99_s"] else None
    return rows


PHASES = ["idle", "idle_connections", "slow_headers", "gzip_bodies", "large_bodies", "chunked_bodies",
          "large_gzip_bodies", "many_values", "many_fields", "unread_streams", "unauthenticated_http",
          "unauthenticated_grpc", "output_flood"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase-s", type=float, default=10.0)
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--runtime", default="", help="sandbox_runtime ('runsc': gVisor)")
    parser.add_argument("--backend", default="docker")
    cpus.add_arguments(parser)
    parser.add_argument("--allow-host-root", action="store_true",
                        help="bwrap: --bwrap-allow-host-root true (a host whose interpreter is out of an "
                             "unprivileged uid's reach)")
    parser.add_argument("--note", default="a shared machine (other work ran beside it)")
    args = parser.parse_args()
    import sys

    sys.path.insert(0, str(HERE.parent / "tests"))  # the tests' helpers (tests/support)
    from verifier_service.testing import ServedProcess, free_port

    from support.tenancy_setup import Keys, write_tenants

    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    tmp = Path(tempfile.mkdtemp(prefix="floods-"))
    keys = Keys("victim", "attacker")
    tenants = write_tenants(tmp / "tenants.yaml", keys, {})
    http_port, metrics_port = free_port(), free_port()
    service = ServedProcess("--tenants", tenants, "--http-port", str(http_port), "--max-concurrency", "2",
                            "--metrics-port", str(metrics_port),
                            "--sandbox-backend", args.backend, "--sandbox-runtime", args.runtime,
                            "--log-format", "json",
                            *(["--bwrap-allow-host-root", "true"] if args.allow_host_root else []),
                            log_path=tmp / "service.log",
                            env={k: v for k, v in os.environ.items() if k.startswith("RLVR_VERIFIER_SANDBOX_")})
    service.http_port = http_port  # type: ignore[attr-defined]
    load_start = os.getloadavg()[0]
    with cpus.start_apart(service, args.service_cpus, args.client_cpus):
        time.sleep(3)  # the warm pool
        rows = asyncio.run(run_phases(Bench(service, keys, args.phase_s, metrics_port), args.phases.split(",")))
    machine = {"platform": platform.platform(), "cpus": os.cpu_count(), "backend": args.backend,
               "runtime": args.runtime or ("runc" if args.backend == "docker" else "none"),
               "load_start": load_start, "load_end": os.getloadavg()[0],
               "cores": cpus.describe(args.service_cpus, args.client_cpus), "note": args.note}
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = (f"_{args.runtime}" if args.runtime else "") + (f"_{args.backend}" if args.backend != "docker" else "") \
        + ("_own_cores" if args.service_cpus else "")  # docker with runc, shared cores: the files' plain names
    (args.out / f"front_door_floods{suffix}.json").write_text(json.dumps({"machine": machine, "phases": rows},
                                                                         indent=1))
    lines = ["# The doors under floods (issue 38)", "",
             f"`python -m benchmarks.front_door_floods --phase-s {args.phase_s:g}`, backend {args.backend} "
             f"({machine['runtime']}), {machine['cpus']} CPUs ({machine['cores']}), {machine['note']}: load average "
             f"{machine['load_start']:.1f} at the start, {machine['load_end']:.1f} at the end. The victim tenant's "
             "trivial python_assert Verify, one at a time, while another client floods; ratios to the idle phase of "
             "the same run.", "",
             "| phase | victim calls | past deadline / failed | p50 ratio | p99 ratio | slowest 2%: ms, of it the "
             "service's run_s | event loop lag: p99 at most (ms), s per s | peak RSS MB | flood log bytes/min | "
             "service alive |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        slow, lag = r["slowest_2pct"] or {}, r["loop_lag"]
        slowest = f"{slow['latency_s'] * 1e3:.1f}, {slow['run_s'] * 1e3:.1f}" if slow else "-"
        lag_text = f"{lag['p99_at_most_s'] * 1e3:g}, {lag['lag_s_per_s']}" if lag["p99_at_most_s"] else "-"
        lines.append(f"| {r['phase']} | {r['calls']} | {r['missed']} | {r['p50_ratio']} | {r['p99_ratio']} | "
                     f"{slowest} | {lag_text} | {r['peak_rss_mb']} | {r['flood_log_bytes_per_min']} | "
                     f"{r['alive']} |")
    (args.out / f"FLOODS{suffix.upper()}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
