"""The verifier fleet on Ray (the ``rlvr-verifier[ray]`` extra): a Ray Serve application of verifier replicas
(``deployment.py``), session-host actors, a gRPC ingress for callers outside the cluster (``ingress.py``), all
written against one adapter to the service (``core.py``). Callers inside the cluster use the target ``ray:``
(``verifier_service/client/ray_fleet.py``). docs/ray.md says how to run it.
"""
