"""Untrusted output never breaks a batch; a spec that checks nothing is refused (issue 18, items 1 and 2).

Through the real service (Docker): what is wrong with one completion (over the
size limit, not UTF-8 on the wire, NUL bytes, nested past what a checker can
walk) is that sample's MALFORMED verdict, scored below a well-formed wrong
answer, inside a batch whose other samples get their own verdicts; through
VerifyBatch, VerifyStream and the trainer's reward functions. Only the caller's
mistakes are INVALID_ARGUMENT, naming the request's index and id. A suite that
could pass without checking anything is refused, the same rule in every code
kind, and a test that passes without running an assert is not a pass.
"""

from __future__ import annotations

import json

import grpc
import pytest

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.spec import request_from_json, result_to_json

from support.sandboxes import stray_sandboxes
from support.wait import wait_for

pytestmark = pytest.mark.docker

CODE_SPEC = {"kind": "python_assert", "extract": "fenced_code", "tests": "assert add(1, 2) == 3\nassert add(0, 5) == 5"}
RIGHT = "```python\ndef add(a, b):\n    return a + b\n```"
WRONG = "```python\ndef add(a, b):\n    return a - b\n```"
VERIFY_BATCH = "/rlvr.verifier.v1.Verifier/VerifyBatch"
VERIFY_STREAM = "/rlvr.verifier.v1.Verifier/VerifyStream"


def req(completion: str, spec: dict, id: str) -> pb.VerifyRequest:
    return request_from_json({"id": id, "completion": completion, "spec": spec})


def long_completion(size: int) -> str:
    """A correct answer followed by a long chain of thought: over the limit, whatever it holds."""
    return RIGHT + "\n" + "x" * (size - len(RIGHT) - 1)


def batch(service, requests: list[pb.VerifyRequest]) -> list[dict]:
    response = service.stub.VerifyBatch(pb.VerifyBatchRequest(requests=requests), timeout=120)
    return [result_to_json(r) for r in response.results]


# ---- item 1: what is wrong with one completion is its verdict ------------------------------------------------

def test_an_over_limit_completion_is_its_own_verdict_in_a_batch_of_honest_ones(service):
    limit = service.app.config.max_completion_bytes
    long = long_completion(300_017)
    completions = [RIGHT, WRONG, RIGHT, WRONG, long, RIGHT, WRONG, RIGHT]
    results = batch(service, [req(c, CODE_SPEC, f"s{i}") for i, c in enumerate(completions)])
    assert [r["id"] for r in results] == [f"s{i}" for i in range(8)]
    over = results[4]
    assert over["verdict"] == "MALFORMED", over
    assert (over["reward"], over["format_score"], over["correctness_score"]) == (0.0, 0.0, 0.0)
    assert over["detail"] == f"completion is 300017 bytes; the limit is {limit} (max_completion_bytes): not checked"
    for i, r in enumerate(results):
        if i != 4:
            expected = ("PASSED", 1.0) if completions[i] == RIGHT else ("FAILED", 0.2)
            assert (r["verdict"], r["reward"]) == expected, r
    # scored below a well-formed wrong answer
    assert over["reward"] < results[1]["reward"]
    # exactly at the limit is still checked
    at_limit = RIGHT + "\n#" + "x" * (limit - len(RIGHT) - 2)
    assert len(at_limit.encode()) == limit
    assert batch(service, [req(at_limit, CODE_SPEC, "edge")])[0]["verdict"] == "PASSED"


def test_nul_bytes_are_malformed_in_every_kind(service):
    specs = [CODE_SPEC, {"kind": "json_schema", "schema": {"type": "object"}},
             {"kind": "math", "gold": "4"}, {"kind": "format", "pattern": r"\d+"}]
    honest = [RIGHT, '{"a": 1}', "\\boxed{4}", "42"]
    requests = []
    for i, (spec, text) in enumerate(zip(specs, honest, strict=True)):
        requests += [req(text, spec, f"ok{i}"), req(text[:2] + "\0" + text[2:], spec, f"nul{i}")]
    results = {r["id"]: r for r in batch(service, requests)}
    for i in range(len(specs)):
        assert results[f"ok{i}"]["verdict"] == "PASSED", results[f"ok{i}"]
        nul = results[f"nul{i}"]
        assert (nul["verdict"], nul["reward"]) == ("MALFORMED", 0.0), nul
        assert nul["detail"] == "completion holds a NUL byte (at character 2): not checked"


def test_a_completion_that_is_not_utf8_on_the_wire_is_malformed_not_a_failed_batch(service):
    raw = service.channel.unary_unary(VERIFY_BATCH, request_serializer=None, response_deserializer=None)
    marker = "ZZZZZZZZ"
    message = pb.VerifyBatchRequest(requests=[req(RIGHT, CODE_SPEC, "fine"), req(marker, CODE_SPEC, "bad-bytes"),
                                              req(WRONG, CODE_SPEC, "wrong")])
    data = message.SerializeToString().replace(marker.encode(), b"\xff\xfe\xc0\x80\xed\xa0\x80\xff")
    response = pb.VerifyBatchResponse.FromString(raw(data, timeout=60))
    results = [result_to_json(r) for r in response.results]
    assert [(r["id"], r["verdict"], r["reward"]) for r in results] == [
        ("fine", "PASSED", 1.0), ("bad-bytes", "MALFORMED", 0.0), ("wrong", "FAILED", 0.2)]
    assert results[1]["detail"] == "completion is not valid UTF-8: not checked"
    # bad bytes in what the caller writes (an id) stay the caller's error
    data = message.SerializeToString().replace(b"bad-bytes", b"bad\xff\xfeid")
    with pytest.raises(grpc.RpcError) as info:
        raw(data, timeout=60)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_a_python_string_with_lone_surrogates_is_sent_not_refused(service):
    request = req("```python\ndef add(a, b):\n    return a + b  # \udcff\n```", CODE_SPEC, "surrogate")
    assert "\ufffd" in request.completion
    assert batch(service, [request])[0]["verdict"] == "PASSED"


def test_a_lone_surrogate_in_a_json_spec_field_on_the_wire_is_invalid_argument(service):
    """A JSON-valued spec field is JSON text on the wire, so a \\udcff escape there arrives; once parsed it is not
    Unicode text: the caller's error naming the request and the field, not a failure deeper in."""
    schema = req('{"a": 1}', {"kind": "json_schema", "schema": {"type": "object"}}, "schema")
    schema.spec.schema_json = '{"type": "object", "properties": {"a": {"enum": ["\\udcff"]}}}'
    with pytest.raises(grpc.RpcError) as info:
        batch(service, [req(RIGHT, CODE_SPEC, "fine"), schema])
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "'schema'" in info.value.details() and "spec.schema holds a lone surrogate" in info.value.details()


def test_absurd_nesting_is_a_verdict_not_an_infra_error(service):
    deep = "[" * 200_000 + "]" * 200_000
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    requests = [req(deep, {"kind": "json_schema", "schema": {"type": "array"}}, "schema"),
                req(deep, {"kind": "tool_call", "tools": tools, "expected_name": "f"}, "tool"),
                req('{"name": "f", "arguments": ' + "{\"a\": " * 50_000 + "1" + "}" * 50_000 + "}",
                    {"kind": "tool_call", "tools": tools, "expected_name": "f"}, "tool-args"),
                req("\\boxed{" + "(" * 20_000 + "1" + ")" * 20_000 + "}", {"kind": "math", "gold": "1"}, "math"),
                req(RIGHT, CODE_SPEC, "honest")]
    results = {r["id"]: r for r in batch(service, requests)}
    assert results["honest"]["verdict"] == "PASSED"
    for name in ("schema", "tool", "tool-args", "math"):
        r = results[name]
        assert r["verdict"] != "INFRA_ERROR" and r["reward"] is not None and r["reward"] < 1.0, r


def test_caller_errors_name_the_index_and_the_id(service):
    requests = [req(RIGHT, CODE_SPEC, "fine"), req(long_completion(300_000), CODE_SPEC, "long"),
                req(RIGHT, {**CODE_SPEC, "scoring": "vibes"}, "the-bad-spec")]
    with pytest.raises(grpc.RpcError) as info:
        service.stub.VerifyBatch(pb.VerifyBatchRequest(requests=requests), timeout=60)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details().startswith("request 2 (id 'the-bad-spec'): spec.scoring 'vibes' is not valid")


def test_verify_stream_gives_the_over_limit_completion_its_verdict(service):
    def batches():
        yield pb.VerifyBatchRequest(batch_id="b0", requests=[req(RIGHT, CODE_SPEC, "a"),
                                                             req(long_completion(300_017), CODE_SPEC, "long")])
        yield pb.VerifyBatchRequest(batch_id="b1", requests=[req(WRONG, CODE_SPEC, "c")])

    responses = {r.batch_id: [result_to_json(x) for x in r.results]
                 for r in service.stub.VerifyStream(batches(), timeout=120)}
    assert [(r["id"], r["verdict"], r["reward"]) for r in responses["b0"]] == [
        ("a", "PASSED", 1.0), ("long", "MALFORMED", 0.0)]
    assert [(r["id"], r["verdict"]) for r in responses["b1"]] == [("c", "FAILED")]


def test_a_request_the_stream_reader_cannot_read_ends_the_stream_and_its_work(service):
    """The reader's error reaches the loop waiting for results: the RPC ends with INVALID_ARGUMENT, the
    batches already started are cancelled and their sandboxes removed (the loop does not wait for ever)."""
    stream = service.channel.stream_stream(VERIFY_STREAM, request_serializer=None, response_deserializer=None)
    slow = "```python\nimport time\ntime.sleep(30)\ndef add(a, b):\n    return a + b\n```"

    def messages():
        yield pb.VerifyBatchRequest(batch_id="slow", requests=[req(slow, {**CODE_SPEC, "timeout_s": 60}, "s")]
                                    ).SerializeToString()
        yield b"\xff\xff\xff\xff not a message"

    with pytest.raises(grpc.RpcError) as info:
        list(stream(messages(), timeout=60))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not a valid message" in info.value.details()
    assert wait_for(lambda: service.app.verifier.admission.pending == 0, 15)
    assert wait_for(lambda: service.app.sandbox.running == 0 and not stray_sandboxes("docker"), 15, 0.2)


def test_reward_functions_score_the_long_completion_and_the_rest(service):
    from trainer.rewards import VerifierRewards

    from support.trl_calls import Recorder, call_like_trl

    rewards = VerifierRewards(service.address)
    spec = json.dumps(CODE_SPEC)
    completions = [RIGHT, WRONG, RIGHT, long_completion(300_017), WRONG, RIGHT, RIGHT, WRONG]
    recorder = Recorder()
    fmt, correct = call_like_trl(rewards.reward_funcs(), ["p"] * 8, completions, {"verification": [spec] * 8},
                                 recorder)
    assert fmt == [1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    assert correct == [1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0]
    assert recorder.extra["verdict"][3] == "MALFORMED"
    assert rewards.history[-1].lost is False and rewards.history[-1].attempts == 1


# ---- item 2: a suite that checks nothing is refused; a pass without an assert is no pass ---------------------

def refused(service, completion: str, spec: dict) -> str:
    with pytest.raises(grpc.RpcError) as info:
        service.stub.Verify(req(completion, spec, "r"), timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    return info.value.details()


HUMANEVAL_CODE = "def inc(x):\n    return x - 1\n"  # wrong


def test_a_check_that_never_asserts_is_refused(service):
    spec = {"kind": "python_assert", "entry_point": "inc", "tests": "def check(candidate):\n    candidate(1)\n"}
    assert refused(service, HUMANEVAL_CODE, spec) == (
        "request 0 (id 'r'): spec.tests holds no assert statement: the tests could pass without checking anything "
        "(write the checks as assert statements)")
    spec["tests"] = "def check(candidate):\n    candidate(1)\n    if candidate(2) != 3:\n        raise ValueError\n"
    assert "holds no assert statement" in refused(service, HUMANEVAL_CODE, spec)
    spec["tests"] = "assert inc(1) == 2\n"
    assert "defines no check function" in refused(service, HUMANEVAL_CODE, spec)


def test_a_test_that_runs_no_assert_is_not_passed(service):
    spec = {"kind": "python_assert", "entry_point": "inc",
            "tests": "CASES = []\ndef check(candidate):\n    for x, y in CASES:\n        assert candidate(x) == y\n"}
    r = result_to_json(service.stub.Verify(req(HUMANEVAL_CODE, spec, "vacuous"), timeout=60))
    assert (r["verdict"], r["correctness_score"]) == ("FAILED", 0.0), r
    assert r["tests"][0]["detail"] == "no assert ran in this test: it checked nothing"
    spec["tests"] = spec["tests"].replace("CASES = []", "CASES = [(1, 2)]")
    assert service.stub.Verify(req("def inc(x):\n    return x + 1\n", spec, "real"), timeout=60).verdict == pb.PASSED
    top = {"kind": "python_assert", "tests": "for x in []:\n    assert inc(x) == x + 1\nassert inc(1) == 2\n"}
    r = result_to_json(service.stub.Verify(req("def inc(x):\n    return x + 1\n", top, "top"), timeout=60))
    assert [t["verdict"] for t in r["tests"]] == ["FAILED", "PASSED"] and r["verdict"] == "PARTIAL", r


def test_a_pytest_suite_with_nothing_to_collect_or_assert_is_refused(service):
    no_tests = {"kind": "pytest",
                "files": {"test_x.py": "from solution import inc\n\ndef helper():\n    assert inc(1)\n"}}
    assert "holds no test for pytest to collect" in refused(service, HUMANEVAL_CODE, no_tests)
    no_assert = {"kind": "pytest", "files": {"test_x.py": "from solution import inc\n\ndef test_inc():\n    inc(1)\n"}}
    assert "holds no assert statement (nor pytest.raises, nor a unittest assert method)" in refused(
        service, HUMANEVAL_CODE, no_assert)
    broken = {"kind": "pytest", "files": {"test_x.py": "def test_inc(:\n"}}
    assert "spec.files['test_x.py'] is not valid Python" in refused(service, HUMANEVAL_CODE, broken)


def test_a_pytest_run_that_asserts_nothing_is_not_passed(service):
    files = {"test_x.py": "from solution import inc\nCASES = []\n\ndef test_inc():\n    inc(1)\n"
                          "    for x, y in CASES:\n        assert inc(x) == y\n"}
    r = result_to_json(service.stub.Verify(req(HUMANEVAL_CODE, {"kind": "pytest", "files": files}, "p"), timeout=90))
    assert (r["verdict"], r["correctness_score"]) == ("FAILED", 0.0), r
    assert r["detail"] == "every test passed, but no assert ran: the suite checked nothing"
    files = {"test_x.py": files["test_x.py"].replace("CASES = []", "CASES = [(1, 2)]")}
    r = result_to_json(service.stub.Verify(req("def inc(x):\n    return x + 1\n", {"kind": "pytest", "files": files},
                                               "p2"), timeout=90))
    assert r["verdict"] == "PASSED", r


def test_unittest_methods_and_pytest_raises_count_as_checks(service):
    good, bad = "def inc(x):\n    return x + 1\n", HUMANEVAL_CODE
    spec = {"kind": "python_assert", "entry_point": "inc",
            "tests": "import unittest\n\ndef check(candidate):\n    tc = unittest.TestCase()\n"
                     "    tc.assertEqual(candidate(1), 2)\n"}
    assert service.stub.Verify(req(good, spec, "u"), timeout=60).verdict == pb.PASSED
    assert service.stub.Verify(req(bad, spec, "u"), timeout=60).verdict == pb.FAILED
    files = {"test_x.py": "import unittest\n\nimport pytest\n\nfrom solution import inc\n\n\n"
                          "class TestInc(unittest.TestCase):\n    def test_one(self):\n"
                          "        self.assertEqual(inc(1), 2)\n\n\n"
                          "def test_raises():\n    with pytest.raises(TypeError):\n        inc('a')\n"}
    r = result_to_json(service.stub.Verify(req(good, {"kind": "pytest", "files": files}, "p"), timeout=90))
    assert r["verdict"] == "PASSED", r
    r = result_to_json(service.stub.Verify(req(bad, {"kind": "pytest", "files": files}, "p"), timeout=90))
    assert r["verdict"] == "PARTIAL", r


@pytest.mark.docker
def test_a_gold_that_is_slow_to_parse_is_refused_without_stalling_other_calls(make_service):
    """A math gold of nested parentheses takes seconds to parse (80 levels: ~20 s). It is parsed once per spec in
    a pure worker with a limit (``spec_check_timeout_s``), never on the event loop: another call is answered while
    it is being checked, and the request is refused (INVALID_ARGUMENT naming the limit), not scored. A gold that
    parses to a lone number still gets its own refusal; a good gold passes as before."""
    import threading

    svc = make_service(spec_check_timeout_s=5.0)  # (its parse needs ~20 s; the other call ~10 ms: a wide margin)
    hostile = {"kind": "math", "gold": "(" * 80 + "x" + ")" * 80}
    outcome: dict = {}

    def send_hostile() -> None:
        try:
            svc.stub.VerifyBatch(pb.VerifyBatchRequest(requests=[req("\\boxed{1}", hostile, "h")]), timeout=60)
        except grpc.RpcError as exc:
            outcome["code"], outcome["details"] = exc.code(), exc.details()
        outcome["done"] = True

    thread = threading.Thread(target=send_hostile)
    thread.start()
    try:
        pool = svc.app.verifier.engine.pure_pool
        assert wait_for(lambda: pool._idle.qsize() < pool.size, 10, 0.005), "the hostile gold never reached a worker"
        other = svc.verify("\\boxed{2}", {"kind": "math", "gold": "2"}, timeout=30)
        answered_first = "done" not in outcome
    finally:
        thread.join(60)
    assert other["verdict"] == "PASSED"
    assert answered_first, "the other call waited for the hostile gold's parse"
    assert outcome["code"] == grpc.StatusCode.INVALID_ARGUMENT, outcome
    assert outcome["details"].startswith("request 0 (id 'h'): took over 5s to check (spec_check_timeout_s)")
    with pytest.raises(grpc.RpcError) as info:
        svc.verify("\\boxed{4}", {"kind": "math", "gold": "10*x**7 + 4*x**3/5 + C + \\text{)"}, id="l")
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "lone number 4" in info.value.details()
    assert svc.verify("\\boxed{x^2+1}", {"kind": "math", "gold": "x**2 + 1"})["verdict"] == "PASSED"
