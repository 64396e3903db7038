"""The one client call path, without Docker: typed errors, connection errors that say what went wrong, and
retries that spend the caller's budget, never a fresh deadline per attempt.

The servers here are stand-ins on loopback (``test_balancing.FlakyServer``), or nothing at all (a free port).
"""

from __future__ import annotations

import asyncio
import json

import grpc
import pytest
from test_balancing import Flaky, flaky  # noqa: F401 - the fixture is used by name

from trainer.errors import RewardError
from trainer.gates import GateError, verify_samples
from trainer.rewards import VerifierRewards
from verifier_service._generated import verifier_pb2 as pb
from verifier_service.client import (
    CallStats,
    RemoteDeadlineExceeded,
    RemoteRefusal,
    RemoteUnavailable,
    Unauthenticated,
    VerifierClient,
    check_service,
    remote_error,
)
from verifier_service.client.balancing import RETRY_CODES, RETRYABLE, RetryPolicy, service_config
from verifier_service.credentials import Credentials
from verifier_service.errors import STATUS, RemoteError, ServiceUnreachable
from verifier_service.spec import request_from_json
from verifier_service.testing import free_port


def batch(n: int = 1) -> list[pb.VerifyRequest]:
    return [request_from_json({"id": str(i), "completion": "1", "spec": {"kind": "format", "pattern": "1"}})
            for i in range(n)]


# ---- typed errors ----------------------------------------------------------------------------------------

def test_each_status_of_the_service_comes_back_as_its_own_error_class():
    for cls, name in STATUS:
        error = remote_error(grpc.StatusCode[name], "why")
        assert isinstance(error, cls) and isinstance(error, RemoteError), (cls, name, type(error))
        assert error.code == name and error.details == "why"
    assert isinstance(remote_error(grpc.StatusCode.UNAUTHENTICATED, "no key"), Unauthenticated)
    refusals = {grpc.StatusCode[name] for _, name in STATUS if name != "RESOURCE_EXHAUSTED"}
    assert all(isinstance(remote_error(code, ""), RemoteRefusal) for code in refusals)
    assert not isinstance(remote_error(grpc.StatusCode.RESOURCE_EXHAUSTED, ""), RemoteRefusal)
    assert isinstance(remote_error(grpc.StatusCode.UNAVAILABLE, ""), RemoteUnavailable)
    assert type(remote_error(grpc.StatusCode.INTERNAL, "")) is RemoteError


def test_one_table_of_retryable_codes():
    assert {remote_error(code, "").retryable for code in RETRYABLE} == {True}
    assert not remote_error(grpc.StatusCode.INVALID_ARGUMENT, "").retryable
    assert set(RETRY_CODES) <= set(RETRYABLE)
    channel_codes = json.loads(service_config())["methodConfig"][0]["retryPolicy"]["retryableStatusCodes"]
    assert {getattr(grpc.StatusCode, name) for name in channel_codes} <= set(RETRY_CODES)


# ---- connection errors -----------------------------------------------------------------------------------

def connect_error(target, **kwargs) -> ServiceUnreachable:
    with pytest.raises(ServiceUnreachable) as info:
        asyncio.run(VerifierClient.connect(target, **kwargs))
    return info.value


def test_a_refused_port_says_connection_refused_without_waiting_for_the_timeout():
    error = connect_error(f"127.0.0.1:{free_port()}", timeout_s=30)
    # (not the 30 s deadline's "deadline exceeded": a refused connection is an answer)
    assert "connection refused" in str(error) and "verifier-service serve" in str(error)
    with pytest.raises(ServiceUnreachable, match="connection refused"):
        check_service(f"127.0.0.1:{free_port()}", timeout_s=30)


def test_an_unknown_host_says_so():
    error = connect_error("nosuch-host.invalid:50051", timeout_s=30)
    assert "unknown host" in str(error)


@pytest.mark.parametrize("target", ["localhost", "127.0.0.1:99999", "127.0.0.1:http", ":50051",
                                    "a:1,b", ""])
def test_a_malformed_address_says_so(target):
    error = connect_error(target, timeout_s=30)
    assert "malformed verifier address" in str(error) or "no verifier address" in str(error)


def test_tls_to_a_plaintext_service_says_the_handshake_failed(flaky):  # noqa: F811
    _, address = flaky(failures=0)
    error = connect_error(address, timeout_s=30, credentials=Credentials(tls=True))
    assert "TLS handshake failed" in str(error) and "listens in plaintext" in str(error)


def test_the_reward_functions_fail_at_construction_saying_why():
    with pytest.raises(RewardError, match="connection refused"):
        VerifierRewards(f"127.0.0.1:{free_port()}", connect_timeout_s=30)


# ---- retries within the caller's budget ------------------------------------------------------------------

class Slow(Flaky):
    """Answers after ``delay_s``, every time."""

    def __init__(self, delay_s: float):
        super().__init__(failures=0)
        self.delay_s = delay_s

    async def VerifyBatch(self, request, context):
        self.calls += 1
        await asyncio.sleep(self.delay_s)
        return pb.VerifyBatchResponse()


@pytest.fixture
def slow(flaky, monkeypatch):  # noqa: F811
    """A stand-in server whose answers take 5 s."""
    import test_balancing

    monkeypatch.setattr(test_balancing, "Flaky", lambda failures, code: Slow(5.0))
    servicer, address = flaky(failures=0)
    return servicer, address


def test_a_timed_out_batch_is_not_sent_again_with_a_fresh_deadline(slow):
    servicer, address = slow
    stats = CallStats()

    async def main():
        retry = RetryPolicy(attempts=5, initial_backoff_s=0.01)
        async with await VerifierClient.connect(address, retry=retry) as client:
            await client.verify_batch(batch(), timeout_s=1.0, stats=stats)

    with pytest.raises(RemoteDeadlineExceeded):
        asyncio.run(main())
    assert stats.attempts == 1 and servicer.calls == 1  # the budget was spent on the first attempt


def test_retries_stop_when_the_callers_budget_is_spent(flaky):  # noqa: F811
    _, address = flaky(failures=1000)
    stats = CallStats()
    # up to 100 attempts, but each wait is at least 0.2 s and the budget is 1 s: at most 1 + 5 attempts
    policy = RetryPolicy(attempts=100, initial_backoff_s=0.4, max_backoff_s=0.4)

    async def main():
        async with await VerifierClient.connect(address, retry=policy) as client:
            await client.verify_batch(batch(), timeout_s=1.0, stats=stats)

    with pytest.raises((RemoteUnavailable, RemoteDeadlineExceeded)):  # the last attempt may run out of time
        asyncio.run(main())
    assert 2 <= stats.attempts <= 6


def test_the_reward_functions_spend_one_budget_per_batch(slow):
    servicer, address = slow
    rewards = VerifierRewards(address, timeout_s=1.0, retries=3, backoff_s=0.01)
    funcs = rewards.reward_funcs()
    spec = json.dumps({"kind": "format", "pattern": "1"})
    completions = ["1"]  # one batch: TRL passes the same list to each reward function, which share one call

    async def main():
        try:
            return await asyncio.gather(*(f(prompts=["p"], completions=completions, completion_ids=None,
                                            verification=[spec]) for f in funcs))
        finally:
            await rewards.aclose()

    fmt, correct = asyncio.run(main())
    assert fmt == [None] and correct == [None]
    # the sample not answered within the budget scores None (issue 36: per sample, not a lost batch), one call
    assert rewards.history[-1].unfinished == 1 and rewards.history[-1].attempts == 1 and servicer.calls == 1


# ---- the base-rate gate's client -------------------------------------------------------------------------

def test_the_gates_verify_through_the_client_with_the_given_credentials(flaky):  # noqa: F811
    _, address = flaky(failures=0)
    rows = [{"id": str(i), "completion": "1", "spec": {"kind": "format", "pattern": "1"}} for i in range(5)]
    results = verify_samples(address, rows, batch_size=2, parallel=2, credentials=Credentials())
    assert [r["id"] for r in results] == [str(i) for i in range(5)]
    assert {r["verdict"] for r in results} == {"PASSED"}
    with pytest.raises(GateError, match="TLS handshake failed"):  # the run's TLS settings are used, not ignored
        verify_samples(address, rows, credentials=Credentials(tls=True))
