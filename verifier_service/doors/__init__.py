"""The server side: the gRPC application around the engine.

``server.py`` builds the process (listener, health, reflection, workers),
``service.py`` implements the RPCs, ``rpclog.py`` the per-call log and request
ids, ``metrics.py`` the Prometheus counters, ``audit.py`` the tenants' audit log.
"""
