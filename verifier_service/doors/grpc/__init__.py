"""The gRPC door: ``server.py`` (the app's resources and listener, health, reflection, workers), ``servicer.py``
(the RPCs on the service core; refusals mapped by ``errors.STATUS``), ``sessions_rpc.py`` (the session RPCs' messages)."""
