"""A sandboxed Python interpreter as a TRL environment: ``GRPOTrainer(environment_factory=...)``.

TRL (>= 1.16) builds one environment object per rollout, calls its ``reset(**row)`` before generation, exposes its
public methods as tools (their docstrings become the tool schema) and, when the class has ``get_reward``, calls it
once per finished rollout. ``PythonSandboxEnv`` gives the model one tool, ``run_python(code)``, backed by a sandbox
session of the verifier service: a live interpreter in a sandbox of its own that keeps variables, imports and
files between the rollout's calls, like a notebook. ``reset`` closes the rollout's previous session and opens a
fresh one in the background (TRL resets every rollout of a batch one after another, then generates: the opens
overlap each other and the generation). ``get_reward`` verifies what the rollout's session holds with the row's
verification spec through the service's verifier kinds, as ``VerifierRewards`` verifies a completion: INFRA_ERROR
scores ``None`` (left out of the group mean), never 0. What the session holds is rebuilt from its cells
(``session_program``): each cell that ran, in order, also one that raised after defining something (run again
with its error caught) or was interrupted by a limit (up to the statement it was stopped in); a cell whose
interpreter was lost (``restarted``) drops everything before it; each cell compiles on its own, as it did in
the session (a later ``from __future__`` import is legal there).

    from trainer.environment import python_sandbox_factory
    trainer = GRPOTrainer(model=..., args=..., train_dataset=rows_with_a_verification_column,
                          environment_factory=python_sandbox_factory("localhost:50051"))

Nothing a rollout's code does raises out of the tool: an error, a timeout, a dead interpreter or a lost session
comes back to the model as text (a session that is gone is opened afresh, and the model is told its state is
lost). Sessions carry the labels ``client=trl-environment`` and ``run=<this process's id>``; the process closes
them all by label when it exits (the service's idle TTL closes them otherwise).

The factory pickles (``SandboxEnvFactory``: TRL's ``trl.experimental.async_grpo.AsyncGRPOTrainer`` runs its
rollouts in a spawned child process and pickles ``environment_factory`` into it). Everything that holds a channel
or a thread is made in the process that uses it: each environment's session client and verifier client, the
background pool that opens and closes sessions, and the run label with its exit hook are per process (a forked
child gets its own, and never closes its parent's sessions).
"""

from __future__ import annotations

import ast
import atexit
import json
import logging
import os
import re
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import verifier_service.messages as pb
from verifier_service.client.errors import RemoteSessionGone
from verifier_service.client.sessions import SessionClient
from verifier_service.credentials import Credentials
from verifier_service.errors import RemoteError, VerifierError
from verifier_service.spec import request_from_json

log = logging.getLogger(__name__)

STATUS_NOTES = {pb.CELL_TIMEOUT: "the code ran past its time limit and was stopped",
                pb.CELL_MEMORY_LIMIT: "the code ran out of memory",
                pb.CELL_OUTPUT_LIMIT: "the output went past its limit and was cut",
                pb.CELL_INFRA_ERROR: "the sandbox failed (not the code's fault)"}
_lock = threading.Lock()
_process: dict[str, Any] = {}  # this process's run label, background pool and targets (see _local)


def _local() -> dict[str, Any]:
    """This process's run id, background pool and targets to close at exit; made afresh in a forked child (a
    thread pool does not survive a fork, and the parent's run label is the parent's to close)."""
    with _lock:
        if _process.get("pid") != os.getpid():
            _process.clear()
            _process.update(pid=os.getpid(), run_id=uuid.uuid4().hex[:12], targets=set(), remotes={},
                            pool=ThreadPoolExecutor(max_workers=32, thread_name_prefix="sandbox-session"))
            atexit.register(_close_all, os.getpid())
        return _process


_CELL_LINE = re.compile(r'File "<cell>", line (\d+)')


def _cell_record(code: str, result: pb.CellResult) -> tuple[str, str] | None:
    """What a finished cell left in the session, as (source, how to replay it): ``run`` (it ran through), ``caught``
    (it raised: run again with the error caught), or None (it never ran: a syntax error, or nothing it did is
    left). A cell stopped by a limit keeps the top-level statements before the one it was stopped in."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    if result.status == pb.CELL_OK:
        return code, "run"
    if result.status == pb.CELL_ERROR:
        return code, "caught"
    if result.status in (pb.CELL_TIMEOUT, pb.CELL_MEMORY_LIMIT, pb.CELL_OUTPUT_LIMIT):
        lines = [int(n) for n in _CELL_LINE.findall(result.traceback)]
        if not lines:
            return None
        stopped = next((i for i, node in enumerate(tree.body)
                        if node.lineno <= lines[0] <= (node.end_lineno or node.lineno)), len(tree.body))
        kept = tree.body[:stopped]
        return (ast.unparse(ast.Module(body=kept, type_ignores=[])), "caught") if kept else None
    return None


def _future_import(code: str) -> bool:
    try:
        return any(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in ast.parse(code).body)
    except (SyntaxError, ValueError):
        return False


def session_program(cells: list[tuple[str, str]]) -> str:
    """One program that leaves what the session's cells left: cells that ran through as they are, a cell
    that raised (or was stopped) run again with its error caught, and a cell with a ``from __future__`` import
    (legal at the top of a cell, not in the middle of a program) compiled on its own."""
    parts = []
    for number, (code, how) in enumerate(cells, 1):
        if how == "run" and not (parts and _future_import(code)):
            parts.append(code)
            continue
        run = f"exec(compile({code!r}, '<cell {number}>', 'exec'), globals())"
        parts.append(run if how == "run" else f"try:\n    {run}\nexcept BaseException:\n    pass")
    return "\n\n".join(parts)


def run_id() -> str:
    """The label value (``run=...``) of the sessions this process opens."""
    return _local()["run_id"]


def _background() -> ThreadPoolExecutor:
    return _local()["pool"]


class SandboxEnvFactory:
    """The ``environment_factory`` for TRL: each call makes a ``PythonSandboxEnv(target, **options)``. A plain
    object of the target and options, so it pickles into a spawned rollout process."""

    def __init__(self, target: str, **options: Any):
        self.target = target
        self.options = options

    def __call__(self) -> PythonSandboxEnv:
        return PythonSandboxEnv(self.target, **self.options)

    def __repr__(self) -> str:
        return f"SandboxEnvFactory({self.target!r})"


def python_sandbox_factory(target: str, **options: Any) -> SandboxEnvFactory:
    """The ``environment_factory`` for ``GRPOTrainer`` (or ``AsyncGRPOTrainer``): each call makes a
    ``PythonSandboxEnv(target, **options)``."""
    return SandboxEnvFactory(target, **options)


class PythonSandboxEnv:
    """One rollout's Python sandbox. Public methods are TRL tools (``run_python``) or TRL's hooks (``reset``,
    ``get_reward``); everything else is private, so TRL does not offer it to the model.

    ``limits``: the session's limits (``pb.SessionLimits``; 0 fields take the service's defaults);
    ``spec_column``: the dataset column ``get_reward`` reads the verification spec from (JSON text or a mapping);
    ``max_output_chars``: the most of one tool result the model sees (head and tail kept)."""

    def __init__(self, target: str, *, credentials: Credentials | None = None, limits: pb.SessionLimits | None = None,
                 labels: dict[str, str] | None = None, spec_column: str = "verification",
                 max_output_chars: int = 2000, reward_timeout_s: float = 120.0):
        self._target = target
        self._credentials = credentials or Credentials.from_env()
        self._sessions = SessionClient(target, self._credentials)
        self._limits = limits
        self._labels = {"client": "trl-environment", "run": run_id(), **(labels or {})}
        self._spec_column = spec_column
        self._max_output_chars = max_output_chars
        self._reward_timeout_s = reward_timeout_s
        self._session: Future | None = None
        self._row: dict[str, Any] = {}
        self._cells: list[tuple[str, str]] = []  # what the session holds (see session_program)
        local = _local()
        with _lock:
            local["targets"].add((self._sessions.address, self._credentials))

    # ---- TRL's hooks -------------------------------------------------------------

    def reset(self, **row: Any) -> None:
        """A new rollout: the previous session closed, a fresh one opening in the background."""
        self._close_session()
        self._row = row
        self._cells = []
        self._session = _background().submit(self._open)

    def run_python(self, code: str) -> str:
        """Run Python code in a persistent, sandboxed interpreter and return what it printed.

        Variables, functions, imports and files are kept between calls, as in a notebook. The value of the last
        line is shown when it is an expression; an error shows its traceback.

        Args:
            code: The Python source to run.

        Returns:
            The output of the code: its stdout and stderr, the value of its last expression, or its error.
        """
        try:
            session_id = self._session_id()
            try:
                result = self._sessions.execute(session_id, code)
                note = ""
            except RemoteSessionGone as exc:
                self._session = _background().submit(self._open)
                result = self._sessions.execute(self._session_id(), code)
                note = f"[the previous interpreter had ended ({exc.details}); a fresh one ran this code: earlier " \
                       "variables and files are gone]"
        except (RemoteError, VerifierError) as exc:
            return self._fit(f"[the sandbox could not run the code: {exc}]")
        if note or result.restarted:
            self._cells = []  # a fresh interpreter: what earlier cells left is gone
        if not result.restarted:
            record = _cell_record(code, result)
            if record is not None:
                self._cells.append(record)
        return self._fit(_describe(result, note))

    def get_reward(self) -> float | None:
        """What the rollout's session holds (``session_program`` of its cells) verified with the row's spec;
        None when the sandbox could not judge it or the row has no spec. Synchronous, as ``run_python`` is (one verifier
        connection per process and target, on a loop of its own)."""
        raw = self._row.get(self._spec_column)
        if raw is None:
            return None
        try:
            spec = json.loads(raw) if isinstance(raw, str) else dict(raw)
            program = session_program(self._cells)
            if spec.get("extract") in ("fenced_code", "last_fenced_code"):
                program = f"```python\n{program}\n```"
            request = request_from_json({"id": "rollout", "completion": program, "spec": spec})
            remote = _remote(self._target, self._credentials)
            result = remote.call(remote.client.verify(request, timeout_s=self._reward_timeout_s))
        except (VerifierError, ValueError, TypeError) as exc:
            log.warning("a rollout's reward could not be computed: %s", exc)
            return None
        return result.reward if result.HasField("reward") else None

    # ---- private ---------------------------------------------------------------------

    def _open(self) -> str:
        return self._sessions.open(limits=self._limits, labels=self._labels).session_id

    def _session_id(self) -> str:
        if self._session is None:
            self._session = _background().submit(self._open)
        return self._session.result()

    def _close_session(self) -> None:
        previous, self._session = self._session, None
        if previous is not None:
            _background().submit(self._close_quietly, previous)

    def _close_quietly(self, opening: Future) -> None:
        try:
            self._sessions.close_session(opening.result())
        except (RemoteError, VerifierError):
            pass  # gone already, or the service is: its TTL ends it

    def _fit(self, text: str) -> str:
        limit = self._max_output_chars
        if len(text) <= limit:
            return text
        head = limit * 2 // 3
        return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[len(text) - (limit - head):]}"


def _describe(result: pb.CellResult, note: str = "") -> str:
    """A cell's result as the text the model reads."""
    parts = [note] if note else []
    if result.stdout:
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append(result.stderr.rstrip("\n"))
    if result.HasField("value"):
        parts.append(result.value)
    if result.status != pb.CELL_OK:
        parts.append(result.traceback.rstrip("\n") or result.error)
        if result.status in STATUS_NOTES:
            parts.append(f"[{STATUS_NOTES[result.status]}]")
    if result.restarted:
        parts.append("[the interpreter was restarted: earlier variables are gone, files are kept]")
    return "\n".join(parts) if parts else "[no output]"


def _remote(target: str, credentials: Credentials):
    """This process's verifier connection to ``target`` (a ``VerifierClient`` on a loop of its own thread)."""
    from trainer.adapters.remote import Remote

    remotes = _local()["remotes"]
    with _lock:
        key = (target, credentials)
        if key not in remotes:
            remotes[key] = Remote(target, credentials)
        return remotes[key]


def _close_all(pid: int) -> None:
    """At exit: every session this process opened, closed by its run label (nothing in a forked child that exits
    through its parent's hooks)."""
    if _process.get("pid") != pid or os.getpid() != pid:
        return
    for address, credentials in list(_process["targets"]):
        try:
            with SessionClient(address, credentials, max_wait_s=0) as client:
                client.close_labelled({"run": _process["run_id"]}, timeout_s=5)
        except (RemoteError, VerifierError):
            pass
