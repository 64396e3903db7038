"""benchmarks/grpo_memory.py: refuses without a GPU, runs its pipeline on CPU, and the published doc is current."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import grpo_memory
from benchmarks.grpo_memory_report import render

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchmarks.grpo_memory", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has a GPU")
def test_without_a_gpu_it_says_so_and_exits(tmp_path):
    proc = _run("--sizes", "0.5B", "--modes", "lora", "--results", str(tmp_path / "r.json"))
    assert proc.returncode == grpo_memory.NO_GPU_EXIT
    assert "no CUDA GPU" in proc.stderr
    assert not (tmp_path / "r.json").exists()


def test_pipeline_runs_grpo_steps_on_a_tiny_shape_on_cpu(tmp_path):
    proc = _run("--device", "cpu", "--sizes", "tiny", "--modes", "lora", "--steps", "1", "--prompt-len", "16",
                "--completion-len", "8", "--model-root", str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    points = json.loads(proc.stdout[proc.stdout.index("["):])
    (point,) = points
    assert point["fits"] is True and point["mode"] == "lora" and point["size"] == "tiny"
    assert len(point["steps"]) == 1 and point["trainable_params"] > 0
    assert point["completion_mean_length"] <= 8
    assert point["reference_model"] is False  # LoRA: the adapters are disabled instead


def test_unknown_mode_is_refused():
    proc = _run("--modes", "qlora")
    assert proc.returncode == 2 and "qlora" in proc.stderr


def test_the_published_doc_is_rendered_from_the_measurements_and_the_current_model():
    data = json.loads((ROOT / "benchmarks" / "grpo_memory.json").read_text())
    assert (ROOT / "docs" / "grpo-memory.md").read_text() == render(data), \
        "docs/grpo-memory.md is stale: python -m benchmarks.grpo_memory --render"


def test_merge_replaces_a_point_of_the_same_key(tmp_path):
    path = tmp_path / "m.json"
    base = {"gpu": "G", "size": "3B", "mode": "lora", "prompt_len": 512, "completion_len": 512}
    grpo_memory.merge([{**base, "peak_allocated_gib": 1.0}], path)
    grpo_memory.merge([{**base, "peak_allocated_gib": 2.0}, {**base, "mode": "full"}], path)
    points = json.loads(path.read_text())["points"]
    assert [(p["mode"], p.get("peak_allocated_gib")) for p in points] == [("full", None), ("lora", 2.0)]
