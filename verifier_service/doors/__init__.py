"""The doors into the service core (``verifier_service.service``): ``grpc/`` (the gRPC listener and its servicer)
and ``http/`` (the peers' HTTP/JSON contracts); ``rpclog.py`` the per-call log and request ids both use. A door
turns its wire's request into a ``Call`` and the core's arguments, and the core's refusals (the exceptions of
``errors.py``) into its wire's status, in one table per door."""
