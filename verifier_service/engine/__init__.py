"""The engine: turns verify requests into results.

``engine.py`` validates specs, extracts the answer (``extract.py``), runs the
kind (pure kinds in the worker pool, ``pool.py``; code kinds in a sandbox) and
stamps the result (``results.py``). It knows nothing of gRPC servers or tenants.
"""
