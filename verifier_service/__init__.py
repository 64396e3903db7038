"""RLVR verifier service: scores model completions with verifiable rewards."""

__version__ = "0.1.0"
