"""stdio's compare modes against testlib's own checkers: the same verdict on the same outputs.

    python scripts/datasets/testlib_agreement.py --testlib SRC [--pairs N] [--seed S] [--vt]

SRC is a testlib checkout (a folder holding ``testlib.h`` and ``checkers/``) or ``git:GITDIR@REV`` (a bare git
repository, e.g. a mirror of github.com/MikeMirzayanov/testlib; read with ``git show``). Its checkers are compiled
with g++ in a temporary folder (nothing of testlib enters this repository) and each is run, as a judge runs it
(``checker input output answer``; exit 0 is accepted), on N generated (output, answer) pairs; stdio's
``outputs_match`` decides the same pairs in the mode that follows that checker's rule:

=============  ===========  =============================================================================
mode           checker      pairs
=============  ===========  =============================================================================
tokens         wcmp         words and numbers, ASCII and not, any case, any blanks and line breaks
tokens_ci      nyesno       answers of YES / NO tokens in any case; outputs of those and other words
lines          lcmp         as for tokens, line breaks and blank lines moved, added and dropped
=============  ===========  =============================================================================

It prints the agreement per mode and every disagreeing pair (at most 10 per mode), and exits 1 on any
disagreement. ``--vt`` also puts vertical tabs and form feeds between tokens: lcmp splits a line's tokens with
C++'s ``>>`` (every C ``isspace``), where stdio (like wcmp and the rest of testlib) has only space, tab, CR and
LF as blanks; those pairs are then expected to disagree for ``lines``, and are reported apart.

Standard library only, plus ``verifier_service`` from this checkout.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from verifier_service.kinds.stdio import outputs_match

CHECKERS = {"tokens": "wcmp", "tokens_ci": "nyesno", "lines": "lcmp"}
WORDS = ["1", "2", "10", "-3", "007", "a", "A", "abc", "ABC", "yes", "YES", "Yes", "no", "NO", "nO",
         "\u00e9", "\u00c9", "\u00df", "SS", "\u212a", "k", "\u00a0x", "x\u2003"]
YES_NO = ["yes", "YES", "Yes", "yEs", "no", "NO", "No", "nO"]
BLANKS = [" ", "  ", "\t", "\n", "\r\n", " \n", "\n\n", "\n \n"]
ENDS = ["", "\n", "\n\n", " \n", "\r\n", "\n\t\n"]


def _read(src: str, rel: str) -> bytes:
    if src.startswith("git:"):
        gitdir, _, rev = src[4:].rpartition("@")
        return subprocess.run(["git", "--git-dir", gitdir, "show", f"{rev}:{rel}"], check=True,
                              capture_output=True).stdout
    return (Path(src) / rel).read_bytes()


def build(src: str, work: Path) -> dict[str, Path]:
    (work / "testlib.h").write_bytes(_read(src, "testlib.h"))
    built = {}
    for name in sorted(set(CHECKERS.values())):
        (work / f"{name}.cpp").write_bytes(_read(src, f"checkers/{name}.cpp"))
        subprocess.run(["g++", "-O2", "-std=c++17", "-I", str(work), "-o", str(work / name), str(work / f"{name}.cpp")],
                       check=True, capture_output=True)
        built[name] = work / name
    return built


def _join(rng: random.Random, tokens: list[str], blanks: list[str]) -> str:
    return "".join(t + (rng.choice(blanks) if i + 1 < len(tokens) else "") for i, t in enumerate(tokens)) + \
        rng.choice(ENDS)


def pair(rng: random.Random, mode: str, vt: bool) -> tuple[str, str]:
    # (not for nyesno: a VT is a token character to testlib's readToken, so the answer would not be YES / NO)
    blanks = BLANKS + (["\x0b", "\x0c", " \x0b "] if vt and mode != "tokens_ci" else [])
    vocabulary = YES_NO if mode == "tokens_ci" else WORDS
    want = [rng.choice(vocabulary) for _ in range(rng.randint(0, 5))]
    got = list(want)
    change = rng.randrange(6)
    if change == 0 and got:
        got[rng.randrange(len(got))] = rng.choice(WORDS if mode == "tokens_ci" else vocabulary)
    elif change == 1:
        got.insert(rng.randint(0, len(got)), rng.choice(vocabulary))
    elif change == 2 and got:
        got.pop(rng.randrange(len(got)))
    elif change == 3:
        got = [t.swapcase() if rng.random() < 0.5 else t for t in got]
    if mode == "lines" and rng.random() < 0.5:  # the same tokens, other line breaks: the same text, relaid
        return _join(rng, got, blanks), _join(rng, want, blanks)
    return _join(rng, got, [b for b in blanks if "\n" not in b] + ["\n"]), _join(rng, want, blanks)


def judge(checker: Path, work: Path, output: str, answer: str) -> bool:
    (work / "in.txt").write_bytes(b"")
    (work / "out.txt").write_bytes(output.encode())
    (work / "ans.txt").write_bytes(answer.encode())
    run = subprocess.run([str(checker), str(work / "in.txt"), str(work / "out.txt"), str(work / "ans.txt")],
                         capture_output=True, timeout=30)
    if run.returncode == 3:  # _fail: the checker refuses the answer file itself
        raise RuntimeError(f"{checker.name} failed on answer {answer!r}: {run.stderr.decode(errors='replace')}")
    return run.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--testlib", required=True, help="a testlib checkout, or git:GITDIR@REV")
    parser.add_argument("--pairs", type=int, default=2000, help="pairs per mode (default 2000)")
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--vt", action="store_true", help="also vertical tabs and form feeds between tokens")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    failed = False
    with tempfile.TemporaryDirectory(prefix="testlib-") as tmp:
        work = Path(tmp)
        checkers = build(args.testlib, work)
        for mode, name in CHECKERS.items():
            agree, accepted, differ = 0, 0, []
            for _ in range(args.pairs):
                output, answer = pair(rng, mode, args.vt)
                theirs = judge(checkers[name], work, output, answer)
                ours = outputs_match(output, answer, mode, 0.0)
                accepted += theirs
                if theirs == ours:
                    agree += 1
                else:
                    differ.append((output, answer, theirs, ours))
            vt_only = [d for d in differ if "\x0b" in d[0] + d[1] or "\x0c" in d[0] + d[1]]
            print(f"{mode:10} vs {name:7}: {agree}/{args.pairs} agree ({name} accepts {accepted})"
                  + (f" ({len(vt_only)} of the {len(differ)} others hold a VT or FF)" if differ else ""))
            for output, answer, theirs, ours in differ[:10]:
                print(f"    output {output!r} answer {answer!r}: {name} {'accepts' if theirs else 'rejects'}, "
                      f"stdio {'accepts' if ours else 'rejects'}")
            failed |= len(differ) > len(vt_only) or (bool(differ) and mode != "lines")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
