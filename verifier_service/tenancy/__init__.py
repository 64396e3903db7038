"""Tenancy: who may call (``auth.py``), how much (``quota.py``) and which
published verifiers they may name (``catalog.py``)."""
