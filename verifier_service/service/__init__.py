"""The application, callable from Python and knowing no transport: ``verifier.py`` (``Call``, ``Verifier``: verify
for a tenant, run a program, list verifiers: quota hold, admission, catalog, engine, stamp, audit, metrics, once for
every door), ``sessions.py`` (the session manager), ``audit.py`` and ``metrics.py``."""
