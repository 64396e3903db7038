"""How a client reaches a service that wants a key and TLS, and the listener's TLS.

``Credentials`` bundles what a client presents: the API key (sent as
``authorization: Bearer <key>`` on each call; read from RLVR_VERIFIER_API_KEY
unless given, never logged or printed) and the TLS trust (a CA file, or the
system roots) with an optional client certificate for mutual TLS. Without TLS
settings the channel is plaintext, as before. ``retry_after_s`` reads the
service's RESOURCE_EXHAUSTED retry hint (trailing metadata ``retry-after-ms``).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from verifier_service.errors import RETRY_AFTER_KEY, VerifierError

API_KEY_ENV = "RLVR_VERIFIER_API_KEY"
TLS_CA_ENV = "RLVR_VERIFIER_TLS_CA"


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise VerifierError(f"cannot read the {what} {path}: {exc.strerror}") from exc


def server_credentials(config) -> grpc.ServerCredentials | None:
    """TLS for the listener from ``tls_cert``/``tls_key`` (None: plaintext); with ``tls_client_ca``,
    clients must present a certificate it signed (mutual TLS)."""
    if not config.tls_cert:
        return None
    chain = _read(config.tls_cert, "TLS certificate (tls_cert)")
    key = _read(config.tls_key, "TLS private key (tls_key)")
    client_ca = _read(config.tls_client_ca, "client CA bundle (tls_client_ca)") if config.tls_client_ca else None
    return grpc.ssl_server_credentials([(key, chain)], root_certificates=client_ca,
                                       require_client_auth=client_ca is not None)


@dataclass(frozen=True)
class Credentials:
    api_key: str = field(default="", repr=False)
    tls: bool = False    # TLS with the system's roots (implied by tls_ca)
    tls_ca: str = ""     # PEM file of the CA that signed the service's certificate
    tls_cert: str = ""   # client certificate chain (mutual TLS)
    tls_key: str = field(default="", repr=False)

    @classmethod
    def from_env(cls, api_key: str | None = None, tls_ca: str | None = None, **kwargs) -> Credentials:
        """Given values win; otherwise RLVR_VERIFIER_API_KEY and RLVR_VERIFIER_TLS_CA."""
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV, "")
        ca = tls_ca if tls_ca is not None else os.environ.get(TLS_CA_ENV, "")
        return cls(api_key=key.strip(), tls_ca=ca, **kwargs)

    @property
    def secure(self) -> bool:
        return bool(self.tls or self.tls_ca or self.tls_cert)

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.api_key}"),) if self.api_key else ()

    def channel_credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=_read(self.tls_ca, "TLS CA file") if self.tls_ca else None,
            private_key=_read(self.tls_key, "client TLS key") if self.tls_cert else None,
            certificate_chain=_read(self.tls_cert, "client TLS certificate") if self.tls_cert else None)

    def aio_channel(self, target: str, options=None) -> grpc.aio.Channel:
        if self.secure:
            return grpc.aio.secure_channel(target, self.channel_credentials(), options=options)
        return grpc.aio.insecure_channel(target, options=options)

    def channel(self, target: str, options=None) -> grpc.Channel:
        if self.secure:
            return grpc.secure_channel(target, self.channel_credentials(), options=options)
        return grpc.insecure_channel(target, options=options)

    def connect_hint(self) -> str:
        """What to try when nothing answers: the other transport."""
        if self.secure:
            return "if the service listens in plaintext, connect without TLS settings"
        return "if the service uses TLS, connect with its CA (--server-ca FILE or RLVR_VERIFIER_TLS_CA)"


def retry_after_s(error: grpc.RpcError) -> float | None:
    """The service's retry hint on a RESOURCE_EXHAUSTED error, in seconds; None without one."""
    try:
        trailing = error.trailing_metadata() or ()
    except Exception:  # noqa: BLE001 - an error without metadata
        return None
    for item in trailing:
        key, value = item if isinstance(item, tuple) else (item.key, item.value)
        if key == RETRY_AFTER_KEY:
            try:
                return max(0.0, int(value) / 1000.0)
            except (TypeError, ValueError):
                return None
    return None


def add_client_flags(parser: argparse.ArgumentParser) -> None:
    """Flags of a command that talks to a service (``--server``): the key and TLS."""
    parser.add_argument("--api-key-file", type=Path, metavar="FILE",
                        help=f"file holding the API key (default: the {API_KEY_ENV} environment variable)")
    parser.add_argument("--server-ca", metavar="FILE",
                        help=f"PEM CA of the service's TLS certificate: connect over TLS (env {TLS_CA_ENV})")
    parser.add_argument("--client-cert", metavar="FILE", help="PEM client certificate (mutual TLS)")
    parser.add_argument("--client-key", metavar="FILE", help="PEM key of --client-cert")


def credentials_from_args(args: argparse.Namespace) -> Credentials:
    key = None
    if getattr(args, "api_key_file", None):
        key = _read(str(args.api_key_file), "API key file").decode().strip()
    cert, private = getattr(args, "client_cert", None), getattr(args, "client_key", None)
    if bool(cert) != bool(private):
        raise VerifierError("--client-cert and --client-key go together")
    return Credentials.from_env(api_key=key, tls_ca=getattr(args, "server_ca", None), tls_cert=cert or "",
                                tls_key=private or "")
