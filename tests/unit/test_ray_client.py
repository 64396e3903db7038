"""The client side of the fleet on Ray without a cluster: the ``ray:`` target, the stub's error mapping, the one
re-send of INFRA_ERROR samples, session-id routing, pickling. A fake router stands in for Ray (the real one is
tests/system/test_ray_fleet.py's)."""

from __future__ import annotations

import asyncio
import pickle

import grpc
import pytest

import verifier_service.ray_wire as ray_wire
from verifier_service._generated import verifier_pb2 as pb
from verifier_service.client import RemoteInvalidSpec, RemoteUnavailable, VerifierClient
from verifier_service.client.balancing import RetryPolicy
from verifier_service.client.ray_fleet import RAY_RETRY, RayRouter, RayStub, app_of
from verifier_service.ray_wire import Reply


class FakeRouter:
    """Answers each call from a script of Replies (or a function of the request), recording what it was sent."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.sent: list[tuple[str, bytes]] = []
        self.app = "fake"

    async def call(self, method, payload, metadata=(), timeout_s=None):
        self.sent.append((method, payload))
        answer = self.answers.pop(0)
        return answer(payload) if callable(answer) else answer


def results(*verdicts) -> bytes:
    out = pb.VerifyBatchResponse()
    for i, verdict in enumerate(verdicts):
        out.results.add(id=str(i), verdict=verdict)
    return out.SerializeToString()


def client_on(router, retry=RetryPolicy(attempts=3, initial_backoff_s=0.01, max_backoff_s=0.02)) -> VerifierClient:
    return VerifierClient(None, "ray:fake", retry=retry, stub=RayStub(router))


def requests(n: int) -> list[pb.VerifyRequest]:
    return [pb.VerifyRequest(id=str(i), completion=f"c{i}") for i in range(n)]


def test_the_ray_target_makes_a_client_on_ray_with_its_own_retry_policy():
    client = VerifierClient.open("ray:")
    assert isinstance(client._stub, RayStub)
    assert client._stub.router.app == ray_wire.APP_NAME and client.retry == RAY_RETRY
    assert app_of("ray:team-fleet") == "team-fleet"
    custom = RetryPolicy(attempts=2)
    assert VerifierClient.open("ray:x", retry=custom).retry == custom


def test_a_lost_replica_is_retried_and_a_refusal_is_typed():
    lost = Reply("UNAVAILABLE", "the replica was lost (ActorDiedError)")
    router = FakeRouter(lost, lost, Reply("OK", payload=results(pb.PASSED, pb.FAILED)))
    client = client_on(router)
    got = asyncio.run(client.verify_batch(requests(2), timeout_s=30))
    assert [r.verdict for r in got] == [pb.PASSED, pb.FAILED]
    assert client.retried == 2 and len(router.sent) == 3

    client = client_on(FakeRouter(lost, lost, lost))
    with pytest.raises(RemoteUnavailable):
        asyncio.run(client.verify_batch(requests(2), timeout_s=30))

    client = client_on(FakeRouter(Reply("INVALID_ARGUMENT", "request 0 (id '0'): tests assert nothing")))
    with pytest.raises(RemoteInvalidSpec, match="request 0"):
        asyncio.run(client.verify_batch(requests(1), timeout_s=30))


def test_infra_errors_go_once_more_and_only_those():
    def second(payload: bytes) -> Reply:
        sent = pb.VerifyBatchRequest.FromString(payload)
        assert [r.id for r in sent.requests] == ["1", "3"]  # only the samples the sandbox could not judge
        return Reply("OK", payload=results(pb.FAILED, pb.INFRA_ERROR))

    router = FakeRouter(Reply("OK", payload=results(pb.PASSED, pb.INFRA_ERROR, pb.PASSED, pb.INFRA_ERROR)), second)
    got = asyncio.run(client_on(router).verify_batch(requests(4), timeout_s=30))
    assert [r.verdict for r in got] == [pb.PASSED, pb.FAILED, pb.PASSED, pb.INFRA_ERROR]
    assert len(router.sent) == 2  # once more, not a loop

    router = FakeRouter(Reply("OK", payload=results(pb.INFRA_ERROR)), Reply("UNAVAILABLE", "lost"))
    got = asyncio.run(client_on(router).verify_batch(requests(1), timeout_s=30))
    assert [r.verdict for r in got] == [pb.INFRA_ERROR]  # the first answer stands: None for the trainer, never 0


def test_session_ids_name_their_host():
    routed = ray_wire.routed_id(ray_wire.host_name(3), "abc~def")
    assert ray_wire.split_id(routed) == ("rlvr-session-host-3", "abc~def")
    for forged in ("abc", "rlvr-session-host-x~1", "other~1", ""):
        assert ray_wire.split_id(forged) is None

    router = RayRouter("fake")
    reply = asyncio.run(router.call("ExecuteCell", pb.ExecuteCellRequest(session_id="nope").SerializeToString()))
    assert reply.code == grpc.StatusCode.NOT_FOUND.name and "not an id it gave out" in reply.details


def test_a_client_on_ray_and_its_router_pickle():
    client = VerifierClient.open("ray:team-fleet", retry=RetryPolicy(attempts=7))
    again = pickle.loads(pickle.dumps(client))
    assert isinstance(again._stub, RayStub)
    assert again._stub.router.app == "team-fleet" and again.retry == RetryPolicy(attempts=7)
    assert again.credentials == client.credentials
    router = pickle.loads(pickle.dumps(RayRouter("x")))
    assert router.app == "x" and router._handle is None
