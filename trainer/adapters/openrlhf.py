"""OpenRLHF's reward function file, scored by the verifier service.

OpenRLHF (0.11) loads ``reward_func`` from the file given as ``--reward.remote_url`` (a ``.py`` path) and calls
it with the batch's queries (prompt + response), prompts and labels (``--data.label_key``: each row's
verification spec, a JSON object's text)::

    --reward.remote_url $(python -c 'import trainer.adapters.openrlhf as m; print(m.__file__)') \\
    --data.label_key verification

OpenRLHF decodes each query with ``skip_special_tokens=False``: the special tokens at the end of a response
(its end-of-text token) are taken off before it is verified; ``RLVR_VERIFIER_OPENRLHF_STRIP_TOKENS`` (comma-
separated, ``''`` for none) changes the list, as the service's ``openrlhf_strip_tokens`` setting does for
``/get_reward``. A label that is not a spec raises ``InvalidSpec`` once, saying what to fix (their executor logs
it; retrying cannot help).

It returns ``{"rewards", "scores", "extra_logs"}`` as OpenRLHF's remote reward server does (torch tensors,
as their in-process ``reward_func`` examples return). The service is ``RLVR_VERIFIER_ADDRESS``.
"""

from __future__ import annotations

import os
from typing import Any

from trainer.adapters.remote import CATALOG_ENV, reward_of, shared
from verifier_service.errors import InvalidSpec
from verifier_service.special_tokens import DEFAULT_SETTING, parse_tokens, strip_trailing

STRIP_ENV = "RLVR_VERIFIER_OPENRLHF_STRIP_TOKENS"


def response_text(query: str, prompt: str | None) -> str:
    """What the model wrote: the query after its prompt (the whole query when the prompt is not in it), less the
    special tokens at its end."""
    strip = parse_tokens(os.environ.get(STRIP_ENV, DEFAULT_SETTING))
    if prompt:
        if query.startswith(prompt):
            return strip_trailing(query[len(prompt):], strip)
        at = query.find(prompt)
        if at >= 0:
            return strip_trailing(query[at + len(prompt):], strip)
    return strip_trailing(query, strip)


def _check_label(label: Any, index: int) -> None:
    """A plain-text label (a bare gold answer) is not a spec: one clear error, not a retried failure."""
    if isinstance(label, str) and not label.strip().startswith("{") and not os.environ.get(CATALOG_ENV):
        shown = label if len(label) <= 40 else label[:37] + "..."
        raise InvalidSpec(f"labels[{index}] is plain text ({shown!r}), not a verification spec: --data.label_key "
                          "must name a column holding each row's spec JSON (e.g. {\"kind\": \"math\", \"gold\": "
                          f"\"12\"}}; `trainer data convert` writes them), or set {CATALOG_ENV}=team/name@1 so that "
                          "a plain label is that catalog verifier's gold answer")


def reward_func(queries: list[str], prompts: list[str], labels: list[Any], **kwargs: Any) -> dict[str, Any]:
    import torch

    prompts = list(prompts) if prompts is not None else [None] * len(queries)
    for index, label in enumerate(labels):
        _check_label(label, index)
    results = shared().verify([response_text(q, p) for q, p in zip(queries, prompts, strict=True)], list(labels))
    rewards = [reward_of(r) for r in results]
    correctness = [r.correctness_score for r in results]
    return {
        "rewards": torch.tensor(rewards, dtype=torch.float32),
        "scores": torch.tensor(correctness, dtype=torch.float32),
        "extra_logs": {"format_score": torch.tensor([r.format_score for r in results], dtype=torch.float32),
                       "correctness_score": torch.tensor(correctness, dtype=torch.float32)},
    }
