"""The service's messages (``VerifyRequest``, ``VerifyResult``, ``Verdict``, the session messages...), generated from
the protobuf contract (``python -m verifier_service.codegen``). Code outside the package (the trainer) names them
through this module, never ``_generated``: where the generated code lives is the contract's own business."""

from verifier_service._generated.verifier_pb2 import *  # noqa: F403
