"""Completions that are not valid UTF-8 on the wire: a verdict of that sample, not a failed batch.

proto3 refuses a ``string`` field holding bytes that are not UTF-8, so one such
completion would make the whole ``VerifyBatchRequest`` undecodable. When the
strict parse fails, ``decode`` parses the message again with the completion read
as bytes; each completion that is not UTF-8 is replaced by ``UNDECODABLE`` (the
engine gives it a MALFORMED verdict) and the message is parsed strictly again.
Anything else that is not UTF-8 (an id, a spec field) is the caller's error and
still fails the call. ``UNDECODABLE`` holds a per-process random part, so no
client can send it.

``OVERSIZE`` is the same kind of mark for a completion over ``max_completion_bytes`` that a door measured before
the service ever held its text (a large HTTP body is turned into requests in a pure worker, which drops such a
text and keeps its size: ``oversize_mark``); the engine scores it as it scores the text itself (``marked_size``).
The worker is told this process's mark, so that a completion that merely looks like one is never taken for it.

``wire_text`` is the client side: a Python string with lone surrogates cannot
be sent as a proto string at all; its surrogates go as U+FFFD instead.
"""

from __future__ import annotations

import re
import secrets
from functools import lru_cache

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from verifier_service._generated import verifier_pb2 as pb

UNDECODABLE = "\U0010fffe undecodable completion " + secrets.token_hex(16)
OVERSIZE = "\U0010fffe oversize completion " + secrets.token_hex(16)


def oversize_mark(size: int, mark: str = OVERSIZE) -> str:
    """What stands for a completion of ``size`` bytes whose text was dropped (``mark``: the serving process's)."""
    return f"{mark} {size}"


def marked_size(completion: str) -> int | None:
    """The size an ``oversize_mark`` of this process says; None for any other text."""
    if not completion.startswith(OVERSIZE):
        return None
    size = completion[len(OVERSIZE):]
    return int(size) if size[:1] == " " and size[1:].isascii() and size[1:].isdigit() else None
_PACKAGE = "rlvr.verifier.v1"
_LENIENT_PACKAGE = "rlvr.verifier.lenient"


@lru_cache(maxsize=1)
def _lenient_classes() -> dict[str, type]:
    """VerifyRequest / VerifyBatchRequest whose ``completion`` is ``bytes``, in a pool of their own."""
    proto = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(proto)
    proto.name = "rlvr_lenient_verifier.proto"
    proto.package = _LENIENT_PACKAGE
    del proto.service[:]
    for message in proto.message_type:
        for f in message.field:
            if f.type_name.startswith(f".{_PACKAGE}."):
                f.type_name = f".{_LENIENT_PACKAGE}." + f.type_name[len(_PACKAGE) + 2:]
            if message.name == "VerifyRequest" and f.name == "completion":
                f.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_LENIENT_PACKAGE}.{name}"))
            for name in ("VerifyRequest", "VerifyBatchRequest")}


def _mark(request) -> bool:
    try:
        request.completion.decode("utf-8")
        return False
    except UnicodeDecodeError:
        request.completion = UNDECODABLE.encode()
        return True


def decode(deserializer, raw: bytes):
    """``deserializer(raw)``; if that fails only because completions are not UTF-8, the message with
    those completions marked ``UNDECODABLE``. Otherwise the strict parse's error is raised."""
    try:
        return deserializer(raw)
    except Exception as strict_error:
        owner = getattr(deserializer, "__self__", None)
        name = owner.DESCRIPTOR.name if owner is not None and hasattr(owner, "DESCRIPTOR") else ""
        if name not in ("VerifyRequest", "VerifyBatchRequest"):
            raise
        try:
            lenient = _lenient_classes()[name].FromString(raw)
        except Exception:  # noqa: BLE001 - not a message at all: the strict error says why
            raise strict_error from None
        requests = lenient.requests if name == "VerifyBatchRequest" else [lenient]
        if not sum(_mark(r) for r in requests):
            raise
        try:
            return deserializer(lenient.SerializeToString())
        except Exception:  # noqa: BLE001 - still invalid elsewhere (an id, a spec field): the caller's error
            raise strict_error from None


def wire_text(text: str) -> str:
    """``text`` as a proto string can carry it: a Python string holding lone surrogates (bytes decoded with
    ``surrogateescape``, or a JSON ``\\udcff`` escape) cannot be encoded as UTF-8, so each is sent as U+FFFD,
    as a tokenizer decoding with ``errors="replace"`` gives undecodable bytes; never an error of the batch."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)


_SURROGATE = re.compile("[\ud800-\udfff]")
