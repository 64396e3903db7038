"""The CLI as a user meets it (issue 18, items 3, 5 and 6), through the real command.

Results are written as batches finish, so Ctrl-C keeps them and ``--resume``
finishes the run; the output path is checked before any work; ``--input -``
reads stdin; a non-UTF-8 file is a one-line error; every error is one line
with the fix and a documented exit code, never a traceback. ``list`` reads at
80 columns, each subcommand's help shows its own flags, docs/specs.md is what
the kinds say, and ``verifier_service.verify`` is the synchronous API.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORMAT_ROW = {"id": "a", "completion": "42", "spec": {"kind": "format", "pattern": r"\d+"}}


def cli(*args: str, input: str | bytes | None = None, timeout: float = 240, env: dict | None = None
        ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verifier_service.tools.cli", *args], capture_output=True,
                          text=not isinstance(input, bytes), input=input, timeout=timeout, cwd=ROOT,
                          env={**os.environ, **(env or {})})


def stderr_of(proc) -> str:
    return proc.stderr if isinstance(proc.stderr, str) else proc.stderr.decode()


def one_line_error(proc, code: int) -> str:
    err = stderr_of(proc)
    assert proc.returncode == code, (proc.returncode, err)
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ---- input and output --------------------------------------------------------------------------------------

def test_non_utf8_input_is_one_line_with_the_fix(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(json.dumps(FORMAT_ROW).encode() + b"\n" + b'{"id": "b", "completion": "caf\xe9", '
                     b'"spec": {"kind": "format", "pattern": "x"}}\n')
    line = one_line_error(cli("verify", "--input", str(path), "--server", "127.0.0.1:1"), 2)
    offset = path.read_bytes().index(b"\xe9")
    assert line == (f"error: {path}:2: not UTF-8 text (byte 0xe9 at offset {offset}): save the file as UTF-8 "
                    "(JSON escapes such as \\u00e9 are fine)")


def test_the_output_path_is_checked_before_any_work(tmp_path):
    path = write_rows(tmp_path / "in.jsonl", [FORMAT_ROW])
    # (--server names a port where nothing listens: the output's error comes first, before any connection)
    line = one_line_error(cli("verify", "--input", str(path), "--output", str(tmp_path), "--server", "127.0.0.1:1"), 2)
    assert line == f"error: --output {tmp_path} is a directory: give a file path, e.g. {tmp_path / 'results.jsonl'}"
    missing = tmp_path / "no" / "such" / "out.jsonl"
    line = one_line_error(cli("verify", "--input", str(path), "--output", str(missing), "--server", "127.0.0.1:1"), 2)
    assert line == (f"error: --output {missing}: the directory {missing.parent} does not exist: create it "
                    f"(mkdir -p {missing.parent}) or choose another path")
    line = one_line_error(cli("verify", "--input", str(path), "--resume", "--server", "127.0.0.1:1"), 2)
    assert line == "error: --resume needs --output FILE (the results written so far)"


@pytest.mark.docker
def test_input_from_stdin(service):
    rows = [FORMAT_ROW, {**FORMAT_ROW, "id": "b", "completion": "no digits"}]
    proc = cli("verify", "--input", "-", "--server", service.address, "--quiet",
               input="".join(json.dumps(r) + "\n" for r in rows))
    assert proc.returncode == 0, proc.stderr
    assert [(r["id"], r["verdict"]) for r in map(json.loads, proc.stdout.splitlines())] == [
        ("a", "PASSED"), ("b", "MALFORMED")]  # (format: no match is malformed)


def test_an_unreachable_service_exits_3_in_one_line(tmp_path):
    path = write_rows(tmp_path / "in.jsonl", [FORMAT_ROW])
    line = one_line_error(cli("verify", "--input", str(path), "--server", "127.0.0.1:1", timeout=60), 3)
    assert "no verifier service answers at 127.0.0.1:1" in line and "verifier-service serve" in line


def test_no_sandbox_backend_exits_3_in_one_line(tmp_path):
    path = ROOT / "examples" / "requests.jsonl"
    line = one_line_error(cli("verify", "--input", str(path), "--docker-url", f"unix://{tmp_path}/none.sock"), 3)
    assert "Docker engine is not reachable" in line


@pytest.mark.docker
def test_ctrl_c_keeps_the_finished_results_and_resume_finishes(docker_ready, tmp_path):
    slow = "import time\ntime.sleep(1.5)\ndef f():\n    return 1\n"
    rows = [{"id": f"r{i}", "completion": slow, "spec": {"kind": "python_assert", "tests": "assert f() == 1",
                                                         "timeout_s": 20}} for i in range(8)]
    path = write_rows(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    args = [sys.executable, "-m", "verifier_service.tools.cli", "verify", "--input", str(path), "--output", str(out),
            "--batch-size", "1", "--parallel", "1", "--memory-mb", "256"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (not out.exists() or out.read_text().count("\n") < 2):
            time.sleep(0.1)
        assert out.exists() and out.read_text().count("\n") >= 2, "no results were written as batches finished"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    assert 2 <= len(kept) < len(rows)
    assert all(r["verdict"] == "PASSED" for r in kept)
    assert f"interrupted ({len(kept)} result(s) written in {out}; run the same command with --resume to finish)" \
        in err
    done = subprocess.run([*args, "--resume"], capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert done.returncode == 0, done.stderr
    assert f"resuming: {len(kept)} result(s) already in {out}" in done.stderr
    final = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["id"] for r in final) == sorted(r["id"] for r in rows)  # each once
    assert all(r["verdict"] == "PASSED" for r in final)


def test_resume_drops_a_line_cut_short_and_refuses_a_foreign_file(tmp_path):
    from verifier_service.errors import VerifierError
    from verifier_service.tools.cli import finished_ids

    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "a", "verdict": "PASSED"}\n{"id": "b", "verd')
    assert finished_ids(out) == {"a"}
    assert out.read_text() == '{"id": "a", "verdict": "PASSED"}\n'
    out.write_text('not json\n{"id": "a"}\n')
    with pytest.raises(VerifierError, match=r"out.jsonl:1: not a result line"):
        finished_ids(out)


# ---- list, help, docs --------------------------------------------------------------------------------------

def test_list_reads_at_80_columns_and_filters_and_prints_json():
    proc = cli("list", env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80
    for kind in ("python_assert", "python_io", "stdio", "pytest", "json_schema", "tool_call", "math", "format"):
        assert f"\n{kind}" in "\n" + proc.stdout
    one = cli("list", "--kind", "python_io", env={"COLUMNS": "80"})
    assert one.returncode == 0 and one.stdout.startswith("python_io  (sandboxed")
    assert "    entry_point (string, required)" in one.stdout and "json_schema" not in one.stdout
    data = json.loads(cli("list", "--json").stdout)
    kinds = {k["name"]: k for k in data["kinds"]}
    assert kinds["python_io"]["sandboxed"] is True
    assert {p["name"] for p in kinds["format"]["parameters"]} >= {"pattern", "match", "timeout_s"}
    assert "answer_tag" in data["extract_modes"]
    line = one_line_error(cli("list", "--kind", "haskell"), 2)
    assert line.startswith("error: no verifier kind 'haskell'; the kinds: ")


def test_each_subcommand_help_shows_its_own_flags():
    verify = cli("verify", "--help").stdout
    assert "--resume" in verify and "--sandbox-image" in verify and "--memory-mb" in verify
    for flag in ("--tls-cert", "--port", "--max-pending", "--metrics-port", "--workers", "--tenants"):
        assert flag not in verify, flag
    doctor = cli("doctor", "--help").stdout
    assert "--sandbox-backend" in doctor and "--bwrap-path" in doctor
    for flag in ("--max-batch-size", "--default-timeout-s", "--port", "--input"):
        assert flag not in doctor, flag
    serve = cli("serve", "--help").stdout
    assert "--port" in serve and "--tls-cert" in serve and "--input" not in serve
    top = cli("--help").stdout
    assert "exit codes:" in top and "3    infrastructure" in top


def test_the_spec_reference_is_generated_and_current():
    from verifier_service.kinds import COMMON_PARAMS, all_kinds
    from verifier_service.tools.specdoc import DOC, render

    proc = subprocess.run([sys.executable, "-m", "verifier_service.tools.specdoc", "--check"], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 0, \
        proc.stderr + "\n(run `python -m verifier_service.tools.specdoc` and commit docs/specs.md)"
    text = DOC.read_text()
    assert text == render()
    for kind in all_kinds():
        section = text.split(f"\n## {kind.name}\n", 1)[1].split("\n## ", 1)[0]
        for p in kind.params:
            assert f"| `{p.name}` |" in section, (kind.name, p.name)
        assert "Example request:" in section, kind.name
    for p in COMMON_PARAMS:
        assert f"| `{p.name}` |" in text
    assert "`timeout_s`: unset or `0` means the service's `default_timeout_s`" in text


def test_quick_benchmark_runs_never_replace_the_committed_results():
    from benchmarks.run import HERE, output_dir

    assert output_dir(None, quick=True) == HERE / "quick"
    assert output_dir(None, quick=False) == HERE
    assert output_dir(Path("/tmp/x"), quick=True) == Path("/tmp/x")


def test_report_to_is_a_run_config_choice_not_a_deviation():
    from trainer.config import RunConfig

    for value, expected in (("none", "none"), ("tensorboard", "tensorboard"), ("wandb, trackio", ["wandb", "trackio"])):
        config = RunConfig(report_to=value)
        assert not any("report_to" in d for d in config.validate())
        assert config.to_grpo_kwargs()["report_to"] == expected


def test_inspection_asks_the_registry_for_code_kinds():
    from verifier_service.tools.inspection import code_kinds

    assert set(code_kinds()) == {"python_assert", "python_io", "stdio", "pytest", "function_tests", "function_io",
                                 "sql"}


# ---- the synchronous API -----------------------------------------------------------------------------------

def test_sync_verify_embedded_pure_kinds():
    import verifier_service

    results = verifier_service.verify([FORMAT_ROW, {"completion": '{"a": 1}', "spec": {
        "kind": "json_schema", "schema": {"type": "object", "required": ["b"]}}}])
    assert [(r["id"], r["verdict"]) for r in results] == [("a", "PASSED"), ("1", "FAILED")]


def test_sync_verify_a_lone_surrogate_in_a_spec_is_invalid_in_a_completion_a_result():
    import verifier_service
    from verifier_service.errors import InvalidSpec

    bad = [FORMAT_ROW, {"id": "b", "completion": "{}", "spec": {"kind": "json_schema", "schema": {"enum": ["\udcff"]}}}]
    with pytest.raises(InvalidSpec, match=r"request 1: request 'b': spec.schema holds a lone surrogate"):
        verifier_service.verify(bad)
    results = verifier_service.verify([{"id": "m", "completion": '{"a": "\udcff"}', "spec": {
        "kind": "json_schema", "schema": {"type": "object", "required": ["a"]}}}])
    assert results[0]["id"] == "m" and results[0]["verdict"] != "INFRA_ERROR" and results[0]["reward"] is not None


@pytest.mark.docker
def test_sync_verify_against_a_server_and_inside_a_running_loop(service):
    import verifier_service
    from verifier_service.errors import InvalidSpec

    rows = [{"id": "x", "completion": "def f():\n    return 1\n",
             "spec": {"kind": "python_assert", "tests": "assert f() == 1"}}, FORMAT_ROW]

    async def in_a_notebook():  # Jupyter runs cells inside an event loop
        return verifier_service.verify(rows, server=service.address)

    results = asyncio.run(in_a_notebook())
    assert [(r["id"], r["verdict"], r["reward"]) for r in results] == [("x", "PASSED", 1.0), ("a", "PASSED", 1.0)]
    bad = [FORMAT_ROW, {**FORMAT_ROW, "id": "oops", "spec": {"kind": "format", "pattern": "("}}]
    with pytest.raises(InvalidSpec, match=r"request 1 \(id 'oops'\)"):
        verifier_service.verify(bad, server=service.address, batch_size=1)


@pytest.mark.docker
def test_inspect_writes_results_as_they_finish_and_resumes(service, tmp_path):
    rows = [{"id": f"s{i}", "prompt": "p", "completion": str(i) if i % 2 else "x",
             "spec": {"kind": "format", "pattern": r"\d+"}} for i in range(6)]
    samples = write_rows(tmp_path / "samples.jsonl", rows)
    report = tmp_path / "report"
    args = ("inspect", "--input", str(samples), "--report", str(report), "--server", service.address, "--quiet",
            "--batch-size", "2")
    first = cli(*args)
    assert first.returncode == 0, first.stderr
    results = report / "results.jsonl"
    full = results.read_text().splitlines()
    assert [json.loads(line)["id"] for line in full] == [r["id"] for r in rows]
    # as after a crash: two results written, the third cut short
    results.write_text("\n".join(full[:2]) + "\n" + full[2][:20])
    again = cli(*args, "--resume")
    assert again.returncode == 0, again.stderr
    assert f"resuming: 2 result(s) already in {results}" in again.stderr
    assert [json.loads(line)["verdict"] for line in results.read_text().splitlines()] == [
        "MALFORMED", "PASSED"] * 3
    file_report = tmp_path / "a-file"
    file_report.write_text("")
    line = one_line_error(cli("inspect", "--input", str(samples), "--report", str(file_report), "--server",
                              "127.0.0.1:1"), 2)
    assert line == f"error: --report {file_report} is a file: give a directory (it will hold report.html)"


@pytest.mark.docker
def test_the_readme_catalog_example_runs_as_written(make_service, tmp_path):
    """README, "Teams": the example tenants and catalog, the public example key, the example input file."""
    svc = make_service(tenants=str(ROOT / "examples" / "tenants.yaml"), catalog=str(ROOT / "examples" / "catalog"))
    key = {"RLVR_VERIFIER_API_KEY": "rlvr_example-math-KpXfGFQaYuk4jsx9KcK9GSzk"}
    proc = cli("verify", "--server", svc.address, "--verifier", "math/gsm8k-answer@2", "--input",
               "examples/catalog/gsm8k-requests.jsonl", "--quiet", env=key)
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["verdict"] for line in proc.stdout.splitlines()] == ["PASSED", "PASSED", "FAILED"]
    readme = (ROOT / "README.md").read_text()
    assert "--verifier math/gsm8k-answer@2 --input examples/catalog/gsm8k-requests.jsonl" in readme
    # @2 reads GSM8K's own "#### x" line (its markers are in its published content); @1 reads a box or a tag only
    hashes = tmp_path / "hashes.jsonl"
    hashes.write_text(json.dumps({"id": "h", "completion": "48 / 2 = 24, 48 + 24 = 72\n#### 72",
                                  "spec": {"gold": "72"}}) + "\n")
    verdicts = {}
    for version in ("1", "2"):
        proc = cli("verify", "--server", svc.address, "--verifier", f"math/gsm8k-answer@{version}", "--input",
                   str(hashes), "--quiet", env=key)
        verdicts[version] = json.loads(proc.stdout)["verdict"]
    assert verdicts == {"1": "MALFORMED", "2": "PASSED"}, verdicts
    assert "--input requests.jsonl" not in readme and "trainer diagnose" in readme
