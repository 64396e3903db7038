"""A sandboxed Python interpreter as a TRL environment: ``GRPOTrainer(environment_factory=...)``.

TRL (>= 1.16) builds one environment object per rollout, calls its ``reset(**row)`` before generation, exposes its
public methods as tools (their docstrings become the tool schema) and, when the class has ``get_reward``, calls it
once per finished rollout. ``PythonSandboxEnv`` gives the model one tool, ``run_python(code)``, backed by a sandbox
session of the verifier service: a live interpreter in a sandbox of its own that keeps variables, imports and
files between the rollout's calls, like a notebook. ``reset`` closes the rollout's previous session and opens a
fresh one in the background (TRL resets every rollout of a batch one after another, then generates: the opens
overlap each other and the generation). ``get_reward`` verifies what the rollout ran (its cells that ran without
error, in order) with the row's verification spec through the service's verifier kinds, as ``VerifierRewards``
verifies a completion: INFRA_ERROR scores ``None`` (left out of the group mean), never 0.

    from trainer.environment import python_sandbox_factory
    trainer = GRPOTrainer(model=..., args=..., train_dataset=rows_with_a_verification_column,
                          environment_factory=python_sandbox_factory("localhost:50051"))

Nothing a rollout's code does raises out of the tool: an error, a timeout, a dead interpreter or a lost session
comes back to the model as text (a session that is gone is opened afresh, and the model is told its state is
lost). Sessions carry the labels ``client=trl-environment`` and ``run=<this process's id>``; the process closes
them all by label when it exits (the service's idle TTL closes them otherwise).
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import verifier_service.messages as pb
from verifier_service.client import VerifierClient
from verifier_service.client.errors import RemoteSessionGone
from verifier_service.client.sessions import SessionClient
from verifier_service.credentials import Credentials
from verifier_service.errors import RemoteError, VerifierError
from verifier_service.spec import request_from_json

log = logging.getLogger(__name__)

RUN_ID = uuid.uuid4().hex[:12]  # this process's sessions, closed together at exit
STATUS_NOTES = {pb.CELL_TIMEOUT: "the code ran past its time limit and was stopped",
                pb.CELL_MEMORY_LIMIT: "the code ran out of memory",
                pb.CELL_OUTPUT_LIMIT: "the output went past its limit and was cut",
                pb.CELL_INFRA_ERROR: "the sandbox failed (not the code's fault)"}
_background = ThreadPoolExecutor(max_workers=32, thread_name_prefix="sandbox-session")
_targets: set[tuple[str, Credentials]] = set()
_targets_lock = threading.Lock()


def python_sandbox_factory(target: str, **options: Any):
    """The ``environment_factory`` for ``GRPOTrainer``: each call makes a ``PythonSandboxEnv(target, **options)``."""

    def factory() -> PythonSandboxEnv:
        return PythonSandboxEnv(target, **options)

    return factory


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
        self._labels = {"client": "trl-environment", "run": RUN_ID, **(labels or {})}
        self._spec_column = spec_column
        self._max_output_chars = max_output_chars
        self._reward_timeout_s = reward_timeout_s
        self._session: Future | None = None
        self._row: dict[str, Any] = {}
        self._cells: list[str] = []
        self._verifier: VerifierClient | None = None
        with _targets_lock:
            if not _targets:
                atexit.register(_close_all)
            _targets.add((self._sessions.address, self._credentials))

    # ---- TRL's hooks -------------------------------------------------------------

    def reset(self, **row: Any) -> None:
        """A new rollout: the previous session closed, a fresh one opening in the background."""
        self._close_session()
        self._row = row
        self._cells = []
        self._session = _background.submit(self._open)

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
                self._session = _background.submit(self._open)
                result = self._sessions.execute(self._session_id(), code)
                note = f"[the previous interpreter had ended ({exc.details}); a fresh one ran this code: earlier " \
                       "variables and files are gone]"
        except (RemoteError, VerifierError) as exc:
            return self._fit(f"[the sandbox could not run the code: {exc}]")
        if result.status == pb.CELL_OK:
            self._cells.append(code)
        return self._fit(_describe(result, note))

    async def get_reward(self) -> float | None:
        """The rollout's code (the cells that ran without error) verified with the row's spec; None when the
        sandbox could not judge it or the row has no spec."""
        raw = self._row.get(self._spec_column)
        if raw is None:
            return None
        try:
            spec = json.loads(raw) if isinstance(raw, str) else dict(raw)
            program = "\n\n".join(self._cells)
            if spec.get("extract") in ("fenced_code", "last_fenced_code"):
                program = f"```python\n{program}\n```"
            request = request_from_json({"id": "rollout", "completion": program, "spec": spec})
            if self._verifier is None:  # on the event loop TRL awaits this on (one client per environment)
                self._verifier = VerifierClient.open(self._target, credentials=self._credentials)
            result = await self._verifier.verify(request, timeout_s=self._reward_timeout_s)
        except (VerifierError, ValueError, TypeError) as exc:
            log.warning("a rollout's reward could not be computed: %s", exc)
            return None
        return result.reward if result.HasField("reward") else None

    # ---- private ---------------------------------------------------------------------

    def _open(self) -> str:
        return self._sessions.open(limits=self._limits, labels=self._labels).session_id

    def _session_id(self) -> str:
        if self._session is None:
            self._session = _background.submit(self._open)
        return self._session.result()

    def _close_session(self) -> None:
        previous, self._session = self._session, None
        if previous is not None:
            _background.submit(self._close_quietly, previous)

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


def _close_all() -> None:
    """At exit: every session this process opened, closed by its run label."""
    for address, credentials in list(_targets):
        try:
            with SessionClient(address, credentials, max_wait_s=0) as client:
                client.close_labelled({"run": RUN_ID}, timeout_s=5)
        except (RemoteError, VerifierError):
            pass
