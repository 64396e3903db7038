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
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


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
    lines = [line for line in proc.stderr.splitlines()  # less log lines and the datasets library's progress bar
             if line.strip() and not line.startswith(("20", "Generating train split"))]
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


# ---- 2. Ctrl-C in the trainer's commands: exit 130, one line that says what was kept -------------------------

def interrupt_when(args: list[str], ready, tmp_path: Path, timeout: float = 240) -> tuple[int, str]:
    """Starts the command, sends SIGINT once ``ready(stderr so far)`` holds; returns (exit code, stderr)."""
    from support.trainer_smoke import OFFLINE_ENV

    log = tmp_path / "stderr.txt"
    with open(log, "w") as err_file:
        proc = subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.DEVNULL, stderr=err_file, text=True,
                                cwd=ROOT, env={**os.environ, **OFFLINE_ENV, "PYTHONPATH": str(ROOT)})
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and not ready(log.read_text()) and proc.poll() is None:
                time.sleep(0.05)
            assert proc.poll() is None, log.read_text()[-3000:]
            assert ready(log.read_text()), "the command never got to the point to interrupt"
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return proc.returncode, log.read_text()


def our_lines(err: str) -> list[str]:
    """stderr less the libraries' log lines and progress bars."""
    return [line for line in err.splitlines() if line.startswith(("interrupted", "error", "Traceback"))]


@pytest.mark.docker
def test_ctrl_c_in_trainer_train_keeps_run_json_and_says_so(service, tmp_path):
    from support.trainer_smoke import tiny_run, write_smoke_config

    model, data, out = tiny_run(tmp_path)
    config = write_smoke_config(tmp_path / "run.yaml", model, data, out, service.address, max_steps=500, save_steps=1)
    code, err = interrupt_when(["trainer.cli", "train", "--config", str(config)],
                               lambda _: (out / "checkpoint-2").is_dir(), tmp_path)
    assert code == 130, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    lines = our_lines(err)
    assert len(lines) == 1, err[-3000:]
    line = lines[0]
    assert line.startswith("interrupted (Ctrl-C) at step ") and f"kept {out}/run.json" in line, line
    assert "checkpoint-1" in line and "no final model was saved" in line
    record = json.loads((out / "run.json").read_text())
    assert record["interrupted"] is True and record["global_step"] >= 2
    assert [h for h in record["log_history"] if "reward" in h]


def test_ctrl_c_before_training_leaves_no_empty_directory(tmp_path):
    """Interrupted while loading (here: the first reward call waits on a port where nothing answers)."""
    from support.trainer_smoke import tiny_run, write_smoke_config

    model, data, out = tiny_run(tmp_path)
    silent = socket.socket()  # a port that takes connections and never answers: the health check waits on it
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    config = write_smoke_config(tmp_path / "run.yaml", model, data, out, f"127.0.0.1:{silent.getsockname()[1]}")
    try:
        code, err = interrupt_when(["trainer.cli", "train", "--config", str(config)],
                                   lambda err: "--skip-gates: training without" in err, tmp_path)
    finally:
        silent.close()
    assert code == 130, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert our_lines(err) == ["interrupted (Ctrl-C) before the first step: nothing kept (no run.json, no checkpoint)"]
    assert not out.exists()


def test_ctrl_c_in_trainer_sample_is_one_line(tmp_path):
    from support.trainer_smoke import tiny_run

    model, data, _ = tiny_run(tmp_path)
    code, err = interrupt_when(["trainer.cli", "sample", "--model", str(model), "--dataset", str(data), "--n", "64",
                                "--max-new-tokens", "4000", "--output", str(tmp_path / "s.jsonl")],
                               lambda err: "sampling" in err.lower() or "generat" in err.lower(), tmp_path)
    assert code == 130, err[-3000:]
    assert our_lines(err) == [f"interrupted (Ctrl-C) while sampling: nothing kept ({tmp_path / 's.jsonl'} is "
                              "written when sampling ends)"]


def test_ctrl_c_in_the_base_rate_gate_is_one_line_and_writes_no_record(tmp_path):
    from support.trainer_smoke import write_dataset

    data = tmp_path / "prompts.jsonl"
    write_dataset(data)
    spec = json.loads(json.loads(data.read_text().splitlines()[1])["verification"])
    samples = write_rows(tmp_path / "s.jsonl", [{"id": f"0-{i}", "prompt": "p", "completion": "x", "spec": spec}
                                                for i in range(8)])
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        code, err = interrupt_when(["trainer.cli", "gate", "base-rate", "--model", "m", "--dataset", str(data),
                                    "--output-dir", str(tmp_path / "run"), "--samples", str(samples), "--verifier",
                                    f"127.0.0.1:{silent.getsockname()[1]}"],
                                   lambda err: "Generating train split: 4" in err, tmp_path)
    finally:
        silent.close()
    assert code == 130, err[-3000:]
    assert our_lines(err) == ["interrupted (Ctrl-C): nothing kept; no gate record written"]
    assert not (tmp_path / "run" / "gates" / "base_rate.json").exists()


# ---- 4. diagnose: a run where every check was skipped is "nothing to diagnose" (exit 2), not healthy ------------

def test_diagnose_with_every_check_skipped_is_exit_2_not_healthy(tmp_path):
    from trainer.config import RunConfig

    run = tmp_path / "run"
    run.mkdir()
    config = RunConfig(model="m", dataset="d", max_steps=5, logging_steps=10).to_dict()  # 5 steps, logged every 10
    summary = {"train_runtime": 12.0, "train_loss": 0.1, "step": 5, "epoch": 1.0}  # only the end-of-run summary
    (run / "run.json").write_text(json.dumps({"config": config, "log_history": [summary], "deviations": []}))
    proc = trainer("diagnose", str(run))
    assert proc.returncode == 2, proc.stderr
    assert "no finding" not in proc.stdout and "nothing diagnosed" in proc.stdout
    assert "kl not logged although beta=0.01" in proc.stdout and "beta=0:" not in proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error")]
    assert lines == [f"error: nothing to diagnose: every check was skipped (1 log entries in {run / 'run.json'}; a "
                     "run needs logged training steps: logging_steps below the run's length)"], proc.stderr
    as_json = trainer("diagnose", str(run), "--json")
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["healthy"] is False


# ---- 5. base-rate: k checked against the samples; a record is never replaced by a less informed one ----------

@pytest.mark.docker
def test_base_rate_checks_k_and_keeps_the_better_informed_record(service, tmp_path):
    spec = {"kind": "format", "pattern": "<answer>.*</answer>"}
    data = write_rows(tmp_path / "prompts.jsonl", [{"prompt": "p", "verification": json.dumps(spec)},
                                                    {"prompt": "q", "verification": json.dumps(spec)}])
    common = ["gate", "base-rate", "--model", "m", "--dataset", str(data), "--output-dir", str(tmp_path / "run"),
              "--verifier", service.address]

    def samples(name: str, per_prompt: int, passing: bool) -> Path:
        return write_rows(tmp_path / name, [
            {"id": f"{p}-{j}", "prompt": "p", "spec": spec,
             "completion": "<answer>1</answer>" if passing and j == 0 else "no"}
            for p in range(2) for j in range(per_prompt)])

    four = samples("four.jsonl", 4, passing=True)
    line = error_line(trainer(*common, "--k", "8", "--samples", str(four)), 2)
    assert line == (f"error: --k 8: {four} holds fewer than 8 samples for 2 of 2 prompt(s) (as few as 4; ids "
                    "<prompt>-<sample>): pass@8 needs 8 per prompt; run with --k 4, or sample 8 per prompt "
                    "(trainer sample --n 8)")
    record = tmp_path / "run" / "gates" / "base_rate.json"
    assert not record.exists()
    failing = trainer(*common, "--k", "8", "--samples", str(samples("eight.jsonl", 8, passing=False)))
    assert failing.returncode == 4 and "base-rate gate FAILED" in failing.stderr
    assert "over 2 prompts x 8 samples from" in failing.stderr
    refused = trainer(*common, "--k", "4", "--samples", str(four))
    line = error_line(refused, 2)
    assert line.startswith(f"error: {record} already holds a FAILED base-rate record for this reward config and "
                           "model over 16 samples") and "this run measured 8 samples (passed)" in line, line
    assert json.loads(record.read_text())["passed"] is False
    replaced = trainer(*common, "--k", "4", "--samples", str(four), "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert "over 2 prompts x 4 samples from" in replaced.stderr and "base-rate gate passed" in replaced.stderr
    assert "replaced the earlier record (FAILED, 16 samples" in replaced.stderr
    assert json.loads(record.read_text())["replaced"]["passed"] is False


# ---- 6. inspect: one report directory, one sample set ----------------------------------------------------------

@pytest.mark.docker
def test_inspect_refuses_another_input_in_an_existing_report(service, tmp_path):
    def rows(prefix: str, n: int) -> list[dict]:
        return [{"id": f"{prefix}{i}", "prompt": "p", "completion": str(i),
                 "spec": {"kind": "format", "pattern": r"\d+"}} for i in range(n)]

    first = write_rows(tmp_path / "a.jsonl", rows("a", 4))
    report = tmp_path / "report"
    args = ["--report", str(report), "--server", service.address, "--quiet"]
    assert cli("inspect", "--input", str(first), *args).returncode == 0
    write_rows(report / "labels.jsonl", [{"id": "a0", "agree": True, "comment": "", "verdict": "PASSED"}])
    before = {p.name: p.read_bytes() for p in report.iterdir()}
    other = write_rows(tmp_path / "b.jsonl", rows("b", 16))
    line = error_line(cli("inspect", "--input", str(other), *args), 2)
    assert line == (f"error: --report {report} already holds the report of another sample set (4 samples from "
                    f"{first}, 1 label(s)): give a new directory for this input, or remove that one first")
    assert {p.name: p.read_bytes() for p in report.iterdir()} == before  # untouched
    again = cli("inspect", "--input", str(first), *args)
    assert again.returncode == 0, again.stderr
    assert "labels already recorded: 1 of 4 samples read, 1 agree" in again.stderr
    assert cli("inspect", "--input", str(other), "--report", str(tmp_path / "new"), "--server", service.address,
               "--quiet").returncode == 0


# ---- 9. OpenRLHF: its end-of-text token is taken off; a plain label is one clear refusal; verl ground truths ----

RAW_ADD = "def add(a, b):\n    return a + b\n"
ADD_SPEC = {"kind": "python_assert", "tests": "assert add(1, 2) == 3"}  # raw extraction: the response is the program


@pytest.fixture(scope="module")
def http_service(docker_ready):
    from dataclasses import replace

    from verifier_service.testing import free_port

    from support.service import TEST_CONFIG, RunningService

    running = RunningService(replace(TEST_CONFIG, http_port=free_port()))
    yield running
    running.close()


@pytest.mark.docker
def test_openrlhf_http_client_a_raw_program_with_its_eos_token_passes_and_a_plain_label_says_why(http_service):
    import asyncio

    from openrlhf.utils import agent

    executor = agent.SingleTurnAgentExecutor(http_service.http_url + "/get_reward")
    prompt = "<|im_start|>user\nWrite add(a, b).<|im_end|>\n<|im_start|>assistant\n"
    query = prompt + RAW_ADD + "<|im_end|>"  # as OpenRLHF decodes it: skip_special_tokens=False
    [info] = asyncio.run(executor._fetch_rewards_via_http([query], [prompt], [json.dumps(ADD_SPEC)]))
    assert info["scores"] == [1.0] and info["rewards"] == [1.0]
    # a token inside the response is the model's own: not taken off
    [inside] = asyncio.run(executor._fetch_rewards_via_http([prompt + RAW_ADD + "<|im_end|>x = 1\n"], [prompt],
                                                            [json.dumps(ADD_SPEC)]))
    assert inside["scores"] == [0.0]
    import requests

    plain = requests.post(http_service.http_url + "/get_reward", json={"query": [query], "prompts": [prompt],
                                                                       "labels": ["12"]}, timeout=30)
    message = ("labels[0]: the label is plain text ('12'), not a verification spec: OpenRLHF's --data.label_key "
               "must name a column th")
    assert plain.status_code == 400 and plain.json()["error"].startswith(message)
    assert plain.reason.startswith(message)  # what their client logs of a refusal: the status line
    verl_shaped = requests.post(http_service.http_url + "/get_reward", json={
        "query": [query], "labels": [{"ground_truth": "12", "style": "rule"}]}, timeout=30)
    assert verl_shaped.status_code == 400
    assert "labels[0]: the label is verl's reward_model field ({ground_truth, style}), not a verification spec" in \
        verl_shaped.json()["error"]
    # their log line says what to fix (read off their logger: its handler holds whichever stdout it was imported
    # under, which in a whole test run is an earlier test's capture)
    import logging

    lines: list[str] = []
    catch = logging.Handler()
    catch.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    agent.logger.addHandler(catch)
    try:
        with pytest.raises(RuntimeError):  # their client retries any failure (5 times), then gives up
            asyncio.run(executor._fetch_rewards_via_http([query], [prompt], ["12"]))
    finally:
        agent.logger.removeHandler(catch)
    assert any(message in line or message.replace("'", "\\'") in line for line in lines), lines[-3:]


@pytest.mark.docker
def test_openrlhf_reward_file_strips_the_eos_token_and_refuses_a_plain_label_once(pointed, monkeypatch):
    import asyncio

    from openrlhf.utils import agent

    import trainer.adapters.openrlhf as adapter
    from verifier_service.errors import InvalidSpec

    executor = agent.SingleTurnAgentExecutor(adapter.__file__)  # --reward.remote_url /path/to/openrlhf.py
    prompt = "<|user|>Write add(a, b).<|assistant|>"
    [info] = asyncio.run(executor._fetch_rewards_via_func([prompt + RAW_ADD + "<|endoftext|>"], [prompt],
                                                          [json.dumps(ADD_SPEC)]))
    assert float(info["scores"][0]) == 1.0
    monkeypatch.setenv(adapter.STRIP_ENV, "")  # configurable: nothing taken off, the token fails the program
    [kept] = asyncio.run(executor._fetch_rewards_via_func([prompt + RAW_ADD + "<|endoftext|>"], [prompt],
                                                          [json.dumps(ADD_SPEC)]))
    assert float(kept["scores"][0]) == 0.0
    with pytest.raises(InvalidSpec, match=r"labels\[0\]: the label is plain text \('12'\), not a verification "
                                          r"spec: --data.label_key must name"):
        asyncio.run(executor._fetch_rewards_via_func([prompt + RAW_ADD], [prompt], ["12"]))


@pytest.mark.docker
def test_verl_native_ground_truths_are_converted_or_refused_saying_why(pointed):
    from trainer.adapters import verl
    from verifier_service.errors import InvalidSpec

    assert verl.compute_score("openai/gsm8k", "so the answer is \\boxed{72}", "72")["acc"] == 1.0
    assert verl.compute_score("lighteval/MATH", "\\boxed{\\frac{1}{2}}", "\\frac{1}{2}")["acc"] == 1.0
    program = "```python\nprint(int(input()) * 2)\n```"
    cases = json.dumps({"inputs": ["2\n", "5\n"], "outputs": ["4\n", "10\n"]})
    assert verl.compute_score("codecontests", program, cases)["acc"] == 1.0
    with pytest.raises(InvalidSpec, match="the ground truth of data source 'my_data' is not a verification spec"):
        verl.compute_score("my_data", "x", "72")
    with pytest.raises(InvalidSpec, match=r"calls a function \('f'\)"):
        verl.compute_score("apps", "x", json.dumps({"inputs": ["1"], "outputs": ["2"], "fn_name": "f"}))


# ---- 10. the small ones ----------------------------------------------------------------------------------------

@pytest.mark.docker
def test_python_sandbox_env_get_reward_is_synchronous_like_run_python(service):
    import inspect
    import warnings

    from trainer.environment import PythonSandboxEnv, python_sandbox_factory

    assert not inspect.iscoroutinefunction(PythonSandboxEnv.get_reward)
    env = python_sandbox_factory(service.address)()
    env.reset(verification=json.dumps(ADD_SPEC))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a coroutine never awaited would be an error here
        assert "Traceback" not in env.run_python(RAW_ADD)
        assert env.get_reward() == 1.0
        env.reset(verification=json.dumps(ADD_SPEC))
        env.run_python("def add(a, b):\n    return a - b\n")
        assert env.get_reward() == 0.2  # format 1, correctness 0
    env.reset()


def test_a_url_as_server_address_says_give_host_port(tmp_path):
    path = write_rows(tmp_path / "in.jsonl", [{"id": "a", "completion": "1", "spec": {"kind": "format",
                                                                                   "pattern": "1"}}])
    line = error_line(cli("verify", "--input", str(path), "--server", "http://localhost:50051"), 3)
    assert line == ("error: malformed verifier address: 'http://localhost:50051' is a URL: give HOST:PORT "
                    "(localhost:50051; gRPC, not HTTP; TLS is the --server-ca / RLVR_VERIFIER_TLS_CA setting, not a "
                    "scheme)")


@pytest.mark.docker
def test_wait_returns_when_the_service_serves_and_exits_3_when_none_does(service):
    proc = cli("wait", "--server", service.address, "--timeout", "30")
    assert proc.returncode == 0 and "is serving" in proc.stderr
    line = error_line(cli("wait", "--server", "127.0.0.1:1", "--timeout", "1"), 3)
    assert "no verifier service answers at 127.0.0.1:1" in line


def test_data_convert_takes_the_datasets_own_names(tmp_path):
    fixtures = ROOT / "tests" / "fixtures" / "datasets"
    for name, fixture in (("code_contests", "code_contests"), ("mbpp_sanitized", "mbpp_sanitized"),
                          ("deepmind/code_contests", "code_contests")):
        out = tmp_path / f"{fixture}.jsonl"
        proc = trainer("data", "convert", "--format", name, "--input", str(fixtures / f"{fixture}.jsonl"),
                       "--output", str(out))
        assert proc.returncode == 0, proc.stderr
        assert out.read_text().strip()
    proc = trainer("data", "convert", "--format", "nope", "--input", "x", "--output", str(tmp_path / "o"))
    assert proc.returncode == 2 and "unknown format 'nope'; formats: code-contests, evalplus" in proc.stderr


def test_a_misspelled_variable_is_named_with_the_right_one(tmp_path):
    path = write_rows(tmp_path / "in.jsonl", [{"id": "a", "completion": "1", "spec": {"kind": "format",
                                                                                   "pattern": "1"}}])
    proc = cli("verify", "--input", str(path), "--server", "127.0.0.1:1", env={"RLVR_VERIFIER_MAX_CONCURENCY": "3"})
    assert ("warning: RLVR_VERIFIER_MAX_CONCURENCY is not a setting and is ignored (did you mean "
            "RLVR_VERIFIER_MAX_CONCURRENCY?)") in proc.stderr


def test_an_unknown_spec_field_suggests_the_near_one(tmp_path):
    path = write_rows(tmp_path / "in.jsonl", [{"id": "a", "completion": "1", "spec": {
        "kind": "python_assert", "test": "assert True"}}])
    line = error_line(cli("verify", "--input", str(path), "--server", "127.0.0.1:1"), 2)
    assert line == (f"error: {path}:1: request 'a': unknown spec field(s) 'test' (did you mean 'tests'?); "
                    "`verifier-service list --kind python_assert` lists the kind's fields")


def test_tenants_and_catalog_lists_keep_every_column_when_piped(tmp_path):
    catalog = cli("catalog", "list", "examples/catalog")
    assert catalog.returncode == 0, catalog.stderr
    assert "…" not in catalog.stdout and max(map(len, catalog.stdout.splitlines())) > 80
    tenants = cli("tenants", "list", "--tenants", "examples/tenants.yaml")
    assert tenants.returncode == 0, tenants.stderr
    assert "…" not in tenants.stdout


def test_trainer_config_names_the_lora_the_memory_plan_turned_on():
    proc = trainer("config", "--model-size", "7B", "--gpus", "1")
    assert proc.returncode == 0, proc.stderr
    deviations = proc.stdout.split("# Deviations from the reference recipe:")[1].split("\n\n")[0]
    assert "none" not in deviations
    assert ("lora=true (rank 16, alpha 32): adapters instead of the recipe's full fine-tuning; reason: trainer config "
            "--model-size 7B: full fine-tuning does not fit 1 x 80 GB") in deviations


def test_the_readme_names_every_exit_code():
    readme = (ROOT / "README.md").read_text()
    assert "4 a gate failed" in readme and "130 interrupted" in readme


# ---- 7. one result type: the JSON form (dicts with string verdicts) from the sync API and the async client ------

@pytest.mark.docker
def test_async_client_and_sync_api_give_the_same_dicts_and_sessions_say_statuses_by_name(service):
    import asyncio

    import verifier_service
    from verifier_service.client import VerifierClient
    from verifier_service.client.sessions import SessionClient

    rows = [{"id": "a", "completion": RAW_ADD, "spec": ADD_SPEC},
            {"id": "b", "completion": "no", "spec": {"kind": "format", "pattern": r"\d"}}]

    async def run() -> list[dict]:
        async with await VerifierClient.connect(service.address) as client:
            return await client.verify_json(rows)

    async_results = asyncio.run(run())
    sync_results = verifier_service.verify(rows, server=service.address)
    assert [(r["id"], r["verdict"], r["reward"]) for r in async_results] == [("a", "PASSED", 1.0),
                                                                             ("b", "MALFORMED", 0.0)]
    assert [(r["id"], r["verdict"], r["reward"]) for r in sync_results] == [
        (r["id"], r["verdict"], r["reward"]) for r in async_results]
    assert set(async_results[0]) == set(sync_results[0])
    with SessionClient(service.address) as sessions:
        session = sessions.open().session_id
        try:
            assert sessions.run(session, "x = 6 * 7\nx")["status"] == "CELL_OK"
            failed = sessions.run(session, "1 / 0")
            assert failed["status"] == "CELL_ERROR" and "ZeroDivisionError" in json.dumps(failed)
        finally:
            sessions.close_session(session)
