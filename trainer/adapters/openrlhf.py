"""OpenRLHF's reward function file, scored by the verifier service.

OpenRLHF loads ``reward_func`` from the file given as ``--remote_rm_url`` (a ``.py`` path) and calls it with
the batch's queries (prompt + response), prompts and labels (``--label_key``: each row's verification spec,
a JSON object's text)::

    --remote_rm_url $(python -c 'import trainer.adapters.openrlhf as m; print(m.__file__)') \\
    --label_key verification

It returns ``{"rewards", "scores", "extra_logs"}`` as OpenRLHF's remote reward server does (torch tensors,
as their in-process ``reward_func`` examples return). The service is ``RLVR_VERIFIER_ADDRESS``.
"""

from __future__ import annotations

from typing import Any

from trainer.adapters.remote import reward_of, shared
from verifier_service.spec import response_text

__all__ = ["response_text", "reward_func"]


def reward_func(queries: list[str], prompts: list[str], labels: list[Any], **kwargs: Any) -> dict[str, Any]:
    import torch

    prompts = list(prompts) if prompts is not None else [None] * len(queries)
    results = shared().verify([response_text(q, p) for q, p in zip(queries, prompts, strict=True)], list(labels))
    rewards = [reward_of(r) for r in results]
    correctness = [r.correctness_score for r in results]
    return {
        "rewards": torch.tensor(rewards, dtype=torch.float32),
        "scores": torch.tensor(correctness, dtype=torch.float32),
        "extra_logs": {"format_score": torch.tensor([r.format_score for r in results], dtype=torch.float32),
                       "correctness_score": torch.tensor(correctness, dtype=torch.float32)},
    }
