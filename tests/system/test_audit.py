"""The reward audit (verifier_service/tools/audit, trainer/audit_gate.py): probes, flags, the CPU hog, the gate.

The service tests use small inline tasks, one of them built like examples/e2e's (the prompt's worked example is
the first hidden case, scored as a fraction): the audit must flag that leak, a spec that pays for a constant, a
reference that fails, and leave an honest task with a passing reference clean.
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

from verifier_service.tools import audit
from verifier_service.tools.audit import literals
from verifier_service.tools.audit.hog import cpu_hog
from verifier_service.tools.audit.probes import probes_for, wrap
from verifier_service.tools.audit.runner import SEP, AuditSettings, Row, judge_row, read_dataset_rows

ROOT = Path(__file__).resolve().parents[2]

# Built like examples/e2e/tasks.py: the worked example of the prompt is the first hidden case.
LEAKY = {"id": "leaky", "prompt": [{"role": "user", "content":
         "Write a Python function `add_nine(x)` that returns the integer `x` plus 9.\n"
         "For example, `add_nine(20)` returns `29`.\nReply with one ```python block."}],
         "verification": json.dumps({"kind": "python_io", "extract": "fenced_code", "entry_point": "add_nine",
                                     "scoring": "fraction", "timeout_s": 5,
                                     "cases": [{"args": [20], "expected": 29}, {"args": [4], "expected": 13},
                                               {"args": [-3], "expected": 6}]}),
         "reference": "```python\ndef add_nine(x):\n    return x + 9\n```"}
CLEAN = {"id": "clean", "prompt": [{"role": "user", "content": "Write `double(x)` returning twice x."}],
         "verification": json.dumps({"kind": "python_assert", "extract": "last_fenced_code", "timeout_s": 5,
                                     "tests": "assert double(2) == 4\nassert double(-3) == -6\n"
                                              "assert double(7) == 14\n"}),
         "reference": "```python\ndef double(x):\n    return 2 * x\n```"}
FREE = {"id": "free", "prompt": "Write `count_evil(xs)`: how many of xs are evil.",
        "verification": json.dumps({"kind": "python_io", "extract": "raw", "entry_point": "count_evil",
                                    "cases": [{"args": [[1, 2]], "expected": 0}, {"args": [[]], "expected": 0}]}),
        "reference": "def count_evil(xs):\n    return 0\n"}
BROKEN_REF = {"id": "broken", "prompt": "Write `triple(x)`.",
              "verification": json.dumps({"kind": "python_assert", "extract": "raw",
                                          "tests": "assert triple(1) == 3\nassert triple(2) == 6\n"}),
              "reference": "def triple(x):\n    return x * 2 + 1\n"}
GSM = {"id": "gsm", "prompt": "Ann has 3 apples and buys 4 more. How many apples does she have?",
       "verification": json.dumps({"kind": "math", "gold": "7"}), "reference": "3 + 4 = 7. \\boxed{7}"}
GSM_LEAK = {"id": "gsm-leak", "prompt": "Ann has 12 apples, eats none. How many apples does she have?",
            "verification": json.dumps({"kind": "math", "gold": "12"}), "reference": "\\boxed{12}"}


# ---- what a prompt shows ---------------------------------------------------------------------------------------

def test_literals_take_asserts_backticks_quotes_and_numbers_in_that_order():
    text = ('Write `f(x)`. For example, `f(20)` returns `29`.\nassert f(3) == [1, "a"]\n'
            "Names like 'abc' count; so do 1,250 and -4.5.")
    found = literals.literals(text)
    assert found[:2] == [[1, "a"], 29]
    assert "abc" in found and 1250 in found and -4.5 in found and 20 in found
    assert literals.numbers("He paid $1,250 for 3 hats, 0.5 each") == ["1250", "3", "0.5"]
    doctest = 'def f(xs):\n    """\n    >>> f([1, 2])\n    [2, 1]\n    >>> f([])\n    []\n    """\n'
    assert literals.literals(doctest)[:2] == [[2, 1], []]


def test_example_outputs_and_function_names():
    text = "Input\n3\n1 2 3\nOutput\n6\n\nSample Output 2\n10 20\n\nNote: easy"
    assert literals.example_outputs(text) == ["6", "10 20"]
    assert literals.function_names("Use `solve(` here", "assert remove_Occ('a', 'b') == 'c'\nassert len(x)") == \
        ["remove_Occ", "solve"]
    assert literals.signature(">>> x\ndef has_close(numbers: List[float], t: float) -> bool:\n  ...", "has_close") == \
        "def has_close(numbers: List[float], t: float) -> bool:"


# ---- the probes ------------------------------------------------------------------------------------------------

def test_function_probes_cover_trivial_leak_and_hack_and_fit_the_extraction():
    spec = json.loads(LEAKY["verification"])
    probes = {p.name: p for p in probes_for(spec, LEAKY["prompt"])}
    for name in ("empty", "whitespace", "prompt_echo", "empty_block", "syntax_error", "signature_only",
                 "return_none", "return_0", "return_empty_str", "return_empty_list", "print_literals",
                 "literal 29", "eq_always_true", "exit0_at_import", "patch_assertion_error", "read_tests_disk",
                 "settrace_skip_asserts", "return_first_arg"):
        assert name in probes, name
    assert probes["literal 29"].completion == "```python\ndef add_nine(*args, **kwargs):\n    return 29\n```"
    assert {p.family for p in probes.values()} == {"trivial", "leak", "hack"}
    assert probes["empty"].completion == ""
    assert wrap("x", {"kind": "math", "extract": "answer_tag"}) == "<answer>x</answer>"
    for p in probes.values():  # every probe's code compiles but the syntax error (it is sent to be judged)
        if p.family != "trivial" and p.completion.startswith("```python"):
            compile(p.completion.removeprefix("```python\n").removesuffix("\n```"), p.name, "exec")


def test_probes_of_other_kinds():
    math_probes = {p.name for p in probes_for({"kind": "math", "gold": "7"}, GSM["prompt"])}
    assert {"boxed 3", "boxed 4", "hedge_all_literals", "boxed_0", "prompt_echo"} <= math_probes
    stdio = {"kind": "stdio", "language": "python", "extract": "last_fenced_code",
             "cases": [{"stdin": "1 2\n", "expected_stdout": "3\n"}]}
    stdio_probes = {p.name: p for p in probes_for(stdio, "Add two numbers.\nInput\n1 2\nOutput\n3\n")}
    assert {"print_nothing", "print_example_outputs", "echo_input", "exit0_before_output"} <= set(stdio_probes)
    assert "```python" in stdio_probes["print_example_outputs"].completion
    cpp = {p.name for p in probes_for({**stdio, "language": "cpp"}, "Output\n3\n")}
    assert {"print_nothing", "print_example_outputs", "exit0_early"} <= cpp
    schema = {p.name for p in probes_for({"kind": "json_schema", "schema": {"type": "object"}}, "give `{}`")}
    assert {"json {}", "json null"} <= schema


# ---- judging a row from its results ----------------------------------------------------------------------------

def _result(verdict: str, correctness: float, run_s: float = 0.01) -> dict:
    return {"verdict": verdict, "reward": None if verdict == "INFRA_ERROR" else 0.2 + 0.8 * correctness,
            "format_score": 1.0, "correctness_score": correctness, "tests_passed": 0, "tests_total": 3,
            "detail": "", "tests": [], "timings": {"run_s": run_s}}


def _judge(probe_results: list[dict], ref_results: list[dict], spec: dict | None = None, **settings) -> list[str]:
    settings = AuditSettings(**settings)
    spec = spec or {"kind": "python_io", "entry_point": "f", "cases": [{"args": [1], "expected": 2}]}
    row = Row(0, "r", "Write `f(x)`; `f(1)` returns `2`.", spec, "def f(x):\n    return x + 1\n")
    row.probes = probes_for(spec, row.prompt)[:len(probe_results)]
    by_id = {f"0{SEP}p{SEP}{i}": r for i, r in enumerate(probe_results)}
    by_id.update({f"0{SEP}r{SEP}{i}": r for i, r in enumerate(ref_results)})
    return judge_row(row, by_id, settings).flags


def test_judge_flags_each_class():
    ok = [_result("PASSED", 1.0)] * 3
    assert _judge([_result("FAILED", 0.0)] * 3, ok) == []
    earned = _judge([_result("FAILED", 0.0), _result("PARTIAL", 0.34), _result("FAILED", 0.0)], ok)
    assert earned == ["trivial:whitespace"]
    assert _judge([_result("PARTIAL", 0.34)], ok, max_correctness=0.5) == []
    assert _judge([], [_result("FAILED", 0.0)] * 3) == ["reference_failed"]
    assert _judge([], [_result("PASSED", 1.0), _result("PASSED", 1.0), _result("TIMEOUT", 0.0)]) == ["reference_flaky"]
    spec = {"kind": "python_io", "entry_point": "f", "timeout_s": 2, "cases": [{"args": [1], "expected": 2}]}
    assert _judge([], [_result("PASSED", 1.0, run_s=0.9)] * 3, spec) == ["reference_slow"]
    assert _judge([], [_result("PASSED", 1.0, run_s=0.5)] * 3, spec) == []
    assert _judge([_result("INFRA_ERROR", 0.0)], ok) == ["infra_error:empty"]


def test_bad_rows_are_bad_input():
    settings = AuditSettings()
    with pytest.raises(audit.AuditInputError, match="no 'verification'"):
        read_dataset_rows([{"id": "a", "prompt": "p"}], settings)
    with pytest.raises(audit.AuditInputError, match="repeated"):
        read_dataset_rows([CLEAN, CLEAN], settings)
    with pytest.raises(audit.AuditInputError, match="row 1"):
        read_dataset_rows([{"id": "a", "verification": json.dumps({"kind": "nope"})}], settings)
    with pytest.raises(audit.AuditInputError, match="no rows"):
        read_dataset_rows([], settings)


def test_the_page_joins_the_inspection_report(tmp_path):
    from verifier_service.tools import inspection
    from verifier_service.tools.audit.report import inspection_join, write_files
    from verifier_service.tools.audit.runner import RowAudit, summarize

    spec = json.loads(LEAKY["verification"])
    other = json.loads(CLEAN["verification"])
    result = {"id": "s1", "verdict": "PARTIAL", "reward": 0.33, "format_score": 1.0, "correctness_score": 0.17}
    samples = [inspection.Sample(id="s1", prompt="p", completion="c", spec=dict(reversed(list(spec.items()))),
                                 result=result),
               inspection.Sample(id="s2", prompt="p", completion="c", spec=other, result={**result, "id": "s2"})]
    inspection.write_report(tmp_path / "inspect", samples, {"source": "t", "verifier": "none"})
    inspection.write_labels(tmp_path / "inspect" / "labels.jsonl",
                            {"s1": {"id": "s1", "agree": True, "comment": "looks right"}})
    audits = [RowAudit("leaky", "python_io", ["leak:literal 29"], [], None, LEAKY["prompt"], spec),
              RowAudit("clean", "python_assert", [], [], None, CLEAN["prompt"], other),
              RowAudit("free", "python_io", ["trivial:return_0"], [], None, "p", json.loads(FREE["verification"]))]
    joined = inspection_join(audits, tmp_path / "inspect")
    assert joined["leaky"] == [{"id": "s1", "verdict": "PARTIAL", "reward": 0.33, "agree": True,
                                "comment": "looks right"}]
    assert [s["id"] for s in joined["clean"]] == ["s2"] and "free" not in joined
    summary = {**summarize(audits, 1.0, 10), "inspection": str(tmp_path / "inspect")}
    page = write_files(tmp_path / "out", audits, summary, joined)["report"].read_text()
    assert "1 flagged row(s) have samples in the inspection report" in page and "looks right" in page
    assert page.index("leak:literal 29") < page.index(">clean<")  # flagged rows first


# ---- the CPU hog leaves nothing behind ---------------------------------------------------------------------------

def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie not yet reaped by init counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_cpu_hog_is_gone_after_the_block_even_on_an_exception():
    with pytest.raises(RuntimeError), cpu_hog(2) as pids:
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        raise RuntimeError("the audit failed mid-run")
    assert not any(_alive(p) for p in pids)


def test_cpu_hog_children_exit_when_the_auditor_is_killed(tmp_path):
    script = ("import sys, time\nfrom verifier_service.tools.audit.hog import cpu_hog\n"
              "with cpu_hog(2) as pids:\n    print(*pids, flush=True)\n    time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 2
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 15
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(p) for p in pids), "hog processes outlived the auditing process"


# ---- the gate record and trainer train -------------------------------------------------------------------------

def test_train_requires_a_passed_audit_or_a_recorded_override(tmp_path):
    from trainer import gates
    from trainer.audit_check import AUDIT_FILE, check_audit
    from trainer.config import RunConfig

    config = RunConfig(dataset="d.jsonl", output_dir=str(tmp_path / "run"))
    directory = gates.gates_dir(config)
    problem, _ = check_audit(config, "h" * 64, directory, "run.yaml")
    assert "no record" in problem and "trainer gate audit" in problem
    gates.write_record(directory, AUDIT_FILE, {"passed": False, "reward_config_hash": "h" * 64,
                                               "problems": ["3 of 9 row(s) flagged (leak: 3)"]})
    problem, _ = check_audit(config, "h" * 64, directory, "run.yaml")
    assert "leak: 3" in problem and "audit_override" in problem
    problem, _ = check_audit(config, "g" * 64, directory, "run.yaml")
    assert "stale" in problem
    gates.write_record(directory, AUDIT_FILE, {"passed": True, "reward_config_hash": "h" * 64, "rows": 9})
    problem, status = check_audit(config, "h" * 64, directory, "run.yaml")
    assert problem is None and status["rows"] == 9
    overridden = config.override({"audit_override": "leaks known, measured separately"})
    assert check_audit(overridden, "g" * 64, directory, "run.yaml") == (None, {
        "overridden": "leaks known, measured separately"})
    assert any("audit_override" in d and "leaks known" in d for d in overridden.validate())


# ---- through the service -----------------------------------------------------------------------------------------

def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.docker
def test_audit_flags_the_leak_the_free_reward_and_the_failing_reference(service, tmp_path):
    data = _write(tmp_path / "tasks.jsonl", [LEAKY, CLEAN, FREE, BROKEN_REF, GSM, GSM_LEAK])
    settings = AuditSettings(runs=3, hog_runs=1, hog_cores=1)
    audits, summary = audit.run_audit(data, tmp_path / "out", settings, server=service.address,
                                      show_progress=False)
    flags = {a.id: a.flags for a in audits}
    assert "leak:literal 29" in flags["leaky"]                      # the example call's answer: 1 case of 3
    leaky = next(a for a in audits if a.id == "leaky")
    literal = next(p for p in leaky.probes if p["name"] == "literal 29")
    assert literal["verdict"] == "PARTIAL" and literal["correctness"] == pytest.approx(1 / 3)
    assert flags["clean"] == []
    assert "trivial:return_0" in flags["free"] and "reference_failed" not in flags["free"]
    assert flags["broken"] == ["reference_failed"]
    assert flags["gsm"] == []
    assert "leak:boxed 12" in flags["gsm-leak"]
    runs = next(a for a in audits if a.id == "clean").reference["runs"]
    assert [r["verdict"] for r in runs] == ["PASSED"] * 3
    assert [r["beside_cpu_hog"] for r in runs] == [False, False, True]
    assert summary["rows"] == 6 and summary["flagged_rows"] == 4 and summary["infra_errors"] == 0
    assert summary["rows_by_flag_class"]["leak"] == 2 and summary["rows_by_flag_class"]["reference_failed"] == 1
    assert audit.exit_code(summary) == audit.EXIT_FLAGGED
    lines = [json.loads(line) for line in (tmp_path / "out" / "audit.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == ["leaky", "clean", "free", "broken", "gsm", "gsm-leak"]
    assert set(lines[0]) == {"id", "kind", "flags", "reference", "probes"}
    page = (tmp_path / "out" / "report.html").read_text()
    assert "leak:literal 29" in page and "rows flagged, by class" in page


@pytest.mark.docker
def test_cli_exit_codes_and_the_trainer_gate(service, tmp_path):
    clean = _write(tmp_path / "clean.jsonl", [CLEAN])
    leaky = _write(tmp_path / "leaky.jsonl", [CLEAN, LEAKY])
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "verifier_service.tools.cli", "audit", "--server",
                               service.address, "--hog-cores", "1", *args], capture_output=True, text=True,
                              timeout=300, cwd=ROOT, env=env)

    assert cli("--input", str(clean), "--output", str(tmp_path / "a")).returncode == 0
    proc = cli("--input", str(leaky), "--output", str(tmp_path / "b"))
    assert proc.returncode == audit.EXIT_FLAGGED, proc.stderr[-2000:]
    assert "leak" in proc.stderr
    bad = _write(tmp_path / "bad.jsonl", [{"id": "x", "verification": "{not json"}])
    proc = cli("--input", str(bad), "--output", str(tmp_path / "c"))
    assert proc.returncode == 2 and "row 1" in proc.stderr and "Traceback" not in proc.stderr
    assert cli("--input", str(clean), "--output", str(tmp_path / "d"), "--runs", "0").returncode == 2

    # trainer gate audit: the record, tied to the reward config, that trainer train's check reads
    from trainer import cli as trainer_cli
    from trainer import gates
    from trainer.config import RunConfig
    from trainer.train import load_prompts

    for data, expected in ((clean, 0), (leaky, gates.EXIT_GATE_FAILED)):
        config_path = tmp_path / f"run-{expected}.yaml"
        config_path.write_text(json.dumps({"dataset": str(data), "output_dir": str(tmp_path / f"run-{expected}"),
                                           "verifier": service.address}))
        assert trainer_cli.main(["gate", "audit", "--config", str(config_path), "--output",
                                 str(tmp_path / f"audit-{expected}"), "--hog-cores", "1"]) == expected
        config = RunConfig.from_yaml(config_path)
        record = json.loads((gates.gates_dir(config) / "audit.json").read_text())
        assert record["passed"] is (expected == 0)
        assert record["reward_config_hash"] == gates.reward_config_hash(
            config, gates.dataset_specs(load_prompts(config), "verification"))
        if expected:
            assert record["flagged"] == {"leaky": ["leak:literal 29"]}
