"""The runner's vocabulary: the names the host side and the runner must spell alike.

The runner imports this module by its bare name inside the sandbox (``import wire``); the host side imports it
as ``verifier_service.runner.wire`` (the only module of the runner it may import). Standard library only, and
nothing at all: it is data.
"""

# Where the runner lives in a sandbox: the images COPY it there, the bwrap backend binds it there read-only.
RUNNER_DIR = "/opt/rlvr"
# "1" in the runner's environment, set by the sandbox images (ENV) and by each backend: runner.py refuses to start
# without it, since between jobs it empties /tmp and /dev/shm (started by hand on a host, it would wipe the host's).
SANDBOX_ENV = "RLVR_SANDBOX"

# Harnesses a step may name (``Step.harness``): a standby forked from the runner's zygote becomes one without an
# interpreter start (see harnesses.py).
ASSERT_HARNESS = "assert_harness"   # python_assert's tests in the candidate's process
IO_HARNESS = "io_harness"           # python_io's calls
CANDIDATE = "candidate"             # the candidate's process of a step the runner judges itself (stepio.judge_calls)
PYTHON_PROGRAM = "python_program"   # a stdio Python job's program host (pyprog.py), compiled once
PYTHON_CASE = "python_case"         # one stdio Python case: a fork of that program host
KERNEL = "kernel"                   # a session's live interpreter (session.py, kernel.py)
# ``Step.judge``: the runner may judge the step's tests itself when they are calls on literals.
JUDGE_CALLS = "calls"

# A step's ``timeout_s`` limits its program's own time (wall-clock time less the time it waited for a CPU; see
# stepclock.py); whatever that measure says, the runner ends the step at BACKSTOP_FACTOR x timeout_s +
# BACKSTOP_EXTRA_S of wall-clock time, and the host waits that long for it.
BACKSTOP_FACTOR, BACKSTOP_EXTRA_S = 2.0, 1.0

# A job's fields (one line of JSON; sandbox/base.py ``Job.to_runner_json`` writes them).
JOB_FILES, JOB_STEPS = "files", "steps"
JOB_FILE_SIZE_LIMIT, JOB_OPEN_FILES = "file_size_limit", "open_files"
JOB_STOPPABLE, JOB_STREAM = "stoppable", "stream"
# In place of a job: a line that hands the warm sandbox to one session (its limits) with the session's token.
JOB_SESSION, JOB_TOKEN = "session", "token"
