"""stdio Python through the program host (``runner/pyprog.py``): each case a fork of a warm interpreter.

The same programs run both ways in the same warm sandbox, as forks of the job's program host and as a fresh
``python3 solution.py`` per case (the steps without their ``harness`` fields): what a program can see of its
interpreter and how it ends (output, exit code, traceback) must be the same. And a job the host stops (fast-fail)
ends with the runner's "done", keeping its sandbox warm.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace

import pytest

from verifier_service.sandbox import make_sandbox
from verifier_service.sandbox.base import Job, Step

from support.service import TEST_CONFIG

pytestmark = pytest.mark.backends("docker", "bwrap")

COMPILE = ["python3", "-s", "-c", "import sys; compile(open('solution.py', encoding='utf-8').read(), 'solution.py', "
           "'exec')"]
RUN = ["python3", "-s", "solution.py"]
PROBES = {
    "interpreter": "import sys, os\nprint(__name__, sys.argv, os.path.basename(__file__), sys.path[0] == os.getcwd(),"
                   " 'judge' in sys.modules, 'procs' in sys.modules, sys.flags.hash_randomization,"
                   " sys.flags.no_user_site,"
                   " sys.stdin.errors, sys.stdout.errors, sys.stderr.errors, sys.stdout.line_buffering,"
                   " sys.stderr.line_buffering, sorted(k for k in os.environ if not k.startswith('RLVR_')))\n"
                   "print(repr(sys.stdin.read()))\n",
    "exit codes": "import sys\nn = int(input())\nprint('before')\nif n == 1:\n    sys.exit(3)\nsys.exit('bye')\n",
    "traceback": "def f():\n    raise ValueError('boom')\nprint('x', end='')\nf()\n",
    "threads and atexit": "import atexit, threading, time\natexit.register(lambda: print('atexit'))\n"
                          "def late():\n    time.sleep(0.2)\n    print('thread')\n"
                          "threading.Thread(target=late).start()\nprint('main')\n",
    "limits": "import sys\ntry:\n    int('1' * 5000)\nexcept ValueError as e:\n    print('limit', str(e)[:30])\n"
              "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\nprint(depth(985))\n",
    "syntax error": "print(\n",
    # A fresh python3 per case gets fresh random state; so must each fork (the host's must not be every case's).
    "random and process state": "import os, random, signal, resource, gc, sys\nr = random.getrandbits(64)\n"
                                "try:\n    seen = open('seen.txt').read().split()\nexcept FileNotFoundError:\n"
                                "    seen = []\nopen('seen.txt', 'a').write(f'{r}\\n')\nprint(str(r) in seen)\n"
                                "print(sorted((s.name, str(signal.getsignal(s))) for s in signal.valid_signals()"
                                " if signal.getsignal(s) is not None))\n"
                                "print(signal.pthread_sigmask(signal.SIG_BLOCK, []))\n"
                                "print([resource.getrlimit(getattr(resource, n)) for n in sorted(dir(resource))"
                                " if n.startswith('RLIMIT_')])\nprint(gc.isenabled(), gc.get_threshold())\n",
    # sys.setrecursionlimit(n + a few): the program's own frames get as many as in python3, not fewer (the host's)
    "recursion limit set": "import sys\nsys.setrecursionlimit(3000)\ndef f(k):\n"
                           "    return 0 if k == 0 else 1 + f(k - 1)\nbest = 0\n"
                           "for n in range(2960, 3001):\n    try:\n        f(n)\n        best = n\n"
                           "    except RecursionError:\n        break\nprint(sys.getrecursionlimit(), best)\n",
    # stdin read every way contest solutions do, each as ``< input`` gives it (a pipe: /dev/stdin opens)
    "stdin idioms": "import os, sys\nif sys.stdin.readline().strip() == '1':\n"
                    "    print(repr(open('/dev/stdin').read()))\nelse:\n"
                    "    print(repr(os.read(0, 100)), repr(open(0).read()))\n",
}
STDIN = ["1\r\n2\n", "2\n"]


def _job(source: str, host: bool, **job_fields) -> Job:
    extra = {"harness": "python_program"} if host else {}
    steps = [Step("compile", COMPILE, 30.0, output_limit=64 * 1024, stop_on_failure=True, memory_bytes=512 << 20,
                  **extra)]
    steps += [Step(f"case {i}", RUN, 10.0, stdin=stdin, memory_bytes=512 << 20,
                   harness="python_case" if host else "", stdin_pipe=True) for i, stdin in enumerate(STDIN)]
    return Job(steps=steps, files={"solution.py": source}, **job_fields)


def _seen(run) -> list[tuple]:
    """What a program showed: each case's exit, stdout and stderr (the job's own work dir taken out); of the
    compile step, its exit and the error's last line (the fresh path compiles in ``python3 -c``, whose traceback
    has a frame more)."""
    job_dir = re.compile(r"/tmp/job-[0-9a-f]+")
    compiled, *cases = run.steps
    return [(compiled.exit_code, compiled.stderr.strip().splitlines()[-1:])] + [
        (s.exit_code, s.signal, s.timed_out, job_dir.sub("JOB", s.stdout), job_dir.sub("JOB", s.stderr))
        for s in cases]


def test_a_case_as_a_fork_sees_and_ends_as_a_fresh_python3(sandbox_backend, backend_ready):
    async def main():
        sandbox = make_sandbox(replace(TEST_CONFIG, sandbox_backend=sandbox_backend, max_concurrency=1))
        await sandbox.start()
        try:
            for name, source in PROBES.items():
                forked = await sandbox.run(_job(source, host=True))
                fresh = await sandbox.run(_job(source, host=False))
                assert forked.completed and fresh.completed, name
                assert _seen(forked) == _seen(fresh), name
            usage = (await sandbox.run(_job(PROBES["limits"], host=True))).usage
            assert usage["steps"][1] > 0  # (the runner's account still covers the cases' processes)
        finally:
            await sandbox.close()

    asyncio.run(main())


def test_a_stopped_job_ends_with_done_and_keeps_its_sandbox(sandbox_backend, backend_ready):
    async def main():
        sandbox = make_sandbox(replace(TEST_CONFIG, sandbox_backend=sandbox_backend, max_concurrency=1))
        await sandbox.start()
        try:
            seen = []

            def judge(step) -> bool:
                seen.append(step.name)
                return step.name == "compile"  # the first case "fails": stop there

            source = "import time\nprint(input())\ntime.sleep(0.3)\n"
            run = await sandbox.run(_job(source, host=True, stoppable=True), on_step=judge)
            assert run.stopped_early and run.completed and not run.dirty
            assert [s.name for s in run.steps] == ["compile", "case 0"] and seen == ["compile", "case 0"]
            after = await sandbox.run(_job("print(int(input()) * 2)\n", host=True))
            assert [s.stdout for s in after.steps[1:]] == ["2\n", "4\n"]
            assert sandbox.recycled == 0  # the stopped job's sandbox ran the next one
        finally:
            await sandbox.close()

    asyncio.run(main())
