"""Helpers shared by the tests (and the benchmarks that reuse them); no tests and no fixtures here.

- ``service``: the test run's label and service config, ``RunningService`` (an in-process service with a
  blocking stub), the backend check and what a bubblewrap host cannot hold (``bwrap_gap``);
- ``sandboxes``: this run's sandboxes (Docker containers, bubblewrap processes), the leftovers among them;
- ``wait``: ``wait_for``, polling a condition;
- ``replicas``: replicas as separate ``verifier-service serve`` processes and a workload with known verdicts;
- ``tenancy_setup``: tenants files with fresh keys, a published catalog, calls with a key;
- ``trainer_smoke``: the CPU GRPO smoke runs' prompts, run config and ``trainer`` command.

The fixtures are in ``tests/conftest.py``, which imports from here; tests import helpers from here, never from
``conftest``. ``tests/`` is on ``sys.path`` (``pythonpath`` in pyproject.toml's pytest options).
"""
