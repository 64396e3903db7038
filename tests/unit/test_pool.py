"""The killable worker pool of the pure verifiers (no Docker needed)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap

from verifier_service.engine.pool import PurePool, json_then, json_value, message_problem
from verifier_service.kinds import get_kind
from verifier_service.spec import spec_from_json
from verifier_service.verdict import Verdict


def format_spec(pattern: str):
    return get_kind("format").validate(spec_from_json({"kind": "format", "pattern": pattern}))


def on_pool(size: int, scenario):
    """``scenario(pool)`` run on a started PurePool of ``size`` workers, closed after it."""
    async def run():
        pool = PurePool(size)
        await pool.start()
        try:
            return await scenario(pool)
        finally:
            await pool.close()

    return asyncio.run(run())


def test_a_hanging_check_times_out_and_the_pool_recovers():
    async def scenario(pool):
        spec = format_spec("(a+)+$")  # catastrophic backtracking on a near-miss
        hung = await pool.run("format", "a" * 40 + "!", spec, 1.0)
        fine = await pool.run("format", "aaa", spec, 1.0)
        chunk = await pool.run_many([("format", "a" * 40 + "!", spec, 1.0), ("format", "aa", spec, 1.0)])
        return hung, fine, chunk, pool.replaced

    hung, fine, chunk, replaced = on_pool(1, scenario)
    assert hung.verdict is Verdict.TIMEOUT
    assert fine.verdict is Verdict.PASSED
    # each check of a chunk has its own limit: only the hanging item is TIMEOUT, the rest goes on on a fresh worker
    assert [o.verdict for o in chunk] == [Verdict.TIMEOUT, Verdict.PASSED]
    assert replaced == 2  # one worker per hanging check: a timed-out check is never run again


def test_a_check_that_timed_out_is_not_run_again():
    """A timeout is a verdict: running the check again would double what a hostile answer costs the pool."""
    async def scenario(pool):
        spec = format_spec("(a+)+$")
        tasks = [("format", "a" * 40 + "!", spec, 1.0)] * 4 + [("format", "aa", spec, 1.0)]
        return await pool.run_many(tasks), pool.replaced

    outcomes, replaced = on_pool(2, scenario)
    assert [o.verdict for o in outcomes] == [Verdict.TIMEOUT] * 4 + [Verdict.PASSED]
    assert replaced == 4


def test_a_check_that_kills_its_worker_twice_is_a_verdict_not_infra_error(monkeypatch):
    """A worker that dies during a check is replaced and the check tried once more; an answer whose check kills
    the fresh worker too is FAILED (a reward), never INFRA_ERROR (no penalty: a way out a policy would learn)."""
    stream = PurePool._stream
    deaths = []

    def crashing(worker, tasks, encoded):
        text = tasks[0][1]  # the check the worker runs first
        if text == "crash" or (text == "once" and not deaths):
            deaths.append(worker.process.pid)
            worker.process.kill()
            worker.process.wait()
        return stream(worker, tasks, encoded)

    monkeypatch.setattr(PurePool, "_stream", staticmethod(crashing))

    async def scenario(pool):
        spec = format_spec("[a-z]+")
        crash = await pool.run("format", "crash", spec, 5.0)
        once = await pool.run("format", "once", spec, 5.0)  # a worker lost once: the retry decides
        chunk = await pool.run_many([("format", "crash", spec, 5.0), ("format", "fine", spec, 5.0)])
        return crash, once, chunk

    crash, once, chunk = on_pool(1, scenario)
    assert crash.verdict is Verdict.FAILED and "twice" in crash.detail
    assert once.verdict is Verdict.PASSED
    assert [o.verdict for o in chunk] == [Verdict.FAILED, Verdict.PASSED]
    assert len(set(deaths)) == len(deaths) >= 4  # every death was a fresh worker's


def test_a_script_without_a_main_guard_can_use_the_pool(tmp_path):
    # Workers are fresh interpreters (python -m), so the caller's __main__ is never re-imported.
    script = tmp_path / "embed.py"
    script.write_text(textwrap.dedent("""\
        import asyncio
        from verifier_service.kinds import get_kind
        from verifier_service.engine.pool import PurePool
        from verifier_service.spec import spec_from_json

        async def main():
            pool = PurePool(2)
            await pool.start()
            spec = get_kind("math").validate(spec_from_json({"kind": "math", "gold": "1/2"}))
            outcome = await pool.run("math", "so \\\\boxed{0.5}", spec, 10.0)
            await pool.close()
            print(outcome.verdict.value)

        asyncio.run(main())
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "PASSED"


def test_encoded_checks_give_the_same_result_messages_as_outcomes():
    """run_many(encoded=True) sends each result's message as bytes; they must equal the messages
    built from the Outcomes of the plain path, and a check that overruns is an Outcome (TIMEOUT) among them."""
    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service.config import ServiceConfig
    from verifier_service.engine.engine import Engine
    from verifier_service.engine.results import outcome_proto
    from verifier_service.spec import request_from_json

    def spec(**fields):  # validated with the engine's defaults, as the engine sends them
        return Engine(ServiceConfig(), None, None).prepare(request_from_json({"completion": "", "spec": fields})).spec

    schema = spec(kind="json_schema", scoring="fraction",
                  schema={"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}})
    fmt = spec(kind="format", pattern=r"<a>\d+</a>")
    math = spec(kind="math", gold="1/2")
    tasks = [("json_schema", '{"a": 1}', schema, 5.0), ("json_schema", '{"a": "x"}', schema, 5.0),
             ("json_schema", '{"a": ', schema, 5.0), ("format", "<a>12</a>", fmt, 5.0), ("format", "nope", fmt, 5.0),
             ("math", "so \\boxed{0.5}", math, 10.0), ("math", "so \\boxed{2}", math, 10.0)]

    async def scenario(pool):
        plain = await pool.run_many(tasks)
        encoded = await pool.run_many(tasks, encoded=True)
        slow = spec(kind="format", pattern="(a+)+$")
        hung = await pool.run_many([("format", "a" * 40 + "!", slow, 1.0), ("format", "aa", slow, 1.0)],
                                   encoded=True)
        return plain, encoded, hung

    plain, encoded, hung = on_pool(2, scenario)
    assert all(isinstance(b, bytes) for b in encoded)
    want = [outcome_proto(kind, s, o) for (kind, _, s, _), o in zip(tasks, plain, strict=True)]
    assert [pb.VerifyResult.FromString(b) for b in encoded] == want
    assert [pb.Verdict.Name(w.verdict) for w in want] == ["PASSED", "FAILED", "MALFORMED", "PASSED", "MALFORMED",
                                                          "PASSED", "FAILED"]
    assert hung[0].verdict is Verdict.TIMEOUT  # an overrun comes back as an Outcome, the rest as bytes
    assert pb.VerifyResult.FromString(hung[1]).verdict == pb.PASSED


def test_json_value_counts_every_value_and_says_what_is_wrong():
    # the top object, key a, its list, 1, 2, the inner object, key b, null: 8 values
    assert json_value(b'{"a": [1, 2, {"b": null}]}', 8) == ("ok", {"a": [1, 2, {"b": None}]})
    assert json_value(b'{"a": [1, 2, {"b": null}]}', 7) == ("limit", None)
    assert json_value(b"[" + b"0," * 99 + b"0]", 100) == ("limit", None)
    assert json_value(b"[" + b"0," * 98 + b"0]", 100)[0] == "ok"
    status, why = json_value(b"{oops", 10)
    assert status == "invalid" and why.startswith("the request body is not valid JSON")
    assert json_value(b"[" * 100_000 + b"]" * 100_000, 10) == ("invalid", "the request body is nested too deeply")


def test_a_body_is_parsed_in_a_worker_and_only_a_bounded_value_comes_back():
    async def scenario(pool):
        text = b'{"query": ["' + b"x" * (1 << 20) + b'"]}'
        parsed = await pool.parse_json(text, 10, 30.0, tenant="a")
        many = await pool.parse_json(b"[" + b"1," * 500_000 + b"1]", 1000, 30.0, tenant="a")
        # a body the worker cannot parse in time: refused, and the worker replaced
        slow = await pool.parse_json(b"[" + b"1," * 4_000_000 + b"1]", 10**8, 0.01, tenant="a")
        after = await pool.parse_json([b'{"a": [1', b", 2", b"]}"], 10, 30.0)  # (a body's pieces, joined there)
        return parsed, many, slow, after, pool.replaced

    parsed, many, slow, after, replaced = on_pool(1, scenario)
    assert parsed == ("ok", {"query": ["x" * (1 << 20)]})
    assert many == ("limit", None)
    assert slow == ("timeout", None) and replaced == 1
    assert after == ("ok", {"a": [1, 2]})


def test_a_door_makes_requests_where_the_body_is_parsed_and_an_oversize_completion_comes_back_as_its_size():
    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service.doors.http import openrlhf
    from verifier_service.wire import OVERSIZE, marked_size, oversize_mark

    body = {"query": ["P ok", "P " + "é" * 3000], "prompts": ["P", "P"], "labels": [{"kind": "math", "gold": "1"}] * 2}
    raw = json.dumps(body).encode()
    then = (openrlhf.encoded_requests_of, ("", ("<eos>",), 4096, OVERSIZE))

    async def scenario(pool):
        return (await pool.parse_json(raw, 100, 30.0, then=then),
                await pool.parse_json(json.dumps({**body, "labels": []}).encode(), 100, 30.0, then=then),
                await pool.parse_json(b"[1]", 100, 30.0, then=then), pool.replaced)

    made, refused, broken, replaced = on_pool(1, scenario)
    assert made == json_then(raw, 100, then)  # (the same step inline, for a small body)
    assert made[0] == "ok" and len(made[1][1]) < 200  # the 6001 bytes never come back
    first, second = (pb.VerifyRequest.FromString(item) for item in made[1])
    assert first.completion == " ok" and first.spec.gold == "1"  # (the query after its prompt)
    assert second.completion == oversize_mark(6001) and marked_size(second.completion) == 6001  # (" " + 3000 x 2)
    assert refused[0] == "refused" and refused[1][0] == 422 and "as long as query" in refused[1][1]
    assert broken[0] == "refused" and broken[1][0] == 422  # (not an object)
    assert replaced == 0
    # a text that looks like a mark is the model's text unless it carries this process's own random part
    assert marked_size(oversize_mark(6000, "\U0010fffe oversize completion " + "0" * 32)) is None
    assert marked_size(OVERSIZE + " 12x") is None and marked_size(OVERSIZE + "12") is None


def test_a_message_is_checked_in_a_worker_counting_every_value():
    from verifier_service._generated import verifier_pb2 as pb

    request = pb.VerifyRequest(id="1", completion="x", spec=pb.VerificationSpec(
        kind="stdio", language="python", cases=[pb.TestCase(stdin="1", expected_stdout="2")] * 3))
    raw = pb.VerifyBatchRequest(requests=[request]).SerializeToString()
    # requests (1 item), id, completion, spec, kind, cases (3 items) with 2 fields each, language: 15 values
    assert message_problem("VerifyBatchRequest", raw, 15) == ("ok", None)
    assert message_problem("VerifyBatchRequest", raw, 14) == ("limit", None)
    status, why = message_problem("VerifyBatchRequest", b"\x0a\xff\xff", 15)
    assert status == "invalid" and why.startswith("DecodeError")

    async def scenario(pool):
        return (await pool.check_message("VerifyBatchRequest", raw, 15, 30.0),
                await pool.check_message("VerifyBatchRequest", raw, 14, 30.0))

    assert on_pool(1, scenario) == (("ok", None), ("limit", None))
