"""The verifier fleet on Ray (verifier_service/fleet_ray): a local cluster of 3 worker nodes (Ray's
cluster_utils: separate raylets with their own logical CPUs, all on loopback), replicas on bubblewrap.

One cluster for the module (starting Ray is the slow part); the tests run in order: placement and verdicts
(inside the cluster through a handle, outside through the gRPC ingress, against a plain service), refusals,
pickled clients and the trainer hooks in Ray tasks, sessions, autoscaling 1 -> N -> 1, and last a node killed
under a run. Every Ray process is gone when the module ends (checked).
"""

from __future__ import annotations

import asyncio
import os
import pickle
import time
import uuid
from dataclasses import replace

import pytest

from verifier_service.fleet_ray.local import loopback_only

loopback_only()  # before Ray is imported anywhere in this process
ray = pytest.importorskip("ray")
serve = pytest.importorskip("ray.serve")

from verifier_service import ray_wire  # noqa: E402
from verifier_service._generated import verifier_pb2 as pb  # noqa: E402
from verifier_service.client import RemoteInvalidSpec, Unauthenticated, VerifierClient  # noqa: E402
from verifier_service.client.sessions import SessionClient  # noqa: E402
from verifier_service.credentials import API_KEY_ENV, Credentials  # noqa: E402
from verifier_service.fleet_ray import deployment  # noqa: E402
from verifier_service.fleet_ray.deployment import FleetConfig  # noqa: E402
from verifier_service.fleet_ray.local import LocalRayCluster  # noqa: E402
from verifier_service.sandbox.bwrap import LABELS_ENV, sandbox_processes  # noqa: E402
from verifier_service.spec import request_from_json  # noqa: E402
from verifier_service.testing import free_port  # noqa: E402

from support.service import TEST_CONFIG, RunningService  # noqa: E402
from support.tenancy_setup import Keys, write_tenants  # noqa: E402

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(600)]

# the fleet's sandboxes carry a label of their own: they outlive each test (the replicas' warm pools), and are
# checked gone when the module's cluster is
FLEET_LABEL = f"rlvr.test_ray_fleet={uuid.uuid4().hex[:12]}"
SERVICE = {"sandbox_backend": "bwrap", "max_concurrency": 2, "pure_workers": 1, "session_spares": 1,
           "memory_mb": 256, "health_interval_s": 1.0, "sandbox_labels": FLEET_LABEL,
           "bwrap_cgroup": TEST_CONFIG.bwrap_cgroup, "bwrap_python": TEST_CONFIG.bwrap_python,
           "bwrap_allow_host_root": TEST_CONFIG.bwrap_allow_host_root}
GRPC_PORT = free_port()
FLEET = FleetConfig(service=SERVICE, replicas=3, max_replicas_per_node=1, session_hosts=1, grpc_port=GRPC_PORT,
                    grpc_host="127.0.0.1", health_check_period_s=2.0)


def case(i: int, salt: str, sleep_s: float = 0.0) -> tuple[dict, int]:
    """A request of a mixed workload and the verdict it must get (every completion unique to ``salt``)."""
    nap = f"    import time; time.sleep({sleep_s})\n" if sleep_s else ""
    kind = i % 5
    if kind in (0, 1):  # code: right, or off by one
        body = f"def f(x):\n{nap}    return x + {i}{' + 1' if kind else ''}  # {salt}\n"
        spec = {"kind": "python_assert", "tests": f"assert f(1) == {i + 1}"}
        return {"id": f"{salt}-{i}", "completion": body, "spec": spec}, pb.PASSED if kind == 0 else pb.FAILED
    if kind == 2:  # a schema, half the time violated
        good = i % 2 == 0
        return ({"id": f"{salt}-{i}", "completion": f'{{"n": {i if good else -i - 1}, "s": "{salt}"}}',
                 "spec": {"kind": "json_schema", "schema": {"type": "object", "properties": {
                     "n": {"type": "integer", "minimum": 0}}, "required": ["n"]}}},
                pb.PASSED if good else pb.FAILED)
    if kind == 3:
        return ({"id": f"{salt}-{i}", "completion": f"{salt}: the answer is \\boxed{{{i * 3}}}",
                 "spec": {"kind": "math", "gold": str(i * 3)}}, pb.PASSED)
    return ({"id": f"{salt}-{i}", "completion": "```python\nprint(1\n", "spec": {  # no closing fence: MALFORMED
        "kind": "python_assert", "extract": "fenced_code", "tests": "assert True"}}, pb.MALFORMED)


def batch(n: int, salt: str, sleep_s: float = 0.0):
    pairs = [case(i, salt, sleep_s) for i in range(n)]
    return [request_from_json(p[0]) for p in pairs], [p[1] for p in pairs]


def summary(results) -> list[tuple]:
    return [(r.id, r.verdict, round(r.reward, 6) if r.HasField("reward") else None, r.format_score,
             r.correctness_score, r.tests_passed, r.tests_total) for r in results]


def run(coro):
    return asyncio.run(coro)


def ray_processes() -> list[str]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if CLUSTER_MARK and CLUSTER_MARK in cmd:
                out.append(f"{pid}: {cmd[:120]}")
    return out


CLUSTER_MARK = ""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The cluster and the fleet, with authentication on: the team's key is in this process's environment (and so
    in every Ray worker's, started from it) for the tests' clients, and taken out again at the end."""
    global CLUSTER_MARK, FLEET
    keys = Keys("team")
    tenants = write_tenants(tmp_path_factory.mktemp("ray-tenants") / "tenants.yaml", keys, {})
    FLEET = replace(FLEET, service={**FLEET.service, "tenants": tenants})
    saved = os.environ.get(API_KEY_ENV)
    os.environ[API_KEY_ENV] = keys.key["team"]
    try:
        yield from _cluster()
    finally:
        if saved is None:
            os.environ.pop(API_KEY_ENV, None)
        else:
            os.environ[API_KEY_ENV] = saved


def _cluster():
    global CLUSTER_MARK
    local = LocalRayCluster(nodes=3, cpus_per_node=2)
    CLUSTER_MARK = local.temp_dir
    try:
        deployment.deploy(FLEET)
        yield local
    finally:
        try:
            deployment.shutdown(FLEET)
        finally:
            local.close()
        deadline = time.monotonic() + 30
        while ray_processes() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not ray_processes(), f"Ray processes left after the cluster shut down: {ray_processes()}"
        left = [pid for pid, marks in sandbox_processes().items() if marks.get(LABELS_ENV) == FLEET_LABEL]
        assert not left, f"the fleet's bwrap sandboxes outlived it: {left}"


def replica_nodes(handle, want: int, timeout: float = 60.0) -> dict[str, dict]:
    """The replicas' whereabouts, by pid (asked until ``want`` distinct replicas answered)."""
    seen: dict[int, dict] = {}
    deadline = time.monotonic() + timeout
    while len(seen) < want and time.monotonic() < deadline:
        where = handle.options(method_name="where").remote().result(timeout_s=30)
        seen[where["pid"]] = where
    return seen


def running_replicas() -> int:
    status = serve.status().applications[ray_wire.APP_NAME].deployments["Verifier"]
    return status.replica_states.get("RUNNING", 0)


def test_replicas_on_different_nodes_and_the_same_verdicts_inside_and_outside(cluster):
    handle = serve.get_app_handle(ray_wire.APP_NAME)
    where = replica_nodes(handle, 3)
    assert len(where) == 3
    assert len({w["node_id"] for w in where.values()}) == 3, where  # one replica per node
    assert {w["backend"] for w in where.values()} == {"bwrap"}
    worker_ids = {n.node_id for n in cluster.workers}
    assert {w["node_id"] for w in where.values()} <= worker_ids

    requests, expected = batch(40, "same")
    inside = run(VerifierClient.open("ray:").verify_batch(requests, timeout_s=120))

    async def outside():
        async with await VerifierClient.connect(f"127.0.0.1:{GRPC_PORT}") as client:
            return await client.verify_batch(requests, timeout_s=120)

    through_ingress = run(outside())
    plain = RunningService(replace(TEST_CONFIG, sandbox_backend="bwrap", max_concurrency=2))  # one plain service
    try:
        reference = plain.stub.VerifyBatch(pb.VerifyBatchRequest(requests=requests), timeout=120).results
    finally:
        plain.close()
    assert [r.verdict for r in inside] == expected
    assert summary(inside) == summary(through_ingress) == summary(reference)


def test_the_api_key_decides_the_tenant_on_both_paths(cluster):
    requests, _ = batch(2, "auth")
    for key in ("", "rlvr_not-a-key-of-this-fleet"):
        with pytest.raises(Unauthenticated):
            run(VerifierClient.open("ray:", credentials=Credentials(api_key=key)).verify_batch(requests, 60))

        async def outside(key: str):
            client = VerifierClient.open(f"127.0.0.1:{GRPC_PORT}", credentials=Credentials(api_key=key))
            async with client:
                await client.verify_batch(requests, timeout_s=60)

        with pytest.raises(Unauthenticated):
            run(outside(key))


def test_refusals_come_back_typed_on_both_paths(cluster):
    bad = request_from_json({"id": "x", "completion": "1", "spec": {"kind": "python_assert", "tests": "x = 1"}})
    with pytest.raises(RemoteInvalidSpec, match="request 0"):
        run(VerifierClient.open("ray:").verify_batch([bad], timeout_s=60))

    async def outside():
        async with await VerifierClient.connect(f"127.0.0.1:{GRPC_PORT}") as client:
            await client.verify_batch([bad], timeout_s=60)

    with pytest.raises(RemoteInvalidSpec, match="request 0"):
        run(outside())


@ray.remote(num_cpus=0)
def _score_in_task(pickled_client: bytes, requests: list[bytes]):
    """A Ray task (a reward worker) scoring with a client pickled in the driver: handle calls, no ingress."""
    client = pickle.loads(pickled_client)
    results = asyncio.run(client.verify_batch([pb.VerifyRequest.FromString(r) for r in requests], timeout_s=120))
    return [r.SerializeToString() for r in results]


@ray.remote(num_cpus=0)
def _verl_in_task(solutions: list[str], labels: list[str]):
    os.environ["RLVR_VERIFIER_ADDRESS"] = "ray:"
    from trainer.adapters import remote, verl

    remote.reset()
    return verl.compute_score_batch(["d"] * len(solutions), solutions, labels)


@ray.remote(num_cpus=0)
def _trl_rewards_in_task(completions: list[str], specs: list[str]):
    """TRL's reward functions (trainer.rewards) in a Ray worker, on the fleet through the handle."""
    from trainer.rewards import VerifierRewards

    format_reward, correctness_reward = VerifierRewards("ray:", timeout_s=120).reward_funcs()
    prompts = [""] * len(completions)

    async def both():
        return await asyncio.gather(format_reward(prompts, completions, verification=specs),
                                    correctness_reward(prompts, completions, verification=specs))

    return asyncio.run(both())


def test_pickled_client_and_the_trainer_hooks_in_ray_tasks(cluster):
    import json

    requests, expected = batch(10, "pickled")
    client = VerifierClient.open("ray:")
    answers = ray.get(_score_in_task.remote(pickle.dumps(client),
                                            [r.SerializeToString() for r in requests]), timeout=180)
    results = [pb.VerifyResult.FromString(a) for a in answers]
    assert [r.verdict for r in results] == expected
    direct = run(client.verify_batch(requests, timeout_s=120))
    assert summary(results) == summary(direct)

    raw = [case(i, "verl") for i in range(5)]
    scores = ray.get(_verl_in_task.remote([c["completion"] for c, _ in raw], [json.dumps(c["spec"]) for c, _ in raw]),
                     timeout=180)
    reference = run(client.verify_batch([request_from_json(c) for c, _ in raw], timeout_s=120))
    assert [s["score"] for s in scores] == pytest.approx([r.reward for r in reference])

    fmt, correct = ray.get(_trl_rewards_in_task.remote([c["completion"] for c, _ in raw],
                                                       [json.dumps(c["spec"]) for c, _ in raw]), timeout=180)
    assert fmt == pytest.approx([r.format_score for r in reference])
    assert correct == pytest.approx([r.correctness_score for r in reference])


def test_a_grpc_client_says_why_it_cannot_be_pickled(cluster):
    async def make():
        client = VerifierClient.open(f"127.0.0.1:{GRPC_PORT}")
        try:
            with pytest.raises(TypeError, match="cannot be pickled"):
                pickle.dumps(client)
        finally:
            await client.close()

    run(make())


def test_sessions_reach_the_host_that_holds_them(cluster):
    # from outside, through the ingress
    with SessionClient(f"127.0.0.1:{GRPC_PORT}", credentials=Credentials.from_env()) as sessions:
        ids = [sessions.open().session_id for _ in range(3)]
        assert all(ray_wire.split_id(i) is not None for i in ids)
        for n, sid in enumerate(ids):
            sessions.execute(sid, f"x = {n * 7}")
        for n, sid in enumerate(ids):
            cell = sessions.execute(sid, "x")
            assert cell.value == str(n * 7), cell
            assert ray_wire.split_id(cell.session_id) == ray_wire.split_id(sid)
        for sid in ids:
            sessions.close_session(sid)
        gone = ray_wire.routed_id(ray_wire.host_name(0), "no-such-session")
        with pytest.raises(Exception, match=r"NOT_FOUND|not found|gone|unknown|no session"):
            sessions.execute(gone, "1")


def test_a_burst_scales_out_and_back(cluster):
    autoscaled = replace(FLEET, session_hosts=0, grpc_port=0, max_replicas_per_node=None, autoscaling={
        "min_replicas": 1, "initial_replicas": 1, "max_replicas": 3, "target_ongoing_requests": 1,
        "upscale_delay_s": 0, "downscale_delay_s": 2, "look_back_period_s": 2, "metrics_interval_s": 1})
    deployment.deploy(autoscaled)
    deadline = time.monotonic() + 120
    while running_replicas() != 1 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert running_replicas() == 1
    client = VerifierClient.open("ray:")
    peak = {"n": 1, "batches": 0}

    async def burst():
        """Eight slow batches in flight at a time, until the fleet has grown (or 150 s)."""
        stop = time.monotonic() + 150

        async def sender(k: int):
            b = 0
            while peak["n"] < 3 and time.monotonic() < stop:
                requests, expected = batch(6, f"burst{k}-{b}", sleep_s=0.4)
                got = await client.verify_batch(requests, timeout_s=300)
                assert [r.verdict for r in got] == expected
                peak["batches"] += 1
                b += 1

        async def watch():
            while True:
                peak["n"] = max(peak["n"], running_replicas())
                await asyncio.sleep(0.5)

        watcher = asyncio.create_task(watch())
        try:
            await asyncio.gather(*(sender(k) for k in range(8)))
        finally:
            watcher.cancel()

    run(burst())
    assert peak["n"] >= 2, f"{peak['batches']} slow batches, 8 at a time, did not scale the fleet past one replica"
    deadline = time.monotonic() + 120
    while running_replicas() > 1 and time.monotonic() < deadline:
        time.sleep(1)
    assert running_replicas() == 1, "the fleet did not scale back to one replica after the burst"


def test_a_node_killed_mid_run_loses_and_misscores_nothing(cluster):
    # at most 4 batches per replica at once (the rest wait in the handle): both replicas hold batches when the
    # first one comes back, even when a loaded machine makes one replica slow to answer the router's probes
    fleet = replace(FLEET, session_hosts=0, grpc_port=0, replicas=2, autoscaling=None, max_ongoing_requests=4)
    handle = deployment.deploy(fleet)
    where = replica_nodes(handle, 2)
    assert len({w["node_id"] for w in where.values()}) == 2
    victim = next(iter(where.values()))["node_id"]
    client = VerifierClient.open("ray:")
    work = [batch(8, f"kill{b}", sleep_s=0.4) for b in range(16)]

    async def run_and_kill():
        tasks = [asyncio.create_task(client.verify_batch(r, timeout_s=400)) for r, _ in work]
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        assert len(done) < len(tasks), "the run ended before the node could be killed"
        await asyncio.to_thread(cluster.kill_node, victim)
        return await asyncio.gather(*tasks)

    results = run(run_and_kill())
    lost = sum(r.verdict == pb.INFRA_ERROR for got in results for r in got)
    wrong = sum(r.verdict != want for (_, expected), got in zip(work, results, strict=True)
                for r, want in zip(got, expected, strict=True) if r.verdict != pb.INFRA_ERROR)
    assert (lost, wrong) == (0, 0)
    assert client.retried >= 1, "no batch was in flight on the killed node"
