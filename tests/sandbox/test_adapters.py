"""The in-process reward hooks (trainer/adapters) loaded and called the way verl and OpenRLHF do, through the
installed packages' own loaders (verl's ``load_extern_object``, OpenRLHF's ``SingleTurnAgentExecutor``), and
scoring as the service does on the same inputs."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path

import pytest

from trainer.adapters import openrlhf as openrlhf_adapter
from trainer.adapters import remote

pytestmark = pytest.mark.docker

ADD_SPEC = {"kind": "python_assert", "extract": "last_fenced_code", "scoring": "fraction",
            "tests": "assert add(1, 2) == 3\nassert add(0, 0) == 0"}
GOOD = "```python\ndef add(a, b):\n    return a + b\n```"
HALF = "```python\ndef add(a, b):\n    return a * b + 0 * (a - 1)\n```"  # add(0, 0) == 0 holds, add(1, 2) does not


def verl_loader():
    """verl's ``load_extern_object`` from the installed verl's own file (``import verl`` needs ray)."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("verl is not installed: pip install --no-deps verl==0.9.1 (scripts/setup.sh does)", pytrace=False)
    path = Path(next(iter(spec.submodule_search_locations))) / "utils" / "import_utils.py"
    loaded = importlib.util.spec_from_file_location("verl_import_utils", path)
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module.load_extern_object


def test_verl_loads_and_calls_compute_score(pointed):
    load = verl_loader()
    single = load(module_path="pkg://trainer.adapters.verl", object_name="compute_score")
    expected = pointed.verify_batch([(GOOD, ADD_SPEC), (HALF, ADD_SPEC)])
    # verl's naive manager: keyword arguments, the ground truth as the dataset stores it (JSON text here)
    good = single(data_source="fixture", solution_str=GOOD, ground_truth=json.dumps(ADD_SPEC), extra_info={})
    half = single(data_source="fixture", solution_str=HALF, ground_truth=ADD_SPEC, extra_info=None)
    assert good == {"score": expected[0]["reward"], "acc": 1.0, "format": 1.0}
    assert half["score"] == expected[1]["reward"] and half["acc"] == 0.5
    batch = load(module_path=str(Path(remote.__file__).with_name("verl.py")), object_name="compute_score_batch")
    scores = batch(data_sources=["a", "b"], solution_strs=[GOOD, HALF], ground_truths=[ADD_SPEC, ADD_SPEC],
                   extra_infos=[{}, {}])
    assert [s["score"] for s in scores] == [expected[0]["reward"], expected[1]["reward"]]
    awaited = load(module_path="pkg://trainer.adapters.verl", object_name="compute_score_async")
    assert asyncio.run(awaited(data_source="a", solution_str=GOOD, ground_truth=ADD_SPEC))["acc"] == 1.0


def test_openrlhf_loads_reward_func_from_the_file(pointed):
    try:
        from openrlhf.utils.agent import SingleTurnAgentExecutor
    except ImportError as exc:
        pytest.fail(f"OpenRLHF is not installed ({exc}): pip install --no-deps openrlhf==0.11.2 pylatexenc "
                    "(scripts/setup.sh does)", pytrace=False)
    executor = SingleTurnAgentExecutor(openrlhf_adapter.__file__)  # --remote_rm_url /path/to/the/file.py
    assert executor.reward_func is not None
    prompt = "<|user|>Write add(a, b).<|assistant|>"
    infos = asyncio.run(executor._fetch_rewards_via_func([prompt + GOOD, prompt + HALF], [prompt, prompt],
                                                         [json.dumps(ADD_SPEC)] * 2))
    expected = pointed.verify_batch([(GOOD, ADD_SPEC), (HALF, ADD_SPEC)])
    assert [float(i["rewards"][0]) for i in infos] == pytest.approx([r["reward"] for r in expected])
    assert [float(i["scores"][0]) for i in infos] == [1.0, 0.5]
    assert set(infos[0]["extra_logs"]) == {"format_score", "correctness_score"}


def test_labels_name_catalog_verifiers_and_bad_labels_say_why(monkeypatch):
    monkeypatch.setenv(remote.CATALOG_ENV, "math/gsm8k-answer@1")
    assert remote.spec_of("72") == {"verifier": "math/gsm8k-answer@1", "gold": "72"}
    assert remote.spec_of('{"gold": "7"}') == {"verifier": "math/gsm8k-answer@1", "gold": "7"}
    monkeypatch.delenv(remote.CATALOG_ENV)
    with pytest.raises(Exception, match="RLVR_VERIFIER_CATALOG"):
        remote.spec_of("72")
    assert openrlhf_adapter.response_text("PROMPT answer", "PROMPT") == " answer"
    assert openrlhf_adapter.response_text("<s>PROMPT answer", "PROMPT") == " answer"
    assert openrlhf_adapter.response_text("other", "PROMPT") == "other"
