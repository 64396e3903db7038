"""The runner: the program that runs inside a sandbox (another trust domain). Standard library only; it imports
nothing of ``verifier_service``. Its modules import each other by bare name (the sandbox runs ``runner.py`` from
``wire.RUNNER_DIR``); the host side imports only ``wire`` (the names both sides spell alike)."""
