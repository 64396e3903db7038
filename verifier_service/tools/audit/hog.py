"""A CPU hog beside the reference runs: busy processes, one per core, for as long as a ``with`` block runs.

The processes are children of this one in a process group of their own; leaving the block kills the group
and reaps every child, whatever ended the block (an exception, Ctrl-C). Each child also watches its parent:
if this process dies without cleaning up (SIGKILL), the children notice within a second and exit, so no hog
is ever left behind. The hog loads the machine the sandboxes run on only when the service is local
(embedded, or ``--server`` on this host); against a remote service it is pointless and the audit says so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import contextmanager

# Spins until its parent is no longer the auditing process (which died) or it is killed.
_CHILD = ("import os, sys, time\n"
          "parent = int(sys.argv[1])\n"   # given, not asked: the parent may be gone before this line runs
          "while os.getppid() == parent:\n"
          "    end = time.monotonic() + 0.5\n"
          "    while time.monotonic() < end:\n"
          "        pass\n")


def hog_processes(cores: int | None = None) -> int:
    return max(1, cores if cores is not None else (os.cpu_count() or 1))


@contextmanager
def cpu_hog(cores: int | None = None):
    """Runs ``cores`` busy processes (default: one per CPU) while the block runs; yields their pids."""
    procs: list[subprocess.Popen] = []
    leader = None
    try:
        for _ in range(hog_processes(cores)):
            kwargs = {"process_group": leader.pid} if leader is not None else {"process_group": 0}
            proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(os.getpid())], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)
            leader = leader or proc
            procs.append(proc)
        yield [p.pid for p in procs]
    finally:
        if leader is not None:
            try:
                os.killpg(leader.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for proc in procs:
            try:
                proc.kill()
            except ProcessLookupError:
                pass
            proc.wait()
