"""OpenRLHF's remote reward model: ``POST /get_reward`` (``--remote_rm_url http://HOST:PORT/get_reward``).

Their client (``openrlhf/utils/remote_rm_utils.py``) posts ``{"query": [...], "prompts": [...],
"labels": [...]}``: each query is the prompt and the response as one decoded text, each label the
dataset's label column. The answer is ``{"rewards": [...], "scores": [...], "extra_logs": {...}}``:
``rewards`` the composite reward, ``scores`` the correctness score in [0, 1] (their dynamic filtering reads
it), ``extra_logs`` one list of numbers per name (they are logged as means).

Which verifier scores a query:

- by default its label: the spec's JSON (an object or its text), inline (``{"kind": "math", "gold":
  "12"}``) or a catalog reference (``{"verifier": "team/name@1", "gold": "12"}``);
- with a catalog verifier named by the path (``/get_reward/team/name@1``) or the ``X-RLVR-Verifier``
  header, every query uses it, and a label is its per-sample fields: a JSON object, or plain text that is
  the ``gold`` answer.

The response is the query after its prompt (the whole query when the prompt is not in it), less the special
tokens at its end (OpenRLHF decodes with ``skip_special_tokens=False``, so a response that ended properly
carries its end-of-text token as text): the ``openrlhf_strip_tokens`` setting lists them. A sample the
sandbox could not judge (INFRA_ERROR) has no reward to give: the batch is answered 503, which their client
retries, rather than with a made-up number.
"""

from __future__ import annotations

from typing import Any

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.doors.http.calls import HttpError
from verifier_service.errors import InvalidSpec
from verifier_service.spec import request_from_json, response_text, spec_from_label
from verifier_service.special_tokens import DEFAULT_TOKENS, parse_tokens
from verifier_service.wire import oversize_mark

VERIFIER_HEADER = "X-RLVR-Verifier"
__all__ = ["VERIFIER_HEADER", "answer", "parse_tokens", "requests_of", "response_text"]


# how a door's caller names a catalog verifier for plain labels (spec.spec_from_label's refusal hint)
PLAIN_LABEL_HELP = ("OpenRLHF's --data.label_key must name a column that holds each row's verification spec "
                    "(e.g. {\"kind\": \"math\", \"gold\": \"12\"}; `trainer data convert` writes them), or name "
                    "a catalog verifier in the URL (/get_reward/team/name@1) so that a plain label is its gold answer")


def requests_of(body: Any, verifier: str, strip: tuple[str, ...] = DEFAULT_TOKENS) -> list[pb.VerifyRequest]:
    if not isinstance(body, dict):
        raise HttpError(422, "the body must be a JSON object {\"query\": [...], \"prompts\": [...], "
                             "\"labels\": [...]}")
    queries, prompts, labels = body.get("query"), body.get("prompts"), body.get("labels")
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise HttpError(422, "query must be a list of strings (prompt and response as one text each)")
    if prompts is not None and (not isinstance(prompts, list) or len(prompts) != len(queries)):
        raise HttpError(422, f"prompts must be a list as long as query ({len(queries)})")
    if labels is None:
        raise HttpError(422, "labels are required: each query's verification spec (or, with a named verifier, "
                             "its per-sample fields)")
    if not isinstance(labels, list) or len(labels) != len(queries):
        raise HttpError(422, f"labels must be a list as long as query ({len(queries)})")
    out = []
    for i, (query, label) in enumerate(zip(queries, labels, strict=True)):
        prompt = prompts[i] if prompts is not None else None
        if prompt is not None and not isinstance(prompt, str):
            raise HttpError(422, f"prompts[{i}] must be a string")
        try:
            out.append(request_from_json({"id": str(i), "completion": response_text(query, prompt, strip),
                                          "spec": spec_from_label(label, verifier, strict=True,
                                                                  hint=PLAIN_LABEL_HELP)}))
        except InvalidSpec as exc:  # a lone surrogate (a \udXXX escape) in a label too; in a query it is scored
            raise HttpError(400, f"labels[{i}]: {exc}") from exc
    return out


def encoded_requests_of(body: Any, verifier: str, strip: tuple[str, ...], max_completion_bytes: int,
                        mark: str) -> list[bytes]:
    """``requests_of``, serialized, where the body was parsed (a pure worker, for a large body): a completion
    over ``max_completion_bytes`` is sent as ``oversize_mark(size, mark)`` (``mark``: the service's), never as
    its text, so that the service neither unpickles nor copies what it would only measure."""
    out = []
    for request in requests_of(body, verifier, strip):
        text = request.completion
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        if size > max_completion_bytes:
            request.completion = oversize_mark(size, mark)
        out.append(request.SerializeToString())
    return out


def answer(results: list[pb.VerifyResult]) -> dict[str, Any]:
    infra = [i for i, r in enumerate(results) if r.verdict == pb.INFRA_ERROR or not r.HasField("reward")]
    if infra:
        first = results[infra[0]]
        raise HttpError(503, f"{len(infra)} sample(s) could not be judged by the sandbox (INFRA_ERROR, e.g. query "
                             f"{infra[0]}: {first.detail[:200]}); no reward is made up for them: retry",
                        {"Retry-After": "1"})
    return {
        "rewards": [r.reward for r in results],
        "scores": [r.correctness_score for r in results],
        "extra_logs": {
            "format_score": [r.format_score for r in results],
            "correctness_score": [r.correctness_score for r in results],
            "passed": [1.0 if r.verdict == pb.PASSED else 0.0 for r in results],
        },
    }
