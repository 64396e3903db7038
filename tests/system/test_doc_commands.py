"""The command blocks of README.md and docs/ marked runnable run as written, on a clean copy of the repository.

A block is marked by an HTML comment on the line before its fence (invisible when the page is rendered)::

    <!-- runnable -->
    ```bash
    .venv/bin/verifier-service verify --input examples/requests.jsonl --output results.jsonl
    ```

Only fast blocks are marked (CI time). Each runs with ``bash -e`` in a copy of the tracked files (so nothing a
command writes touches the checkout), ``.venv`` pointing at this interpreter's environment, in a process group
of its own that is killed afterwards (a block may start ``verifier-service serve ... &``); the service port
50051 is replaced by a free one (other services may hold 50051 on a shared machine). What a block must print
(``# PASSED, PASSED, FAILED``) is the reader's to check; the test holds it to exit 0.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from verifier_service.testing import free_port

ROOT = Path(__file__).resolve().parents[2]
MARK = "<!-- runnable -->"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "examples" / "e2e" / "README.md"]


def runnable_blocks() -> list[tuple[str, str]]:
    """(page:line, the block's text) of every marked bash block."""
    blocks = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.strip() != MARK:
                continue
            assert lines[i + 1:i + 2] == ["```bash"], f"{page}:{i + 1}: {MARK} before a non-bash block"
            end = next(j for j in range(i + 2, len(lines)) if lines[j].strip() == "```")
            blocks.append((f"{page.relative_to(ROOT)}:{i + 3}", "\n".join(lines[i + 2:end])))
    return blocks


BLOCKS = runnable_blocks()


def test_pages_mark_blocks():
    assert len(BLOCKS) >= 2, BLOCKS


@pytest.fixture
def clean_copy(tmp_path) -> Path:
    """The tracked files of the checkout (as a clean clone holds them), with .venv this interpreter's."""
    copy = tmp_path / "repo"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, files):
        source = ROOT / name.decode()
        if source.is_file():
            target = copy / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (copy / ".venv").symlink_to(Path(sys.prefix))
    return copy


@pytest.mark.docker
@pytest.mark.parametrize("where,block", BLOCKS, ids=[w for w, _ in BLOCKS])
def test_a_runnable_block_runs_as_written(where, block, clean_copy, docker_ready):
    script = re.sub(r"\b50051\b", str(free_port()), block)
    env = {**os.environ, "PATH": f"{clean_copy / '.venv' / 'bin'}:{os.environ['PATH']}", "PYTHONPATH": str(clean_copy),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    log = clean_copy.parent / "block.log"
    with open(log, "w") as out:  # a file, not a pipe: a background server keeps a pipe open after the block ends
        proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", script], cwd=clean_copy, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=240)
        except subprocess.TimeoutExpired:
            pass
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)  # the block's background servers, if any
            except ProcessLookupError:
                pass
            proc.wait()
    assert proc.returncode == 0, f"{where}: exit {proc.returncode}\n{script}\n---\n{log.read_text()[-4000:]}"
