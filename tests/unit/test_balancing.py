"""The client side of scale-out, without Docker: targets, the retry policy, retries against a flaky server.

A stand-in Verifier server answers UNAVAILABLE a set number of times before it
answers: the client must retry past gRPC's own retries, give up after its
bounded attempts, never retry a caller error, and the trainer's reward
functions must score a batch lost that way ``None``, never 0.
"""

from __future__ import annotations

import asyncio
import json

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from trainer.rewards import VerifierRewards
from verifier_service._generated import verifier_pb2 as pb
from verifier_service._generated import verifier_pb2_grpc as pb_grpc
from verifier_service.client import VerifierClient
from verifier_service.client.balancing import RetryPolicy, addresses, channel_target, service_config
from verifier_service.errors import RemoteError, VerifierError

FAST = RetryPolicy(attempts=5, initial_backoff_s=0.01, max_backoff_s=0.05)


class Flaky(pb_grpc.VerifierServicer):
    """Answers UNAVAILABLE (or ``code``) ``failures`` times, then PASSED for every request."""

    def __init__(self, failures: int, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE):
        self.failures, self.code, self.calls = failures, code, 0

    async def VerifyBatch(self, request, context):
        self.calls += 1
        if self.calls <= self.failures:
            await context.abort(self.code, f"flaky ({self.calls})")
        return pb.VerifyBatchResponse(results=[pb.VerifyResult(id=r.id, kind="format", verdict=pb.PASSED,
                                                               reward=1.0, format_score=1.0, correctness_score=1.0)
                                               for r in request.requests])

    async def VerifyStream(self, request_iterator, context):  # what the reward functions call (one sample each)
        async for request in request_iterator:  # each message as VerifyBatch answers it (a subclass's too)
            response = await self.VerifyBatch(request, context)
            response.batch_id = request.batch_id
            yield response


class FlakyServer:
    def __init__(self, servicer: Flaky):
        self.servicer = servicer
        self.loop = asyncio.new_event_loop()

    async def _start(self) -> int:
        self.server = grpc.aio.server()
        pb_grpc.add_VerifierServicer_to_server(self.servicer, self.server)
        checker = health.aio.HealthServicer()
        await checker.set("rlvr.verifier.v1.Verifier", health_pb2.HealthCheckResponse.SERVING)
        health_pb2_grpc.add_HealthServicer_to_server(checker, self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()
        return port


@pytest.fixture
def flaky():
    """Starts a flaky server on its own loop in a thread; yields a factory."""
    import threading

    started = []

    def make(failures: int, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE) -> tuple[Flaky, str]:
        server = FlakyServer(Flaky(failures, code))
        thread = threading.Thread(target=server.loop.run_forever, daemon=True)
        thread.start()
        port = asyncio.run_coroutine_threadsafe(server._start(), server.loop).result(10)
        started.append((server, thread))
        return server.servicer, f"127.0.0.1:{port}"

    yield make
    for server, thread in started:
        asyncio.run_coroutine_threadsafe(server.server.stop(0), server.loop).result(10)
        server.loop.call_soon_threadsafe(server.loop.stop)
        thread.join(5)


def batch(n: int = 3) -> list[pb.VerifyRequest]:
    return [pb.VerifyRequest(id=str(i), completion="1", spec=pb.VerificationSpec(kind="format", pattern="1"))
            for i in range(n)]


def test_targets():
    assert channel_target("10.0.0.5:50051") == ("10.0.0.5:50051", None)
    assert channel_target("dns:///verifier:50051") == ("dns:///verifier:50051", None)
    assert channel_target("10.0.0.5:1,10.0.0.6:2") == ("ipv4:10.0.0.5:1,10.0.0.6:2", None)
    assert channel_target(["10.0.0.5:1", " 10.0.0.6:2 "]) == ("ipv4:10.0.0.5:1,10.0.0.6:2", None)
    assert channel_target(["[::1]:1", "[::2]:2"]) == ("ipv6:[::1]:1,[::2]:2", None)
    target, authority = channel_target("localhost:7,127.0.0.2:8")
    assert target == "ipv4:127.0.0.1:7,127.0.0.2:8" and authority == "localhost:7"
    for bad in ("", " , ", "10.0.0.5,10.0.0.6", "a:1,dns:///b:2", "[::1]:1,10.0.0.1:2",
                "no-such-host.invalid:1,10.0.0.1:2"):
        with pytest.raises(VerifierError):
            channel_target(bad)
    assert addresses("ipv4:1.2.3.4:5,1.2.3.5:5") == ["ipv4:1.2.3.4:5,1.2.3.5:5"]
    config = json.loads(service_config())
    assert config["loadBalancingConfig"] == [{"round_robin": {}}]
    assert config["healthCheckConfig"] == {"serviceName": "rlvr.verifier.v1.Verifier"}


def test_retry_policy_is_bounded():
    policy = RetryPolicy(attempts=4, initial_backoff_s=0.5, max_backoff_s=2.0)
    for failures in range(1, 10):
        cap = min(2.0, 0.5 * 2 ** (failures - 1))
        assert all(cap / 2 <= policy.delay(failures) <= cap for _ in range(50))
    assert policy.retries(grpc.StatusCode.UNAVAILABLE, 3) and not policy.retries(grpc.StatusCode.UNAVAILABLE, 4)
    for code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.INTERNAL, grpc.StatusCode.DEADLINE_EXCEEDED,
                 grpc.StatusCode.PERMISSION_DENIED):
        assert not policy.retries(code, 1)


def test_the_client_retries_unavailable_past_grpcs_own_retries(flaky):
    servicer, address = flaky(failures=6)  # gRPC retries 3 times per call; the client calls again

    async def main():
        async with await VerifierClient.connect(address, retry=FAST) as client:
            return await client.verify_batch(batch(), timeout_s=10), client.retried

    results, retried = asyncio.run(main())
    assert [r.verdict for r in results] == [pb.PASSED] * 3
    assert servicer.calls == 7 and retried >= 1


def test_the_client_gives_up_after_its_attempts_and_never_retries_caller_errors(flaky):
    servicer, address = flaky(failures=1000)
    invalid, invalid_address = flaky(failures=1000, code=grpc.StatusCode.INVALID_ARGUMENT)

    async def main(target):
        client = await VerifierClient.connect(target, retry=FAST)
        try:
            await client.verify_batch(batch(), timeout_s=10)
        except RemoteError as exc:
            return exc
        finally:
            await client.close()

    exc = asyncio.run(main(address))
    assert exc.code == "UNAVAILABLE" and exc.retryable  # its attempts' last answer, not the 10 s deadline's
    assert 5 <= servicer.calls <= 15  # 5 attempts, each with gRPC's own up to 3
    exc = asyncio.run(main(invalid_address))
    assert exc.code == "INVALID_ARGUMENT" and invalid.calls == 1


def test_a_dead_replica_in_the_list_costs_nothing(flaky):
    servicer, address = flaky(failures=0)
    dead = "127.0.0.1:1"

    async def main():
        async with await VerifierClient.connect([dead, address], retry=FAST) as client:
            return [await client.verify_batch(batch(2), timeout_s=10) for _ in range(6)]

    assert all(r.verdict == pb.PASSED for results in asyncio.run(main()) for r in results)
    assert servicer.calls == 6


def test_rewards_score_a_batch_lost_to_unavailable_none_never_zero(flaky):
    _, address = flaky(failures=1000)
    rewards = VerifierRewards(address, retries=2, backoff_s=0.01, timeout_s=10)
    funcs = rewards.reward_funcs()
    spec = json.dumps({"kind": "format", "pattern": "1"})

    async def main():
        try:
            return await asyncio.gather(*(f(prompts=["p"] * 2, completions=["1", "2"], completion_ids=None,
                                            verification=[spec] * 2) for f in funcs))
        finally:
            await rewards.aclose()

    fmt, correct = asyncio.run(main())
    assert fmt == [None, None] and correct == [None, None]
    assert rewards.history[-1].lost and rewards.history[-1].attempts == 3
