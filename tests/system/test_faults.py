"""Faults under load, on loopback: sandboxes killed at random, a replica SIGKILLed and restarted.

Whatever breaks, every request gets its correct verdict or an explicit
INFRA_ERROR (no reward; ``None`` to the trainer), never a wrong reward; and
nothing is left behind: no sandbox container, no worker process of the killed
replica.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import threading
import uuid
from collections import Counter

import pytest

from trainer.rewards import VerifierRewards
from verifier_service._generated import verifier_pb2 as pb
from verifier_service.client import VerifierClient

from support.replicas import Replica, alive, batches, metric_sum, workload
from support.sandboxes import running_sandboxes, stray_containers
from support.service import TEST_RUN_LABEL
from support.wait import wait_for

pytestmark = [pytest.mark.docker, pytest.mark.timeout(240)]
SCORES = {"PASSED": (1.0, 1.0), "FAILED": (1.0, 0.0), "MALFORMED": (0.0, 0.0)}  # (format, correctness)


class Killer(threading.Thread):
    """`docker kill`s a random running sandbox carrying ``label`` every 0.2-0.6 s until stopped."""

    def __init__(self, label: str, seed: int = 7):
        super().__init__(daemon=True)
        self.label = label
        self.random = random.Random(seed)
        self.stopped = threading.Event()
        self.kills = 0

    def run(self) -> None:
        while not self.stopped.wait(self.random.uniform(0.2, 0.6)):
            live = running_sandboxes(self.label)
            if live:
                done = subprocess.run(["docker", "kill", self.random.choice(live)], capture_output=True, timeout=30)
                self.kills += done.returncode == 0


def test_sandboxes_killed_at_random_give_correct_verdicts_or_infra_error(tmp_path, record_property):
    label = f"rlvr.fault_test={uuid.uuid4().hex[:8]}"  # only this replica's sandboxes are killed
    replica = Replica(tmp_path, "sandbox-faults", "--max-concurrency", "4",
                      env={"RLVR_VERIFIER_SANDBOX_LABELS": f"{TEST_RUN_LABEL},{label}"}).start()
    items = workload(1200, 240, tag="k", sleep_s=0.15)
    expected = {item.request.id: item.expected for item in items}
    killer = Killer(label)
    verdicts: Counter = Counter()
    wrong = []
    try:
        async def main():
            client = await VerifierClient.connect(replica.address)
            gate = asyncio.Semaphore(4)

            async def send(batch):
                async with gate:
                    results = await client.verify_batch([i.request for i in batch], timeout_s=120)
                for result in results:
                    verdict = pb.Verdict.Name(result.verdict)
                    verdicts[verdict] += 1
                    if verdict == "INFRA_ERROR":
                        if result.HasField("reward"):
                            wrong.append((result.id, "no reward", result.reward))
                    elif verdict != expected[result.id]:
                        wrong.append((result.id, expected[result.id], f"{verdict}: {result.detail[:200]}"))

            try:
                killer.start()
                await asyncio.gather(*(send(b) for b in batches(items, 40)))
            finally:
                killer.stopped.set()
                await client.close()

        asyncio.run(main())
        killer.join(10)
        # Still healthy, and a clean run after the faults: the killed sandboxes were replaced.
        after = workload(0, 8, tag="after")
        rewards_ok = asyncio.run(_verify_once(replica.address, after))
        samples = replica.metrics()
    finally:
        replica.stop()
    report = {"kills": killer.kills, "verifications": len(items), "verdicts": dict(verdicts), "wrong": len(wrong),
              "recycled": metric_sum(samples, "rlvr_sandbox_recycled_total")}
    record_property("sandbox_faults", report)
    print("sandbox faults:", report)
    assert not wrong, f"wrong verdicts or rewards under sandbox kills: {wrong[:10]}"
    assert sum(verdicts.values()) == len(items)
    assert killer.kills >= 5, "the killer found no sandbox to kill: the fault was not exercised"
    assert rewards_ok == [item.expected for item in after]
    assert metric_sum(samples, "rlvr_sandbox_recycled_total") >= killer.kills * 0.5
    assert wait_for(lambda: not stray_containers(), 20), f"sandboxes left: {stray_containers()}"


async def _verify_once(address: str, items) -> list[str]:
    async with await VerifierClient.connect(address) as client:
        results = await client.verify_batch([i.request for i in items], timeout_s=60)
        return [pb.Verdict.Name(r.verdict) for r in results]


def test_a_replica_killed_and_restarted_mid_run_loses_no_reward(tmp_path, record_property):
    a = Replica(tmp_path, "a", "--max-concurrency", "2").start()
    b = Replica(tmp_path, "b", "--max-concurrency", "2").start()
    rewards = VerifierRewards([a.address, b.address], timeout_s=60, retries=6, backoff_s=0.2)
    funcs = rewards.reward_funcs()
    items = workload(1440, 96, tag="r", sleep_s=0.05)
    groups = batches(items, 48)  # 32 training batches
    outcome = {"batches": len(groups), "samples": len(items), "none": 0, "wrong": 0, "batches_lost": 0}
    wrong = []
    progress = {"done": 0}

    async def train():
        gate = asyncio.Semaphore(3)

        async def step(group):
            completions = [i.request.completion for i in group]
            columns = {"verification": [json.dumps(i.spec) for i in group]}
            async with gate:
                fmt, correct = await asyncio.gather(*(f(prompts=["p"] * len(group), completions=completions,
                                                        completion_ids=None, **columns) for f in funcs))
                progress["done"] += 1
            for item, f_score, c_score in zip(group, fmt, correct, strict=True):
                if f_score is None or c_score is None:
                    outcome["none"] += 1
                    if not (f_score is None and c_score is None):
                        wrong.append((item.request.id, "both None", (f_score, c_score)))
                elif (f_score, c_score) != SCORES[item.expected]:
                    wrong.append((item.request.id, SCORES[item.expected], (f_score, c_score)))

        async def chaos():
            while progress["done"] < len(groups) // 4:
                await asyncio.sleep(0.05)
            while True:  # mid-run, while A holds a batch: it dies with A
                in_flight = metric_sum(await asyncio.to_thread(a.metrics), "rlvr_rpcs_in_flight")
                if in_flight:
                    break
                await asyncio.sleep(0.01)
            await asyncio.to_thread(a.kill)
            outcome["in_flight_on_a_when_killed"] = in_flight
            await asyncio.sleep(1.5)
            await asyncio.to_thread(a.start)  # same port: round_robin reconnects to it

        try:
            await asyncio.gather(chaos(), *(step(g) for g in groups))
        finally:
            await rewards.aclose()

    try:
        asyncio.run(train())
        outcome["batches_lost"] = sum(s.lost for s in rewards.history)
        outcome["retries"] = sum(s.attempts - 1 for s in rewards.history)  # gRPC's own retries not counted
        # A serves again after its restart: a few more batches reach it through round_robin.
        more = workload(200, 0, tag="post")

        async def after():
            async with await VerifierClient.connect([a.address, b.address]) as client:
                for group in batches(more, 20):
                    await client.verify_batch([i.request for i in group], timeout_s=60)
        asyncio.run(after())
        served_by_a = metric_sum(a.metrics(), "rlvr_rpcs_total", method="VerifyBatch", code="OK")
        outcome["batches_on_restarted_a"] = served_by_a
        killed_children = a.children
    finally:
        a.stop()
        b.stop()
    outcome["wrong"] = len(wrong)
    record_property("replica_fault", outcome)
    print("replica fault:", outcome)
    assert not wrong, f"wrong rewards: {wrong[:10]}"
    assert outcome["batches_lost"] == 0, "a batch was lost although replica B was up all along"
    assert outcome["in_flight_on_a_when_killed"] >= 1
    assert served_by_a > 0, "the restarted replica got no calls"
    assert killed_children, "the killed replica had no worker processes to check"
    assert wait_for(lambda: not any(alive(p) for p in killed_children), 15), "workers outlived their replica"
    assert wait_for(lambda: not stray_containers(), 20), f"sandboxes left: {stray_containers()}"
