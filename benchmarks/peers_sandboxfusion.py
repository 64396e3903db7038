"""SandboxFusion's judge (bytedance/SandboxFusion, run from its source: its Docker image cannot be pulled here) on the
peers benchmark's tasks, through its own HTTP API. Never a dependency: ``benchmarks/peers.py --sandboxfusion ROOT``
starts its server from ROOT, laid out as

    ROOT/src              the repository's tree (git archive of a clone), with an empty src/docs/build (its
                          README's step: the server mounts the built docs)
    ROOT/venv             python3.11 -m venv; pip install ROOT/src (its pyproject: FastAPI, uvicorn, ...)
    ROOT/envs/sandbox-runtime
                          python3.11 -m venv; pip install numpy (the interpreter that runs the code: its Python
                          HumanEval prelude imports numpy)
    ROOT/condabin/, ROOT/bin/activate
                          what stands in for conda: SandboxFusion finds the interpreter with
                          ``source CONDA_ROOT/bin/activate sandbox-runtime && which python``, CONDA_ROOT being the
                          folder above its own Python that has ``condabin``; ``activate`` here puts
                          ROOT/envs/$1/bin first on PATH
    ROOT/COMMIT           the commit the tree is from (the table names it)

and sends each item to ``POST /submit`` as its online judge takes a dataset it does not hold (``config.
provided_data``), N requests at once:

- HumanEval: dataset ``humaneval_python``, the row (prompt, test, entry_point) given, the completion the answer's
  body (``HumanEvalDataset`` in its default, non-freeform mode joins prompt, completion, tests and
  ``check(entry_point)`` and runs it once);
- stdio: dataset ``code_contests`` (``CommonOJDataset``), ``language: python``, the cases as its
  ``{"input": {"stdin"}, "output": {"stdout"}}`` tests, the program in a fenced block (it extracts code blocks).

The server runs with its own ``local.yaml``, the configuration its image starts with (``isolation: none``: a
subprocess per run, with rlimits; its ``lite`` isolation needs sudo, cgroup v1 tools and overlayfs mounts).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from verifier_service.testing import free_port


class SandboxFusion:
    def __init__(self, root: str, parallel: int, problems: list[dict]):
        self.root, self.parallel = Path(root), parallel
        self.problems = {p["task_id"]: p for p in problems}
        self.port = free_port()
        env = {**os.environ, "SANDBOX_CONFIG": "local"}
        env.pop("PYTHONPATH", None)
        self.log = open(self.root / "server.log", "w")
        self.proc = subprocess.Popen([str(self.root / "venv/bin/python"), "-m", "uvicorn", "sandbox.server.server:app",
                                      "--host", "127.0.0.1", "--port", str(self.port)],
                                     cwd=self.root / "src", env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/v1/ping", timeout=5).read()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"SandboxFusion did not start: see {self.root / 'server.log'}") from None
                time.sleep(0.5)

    def request(self, item: dict) -> dict:
        if item["kind"] == "humaneval":
            problem = self.problems[item["task_id"]]
            body = item["completion"][len(problem["prompt"]):]
            return {"dataset": "humaneval_python", "id": item["task_id"], "completion": body,
                    "config": {"provided_data": {"task_id": item["task_id"], "prompt": problem["prompt"],
                                                 "test": problem["test"], "entry_point": problem["entry_point"]}}}
        tests = [{"input": {"stdin": c["stdin"]}, "output": {"stdout": c["expected_stdout"]}} for c in item["cases"]]
        return {"dataset": "code_contests", "id": 0, "completion": f"```python\n{item['completion']}\n```",
                "config": {"language": "python", "provided_data": {"id": 0, "test": tests}}}

    def submit(self, item: dict) -> tuple[str, str | None]:
        data = json.dumps(self.request(item)).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/submit", data=data,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=300) as answer:
                result = json.loads(answer.read())
        except Exception as exc:  # noqa: BLE001 - reported per item: a peer's error is not a verdict
            return "ERROR", f"{type(exc).__name__}: {str(exc)[:200]}"
        return ("PASSED" if result.get("accepted") else "FAILED"), None

    def run(self, items: list[dict]) -> tuple[float, list[str]]:
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=self.parallel) as pool:
            answers = list(pool.map(self.submit, items))
        seconds = time.perf_counter() - started
        for item, (_, error) in zip(items, answers, strict=True):
            if error:
                print(f"  SandboxFusion could not judge {item.get('task_id', item['kind'])}: {error}",
                      file=sys.stderr)
        return seconds, [verdict for verdict, _ in answers]

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
