"""`verifier-service inspect`: the terminal summary, the HTML report, flags, and the labels round trip."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from verifier_service.tools import cli, inspection
from verifier_service.tools.inspection import Sample

ROOT = Path(__file__).resolve().parents[2]
VERDICTS = {"PASSED", "FAILED", "PARTIAL", "MALFORMED", "COMPILE_ERROR", "RUNTIME_ERROR", "TIMEOUT", "MEMORY_LIMIT",
            "OUTPUT_LIMIT", "INFRA_ERROR"}
ASSERT = {"kind": "python_assert", "extract": "fenced_code", "timeout_s": 5,
          "tests": "assert f(1) == 2\nassert f(2) == 3"}


def fence(code: str) -> str:
    return f"```python\n{code}```"


def fixture_rows() -> list[dict]:
    """64 samples: every verdict at least once, the suspicious cases, and plain pure-kind samples."""
    cases = [
        ("passed", fence("def f(x):\n    return x + 1\n"), ASSERT),
        ("short", fence("f=lambda x:x+1\n"), ASSERT),
        ("stderr", fence("import sys\nsys.stderr.write('debug: computing\\n')\ndef f(x):\n    return x + 1\n"), ASSERT),
        ("failed", fence("def f(x):\n    return x - 1\n"), ASSERT),
        ("partial", fence("def f(x):\n    return 2 if x == 1 else 0\n"), {**ASSERT, "scoring": "fraction"}),
        ("malformed", "def f(x): return x + 1", ASSERT),
        ("runtime", fence("raise ValueError('boom')\n"), ASSERT),
        ("timeout", fence("def f(x):\n    while True:\n        pass\n"), {**ASSERT, "timeout_s": 1}),
        ("memory", fence("x = bytearray(2 * 1024**3)\n"), ASSERT),
        ("output", fence("while True:\n    print('x' * 10000)\n"), ASSERT),
        ("compile", "int main() { return x; }",
         {"kind": "stdio", "language": "cpp", "cases": [{"stdin": "", "expected_stdout": ""}]}),
        # A root $ref every answer meets, unresolvable (a nested $id keeps validation from resolving it).
        ("infra", "{}", {"kind": "json_schema", "schema": {"$ref": "missing.json",
                                                           "$defs": {"x": {"$id": "https://example.invalid/x"}}}}),
        ("xss", "</script><script>alert(1)</script> <b>bold</b>", {"kind": "format", "pattern": "<answer>.*</answer>"}),
    ]
    rows = [{"id": name, "prompt": [{"role": "user", "content": f"Task {name}: write f(x) = x + 1."}],
             "completion": completion, "spec": spec} for name, completion, spec in cases]
    schema = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    for i in range(64 - len(rows)):
        kind = i % 3
        if kind == 0:
            rows.append({"id": f"math-{i}", "prompt": f"What is {i} + {i}?",
                         "completion": f"The sum is \\boxed{{{2 * i + (i % 2)}}}.", "spec": {"kind": "math",
                                                                                             "gold": str(2 * i)}})
        elif kind == 1:
            answer = "<answer>ok</answer>" if i % 2 else "no tags here"
            rows.append({"id": f"format-{i}", "prompt": "Answer inside <answer> tags.", "completion": answer,
                         "spec": {"kind": "format", "pattern": "<answer>.*</answer>"}})
        else:
            rows.append({"id": f"json-{i}", "prompt": "Reply with a JSON object holding an integer n.",
                         "completion": json.dumps({"n": i if i % 4 else str(i)}),
                         "spec": {"kind": "json_schema", "schema": schema}})
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def report(service, tmp_path_factory):
    """The fixture inspected once against the session's service: (report dir, exit code, terminal output)."""
    base = tmp_path_factory.mktemp("inspect")
    samples = write_jsonl(base / "samples.jsonl", fixture_rows())
    capture = base / "stderr.txt"
    with open(capture, "w") as err:
        proc = subprocess.run([sys.executable, "-m", "verifier_service.tools.cli", "inspect", "--input", str(samples),
                               "--report", str(base / "report"), "--server", service.address],
                              stderr=err, stdout=subprocess.PIPE, text=True, timeout=300, cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="160"))
    return base / "report", proc.returncode, capture.read_text()


def card_ids(page: str) -> list[str]:
    return re.findall(r'<section class="card[^"]*" id="card-\d+" data-id="([^"]+)"', page)


@pytest.mark.docker
def test_inspect_covers_every_verdict_and_writes_the_report(report):
    directory, code, terminal = report
    assert code == cli.EXIT_INFRA, terminal  # one INFRA_ERROR sample: reported like `verify` does
    results = [json.loads(line) for line in (directory / "results.jsonl").read_text().splitlines()]
    assert len(results) == 64
    by_id = {r["id"]: r for r in results}
    assert {r["verdict"] for r in results} == VERDICTS, {r["id"]: r["verdict"] for r in results}
    for title in ("reward distribution", "malformed / well-formed wrong / correct", "format score x correctness",
                  "slowest 5 samples", "flagged sample(s)", "INFRA_ERRORs", "report:"):
        assert title in terminal, title
    summary = json.loads((directory / "inspection.json").read_text())
    assert summary["samples"] == 64 and summary["infra_errors"] == ["infra"]
    assert summary["outcomes"]["malformed"] >= 1 and summary["outcomes"]["correct"] >= 1
    assert summary["max_malformed_reward"] < summary["min_wellformed_reward"]
    flagged = summary["flagged"]
    assert "high_reward_short_code" in flagged["short"]
    assert "passed_with_stderr" in flagged["stderr"]
    assert "near_timeout" in flagged["timeout"]
    assert "infra_error" in flagged["infra"]
    assert "passed" not in flagged and by_id["passed"]["verdict"] == "PASSED"

    page = (directory / "report.html").read_text()
    ids = card_ids(page)
    assert sorted(ids) == sorted(by_id)
    flags_in_order = [bool(flagged.get(i)) for i in ids]
    assert flags_in_order == sorted(flags_in_order, reverse=True), "flagged cards must come first"
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//|<link|@import|url\(""", page), "external resource"
    assert "<svg" in page and 'aria-label="reward distribution"' in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page and "<script>alert(1)" not in page
    card = page[page.index('data-id="stderr"'):]
    card = card[:card.index("</section>")]
    assert "debug: computing" in card and "passed all 2 tests" in card and "style=" in card  # highlighted code
    assert "assert f(1) == 2" in card  # per-test results


@pytest.mark.docker
def test_labels_round_trip_and_prefill(report, tmp_path):
    directory, _, _ = report
    exported = write_jsonl(tmp_path / "labels.jsonl", [
        {"id": "short", "agree": False, "comment": "a lambda </script> is fine, but check it", "verdict": "PASSED",
         "reward": 1.0},
        {"id": "passed", "agree": True, "comment": "", "verdict": "PASSED", "reward": 1.0},
        {"id": "math-0", "agree": True, "comment": "", "verdict": "PASSED", "reward": 1.0},
    ])
    assert cli.main(["inspect", "--import-labels", str(exported), "--report", str(directory)]) == 0
    labels = inspection.load_labels(directory / "labels.jsonl")
    assert set(labels) == {"short", "passed", "math-0"} and labels["short"]["agree"] is False
    page = (directory / "report.html").read_text()
    card = page[page.index('data-id="short"'):]
    card = card[:card.index("</section>")]
    assert 'value="disagree" checked' in card and "a lambda &lt;/script&gt; is fine" in card
    assert "</script> is fine" not in page.split("const PREFILLED =", 1)[1].split("</script>", 1)[0]

    # A later export replaces a reading; labels of another report are refused.
    again = write_jsonl(tmp_path / "again.jsonl", [{"id": "short", "agree": True, "comment": "ok after all"}])
    assert cli.main(["inspect", "--import-labels", str(again), "--report", str(directory)]) == 0
    assert inspection.load_labels(directory / "labels.jsonl")["short"]["agree"] is True
    wrong = write_jsonl(tmp_path / "wrong.jsonl", [{"id": "not-a-sample", "agree": True}])
    assert cli.main(["inspect", "--import-labels", str(wrong), "--report", str(directory)]) == cli.EXIT_USAGE

    # Pre-filled: labels present when the report is (re)built show on the cards.
    samples = write_jsonl(tmp_path / "two.jsonl", fixture_rows()[:1] + fixture_rows()[-1:])
    rebuilt = tmp_path / "rebuilt"
    rebuilt.mkdir()
    write_jsonl(rebuilt / "labels.jsonl", [{"id": "passed", "agree": True, "comment": "read it"}])
    assert cli.main(["inspect", "--input", str(samples), "--report", str(rebuilt), "--server",
                     report_service_address(directory), "--quiet"]) == 0
    page = (rebuilt / "report.html").read_text()
    card = page[page.index('data-id="passed"'):]
    assert 'value="agree" checked' in card[:card.index("</section>")]


def report_service_address(directory: Path) -> str:
    return json.loads((directory / "inspection.json").read_text())["verifier"]


@pytest.mark.docker
def test_inspect_embedded_service(tmp_path):
    rows = [r for r in fixture_rows() if r["id"] in ("passed", "malformed", "math-0")]
    samples = write_jsonl(tmp_path / "s.jsonl", rows)
    proc = subprocess.run([sys.executable, "-m", "verifier_service.tools.cli", "inspect", "--input", str(samples),
                           "--report", str(tmp_path / "r"), "--memory-mb", "256"], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = [json.loads(line) for line in (tmp_path / "r" / "results.jsonl").read_text().splitlines()]
    assert [r["verdict"] for r in results] == ["PASSED", "MALFORMED", "PASSED"]


def _png_size_and_colours(path: Path) -> tuple[int, int, int]:
    """(width, height, distinct colours in a sample of rows): enough to tell a rendered page from a blank one."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, colour_type = struct.unpack(">IIBB", data[16:26])
    chunks, pos = [], 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            chunks.append(data[pos + 8:pos + 8 + length])
        pos += 12 + length
    raw = zlib.decompress(b"".join(chunks))
    channels = {2: 3, 6: 4}[colour_type]
    stride = width * channels + 1
    colours = set()
    for y in range(0, height, max(1, height // 40)):
        row = raw[y * stride + 1:(y + 1) * stride]  # filter bytes make the values approximate: fine for counting
        colours.update(row[i:i + 3] for i in range(0, len(row) - 3, channels * 7))
    assert depth == 8
    return width, height, len(colours)


def _chromium(*args: str, tmp: Path) -> subprocess.CompletedProcess:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("chromium is not installed (scripts/test.sh installs it)")
    return subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync", "--no-first-run",
                           f"--user-data-dir={tmp / 'profile'}", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.docker
def test_report_renders_in_headless_chromium(report, tmp_path):
    directory, _, _ = report
    page = directory / "report.html"
    shot = tmp_path / "report.png"
    proc = _chromium("--window-size=1280,2400", f"--screenshot={shot}", page.as_uri(), tmp=tmp_path)
    assert shot.exists(), proc.stderr[-2000:]
    width, height, colours = _png_size_and_colours(shot)
    assert (width, height) == (1280, 2400)
    assert colours > 20, "the screenshot looks blank"
    # The page's script ran: it filled in the reading progress from the recorded labels.
    dom = _chromium("--virtual-time-budget=3000", "--dump-dom", page.as_uri(), tmp=tmp_path).stdout
    assert len(re.findall(r'<section class="card', dom)) == 64
    progress = re.search(r'<span id="progress">([^<]*)</span>', dom)
    assert progress and re.match(r"\d+ of 64 read, \d+ disagree", progress.group(1)), progress


# ---- flags and summary on constructed results (no sandbox) ---------------------------------------------------

def result(verdict: str, reward: float | None, *, kind: str = "python_assert", fmt: float = 1.0,
           correctness: float = 0.0, tests: int = 1, extracted: str = "def f(x):\n    return x + 1\n",
           stderr: str = "", run_s: float = 0.3) -> dict:
    return {"id": "", "kind": kind, "verdict": verdict, "reward": reward, "format_score": fmt,
            "correctness_score": correctness, "tests_passed": tests if correctness else 0, "tests_total": tests,
            "detail": "", "tests": [], "extracted": extracted, "stdout_tail": "", "stderr_tail": stderr,
            "timings": {"queue_s": 0.0, "run_s": run_s, "total_s": run_s}}


def sample(sid: str, res: dict, completion: str = "", spec: dict | None = None) -> Sample:
    return Sample(id=sid, prompt="p", completion=completion or f"completion of {sid}",
                  spec=spec or {"kind": "python_assert", "tests": "t"},
                  result={**res, "id": sid})


def test_flags_on_constructed_results():
    samples = [
        sample("ok", result("PASSED", 1.0, correctness=1.0)),
        sample("tiny", result("PASSED", 1.0, correctness=1.0, extracted="f=1")),
        sample("empty", result("PASSED", 1.0, correctness=1.0, extracted="")),
        sample("untested", result("PASSED", 1.0, kind="math", correctness=1.0, tests=0, extracted="4")),
        sample("same-a", result("PASSED", 1.0, correctness=1.0), completion="same"),
        sample("same-b", result("FAILED", 0.2), completion="same "),
        sample("same-other-spec", result("FAILED", 0.2), completion="same", spec={"kind": "python_assert"}),
        sample("slow", result("PASSED", 1.0, correctness=1.0, run_s=9.0)),
        sample("slow-own-limit", result("FAILED", 0.2, run_s=1.7), spec={"kind": "python_assert", "timeout_s": 2}),
        sample("timeout", result("TIMEOUT", 0.2, run_s=0.1)),
        sample("noisy", result("PASSED", 1.0, correctness=1.0, stderr="warning: x\n")),
        sample("noisy-fail", result("FAILED", 0.2, stderr="Traceback\n")),
        sample("infra", result("INFRA_ERROR", None, fmt=0.0)),
    ]
    inspection.flag_samples(samples, default_timeout_s=10.0)
    flags = {s.id: set(s.flags) for s in samples}
    assert flags["ok"] == set() and flags["noisy-fail"] == set() and flags["same-other-spec"] == set()
    assert flags["tiny"] == {"high_reward_short_code"} and flags["empty"] == {"high_reward_short_code"}
    assert flags["untested"] == {"reward_without_tests"}
    assert flags["same-a"] == flags["same-b"] == {"identical_different_reward"}
    assert flags["slow"] == flags["slow-own-limit"] == flags["timeout"] == {"near_timeout"}
    assert flags["noisy"] == {"passed_with_stderr"}
    assert flags["infra"] == {"infra_error"}
    ordered = [s.id for s in inspection.reading_order(samples)]
    assert ordered.index("ok") > max(ordered.index(i) for i in flags if flags[i])
    summary = inspection.summarize(samples)
    assert summary["no_reward"] == 1 and summary["outcomes"]["no reward (INFRA_ERROR)"] == 1
    assert sum(summary["reward_histogram"]) == len(samples) - 1


def test_sample_set_hash_ignores_spec_spelling():
    a = [sample("1", result("PASSED", 1.0), spec={"kind": "math", "gold": "1", "extract": ""})]
    b = [sample("1", result("PASSED", 1.0), spec={"gold": "1", "kind": "math"})]
    c = [sample("1", result("PASSED", 1.0), spec={"kind": "math", "gold": "2"})]
    assert inspection.sample_set_hash(a) == inspection.sample_set_hash(b) != inspection.sample_set_hash(c)
