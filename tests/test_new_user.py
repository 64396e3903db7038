"""What a new user trips on (issue 32), each item through the real command or API.

Ctrl-C keeps every finished batch, even behind a slow one (1); the trainer's commands answer Ctrl-C in one line
with exit 130 (2); ``diagnose`` with nothing checked is exit 2 (4); the base-rate gate checks k against the
samples and never replaces a record with a less informed one (5); ``inspect`` refuses another input in an
existing report (6); and the small ones (10).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(module: str, *args: str, timeout: float = 240, env: dict | None = None, input: str | None = None
        ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, input=input)


def cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return run("verifier_service.tools.cli", *args, **kw)


def trainer(*args: str, **kw) -> subprocess.CompletedProcess:
    return run("trainer.cli", *args, **kw)


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def error_line(proc, code: int) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("20")]  # log lines
    assert len(lines) == 1, proc.stderr
    return lines[0]


# ---- 1. Ctrl-C keeps every finished result, even behind a slow first batch -----------------------------------

@pytest.mark.docker
def test_ctrl_c_behind_a_slow_batch_keeps_the_later_ones_and_resume_fills_the_gap(service, tmp_path):
    slow = {"id": "slow", "completion": "import time\ntime.sleep(60)\ndef f():\n    return 1\n",
            "spec": {"kind": "python_assert", "tests": "assert f() == 1", "timeout_s": 10}}
    fast = [{"id": f"f{i}", "completion": str(i), "spec": {"kind": "format", "pattern": r"\d+"}} for i in range(6)]
    rows = [slow, *fast]
    path = write_rows(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    args = [sys.executable, "-m", "verifier_service.tools.cli", "verify", "--input", str(path), "--output", str(out),
            "--batch-size", "1", "--parallel", "4", "--server", service.address, "--quiet"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not out.exists() or out.read_text().count("\n") < len(fast)):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    if proc.returncode == 0:
        pytest.fail("the slow request finished before Ctrl-C: the test proves nothing")
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert sorted(r["id"] for r in kept) == sorted(r["id"] for r in fast)  # all but the slow one, kept
    assert f"interrupted ({len(fast)} result(s) written in {out}; run the same command with --resume" in err
    done = subprocess.run([*args, "--resume"], capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert done.returncode == 0, done.stderr
    assert f"resuming: {len(fast)} result(s) already in {out}, 1 to verify" in done.stderr
    final = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in final] == [r["id"] for r in rows]  # complete: back in input order
    assert final[0]["verdict"] == "TIMEOUT" and all(r["verdict"] == "PASSED" for r in final[1:])


@pytest.mark.docker
def test_a_refused_request_is_numbered_one_way(service, tmp_path):
    rows = [{"id": f"r{i}", "completion": "1", "spec": {"kind": "format", "pattern": r"\d"}} for i in range(5)]
    rows[3]["spec"]["pattern"] = "("
    path = write_rows(tmp_path / "in.jsonl", rows)
    line = error_line(cli("verify", "--input", str(path), "--server", service.address, "--batch-size", "2",
                          "--quiet"), 2)
    assert line.startswith("error: the service rejected request 4 (counted from 1) (id 'r3'): "), line
    assert "request 1 " not in line and "request 3 " not in line
