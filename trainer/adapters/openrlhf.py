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
from verifier_service.spec import response_text as _response_text
from verifier_service.spec import spec_from_label
from verifier_service.special_tokens import DEFAULT_SETTING, parse_tokens

STRIP_ENV = "RLVR_VERIFIER_OPENRLHF_STRIP_TOKENS"
__all__ = ["response_text", "reward_func"]


def response_text(query: str, prompt: str | None) -> str:
    """What the model wrote: the query after its prompt, less the special tokens (``STRIP_ENV``) at its end."""
    return _response_text(query, prompt, parse_tokens(os.environ.get(STRIP_ENV, DEFAULT_SETTING)))


def _check_label(label: Any, index: int) -> None:
    """A label that is no spec (plain text without a catalog verifier, another trainer's native label): one
    clear error, not a retried failure."""
    try:
        spec_from_label(label, os.environ.get(CATALOG_ENV, ""),
                        hint=f"--data.label_key must name a column holding each row's spec JSON (e.g. "
                             f"{{\"kind\": \"math\", \"gold\": \"12\"}}; `trainer data convert` writes them), or set "
                             f"{CATALOG_ENV}=team/name@1 so that a plain label is that catalog verifier's gold answer")
    except InvalidSpec as exc:
        raise InvalidSpec(f"labels[{index}]: {exc}") from None


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
