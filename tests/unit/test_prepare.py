"""Preparing a batch (``Verifier._prepare``, ``Engine.prepare``): its steps on the event loop and its keys."""

import asyncio

from verifier_service.config import ServiceConfig
from verifier_service.engine.engine import Engine
from verifier_service.service import verifier as verifier_module
from verifier_service.service.verifier import Verifier
from verifier_service.spec import request_from_json
from verifier_service.tenancy.auth import LOCAL_TENANT

SCHEMA = {"type": "object", "properties": {"a": {"type": "string", "description": "d" * 50_000}}}


def _request(i: int, schema=None, completion: str = "{}"):
    return request_from_json({"id": str(i), "completion": completion,
                              "spec": {"kind": "json_schema", "schema": schema or SCHEMA}})


def test_a_batch_is_prepared_in_steps_that_let_other_calls_run(monkeypatch):
    monkeypatch.setattr(verifier_module, "PREPARE_STEP_S", 0.0)  # (each request's step past the bound: one each)
    verifier = Verifier(Engine(ServiceConfig(), None, None))
    requests = [_request(i) for i in range(50)]

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        before = ticks
        prepared, labels = await verifier._prepare(requests, LOCAL_TENANT)
        task.cancel()
        return prepared, labels, ticks - before

    prepared, labels, ticks = asyncio.run(main())
    assert [item.id for item in prepared] == [str(i) for i in range(50)] and labels == [""] * 50
    assert ticks >= 49  # the other task ran between the requests, not after the whole batch


def test_equal_specs_share_one_key_and_different_ones_do_not():
    engine = Engine(ServiceConfig(), None, None)
    other = {"type": "object", "properties": {"a": {"type": "string", "description": "e" * 50_000}}}
    a, b, c, d = (engine.prepare(r) for r in (_request(0), _request(1), _request(2, other), _request(3)))
    assert a.key == b.key == d.key and a.key != c.key
    assert a.spec_key is b.spec_key is d.spec_key  # one copy of the spec's bytes for the batch ...
    assert any(part is a.spec_key for part in b.key)  # ... that the keys hold by reference
    assert engine.prepare(_request(4, completion="[]")).key != a.key  # the completion is in the key
    assert a.spec is d.spec and c.spec is not a.spec
    request = _request(5)  # the bytes admission counts: about what the request's message holds
    assert abs(engine.prepare(request).size - request.ByteSize()) < 20


def test_a_verdict_decided_before_any_check_has_a_key_of_its_own():
    engine = Engine(ServiceConfig(max_completion_bytes=100), None, None)
    long = engine.prepare(_request(0, completion="x" * 101))
    assert long.verdict is not None and long.completion == ""
    nul = engine.prepare(_request(1, completion="\0" + long.verdict.detail[:90]))  # (a verdict of its own)
    assert nul.verdict is not None and nul.key != long.key
    assert engine.prepare(_request(3, completion="z")).key != long.key
    assert engine.prepare(_request(2, completion="y" * 101)).key == long.key  # the same verdict: one check
