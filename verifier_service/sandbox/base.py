"""A sandbox job (files + steps) and what running it produced.

The job is executed by ``verifier_service/runner/runner.py`` inside the sandbox; its
JSON form is that runner's input. Nothing here decides a verdict: the
verifier kinds read ``StepResult``s and decide.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from verifier_service.runner import wire

SANDBOX_ENV = wire.SANDBOX_ENV  # "1" in the runner's environment (see runner/wire.py)

@dataclass(frozen=True)
class Step:
    name: str
    argv: list[str]
    timeout_s: float
    stdin: str = ""
    memory_bytes: int | None = None     # RLIMIT_AS for the step (None: only the container limit)
    output_limit: int = 1 << 20         # stdout bytes kept before the step is killed
    collect: tuple[str, ...] = ()       # work-dir files returned after the step
    stop_on_failure: bool = False       # skip the remaining steps if this one fails
    harness: str = ""                   # a harness the runner may start from its warm zygote instead of argv
    judge: str = ""                     # "calls": the runner may judge the step's tests itself (see python_assert)
    no_fork: bool = False               # the step's process and what it execs start no new process (threads stay):
                                        # runner/procs.no_new_processes
    stdin_pipe: bool = False            # stdin a pipe (a program's own input: open("/dev/stdin") works) instead
                                        # of a socket that no process can open through /proc (a judge's tests)
    # The step's stdin as data (a harness's tests), in place of ``stdin``: the job is encoded once, with it, and the
    # runner encodes it for the harness's process, or reads it as it is when it judges the step itself.
    stdin_json: Any = None


@dataclass(frozen=True)
class Job:
    steps: list[Step]
    files: dict[str, str] = field(default_factory=dict)
    # The host may stop the job between steps (``on_step`` returned False) and keep the sandbox: the runner reads a
    # "stop" line then. Only where it matters (a stdio job that ends at its first failing case).
    stoppable: bool = False
    # Each step's result sent as it ends (the host acts on it); False: all of them with the job's end, in one go.
    stream: bool = True
    image: str = ""  # the image family that has the job's toolchain ("": the default image; see kinds/languages.py)

    def to_runner_json(self, file_size_limit: int, open_files: int) -> dict[str, Any]:
        data = {
            wire.JOB_FILES: self.files,
            wire.JOB_STEPS: [dict(vars(s)) for s in self.steps],  # not asdict: it deep-copies every value, stdin too
            wire.JOB_FILE_SIZE_LIMIT: file_size_limit,
            wire.JOB_OPEN_FILES: open_files,
        }
        if self.stoppable:
            data[wire.JOB_STOPPABLE] = True
        if not self.stream:
            data[wire.JOB_STREAM] = False
        return data

    @property
    def total_timeout_s(self) -> float:
        return sum(s.timeout_s for s in self.steps)

    @property
    def backstop_s(self) -> float:
        """The wall-clock seconds the runner may take for the job's steps: each step's limit is its program's
        own time, ended at the wall-clock backstop whatever that measure says (runner/stepclock.py)."""
        return sum(step_backstop_s(s.timeout_s) for s in self.steps)


def step_backstop_s(timeout_s: float) -> float:
    """The wall-clock seconds at which the runner ends a step of limit ``timeout_s`` (runner/stepclock.py)."""
    return wire.BACKSTOP_FACTOR * timeout_s + wire.BACKSTOP_EXTRA_S


@dataclass
class StepResult:
    name: str
    exit_code: int | None
    signal: int | None
    timed_out: bool
    output_limited: bool
    duration_s: float
    stdout: str
    stderr: str
    report: str = ""
    collected: dict[str, str] = field(default_factory=dict)
    spawn_error: str = ""

    @property
    def ok(self) -> bool:
        return (self.exit_code == 0 and not self.timed_out and not self.output_limited
                and not self.signal and not self.spawn_error)

    @classmethod
    def from_runner(cls, obj: dict[str, Any]) -> StepResult:
        return cls(
            name=str(obj.get("name", "")),
            exit_code=obj.get("exit_code"),
            signal=obj.get("signal"),
            timed_out=bool(obj.get("timed_out")),
            output_limited=bool(obj.get("output_limited")),
            duration_s=float(obj.get("duration_s") or 0.0),
            stdout=str(obj.get("stdout", "")),
            stderr=str(obj.get("stderr", "")),
            report=str(obj.get("report", "")),
            collected=dict(obj.get("collected") or {}),
            spawn_error=str(obj.get("spawn_error") or ""),
        )


@dataclass
class SandboxRun:
    """Everything one job produced. ``completed`` is False when the runner did
    not reach its end: the host stopped it (``stopped_early``, ``host_timeout``)
    or the container died (``oom_killed``, or a runner fault in ``runner_error``)."""

    steps: list[StepResult]
    completed: bool
    stopped_early: bool = False
    host_timeout: bool = False
    oom_killed: bool = False
    dirty: bool = False  # the runner could not scrub everything the job left
    killed_sandbox: bool = False  # the job took two sandboxes down, one after the other (never an infra fault)
    killed_outside: bool = False  # the sandbox was killed by someone else (docker kill, an operator): not the job
    runner_error: str = ""
    queue_s: float = 0.0
    run_s: float = 0.0
    # What the job cost inside the sandbox, by process ("runner", "zygote", "steps"): (CPU seconds, page faults).
    usage: dict[str, tuple[float, int]] = field(default_factory=dict)

