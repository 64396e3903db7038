"""A wheel install (not editable) carries the sandbox runner and runs a bubblewrap job.

The wheel is built from this checkout and installed, without its dependencies, into a fresh virtual
environment that sees the test environment's packages (grpc, jsonschema...) only through a path entry, so
``verifier_service`` can come from the wheel alone. ``verifier-service verify`` of that environment then
verifies with the bwrap backend, from a directory outside the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.backends("bwrap")

REQUESTS = [
    {"id": "right", "completion": "def f():\n    return 2\n",
     "spec": {"kind": "python_assert", "tests": "assert f() == 2"}},
    {"id": "wrong", "completion": "def f():\n    return 3\n",
     "spec": {"kind": "python_assert", "tests": "assert f() == 2"}},
]


def _run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=600, check=False, **kwargs)


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory) -> Path:
    """A fresh venv with only the wheel of this checkout installed in it."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"  # what the wheel is built from, copied: no build/ left in (or taken from) the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for package in ("verifier_service", "trainer"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                 str(tmp / "dist"), str(source))
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp / "dist").glob("rlvr_verifier-*.whl")
    venv = tmp / "venv"
    made = _run(sys.executable, "-m", "venv", "--without-pip", str(venv))
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    site = Path(_run(str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    # the test environment's dependencies, as a plain path entry: its .pth files (the editable install) stay unread
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = _run(sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel))
    if installed.returncode != 0:  # a pip without --python: install with the target's own path
        installed = _run(sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel))
    assert installed.returncode == 0, installed.stderr
    return venv


def test_the_wheel_ships_the_runner_and_the_reports_files(wheel_env):
    python = wheel_env / "bin" / "python"
    out = _run(str(python), "-c", "import verifier_service.sandbox.bwrap as b, verifier_service as v; "
               "import verifier_service.tools.inspection as i; assert 'flagged' in i._STYLE and 'labels' in i._SCRIPT; "
               "print(v.__file__); print(b.default_runner_dir())", cwd="/")
    assert out.returncode == 0, out.stderr
    package, runner = out.stdout.split()
    assert str(wheel_env) in package and str(ROOT) not in package  # the wheel's copy, not this checkout
    assert Path(runner, "runner.py").is_file() and str(wheel_env) in runner
    shipped = sorted(p.name for p in Path(runner).glob("*.py"))
    source = sorted(p.name for p in (ROOT / "verifier_service" / "runner").glob("*.py"))
    assert shipped == source


def test_a_wheel_install_runs_a_bwrap_job(wheel_env, tmp_path, backend_ready):
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps(r) + "\n" for r in REQUESTS))
    out_path = tmp_path / "results.jsonl"
    # the sandbox's interpreter must not live in the venv that holds the service's code: the base interpreter
    base_python = os.environ.get("RLVR_TEST_BWRAP_PYTHON") or str(Path(sys.base_prefix, "bin", "python3"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = _run(str(wheel_env / "bin" / "verifier-service"), "verify", "--input", str(requests), "--output",
                str(out_path), "--quiet", "--sandbox-backend", "bwrap", "--bwrap-python", base_python,
                "--bwrap-cgroup", os.environ.get("RLVR_TEST_BWRAP_CGROUP", "auto"), "--max-concurrency", "1",
                cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = {r["id"]: r["verdict"] for r in map(json.loads, out_path.read_text().splitlines())}
    assert results == {"right": "PASSED", "wrong": "FAILED"}
