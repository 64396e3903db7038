"""A fleet on loopback: replicas as separate processes, two teams, request ids, metrics and health.

- Two teams with different keys share the example catalog's verifiers across two
  replicas (the compose.yaml layout): each gets exact, versioned, reproducible
  results; each is held to its namespaces; the replicas' metrics count each
  team's usage, and both replicas served.
- Request ids: the caller's ``x-request-id`` (or a fresh one) comes back in the
  trailing metadata, also on errors and quota refusals, and is in the JSON log.
- Health follows the sandbox backend: a replica whose sandbox image disappears is
  NOT_SERVING (and round_robin sends it nothing) until the image is back.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid

import grpc
import pytest
from grpc_health.v1 import health_pb2

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.client import VerifierClient
from verifier_service.credentials import Credentials
from verifier_service.errors import RemoteError

from support.replicas import Replica, health, metric_sum, workload
from support.tenancy_setup import EXAMPLE_CATALOG, GSM8K, JSON_OBJECT, PY_ASSERT, ROOT, Keys, ref_request, write_tenants
from support.wait import wait_for

pytestmark = [pytest.mark.docker, pytest.mark.timeout(240)]
TEAMS = {"team-math": {"use": ["math", "format"], "rate": 2000, "burst": 512},
         "team-code": {"use": ["code", "format"], "inline_specs": False, "rate": 2000, "burst": 512}}
EXAMPLE_KEYS = {"RLVR_TEAM_MATH_KEY": "rlvr_example-math-KpXfGFQaYuk4jsx9KcK9GSzk",  # public, in compose.yaml
                "RLVR_TEAM_CODE_KEY": "rlvr_example-code-09zknCgScZXx-un5RqWd5pB3"}
SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING


def code_item(i: int, id: str) -> pb.VerifyRequest:
    return ref_request(PY_ASSERT, f"```python\ndef f():\n    return {i}\n```", id=id,
                       tests=f"assert f() == {i}\nassert f() != {i}")  # one of two passes: 0.5 with fraction


def test_two_teams_share_catalog_verifiers_on_two_replicas(tmp_path, record_property):
    keys = Keys(*TEAMS)
    tenants = write_tenants(tmp_path / "tenants.yaml", keys, TEAMS)
    args = ("--max-concurrency", "2", "--tenants", tenants, "--catalog", str(EXAMPLE_CATALOG))
    a, b = Replica(tmp_path, "a", *args).start(), Replica(tmp_path, "b", *args).start()
    try:
        async def team(name: str, make, one_at_a_time: asyncio.Lock) -> list[list[pb.VerifyResult]]:
            async with await VerifierClient.connect([a.address, b.address],
                                                    credentials=Credentials(api_key=keys.key[name])) as client:
                async with one_at_a_time:  # the counts below are this client's alone
                    await both_replicas_answer(client)
                return await asyncio.gather(*(client.verify_batch(make(n), timeout_s=120) for n in range(8)))

        async def both_replicas_answer(client: VerifierClient) -> None:
            """round_robin spreads calls over the replicas whose connection is up; the client is ready once its
            first replica answers, so 8 calls sent at once may all go there. Calls until each replica answered one."""
            def listed() -> list[float]:
                return [metric_sum(r.metrics(), "rlvr_rpcs_total", method="ListVerifiers") for r in (a, b)]
            before = listed()
            for _ in range(100):
                await client.list_verifiers()
                if all(now > then for now, then in zip(listed(), before, strict=True)):
                    return
                await asyncio.sleep(0.05)
            raise AssertionError("round_robin never reached both replicas")

        def math_batch(n: int):  # the shared format verifier and team-math's own
            return [ref_request(JSON_OBJECT, json.dumps({"answer": str(n), "confidence": 0.5}), id=f"m{n}j"),
                    ref_request(GSM8K, f"so the answer is \\boxed{{{n + 1}}}", id=f"m{n}g", gold=str(n + 1)),
                    ref_request(GSM8K, "the answer is \\boxed{-7}", id=f"m{n}w", gold=str(n + 1))]

        def code_batch(n: int):  # the shared format verifier and team-code's own (sandboxed)
            return [ref_request(JSON_OBJECT, "not json", id=f"c{n}j"), code_item(n, f"c{n}p")]

        async def both():
            lock = asyncio.Lock()
            return await asyncio.gather(team("team-math", math_batch, lock), team("team-code", code_batch, lock))

        math_results, code_results = asyncio.run(both())
        for results in math_results:
            assert [pb.Verdict.Name(r.verdict) for r in results] == ["PASSED", "PASSED", "FAILED"]
            assert [r.verifier_version.split("+")[0] for r in results] == [JSON_OBJECT, GSM8K, GSM8K]
        for results in code_results:
            assert [pb.Verdict.Name(r.verdict) for r in results] == ["MALFORMED", "PARTIAL"]
            assert results[1].correctness_score == pytest.approx(0.5)
            assert results[1].sandbox_image.startswith("sha256:")  # the image digest: reproducible
            assert [r.verifier_version.split("+")[0] for r in results] == [JSON_OBJECT, PY_ASSERT]

        async def refused(name: str, request, key: str | None = None) -> str:
            client = await VerifierClient.connect(a.address, credentials=Credentials(api_key=key or keys.key[name]))
            try:
                await client.verify_batch([request], timeout_s=30)
                return "OK"
            except RemoteError as exc:
                return exc.code
            finally:
                await client.close()

        assert asyncio.run(refused("team-code", ref_request(GSM8K, "1", gold="1"))) == "PERMISSION_DENIED"
        assert asyncio.run(refused("team-code", workload(1, 0)[0].request)) == "PERMISSION_DENIED"  # inline spec
        assert asyncio.run(refused("team-math", code_item(1, "x"), key=keys.key["team-math"] + "x")) == \
            "UNAUTHENTICATED"
        per_replica = {r.name: r.metrics() for r in (a, b)}
    finally:
        a.stop()
        b.stop()
    usage = {team: {name: metric_sum(samples, "rlvr_tenant_verifications_total", tenant=team)
                    for name, samples in per_replica.items()} for team in TEAMS}
    record_property("two_teams", usage)
    print("two teams, verifications per replica:", usage)
    assert sum(usage["team-math"].values()) == 8 * 3 and sum(usage["team-code"].values()) == 8 * 2
    assert all(metric_sum(samples, "rlvr_rpcs_total", method="VerifyBatch", code="OK") > 0
               for samples in per_replica.values()), "round_robin left a replica idle"
    assert metric_sum(per_replica["a"], "rlvr_tenant_refusals_total", tenant="team-code",
                      code="PERMISSION_DENIED") == 2


def test_the_compose_two_team_check_passes_on_two_replicas(tmp_path):
    """What `docker compose --profile teams run two-teams` runs, with the same tenants file and catalog."""
    args = ("--max-concurrency", "2", "--tenants", str(ROOT / "examples" / "tenants.yaml"),
            "--catalog", str(EXAMPLE_CATALOG), "--max-connection-age-s", "1")  # clients reconnect as they go
    a, b = Replica(tmp_path, "a", *args).start(), Replica(tmp_path, "b", *args).start()
    try:
        done = subprocess.run([sys.executable, str(ROOT / "examples" / "fleet" / "two_teams.py"), "--target",
                               f"{a.address},{b.address}"], capture_output=True, text=True, timeout=120,
                              env={**os.environ, **EXAMPLE_KEYS})
        served = [metric_sum(r.metrics(), "rlvr_rpcs_total", method="VerifyBatch", code="OK") for r in (a, b)]
    finally:
        a.stop()
        b.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "team-math: 24 verifications" in done.stdout and "team-code: 16 verifications" in done.stdout
    # every batch answered once (spreading them over both replicas is the test above's: this client may
    # send all 16 at once, before its second replica's connection is up)
    assert sum(served) == 2 * 8, served


def test_request_ids_come_back_and_are_in_the_json_log(tmp_path):
    keys = Keys("team", "slow")
    tenants = write_tenants(tmp_path / "tenants.yaml", keys, {"slow": {"rate": 0.5, "burst": 2}})
    replica = Replica(tmp_path, "logs", "--max-concurrency", "1", "--log-format", "json", "--tenants", tenants,
                      "--catalog", str(EXAMPLE_CATALOG)).start()
    try:
        with grpc.insecure_channel(replica.address) as channel:
            verify = channel.unary_unary("/rlvr.verifier.v1.Verifier/VerifyBatch",
                                         request_serializer=pb.VerifyBatchRequest.SerializeToString,
                                         response_deserializer=pb.VerifyBatchResponse.FromString)
            batch = pb.VerifyBatchRequest(requests=[ref_request(JSON_OBJECT, '{"answer": "1", "confidence": 1}')])
            _, call = verify.with_call(batch, metadata=(*keys.metadata("team"), ("x-request-id", "fleet-req-1")),
                                       timeout=30)
            assert dict(call.trailing_metadata())["x-request-id"] == "fleet-req-1"
            _, call = verify.with_call(batch, metadata=keys.metadata("team"), timeout=30)
            fresh = dict(call.trailing_metadata())["x-request-id"]
            assert fresh and fresh != "fleet-req-1"
            with pytest.raises(grpc.RpcError) as info:  # an error carries it too
                verify(pb.VerifyBatchRequest(requests=[ref_request("math/nope@1", "1")]),
                       metadata=(*keys.metadata("team"), ("x-request-id", "fleet-req-2")), timeout=30)
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
            assert dict(info.value.trailing_metadata())["x-request-id"] == "fleet-req-2"
            with pytest.raises(grpc.RpcError) as info:  # a refusal by the auth layer
                verify(batch, metadata=(("x-request-id", "fleet-req-3"),), timeout=30)
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert dict(info.value.trailing_metadata())["x-request-id"] == "fleet-req-3"
            two = pb.VerifyBatchRequest(requests=list(batch.requests) * 2)
            verify(two, metadata=keys.metadata("slow"), timeout=30)  # the whole bucket
            with pytest.raises(grpc.RpcError) as info:  # a quota refusal: the retry hint and the id
                verify(two, metadata=(*keys.metadata("slow"), ("x-request-id", "fleet-req-4")), timeout=30)
            trailing = dict(info.value.trailing_metadata())
            assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert trailing["x-request-id"] == "fleet-req-4" and "retry-after-ms" in trailing
    finally:
        replica.stop()
    records = [json.loads(line) for line in replica.log_path.read_text().splitlines() if line.startswith("{")]
    rpc = {r["request_id"]: r for r in records if r.get("logger") == "verifier_service.rpc"}
    assert rpc["fleet-req-1"]["code"] == "OK" and rpc["fleet-req-1"]["tenant"] == "team"
    assert rpc["fleet-req-1"]["method"] == "VerifyBatch" and rpc["fleet-req-1"]["completions"] == 1
    assert rpc[fresh]["code"] == "OK"
    assert rpc["fleet-req-2"]["code"] == "NOT_FOUND"
    assert rpc["fleet-req-3"]["code"] == "UNAUTHENTICATED"
    assert rpc["fleet-req-4"]["code"] == "RESOURCE_EXHAUSTED" and rpc["fleet-req-4"]["tenant"] == "slow"
    audit = [r for r in records if r.get("logger") == "verifier_service.audit"]
    mine = [r for r in audit if r.get("request_id") == "fleet-req-1"]
    assert mine, "the audit line carries the request id"
    # its fields are top-level JSON fields of the log line, not a JSON string inside msg
    assert mine[0]["audit"] == "verify" and mine[0]["tenant"] == "team" and mine[0]["count"] == 1
    assert mine[0]["msg"] == "audit verify" and mine[0]["verdicts"] == {"PASSED": 1}


def test_health_follows_the_sandbox_backend_and_round_robin_avoids_a_sick_replica(tmp_path):
    image = "rlvr-sandbox-python:latest"
    tag = f"rlvr-sandbox-python:fleet-health-{uuid.uuid4().hex[:8]}"
    subprocess.run(["docker", "tag", image, tag], check=True, timeout=60)
    try:
        sick = Replica(tmp_path, "sick", "--max-concurrency", "1", env={"RLVR_VERIFIER_SANDBOX_IMAGE": tag}).start()
        well = Replica(tmp_path, "well", "--max-concurrency", "1").start()
        try:
            assert health(sick.address) == SERVING
            subprocess.run(["docker", "image", "rm", tag], check=True, timeout=60, capture_output=True)
            assert wait_for(lambda: health(sick.address) == NOT_SERVING, 15), "image gone, still SERVING"
            assert metric_sum(sick.metrics(), "rlvr_sandbox_backend_up") == 0
            before = metric_sum(sick.metrics(), "rlvr_rpcs_total")

            async def spread() -> list[str]:
                async with await VerifierClient.connect([sick.address, well.address]) as client:
                    out = []
                    for n in range(6):
                        results = await client.verify_batch([i.request for i in workload(4, 1, tag=f"h{n}")],
                                                            timeout_s=60)
                        out += [pb.Verdict.Name(r.verdict) for r in results]
                    return out

            verdicts = asyncio.run(spread())
            assert "INFRA_ERROR" not in verdicts and len(verdicts) == 30
            assert metric_sum(sick.metrics(), "rlvr_rpcs_total") == before, "a NOT_SERVING replica got calls"
            subprocess.run(["docker", "tag", image, tag], check=True, timeout=60)
            assert wait_for(lambda: health(sick.address) == SERVING, 15), "image back, still NOT_SERVING"
            assert metric_sum(sick.metrics(), "rlvr_sandbox_backend_up") == 1
        finally:
            sick.stop()
            well.stop()
    finally:
        subprocess.run(["docker", "image", "rm", tag], timeout=60, capture_output=True)


def test_a_catalog_mounted_from_a_configmap_loads_each_entry_once(tmp_path):
    """A ConfigMap volume: flat keys (no '@' allowed), linked from ``..data/``, which holds the files."""
    from verifier_service.tenancy.catalog import Catalog

    data = tmp_path / "catalog" / "..2026_12_01_10_00_00.000000001"
    data.mkdir(parents=True)
    (tmp_path / "catalog" / "..data").symlink_to(data.name)
    files = {"catalog.lock": EXAMPLE_CATALOG / "catalog.lock"}
    files.update({f"{p.parent.name}.{p.stem.replace('@', '.')}.yaml": p for p in EXAMPLE_CATALOG.glob("*/*.yaml")})
    for key, source in files.items():
        (data / key).write_bytes(source.read_bytes())
        (tmp_path / "catalog" / key).symlink_to(f"..data/{key}")
    catalog = Catalog.load(tmp_path / "catalog")
    assert sorted(catalog.entries) == sorted([GSM8K, "math/gsm8k-answer@2", JSON_OBJECT, PY_ASSERT])


def test_each_worker_process_serves_its_own_metrics_port(tmp_path):
    replica = Replica(tmp_path, "workers", "--max-concurrency", "1", "--workers", "2")
    replica.metrics_port = free_port_pair()
    replica.start()
    try:
        first = replica.metrics()
        replica.metrics_port += 1  # the second worker: SERVING on the shared port may have been the first alone

        def second_worker():
            try:
                return replica.metrics()
            except OSError:
                return None

        second = wait_for(second_worker, 60, interval=0.5)
    finally:
        replica.stop()
    assert metric_sum(first, "rlvr_sandbox_pool_size") == 1 and metric_sum(second, "rlvr_sandbox_pool_size") == 1


def free_port_pair() -> int:
    """A port p with p + 1 free too."""
    import socket

    for _ in range(50):
        with socket.socket() as a, socket.socket() as b:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            try:
                b.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    raise RuntimeError("no two adjacent free ports")
