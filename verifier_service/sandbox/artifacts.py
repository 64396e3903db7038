"""Compiled programs kept on the host, so that each unique source is compiled once.

A GRPO group often holds the same program several times (completions that differ only in their prose). The
first job for a source compiles it and, in the same sandbox, packs what the compiler made (a ``pack`` step:
``tar | base64``, run by the runner right after the compile step, before any of the candidate's code has
run in that job); the host keeps that text here. Later jobs for the same source skip the compile and unpack
the text into their fresh work dir instead. Jobs for a source being compiled wait for that compile (one
compile per source even when the group arrives at once). A compile that failed with an exit status is kept
too: the same source fails the same way.

Why a candidate cannot change another job's program through this cache: the cache lives in the service's
memory, never in a sandbox; an entry is written only from the ``pack`` step of the job that compiled it,
which runs before that job's own program does; each later job gets its own copy, unpacked into its own work
dir (what its program does to that copy stays in that job). The key is the SHA-256 of everything the
compile depends on (image family, compile command, file name, source), and a compiler run on a source
executes none of it (no annotation processors, no build scripts, no macros from crates).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from collections import OrderedDict
from dataclasses import dataclass

from verifier_service.sandbox.base import StepResult

MAX_BYTES = 256 << 20  # packed programs kept, in all (the least recently used go first)


@dataclass(frozen=True)
class Built:
    """One compile's result: the packed program (base64 of a tar), or the failed compile step."""

    packed: str = ""
    failure: StepResult | None = None

    @property
    def size(self) -> int:
        return len(self.packed) + (len(self.failure.stderr) + len(self.failure.stdout) if self.failure else 0)


def artifact_key(family: str, compile_argv: list[str] | tuple[str, ...], file: str, source: str) -> str:
    blob = json.dumps([family, list(compile_argv), file, source], ensure_ascii=False).encode("utf-8", "replace")
    return hashlib.sha256(blob).hexdigest()


class ArtifactCache:
    """Built programs by ``artifact_key``, at most ``max_bytes`` of them; and the compiles under way."""

    def __init__(self, max_bytes: int = MAX_BYTES):
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, Built] = OrderedDict()
        self._bytes = 0
        self._building: dict[str, asyncio.Future[None]] = {}
        self.hits = 0
        self.compiles = 0
        self._secrets: OrderedDict[str, bytes] = OrderedDict()

    def secret(self, ident: str, size: int) -> bytes:
        """Random bytes drawn once per ``ident`` (the last 100,000 kept): a program that embeds them is the same
        program, compiled once, every time ``ident`` comes back (kinds/function_tests.py)."""
        key = hashlib.sha256(ident.encode("utf-8", "replace")).hexdigest()
        value = self._secrets.get(key)
        if value is None or len(value) != size:
            value = self._secrets[key] = secrets.token_bytes(size)
            while len(self._secrets) > 100_000:
                self._secrets.popitem(last=False)
        self._secrets.move_to_end(key)
        return value

    async def claim(self, key: str, wait_s: float) -> Built | None:
        """The built program of ``key``; or None, and the caller now compiles it (and must ``release`` the key
        when its job ends). A compile of the same key under way is waited for (at most ``wait_s``)."""
        while True:
            built = self._entries.get(key)
            if built is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return built
            pending = self._building.get(key)
            if pending is None:
                self._building[key] = asyncio.get_running_loop().create_future()
                self.compiles += 1
                return None
            try:
                await asyncio.wait_for(asyncio.shield(pending), wait_s)
            except asyncio.TimeoutError:
                self.compiles += 1
                return None  # compiled here as well (not claimed: the first compile still fills the entry)
            # That compile is over: its result is an entry now, or (its sandbox failed) this caller claims the key.

    def put(self, key: str, built: Built) -> None:
        """Keeps a compile's result and wakes the jobs waiting for it."""
        if key not in self._entries and built.size <= self.max_bytes:
            self._entries[key] = built
            self._bytes += built.size
            while self._bytes > self.max_bytes:
                _, old = self._entries.popitem(last=False)
                self._bytes -= old.size
        self.release(key)

    def release(self, key: str) -> None:
        """The compile of ``key`` is over (with or without a result): its waiters go on."""
        pending = self._building.pop(key, None)
        if pending is not None and not pending.done():
            pending.set_result(None)
