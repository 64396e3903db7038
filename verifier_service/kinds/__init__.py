"""The registry of verifier kinds: one module per kind, found by name."""

from __future__ import annotations

import importlib

from verifier_service.errors import InvalidSpec
from verifier_service.kinds.base import COMMON_PARAMS, Context, Param, PureKind, PureRunner, VerifierKind

__all__ = ["COMMON_PARAMS", "Context", "Param", "PureKind", "PureRunner", "VerifierKind", "all_kinds", "get_kind",
           "preload_pure", "register"]

_MODULES = ("python_assert", "python_io", "stdio", "function_tests", "function_io", "sql", "pytest_suite",
            "json_schema", "tool_call", "math_answer", "format_check")
_REGISTRY: dict[str, VerifierKind] = {}
_loaded = False


def register(cls: type[VerifierKind]) -> type[VerifierKind]:
    """Class decorator: makes a kind available under ``cls.name``."""
    if cls.name in _REGISTRY:
        raise RuntimeError(f"verifier kind {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls()
    return cls


def _load() -> dict[str, VerifierKind]:
    global _loaded
    if not _loaded:  # (per spec otherwise: a batch of distinct specs would ask the import system for each)
        for module in _MODULES:  # imported modules are cached: this registers each kind once
            importlib.import_module(f"verifier_service.kinds.{module}")
        _loaded = True
    return _REGISTRY


def all_kinds() -> list[VerifierKind]:
    return [kind for _, kind in sorted(_load().items())]


def get_kind(name: str) -> VerifierKind:
    kinds = _load()
    try:
        return kinds[name]
    except KeyError:
        raise InvalidSpec(f"unknown verifier kind {name!r}; valid kinds: {', '.join(sorted(kinds))}") from None


def preload_pure() -> None:
    """Imports what the pure kinds need, so a worker's first check is fast."""
    _load()
    for kind in _REGISTRY.values():
        warm = getattr(kind, "warm_up", None)
        if warm is not None:
            warm()
