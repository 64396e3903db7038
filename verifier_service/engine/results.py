"""An ``Outcome`` as the ``VerifyResult`` message: its verdict, scores, tests and output tails.

Shared by the engine and the pure-verifier workers: a worker builds the
message of each check itself and sends its bytes, so the service process
neither unpickles outcomes nor builds their messages on the event loop. The
request id and the timings are the caller's to set.
"""

from __future__ import annotations

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.spec import Spec
from verifier_service.verdict import Outcome, score, truncate

_VERDICTS = {name: pb.Verdict.Value(name) for name in pb.Verdict.keys()}


def _text(value: str) -> str:
    """``value`` as text a message can carry: a lone surrogate (a Python string may hold one, e.g. in the
    message of an exception the completion raised) becomes "?" instead of failing the whole result."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "replace").decode("utf-8")
    return value


def outcome_proto(kind_name: str, spec: Spec, outcome: Outcome) -> pb.VerifyResult:
    scores = score(outcome, spec.scoring, spec.format_weight, spec.correctness_weight)
    result = pb.VerifyResult(
        kind=kind_name,
        verdict=_VERDICTS[outcome.verdict.value],
        format_score=scores.format_score,
        correctness_score=scores.correctness_score,
        tests_passed=scores.tests_passed,
        tests_total=scores.tests_total,
        detail=_text(truncate(outcome.detail)),
        extracted=_text(truncate(outcome.extracted, 4000)),
        stdout_tail=_text(outcome.stdout_tail),
        stderr_tail=_text(outcome.stderr_tail),
    )
    if scores.reward is not None:
        result.reward = scores.reward
    for t in outcome.tests:
        result.tests.add(name=_text(truncate(t.name, 500)), verdict=_VERDICTS[t.verdict.value],
                         detail=_text(truncate(t.detail, 500)), duration_s=t.duration_s)
    return result


def set_timings(result: pb.VerifyResult, queue_s: float, total_s: float) -> None:
    timings = result.timings
    timings.queue_s = queue_s
    timings.run_s = max(0.0, total_s - queue_s)
    timings.total_s = total_s


MESSAGE_MARGIN = 64 * 1024  # the response's own fields (batch id, framing) besides its results


def fit_results(results: list[pb.VerifyResult], limit_bytes: int) -> int:
    """Shrinks results until the batch's answer fits one gRPC message of ``limit_bytes``: the number of results
    shrunk. A batch answer over the limit would be lost whole (RESOURCE_EXHAUSTED, which reads as throttling);
    so each result over its share of the limit gives up, in turn, its tests' details, long test names, its
    output tails and detail, then the tests beyond what fits. Verdicts, scores and rewards never change: only
    what explains them is shortened (the detail says so)."""
    total = sum(r.ByteSize() for r in results)
    budget = max(0, limit_bytes - MESSAGE_MARGIN)
    if total + 8 * len(results) <= budget or not results:
        return 0
    share = max(1024, budget // len(results) - 8)
    shrunk = 0
    for result in results:
        if result.ByteSize() <= share:
            continue
        shrunk += 1
        steps = (lambda r: [t.ClearField("detail") for t in r.tests],
                 lambda r: [setattr(t, "name", truncate(t.name, 120)) for t in r.tests],
                 lambda r: (r.ClearField("stdout_tail"), r.ClearField("stderr_tail"),
                            setattr(r, "extracted", truncate(r.extracted, 400))),
                 lambda r: setattr(r, "detail", truncate(r.detail, 300)))
        for step in steps:
            step(result)
            if result.ByteSize() <= share:
                break
        while result.tests and result.ByteSize() > share:
            keep = max(0, len(result.tests) * share // max(1, result.ByteSize()) - 1)
            del result.tests[keep:]
        note = " [shortened: the batch's answer was over the message limit]"
        if len(result.detail) + len(note) <= 1000:
            result.detail += note
    return shrunk
