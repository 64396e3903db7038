"""NeMo Gym's code verifiers on the peers benchmark's tasks (``benchmarks/peers.py`` runs this file with the Python of
a venv that has PyPI ``nemo-gym`` and ``evalplus``; it imports nothing of this project, and NeMo Gym is never a
dependency).

One process for the whole run, spoken to in JSON lines: the first line is ``{"humaneval": [the 164 problems],
"evalplus_base": PATH, "parallel": N}``, each later line ``{"items": [...]}``, answered by one line ``{"seconds":
..., "verdicts": [...], "errors": [...]}``. The servers are NeMo Gym's own resources servers, built as its own tests
build them (``resources_servers/*/tests/test_app.py``: the server class with its config and a stub server client,
``ray.init`` first) and asked through their ``verify`` coroutine, the handler of their ``POST /verify`` (no HTTP
here), N at once (``asyncio.gather``; the server's own semaphore, ``num_processes`` = N, bounds them):

- stdio: the ``code_gen`` server (``CompCodingResourcesServer``, LiveCodeBench's form: ``verifier_metadata.
  unit_tests`` = ``{"inputs": [stdin...], "outputs": [stdout...], "fn_name": null}``, its config's
  ``unit_test_timeout_secs: 10``), which runs ``lcb_integration.compute_code_generation_metrics.check_correctness``
  as a Ray task;
- HumanEval: the ``evalplus`` server (``EvalPlusResourcesServer``, ``dataset: humaneval``, what NeMo Gym's
  ``benchmarks/human_eval`` uses), which runs ``evalplus.evaluate.check_correctness`` (base + plus inputs, outputs
  compared with EvalPlus's ground truth) as a Ray task. Its data, HumanEval+ v0.1.10, is a GitHub release asset
  that cannot be fetched here; ``HUMANEVAL_OVERRIDE_PATH`` (EvalPlus's own switch) points it at a file made from
  HumanEval's 164 problems and the base inputs, ground truth (``reference``), contracts and tolerances of EvalPlus's
  last committed ``HumanEvalPlus.jsonl`` (evalplus/evalplus 8939a53), with no plus inputs: HumanEval's own test
  inputs, judged EvalPlus's way.

The completion goes to the server as a model answer would: in a fenced ```python block (both servers take the last
fenced block). A verdict is PASSED where the reward is 1.0.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from unittest.mock import MagicMock

PASSED_REWARD = 1.0
# Run as a script, this file's folder comes first on the path, and benchmarks/datasets would hide Hugging Face's
# datasets (which evalplus imports).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def _site(name: str) -> str:
    import resources_servers

    return str(Path(resources_servers.__path__[0]) / name)


def humaneval_plus_file(problems: list[dict], evalplus_base: str, out_dir: str) -> str:
    """HumanEval+ rows (the keys ``evalplus.data.get_human_eval_plus`` checks) from HumanEval's problems and
    EvalPlus's committed base file (its rows in HumanEval's order, without task ids)."""
    base = [json.loads(line) for line in Path(evalplus_base).read_text().splitlines() if line.strip()]
    if len(base) != len(problems):
        raise SystemExit(f"{evalplus_base}: {len(base)} rows, HumanEval has {len(problems)}")
    path = Path(out_dir) / "HumanEvalPlus-base.jsonl"
    with path.open("w") as f:
        for problem, row in zip(problems, base, strict=True):
            f.write(json.dumps({"task_id": problem["task_id"], "prompt": problem["prompt"],
                                "entry_point": problem["entry_point"], "contract": row["contract"],
                                "canonical_solution": row["reference"], "base_input": row["base_input"],
                                "plus_input": [], "atol": row.get("atol", 0)}) + "\n")
    return str(path)


def response(text: str):
    from nemo_gym.openai_utils import NeMoGymResponse

    return NeMoGymResponse(id="resp", created_at=0.0, model="peer-benchmark", object="response",
                           output=[{"id": "msg", "role": "assistant", "status": "completed", "type": "message",
                                    "content": [{"annotations": [], "text": text, "type": "output_text"}]}],
                           parallel_tool_calls=False, tool_choice="auto", tools=[])


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


class Servers:
    def __init__(self, init: dict) -> None:
        import ray

        self.parallel = init["parallel"]
        self.tmp = tempfile.mkdtemp(prefix="peers-nemo-")
        os.environ["HUMANEVAL_OVERRIDE_PATH"] = humaneval_plus_file(init["humaneval"], init["evalplus_base"],
                                                                    self.tmp)
        # Each server's Ray tasks have their own runtime_env, so their own workers: room for N of each, or Ray
        # stops one server's idle workers to start the other's (2 s a start) whenever the workload changes.
        ray.init(num_cpus=2 * self.parallel, include_dashboard=False, object_store_memory=200 * 1024**2,
                 log_to_driver=False)
        self.loop = asyncio.new_event_loop()  # one loop for the run: the servers' semaphores belong to it
        self.code_gen = self._code_gen()
        self.evalplus = self._evalplus()

    def _import_app(self, name: str):
        """``resources_servers/<name>/app.py`` as NeMo Gym starts it: its directory first on the path (its helper
        packages, ``lcb_integration`` / ``evalplus_integration``, have no package of their own)."""
        import importlib.util

        directory = _site(name)
        sys.path.insert(0, directory)
        spec = importlib.util.spec_from_file_location(f"nemo_{name}_app", Path(directory) / "app.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.path.remove(directory)
        return module

    def _code_gen(self):
        from nemo_gym.server_utils import ServerClient

        app = self._import_app("code_gen")
        server = app.CompCodingResourcesServer(
            config=app.CompCodingResourcesServerConfig(  # resources_servers/code_gen/configs/code_gen.yaml
                host="127.0.0.1", port=0, entrypoint="app.py", name="code_gen", domain="coding",
                num_processes=self.parallel, unit_test_timeout_secs=10, debug=False),
            server_client=MagicMock(spec=ServerClient))
        return app, server

    def _evalplus(self):
        from nemo_gym.server_utils import ServerClient

        app = self._import_app("evalplus")
        server = app.EvalPlusResourcesServer(
            config=app.EvalPlusResourcesServerConfig(  # resources_servers/evalplus/configs/evalplus.yaml
                host="127.0.0.1", port=0, entrypoint="app.py", name="evalplus", domain="coding",
                dataset="humaneval", num_processes=self.parallel, min_time_limit=1.0, gt_time_limit_factor=4.0,
                evalplus_version="default"),
            server_client=MagicMock(spec=ServerClient))
        return app, server

    def request(self, item: dict):
        params = {"input": [{"role": "user", "content": "Solve the task."}]}
        if item["kind"] == "humaneval":
            app, server = self.evalplus
            body = app.EvalPlusVerifyRequest(responses_create_params=params,
                                             response=response(fenced(item["completion"])),
                                             verifier_metadata={"task_id": item["task_id"]})
        else:
            app, server = self.code_gen
            tests = {"inputs": [c["stdin"] for c in item["cases"]],
                     "outputs": [c["expected_stdout"] for c in item["cases"]], "fn_name": None}
            body = app.CompCodingVerifyRequest(responses_create_params=params,
                                               response=response(fenced(item["completion"])),
                                               verifier_metadata={"unit_tests": tests})
        return server, body

    async def verify(self, items: list[dict]) -> tuple[list[str], list[str | None]]:
        requests = [self.request(item) for item in items]
        answers = await asyncio.gather(*(server.verify(body) for server, body in requests), return_exceptions=True)
        verdicts, errors = [], []
        for answer in answers:
            if isinstance(answer, BaseException):
                verdicts.append("ERROR")
                errors.append(f"{type(answer).__name__}: {str(answer)[:200]}")
            else:
                verdicts.append("PASSED" if answer.reward >= PASSED_REWARD else "FAILED")
                errors.append(None)
        return verdicts, errors

    def close(self) -> None:
        import shutil

        import ray

        ray.shutdown()
        self.loop.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def warm(self, items: list[dict]) -> None:
        """One round of N checks before timing: Ray starts its workers on the first tasks (this service's pool is
        warmed the same way)."""
        self.loop.run_until_complete(self.verify(items))


def main() -> int:
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # Ray and the servers print: keep the answer channel clean
    servers = None
    for line in sys.stdin:
        job = json.loads(line)
        if servers is None:
            servers = Servers(job)
            warm = job.get("warm") or []
            if warm:
                servers.warm(warm)
            reply.write(json.dumps({"ready": True}) + "\n")
            reply.flush()
            continue
        started = time.perf_counter()
        verdicts, errors = servers.loop.run_until_complete(servers.verify(job["items"]))
        seconds = time.perf_counter() - started
        reply.write(json.dumps({"seconds": seconds, "verdicts": verdicts, "errors": errors}) + "\n")
        reply.flush()
    if servers is not None:
        servers.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
