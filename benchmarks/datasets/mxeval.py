"""Amazon's MXEval (multilingual HumanEval and MBXP) reference solutions through this service, next to the same
programs run the way MXEval's own harness runs them; a per-language table of what passes.

MXEval's harness (``mxeval/execution.py``, ``check_correctness_*``) writes one file, prompt + completion + test,
and runs it: TypeScript ``tsc FILE.ts --target es5 --lib es2016`` (counted as compiled when tsc exits 2: type
errors, the JavaScript still written, as the tests' untyped ``import ... 'assert'`` always gives) then ``node
FILE.js``; PHP ``php FILE.php``; Perl ``perl FILE.pl``; C# ``dotnet build`` of a net6.0 project with
KellermanSoftware.CompareNetObjects, then the binary. Exit status 0 is a pass. Here each row is a
``function_tests`` request: setup = the prompt, completion = the canonical solution, tests = the row's test.
``--harness`` also runs MXEval's commands on the same programs in the languages image (one container per
language, offline), so that a reference the dataset's own harness fails is told from one this service fails,
and, from a mark line appended for that run (``MARK_LINE``), a harness pass whose tests ran to their end from an
exit status 0 of a program whose tests never ran.

    # the data stays out of the repo: fetch amazon-science/mxeval (a bare git dir, MIRROR), then
    D=/work/data/mxeval; mkdir -p $D; for f in multilingual_humaneval/HumanEval_typescript_v1 \\
        multilingual_humaneval/HumanEval_php_v1.1 multilingual_humaneval/HumanEval_perl_v1.1 \\
        multilingual_humaneval/HumanEval_csharp_v1 mbxp/mbtsp_release_v1.2 mbxp/mbphp_release_v1.2 \\
        mbxp/mbcsp_release_v1.2; do git --git-dir=MIRROR show HEAD:data/$f.jsonl > $D/${f#*/}.jsonl; done
    # MBXP Perl with canonical solutions was released as v1.2 and renamed back to v1 without them (3440356):
    git --git-dir=MIRROR show 23baf03:data/mbxp/mbplp_release_v1.2.jsonl > $D/mbplp_release_v1.2.jsonl
    python -m benchmarks.datasets.mxeval [--data /work/data/mxeval] [--source mbxp|humaneval]
        [--languages typescript,php] [--every N] [--limit N] [--harness | --harness-only] [--negative]
        [--out FILE]

Rows without a canonical solution are counted and skipped (MXEval's multilingual HumanEval has none for these
languages). Prints one line per task where this service and the harness disagree (or, without ``--harness``, per
task not passed; with ``--negative``, per task passed) and the table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from benchmarks.datasets.common import disagreement, harness_columns, run_programs, verify_all
from verifier_service.config import load_config
from verifier_service.kinds.function_tests import SUPPORTED
from verifier_service.testing import InProcessService

FILES = {
    "humaneval": {"typescript": "HumanEval_typescript_v1", "php": "HumanEval_php_v1.1",
                  "perl": "HumanEval_perl_v1.1", "csharp": "HumanEval_csharp_v1"},
    "mbxp": {"typescript": "mbtsp_release_v1.2", "php": "mbphp_release_v1.2", "perl": "mbplp_release_v1.2",
             "csharp": "mbcsp_release_v1.2"},
}
EXTENSIONS = {"typescript": "ts", "php": "php", "perl": "pl", "csharp": "cs"}

# --negative: each canonical solution with a first statement that fails the call (the same prompt and tests): a run
# where any of these passes is a forged pass.
NEGATIVE = {"typescript": "    throw new Error(\"no answer\");\n", "php": "    throw new Exception(\"no answer\");\n",
            "perl": "  die \"no answer\";\n", "csharp": "            throw new Exception(\"no answer\");\n"}

# MXEval's commands, per language, in a POSIX shell in the languages image: $f is the file's name without its
# extension; the last command's exit status is the verdict (0: passed). C#'s (dotnet, NuGet) is not in the image.
# TypeScript: tsc on 40 files at a time (one tsc per file takes seconds; the files are modules, so they do not
# meet), and a file counts as compiled, as MXEval's exit status 2 says alone, when tsc reported on it. tsc stops
# at syntax errors when a file has any, so the files it said nothing of are checked again without those.
HARNESS = {
    "typescript": 'grep -q "^$f.ts(" tsc.out && timeout 20 node "$f.js" >"$f.out" 2>"$f.err"',
    "php": 'timeout 20 php "$f.php" >"$f.out" 2>"$f.err"',
    "perl": 'timeout 20 perl "$f.pl" >"$f.out" 2>"$f.err"',
}
# A line appended to each program for the harness run only: its exit status is still the verdict, and the mark on
# stdout says whether the tests' last line was reached (tsc writes JavaScript from a program that does not parse:
# the tests then often end up inside the unclosed function, never called, and the program exits 0). The line
# holds the mark reversed and prints it turned round, so that a program that prints its own text (PHP after a
# `?>`) does not show it.
MARK = "mxeval-harness: the tests ran to their end"
MARK_LINE = {"typescript": f'\n;console.log("{MARK[::-1]}".split("").reverse().join(""));\n',
             "php": f'\necho "\\n" . strrev("{MARK[::-1]}") . "\\n";\n',
             "perl": f'\nprint "\\n" . reverse("{MARK[::-1]}") . "\\n";\n'}
TSC = "xargs -r -n 40 tsc --target es5 --lib es2016"
BEFORE = {"typescript": f"ls *.ts | {TSC} >tsc.out 2>&1; "
                        f'for f in *.ts; do grep -q "^$f(" tsc.out || echo "$f"; done | {TSC} >>tsc.out 2>&1; '}


def load(data: Path, source: str, language: str) -> tuple[list[dict], int]:
    """(the rows that have a canonical solution, how many have none)."""
    rows = [json.loads(line) for line in (data / f"{FILES[source][language]}.jsonl").open(encoding="utf-8")
            if line.strip()]
    kept = [r for r in rows if r.get("canonical_solution")]
    return kept, len(rows) - len(kept)


def request(row: dict, language: str, negative: bool = False) -> dict:
    completion = NEGATIVE[language] * negative + row["canonical_solution"]
    return {"id": row["task_id"], "completion": completion,
            "spec": {"kind": "function_tests", "language": language, "setup": row["prompt"], "tests": row["test"],
                     "timeout_s": 30}}


def harness(rows: list[dict], language: str, image: str, negative: bool = False) -> dict[str, tuple[bool, bool, str]]:
    """task -> (passed under MXEval's own commands, its tests ran to their end, the first lines of its stderr), all
    run in one container."""
    programs = {f"p{k}.{EXTENSIONS[language]}": row["prompt"] + NEGATIVE[language] * negative +
                row["canonical_solution"] + row["test"] + MARK_LINE[language] for k, row in enumerate(rows)}
    ran_here, kept = run_programs(programs, HARNESS[language], image, BEFORE.get(language, ""), keep=("tsc.out",))
    tsc = kept.get("tsc.out", "")
    out = {}
    for (name, (status, stdout, text)), row in zip(ran_here.items(), rows, strict=True):
        syntax = re.search(rf"^{name}\.ts\(.*(error TS1\d{{3}}:)", tsc, re.MULTILINE)
        if syntax:
            text = f"tsc syntax errors ({syntax.group(1)} ...); {text}"
        out[row["task_id"]] = (status == 0, MARK in stdout, " | ".join(text.strip().splitlines()[:2])[:300])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data/mxeval"))
    parser.add_argument("--source", default="mbxp", choices=tuple(FILES))
    parser.add_argument("--languages", default="typescript")
    parser.add_argument("--every", type=int, default=1, help="a fixed sample: every Nth row with a reference")
    parser.add_argument("--limit", type=int, default=0, help="at most this many rows per language")
    parser.add_argument("--harness", action="store_true", help="also run MXEval's own commands on the programs")
    parser.add_argument("--harness-only", action="store_true", help="MXEval's commands only, not this service")
    parser.add_argument("--backend", default="docker", choices=("docker", "bwrap"))
    parser.add_argument("--out", type=Path, help="write the results (JSON lines) here")
    parser.add_argument("--negative", action="store_true", help="each solution made to fail at its first statement")
    args = parser.parse_args()
    languages = args.languages.split(",")
    if set(languages) - set(NEGATIVE):
        parser.error(f"--languages: one of {', '.join(NEGATIVE)}")
    unsupported = [lang for lang in languages if lang not in SUPPORTED and not args.harness_only]
    if unsupported:
        parser.error(f"function_tests does not support {', '.join(unsupported)}")
    # The environment's settings (RLVR_VERIFIER_SANDBOX_IMAGE, ..._LANGS_IMAGE: the images to measure) count.
    config = replace(load_config(), port=0, sandbox_backend=args.backend, compile_timeout_s=120.0,
                     max_concurrency=2)
    table = {}
    lines = []
    with contextlib.ExitStack() as stack:
        service = None if args.harness_only else stack.enter_context(InProcessService(config))
        for language in languages:
            rows, missing = load(args.data, args.source, language)
            rows = rows[::args.every][:args.limit or None]
            started = time.perf_counter()
            results = verify_all(service, [request(row, language, args.negative) for row in rows]) if service \
                else [{"verdict": "NOT_RUN", "detail": ""} for _ in rows]
            seconds = time.perf_counter() - started
            theirs = harness(rows, language, config.sandbox_langs_image, args.negative) \
                if (args.harness or args.harness_only) and language in HARNESS else {}
            verdicts = Counter(r["verdict"] for r in results)
            agree = Counter()  # (harness passed, its tests ran, passed here)
            for row, r in zip(rows, results, strict=True):
                task = row["task_id"]
                line = {"language": language, "task": task, "verdict": r["verdict"], "detail": r["detail"][:600],
                        "stderr": r.get("stderr_tail", "")[-600:]}
                ours = r["verdict"] == "PASSED"
                if task in theirs:
                    line["harness_passed"], line["harness_tests_ran"], line["harness_stderr"] = theirs[task]
                    agree[(theirs[task][0], theirs[task][1], ours)] += 1
                lines.append(line)
                if service is None:
                    continue
                if (ours != theirs[task][0]) if task in theirs else ours == args.negative:
                    print(disagreement(language, task, r, theirs.get(task)), flush=True)
            table[language] = (len(rows), missing, verdicts, agree, seconds)
    if args.out:
        args.out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"\n{args.source}, every {args.every}:\n| language | run | no reference | passed here | other verdicts | "
          "harness passed | of which its tests ran | both passed | harness only (tests ran) | here only | "
          "seconds here |\n|---|---|---|---|---|---|---|---|---|---|---|")
    for language, (n, missing, verdicts, agree, seconds) in table.items():
        other = ", ".join(f"{v} {c}" for v, c in sorted(verdicts.items()) if v != "PASSED") or "-"
        print(f"| {language} | {n} | {missing} | {verdicts.get('PASSED', 0)} | {other} | {harness_columns(agree)} | "
              f"{seconds:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
