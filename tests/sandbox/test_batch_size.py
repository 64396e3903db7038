"""A batch's answer always fits one gRPC message (issue 17, class 8), and a batch over a message limit is never
retried whole as if the service were throttling.

``fit_results`` shrinks what explains a result (test details, names, tails), never its verdict, scores or
reward; the reward functions verify a batch whose request or answer is over a message limit in halves.
"""

from __future__ import annotations

import random

import pytest

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.engine.results import MESSAGE_MARGIN, fit_results

from support.trl_calls import Recorder, call_like_trl


def random_result(rng: random.Random) -> pb.VerifyResult:
    r = pb.VerifyResult(id=str(rng.getrandbits(32)), kind="python_assert", verdict=rng.choice([pb.PASSED, pb.FAILED]),
                        format_score=1.0, correctness_score=rng.random(), tests_passed=rng.randrange(50),
                        tests_total=50, detail="d" * rng.randrange(1000), extracted="x" * rng.randrange(4000),
                        stdout_tail="o" * rng.randrange(2000), stderr_tail="e" * rng.randrange(2000))
    r.reward = rng.random()
    for i in range(rng.choice([0, 1, 10, 300, 3000])):
        r.tests.add(name=f"test {i} " + "n" * rng.randrange(2000), verdict=pb.FAILED, detail="t" * rng.randrange(500),
                    duration_s=0.1)
    return r


@pytest.mark.parametrize("seed", range(12))
def test_fitted_batches_fit_and_keep_their_rewards(seed):
    rng = random.Random(seed)
    results = [random_result(rng) for _ in range(rng.choice([1, 3, 40, 300]))]
    limit = rng.choice([256 << 10, 1 << 20, 4 << 20, 64 << 20])
    before = [(r.id, r.verdict, r.reward, r.correctness_score, r.tests_passed, r.tests_total) for r in results]
    big = sum(r.ByteSize() for r in results) + 8 * len(results) > limit - MESSAGE_MARGIN
    shrunk = fit_results(results, limit)
    assert pb.VerifyBatchResponse(results=results, batch_id="b" * 64).ByteSize() <= limit
    assert [(r.id, r.verdict, r.reward, r.correctness_score, r.tests_passed, r.tests_total) for r in results] == before
    assert (shrunk > 0) == big
    if not big:  # a batch that fits is left as it was
        assert all("shortened" not in r.detail for r in results)


@pytest.mark.docker
def test_a_batch_whose_answer_is_over_the_limit_comes_back_whole(make_service):
    tests = "".join(f"assert f({i}) == {2 * i + 1}, 'case {i}: ' + 'why ' * 60\n" for i in range(300))
    spec = {"kind": "python_assert", "tests": tests, "extract": "raw", "timeout_s": 20}
    svc = make_service(max_message_bytes=400 << 10)
    results = svc.verify_batch([("def f(x):\n    return 2 * x\n", spec)] * 4, timeout=300)
    assert [r["verdict"] for r in results] == ["FAILED"] * 4
    assert all(r["tests_total"] == 300 and r["tests_passed"] == 0 for r in results)
    assert all("shortened" in r["detail"] for r in results)


def test_the_reward_functions_halve_a_batch_over_the_message_limit(make_service):
    from trainer.rewards import VerifierRewards

    svc = make_service()
    rewards = VerifierRewards(svc.address, max_message_bytes=6 << 10, retries=1)  # a small client limit
    spec = {"kind": "json_schema", "schema": {"type": "string"}}
    completions = ['"' + "a" * 900 + f'{i}"' for i in range(16)] + ["not json"] * 4
    recorder = Recorder()
    scores = call_like_trl(rewards.reward_funcs(), ["p"] * 20, completions, {"verification": [spec] * 20}, recorder)
    assert scores[0] == [1.0] * 16 + [0.0] * 4  # format: every completion scored, none left out
    assert recorder.metrics["verifier/batch_lost"] == [0.0]
    assert recorder.metrics["verifier/throttled_s"] == [0.0]
