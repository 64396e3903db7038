"""HumanEval-X's reference solutions through this service, run the way the dataset's own harness runs them
(CodeGeeX's ``evaluate_humaneval_x.py``: the declaration + the canonical solution + the test program, one
program per task), as ``function_tests`` requests; a per-language table of what passes.

    # the data stays out of the repo: fetch THUDM/CodeGeeX, then
    D=/work/data/humaneval-x; mkdir -p $D && for l in cpp java js rust go; do git --git-dir=MIRROR show \\
        HEAD:codegeex/benchmark/humaneval-x/$l/data/humaneval_$l.jsonl.gz > $D/humaneval_$l.jsonl.gz; done
    python -m benchmarks.datasets.humaneval_x [--data /work/data/humaneval-x] [--backend docker|bwrap] [--out FILE]
        [--languages cpp,go,rust] [--negative]   # (--negative: every solution fails at once, as a control)

Prints one line per failing task (language, task, verdict, the first lines of the detail; with --negative, per
passing task) and the table.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from benchmarks.datasets.common import verify_all
from verifier_service.config import load_config
from verifier_service.testing import InProcessService

LANGUAGES = {"cpp": "cpp", "java": "java", "js": "javascript", "rust": "rust", "go": "go"}


# --negative: each canonical solution with a first statement that fails the call (the rest stays, unreachable, so
# that Go's imports are still used; the same prompt and tests): a run where any of these passes is a forged pass.
NEGATIVE = {"cpp": "    throw 0;\n", "go": "    panic(\"no answer\")\n", "rust": "    todo!();\n"}


def requests_for(data: Path, language: str, negative: bool = False) -> list[dict]:
    out = []
    with gzip.open(data / f"humaneval_{language}.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            # The harness's program: declaration (prompt's code) + canonical solution + test.
            setup = row["declaration"] if language != "js" else row["prompt"]
            if language == "go":
                setup = go_setup(row)
            completion = (NEGATIVE[language] if negative else "") + row["canonical_solution"]
            out.append({"id": row["task_id"], "completion": completion,
                        "spec": {"kind": "function_tests", "language": LANGUAGES[language], "setup": setup,
                                 "tests": row["test"], "timeout_s": 30}})
    return out


# CodeGeeX's IMPORT_HELPER["go"]: packages its harness imports when the solution names them.
GO_IMPORT_HELPER = ("math", "strings", "fmt", "strconv", "time", "bytes", "regexp", "sort", "math/rand", "crypto/md5")


def go_setup(row: dict) -> str:
    """CodeGeeX's Go program before the solution (``process_humaneval_test``): the test setup (``package main``,
    ``testing`` and testify), the helper's imports of the packages the solution names that the setup does not
    import, then the prompt without its own import block; the program is run as ``go test main_test.go``."""
    prompt = row["prompt"].replace(row["import"], "")
    others = [f'"{pkg}"' for pkg in GO_IMPORT_HELPER
              if pkg not in row["test_setup"] and pkg.split("/")[-1] + "." in row["canonical_solution"]]
    imports = "import (\n" + "    ".join(p + "\n" for p in others) + ")\n" if others else ""
    return f"{row['test_setup']}\n{imports}{prompt}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data/humaneval-x"))
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--backend", default="docker", choices=("docker", "bwrap"))
    parser.add_argument("--out", type=Path, help="write the results (JSON lines) here")
    parser.add_argument("--negative", action="store_true",
                        help=f"each solution made to fail at its first statement (NEGATIVE: {', '.join(NEGATIVE)})")
    args = parser.parse_args()
    if args.negative and set(args.languages.split(",")) - set(NEGATIVE):
        parser.error(f"--negative has a first statement for {', '.join(NEGATIVE)} only")
    # The environment's settings (RLVR_VERIFIER_SANDBOX_IMAGE, ..._LANGS_IMAGE: the images to measure) count.
    config = replace(load_config(), port=0, sandbox_backend=args.backend, compile_timeout_s=120.0,
                     max_concurrency=2)
    table = {}
    lines = []
    with InProcessService(config) as service:
        for language in args.languages.split(","):
            rows = requests_for(args.data, language, args.negative)
            started = time.perf_counter()
            results = verify_all(service, rows)
            verdicts = Counter(r["verdict"] for r in results)
            table[language] = (len(rows), verdicts, time.perf_counter() - started)
            for row, r in zip(rows, results, strict=True):
                lines.append({"language": language, "task": row["id"], "verdict": r["verdict"],
                              "detail": r["detail"][:600], "stderr": r.get("stderr_tail", "")[-600:]})
                if (r["verdict"] == "PASSED") == args.negative:
                    first = " | ".join(r["detail"].splitlines()[:3])[:300]
                    print(f"{language}\t{row['id']}\t{r['verdict']}\t{first}", flush=True)
    if args.out:
        args.out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print("\n| language | tasks | passed | other verdicts | seconds |\n|---|---|---|---|---|")
    for language, (n, verdicts, seconds) in table.items():
        other = ", ".join(f"{v} {c}" for v, c in sorted(verdicts.items()) if v != "PASSED") or "-"
        print(f"| {LANGUAGES[language]} | {n} | {verdicts.get('PASSED', 0)} | {other} | {seconds:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
