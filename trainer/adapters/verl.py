"""verl's custom reward function, scored by the verifier service.

verl loads it as its custom reward function (the ground truth of each row, ``reward_model.ground_truth``, is
the verification spec, as a JSON object or its text). verl 0.9 (the reward loop; samples scored concurrently,
each an RPC on one shared connection)::

    reward.custom_reward_function.path=pkg://trainer.adapters.verl
    reward.custom_reward_function.name=compute_score        # or compute_score_async (awaited on verl's loop)

verl's legacy ``batch`` reward manager (one VerifyBatch call per training batch)::

    reward_model.reward_manager=batch custom_reward_function.path=<this file> \
    custom_reward_function.name=compute_score_batch

A row whose ground truth is verl's own (not a spec) is converted where verl's default scorer would know it:
the math data sources (``openai/gsm8k``, ``lighteval/MATH``, ``math_dapo``, ``aime*``, ``numina_*``, ...) as
``{"kind": "math", "gold": ground_truth}``, the code ones (``codecontests``, ``apps``, ``codeforces``,
``taco``) with ``{"inputs", "outputs"}`` test cases as a ``stdio`` spec (Python, the last fenced block);
anything else is refused saying what to store instead (``trainer data convert`` writes specs).

Each score is a dict: ``score`` (the composite reward, what verl trains on), ``acc`` (correctness in
[0, 1]) and ``format`` (verl logs the extra keys). The service is ``RLVR_VERIFIER_ADDRESS``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from trainer.adapters.remote import CATALOG_ENV, reward_of, shared
from verifier_service.errors import InvalidSpec

# verl's default_compute_score (verl/utils/reward_score/__init__.py): the data sources it scores as math / code.
MATH_SOURCES = {"openai/gsm8k", "lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500",
                "math_dapo", "math", "math_dapo_reasoning", "numina_aops_forum", "numina_synthetic_math",
                "numina_amc_aime", "numina_synthetic_amc", "numina_cn_k12", "numina_olympiads"}
CODE_SOURCES = {"codecontests", "apps", "codeforces", "taco"}


def spec_of_ground_truth(data_source: str, ground_truth: Any) -> Any:
    """A verl row's ground truth as a label ``remote.spec_of`` takes: a spec stays; verl's own ground truths of
    the math and code data sources are converted; anything else is refused with what to store instead."""
    value = ground_truth
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8")
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            return ground_truth  # spec_of says what is wrong with the JSON
    if isinstance(value, dict) and ("kind" in value or "verifier" in value):
        return value
    if os.environ.get(CATALOG_ENV):
        return ground_truth  # a catalog verifier's per-sample fields or its gold answer
    source = str(data_source or "")
    if (source in MATH_SOURCES or source.startswith("aime")) and isinstance(value, (str, int, float)):
        return {"kind": "math", "gold": str(value)}
    if source in CODE_SOURCES and isinstance(value, dict) and {"inputs", "outputs"} <= set(value):
        if value.get("fn_name"):
            raise InvalidSpec(f"the ground truth of {source!r} calls a function ({value['fn_name']!r}) with "
                              "line-split JSON inputs, which no spec here converts to: store a python_io spec")
        inputs, outputs = value["inputs"], value["outputs"]
        if not (isinstance(inputs, list) and isinstance(outputs, list) and len(inputs) == len(outputs) and inputs):
            raise InvalidSpec(f"the ground truth of {source!r} needs inputs and outputs lists of one length")
        return {"kind": "stdio", "language": "python", "extract": "last_fenced_code", "compare": "tokens",
                "cases": [{"stdin": str(i), "expected_stdout": str(o)} for i, o in zip(inputs, outputs, strict=True)]}
    shown = repr(ground_truth)
    raise InvalidSpec(f"the ground truth of data source {source!r} is not a verification spec (got "
                      f"{shown if len(shown) <= 60 else shown[:57] + '...'}): store each row's spec JSON in "
                      "reward_model.ground_truth (`trainer data convert` writes them), or set "
                      f"{CATALOG_ENV}=team/name@1 so that it is that catalog verifier's gold answer; verl's own "
                      f"math ({', '.join(sorted(MATH_SOURCES)[:3])}, ...) and code ({', '.join(sorted(CODE_SOURCES))}) "
                      "ground truths are converted")


def _score(result) -> dict[str, float]:
    return {"score": reward_of(result), "acc": result.correctness_score, "format": result.format_score}


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None,
                  **kwargs: Any) -> dict[str, float]:
    """One sample (verl's ``compute_score`` signature)."""
    return _score(shared().verify([solution_str], [spec_of_ground_truth(data_source, ground_truth)])[0])


async def compute_score_async(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None,
                              **kwargs: Any) -> dict[str, float]:
    """One sample, awaited (verl's reward loop awaits a coroutine function instead of using a thread)."""
    import asyncio

    label = spec_of_ground_truth(data_source, ground_truth)
    return _score((await asyncio.wrap_future(shared().submit([solution_str], [label])))[0])


def compute_score_batch(data_sources: list[str], solution_strs: list[str], ground_truths: list[Any],
                        extra_infos: list[Any] | None = None, **kwargs: Any) -> list[dict[str, float]]:
    """A batch (verl's ``BatchRewardManager`` signature): one call to the service."""
    labels = [spec_of_ground_truth(d, g) for d, g in zip(data_sources, ground_truths, strict=True)]
    return [_score(r) for r in shared().verify(list(solution_strs), labels)]
