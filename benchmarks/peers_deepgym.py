"""DeepGym's local executor on the peers benchmark's tasks (``benchmarks/peers.py`` runs this file with the Python of
a venv that has PyPI ``deepgym``; it imports nothing of this project, and DeepGym is never a dependency).

Reads ``{"items": [...], "parallel": N}`` on stdin, writes ``{"seconds": ..., "verdicts": [...], "errors": [...]}``.
Each item becomes a DeepGym ``Environment`` whose verifier follows DeepGym's own coding environments
(``deepgym/envs/*/verifier.py``): the solution is imported in DeepGym's isolated domain with
``deepgym_solution.load_solution`` (HumanEval: the problem's ``check(candidate)`` runs in the judge on the proxy
of the entry point, the prompt's helpers defined there from the trusted prompt), or run as a script per case with
``run_solution(..., input=stdin)`` (stdio: stdout compared token by token). ``DeepGym(mode="local")`` runs each
judge as a local subprocess (``LocalExecutor``); N runs go at once from a thread pool.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HUMANEVAL_VERIFIER = '''
from deepgym_solution import load_solution

PROMPT = {prompt!r}
TEST = {test!r}
ENTRY = {entry!r}


def verify(solution_path, test_cases_path=None):
    try:
        solution = load_solution(solution_path)
        candidate = getattr(solution, ENTRY)
    except Exception as e:
        return {{"score": 0.0, "passed": False, "details": f"import: {{type(e).__name__}}: {{e}}"}}
    namespace = {{}}
    exec(PROMPT + "\\n    pass\\n", namespace)  # the prompt's helpers (poly, encode_cyclic), trusted text
    exec(TEST, namespace)
    namespace[ENTRY] = candidate  # as in HumanEval's harness, a check that names the entry point calls the answer
    try:
        namespace["check"](candidate)
    except Exception as e:
        return {{"score": 0.0, "passed": False, "details": f"check: {{type(e).__name__}}"}}
    return {{"score": 1.0, "passed": True, "details": "all asserts passed"}}
'''

STDIO_VERIFIER = '''
import subprocess

from deepgym_solution import run_solution

CASES = {cases!r}


def verify(solution_path, test_cases_path=None):
    passed = 0
    for case in CASES:
        try:
            done = run_solution(solution_path, input=case["stdin"])
        except subprocess.TimeoutExpired:
            continue
        except Exception:
            continue
        if done.returncode == 0 and done.stdout.split() == case["expected_stdout"].split():
            passed += 1
    return {{"score": passed / len(CASES), "passed": passed == len(CASES), "details": f"{{passed}}/{{len(CASES)}}"}}
'''


def environment(item: dict):
    from deepgym import Environment

    if item["kind"] == "humaneval":
        prompt = item["prompt"]
        code = HUMANEVAL_VERIFIER.format(prompt=prompt, test=item["tests"], entry=item["entry_point"])
    else:
        code = STDIO_VERIFIER.format(cases=item["cases"])
    return Environment(task=item["kind"], verifier_code=code, timeout=60)


def main() -> int:
    from deepgym import DeepGym

    job = json.loads(sys.stdin.read())
    items, parallel = job["items"], job["parallel"]
    envs = [environment(item) for item in items]
    gym = DeepGym(mode="local")
    errors: list[str | None] = [None] * len(items)

    def one(i: int) -> str:
        try:
            result = gym.run(envs[i], items[i]["completion"])
        except Exception as exc:  # noqa: BLE001 - reported per item: a peer's error is not a verdict
            errors[i] = f"{type(exc).__name__}: {str(exc)[:200]}"
            return "ERROR"
        return "PASSED" if result.passed and result.score >= 1.0 else "FAILED"

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        verdicts = list(pool.map(one, range(len(items))))
    seconds = time.perf_counter() - started
    json.dump({"seconds": seconds, "verdicts": verdicts, "errors": errors}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
