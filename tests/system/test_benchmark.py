"""benchmarks/run.py --quick: every harness and the service run, every verdict is checked, the report is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import harnesses, workloads
from benchmarks.report import FLOOR, NAIVE, REFERENCE, SERVICE

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.docker
def test_quick_benchmark_runs_every_harness_and_checks_every_verdict(tmp_path, docker_ready):
    proc = subprocess.run([sys.executable, "-m", "benchmarks.run", "--quick", "--tasks", "12", "--parallel", "2",
                           "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((tmp_path / "results.json").read_text())
    assert set(result["workloads"]) == {"python_assert", "python_check", "humaneval", "stdio_python", "contest10",
                                        "contest50", "stdio_cpp", "json_schema", "format", "mix"}
    rows = result["workloads"]["python_assert"]["rows"]
    assert set(rows) == {REFERENCE, FLOOR, NAIVE, SERVICE}
    for block in result["workloads"].values():
        assert SERVICE in block["rows"]
        for row in block["rows"].values():
            assert row["correct"] and row["n"] > 0 and row["per_s"] > 0
    assert set(result["scaling"]) == {"python_assert", "json_schema"}
    assert result["scaling"]["json_schema"]["largest"] == "4096" and result["scaling"]["json_schema"]["ratio"] > 0
    assert 0 < result["group_of_8"]["p50_ms"] <= result["group_of_8"]["p99_ms"]
    assert set(result["per_case"]) == {"1", "10"} and all(r["correct"] for r in result["per_case"].values())
    assert any("real HumanEval" in name for name, _, _ in result["targets"])
    assert result["all_correct"] is True
    report = (tmp_path / "RESULTS.md").read_text()
    assert "| python_assert | this service" in report and "load average" in report


@pytest.mark.parametrize("kind", ["python_assert", "python_check", "humaneval", "stdio_python", "contest10",
                                  "json_schema", "format"])
def test_host_harnesses_reach_the_expected_verdicts_and_a_wrong_answer_fails(kind):
    """The reference and floor harnesses are not pass-everything stubs: each task, and each task's
    expected verdict flipped for a right one, is judged as the workload says."""
    items = workloads.tasks(kind, 6)
    for table in (harnesses.REFERENCE, harnesses.FLOOR):
        got = [table[kind](task) for task in items]
        assert got == [t["expected"] for t in items]
        assert "PASSED" in got and any(v != "PASSED" for v in got)


def test_every_workload_has_wrong_answers_and_unique_requests():
    for kind in workloads.WORKLOADS:
        items = workloads.tasks(kind, 9)
        assert {t["expected"] for t in items} - {"PASSED"}, kind
        assert len({t["completion"] for t in items}) == len(items)
    mix = workloads.mix(20)  # (the mix of the earlier rounds: HumanEval and the contest workloads are not in it)
    assert {t["kind"] for t in mix} == set(workloads.WORKLOADS) - {"humaneval", "contest10", "contest50"}
    a = [workloads.request_json(t, i, "a")["completion"] for i, t in enumerate(mix)]
    b = [workloads.request_json(t, i, "b")["completion"] for i, t in enumerate(mix)]
    code = [i for i, t in enumerate(mix) if t["kind"] not in ("json_schema", "format")]
    assert all(a[i] != b[i] for i in code)


@pytest.mark.docker
def test_stdio_cases_runs_both_ways_and_checks_every_output(tmp_path, docker_ready):
    proc = subprocess.run([sys.executable, "-m", "benchmarks.stdio_cases", "--counts", "1", "3", "--repeat", "1",
                           "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((tmp_path / "stdio_cases.json").read_text())
    assert set(result["counts"]) == {"1", "3"}
    for row in result["counts"].values():
        for mode in ("forked", "fresh"):
            assert row[mode]["cpu_ms_per_case"] > 0 and row[mode]["faults_per_case"] > 0
    assert "| 3 |" in (tmp_path / "STDIO_CASES.md").read_text()
