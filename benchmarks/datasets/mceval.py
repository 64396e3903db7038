"""McEval's (MCEVAL/McEval, the generation task's data/<Language>.jsonl) reference solutions through this service,
next to the same programs run the way McEval's own harness runs them; a per-language table of what passes.

McEval checks its references (``eval/valid_data.py``: ``json2file`` then ``excute``) with one file per task,
``f"{prompt}\\n\\n{canonical_solution}\\n\\n{test}"``, run by ``eval/excute.py``'s command for the language: C
``gcc -o BIN FILE -lm`` then ``BIN``; C++ ``g++ -g -std=c++11 -o BIN FILE`` then ``BIN`` (both failed when the
exit status is not 0 or stdout holds ``failed``); Java ``java -ea FILE``; JavaScript ``node FILE`` (failed also
when stderr holds ``failed``: ``console.assert`` prints "Assertion failed" there and does not throw); TypeScript
``tsc --lib es2015,dom FILE`` (its exit status ignored) then ``node FILE.js`` (stderr as JavaScript); Go the file
as ``ID_test.go`` in a module with testify, ``go test ID_test.go``; Rust the file as ``src/main.rs`` of a Cargo
project (rand 0.4, regex 1, md5 0.7), ``cargo test``; Shell ``bash FILE`` (a run past its time limit counts as
passed); PHP ``php FILE``; Python ``python FILE``; Lua ``lua FILE`` (stderr as JavaScript); Perl ``perl
FILE``; R ``Rscript FILE``; Ruby ``ruby FILE``; 15 s each. Here each row is a request: ``function_tests`` with
setup = the prompt + the two newlines, completion = the canonical solution, tests = the two newlines + the test
(the same program text); Python is ``python_assert`` (completion = the prompt + the solution, tests = the
test: python_assert judges top-level asserts). ``--harness`` runs McEval's commands on the same programs in the
language's sandbox image (one container per language, offline: ``docker run --rm --network none``), with the
image's toolchains in place of McEval's: Go's testify from Debian in GOPATH mode (``go test -v``, whose extra
lines change no verdict), Rust's ``cargo test`` as ``rustc --test`` with the image's crates (rand 0.8, not 0.4),
PHP with ``-d zend.assertions=1`` (the image's php.ini compiles assert() out; McEval's harness looks for its
failures).
Whether a harness pass ran its tests to their end: for the interpreted languages a mark line appended to the
program for that run (``MARK_LINE``, printed reversed so a program that prints its own text does not show it); Go
and Rust from the harness's own report (a ``--- PASS`` line, ``test result: ok. N passed`` with N > 0); C, C++ and
Java (the tests are the program's main) from the reference: no call that ends the process (``PROCESS_EXIT``).

    # the data stays out of the repo: fetch MCEVAL/McEval (a bare git dir, MIRROR), then
    D=/work/data/mceval; mkdir -p $D; for l in C CPP Java JavaScript TypeScript Go Rust Shell PHP Python Lua Perl \\
        R 'C#' Ruby; do git --git-dir=MIRROR show "HEAD:data/$l.jsonl" > "$D/$l.jsonl"; done
    python -m benchmarks.datasets.mceval [--data /work/data/mceval] [--languages c,bash] [--limit N]
        [--harness | --harness-only] [--negative | --wrong] [--backend docker|bwrap] [--out FILE]

Prints one line per task where this service and the harness disagree (or, without ``--harness``, per task not
passed; with ``--negative``, per task passed) and the table. ``--counts``: the rows of every language file here,
those this script does not run included (C#).
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
from verifier_service.kinds.csharp_tests import IMPLICIT_USINGS
from verifier_service.kinds.function_tests import SUPPORTED
from verifier_service.testing import InProcessService

# language here -> (McEval's file and task prefix, the program's extension)
FILES = {"c": ("C", "c"), "cpp": ("CPP", "cpp"), "java": ("Java", "java"), "javascript": ("JavaScript", "js"),
         "typescript": ("TypeScript", "ts"), "go": ("Go", "go"), "rust": ("Rust", "rs"), "bash": ("Shell", "sh"),
         "php": ("PHP", "php"), "python": ("Python", "py"), "lua": ("Lua", "lua"), "perl": ("Perl", "pl"),
         "r": ("R", "R"), "csharp": ("C#", "cs"), "ruby": ("Ruby", "rb")}
NOT_RUN: dict[str, str] = {}
# The languages whose programs run in the default sandbox image (the others: the languages image).
DEFAULT_IMAGE = ("c", "cpp", "bash", "python")

# --negative: a first statement that fails the call, put where the function's body begins (the prompt opens it,
# or the solution's first `{`); the rest of the solution stays, unreachable.
NEGATIVE = {"c": "__builtin_trap();", "cpp": "__builtin_trap();",
            "java": "if (true) throw new RuntimeException(\"no answer\");",
            "javascript": "throw new Error(\"no answer\");", "typescript": "throw new Error(\"no answer\");",
            "go": "panic(\"no answer\")", "rust": "todo!();", "bash": "exit 1",
            "php": "throw new Exception(\"no answer\");",
            "python": "raise RuntimeError(\"no answer\")", "lua": "error(\"no answer\")",
            "perl": "die \"no answer\";", "r": "stop(\"no answer\")",
            "csharp": "if (true) throw new System.Exception(\"no answer\");", "ruby": "raise \"no answer\""}

# --wrong: a first statement that returns a value no test expects (the languages where one type-checks anywhere):
# a control of whether the tests check what the function returns.
WRONG = {"javascript": "return undefined;", "typescript": "return undefined as any;", "php": "return null;",
         "python": "return None", "bash": "return 0", "ruby": "return nil",
         "csharp": "if (true) return default({returns});"}  # (C# 7: the row's signature names the type)

# McEval's commands (eval/excute.py), per language, in a POSIX shell: $f is the file's name without its
# extension; the snippet's exit status and output decide (``harness_passed``). 15 s a run, as there.
HARNESS = {
    "c": 'gcc -o "$f" "$f.c" -lm && timeout 15 "./$f"',
    "cpp": 'g++ -g -std=c++11 -o "$f" "$f.cpp" && timeout 15 "./$f"',
    "java": 'timeout 30 java -ea "$f.java"',
    "javascript": 'timeout 15 node "$f.js"',
    "typescript": 'tsc --lib es2015,dom "$f.ts" >/dev/null 2>&1; timeout 15 node "$f.js"',
    "go": 'GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=/tmp/gocache GOTOOLCHAIN=local timeout 60 '
          'go test -v "$f.go"',
    "rust": 'sh /opt/rlvr-langs/rustc.sh --edition 2021 --test -o "$f" "$f.rs" && timeout 15 "./$f"',
    "bash": 'timeout 15 bash "$f.sh"; s=$?; [ $s -ne 124 ] || s=0; exit $s',
    "php": 'timeout 15 php -d zend.assertions=1 "$f.php"',
    "python": 'timeout 15 python3 "$f.py"',
    "lua": 'timeout 15 lua5.4 "$f.lua"',
    "perl": 'timeout 15 perl "$f.pl"',
    "r": 'timeout 15 Rscript "$f.R"',
    "ruby": 'timeout 15 ruby "$f.rb"',
    # McEval: a .NET 8 `dotnet run` project (a Debug build: a failed Debug.Assert ends the process). Mono: DEBUG
    # defined, and a failed assertion printed on stderr (it does not end the run): harness_passed looks for it.
    "csharp": 'mcs -d:DEBUG -r:System.Numerics.dll -out:"/tmp/$f.exe" "$f.cs" >/dev/null && '
              'MONO_TRACE_LISTENER=Console.Error timeout 15 mono "/tmp/$f.exe"',
}
MARK = "mceval-harness: the tests ran to their end"
MARK_LINE = {"javascript": f'\n;console.log("{MARK[::-1]}".split("").reverse().join(""));\n',
             "typescript": f'\n;console.log("{MARK[::-1]}".split("").reverse().join(""));\n',
             "bash": f"\nm='{MARK[::-1]}'; r=''; for ((i=${{#m}}-1; i>=0; i--)); do r+=${{m:i:1}}; done; "
                     "printf '\\n%s\\n' \"$r\"\n",
             "php": f'\necho "\\n" . strrev("{MARK[::-1]}") . "\\n";\n',
             "python": f'\nprint("\\n" + "{MARK[::-1]}"[::-1])\n',
             "lua": f'\nprint("\\n" .. string.reverse("{MARK[::-1]}"))\n',
             "perl": f'\nprint "\\n" . reverse("{MARK[::-1]}") . "\\n";\n',
             "ruby": f'\nputs "\\n" + "{MARK[::-1]}".reverse\n',
             "r": f'\ncat("\\n", paste(rev(strsplit("{MARK[::-1]}", "")[[1]]), collapse = ""), "\\n", sep = "")\n'}
# C, C++, Java, C#: a reference that calls one of these (status 0) may end the program with status 0 before its
# tests' end.
PROCESS_EXIT = re.compile(r"\b(?:exit|_exit|_Exit|quick_exit|System\s*\.\s*exit|halt|Environment\s*\.\s*Exit)"
                          r"\s*\(\s*(?:0|EXIT_SUCCESS)\s*\)")


def load(data: Path, language: str) -> list[dict]:
    path = data / f"{FILES.get(language, (NOT_RUN.get(language),))[0]}.jsonl"
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def with_negative(row: dict, language: str, first: dict[str, str] = NEGATIVE) -> str:
    """The canonical solution with NEGATIVE's (or ``first``'s) statement first in the function's body."""
    solution = row["canonical_solution"]
    if row["prompt"].rstrip().endswith(("{", ":", '"""')) or \
            language in ("bash", "go", "python", "lua", "perl", "ruby"):
        indent = re.match(r"\s*?([ \t]*)\S", solution)
        pad = indent.group(1) if indent and language == "python" else ""
        return f"{pad}{first[language]}\n{solution}"
    at = solution.find("{")
    if at < 0:
        return f"{first[language]}\n{solution}"
    return f"{solution[:at + 1]}\n    {first[language]}\n{solution[at + 1:]}"


def solution_for(row: dict, language: str, control: str = "") -> str:
    """The canonical solution, or with the control's first statement (``negative``, ``wrong``)."""
    if not control:
        return row["canonical_solution"]
    if control == "wrong" and language == "csharp":
        returns = re.match(r"\s*(?:(?:public|private|static|internal)\s+)*([\w<>\[\](), ]+?)\s+\w+\s*\(",
                           row["signature"])
        return with_negative(row, language, {"csharp": WRONG["csharp"].format(returns=returns.group(1))})
    return with_negative(row, language, NEGATIVE if control == "negative" else WRONG)


def request(row: dict, language: str, control: str = "") -> dict:
    solution = solution_for(row, language, control)
    if language == "python":
        spec = {"kind": "python_assert", "tests": row["test"], "timeout_s": 30}
        return {"id": row["task_id"], "completion": f"{row['prompt']}\n\n{solution}", "spec": spec}
    return {"id": row["task_id"], "completion": solution,
            "spec": {"kind": "function_tests", "language": language, "setup": f"{row['prompt']}\n\n",
                     "tests": f"\n\n{row['test']}", "timeout_s": 30}}


def program(row: dict, language: str, control: str = "") -> str:
    """McEval's file for the row (json2file's text), with the mark line for the harness run."""
    solution = solution_for(row, language, control)
    test = row["test"]
    mark = MARK_LINE.get(language, "")
    if language == "php" and test.rstrip().endswith("?>"):
        # Inside the tests' own PHP block: where the program is out of PHP mode by then, the mark's code is printed
        # as text (reversed), not run.
        test, mark = test.rstrip()[:-2] + mark + "?>\n", ""
    if language == "csharp":  # McEval's `dotnet run` project has the SDK's implicit usings (System.Linq...)
        return f"{IMPLICIT_USINGS}{row['prompt']}\n\n{solution}\n\n{test}"
    return f"{row['prompt']}\n\n{solution}\n\n{test}{mark}"


def harness_passed(language: str, status: int | None, stdout: str, stderr: str) -> bool:
    """McEval's verdict (excute.py) on a run."""
    if status != 0:
        return False
    if language in ("c", "cpp"):
        return "failed" not in stdout
    if language in ("javascript", "typescript", "lua"):
        return "failed" not in stderr
    if language == "csharp":
        return "Debug.Assert" not in stderr
    if language in ("go", "php"):
        return not ("assert()" in stderr and "failed" in stderr)
    return True


def tests_ran(language: str, row: dict, stdout: str) -> bool:
    if language in MARK_LINE:
        return MARK in stdout
    if language == "go":
        return "--- PASS" in stdout and "[no tests to run]" not in stdout
    if language == "rust":
        return re.search(r"test result: ok\. [1-9]\d* passed", stdout) is not None
    return PROCESS_EXIT.search(row["canonical_solution"]) is None


def harness(rows: list[dict], language: str, image: str, control: str = "") -> dict[str, tuple[bool, bool, str]]:
    """task -> (passed under McEval's commands, its tests ran to their end, the first lines of its stderr)."""
    ext = FILES[language][1]
    names = [f"p{k}_test" if language == "go" else f"p{k}" for k in range(len(rows))]
    programs = {f"{name}.{ext}": program(row, language, control) for name, row in zip(names, rows, strict=True)}
    ran, _ = run_programs(programs, HARNESS[language], image)
    out = {}
    for name, row in zip(names, rows, strict=True):
        status, stdout, stderr = ran[name]
        text = stderr if stderr.strip() else stdout
        lines = [line for line in text.strip().splitlines() if MARK not in line]
        out[row["task_id"]] = (harness_passed(language, status, stdout, stderr), tests_ran(language, row, stdout),
                               f"exit {status}: " + " | ".join(lines[:3])[:300])
    return out


def counts(data: Path) -> None:
    """Rows, references and test forms of every language file, run here or not."""
    for language in (*FILES, *NOT_RUN):
        try:
            rows = load(data, language)
        except FileNotFoundError:
            print(f"{language}: no file")
            continue
        refs = sum(1 for r in rows if r.get("canonical_solution"))
        words = Counter(w for r in rows for w in set(re.findall(
            r"Test::More|use [\w:]+|require\([^)]*\)|library\([^)]*\)|stopifnot|testthat|Debug\.Assert|"
            r"Trace\.Assert|Assert\.\w+|luaunit|\bassert\b|using [\w.]+;|import [\w.]+", r["test"] + r["prompt"])))
        print(f"{language}: {len(rows)} rows, {refs} with a reference; " +
              ", ".join(f"{w} {c}" for w, c in words.most_common(12)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data/mceval"))
    parser.add_argument("--languages", default="c,bash")
    parser.add_argument("--limit", type=int, default=0, help="at most this many rows per language")
    parser.add_argument("--harness", action="store_true", help="also run McEval's own commands on the programs")
    parser.add_argument("--harness-only", action="store_true", help="McEval's commands only, not this service")
    parser.add_argument("--backend", default="docker", choices=("docker", "bwrap"))
    parser.add_argument("--out", type=Path, help="write the results (JSON lines) here")
    parser.add_argument("--negative", action="store_true", help="each solution made to fail at its first statement")
    parser.add_argument("--wrong", action="store_true",
                        help=f"each solution made to return a wrong value first ({', '.join(WRONG)})")
    parser.add_argument("--counts", action="store_true", help="rows and test forms per language file, then stop")
    args = parser.parse_args()
    if args.counts:
        counts(args.data)
        return 0
    languages = args.languages.split(",")
    if set(languages) - set(FILES):
        parser.error(f"--languages: some of {', '.join(FILES)}")
    if args.wrong and set(languages) - set(WRONG):
        parser.error(f"--wrong has a first statement for {', '.join(WRONG)} only")
    control = "negative" if args.negative else "wrong" if args.wrong else ""
    args.negative = bool(control)  # (a pass is what is reported, as for --negative)
    unsupported = [lang for lang in languages if lang not in (*SUPPORTED, "python")]
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
            rows = load(args.data, language)[:args.limit or None]
            started = time.perf_counter()
            results = verify_all(service, [request(row, language, control) for row in rows]) if service \
                else [{"verdict": "NOT_RUN", "detail": ""} for _ in rows]
            seconds = time.perf_counter() - started
            started = time.perf_counter()
            image = config.sandbox_image if language in DEFAULT_IMAGE else config.sandbox_langs_image
            theirs = harness(rows, language, image, control) if args.harness or args.harness_only else {}
            harness_seconds = time.perf_counter() - started
            verdicts = Counter(r["verdict"] for r in results)
            agree = Counter()  # (harness passed, its tests ran, passed here)
            for row, r in zip(rows, results, strict=True):
                task = row["task_id"]
                line = {"language": language, "task": task, "verdict": r["verdict"], "detail": r["detail"][:600],
                        "stderr": r.get("stderr_tail", "")[-600:]}
                ours = r["verdict"] == "PASSED"
                if task in theirs:
                    line["harness_passed"], line["harness_tests_ran"], line["harness_output"] = theirs[task]
                    agree[(theirs[task][0], theirs[task][1], ours)] += 1
                lines.append(line)
                if service is None:
                    if theirs[task][0] == args.negative or not theirs[task][1]:
                        print(f"{language}\t{task}\tharness: {'passed' if theirs[task][0] else 'failed'}"
                              f"{'' if theirs[task][1] else ' (tests did not run to their end)'}: {theirs[task][2]}")
                    continue
                if (ours != theirs[task][0]) if task in theirs else ours == args.negative:
                    print(disagreement(language, task, r, theirs.get(task)), flush=True)
            table[language] = (len(rows), verdicts, agree, seconds, harness_seconds)
    if args.out:
        args.out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"\nMcEval{f' --{control}' if control else ''}:\n| language | rows | passed here | other verdicts | "
          "harness passed | of which its tests ran | both passed | harness only (tests ran) | here only | "
          "seconds here | seconds harness |\n|---|---|---|---|---|---|---|---|---|---|---|")
    for language, (n, verdicts, agree, seconds, harness_seconds) in table.items():
        other = ", ".join(f"{v} {c}" for v, c in sorted(verdicts.items()) if v != "PASSED") or "-"
        print(f"| {language} | {n} | {verdicts.get('PASSED', 0)} | {other} | {harness_columns(agree)} | "
              f"{seconds:.0f} | "
              f"{harness_seconds:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
