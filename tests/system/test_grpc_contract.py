"""The gRPC contract of the verifier service, against a real server and a real sandbox.

Status codes for bad requests and overload, result order and ids in batches
and streams, ListVerifiers, health and reflection, deadlines and cancellation
(which must remove the sandbox container), a missing Docker engine (INFRA_ERROR
with no reward for sandboxed kinds, pure kinds unaffected), graceful shutdown,
and the reward ordering malformed < well-formed wrong < correct. Tests marked
``backends("docker", "bwrap")`` run on both sandbox backends.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from verifier_service._generated import verifier_pb2 as pb
from verifier_service._generated import verifier_pb2_grpc as pb_grpc
from verifier_service.spec import request_from_json, result_to_json
from verifier_service.testing import CLI_MODULE, ServedProcess

from support.sandboxes import live_sandboxes, stray_sandboxes
from support.tenancy_setup import rpc_error
from support.wait import wait_for

pytestmark = pytest.mark.docker
both_backends = pytest.mark.backends("docker", "bwrap")

SERVICE_NAME = "rlvr.verifier.v1.Verifier"
EXAMPLES = {row["id"]: row for row in map(json.loads, Path(__file__).resolve().parents[2].joinpath(
    "examples", "requests.jsonl").read_text().splitlines()) if row}
OK_CODE = "def f():\n    return 1\n"
OK_SPEC = {"kind": "python_assert", "tests": "assert f() == 1", "timeout_s": 5}
ALL_KINDS = {"python_assert", "python_io", "stdio", "function_tests", "function_io", "sql", "pytest", "json_schema",
             "tool_call", "math", "format"}


def req(completion: str, spec: dict, id: str = "r") -> pb.VerifyRequest:
    return request_from_json({"id": id, "completion": completion, "spec": spec})


def sleeper(seconds: float, timeout_s: float) -> tuple[str, dict]:
    return f"import time\ntime.sleep({seconds})\ndef f():\n    return 1\n", {**OK_SPEC, "timeout_s": timeout_s}


def invalid(service, request: pb.VerifyRequest) -> str:
    """The message of an INVALID_ARGUMENT answer to ``request``."""
    err = rpc_error(service.stub.Verify, request, timeout=30)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (err.code(), err.details())
    return err.details()


def health_status(channel, name: str = SERVICE_NAME):
    return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=name), timeout=10).status


# ---- invalid requests ---------------------------------------------------------

class TestInvalidArgument:
    @pytest.mark.parametrize("completion, spec, named", [
        ("x", {"kind": "no_such_kind", "tests": "assert True"}, ("no_such_kind", "python_assert", "stdio")),
        ("x", {**OK_SPEC, "gold": "1"}, ("gold", "python_assert")),  # a field of another kind
        ("x", {**OK_SPEC, "extract": "xml_tag"}, ("xml_tag", "fenced_code")),
        ("x", {**OK_SPEC, "tests": "assert (1 ==\n"}, ("tests",)),  # tests that are not Python
        ("{}", {"kind": "json_schema", "schema": {"type": 12}}, ("schema",)),
        (OK_CODE, {"kind": "python_io", "entry_point": "f", "cases": [{"args": [1], "expected": 1}, {"args": [2]}]},
         ("cases[1]", "expected")),
        (OK_CODE, {**OK_SPEC, "timeout_s": 121}, ("timeout_s",)),  # above the maximum
        (OK_CODE, {**OK_SPEC, "timeout_s": -1}, ("timeout_s",)),
        (OK_CODE, {**OK_SPEC, "format_weight": 0}, ("format_weight",)),
        (OK_CODE, {**OK_SPEC, "correctness_weight": -1}, ("correctness_weight",)),
    ], ids=["unknown_kind_lists_the_valid_kinds", "field_of_another_kind", "extract_mode", "tests_not_python",
            "json_schema", "python_io_case_without_expected", "timeout_above_max", "negative_timeout",
            "zero_format_weight", "negative_correctness_weight"])
    def test_an_invalid_spec_is_named(self, service, completion, spec, named):
        message = invalid(service, req(completion, spec))
        assert all(name in message for name in named), message

    def test_missing_spec_and_empty_kind(self, service):
        assert "kind" in invalid(service, pb.VerifyRequest(id="a", completion="x"))
        assert "kind" in invalid(service, pb.VerifyRequest(id="b", completion="x", spec=pb.VerificationSpec()))
        assert "kind" in invalid(service, pb.VerifyRequest(id="c", completion="x",
                                                           spec=pb.VerificationSpec(tests="assert True")))

    def test_bad_request_in_a_batch_names_its_index_and_id(self, service):
        good = req(OK_CODE, OK_SPEC, id="fine")
        bad = req(OK_CODE, {**OK_SPEC, "extract": "nope"}, id="the-bad-one")
        err = rpc_error(service.stub.VerifyBatch, pb.VerifyBatchRequest(requests=[good, good, bad]), timeout=30)
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "request 2" in err.details() and "the-bad-one" in err.details()

    def test_completion_too_large_is_its_verdict_not_an_error(self, service):
        limit = service.app.config.max_completion_bytes
        result = service.verify("#" * (limit + 1), OK_SPEC)  # model output: a verdict (test_untrusted_output.py)
        assert (result["verdict"], result["reward"]) == ("MALFORMED", 0.0) and str(limit) in result["detail"]
        # exactly at the limit is accepted
        assert service.verify(OK_CODE + "#" * (limit - len(OK_CODE)), OK_SPEC)["verdict"] == "PASSED"

    def test_batch_too_large(self, make_service):
        svc = make_service(max_batch_size=3)
        requests = [req(OK_CODE, OK_SPEC, id=str(i)) for i in range(4)]
        err = rpc_error(svc.stub.VerifyBatch, pb.VerifyBatchRequest(requests=requests), timeout=30)
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "3" in err.details()
        ok = svc.stub.VerifyBatch(pb.VerifyBatchRequest(requests=requests[:3]), timeout=60)
        assert [r.verdict for r in ok.results] == [pb.PASSED] * 3


# ---- backpressure -----------------------------------------------------------------

def test_backpressure(make_service):
    svc = make_service(max_pending=2)
    admission = svc.app.verifier.admission
    three = [req(OK_CODE, OK_SPEC, id=str(i)) for i in range(3)]
    err = rpc_error(svc.stub.VerifyBatch, pb.VerifyBatchRequest(requests=three), timeout=30)
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "retry" in err.details().lower()
    assert admission.pending == 0

    slow_code, slow_spec = sleeper(2, timeout_s=3)
    results: list = []
    worker = threading.Thread(target=lambda: results.append(
        svc.verify_batch([(slow_code, slow_spec), (slow_code, slow_spec)])))
    worker.start()
    try:
        assert wait_for(lambda: admission.pending == 2, 10), "the slow batch was never admitted"
        err = rpc_error(svc.stub.Verify, req(OK_CODE, OK_SPEC), timeout=30)
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "retry" in err.details().lower()
    finally:
        worker.join(60)
    assert [r["verdict"] for r in results[0]] == ["PASSED", "PASSED"]
    assert admission.pending == 0
    assert svc.verify(OK_CODE, OK_SPEC)["verdict"] == "PASSED"
    assert [r["verdict"] for r in svc.verify_batch([(OK_CODE, OK_SPEC)] * 2)] == ["PASSED", "PASSED"]


def test_the_bytes_of_requests_in_flight_are_bounded(make_service):
    """A tenant's admitted and not yet answered requests are held in memory: their bytes are bounded per tenant
    (tenant_pending_bytes) and in all; one more batch is RESOURCE_EXHAUSTED naming the bound, a batch over it on
    its own INVALID_ARGUMENT (retrying cannot help), and the bytes come back when the batch is answered."""
    svc = make_service(tenant_pending_bytes=30_000, max_pending_bytes=60_000)
    admission = svc.app.verifier.admission
    slow_code, slow_spec = sleeper(2, timeout_s=4)
    padded = slow_code + "#" * 10_000 + "\n"  # ~10 KB each
    results: list = []
    worker = threading.Thread(target=lambda: results.append(svc.verify_batch([(padded, slow_spec)] * 2)))
    worker.start()
    try:
        assert wait_for(lambda: admission.pending_bytes > 20_000, 10), "the slow batch was never admitted"
        err = rpc_error(svc.stub.Verify, req(padded, OK_SPEC), timeout=30)
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "tenant_pending_bytes=30000" in err.details() and "retry" in err.details()
    finally:
        worker.join(60)
    assert [r["verdict"] for r in results[0]] == ["PASSED", "PASSED"]
    assert admission.pending_bytes == 0 and not admission.by_tenant
    err = rpc_error(svc.stub.VerifyBatch, pb.VerifyBatchRequest(requests=[req(padded, OK_SPEC)] * 4), timeout=30)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "send smaller batches" in err.details()
    assert svc.verify(padded, OK_SPEC)["verdict"] == "PASSED"


def test_one_tenants_bytes_in_flight_leave_the_others_room():
    from verifier_service.errors import InvalidSpec, Overloaded
    from verifier_service.service.verifier import Admission

    admission = Admission(100, max_bytes=1000, tenant_bytes=600)
    admission.acquire(1, "a", 500)
    with pytest.raises(Overloaded, match="tenant 'a'"):
        admission.acquire(1, "a", 200)
    admission.acquire(1, "b", 450)  # b is not held back by a's bytes
    with pytest.raises(Overloaded, match="max_pending_bytes"):
        admission.acquire(1, "c", 100)  # but all together are bounded
    with pytest.raises(InvalidSpec, match="send smaller batches"):
        admission.acquire(1, "c", 601)
    admission.release(1, "a", 500)
    admission.acquire(1, "c", 100)
    assert admission.pending == 2 and admission.pending_bytes == 550
    assert dict(admission.by_tenant) == {"b": 450, "c": 100}


# ---- batches and streams -------------------------------------------------------------

def test_verify_batch_keeps_request_order_and_ids_across_kinds(service):
    slow_code, slow_spec = sleeper(1, timeout_s=5)
    chosen = ["assert-pass", "io-pass", "json-schema", "tool-call", "math", "format", "assert-wrong"]
    rows = [{"id": "slow-first", "completion": slow_code, "spec": slow_spec}] + [EXAMPLES[i] for i in chosen]
    requests = [request_from_json({k: v for k, v in row.items() if k != "prompt"}) for row in rows]
    response = service.stub.VerifyBatch(pb.VerifyBatchRequest(requests=requests, batch_id="mixed"), timeout=120)
    assert response.batch_id == "mixed"
    results = [result_to_json(r) for r in response.results]
    assert [r["id"] for r in results] == [row["id"] for row in rows]
    assert [r["kind"] for r in results] == [row["spec"]["kind"] for row in rows]
    verdicts = {r["id"]: r["verdict"] for r in results}
    assert verdicts == {"slow-first": "PASSED", "assert-pass": "PASSED", "io-pass": "PASSED",
                        "json-schema": "PASSED", "tool-call": "PASSED", "math": "PASSED", "format": "PASSED",
                        "assert-wrong": "PARTIAL"}, results


def test_verify_stream(service):
    sizes = {"b0": 1, "b1": 2, "b2": 3}
    specs = [OK_SPEC, EXAMPLES["json-schema"]["spec"], EXAMPLES["math"]["spec"]]
    completions = [OK_CODE, EXAMPLES["json-schema"]["completion"], EXAMPLES["math"]["completion"]]

    def batches():
        for batch_id, size in sizes.items():
            yield pb.VerifyBatchRequest(batch_id=batch_id, requests=[
                req(completions[i % 3], specs[i % 3], id=f"{batch_id}-{i}") for i in range(size)])
            time.sleep(0.1)

    responses = list(service.stub.VerifyStream(batches(), timeout=120))
    assert sorted(r.batch_id for r in responses) == ["b0", "b1", "b2"]
    for response in responses:
        size = sizes[response.batch_id]
        assert [r.id for r in response.results] == [f"{response.batch_id}-{i}" for i in range(size)]
        assert all(r.verdict == pb.PASSED for r in response.results), response


def test_verify_stream_bad_batch_is_invalid_argument(service):
    def batches():
        yield pb.VerifyBatchRequest(batch_id="ok", requests=[req(OK_CODE, OK_SPEC, id="a")])
        yield pb.VerifyBatchRequest(batch_id="bad", requests=[req(OK_CODE, {"kind": "nope"}, id="b")])

    with pytest.raises(grpc.RpcError) as info:
        list(service.stub.VerifyStream(batches(), timeout=60))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "nope" in info.value.details()
    # the aborted stream's other verifications are cancelled and their containers removed
    assert wait_for(lambda: service.app.sandbox.running == 0 and not stray_sandboxes("docker"), 10, 0.2)
    assert wait_for(lambda: service.app.verifier.admission.pending == 0, 10)


# ---- discovery -------------------------------------------------------------------------

def test_list_verifiers(service):
    response = service.stub.ListVerifiers(pb.ListVerifiersRequest(), timeout=30)
    kinds = {k.name: k for k in response.kinds}
    assert set(kinds) == ALL_KINDS
    assert list(response.extract_modes) == ["raw", "fenced_code", "last_fenced_code", "answer_tag"]
    assert list(response.scoring_modes) == ["all_or_nothing", "fraction"]
    required = {"python_assert": {"tests"}, "python_io": {"entry_point", "cases"}, "stdio": {"cases"},
                "pytest": {"files"}, "json_schema": {"schema"}, "tool_call": {"tools"}, "math": {"gold"},
                "format": {"pattern"}, "function_tests": {"tests", "language"}, "sql": {"setup"},
                "function_io": {"language", "entry_point", "cases"}}
    for name, kind in kinds.items():
        params = {p.name: p for p in kind.parameters}
        assert kind.description, name
        assert {n for n, p in params.items() if p.required} == required[name], name
        assert {"extract", "scoring", "timeout_s", "format_weight", "correctness_weight"} <= set(params), name
        assert list(params["extract"].choices) == list(response.extract_modes)
        sandboxed = {"python_assert", "python_io", "stdio", "pytest", "function_tests", "function_io", "sql"}
        assert kind.sandboxed == (name in sandboxed), name
    assert kinds["python_assert"].parameters[0].name == "tests"


@both_backends
def test_health_and_reflection(service):
    for name in ("", SERVICE_NAME):
        assert health_status(service.channel, name) == health_pb2.HealthCheckResponse.SERVING
    stub = reflection_pb2_grpc.ServerReflectionStub(service.channel)
    responses = list(stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                               timeout=30))
    services = {s.name for s in responses[0].list_services_response.service}
    assert SERVICE_NAME in services
    assert "grpc.health.v1.Health" in services


# ---- deadlines and cancellation -----------------------------------------------------------

def _job_started(service, timeout: float = 15) -> set[str]:
    """The warm containers when a job starts; the job runs in one of them."""
    assert wait_for(lambda: service.app.sandbox.running == 1, timeout, 0.05), "the sandbox job never started"
    return set(live_sandboxes(service.app.sandbox.backend))


def _job_container_removed(service, before: set[str], recycled: int) -> bool:
    """The job's container was recycled (removed), and a fresh one replaces it."""
    sandbox = service.app.sandbox
    return wait_for(lambda: sandbox.running == 0 and sandbox.recycled > recycled
                    and bool(before - set(live_sandboxes(sandbox.backend)))
                    and not stray_sandboxes(sandbox.backend), 10, 0.2)


@both_backends
def test_deadline_is_honoured_and_the_container_removed(service):
    code, spec = sleeper(30, timeout_s=20)
    recycled = service.app.sandbox.recycled
    future = service.stub.Verify.future(req(code, spec), timeout=2)
    before = _job_started(service, timeout=2)
    err = future.exception(timeout=30)
    assert err is not None and err.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert _job_container_removed(service, before, recycled), "container outlived the deadline"
    assert wait_for(lambda: service.app.verifier.admission.pending == 0, 10)


@both_backends
def test_client_cancellation_removes_the_container(service):
    code, spec = sleeper(30, timeout_s=20)
    recycled = service.app.sandbox.recycled
    future = service.stub.Verify.future(req(code, spec), timeout=60)
    before = _job_started(service)
    time.sleep(1)
    assert future.cancel()
    assert _job_container_removed(service, before, recycled), "container outlived the cancel"
    assert wait_for(lambda: service.app.verifier.admission.pending == 0, 10)
    assert service.verify(OK_CODE, OK_SPEC)["verdict"] == "PASSED"


# ---- Docker unreachable ------------------------------------------------------------------------

def test_docker_unreachable(make_service):
    svc = make_service(docker_url="unix:///tmp/no-such-docker.sock")
    for name in ("", SERVICE_NAME):
        assert wait_for(lambda n=name: health_status(svc.channel, n) == health_pb2.HealthCheckResponse.NOT_SERVING,
                        5), name
    r = svc.verify(OK_CODE, OK_SPEC)
    assert r["verdict"] == "INFRA_ERROR" and r["reward"] is None, r
    assert "Docker" in r["detail"]
    raw = svc.stub.Verify(req(OK_CODE, OK_SPEC), timeout=30)
    assert not raw.HasField("reward")
    row = EXAMPLES["json-schema"]
    r = svc.verify(row["completion"], row["spec"])
    assert (r["verdict"], r["reward"]) == ("PASSED", 1.0), r


# ---- shutdown ------------------------------------------------------------------------------------

@both_backends
def test_graceful_shutdown_finishes_in_flight_calls(make_service):
    svc = make_service()
    code, spec = sleeper(2, timeout_s=5)
    results: list = []
    errors: list = []

    def call():
        try:
            results.append(svc.verify(code, spec, timeout=60))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    assert wait_for(lambda: svc.app.verifier.admission.pending == 1, 10), "the call never arrived"
    time.sleep(0.3)
    svc.call(svc.app.stop(grace=10))
    worker.join(30)
    assert not errors, errors
    assert results and results[0]["verdict"] == "PASSED", results
    err = rpc_error(svc.stub.Verify, req(OK_CODE, OK_SPEC), timeout=10)
    assert err.code() == grpc.StatusCode.UNAVAILABLE


# ---- reward semantics ------------------------------------------------------------------------------

def test_reward_ordering_malformed_wrong_correct(service):
    spec = {"kind": "python_assert", "extract": "fenced_code", "tests": "assert f() == 1", "timeout_s": 5}
    malformed = service.verify("def f():\n    return 1\n", spec)
    wrong = service.verify("Here:\n```python\ndef f():\n    return 2\n```\n", spec)
    correct = service.verify("Here:\n```python\ndef f():\n    return 1\n```\n", spec)
    assert (malformed["verdict"], malformed["reward"], malformed["format_score"]) == ("MALFORMED", 0.0, 0.0)
    assert (wrong["verdict"], wrong["format_score"], wrong["correctness_score"]) == ("FAILED", 1.0, 0.0)
    assert wrong["reward"] > malformed["reward"]
    assert wrong["reward"] == pytest.approx(0.2)
    assert (correct["verdict"], correct["reward"]) == ("PASSED", 1.0)


def test_identical_completions_in_a_batch_run_once(service):
    # A GRPO group often repeats itself: the duplicates share one sandbox run but keep their own ids.
    runs = _count_sandbox_runs(service)
    try:
        items = [(OK_CODE, OK_SPEC)] * 6 + [(OK_CODE + "\n", OK_SPEC)] * 2
        results = service.verify_batch(items)
    finally:
        del service.app.sandbox.run
    assert [r["id"] for r in results] == [str(i) for i in range(8)]
    assert all(r["verdict"] == "PASSED" for r in results)
    assert len(runs) == 2


def _count_sandbox_runs(svc):
    sandbox = svc.app.sandbox
    runs = []
    original = sandbox.run

    async def counting(job, *args, **kwargs):
        runs.append(job)
        return await original(job, *args, **kwargs)

    sandbox.run = counting
    return runs


def test_result_cache_is_off_by_default(service):
    runs = _count_sandbox_runs(service)
    try:
        code = OK_CODE + "# cache off\n"
        assert service.verify(code, OK_SPEC)["verdict"] == "PASSED"
        assert service.verify(code, OK_SPEC)["verdict"] == "PASSED"
    finally:
        del service.app.sandbox.run
    assert len(runs) == 2


@both_backends
def test_result_cache_reuses_verdicts_about_the_code_only(make_service):
    svc = make_service(result_cache_size=8)
    runs = _count_sandbox_runs(svc)
    first = svc.verify(OK_CODE, OK_SPEC, id="a")
    again = svc.verify(OK_CODE, OK_SPEC, id="b")
    assert (first["verdict"], again["verdict"], again["id"]) == ("PASSED", "PASSED", "b")
    assert len(runs) == 1
    loop_code, loop_spec = sleeper(5, timeout_s=1)
    assert svc.verify(loop_code, loop_spec)["verdict"] == "TIMEOUT"
    assert svc.verify(loop_code, loop_spec)["verdict"] == "TIMEOUT"
    assert len(runs) == 3  # a TIMEOUT may come from load: never cached
    json_spec = {"kind": "json_schema", "schema": {"type": "object"}}
    assert svc.verify("{}", json_spec)["verdict"] == svc.verify("{}", json_spec)["verdict"] == "PASSED"


def test_several_worker_processes_serve_one_port(docker_ready, tmp_path):
    served = ServedProcess("--workers", "2", "--max-concurrency", "1", "--pure-workers", "1", "--shutdown-grace-s",
                           "1", log_path=tmp_path / "service.log").start(wait=False)
    try:
        children = []
        assert wait_for(lambda: children.extend(_children(served.pid)) or children, 30, 0.2), "no worker started"
        with grpc.insecure_channel(served.address) as channel:
            grpc.channel_ready_future(channel).result(timeout=60)
            stub = pb_grpc.VerifierStub(channel)
            assert wait_for(lambda: health_status(channel, SERVICE_NAME) == health_pb2.HealthCheckResponse.SERVING,
                            60, 0.5)
            result = stub.Verify(req(OK_CODE, OK_SPEC), timeout=60)
            assert result.verdict == pb.PASSED
        assert len(set(children)) == 1  # one more worker; it starts none of its own
        assert not _children(children[0])
    finally:
        served.stop(60)
    assert all(not _alive(pid) for pid in children)


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True, check=False)
    return [int(p) for p in out.stdout.split() if CLI_MODULE in _cmdline(int(p))]


def _cmdline(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    return bool(_cmdline(pid))


@both_backends
def test_a_warm_container_that_died_is_replaced_without_losing_the_job(make_service):
    svc = make_service(max_concurrency=1)
    assert svc.verify(OK_CODE, OK_SPEC)["verdict"] == "PASSED"  # the pool is up
    (victim,) = [c for c in svc.app.sandbox._live]
    if svc.app.sandbox.backend == "docker":
        subprocess.run(["docker", "kill", victim], capture_output=True, timeout=60, check=True)
    else:  # the sandbox's PID 1 (the runner) killed from the host: the whole sandbox goes
        os.kill(svc.app.sandbox._instances[victim].handle.child_pid, signal.SIGKILL)
    result = svc.verify(OK_CODE + "# after the kill\n", OK_SPEC)
    assert result["verdict"] == "PASSED", result
    assert victim not in svc.app.sandbox._live
