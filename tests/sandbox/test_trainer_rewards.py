"""The remote reward functions, called the way TRL 1.16's GRPOTrainer calls them, against a real service."""

from __future__ import annotations

import json
import threading
import time

import pytest

from trainer.errors import RewardError
from trainer.rewards import VerifierRewards, completion_text
from verifier_service._generated import verifier_pb2 as pb

from support.trl_calls import Recorder, call_like_trl

pytestmark = pytest.mark.docker

SPEC = json.dumps({"kind": "python_io", "extract": "fenced_code", "entry_point": "sq",
                   "cases": [{"args": [3], "expected": 9}, {"args": [-2], "expected": 4}]})
GOOD = "```python\ndef sq(x):\n    return x * x\n```"
WRONG = "```python\ndef sq(x):\n    return x + x\n```"
MALFORMED = "def sq(x): return x * x"


def count_batches(service):
    """Counts the batches the service admits (one per VerifyBatch RPC, one per message of a VerifyStream)."""
    admission = service.app.verifier.admission
    original = admission.acquire
    calls = []

    def counting(n, *args):
        calls.append(n)
        return original(n, *args)

    admission.acquire = counting
    return calls, lambda: setattr(admission, "acquire", original)


def test_format_and_correctness_share_one_rpc(service):
    rewards = VerifierRewards(service.address)
    funcs = rewards.reward_funcs()
    assert [f.__name__ for f in funcs] == ["verifier_format", "verifier_correctness"]
    calls, restore = count_batches(service)
    recorder = Recorder()
    try:
        completions = [GOOD, WRONG, MALFORMED, GOOD]
        fmt, correct = call_like_trl(funcs, ["p"] * 4, completions, {"verification": [SPEC] * 4}, recorder)
    finally:
        restore()
    # one VerifyStream for both functions, each distinct sample its own message (GOOD, twice, is sent once)
    assert calls == [1, 1, 1]
    assert fmt == [1.0, 1.0, 0.0, 1.0]
    assert correct == [1.0, 0.0, 0.0, 1.0]
    assert recorder.metrics["verifier/infra_errors"] == [0.0]
    assert recorder.metrics["verifier/verdict/PASSED"] == [0.5]
    assert recorder.metrics["verifier/verdict/MALFORMED"] == [0.25]
    assert recorder.metrics["verifier/test_pass_rate"][0] == pytest.approx(4 / 6)
    assert recorder.extra["verdict"] == ["PASSED", "FAILED", "MALFORMED", "PASSED"]


def test_conversational_completions_and_mixed_kinds(service):
    rewards = VerifierRewards(service.address)
    math_spec = json.dumps({"kind": "math", "gold": "12"})
    completions = [[{"role": "assistant", "content": GOOD}],
                   [{"role": "assistant", "content": [{"type": "text", "text": "so \\boxed{12}"}]}],
                   [{"role": "assistant", "content": "I think 13"}]]
    prompts = [[{"role": "user", "content": "q"}]] * 3
    fmt, correct = call_like_trl(rewards.reward_funcs(), prompts, completions,
                                 {"verification": [SPEC, math_spec, math_spec]}, Recorder())
    assert correct == [1.0, 1.0, 0.0] and fmt == [1.0, 1.0, 0.0]  # "I think 13" marks no answer: no format


def test_specs_as_mappings_and_a_single_component(service):
    rewards = VerifierRewards(service.address, spec_column="check")
    (correct,) = call_like_trl(rewards.reward_funcs(["correctness"]), ["p"], [GOOD],
                               {"check": [json.loads(SPEC)]}, Recorder())
    assert correct == [1.0]


def test_service_dying_mid_batch_scores_none_not_zero(make_service):
    svc = make_service()
    rewards = VerifierRewards(svc.address, retries=1, backoff_s=0.2, timeout_s=30)
    slow = "```python\nimport time\ntime.sleep(20)\ndef sq(x):\n    return x * x\n```"
    recorder = Recorder()
    result = {}

    def train_step():
        result["scores"] = call_like_trl(rewards.reward_funcs(), ["p"] * 2, [slow, GOOD],
                                         {"verification": [SPEC] * 2}, recorder)

    worker = threading.Thread(target=train_step)
    worker.start()
    time.sleep(2.0)
    svc.call(svc.app.stop(grace=0))
    worker.join(60)
    fmt, correct = result["scores"]
    assert fmt == [None, None] and correct == [None, None]
    assert recorder.metrics["verifier/batch_lost"] == [1.0]
    assert recorder.metrics["verifier/infra_errors"] == [2.0]


def test_infra_error_results_score_none(service):
    rewards = VerifierRewards(service.address)
    funcs = rewards.reward_funcs()

    async def fake_results(component, completions, kwargs):
        return [pb.VerifyResult(verdict=pb.INFRA_ERROR), pb.VerifyResult(verdict=pb.FAILED, format_score=1.0)]

    rewards.results = fake_results
    fmt, correct = call_like_trl(funcs, ["p"] * 2, ["a", "b"], {"verification": [SPEC] * 2}, Recorder())
    assert fmt == [None, 1.0] and correct == [None, 0.0]


@pytest.mark.timeout(60)  # fails at construction (health check with a 2 s deadline), never hangs
def test_wrong_address_fails_fast_with_the_fix():
    with pytest.raises(RewardError, match="verifier-service serve"):
        VerifierRewards("127.0.0.1:1", connect_timeout_s=2)


def test_dataset_problems_are_errors_not_rewards(service):
    rewards = VerifierRewards(service.address)
    funcs = rewards.reward_funcs()
    with pytest.raises(RewardError, match="no 'verification' column"):
        call_like_trl(funcs, ["p"], [GOOD], {}, Recorder())
    with pytest.raises(RewardError, match="does not hold a valid spec"):
        call_like_trl(funcs, ["p"], [GOOD], {"verification": ["{not json"]}, Recorder())
    with pytest.raises(RewardError, match="unknown verifier kind"):
        call_like_trl(funcs, ["p"], [GOOD], {"verification": ['{"kind": "nope"}']}, Recorder())


def test_a_lone_surrogate_in_a_spec_is_a_dataset_error_in_a_completion_a_reward(service):
    rewards = VerifierRewards(service.address)
    funcs = rewards.reward_funcs()
    bad = '{"kind": "stdio", "cases": [{"stdin": "1", "expected_stdout": "\\udcff"}]}'  # JSON text, as in a dataset
    with pytest.raises(RewardError, match=r"sample 1: .*spec.cases\[0\].expected_stdout holds a lone surrogate"):
        call_like_trl(funcs, ["p"] * 2, [GOOD, GOOD], {"verification": [SPEC, bad]}, Recorder())
    odd = GOOD.replace("x * x", "x * x  # \udcff")
    fmt, correct = call_like_trl(funcs, ["p"] * 2, [odd, WRONG], {"verification": [SPEC] * 2}, Recorder())
    assert fmt == [1.0, 1.0] and correct == [1.0, 0.0]


def test_completion_text():
    assert completion_text("x") == "x"
    assert completion_text([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]) == "a"
    assert completion_text([{"role": "assistant", "content": [{"type": "text", "text": "p"},
                                                              {"type": "text", "text": "q"}]}]) == "pq"
