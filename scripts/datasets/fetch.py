"""Fetch the public datasets the verifiers are tested on, and convert them with ``trainer data convert``.

    python scripts/datasets/fetch.py [NAME ...] [--data DIR] [--from NAME=SRC ...] [--no-convert] [--check]

NAME is one of ``humaneval``, ``mbpp``, ``gsm8k``, ``math``, ``spider`` (default: all). Each dataset lands in
``DIR/<name>/`` (default ``/work/data``, or ``$RLVR_DATA_DIR``), outside the repository: the raw file(s) as the
source publishes them, ``SOURCES.txt`` (where each file came from and its sha256), and what ``trainer data
convert`` writes (``converted*.jsonl``). File names are stable; other scripts and benchmarks read them:

=============  ==========================================  =====================================================
name           raw file(s)                                 converted (``trainer data convert --format``)
=============  ==========================================  =====================================================
humaneval      HumanEval.jsonl.gz, HumanEval.jsonl         converted.jsonl (humaneval)
mbpp           mbpp.jsonl, sanitized-mbpp.json             converted.jsonl (mbpp), converted-sanitized.jsonl
                                                           (mbpp-sanitized)
gsm8k          test.jsonl, train.jsonl                     converted.jsonl (gsm8k, of test.jsonl)
math           test.jsonl (MATH test split, 5,000 rows)    converted.jsonl (math)
spider         dev.json, dev_gold.sql, tables.json,        converted.jsonl (spider, of dev.json; the databases
               database/<db_id>/<db_id>.sqlite (the dev    are read from database/ beside it)
               set's 20 databases)
=============  ==========================================  =====================================================

Sources. By default each file is downloaded from its canonical place (the authors' GitHub repositories; MATH from
its authors' tar). ``--from NAME=SRC`` (or ``$RLVR_DATASET_<NAME>``, e.g. ``RLVR_DATASET_GSM8K``) points a
dataset elsewhere; SRC is one of

- an ``http(s)://`` URL of a folder that holds the dataset's raw files under their canonical names;
- a local folder holding them (for MATH also the MATH tar's extracted ``test/`` folder of ``<subject>/<n>.json``);
- ``git:GITDIR@REV:FOLDER``: the raw files read from a bare git repository (``git show REV:FOLDER/<file>``).

How the data on the development machine was obtained (it cannot reach the dataset hubs): with a tool that
mirrors public GitHub repositories as bare git directories, then ``--from`` with ``git:`` sources:

- humaneval: ``git:<openai/human-eval>@HEAD:data`` (the authors' repository);
- gsm8k: ``git:<openai/grade-school-math>@HEAD:grade_school_math/data`` (the authors' repository);
- mbpp: a public copy of google-research's ``mbpp/`` folder (the authors' monorepo was too large to mirror):
  ``git:<patdfb/TPC-EES>@HEAD:mbpp``: 974 rows of ``mbpp.jsonl``, 427 of ``sanitized-mbpp.json``, the
  published counts;
- math: the authors' repository (hendrycks/math) does not hold the data, and openai/prm800k's copy is in Git LFS;
  a public copy of the MATH test split as JSONL (``git:<LightChen233/ECM>@HEAD:data/math``, 5,000 rows whose
  ``question`` / ``answer`` columns are MATH's ``problem`` / ``solution``; they are renamed back here);
- spider: the authors publish a zip on Google Drive only (https://yale-lily.github.io/spider), so there is no
  default source: pass the extracted zip's folder, or a copy in git. On the development machine: the public
  copy of the Spider folder in ``git:<hyukkyukang/text2SQL>@HEAD:datasets/spider`` (1,034 dev rows, the
  published count; its ``database/wta_1/`` holds no ``wta_1.sqlite`` (12.9 MB in Spider's zip, the largest
  dev database), so wta_1's 62 rows are reported as missing and flagged by the converter; its dump would
  be over the 4 MiB a spec may carry anyway).

Standard library only (the converter is run as ``python -m trainer.cli``, from this checkout).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# name -> (canonical base URL, raw file names)
DATASETS: dict[str, tuple[str, list[str]]] = {
    "humaneval": ("https://raw.githubusercontent.com/openai/human-eval/master/data", ["HumanEval.jsonl.gz"]),
    "mbpp": ("https://raw.githubusercontent.com/google-research/google-research/master/mbpp",
             ["mbpp.jsonl", "sanitized-mbpp.json"]),
    "gsm8k": ("https://raw.githubusercontent.com/openai/grade-school-math/master/grade_school_math/data",
              ["test.jsonl", "train.jsonl"]),
    # MATH's authors publish a tar (https://people.eecs.berkeley.edu/~hendrycks/MATH.tar): extract it and pass
    # --from math=<MATH/test folder>; a URL or git source must hold test.jsonl.
    "math": ("https://people.eecs.berkeley.edu/~hendrycks", ["test.jsonl"]),
    # Spider is a Google Drive zip: extract it and pass --from spider=<the spider/ folder> (or a git source).
    # Besides these, the dev set's databases are copied: database/<db_id>/<db_id>.sqlite for each db_id.
    "spider": ("", ["dev.json", "dev_gold.sql", "tables.json"]),
}

# name -> [(format, raw file, converted file)]
CONVERSIONS: dict[str, list[tuple[str, str, str]]] = {
    "humaneval": [("humaneval", "HumanEval.jsonl", "converted.jsonl")],
    "mbpp": [("mbpp", "mbpp.jsonl", "converted.jsonl"),
             ("mbpp-sanitized", "sanitized-mbpp.json", "converted-sanitized.jsonl")],
    "gsm8k": [("gsm8k", "test.jsonl", "converted.jsonl")],
    "math": [("math", "test.jsonl", "converted.jsonl")],
    "spider": [("spider", "dev.json", "converted.jsonl")],
}


class FetchError(Exception):
    pass


def _read(src: str, name: str) -> bytes:
    if src.startswith(("http://", "https://")):
        url = f"{src.rstrip('/')}/{name}"
        try:
            with urllib.request.urlopen(url, timeout=120) as response:
                return response.read()
        except OSError as exc:
            raise FetchError(f"cannot download {url}: {exc}") from exc
    if src.startswith("git:"):
        spec = src[4:]
        gitdir, _, rest = spec.partition("@")
        rev, _, folder = rest.partition(":")
        path = f"{folder.strip('/')}/{name}" if folder.strip("/") else name
        done = subprocess.run(["git", f"--git-dir={gitdir}", "show", f"{rev or 'HEAD'}:{path}"],
                              capture_output=True, check=False)
        if done.returncode != 0:
            raise FetchError(f"git show {rev}:{path} in {gitdir}: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout
    path = Path(src) / name
    try:
        return path.read_bytes()
    except OSError as exc:
        raise FetchError(f"cannot read {path}: {exc.strerror}") from exc


def _math_rows_from_folder(folder: Path) -> bytes:
    """The MATH tar's ``test/<subject>/<n>.json`` files as one JSONL (sorted by subject, then number)."""
    files = sorted(folder.glob("*/*.json"), key=lambda p: (p.parent.name, int(p.stem) if p.stem.isdigit() else 0))
    if not files:
        raise FetchError(f"{folder}: neither test.jsonl nor <subject>/<n>.json files")
    lines = []
    for path in files:
        row = json.loads(path.read_text(encoding="utf-8"))
        row.setdefault("unique_id", f"test/{path.parent.name}/{path.name}")
        lines.append(json.dumps(row, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode()


def _normalise_math(data: bytes) -> bytes:
    """MATH rows with MATH's own column names: copies that renamed problem/solution to question/answer."""
    out = []
    for number, line in enumerate(data.decode("utf-8").splitlines()):
        if not line.strip():
            continue
        row = json.loads(line)
        if "problem" not in row and "question" in row:
            row["problem"] = row.pop("question")
        if "solution" not in row and "answer" in row and "\\boxed" in str(row["answer"]):
            row["solution"] = row.pop("answer")
        row.setdefault("unique_id", f"math-test-{number}")
        out.append(json.dumps(row, ensure_ascii=False))
    return ("\n".join(out) + "\n").encode()


def _spider_databases(src: str, dest: Path) -> list[str]:
    """The dev set's databases (``database/<db_id>/<db_id>.sqlite``); one a copy lacks is noted, not fatal
    (the converter flags its rows)."""
    db_ids = sorted({row["db_id"] for row in json.loads((dest / "dev.json").read_text(encoding="utf-8"))})
    notes = []
    for db_id in db_ids:
        fname = f"database/{db_id}/{db_id}.sqlite"
        try:
            data = _read(src, fname)
        except FetchError as exc:
            print(f"spider: {db_id}: not in this copy ({exc})", file=sys.stderr)
            notes.append(f"{fname}\tmissing\t{src}")
            continue
        if not data.startswith(b"SQLite format 3\0"):
            raise FetchError(f"{fname} is not an SQLite database (a Git LFS pointer?): {data[:40]!r}")
        (dest / fname).parent.mkdir(parents=True, exist_ok=True)
        (dest / fname).write_bytes(data)
        notes.append(f"{fname}\t{hashlib.sha256(data).hexdigest()}\t{src} {fname}")
    return notes


def fetch(name: str, src: str, dest: Path) -> list[str]:
    _, files = DATASETS[name]
    if not src:
        raise FetchError(f"no default source: pass --from {name}=SRC (see this script's docstring)")
    dest.mkdir(parents=True, exist_ok=True)
    notes = []
    for fname in files:
        if name == "math" and not src.startswith(("http://", "https://", "git:")) \
                and not (Path(src) / fname).exists():
            data = _math_rows_from_folder(Path(src))
            origin = f"{src}/<subject>/<n>.json"
        else:
            data = _read(src, fname)
            origin = f"{src} {fname}"
        if name == "math":
            data = _normalise_math(data)
        (dest / fname).write_bytes(data)
        notes.append(f"{fname}\t{hashlib.sha256(data).hexdigest()}\t{origin}")
        if fname.endswith(".gz"):
            plain = gzip.decompress(data)
            (dest / fname[:-3]).write_bytes(plain)
            notes.append(f"{fname[:-3]}\t{hashlib.sha256(plain).hexdigest()}\tgunzip {fname}")
    if name == "spider":
        notes += _spider_databases(src, dest)
    (dest / "SOURCES.txt").write_text("\n".join(notes) + "\n", encoding="utf-8")
    return notes


def convert(name: str, dest: Path, check: bool) -> int:
    worst = 0
    for fmt, raw, converted in CONVERSIONS[name]:
        cmd = [sys.executable, "-m", "trainer.cli", "data", "convert", "--format", fmt,
               "--input", str(dest / raw), "--output", str(dest / converted)]
        if check:
            cmd.append("--check")
        env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        print("+", " ".join(cmd), file=sys.stderr)
        worst = max(worst, subprocess.run(cmd, env=env, check=False).returncode)
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"{', '.join(DATASETS)} (default: all)")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("RLVR_DATA_DIR", "/work/data")))
    parser.add_argument("--from", dest="sources", action="append", default=[], metavar="NAME=SRC")
    parser.add_argument("--no-convert", action="store_true", help="fetch only")
    parser.add_argument("--check", action="store_true", help="convert with --check (needs the sandbox)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in DATASETS]
    if unknown:
        parser.error(f"unknown dataset(s) {', '.join(unknown)}; datasets: {', '.join(DATASETS)}")
    sources = {n: os.environ.get(f"RLVR_DATASET_{n.upper()}", DATASETS[n][0]) for n in DATASETS}
    for item in args.sources:
        name, sep, src = item.partition("=")
        if not sep or name not in DATASETS:
            parser.error(f"--from {item!r}: expected NAME=SRC with NAME one of {', '.join(DATASETS)}")
        sources[name] = src
    status = 0
    for name in args.names or list(DATASETS):
        try:
            for note in fetch(name, sources[name], args.data / name):
                print(f"{name}: {note}", file=sys.stderr)
        except (FetchError, ValueError) as exc:
            print(f"{name}: error: {exc}", file=sys.stderr)
            status = 1
            continue
        if not args.no_convert:
            status = max(status, convert(name, args.data / name, args.check))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
