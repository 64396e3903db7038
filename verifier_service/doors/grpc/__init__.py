"""The gRPC door: ``server.py`` (``GrpcDoor``: the listener, interceptors, health, reflection), ``servicer.py``
(every RPC, verification and sessions, on the service core; refusals mapped once, by ``errors.STATUS``),
``sessions_rpc.py`` (the session RPCs' messages), ``rpclog.py`` (request ids, decoding, the call log, calls per
client address) and ``auth.py`` (the API key or client certificate -> the tenant, by ``App.authenticate``)."""
