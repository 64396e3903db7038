"""Tenants, their API keys, and who a call's key (or client certificate) says is calling.

The tenants file (YAML) maps each tenant to the sha256 hashes of its API keys
(never the keys themselves), the client-certificate names it may also present
over mutual TLS, its quotas, the catalog namespaces it may use and publish,
and whether its audit lines may hold completion content:

    tenants:
      team-math:
        keys: ["sha256:9f86d0..."]        # `verifier-service tenants add-key team-math --tenants FILE`
        identities: ["trainer.math.internal"]   # client certificate CN or DNS SAN (mutual TLS)
        max_concurrency: 64               # verifications in flight; 0 = no limit
        rate: 200                         # verifications per second (token bucket); 0 = no limit
        burst: 400                        # bucket size: the largest batch admitted at once (default: rate)
        use: [math, format, code]         # catalog namespaces it may use ("*" = all)
        publish: [math]                   # namespaces it publishes into (and so may use)
        inline_specs: true                # may send inline specs, not only catalog references
        audit_content: false              # audit lines may carry its completions
        operator: false                   # its key reads every tenant's metrics on the HTTP door's /metrics
        weight: 1                         # its share of the sandboxes and check workers against the other
                                          # tenants active at the time (2: twice a weight-1 tenant's share)

Keys travel as gRPC metadata or HTTP headers ``authorization: Bearer <key>`` (or
``x-api-key``); ``authenticate`` is the one answer to who is calling, and each door
maps its refusal (doors/grpc/auth.py, doors/http/app.py). Health and reflection
stay open. Without a tenants file authentication is off and every caller is the
single ``local`` tenant.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifier_service.errors import CatalogError, PermissionDenied

log = logging.getLogger(__name__)
KEY_PREFIX = "rlvr_"
HASH_PREFIX = "sha256:"
TENANT_KEYS = {"keys", "identities", "max_concurrency", "rate", "burst", "weight", "use", "publish", "inline_specs",
               "audit_content", "max_sessions", "session_rate", "operator"}
_TENANT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_HASH = re.compile(r"^sha256:[0-9a-f]{64}$")
KEY_HELP = ("send the metadata 'authorization: Bearer <key>' (or 'x-api-key: <key>'; clients read "
            "RLVR_VERIFIER_API_KEY); the service's operator creates keys with "
            "`verifier-service tenants add-key TENANT --tenants FILE`")


def new_key() -> str:
    """A fresh random API key (256 bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """What the tenants file stores for ``key``."""
    return HASH_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Tenant:
    name: str
    key_hashes: frozenset[str] = frozenset()
    identities: frozenset[str] = frozenset()
    max_concurrency: int = 0
    rate: float = 0.0
    burst: int = 0
    use: tuple[str, ...] = ("*",)
    publish: tuple[str, ...] = ()
    inline_specs: bool = True
    audit_content: bool = False
    max_sessions: int = 0        # live sandbox sessions (0: the service's tenant_max_sessions)
    session_rate: float = 0.0    # sessions opened per second (0: the service's session_open_rate)
    operator: bool = False       # reads every tenant's metrics (a tenant's key reads only its own)
    weight: float = 1.0          # its fair share of the sandboxes and pure workers, relative to the others'

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.use) | set(self.publish)))

    @property
    def bucket_size(self) -> int:
        """The token bucket's size (the largest batch a rate quota admits at once); 0 without a rate."""
        if not self.rate:
            return 0
        return self.burst or max(1, int(self.rate))

    def may_use(self, namespace: str) -> bool:
        return "*" in self.use or namespace in self.use or self.may_publish(namespace)

    def may_publish(self, namespace: str) -> bool:
        return "*" in self.publish or namespace in self.publish


def require_inline(tenant: Tenant, what: str) -> None:
    """Raises PermissionDenied unless ``tenant`` may run code of its own (``inline_specs``): a tenant held to
    catalog verifiers may not run a program, a notebook or a session either, whatever the door."""
    if not tenant.inline_specs:
        raise PermissionDenied(f"tenant {tenant.name!r} may use catalog verifiers only (inline_specs is off), so "
                               f"it may not {what}; set verifier to team/name@version (ListVerifiers lists them)")


LOCAL_TENANT = Tenant("local")  # the one caller when authentication is off
current_tenant: ContextVar[Tenant] = ContextVar("rlvr_tenant", default=LOCAL_TENANT)


def _names(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise CatalogError(f"{where} must be a list of strings")
    return tuple(value)


def _number(value: Any, where: str, typ: type) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise CatalogError(f"{where} must be a number >= 0")
    if typ is int and value != int(value):
        raise CatalogError(f"{where} must be a whole number")
    return typ(value)


def parse_tenant(name: str, data: Any, where: str) -> Tenant:
    where = f"{where}: tenant {name!r}"
    if not isinstance(name, str) or not _TENANT_NAME.match(name):
        raise CatalogError(f"{where}: a tenant name is letters, digits, '_', '.', '-'")
    data = data or {}
    if not isinstance(data, dict):
        raise CatalogError(f"{where} must be a mapping of settings")
    unknown = sorted(set(data) - TENANT_KEYS)
    if unknown:
        raise CatalogError(f"{where}: unknown setting(s) {unknown}; valid: {', '.join(sorted(TENANT_KEYS))}")
    keys = _names(data.get("keys"), f"{where}: keys")
    bad = [k for k in keys if not _HASH.match(k)]
    if bad:
        raise CatalogError(f"{where}: keys hold 'sha256:<64 hex>' hashes, never the keys themselves "
                           f"(`verifier-service tenants hash-key`); not a hash: {bad[0][:12]}...")
    for flag in ("inline_specs", "audit_content", "operator"):
        if flag in data and not isinstance(data[flag], bool):
            raise CatalogError(f"{where}: {flag} must be true or false")
    tenant = Tenant(
        name=name, key_hashes=frozenset(keys), identities=frozenset(_names(data.get("identities"), where)),
        max_concurrency=_number(data.get("max_concurrency", 0), f"{where}: max_concurrency", int),
        rate=_number(data.get("rate", 0), f"{where}: rate", float),
        burst=_number(data.get("burst", 0), f"{where}: burst", int),
        use=_names(data.get("use", ["*"]), f"{where}: use"), publish=_names(data.get("publish"), f"{where}: publish"),
        inline_specs=data.get("inline_specs", True), audit_content=data.get("audit_content", False),
        operator=data.get("operator", False),
        max_sessions=_number(data.get("max_sessions", 0), f"{where}: max_sessions", int),
        session_rate=_number(data.get("session_rate", 0), f"{where}: session_rate", float),
        weight=_number(data.get("weight", 1), f"{where}: weight", float))
    if not tenant.weight > 0:
        raise CatalogError(f"{where}: weight must be a number > 0 (its share relative to the other tenants')")
    if tenant.burst and not tenant.rate:
        raise CatalogError(f"{where}: burst needs a rate")
    return tenant


@dataclass
class Tenants:
    """The tenants of a tenants file, found by key hash or certificate name."""

    tenants: dict[str, Tenant]
    source: str = ""
    _by_hash: dict[str, Tenant] = field(default_factory=dict, repr=False)
    _by_identity: dict[str, Tenant] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for tenant in self.tenants.values():
            for table, names, what in ((self._by_hash, tenant.key_hashes, "key"),
                                       (self._by_identity, tenant.identities, "identity")):
                for name in names:
                    other = table.setdefault(name, tenant)
                    if other is not tenant:
                        raise CatalogError(f"{self.source}: the same {what} ({name[:19]}...) belongs to tenants "
                                           f"{other.name!r} and {tenant.name!r}")

    @classmethod
    def load(cls, path: str | Path) -> Tenants:
        import yaml

        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise CatalogError(f"cannot read tenants file {path}: {exc}") from exc
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "tenants") -> Tenants:
        if not isinstance(data, dict) or set(data) != {"tenants"} or not isinstance(data["tenants"], dict):
            raise CatalogError(f"{source}: expected a mapping 'tenants: {{NAME: {{keys: [...], ...}}}}'")
        tenants = {name: parse_tenant(name, value, source) for name, value in data["tenants"].items()}
        if not tenants:
            raise CatalogError(f"{source}: no tenants defined (remove the file to turn authentication off)")
        return cls(tenants, source)

    def for_key(self, key: str) -> Tenant | None:
        return self._by_hash.get(hash_key(key))

    def for_identity(self, names: list[str]) -> Tenant | None:
        for name in names:
            tenant = self._by_identity.get(name)
            if tenant is not None:
                return tenant
        return None


def key_from_metadata(metadata) -> tuple[str, str]:
    """(key, problem) from the call's metadata; both empty when it carries none."""
    values = {}
    for item in metadata or ():
        k, v = item if isinstance(item, tuple) else (item.key, item.value)
        values.setdefault(k.lower(), v if isinstance(v, str) else "")
    if "authorization" in values:
        scheme, _, key = values["authorization"].strip().partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            return "", "the 'authorization' metadata must be 'Bearer <key>'"
        return key.strip(), ""
    key = values.get("x-api-key", "").strip()
    return key, ""


def authenticate(tenants: Tenants, metadata, identities: list[str] | tuple[str, ...] = ()) -> tuple[Tenant | None, str]:
    """(the tenant, "") for a call's metadata (its API key) or, without a key, its verified client certificate's
    names (mutual TLS); else (None, why not). Every door asks this, and only it, who is calling."""
    key, problem = key_from_metadata(metadata)
    if problem:
        return None, problem
    if key:
        tenant = tenants.for_key(key)
        if tenant is not None:
            return tenant, ""
        return None, (f"API key not recognised (its hash starts {hash_key(key)[7:15]}); check the key, or ask the "
                      "service's operator for one")
    tenant = tenants.for_identity(list(identities))
    if tenant is not None:
        return tenant, ""
    return None, (f"client certificate {identities[0]!r} maps to no tenant, and no API key was sent; "
                  if identities else "no API key: ") + KEY_HELP
