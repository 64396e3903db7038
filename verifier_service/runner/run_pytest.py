"""Starts pytest as the judge of a pytest-kind job, the completion in a process of its own.

    run_pytest.py --solution solution.py <pytest args>

Before pytest starts (and so before its plugin reads the nonce from stdin), the
completion's process is forked (``candidate_process.py``); the completion's module is, in
this process, a ``SolutionModule`` whose names are asked of that process on
first use. pytest, the test modules, the assertions and the JUnit report all
stay here, where the completion's code never runs.
"""

import sys

sys.path.insert(0, "/opt/rlvr")

import candidate_process
import procs
import sealed_workdir  # noqa: F401 - the plugin's (rlvr_pytest), loaded from here before pytest starts
from remote_module import SolutionModule


def main():
    args = sys.argv[1:]
    path = "solution.py"
    if args[:1] == ["--solution"]:
        path, args = args[1], args[2:]
    procs.make_undumpable()
    candidate = candidate_process.start_candidate()
    name = path[:-3].replace("/", ".") if path.endswith(".py") else path.replace("/", ".")
    sys.modules[name] = SolutionModule(name, candidate, path)
    import pytest

    try:
        code = pytest.main(args)
    finally:
        candidate.close()
    raise SystemExit(code)


if __name__ == "__main__":
    main()
