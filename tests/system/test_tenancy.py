"""Tenancy against a real service: API keys and client certificates mapped to tenants, namespaces, per-tenant
quotas with retry hints (and clients that honour them), one tenant's flood not throttling another, TLS, the
audit log, and a fuzzing pass over keys and catalog references."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.client import VerifierClient
from verifier_service.config import ServiceConfig
from verifier_service.credentials import Credentials
from verifier_service.errors import CatalogError, RemoteError, ServiceUnreachable, VerifierError
from verifier_service.spec import request_from_json
from verifier_service.tenancy.auth import Tenants, current_tenant, hash_key

from support.tenancy_setup import (
    EXAMPLE_CATALOG,
    GOOD_JSON,
    GSM8K,
    JSON_OBJECT,
    ROOT,
    Keys,
    ref_request,
    rpc_error,
    trailing,
    write_tenants,
)
from support.wait import wait_for

pytestmark = pytest.mark.docker

SERVICE_NAME = "rlvr.verifier.v1.Verifier"
FORMAT_SPEC = {"kind": "format", "pattern": r"\d+"}
SETTINGS = {
    "alpha": {"use": ["math", "format"]},
    "beta": {"use": ["format", "code"], "inline_specs": False},
    "tight": {"max_concurrency": 2},
    "slow": {"rate": 2, "burst": 4, "use": ["format"]},
    "open": {"audit_content": True},
}


@pytest.fixture
def tenants(tmp_path):
    keys = Keys(*SETTINGS)
    return keys, write_tenants(tmp_path / "tenants.yaml", keys, SETTINGS)


@pytest.fixture
def svc(make_service, tenants, tmp_path):
    """Authentication on, the example catalog, an audit file; no warm pool (these checks run no code)."""
    _, path = tenants
    return make_service(tenants=path, catalog=str(EXAMPLE_CATALOG), sandbox_pool=False,
                        audit_log=str(tmp_path / "audit.jsonl"))


def audit_lines(svc) -> list[dict]:
    path = Path(svc.app.config.audit_log)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def fmt(completion: str = "12", id: str = "r") -> pb.VerifyRequest:
    return request_from_json({"id": id, "completion": completion, "spec": FORMAT_SPEC})


# ---- authentication -------------------------------------------------------------------------------------

def test_a_missing_or_wrong_key_is_unauthenticated_with_the_fix(svc, tenants):
    keys, _ = tenants
    err = rpc_error(svc.stub.Verify, fmt(), timeout=30)
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "no API key" in err.details() and "authorization: Bearer <key>" in err.details()
    assert "tenants add-key" in err.details()
    err = rpc_error(svc.stub.Verify, fmt(), metadata=(("authorization", "Bearer rlvr_wrong"),), timeout=30)
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED and "not recognised" in err.details()
    assert hash_key("rlvr_wrong")[7:15] in err.details()  # a hash prefix to correlate, never the key
    err = rpc_error(svc.stub.Verify, fmt(), metadata=(("authorization", f"Basic {keys.key['alpha']}"),), timeout=30)
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED and "'Bearer <key>'" in err.details()
    for call in (lambda md: svc.stub.VerifyBatch(pb.VerifyBatchRequest(requests=[fmt()]), metadata=md, timeout=30),
                 lambda md: list(svc.stub.VerifyStream(iter([pb.VerifyBatchRequest(requests=[fmt()])]), metadata=md,
                                                       timeout=30)),
                 lambda md: svc.stub.ListVerifiers(pb.ListVerifiersRequest(), metadata=md, timeout=30)):
        assert rpc_error(call, ()).code() == grpc.StatusCode.UNAUTHENTICATED
        call(keys.metadata("alpha"))  # the same call with a key goes through
    assert svc.stub.Verify(fmt(), metadata=(("x-api-key", keys.key["alpha"]),), timeout=30).verdict == pb.PASSED


def test_health_and_reflection_stay_open(svc):
    status = health_pb2_grpc.HealthStub(svc.channel).Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME),
                                                           timeout=30).status
    assert status == health_pb2.HealthCheckResponse.SERVING
    stub = reflection_pb2_grpc.ServerReflectionStub(svc.channel)
    responses = list(stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                               timeout=30))
    assert SERVICE_NAME in {s.name for s in responses[0].list_services_response.service}


def test_namespaces_and_inline_specs_are_permissions(svc, tenants):
    keys, _ = tenants
    err = rpc_error(svc.stub.Verify, ref_request(GSM8K, "\\boxed{1}", gold="1"), metadata=keys.metadata("beta"),
                    timeout=30)
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "'beta'" in err.details() and "'math'" in err.details() and "code, format" in err.details()
    # permission comes before existence: another team's namespace gives nothing away
    err = rpc_error(svc.stub.Verify, ref_request("math/secret@9", "x", gold="1"), metadata=keys.metadata("beta"),
                    timeout=30)
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    err = rpc_error(svc.stub.Verify, fmt(), metadata=keys.metadata("beta"), timeout=30)
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED and "catalog verifiers only" in err.details()
    assert svc.stub.Verify(ref_request(JSON_OBJECT, GOOD_JSON), metadata=keys.metadata("beta"),
                           timeout=30).verdict == pb.PASSED
    assert svc.stub.Verify(ref_request(GSM8K, "\\boxed{1}", gold="1"), metadata=keys.metadata("alpha"),
                           timeout=30).verdict == pb.PASSED
    listed = {t: {e.name for e in svc.stub.ListVerifiers(pb.ListVerifiersRequest(), metadata=keys.metadata(t),
                                                         timeout=30).catalog} for t in ("alpha", "beta")}
    assert listed == {"alpha": {"math/gsm8k-answer", "format/json-object"},
                      "beta": {"format/json-object", "code/python-assert"}}


# ---- quotas -------------------------------------------------------------------------------------------

def gate_tenant(svc, name: str):
    """Holds the named tenant's verifications until the returned function is called (others run)."""
    engine = svc.app.verifier.engine
    original = engine.verify_all
    gate = svc.call(_event())

    async def gated(items, **kwargs):
        if current_tenant.get().name == name:
            await gate.wait()
        return await original(items, **kwargs)

    engine.verify_all = gated

    def release():
        svc.loop.call_soon_threadsafe(gate.set)
        del engine.verify_all

    return release


async def _event() -> asyncio.Event:
    return asyncio.Event()


def test_concurrency_quota(svc, tenants):
    keys, _ = tenants
    quotas = svc.app.verifier.quotas
    release = gate_tenant(svc, "tight")
    try:
        held = svc.stub.VerifyBatch.future(pb.VerifyBatchRequest(requests=[fmt(id="1"), fmt(id="2")]),
                                           metadata=keys.metadata("tight"), timeout=60)
        assert wait_for(lambda: quotas.in_flight("tight") == 2)
        err = rpc_error(svc.stub.Verify, fmt(), metadata=keys.metadata("tight"), timeout=30)
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "'tight' is over its concurrency quota" in err.details() and "retry in" in err.details()
        assert int(trailing(err)["retry-after-ms"]) > 0
        # the other tenants are not held up
        assert svc.stub.Verify(fmt(), metadata=keys.metadata("alpha"), timeout=30).verdict == pb.PASSED
    finally:
        release()
    assert [r.verdict for r in held.result(timeout=60).results] == [pb.PASSED, pb.PASSED]
    assert wait_for(lambda: quotas.in_flight("tight") == 0)
    assert svc.stub.Verify(fmt(), metadata=keys.metadata("tight"), timeout=30).verdict == pb.PASSED
    err = rpc_error(svc.stub.VerifyBatch, pb.VerifyBatchRequest(requests=[fmt(id=str(i)) for i in range(3)]),
                    metadata=keys.metadata("tight"), timeout=30)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "never fits" in err.details()
    assert "retry-after-ms" not in trailing(err)


def test_rate_quota(svc, tenants):
    keys, _ = tenants
    four = pb.VerifyBatchRequest(requests=[fmt(id=str(i)) for i in range(4)])
    assert len(svc.stub.VerifyBatch(four, metadata=keys.metadata("slow"), timeout=30).results) == 4
    err = rpc_error(svc.stub.Verify, fmt(), metadata=keys.metadata("slow"), timeout=30)
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "over its rate quota (2 verifications/s, burst 4)" in err.details()
    assert 0 < int(trailing(err)["retry-after-ms"]) <= 500  # one token at 2/s
    err = rpc_error(svc.stub.VerifyBatch, pb.VerifyBatchRequest(requests=[fmt(id=str(i)) for i in range(5)]),
                    metadata=keys.metadata("slow"), timeout=30)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "burst 4" in err.details()
    assert svc.stub.Verify(fmt(), metadata=keys.metadata("alpha"), timeout=30).verdict == pb.PASSED
    # a refusal is held for part of its wait, never past the call's deadline
    for _ in range(3):
        try:
            svc.stub.VerifyBatch(four, metadata=keys.metadata("slow"), timeout=0.6)
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, exc.code()


def test_the_client_honours_the_retry_hint(svc, tenants):
    keys, _ = tenants

    async def run():
        client = await VerifierClient.connect(svc.address, credentials=Credentials(api_key=keys.key["slow"]))
        impatient = await VerifierClient.connect(svc.address, credentials=Credentials(api_key=keys.key["slow"]),
                                                 max_throttle_s=0)
        try:
            first = await client.verify_batch([fmt(id=str(i)) for i in range(4)])
            second = await client.verify_batch([fmt(id=str(i)) for i in range(3)])  # waits for 3 tokens
            with pytest.raises(RemoteError) as info:
                await impatient.verify_batch([fmt(id=str(i)) for i in range(4)])
            return first, second, info.value
        finally:
            await client.close()
            await impatient.close()

    first, second, error = asyncio.run(run())
    assert len(first) == 4 and [r.verdict for r in second] == [pb.PASSED] * 3
    assert error.code == "RESOURCE_EXHAUSTED" and error.retryable
    refused = [line for line in audit_lines(svc) if line["tenant"] == "slow" and line["status"] != "OK"]
    assert refused and all(line["status"] == "RESOURCE_EXHAUSTED" for line in refused)


def test_the_reward_functions_send_the_key_and_wait_out_throttling(svc, tenants):
    from trainer.errors import RewardError
    from trainer.rewards import VerifierRewards

    from support.trl_calls import Recorder, call_like_trl

    keys, _ = tenants
    rewards = VerifierRewards(svc.address, verifier=GSM8K, credentials=Credentials(api_key=keys.key["slow"]),
                              max_throttle_s=30)
    funcs = rewards.reward_funcs()
    columns = {"verification": [{"gold": "4"}, {"gold": "4"}, '{"gold": "5"}', {"gold": "4"}]}
    completions = ["\\boxed{4}", "4", "\\boxed{4}", "no"]
    with pytest.raises(RewardError, match=r"PERMISSION_DENIED.*'math'"):  # slow may use no catalog namespace
        call_like_trl(funcs, ["p"] * 4, completions, columns, Recorder())
    svc_tenants = Tenants.from_dict({"tenants": {"slow": {**SETTINGS["slow"], "keys": [hash_key(keys.key["slow"])],
                                                          "use": ["math"]}}})
    svc.app.tenants = svc_tenants  # what a reload does
    recorder = Recorder()
    scores = [call_like_trl(funcs, ["p"] * 4, completions, columns, recorder) for _ in range(2)]
    # format, correctness: an unmarked "4" is no answer (MALFORMED), so 0 on both
    assert scores[0] == scores[1] == [[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]]
    assert recorder.metrics["verifier/batch_lost"] == [0.0, 0.0]
    assert recorder.metrics["verifier/throttled_s"][0] == 0 < recorder.metrics["verifier/throttled_s"][1]
    wrong = VerifierRewards(svc.address, verifier=GSM8K, credentials=Credentials(api_key="rlvr_nope"))
    with pytest.raises(RewardError, match="UNAUTHENTICATED"):  # never a batch of None rewards
        call_like_trl(wrong.reward_funcs(), ["p"], ["4"], {"verification": [{"gold": "4"}]}, Recorder())


FLOOD = r"""
import json, os, sys, threading, time
import grpc
from verifier_service._generated import verifier_pb2 as pb, verifier_pb2_grpc as pb_grpc
from verifier_service.spec import request_from_json
address, key, stop, seconds, threads = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
batch = pb.VerifyBatchRequest(requests=[request_from_json({"id": str(i), "completion": json.dumps(
    {"answer": f"a{i}", "confidence": 0.5}), "spec": {"verifier": "format/json-object@1"}}) for i in range(16)])
counts = {"OK": 0}
lock = threading.Lock()
def flood():
    channel = grpc.insecure_channel(address)
    stub = pb_grpc.VerifierStub(channel)
    end = time.monotonic() + seconds
    while time.monotonic() < end and not os.path.exists(stop):
        try:
            stub.VerifyBatch(batch, metadata=(("authorization", "Bearer " + key),), timeout=30)
            code = "OK"
        except grpc.RpcError as exc:
            code = exc.code().name
        with lock:
            counts[code] = counts.get(code, 0) + 1
workers = [threading.Thread(target=flood) for _ in range(threads)]
print("started", flush=True)
for w in workers: w.start()
for w in workers: w.join()
print(json.dumps(counts), flush=True)
"""


BURN = r"""
import os, sys, threading
def burn():
    while not os.path.exists(sys.argv[1]):
        sum(range(10000))
workers = [threading.Thread(target=burn) for _ in range(int(sys.argv[2]))]
print("started", flush=True)
for w in workers: w.start()
for w in workers: w.join()
"""


def test_a_tenant_over_quota_does_not_throttle_another(make_service, tmp_path):
    """Tenant A floods (from another process, several connections, as fast as it can); tenant B's throughput
    is measured alone and during the flood: B gets every result and never RESOURCE_EXHAUSTED, A is throttled."""
    keys = Keys("team-a", "team-b")
    path = write_tenants(tmp_path / "tenants.yaml", keys, {
        "team-a": {"max_concurrency": 32, "rate": 150, "burst": 32},
        "team-b": {}})  # no quota of its own: whatever slows B down comes from A
    svc = make_service(tenants=path, catalog=str(EXAMPLE_CATALOG), sandbox_pool=False)
    batch = pb.VerifyBatchRequest(requests=[  # distinct completions: no two share a verification
        ref_request(JSON_OBJECT, json.dumps({"answer": f"b{i}", "confidence": 0.5}) if i % 2 else f'{{"n": {i}}}',
                    id=str(i)) for i in range(16)])
    expected = [pb.FAILED, pb.PASSED] * 8

    def measure(batches: int) -> float:
        started = time.perf_counter()
        for _ in range(batches):
            response = svc.stub.VerifyBatch(batch, metadata=keys.metadata("team-b"), timeout=60)
            assert [r.verdict for r in response.results] == expected
        return batches * len(batch.requests) / (time.perf_counter() - started)

    measure(5)  # warm up
    before = measure(60)
    stop = tmp_path / "stop-the-flood"
    flood = subprocess.Popen([sys.executable, "-c", FLOOD, svc.address, keys.key["team-a"], str(stop), "120", "6"],
                             stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert flood.stdout.readline().strip() == "started"
        assert wait_for(lambda: svc.app.verifier.quotas.in_flight("team-a") > 0, 30, 0.01), "the flood never came"
        during = measure(60)
        flood_running = flood.poll() is None
    finally:
        stop.touch()
        out, _ = flood.communicate(timeout=60)
    assert flood_running, "the flood ended before B's measurement did"
    counts = json.loads(out.splitlines()[-1])
    assert counts.get("RESOURCE_EXHAUSTED", 0) > 0 and counts["OK"] > 0, counts  # A was throttled, not starved
    after = measure(60)
    # A control for the figures (not asserted): as many threads burning CPU without any RPC, since the
    # client, the flood and the service share this machine's cores (with whatever else runs on it).
    stop_burning = tmp_path / "stop-burning"
    burner = subprocess.Popen([sys.executable, "-c", BURN, str(stop_burning), "6"], stdout=subprocess.PIPE, text=True)
    try:
        assert burner.stdout.readline().strip() == "started"
        burning = measure(60)
    finally:
        stop_burning.touch()
        burner.communicate(timeout=60)
    alone = (before + after) / 2
    print(f"\ntenant B: {alone:.0f} verifications/s alone (before {before:.0f}, after {after:.0f}), {during:.0f}/s "
          f"during A's flood (ratio {during / alone:.2f}), {burning:.0f}/s beside a CPU burner of as many threads "
          f"(ratio {burning / alone:.2f}); A's calls during the flood: {counts}")


def test_a_flooding_tenant_is_refused_not_queued(make_service, tmp_path):
    """A's flood (more than its quota) is refused with RESOURCE_EXHAUSTED, never queued: A's admitted work never
    exceeds its concurrency quota, and A still gets its share."""
    keys = Keys("team-a")
    path = write_tenants(tmp_path / "tenants.yaml", keys, {"team-a": {"max_concurrency": 32, "rate": 150,
                                                                      "burst": 32}})
    svc = make_service(tenants=path, catalog=str(EXAMPLE_CATALOG), sandbox_pool=False)
    peak = []
    quotas = svc.app.verifier.quotas
    stop = threading.Event()
    watcher = threading.Thread(target=lambda: [peak.append(quotas.in_flight("team-a")) or time.sleep(0.002)
                                               for _ in iter(lambda: stop.is_set(), True)])
    watcher.start()
    try:
        flood = subprocess.run([sys.executable, "-c", FLOOD, svc.address, keys.key["team-a"],
                                str(tmp_path / "no-stop"), "4", "6"],
                               capture_output=True, text=True, cwd=ROOT, timeout=120)
    finally:
        stop.set()
        watcher.join(10)
    assert flood.returncode == 0, flood.stderr
    counts = json.loads(flood.stdout.splitlines()[-1])
    assert counts["OK"] > 0 and counts.get("RESOURCE_EXHAUSTED", 0) > 0, counts
    assert set(counts) <= {"OK", "RESOURCE_EXHAUSTED"}, counts
    assert max(peak) <= 32


# ---- TLS ------------------------------------------------------------------------------------------------

def make_certificates(directory: Path) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1 / localhost, and two client certificates, made now."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        return _certificates_with_openssl(directory)
    return _certificates_with_cryptography(directory)


def _certificates_with_openssl(directory: Path) -> dict[str, Path]:
    if shutil.which("openssl") is None:
        pytest.fail("the TLS tests need the cryptography package or the openssl command", pytrace=False)

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True, timeout=60)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=rlvr test CA")
    for name, cn, ext in (("server", "localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                                  "extendedKeyUsage=serverAuth"),
                          ("alpha", "trainer.alpha", "subjectAltName=DNS:trainer.alpha\nextendedKeyUsage=clientAuth"),
                          ("stranger", "stranger", "subjectAltName=DNS:stranger\nextendedKeyUsage=clientAuth")):
        (directory / f"{name}.ext").write_text(ext + "\n")
        run("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext")
    return {n: directory / n for n in ("ca.pem", "server.pem", "server.key", "alpha.pem", "alpha.key",
                                       "stranger.pem", "stranger.key")}


def _certificates_with_cryptography(directory: Path) -> dict[str, Path]:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def write(stem: str, key, cert) -> None:
        (directory / f"{stem}.key").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        (directory / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("rlvr test CA")).issuer_name(name("rlvr test CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    write("ca", ca_key, ca)
    for stem, cn, sans, usage in (
            ("server", "localhost", [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")],
             ExtendedKeyUsageOID.SERVER_AUTH),
            ("alpha", "trainer.alpha", [x509.DNSName("trainer.alpha")], ExtendedKeyUsageOID.CLIENT_AUTH),
            ("stranger", "stranger", [x509.DNSName("stranger")], ExtendedKeyUsageOID.CLIENT_AUTH)):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(ca.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=2))
                .add_extension(x509.SubjectAlternativeName(sans), critical=False)
                .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        write(stem, key, cert)
    return {n: directory / n for n in ("ca.pem", "server.pem", "server.key", "alpha.pem", "alpha.key",
                                       "stranger.pem", "stranger.key")}


@pytest.fixture
def certs(tmp_path):
    directory = tmp_path / "certs"
    directory.mkdir()
    return {k: str(v) for k, v in make_certificates(directory).items()}


def test_tls_listener(make_service, tenants, certs):
    keys, path = tenants
    svc = make_service(tenants=path, tls_cert=certs["server.pem"], tls_key=certs["server.key"], sandbox_pool=False)

    async def over_tls():
        creds = Credentials(api_key=keys.key["alpha"], tls_ca=certs["ca.pem"])
        async with await VerifierClient.connect(svc.address, credentials=creds) as client:
            return await client.verify(fmt())

    assert asyncio.run(over_tls()).verdict == pb.PASSED
    with grpc.insecure_channel(svc.address) as channel:  # plaintext to the TLS port: refused, never answered
        err = rpc_error(pb_grpc_stub(channel).Verify, fmt(), metadata=keys.metadata("alpha"), timeout=5)
    assert err.code() == grpc.StatusCode.UNAVAILABLE

    async def plaintext_client():
        await VerifierClient.connect(svc.address, timeout_s=3, credentials=Credentials(api_key=keys.key["alpha"]))

    with pytest.raises(ServiceUnreachable, match="if the service uses TLS, connect with its CA"):
        asyncio.run(plaintext_client())
    elsewhere = Path(certs["ca.pem"]).parent / "elsewhere"
    elsewhere.mkdir()
    other_ca = Credentials(tls_ca=str(make_certificates(elsewhere)["ca.pem"])).channel_credentials()
    with grpc.secure_channel(svc.address, other_ca) as channel:  # trusts another CA: the handshake fails
        err = rpc_error(pb_grpc_stub(channel).Verify, fmt(), metadata=keys.metadata("alpha"), timeout=5)
    assert err.code() == grpc.StatusCode.UNAVAILABLE


def pb_grpc_stub(channel):
    from verifier_service._generated import verifier_pb2_grpc as pb_grpc

    return pb_grpc.VerifierStub(channel)


def test_mutual_tls_maps_the_client_certificate_to_a_tenant(make_service, tmp_path, certs):
    keys = Keys("alpha", "beta")
    settings = {"alpha": {"identities": ["trainer.alpha"], "use": ["math"]}, "beta": {"use": ["format"]}}
    path = write_tenants(tmp_path / "mtls-tenants.yaml", keys, settings)
    svc = make_service(tenants=path, catalog=str(EXAMPLE_CATALOG), tls_cert=certs["server.pem"],
                       tls_key=certs["server.key"], tls_client_ca=certs["ca.pem"], sandbox_pool=False)

    def stub(client: str | None):
        creds = Credentials(tls_ca=certs["ca.pem"], tls_cert=certs[f"{client}.pem"] if client else "",
                            tls_key=certs[f"{client}.key"] if client else "")
        channel = creds.channel(svc.address)
        return channel, pb_grpc_stub(channel)

    channel, alpha = stub("alpha")
    with channel:
        math = ref_request(GSM8K, "\\boxed{2}", gold="2")
        assert alpha.Verify(math, timeout=30).verdict == pb.PASSED  # no key: the certificate names the tenant
        err = rpc_error(alpha.Verify, math, metadata=keys.metadata("beta"), timeout=30)  # a key decides
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED and "'beta'" in err.details()
    channel, stranger = stub("stranger")
    with channel:
        err = rpc_error(stranger.Verify, fmt(), timeout=30)
        assert err.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "client certificate 'stranger' maps to no tenant" in err.details()
        assert stranger.Verify(fmt(), metadata=keys.metadata("beta"), timeout=30).verdict == pb.PASSED
    channel, nobody = stub(None)
    with channel:  # mutual TLS: no client certificate, no connection
        assert rpc_error(nobody.Verify, fmt(), metadata=keys.metadata("beta"), timeout=5).code() == \
            grpc.StatusCode.UNAVAILABLE


# ---- the audit log ------------------------------------------------------------------------------------

def test_one_audit_line_per_batch_without_content_by_default(svc, tenants):
    keys, _ = tenants
    secret = '{"answer": "SECRET-COMPLETION-TEXT", "confidence": 0.5}'
    batch = pb.VerifyBatchRequest(requests=[ref_request(JSON_OBJECT, secret, id="a"),
                                            ref_request(JSON_OBJECT, "nope", id="b"),
                                            ref_request(JSON_OBJECT, secret, id="c")])
    svc.stub.VerifyBatch(batch, metadata=(*keys.metadata("alpha"), ("x-request-id", "req-42")), timeout=30)
    svc.stub.Verify(fmt("7"), metadata=keys.metadata("alpha"), timeout=30)
    rpc_error(svc.stub.Verify, fmt(), metadata=(("authorization", "Bearer rlvr_wrong-key-XYZ"),), timeout=30)
    lines = audit_lines(svc)
    assert len(lines) == 3
    first, second, refused = lines
    entry_id = svc.app.verifier.catalog.entries[JSON_OBJECT].id
    assert {k: first[k] for k in ("tenant", "method", "request_id", "verifier", "count", "verdicts", "status")} == {
        "tenant": "alpha", "method": "VerifyBatch", "request_id": "req-42", "verifier": entry_id, "count": 3,
        "verdicts": {"MALFORMED": 1, "PASSED": 2}, "status": "OK"}
    assert first["duration_s"] >= 0 and len(second["request_id"]) == 16
    assert (second["verifier"], second["count"], second["verdicts"]) == ("kind:format", 1, {"PASSED": 1})
    assert (refused["tenant"], refused["status"]) == (None, "UNAUTHENTICATED")
    text = Path(svc.app.config.audit_log).read_text()
    assert "SECRET-COMPLETION-TEXT" not in text and "samples" not in text
    assert "rlvr_wrong-key-XYZ" not in text and keys.key["alpha"] not in text


def test_audit_content_only_when_the_tenant_allows_it(svc, tenants):
    keys, _ = tenants
    svc.stub.Verify(fmt("SECRET-12"), metadata=keys.metadata("alpha"), timeout=30)
    svc.stub.Verify(fmt("SECRET-34", id="x"), metadata=keys.metadata("open"), timeout=30)
    alpha, opened = audit_lines(svc)
    assert "samples" not in alpha and "SECRET-12" not in json.dumps(alpha)
    assert opened["samples"] == [{"id": "x", "completion": "SECRET-34", "verdict": "MALFORMED", "reward": 0.0}]


def test_refusals_are_audited_with_their_status(svc, tenants):
    keys, _ = tenants
    rpc_error(svc.stub.Verify, ref_request(GSM8K, "1", gold="1"), metadata=keys.metadata("beta"), timeout=30)
    rpc_error(svc.stub.Verify, ref_request("format/nope@1", "1"), metadata=keys.metadata("beta"), timeout=30)
    (denied, missing) = audit_lines(svc)
    assert (denied["status"], denied["tenant"], denied["verifier"]) == ("PERMISSION_DENIED", "beta", GSM8K)
    assert "may not use" in denied["message"] and "verdicts" not in denied
    assert (missing["status"], missing["verifier"]) == ("NOT_FOUND", "format/nope@1")


# ---- fuzzing keys and references ------------------------------------------------------------------------

def test_fuzzing_keys_and_catalog_references_gives_the_right_codes(svc, tenants):
    """Random keys, headers, references and per-request fields: each call ends with the status its input
    deserves, never INTERNAL or UNKNOWN."""
    keys, _ = tenants
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./@+:= "
    good = keys.key["alpha"]

    def junk(n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, n)))

    def mutate(key: str) -> str:
        chars = list(key)
        for _ in range(rng.randint(1, 3)):
            op = rng.randrange(3)
            i = rng.randrange(len(chars)) if chars else 0
            if op == 0 and chars:
                chars[i] = rng.choice(alphabet.strip())
            elif op == 1:
                chars.insert(i, rng.choice(alphabet.strip()))
            elif chars:
                del chars[i]
        return "".join(chars)

    entry_hash = svc.app.verifier.catalog.entries[GSM8K].sha256
    seen = {}
    for round_ in range(150):
        case = rng.randrange(6)
        metadata = keys.metadata("alpha")
        request = ref_request(GSM8K, junk(40), gold="1")
        if case == 0:  # a damaged key
            bad = mutate(good)
            metadata = (("authorization", f"Bearer {bad}"),) if bad.strip() != good else ()
            expect = {"UNAUTHENTICATED"}
        elif case == 1:  # a damaged header
            metadata = ((rng.choice(["authorization", "x-api-key"]), rng.choice(["", "Bearer", "Bearer ", "bearer",
                                                                                 junk(12)]).strip() or "x"),)
            expect = {"UNAUTHENTICATED"}
        elif case == 2:  # a random reference
            request = ref_request(junk(30) or "x", junk(20), gold="1")
            expect = {"INVALID_ARGUMENT", "PERMISSION_DENIED", "NOT_FOUND"}
        elif case == 3:  # a well-formed reference to something that is not there, or to another hash
            version = rng.choice(["1", "2", "1.0", "v9"])
            suffix = rng.choice(["", "+" + "".join(rng.choice("0123456789abcdef") for _ in range(12)),
                                 "+" + entry_hash[:rng.randint(12, 64)]])
            ns = rng.choice(["math", "format", "code"])
            request = ref_request(f"{ns}/{rng.choice(['gsm8k-answer', 'json-object', 'x'])}@{version}{suffix}", "1",
                                  gold="1")
            expect = {"OK", "NOT_FOUND", "FAILED_PRECONDITION", "PERMISSION_DENIED", "INVALID_ARGUMENT"}
        elif case == 4:  # per-request fields that are wrong for the entry
            field = rng.choice(["pattern", "tests", "schema", "timeout_s", "extract", "gold"])
            value = {"schema": {"type": "object"}, "timeout_s": 3}.get(field, junk(8) or "x")
            request = request_from_json({"id": "f", "completion": "1",
                                         "spec": {"verifier": JSON_OBJECT, field: value}})
            expect = {"INVALID_ARGUMENT"}
        else:  # a tenant out of its namespaces, or a valid call
            tenant = rng.choice(["alpha", "beta"])
            metadata = keys.metadata(tenant)
            expect = {"OK"} if tenant == "alpha" else {"PERMISSION_DENIED"}
        try:
            svc.stub.Verify(request, metadata=metadata, timeout=30)
            code = "OK"
        except grpc.RpcError as exc:
            code = exc.code().name
            assert exc.details(), (round_, case)
        assert code in expect, (round_, case, code, request, metadata)
        seen[code] = seen.get(code, 0) + 1
    assert {"OK", "UNAUTHENTICATED", "INVALID_ARGUMENT", "NOT_FOUND", "PERMISSION_DENIED"} <= set(seen), seen


# ---- files and commands -----------------------------------------------------------------------------------

def test_tenants_file_problems_are_refused_with_the_reason(tmp_path):
    def load(data):
        path = tmp_path / "t.yaml"
        path.write_text(yaml.safe_dump(data))
        return Tenants.load(path)

    with pytest.raises(CatalogError, match="never the keys themselves"):
        load({"tenants": {"a": {"keys": ["rlvr_plaintext"]}}})
    same = hash_key("k")
    with pytest.raises(CatalogError, match="belongs to tenants 'a' and 'b'"):
        load({"tenants": {"a": {"keys": [same]}, "b": {"keys": [same]}}})
    with pytest.raises(CatalogError, match="unknown setting"):
        load({"tenants": {"a": {"keys": [same], "rate_limit": 3}}})
    with pytest.raises(CatalogError, match="burst needs a rate"):
        load({"tenants": {"a": {"burst": 3}}})
    for weight in (0, -1, "2", True):
        with pytest.raises(CatalogError, match="weight must be a number"):
            load({"tenants": {"a": {"weight": weight}}})
    assert load({"tenants": {"a": {}, "b": {"weight": 2.5}}}).tenants["b"].weight == 2.5
    assert load({"tenants": {"a": {}}}).tenants["a"].weight == 1.0
    with pytest.raises(CatalogError, match="no tenants"):
        load({"tenants": {}})
    with pytest.raises(VerifierError, match="tls_cert and tls_key go together"):
        ServiceConfig(tls_cert="x.pem").validate()
    with pytest.raises(VerifierError, match="tls_client_ca needs tls_cert"):
        ServiceConfig(tls_client_ca="ca.pem").validate()


@pytest.mark.timeout(120)
def test_tenants_commands(tmp_path):
    path = tmp_path / "tenants.yaml"

    def cli(*args: str, stdin: str | None = None):
        return subprocess.run([sys.executable, "-m", "verifier_service.tools.cli", "tenants", *args],
                              capture_output=True, text=True, cwd=ROOT, timeout=60, input=stdin)

    proc = cli("add-key", "team-x", "--tenants", str(path))
    assert proc.returncode == 0, proc.stderr
    key = proc.stdout.strip()
    assert key.startswith("rlvr_") and "shown once" in proc.stderr
    assert key not in path.read_text()
    tenants = Tenants.load(path)
    assert tenants.for_key(key).name == "team-x"
    second = cli("add-key", "team-x", "--tenants", str(path)).stdout.strip()
    assert Tenants.load(path).for_key(second).name == "team-x" and len(tenants.tenants["team-x"].key_hashes) == 1
    proc = cli("hash-key")
    new, line = proc.stdout.split()
    assert line == hash_key(new)
    assert cli("hash-key", "--stdin", stdin=new + "\n").stdout.strip() == line
    listing = cli("list", "--tenants", str(path))
    assert listing.returncode == 0 and "team-x" in listing.stdout and key not in listing.stdout
