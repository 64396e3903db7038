"""verl's custom reward function, scored by the verifier service.

verl loads it as its custom reward function (the ground truth of each row, ``reward_model.ground_truth``, is
the verification spec, as a JSON object or its text). verl 0.9 (the reward loop; samples scored concurrently,
each an RPC on one shared connection)::

    reward.custom_reward_function.path=pkg://trainer.adapters.verl
    reward.custom_reward_function.name=compute_score        # or compute_score_async (awaited on verl's loop)

verl's legacy ``batch`` reward manager (one VerifyBatch call per training batch)::

    reward_model.reward_manager=batch custom_reward_function.path=<this file> \
    custom_reward_function.name=compute_score_batch

Each score is a dict: ``score`` (the composite reward, what verl trains on), ``acc`` (correctness in
[0, 1]) and ``format`` (verl logs the extra keys). The service is ``RLVR_VERIFIER_ADDRESS``.
"""

from __future__ import annotations

from typing import Any

from trainer.adapters.remote import reward_of, shared


def _score(result) -> dict[str, float]:
    return {"score": reward_of(result), "acc": result.correctness_score, "format": result.format_score}


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None,
                  **kwargs: Any) -> dict[str, float]:
    """One sample (verl's ``compute_score`` signature)."""
    return _score(shared().verify([solution_str], [ground_truth])[0])


async def compute_score_async(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None,
                              **kwargs: Any) -> dict[str, float]:
    """One sample, awaited (verl's reward loop awaits a coroutine function instead of using a thread)."""
    import asyncio

    return _score((await asyncio.wrap_future(shared().submit([solution_str], [ground_truth])))[0])


def compute_score_batch(data_sources: list[str], solution_strs: list[str], ground_truths: list[Any],
                        extra_infos: list[Any] | None = None, **kwargs: Any) -> list[dict[str, float]]:
    """A batch (verl's ``BatchRewardManager`` signature): one call to the service."""
    return [_score(r) for r in shared().verify(list(solution_strs), list(ground_truths))]
