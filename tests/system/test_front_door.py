"""Issue 38: the doors under hostile clients, through the real service on runc, gVisor and bubblewrap, two tenants.

Every door checks the same permissions (the core: ``Verifier.run_program``, ``SessionManager.open``), one refusal
is counted once; bodies are bounded before they are inflated or parsed (as sent, inflated, per tenant), a spec
before it is parsed, a notebook's output in all; connections per client address, a connection without a whole
header, a client that goes away (its work cancelled); refusals' log and audit lines bounded; ``/metrics`` shows a
tenant only its own series; ``format`` keywords checked or refused. Flood sizes here only prove each bound; the
floods themselves are in benchmarks/front_door_floods.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import socket
import time
import zlib
from dataclasses import replace

import grpc
import pytest
import requests

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.doors.http import limits
from verifier_service.spec import request_from_json
from verifier_service.testing import free_port

from support.sandboxes import runsc_registered
from support.service import TEST_CONFIG, RunningService
from support.tenancy_setup import Keys, write_tenants
from support.wait import wait_for

pytestmark = pytest.mark.docker


BACKENDS = [pytest.param(("docker", ""), id="runc"),
            pytest.param(("docker", "runsc"), id="gvisor",
                         marks=pytest.mark.skipif(not runsc_registered(), reason="gVisor (runsc) is not registered")),
            pytest.param(("bwrap", ""), id="bwrap", marks=pytest.mark.bwrap)]
PER_PEER = 8
GRPC_CONNECTIONS = 24
BODY_LIMIT = 256 * 1024


@pytest.fixture(scope="module", params=BACKENDS)
def door(request, tmp_path_factory):
    backend, runtime = request.param
    tmp = tmp_path_factory.mktemp("door")
    keys = Keys("cat", "free", "ops")
    tenants = write_tenants(tmp / "tenants.yaml", keys, {"cat": {"inline_specs": False}, "ops": {"operator": True}})
    config = replace(TEST_CONFIG, sandbox_backend=backend, sandbox_runtime=runtime, http_port=free_port(),
                     tenants=tenants, audit_log=str(tmp / "audit.jsonl"), max_concurrency=1, session_spares=0,
                     http_max_body_bytes=BODY_LIMIT, http_tenant_body_budget_bytes=512 * 1024,
                     http_max_connections_per_peer=PER_PEER, http_idle_timeout_s=2.0, jupyter_max_output_bytes=100_000,
                     max_spec_bytes=64 * 1024, log_repeat_burst=5, log_repeat_interval_s=600.0,
                     grpc_max_calls_per_peer=PER_PEER, grpc_max_connections=GRPC_CONNECTIONS,
                     grpc_handshake_timeout_s=3.0)
    running = RunningService(config)
    running.keys = keys
    running.audit_path = tmp / "audit.jsonl"
    yield running
    running.close()


def headers(door, tenant: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {door.keys.key[tenant]}"}


def post(door, path: str, body, tenant: str | None = None, **kwargs) -> requests.Response:
    return requests.post(door.http_url + path, json=body, headers=headers(door, tenant) if tenant else None,
                         timeout=120, **kwargs)


def verify(door, completion: str, spec: dict, tenant: str = "free") -> dict:
    from verifier_service.spec import result_to_json

    request = request_from_json({"id": "t", "completion": completion, "spec": spec})
    metadata = (("authorization", f"Bearer {door.keys.key[tenant]}"),)
    return result_to_json(door.stub.Verify(request, metadata=metadata, timeout=120))


def refusals(door, tenant: str, code: str) -> float:
    value = door.app.metrics.registry.get_sample_value("rlvr_tenant_refusals_total", {"tenant": tenant, "code": code})
    return value or 0.0


def completed(door, tenant: str) -> float:
    """The tenant's verifications and programs that ran to their end (a cancelled one is not counted)."""
    value = door.app.metrics.registry.get_sample_value("rlvr_tenant_verifications_total", {"tenant": tenant})
    return value or 0.0


# ---- item 5: every door checks the same permissions -------------------------------------------------------------

def test_a_catalog_only_tenant_runs_no_code_through_any_door(door):
    run_code = {"code": "print(6 * 7)", "language": "python"}
    refused = post(door, "/run_code", run_code, "cat")
    assert refused.status_code == 403 and "catalog verifiers only" in refused.json()["error"], refused.text
    jupyter = post(door, "/run_jupyter", {"cells": ["print(1)"]}, "cat")
    assert jupyter.status_code == 403 and "session" in jupyter.json()["error"]
    program = post(door, "/test_program", {"program": "def f(): return 1", "tests": ["assert f() == 1"]}, "cat")
    assert program.status_code == 403
    assert refusals(door, "cat", "403") == 3  # each refusal counted once, by the door's one path
    cat = (("authorization", f"Bearer {door.keys.key['cat']}"),)
    with pytest.raises(grpc.RpcError) as opened:
        door.stub.OpenSession(pb.OpenSessionRequest(), metadata=cat, timeout=60)
    assert opened.value.code() == grpc.StatusCode.PERMISSION_DENIED
    inline = request_from_json({"id": "x", "completion": "def f(): return 1",
                                "spec": {"kind": "python_assert", "tests": "assert f() == 1"}})
    with pytest.raises(grpc.RpcError) as batch:
        door.stub.VerifyBatch(pb.VerifyBatchRequest(requests=[inline]), metadata=cat, timeout=60)
    assert batch.value.code() == grpc.StatusCode.PERMISSION_DENIED
    # (the gRPC door counts a call as it ends, just after its status went out)
    assert wait_for(lambda: refusals(door, "cat", "PERMISSION_DENIED") >= 2, timeout=10)
    time.sleep(0.5)
    assert refusals(door, "cat", "PERMISSION_DENIED") == 2  # the session refusal once, not twice
    # the other tenant, on the same service, runs its code
    ok = post(door, "/run_code", run_code, "free")
    assert ok.status_code == 200 and ok.json()["run_result"]["stdout"] == "42\n", ok.text
    lines = [json.loads(line) for line in door.audit_path.read_text().splitlines()]
    assert any(r.get("event") == "open" and r.get("status") == "PERMISSION_DENIED" and r["tenant"] == "cat"
               for r in lines)
    assert any(r.get("method") == "POST /run_code" and r["tenant"] == "cat" and r["status"] == "REFUSED" for r in lines)


# ---- item 2: memory -----------------------------------------------------------------------------------------------

def _bomb(inflated: int) -> bytes:
    """gzip of ``inflated`` spaces, made in chunks (this process never holds the inflated bytes)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b" " * (1 << 20)
    return b"".join([*(packer.compress(chunk) for _ in range(inflated // len(chunk))), packer.flush()])


def _partial(door, tenant: str, declared: int, sent: int) -> socket.socket:
    """A connection whose request body is still coming: ``sent`` bytes of the ``declared``."""
    sock = _connect(door)
    sock.sendall(f"POST /get_reward HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {door.keys.key[tenant]}\r\n"
                 f"Content-Type: application/json\r\nContent-Length: {declared}\r\n\r\n".encode() + b" " * sent)
    return sock


def test_bodies_are_bounded_before_they_are_inflated_or_parsed(door):
    assert wait_for(lambda: door.app.http.connections.open == 0, timeout=30)  # (earlier tests' connections closed)
    bomb = _bomb(200 << 20)  # ~200 KB (under the limit as sent) that inflates to 200 MB
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB; the service runs in this process
    answer = requests.post(door.http_url + "/get_reward", data=bomb, timeout=120,
                           headers={**headers(door, "free"), "Content-Encoding": "gzip",
                                    "Content-Type": "application/json"})
    assert answer.status_code == 413 and "once inflated" in answer.json()["error"], answer.text
    assert "http_max_body_bytes" in answer.json()["error"]
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 100, f"the service grew by {grown_mb:.0f} MB on a refused gzip body"
    declared = requests.post(door.http_url + "/get_reward", data=b"x" * (BODY_LIMIT + 1),
                             headers=headers(door, "free"), timeout=120)
    assert declared.status_code == 413
    # bodies under the limit, held at once past the tenant's budget: the one past it is refused
    assert wait_for(lambda: door.app.http.connections.open == 0, timeout=30)  # (the refused bodies' connections closed)
    held = []
    try:
        for n in (1, 2):
            held.append(_partial(door, "free", BODY_LIMIT - 10, 200 * 1024))
            assert wait_for(lambda n=n: door.app.http.budget.by_tenant["free"] >= n * 200 * 1024, timeout=30)
        third = _partial(door, "free", BODY_LIMIT - 10, 200 * 1024)
        third.settimeout(30)
        answer = third.recv(4096)
        third.close()
        assert b" 429 " in answer.split(b"\r\n")[0] and b"http_tenant_body_budget_bytes" in answer, answer
        other = post(door, "/get_reward", {"query": ["\\boxed{1}"], "labels": [{"kind": "math", "gold": "1"}]},
                     "ops")
        assert other.json()["rewards"] == [1.0]  # another tenant is not held by it
    finally:
        for sock in held:
            sock.close()
    assert wait_for(lambda: door.app.http.budget.held == 0, timeout=30)  # given back when the clients went away
    small = post(door, "/get_reward", {"query": ["\\boxed{1}"], "labels": [{"kind": "math", "gold": "1"}]}, "free")
    assert small.json()["rewards"] == [1.0]


def test_a_tenants_large_bodies_are_read_one_at_a_time_and_no_one_else_waits(tmp_path):
    """http_tenant_body_reads (1): a tenant's second large body (over 1 MiB) is not read while its first is still
    coming; its small bodies and another tenant's large one are read and answered meanwhile, and the second is read
    once the first's client went away. (The door's, before any sandbox: one backend.)"""
    keys = Keys("free", "ops")
    config = replace(TEST_CONFIG, http_port=free_port(), tenants=write_tenants(tmp_path / "t.yaml", keys, {}))
    service = RunningService(config)
    service.keys = keys
    http = service.app.http
    size, sent = 2 << 20, 100 * 1024
    math = b'{"query": ["\\\\boxed{1}"], "labels": [{"kind": "math", "gold": "1"}]}'
    try:
        first = _partial(service, "free", size, sent)
        assert wait_for(lambda: http.budget.by_tenant["free"] >= sent, timeout=30)
        second = _connect(service)
        second.sendall(f"POST /get_reward HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {keys.key['free']}\r\n"
                       f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n".encode()
                       + math + b" " * (sent - len(math)))
        assert wait_for(lambda: http.turns._waiting["free"] == 2, timeout=30)  # its handler waits for the turn
        small = post(service, "/get_reward", json.loads(math), "free")
        other = requests.post(service.http_url + "/get_reward", data=math + b" " * size, timeout=60,
                              headers={**headers(service, "ops"), "Content-Type": "application/json"})
        assert small.json()["rewards"] == [1.0] and other.json()["rewards"] == [1.0], (small.text, other.text)
        # the first body's room (held whole before a byte of it is read); the second body: nothing held yet
        assert http.budget.by_tenant["free"] == size
        first.close()
        second.sendall(b" " * (size - sent))
        second.settimeout(60)
        answer = b""
        while True:  # the whole answer: its head, then Content-Length bytes of body
            head, _, body = answer.partition(b"\r\n\r\n")
            length = re.search(rb"(?i)content-length: (\d+)", head)
            if length and len(body) >= int(length[1]):
                break
            chunk = second.recv(65536)
            assert chunk, answer
            answer += chunk
        assert b" 200 " in head.split(b"\r\n")[0] and json.loads(body)["rewards"] == [1.0], answer
        second.close()
        assert wait_for(lambda: not http.turns._turns and not http.turns._waiting, timeout=30)  # (nothing kept)
    finally:
        service.close()


def test_the_rest_of_a_refused_body_is_not_read(door):
    """A body declared over the limit, sent as fast as the connection takes it: refused (413) before a byte is
    read, and its rest is not read either (at most the limit's worth, then the connection closes): the server's
    own lingering would read it all, at the event loop's full speed. The client still reads its 413."""
    sock = _connect(door)
    sock.sendall(f"POST /get_reward HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {door.keys.key['free']}\r\n"
                 f"Content-Type: application/json\r\nContent-Length: {256 << 20}\r\n\r\n".encode())
    sent, chunk = 0, b" " * (1 << 20)
    with contextlib.suppress(OSError):  # (reset or broken pipe once the door closed it)
        while sent < 256 << 20:
            sock.sendall(chunk)
            sent += len(chunk)
    sock.settimeout(30)
    answer = sock.recv(4096)
    sock.close()
    assert b" 413 " in answer.split(b"\r\n")[0] and b"http_max_body_bytes" in answer, answer
    assert sent < 64 << 20, f"the door took {sent >> 20} MiB of a body it had refused"


def test_a_body_slower_than_its_deadline_is_answered_408(tmp_path):
    """http_body_timeout_s: one deadline for the whole body (from the first byte read), whatever its pieces."""
    keys = Keys("free")
    config = replace(TEST_CONFIG, http_port=free_port(), tenants=write_tenants(tmp_path / "t.yaml", keys, {}),
                     http_body_timeout_s=1.0)
    service = RunningService(config)
    service.keys = keys
    try:
        sock = _partial(service, "free", 1000, 10)
        sock.settimeout(60)
        for _ in range(3):  # more pieces, each well within the deadline, none finishing the body
            sock.sendall(b" " * 10)
        answer = sock.recv(4096)
        sock.close()
        assert b" 408 " in answer.split(b"\r\n")[0] and b"http_body_timeout_s" in answer, answer
    finally:
        service.close()


def test_a_large_body_is_received_off_the_event_loop(tmp_path, monkeypatch):
    """A body over 1 MiB of a declared length is received on a thread of its own (``limits.Aside``), not by the
    event loop that every tenant's calls share: whole (its answer is right), its connection closed once answered;
    a compressed one too (one of no declared length is read on the loop). A body the tenant's budget refuses is
    dropped there too, a body that ends early or comes too slowly leaves no
    bytes held, no turn and no descriptor behind. (The door's, before any sandbox: one backend.)"""
    keys = Keys("free")
    config = replace(TEST_CONFIG, http_port=free_port(), tenants=write_tenants(tmp_path / "t.yaml", keys, {}),
                     http_body_timeout_s=2.0, http_tenant_body_budget_bytes=6 << 20, default_timeout_s=60.0)
    service = RunningService(config)
    service.keys = keys
    http = service.app.http
    on_loop = [0]  # the bytes the event loop received of every connection
    delivered = limits._Counted.data_received

    def counted(self, data: bytes) -> None:
        on_loop[0] += len(data)
        delivered(self, data)

    monkeypatch.setattr(limits._Counted, "data_received", counted)
    math = b'{"query": ["\\\\boxed{1}"], "labels": [{"kind": "math", "gold": "1"}]}'
    size = 4 << 20

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    try:
        answer = requests.post(service.http_url + "/get_reward", data=b" " * (size - len(math)) + math, timeout=60,
                               headers={**headers(service, "free"), "Content-Type": "application/json"})
        assert answer.json()["rewards"] == [1.0], answer.text
        assert answer.headers["Connection"] == "close"
        assert on_loop[0] < 1 << 20, f"the event loop received {on_loop[0]} bytes of a {size}-byte body"
        assert wait_for(lambda: http.budget.held == 0, timeout=30)
        # compressed (gzip's stored blocks: as large as sent as inflated): received aside, then inflated
        on_loop[0] = 0
        stored = zlib.compressobj(0, zlib.DEFLATED, 31)
        gzipped = stored.compress(b" " * (size - len(math)) + math) + stored.flush()
        assert len(gzipped) > size
        answer = requests.post(service.http_url + "/get_reward", data=gzipped, timeout=60,
                               headers={**headers(service, "free"), "Content-Type": "application/json",
                                        "Content-Encoding": "gzip"})
        assert answer.json()["rewards"] == [1.0], answer.text
        assert on_loop[0] < 1 << 20, f"the event loop received {on_loop[0]} bytes of a {len(gzipped)}-byte body"
        assert wait_for(lambda: http.budget.held == 0, timeout=30)
        # of no declared length (chunked): read on the event loop as its chunks come, whole
        def chunks(n: int):
            yield b" " * (n - len(math))
            yield math

        answer = requests.post(service.http_url + "/get_reward", data=chunks(3 << 19), timeout=60,
                               headers={**headers(service, "free"), "Content-Type": "application/json"})
        assert answer.json()["rewards"] == [1.0], answer.text
        assert wait_for(lambda: http.budget.held == 0 and not http.turns._waiting, timeout=30)
        base = fds()
        # over the tenant's budget (6 MiB): refused before a byte is read, its rest dropped aside
        on_loop[0] = 0
        refused = requests.post(service.http_url + "/get_reward", data=b" " * (7 << 20), timeout=60,
                                headers={**headers(service, "free"), "Content-Type": "application/json"})
        assert refused.status_code == 429 and "http_tenant_body_budget_bytes" in refused.text, refused.text
        assert on_loop[0] < 1 << 20, f"the event loop received {on_loop[0]} bytes of a refused body"
        # too slow: 408 past http_body_timeout_s
        slow = _partial(service, "free", size, 100_000)
        slow.settimeout(60)
        late = slow.recv(4096)
        slow.close()
        assert b" 408 " in late.split(b"\r\n")[0] and b"http_body_timeout_s" in late, late
        # ends early: its client goes away in the middle of the body
        _partial(service, "free", size, 2 << 20).close()
        assert wait_for(lambda: http.budget.held == 0 and not http.turns._waiting and fds() <= base, timeout=30)
        # whole, then its client goes away: still seen (the connection is read again), its job cancelled
        sleeper = json.dumps({"code": "import time\ntime.sleep(25)", "language": "python", "run_timeout": 30})
        ran = completed(service, "free")
        with pytest.raises(requests.exceptions.ReadTimeout):
            requests.post(service.http_url + "/run_code", data=sleeper.encode() + b" " * size, timeout=3,
                          headers={**headers(service, "free"), "Content-Type": "application/json"})
        assert wait_for(lambda: service.app.verifier.admission.pending == 0, timeout=60)
        assert completed(service, "free") == ran, "the program ran to its end: its client's going away went unseen"
    finally:
        service.close()


def test_a_spec_over_its_limit_is_refused_before_it_is_parsed(door):
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "d" * 100}
                                               for i in range(1000)}}
    request = request_from_json({"id": "s", "completion": "{}", "spec": {"kind": "json_schema", "schema": schema}})
    free = (("authorization", f"Bearer {door.keys.key['free']}"),)
    with pytest.raises(grpc.RpcError) as refused:
        door.stub.Verify(request, metadata=free, timeout=60)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "max_spec_bytes" in refused.value.details()


def test_a_large_message_is_parsed_in_a_worker_first_and_bounded(door):
    """A gRPC message over 64 KiB is parsed first in a pure worker (the parser holds the GIL: 60 MB of small fields
    would stop every tenant's calls for a second); one over max_message_values is refused there, an invalid one
    says why, and a valid one is answered as ever."""
    free = (("authorization", f"Bearer {door.keys.key['free']}"),)
    many = pb.VerifyBatchRequest(requests=[pb.VerifyRequest(id="x") for _ in range(300_000)])
    with pytest.raises(grpc.RpcError) as refused:
        door.stub.VerifyBatch(many, metadata=free, timeout=60)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "262144 values" in refused.value.details() and "max_message_values" in refused.value.details()
    verify_batch = door.channel.unary_unary("/rlvr.verifier.v1.Verifier/VerifyBatch", request_serializer=None,
                                            response_deserializer=pb.VerifyBatchResponse.FromString)
    with pytest.raises(grpc.RpcError) as invalid:
        verify_batch(b"\x0a\xff\xff\xff\x0f" + b"x" * 100_000, metadata=free, timeout=60)
    assert invalid.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not a valid message" in invalid.value.details()
    large = pb.VerifyBatchRequest(requests=[request_from_json({"id": str(i), "completion": " " * 2000 + "\\boxed{1}",
                                                               "spec": {"kind": "math", "gold": "1"}})
                                            for i in range(64)])
    assert large.ByteSize() > 64 * 1024
    answered = door.stub.VerifyBatch(large, metadata=free, timeout=120)
    assert [r.reward for r in answered.results] == [1.0] * 64


def test_a_ray_replica_checks_a_large_message_in_a_worker_first(docker_ready):
    """The Ray fleet's replicas and session hosts (``fleet_ray.core.CoreHandle``, no door) refuse and answer large
    messages as the gRPC door does: checked first in a pure worker, bounded by max_message_values."""
    import asyncio

    from verifier_service.fleet_ray.core import CoreHandle

    many = pb.VerifyBatchRequest(requests=[pb.VerifyRequest(id="x") for _ in range(30_000)]).SerializeToString()
    large = pb.VerifyBatchRequest(requests=[request_from_json({"id": str(i), "completion": " " * 2000 + "\\boxed{1}",
                                                               "spec": {"kind": "math", "gold": "1"}})
                                            for i in range(64)]).SerializeToString()
    assert len(many) > 64 * 1024 and len(large) > 64 * 1024

    async def calls():
        core = CoreHandle(replace(TEST_CONFIG, max_message_values=20_000))
        await core.start()
        try:
            return [await core.call("VerifyBatch", payload, timeout_s=120)
                    for payload in (many, b"\x0a\xff\xff\xff\x0f" + b"x" * 100_000, large)]
        finally:
            await core.stop()

    refused, invalid, answered = asyncio.run(calls())
    assert refused.code == "RESOURCE_EXHAUSTED" and "20000 values" in refused.details, refused
    assert invalid.code == "INVALID_ARGUMENT" and "not a valid message" in invalid.details, invalid
    assert answered.ok and [r.reward for r in pb.VerifyBatchResponse.FromString(answered.payload).results] == [1.0] * 64


def test_a_notebook_output_is_bounded_in_all(door):
    cells = ["print('x' * 60000)"] * 5
    answer = post(door, "/run_jupyter", {"cells": cells}, "free").json()
    assert answer["status"] == "Failed" and "jupyter_max_output_bytes" in answer["message"], answer["message"]
    assert len(answer["cells"]) == 2  # the third was not run


# ---- item 1: connections ----------------------------------------------------------------------------------------

def _connect(door) -> socket.socket:
    port = door.app.http_port
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def test_connections_per_client_are_capped(door):
    assert wait_for(lambda: door.app.http.connections.open == 0, timeout=30)
    held = [_connect(door) for _ in range(PER_PEER)]
    try:
        assert wait_for(lambda: door.app.http.connections.open >= PER_PEER, timeout=10)
        extra = _connect(door)
        answer = extra.recv(4096)
        extra.close()
        assert answer.startswith(b"HTTP/1.1 503") and b"http_max_connections_per_peer" in answer, answer
    finally:
        for sock in held:
            sock.close()
    assert wait_for(lambda: door.app.http.connections.open == 0, timeout=10)
    assert post(door, "/run_code", {"code": "print(1)", "language": "python"}, "free").status_code == 200


def test_grpc_calls_per_client_are_capped(door):
    """A client address with grpc_max_calls_per_peer calls in flight (here: VerifyStreams that send nothing) gets
    RESOURCE_EXHAUSTED naming the limit for one more, with a retry hint, before its request is read; once its
    calls end it is served again."""
    import threading

    quiet = threading.Event()

    def nothing():
        quiet.wait(60)
        return
        yield

    metadata = (("authorization", f"Bearer {door.keys.key['free']}"),)
    held = [door.stub.VerifyStream(nothing(), metadata=metadata, timeout=90) for _ in range(PER_PEER)]
    try:
        assert wait_for(lambda: sum(_grpc_calls(door).values()) >= PER_PEER, timeout=30), _grpc_calls(door)
        with pytest.raises(grpc.RpcError) as refused:
            verify(door, "def f():\n    return 1\n", {"kind": "python_assert", "tests": "assert f() == 1"})
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refused.value
        assert "grpc_max_calls_per_peer" in refused.value.details()
        assert dict(refused.value.trailing_metadata()).get("retry-after-ms") == "1000"
    finally:
        quiet.set()
        for call in held:
            call.cancel()
    assert wait_for(lambda: not _grpc_calls(door), timeout=30), _grpc_calls(door)
    ok = verify(door, "def f():\n    return 1\n", {"kind": "python_assert", "tests": "assert f() == 1"})
    assert ok["verdict"] == "PASSED", ok


def test_verify_streams_that_never_read_are_held_and_cancelled_without_harm(door):
    """VerifyStreams that send batch after batch and never read an answer: the door stops reading each past
    stream_max_batches, and cancelling them leaves the service serving (the per-call log asked grpcio for the
    client's address after the cancel: a SIGSEGV of the whole service, found by benchmarks/front_door_floods.py,
    phase unread_streams)."""
    import threading

    stop = threading.Event()
    schema = {"type": "object", "properties": {"a": {"type": "string", "description": "d" * 50_000}}}
    request = request_from_json({"id": "s", "completion": "{}", "spec": {"kind": "json_schema", "schema": schema}})
    batch = pb.VerifyBatchRequest(requests=[request] * 64)
    sent = [0]

    def batches():
        while not stop.is_set():
            sent[0] += 1
            yield batch

    metadata = (("authorization", f"Bearer {door.keys.key['free']}"),)
    calls = [door.stub.VerifyStream(batches(), metadata=metadata, timeout=120) for _ in range(4)]
    try:
        time.sleep(6)
    finally:
        stop.set()
        for call in calls:
            call.cancel()
    assert sent[0] >= 4, sent
    assert wait_for(lambda: not _grpc_calls(door), timeout=60), _grpc_calls(door)
    ok = verify(door, "def f():\n    return 1\n", {"kind": "python_assert", "tests": "assert f() == 1"})
    assert ok["verdict"] == "PASSED", ok


def test_grpc_connections_are_capped(door):
    """grpc_max_connections open connections (here: the test stub's and HTTP/2 connections that never call) and
    the next is closed as it is accepted: a new channel cannot reach the service; closing them lets it in."""
    host, port = door.address.rsplit(":", 1)
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # + empty SETTINGS
    held = []
    for _ in range(GRPC_CONNECTIONS):
        sock = socket.create_connection((host, int(port)), timeout=10)
        sock.sendall(preface)
        held.append(sock)
    fresh = [("grpc.use_local_subchannel_pool", 1)]  # a connection of its own, not the test stub's
    try:
        for sock in held[:-1]:
            assert sock.recv(9), "an accepted connection gets the server's HTTP/2 settings"
        channel = grpc.insecure_channel(door.address, options=fresh)
        with pytest.raises(grpc.FutureTimeoutError):
            grpc.channel_ready_future(channel).result(timeout=5)
        channel.close()
    finally:
        for sock in held:
            sock.close()
    channel = grpc.insecure_channel(door.address, options=fresh)
    grpc.channel_ready_future(channel).result(timeout=30)
    channel.close()


def test_a_grpc_connection_that_never_completes_its_handshake_is_closed(door):
    """A bare TCP connection to the gRPC port that never sends HTTP/2's preface is closed after
    grpc_handshake_timeout_s (3 s here): silent sockets do not pile up for two minutes, gRPC's default."""
    host, port = door.address.rsplit(":", 1)
    silent = socket.create_connection((host, int(port)), timeout=60)
    while silent.recv(4096):  # the server's settings, then its GOAWAY, then the end
        pass
    silent.close()


def _grpc_calls(door) -> dict[str, int]:
    """The gRPC door's calls in flight by client address."""
    interceptor = door.app.grpc.interceptor
    return dict(interceptor.calls) if interceptor is not None else {}


def test_a_connection_without_a_whole_header_is_closed(door):
    slow = _connect(door)
    slow.sendall(b"POST /run_code HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    slow.settimeout(30)  # http_idle_timeout_s is 2 s: the service closes it well before
    assert slow.recv(4096) == b""
    slow.close()


def test_a_client_that_goes_away_cancels_its_work(door):
    ran = completed(door, "free")
    with pytest.raises(requests.exceptions.ReadTimeout):
        requests.post(door.http_url + "/run_code", headers=headers(door, "free"), timeout=3,
                      json={"code": "import time\ntime.sleep(25)", "language": "python", "run_timeout": 30})
    # the client closed its connection after 3 s: the job is cancelled (it leaves its slot), never run to its end
    assert wait_for(lambda: door.app.verifier.admission.pending == 0, timeout=60)
    assert completed(door, "free") == ran, "the program ran to its end: its client's going away did not cancel it"
    ok = post(door, "/run_code", {"code": "print(2)", "language": "python"}, "free")
    assert ok.json()["run_result"]["stdout"] == "2\n"


# ---- item 4: logs -----------------------------------------------------------------------------------------------

def test_unauthenticated_floods_leave_a_bounded_audit(door):
    def refused_lines():
        return [r for r in map(json.loads, door.audit_path.read_text().splitlines())
                if r.get("status") == "UNAUTHENTICATED" and r.get("method") == "POST /get_reward"]

    start = len(refused_lines())
    for _ in range(30):
        assert requests.post(door.http_url + "/get_reward", json={}, timeout=30).status_code == 401
    assert len(refused_lines()) - start <= 5  # log_repeat_burst per interval


def test_refused_authentications_past_a_burst_are_answered_late_and_tenants_are_not(tmp_path):
    """A keyless client that sends as fast as it is answered: past auth_refusal_burst a second from its address,
    each refusal waits auth_refusal_delay_s (here longer than the test), on both doors; a tenant calling from the
    same address meanwhile is answered. (The pace is the door's, before any sandbox: one backend.)"""
    from concurrent.futures import ThreadPoolExecutor

    keys = Keys("free")
    config = replace(TEST_CONFIG, http_port=free_port(), tenants=write_tenants(tmp_path / "t.yaml", keys, {}),
                     auth_refusal_burst=2, auth_refusal_delay_s=600.0)
    service = RunningService(config)
    try:
        def keyless_http():
            try:
                return requests.post(service.http_url + "/get_reward", json={}, timeout=(10, 4)).status_code
            except requests.exceptions.ReadTimeout:
                return "held"

        with ThreadPoolExecutor(6) as pool:
            flood = [pool.submit(keyless_http) for _ in range(6)]
            tenant = requests.post(service.http_url + "/get_reward", json={"query": ["\\boxed{1}"],
                                   "labels": [{"kind": "math", "gold": "1"}]},
                                   headers={"Authorization": f"Bearer {keys.key['free']}"}, timeout=30)
            answers = [f.result() for f in flood]
        assert set(answers) <= {401, "held"} and answers.count("held") >= 2, answers
        assert tenant.status_code == 200 and tenant.json()["rewards"] == [1.0]

        request = request_from_json({"id": "k", "completion": "\\boxed{1}", "spec": {"kind": "math", "gold": "1"}})
        calls = [service.stub.Verify.future(request, timeout=4) for _ in range(6)]
        held = [call.exception() for call in calls]
        codes = [e.code() if e is not None else grpc.StatusCode.OK for e in held]
        assert set(codes) <= {grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.DEADLINE_EXCEEDED}, codes
        assert codes.count(grpc.StatusCode.DEADLINE_EXCEEDED) >= 2, codes
        ok = service.stub.Verify(request, metadata=keys.metadata("free"), timeout=30)
        assert ok.reward == 1.0
    finally:
        service.close()


# ---- item 6: metrics --------------------------------------------------------------------------------------------

def test_metrics_show_a_tenant_only_its_own(door):
    post(door, "/get_reward", {"query": ["\\boxed{1}"], "labels": [{"kind": "math", "gold": "1"}]}, "free")
    post(door, "/run_code", {"code": "print(1)", "language": "python"}, "cat")
    own = requests.get(door.http_url + "/metrics", headers=headers(door, "cat"), timeout=30).text
    assert 'tenant="cat"' in own and 'tenant="free"' not in own and "rlvr_rpcs_total" not in own
    everything = requests.get(door.http_url + "/metrics", headers=headers(door, "ops"), timeout=30).text
    assert 'tenant="cat"' in everything and 'tenant="free"' in everything and "rlvr_rpcs_total" in everything
    assert requests.get(door.http_url + "/metrics", timeout=30).status_code == 401


# ---- item 7: formats --------------------------------------------------------------------------------------------

def test_schema_formats_are_checked_or_refused(door):
    spec = {"kind": "json_schema", "schema": {"type": "object", "required": ["when", "site", "host"],
                                              "properties": {"when": {"type": "string", "format": "date-time"},
                                                             "site": {"type": "string", "format": "uri"},
                                                             "host": {"type": "string", "format": "hostname"}}}}
    good = verify(door, json.dumps({"when": "2026-12-04T06:00:00Z", "site": "https://example.org/a",
                                   "host": "example.org"}), spec)
    assert good["verdict"] == "PASSED", good
    for field, bad in (("when", "yesterday"), ("site", "not a uri"), ("host", "-bad-.host_")):
        doc = {"when": "2026-12-04T06:00:00Z", "site": "https://example.org/a", "host": "example.org", field: bad}
        result = verify(door, json.dumps(doc), spec)
        assert result["verdict"] == "FAILED", (field, result)
    unknown = {"kind": "json_schema", "schema": {"type": "string", "format": "int32"}}
    with pytest.raises(grpc.RpcError) as refused:
        verify(door, '"1"', unknown)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "int32" in refused.value.details()
    tool = {"kind": "tool_call", "tools": [{"name": "at", "parameters": {
        "type": "object", "properties": {"t": {"type": "string", "format": "phone"}}}}]}
    with pytest.raises(grpc.RpcError) as tool_refused:
        verify(door, '{"name": "at", "arguments": {"t": "1"}}', tool)
    assert "phone" in tool_refused.value.details()
