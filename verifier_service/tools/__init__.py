"""Offline tools: the ``verifier-service`` command (``cli.py``, ``tenancy_cli.py``),
the inspection report (``inspection.py``) and JSONL reading (``jsonl.py``)."""
