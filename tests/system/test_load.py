"""Sustained load on one replica (a separate ``verifier-service serve`` process, loopback).

More than 20,000 verifications, sent as bursts of concurrent batches far larger
than the service's concurrency (4 sandboxes, 2 pure workers): json_schema and
format for volume, a share of sandboxed python_assert checks. Every id must be
answered exactly once with the verdict known in advance, the metrics must
count exactly what was answered, and the replica's memory (with its worker
processes) must stay flat over a second round of the same load.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.client import VerifierClient

from support.replicas import Replica, batches, metric_sum, workload

pytestmark = [pytest.mark.docker, pytest.mark.timeout(240)]

CONCURRENCY = 4          # sandboxes of the replica
BATCH = 512              # completions per VerifyBatch
PARALLEL = 6             # batches in flight at once: 3,072 completions against 4 sandboxes + 2 workers
ROUND_CHEAP, ROUND_SANDBOXED = 10_000, 200  # per round; two rounds


async def run_round(client: VerifierClient, tag: str) -> dict:
    items = workload(ROUND_CHEAP, ROUND_SANDBOXED, tag=tag)
    expected = {item.request.id: item.expected for item in items}
    answered: Counter = Counter()
    wrong: list[tuple[str, str, str]] = []
    gate = asyncio.Semaphore(PARALLEL)

    async def send(batch):
        async with gate:
            results = await client.verify_batch([item.request for item in batch], timeout_s=180)
        assert [r.id for r in results] == [item.request.id for item in batch], "results out of order"
        for result in results:
            answered[result.id] += 1
            verdict = pb.Verdict.Name(result.verdict)
            if verdict != expected.get(result.id):
                wrong.append((result.id, expected.get(result.id, "?"), verdict))
            elif not result.HasField("reward"):
                wrong.append((result.id, "a reward", "none"))

    started = time.perf_counter()
    await asyncio.gather(*(send(b) for b in batches(items, BATCH)))
    elapsed = time.perf_counter() - started
    return {"sent": len(items), "answered": sum(answered.values()),
            "lost": sum(1 for rid in expected if answered[rid] == 0),
            "duplicates": sum(n - 1 for n in answered.values() if n > 1),
            "unknown": sum(1 for rid in answered if rid not in expected),
            "wrong": wrong, "seconds": elapsed, "per_s": len(items) / elapsed}


def test_sustained_bursts_lose_nothing_and_memory_stays_flat(tmp_path, record_property):
    replica = Replica(tmp_path, "load", "--max-concurrency", str(CONCURRENCY), "--pure-workers", "2").start()
    try:
        async def main():
            async with await VerifierClient.connect(replica.address) as client:
                await run_round(client, "warm")  # warm-up: imports, caches, pool
                before = replica.rss_mib()
                first = await run_round(client, "a")
                middle = replica.rss_mib()
                second = await run_round(client, "b")
                await asyncio.sleep(1.0)
                after = replica.rss_mib()
                return first, second, before, middle, after

        first, second, before, middle, after = asyncio.run(main())
        samples = replica.metrics()
    finally:
        replica.stop()
    report = {"verifications": first["sent"] + second["sent"],
              "throughput_per_s": round((first["sent"] + second["sent"]) / (first["seconds"] + second["seconds"]), 1),
              "lost": first["lost"] + second["lost"], "duplicates": first["duplicates"] + second["duplicates"],
              "wrong": len(first["wrong"]) + len(second["wrong"]),
              "rss_mib": {"before": round(before, 1), "after_round_1": round(middle, 1), "after": round(after, 1)}}
    record_property("load", report)
    print("load:", report)
    for r in (first, second):
        assert r["answered"] == r["sent"] and r["lost"] == 0 and r["duplicates"] == 0 and r["unknown"] == 0, r
        assert not r["wrong"], f"wrong verdicts: {r['wrong'][:10]}"
    assert report["verifications"] >= 20_000
    # The metrics count exactly what was answered (three rounds: warm-up + two).
    total = 3 * (ROUND_CHEAP + ROUND_SANDBOXED)
    assert metric_sum(samples, "rlvr_verdicts_total") == total
    assert metric_sum(samples, "rlvr_verdicts_total", kind="python_assert") == 3 * ROUND_SANDBOXED
    assert metric_sum(samples, "rlvr_verdicts_total", verdict="INFRA_ERROR") == 0
    assert metric_sum(samples, "rlvr_tenant_verifications_total", tenant="local") == total
    assert metric_sum(samples, "rlvr_verify_seconds_count", kind="json_schema") > 0
    assert metric_sum(samples, "rlvr_pending_completions") == 0
    # Flat memory: the second round (same size) may not grow the replica by more than a few percent.
    assert after <= middle * 1.10 + 16, report
    assert after <= before * 1.25 + 32, report
