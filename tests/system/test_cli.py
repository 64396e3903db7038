"""`verifier-service` end to end: the README's embedded verification and its error messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "requests.jsonl"
EXPECTED = {
    "assert-pass": "PASSED", "assert-wrong": "PARTIAL", "assert-malformed": "MALFORMED",
    "humaneval-style": "PASSED", "io-pass": "PASSED", "io-timeout": "TIMEOUT", "stdio-python": "PASSED",
    "stdio-cpp": "PASSED", "cpp-compile-error": "COMPILE_ERROR", "pytest-suite": "PASSED",
    "json-schema": "PASSED", "tool-call": "PASSED", "math": "PASSED", "format": "PASSED", "sql-query": "PASSED",
    "function-tests-c": "PASSED", "function-io-cpp": "PASSED",
}


def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verifier_service.tools.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


@pytest.mark.docker
def test_verify_examples_embedded(docker_ready, tmp_path):
    out = tmp_path / "results.jsonl"
    proc = cli("verify", "--input", str(EXAMPLES), "--output", str(out), "--memory-mb", "256")
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in results] == list(EXPECTED)  # same ids, same order
    assert {r["id"]: r["verdict"] for r in results} == EXPECTED
    assert "completions verified" in proc.stderr and "PASSED" in proc.stderr  # the summary table


@pytest.mark.docker
def test_verify_against_a_running_server(service, tmp_path):
    rows = [json.loads(line) for line in EXAMPLES.read_text().splitlines()][:2]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = cli("verify", "--input", str(path), "--server", service.address)
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["verdict"] for line in proc.stdout.splitlines()] == ["PASSED", "PARTIAL"]


def test_bad_input_names_the_line(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "a", "completion": "x", "spec": {"kind": "format", "pattern": "x"}}\n{not json\n')
    proc = cli("verify", "--input", str(path), "--server", "127.0.0.1:1")
    assert proc.returncode == 2 and f"{path}:2: not valid JSON" in proc.stderr
    path.write_text('{"id": "a", "completion": "x", "spec": {"kind": "format", "patern": "x"}}\n')
    proc = cli("verify", "--input", str(path), "--server", "127.0.0.1:1")
    assert proc.returncode == 2 and "unknown spec field" in proc.stderr and "Traceback" not in proc.stderr


def test_a_lone_surrogate_in_a_spec_is_bad_input_in_a_completion_is_not(tmp_path):
    """A JSON \\udcff escape in a spec field is the caller's mistake (exit 2, naming line, id and field), not
    "unexpected error" (exit 1, a bug); in a completion it is model output, sent on (here to a closed port)."""
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "a", "completion": "x", "spec": {"kind": "format", "pattern": "x"}}\n'
                    '{"id": "b", "completion": "x", "spec": {"kind": "stdio", '
                    '"cases": [{"stdin": "\\udcff", "expected_stdout": "1"}]}}\n')
    proc = cli("verify", "--input", str(path), "--server", "127.0.0.1:1", timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert f"{path}:2: request 'b': spec.cases[0].stdin holds a lone surrogate" in proc.stderr
    assert "Traceback" not in proc.stderr and "unexpected" not in proc.stderr
    path.write_text('{"id": "a", "completion": "x\\udcff", "spec": {"kind": "format", "pattern": "x"}}\n')
    proc = cli("verify", "--input", str(path), "--server", "127.0.0.1:1", timeout=60)
    assert proc.returncode == 3 and "verifier-service serve" in proc.stderr  # read fine; no server there


def test_unknown_kind_is_rejected_with_valid_kinds(docker_ready, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "a", "completion": "x", "spec": {"kind": "haskell"}}\n')
    proc = cli("verify", "--input", str(path))
    assert proc.returncode == 2 and "unknown verifier kind 'haskell'" in proc.stderr
    assert "python_assert" in proc.stderr and "Traceback" not in proc.stderr


def test_unreachable_server_says_how_to_start_one(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "a", "completion": "x", "spec": {"kind": "format", "pattern": "x"}}\n')
    proc = cli("verify", "--input", str(path), "--server", "127.0.0.1:1", timeout=60)
    assert proc.returncode == 3 and "verifier-service serve" in proc.stderr  # infrastructure


def test_no_docker_engine_gives_the_fix(tmp_path):
    proc = cli("verify", "--input", str(EXAMPLES), "--docker-url", f"unix://{tmp_path}/no-docker.sock", timeout=60)
    assert proc.returncode == 3  # infrastructure
    assert "Docker engine is not reachable" in proc.stderr and "setup.sh" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.docker
def test_missing_image_gives_the_build_command(docker_ready):
    proc = cli("verify", "--input", str(EXAMPLES), "--sandbox-image", "rlvr-no-such-image:latest", timeout=60)
    assert proc.returncode == 3 and "sandboxes/build.sh" in proc.stderr and "Traceback" not in proc.stderr


def test_list_shows_every_kind():
    proc = cli("list")
    assert proc.returncode == 0, proc.stderr
    for kind in ("python_assert", "python_io", "stdio", "pytest", "json_schema", "tool_call", "math", "format"):
        assert kind in proc.stdout
