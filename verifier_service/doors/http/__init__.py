"""The HTTP/JSON front door (``--http-port``): SandboxFusion, OpenRLHF and open-instruct wire contracts served
by the gRPC service's own process, event loop and warm sandbox pool. See ``app.py``."""

from verifier_service.doors.http.app import HttpFrontDoor

__all__ = ["HttpFrontDoor"]
