"""The e2e evaluation: its arithmetic, and the service and the in-process reference scorer agreeing on crafted
completions (right, partly right, wrong, malformed, broken); the shadow reward never changes the rewards."""

from __future__ import annotations

import asyncio
import json

import pytest

from examples.e2e import reference
from examples.e2e.evaluate import Scored, rate, score_both, summarise
from examples.e2e.results import judge_targets
from examples.e2e.tasks import generate

pytestmark = pytest.mark.backends("bwrap")


def _scored(i: int, *, fmt: bool, correct: bool, level: int = 1, ref_fmt: bool | None = None,
            ref_correct: bool | None = None, verdict: str | None = None) -> Scored:
    return Scored(id=f"{i}-0", family="f", level=level,
                  service_verdict=verdict or ("PASSED" if correct else "FAILED" if fmt else "MALFORMED"),
                  service_format=fmt, service_correct=correct, service_passed=6 if correct else 0,
                  reference_format=fmt if ref_fmt is None else ref_fmt,
                  reference_correct=correct if ref_correct is None else ref_correct,
                  reference_passed=6 if (correct if ref_correct is None else ref_correct) else 0, total=6)


def test_rate_has_the_wilson_interval():
    r = rate(3, 10)
    assert r["rate"] == 0.3
    lo, hi = r["ci95"]
    assert lo == pytest.approx(0.1078, abs=1e-3) and hi == pytest.approx(0.6032, abs=1e-3)
    assert rate(0, 0)["ci95"] == [0.0, 1.0]


def test_summarise_counts_pass_at_1_format_levels_and_disagreements():
    scored = ([_scored(i, fmt=True, correct=True) for i in range(3)]
              + [_scored(3, fmt=True, correct=False, level=2), _scored(4, fmt=False, correct=False, level=2),
                 _scored(5, fmt=True, correct=False, ref_correct=True, level=2),
                 _scored(6, fmt=False, correct=False, verdict="INFRA_ERROR")])
    s = summarise(scored)
    assert s["completions"] == 7 and s["infra_errors"] == 1
    assert (s["pass@1"]["successes"], s["pass@1"]["n"]) == (3, 6)
    assert (s["format_compliance"]["successes"], s["format_compliance"]["n"]) == (5, 6)
    assert s["per_level"]["1"]["successes"] == 3 and s["per_level"]["2"]["successes"] == 0
    problems = {d["id"]: d["problem"] for d in s["agreement"]["examples"]}
    assert set(problems) == {"5-0", "6-0"}
    assert "correct service=False reference=True" in problems["5-0"] and "INFRA_ERROR" in problems["6-0"]


def test_targets_are_judged_from_the_measurements():
    before = {"pass@1": {"rate": 0.20}, "format_compliance": {"rate": 0.7}}
    after = {"pass@1": {"rate": 0.31}, "format_compliance": {"rate": 0.89}}
    t = judge_targets(before, after, {"mean_share": 0.05}, {"pass@1_gain": 0.10, "format_after": 0.90,
                                                           "reward_wait_share": 0.03})
    assert t["pass@1_gain"]["met"] is True and t["pass@1_gain"]["measured"] == pytest.approx(0.11)
    assert t["format_after"]["met"] is False and t["reward_wait_share"]["met"] is False
    missing = judge_targets(None, None, None, {"pass@1_gain": 0.1, "format_after": 0.9, "reward_wait_share": 0.03})
    assert all(v["met"] is None and v["measured"] is None for v in missing.values())


def _task():
    task = next(t for t in generate(3407, 12, heldout=True) if t.family == "count_above")
    return task, task.spec()


CRAFTED = {
    # a real solution of count_above_<k>, written out from the task text
    "right": "Here it is:\n```python\ndef {name}(xs):\n    return sum(1 for x in xs if x > {k})\n```",
    "partial": "```python\ndef {name}(xs):\n    return sum(1 for x in xs if x >= {k})\n```",
    "wrong": "```python\ndef {name}(xs):\n    return -1\n```",
    "malformed": "def {name}(xs):\n    return sum(1 for x in xs if x > {k})",
    "crashes": "```python\ndef {name}(xs):\n    raise ValueError('no')\n```",
    "bad_syntax": "```python\ndef {name}(xs) return 1\n```",
    "wrong_type": "```python\ndef {name}(xs):\n    return float(sum(1 for x in xs if x > {k})) > 0\n```",
    # seen in SmolLM2's samples: a stray empty fence before the block (the first block is empty: malformed) ...
    "empty_first_block": "```\n```python\ndef {name}(xs):\n    return sum(1 for x in xs if x > {k})\n```",
    # a loop that never ends on an empty list (the 2nd case): the cases finished before the time limit count
    "hangs_late": "```python\ndef {name}(xs):\n    while not xs:\n        pass\n"
                  "    return sum(1 for x in xs if x > {k})\n```",
    # ... and other language tags (any tag is a fenced block)
    "other_tag": "```numpy\ndef {name}(xs):\n    print('noise')\n    return sum(1 for x in xs if x > {k})\n```",
}


def test_service_and_reference_agree_on_crafted_completions(service):
    task, spec = _task()
    k = int(task.description.split("greater than ")[1].split(".")[0])
    samples = [{"id": f"{i}-0", "completion": text.format(name=task.name, k=k), "spec": spec,
                "task": {"family": task.family, "level": task.level}}
               for i, text in enumerate(CRAFTED.values())]
    results = service.verify_batch([(s["completion"], s["spec"]) for s in samples])
    for s, r in zip(samples, results, strict=True):
        r["id"] = s["id"]
    scored = {name: sc for name, sc in zip(CRAFTED, score_both(samples, results), strict=True)}
    assert scored["right"].service_correct and scored["right"].reference_correct
    assert scored["other_tag"].service_correct and scored["other_tag"].reference_correct
    assert scored["hangs_late"].service_passed == scored["hangs_late"].reference_passed == 1
    for name in ("malformed", "empty_first_block"):
        assert scored[name].service_verdict == "MALFORMED" and not scored[name].reference_format, name
    for name in ("wrong", "crashes", "bad_syntax", "wrong_type"):
        assert not scored[name].service_correct and not scored[name].reference_correct, name
    summary = summarise(list(scored.values()))
    assert summary["agreement"]["disagreements"] == 0, summary["agreement"]["examples"]
    assert summary["pass@1"]["successes"] == sum(s.service_correct for s in scored.values())
    # the composite reward of the reference equals the service's on each completion
    rewards = reference.reward_components([s["completion"] for s in samples], [json.dumps(spec)] * len(samples))
    assert rewards == pytest.approx([r["reward"] for r in results])


def test_a_shadow_reward_is_timed_and_compared_but_never_returned(service):
    from trainer.rewards import VerifierRewards

    task, spec = _task()
    k = int(task.description.split("greater than ")[1].split(".")[0])
    completions = [CRAFTED["right"].format(name=task.name, k=k), CRAFTED["wrong"].format(name=task.name, k=k)]
    specs = [json.dumps(spec)] * 2

    def run(shadow):
        rewards = VerifierRewards(service.address, shadow=shadow)
        funcs = rewards.reward_funcs()

        async def both():
            return await asyncio.gather(*(f(prompts=["p", "p"], completions=completions, verification=specs)
                                          for f in funcs))
        return rewards, asyncio.run(both())

    plain, expected = run(None)
    lying, got = run(lambda texts, s: [0.5] * len(texts))
    assert got == expected and expected[1] == [1.0, 0.0]  # format, correctness: the service's
    assert lying.history[-1].shadow_disagreements == 2 and lying.total_shadow_s > 0
    assert plain.history[-1].shadow_disagreements is None and plain.total_shadow_s == 0

    def broken(texts, s):
        raise RuntimeError("shadow down")

    failing, got = run(broken)
    assert got == expected and failing.history[-1].shadow_disagreements is None
    honest, _ = run(reference.reward_components)
    assert honest.history[-1].shadow_disagreements == 0
