"""The verifier catalog: named, versioned, immutable verifiers that teams share.

One team writes and reads a verifier; others train against exactly that
version. An entry is one YAML or JSON file in the catalog directory:

    name: math/gsm8k-answer        # team/name: the team is the namespace tenants are granted
    version: "1"                   # a human version
    description: GSM8K final answers, compared by math-verify
    spec: {kind: math, extract: raw}      # the fixed part: the JSON form of a spec, less what requests send
    per_request: [gold]            # fields every request sends (or {gold: required, timeout_s: optional})

Its published id is ``team/name@version+<hash12>``: the first 12 hex digits of
the sha256 over the entry's canonical JSON (name, version, normalised spec and
per-request fields; the description is not hashed). ``catalog.lock`` in the
directory records the sha256 of every version ever published
(``verifier-service catalog publish DIR`` writes it); the service serves only
published entries whose content still has the published hash, and refuses to
start, or to reload, when a file changed under a published version. A request
names ``team/name@version`` (whatever content that version was published with)
or ``team/name@version+hash`` (refused when the content differs).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.errors import CatalogError, InvalidSpec, PermissionDenied, UnknownVerifier, VersionMismatch
from verifier_service.kinds import COMMON_PARAMS, get_kind
from verifier_service.spec import Spec, canonical_json, spec_from_json, spec_from_proto, spec_to_json, spec_to_proto

LOCK_FILE = "catalog.lock"
LOCK_FORMAT = 1
ENTRY_SUFFIXES = (".yaml", ".yml", ".json")
HASH_CHARS = 12
ENTRY_KEYS = {"name", "version", "description", "spec", "per_request"}
_NAME = r"[a-z0-9][a-z0-9_.-]*"
_VERSION = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
NAME_RE = re.compile(rf"^{_NAME}/{_NAME}$")
VERSION_RE = re.compile(rf"^{_VERSION}$")
REF_RE = re.compile(rf"^(?P<name>{_NAME}/{_NAME})@(?P<version>{_VERSION})(?:\+(?P<hash>[0-9a-f]{{{HASH_CHARS},64}}))?$")
SPEC_FIELDS = tuple(f.name for f in fields(Spec) if f.name != "kind")
_COMMON = {p.name for p in COMMON_PARAMS}


@dataclass(frozen=True)
class Entry:
    name: str
    version: str
    description: str
    template: Spec
    required: tuple[str, ...]
    optional: tuple[str, ...]
    sha256: str
    path: Path | None = None

    @property
    def namespace(self) -> str:
        return self.name.split("/", 1)[0]

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def id(self) -> str:
        return f"{self.ref}+{self.sha256[:HASH_CHARS]}"

    @property
    def per_request(self) -> tuple[str, ...]:
        return self.required + self.optional

    def to_proto(self) -> pb.CatalogEntry:
        return pb.CatalogEntry(id=self.id, name=self.name, version=self.version, sha256=self.sha256,
                               description=self.description, kind=self.template.kind,
                               template_json=canonical_json(spec_to_json(self.template)),
                               required_fields=self.required, optional_fields=self.optional)


def entry_sha256(name: str, version: str, template: Spec, required, optional) -> str:
    """sha256 over what decides a reward: name, version, the normalised template, the per-request fields."""
    payload = {"name": name, "version": version, "spec": spec_to_json(template),
               "per_request": {"required": sorted(required), "optional": sorted(optional)}}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def _per_request(raw: Any, where: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if raw is None:
        return (), ()
    if isinstance(raw, list):
        items = {name: "required" for name in raw}
        if len(items) != len(raw):
            raise CatalogError(f"{where}: per_request names a field twice")
    elif isinstance(raw, dict):
        items = raw
    else:
        raise CatalogError(f"{where}: per_request must be a list of field names or a mapping "
                           "{field: required | optional}")
    required, optional = [], []
    for name, how in items.items():
        if not isinstance(name, str):
            raise CatalogError(f"{where}: per_request field names must be strings")
        if name == "completion":  # always per request
            continue
        if name not in SPEC_FIELDS:
            raise CatalogError(f"{where}: per_request field {name!r} is not a spec field; valid: "
                               f"{', '.join(SPEC_FIELDS)}")
        if how not in ("required", "optional"):
            raise CatalogError(f"{where}: per_request.{name} must be 'required' or 'optional', not {how!r}")
        (required if how == "required" else optional).append(name)
    return tuple(sorted(required)), tuple(sorted(optional))


def parse_entry(data: Any, path: Path | None = None,
                check: Callable[[pb.VerifyRequest], object] | None = None) -> Entry:
    """An entry from its file's content; CatalogError names the file and the problem.

    ``check`` (the engine's ``prepare``) fully validates a template that needs no
    per-request field; other templates get the checks that hold without the sample."""
    where = str(path) if path is not None else "catalog entry"
    if not isinstance(data, dict):
        raise CatalogError(f"{where}: an entry is a mapping with name, version, spec and per_request")
    unknown = sorted(set(data) - ENTRY_KEYS)
    if unknown:
        raise CatalogError(f"{where}: unknown key(s) {unknown}; valid: {', '.join(sorted(ENTRY_KEYS))}")
    name, version, description = data.get("name"), data.get("version"), data.get("description", "")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise CatalogError(f"{where}: name must be team/name (lower case letters, digits, '_', '.', '-'), "
                           f"not {name!r}")
    if isinstance(version, int) and not isinstance(version, bool):
        version = str(version)
    if not isinstance(version, str) or not VERSION_RE.match(version):
        raise CatalogError(f"{where}: version must be a string of letters, digits, '_', '.', '-' (quote it in "
                           f"YAML: version: \"1\"), not {version!r}")
    if not isinstance(description, str):
        raise CatalogError(f"{where}: description must be a string")
    try:
        template = spec_from_json(data.get("spec"))
        kind = get_kind(template.kind)
    except InvalidSpec as exc:
        raise CatalogError(f"{where}: spec: {exc}") from exc
    required, optional = _per_request(data.get("per_request"), where)
    allowed = _COMMON | {p.name for p in kind.params}
    for name_ in (*template.set_fields(), *required, *optional):
        if name_ not in allowed:
            raise CatalogError(f"{where}: field {name_!r} does not apply to kind {kind.name!r}; its parameters: "
                               f"{', '.join(sorted(allowed))}")
    fixed_and_sent = sorted(set(template.set_fields()) & set(required + optional))
    if fixed_and_sent:
        raise CatalogError(f"{where}: field(s) {fixed_and_sent} are both fixed by the spec and per_request: "
                           "choose one")
    missing = [p.name for p in kind.params if p.required and not template.is_set(p.name) and p.name not in required]
    if missing:
        raise CatalogError(f"{where}: kind {kind.name!r} needs {missing}: fix them in the spec or list them as "
                           "required per_request fields")
    if check is not None and not required:
        try:
            check(pb.VerifyRequest(completion="", spec=spec_to_proto(template)))
        except InvalidSpec as exc:
            raise CatalogError(f"{where}: spec: {exc}") from exc
    return Entry(name=name, version=version, description=description.strip(), template=template,
                 required=required, optional=optional,
                 sha256=entry_sha256(name, version, template, required, optional), path=path)


def _read_file(path: Path) -> Any:
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from exc


def _hidden(relative: Path) -> bool:
    """Under a dot directory, or a dot file: a Kubernetes ConfigMap mount keeps the real files in
    ``..data/`` (the visible names are links to them), and .git holds old copies."""
    return any(part.startswith(".") for part in relative.parts)


def read_entries(directory: Path, check=None) -> list[Entry]:
    """Every entry file under ``directory`` (recursively), parsed; all problems in one CatalogError."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CatalogError(f"catalog directory {directory} does not exist")
    entries, problems = [], []
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and p.suffix in ENTRY_SUFFIXES
                       and not _hidden(p.relative_to(directory))):
        try:
            entries.append(parse_entry(_read_file(path), path, check))
        except CatalogError as exc:
            problems.append(str(exc))
    by_ref: dict[str, Entry] = {}
    for entry in entries:
        other = by_ref.setdefault(entry.ref, entry)
        if other is not entry:
            problems.append(f"{entry.path}: {entry.ref} is also defined in {other.path}")
    if problems:
        raise CatalogError(f"catalog {directory}: " + "; ".join(problems))
    return entries


def read_lock(directory: Path) -> dict[str, dict[str, str]]:
    """``{team/name@version: {sha256, published_at, published_by}}`` of ``catalog.lock`` ({} when absent)."""
    path = Path(directory) / LOCK_FILE
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CatalogError(f"cannot read {path}: {exc}") from exc
    verifiers = data.get("verifiers") if isinstance(data, dict) else None
    if not isinstance(verifiers, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("sha256"), str) for v in verifiers.values()):
        raise CatalogError(f"{path}: expected {{\"verifiers\": {{\"team/name@version\": {{\"sha256\": ...}}}}}}")
    return verifiers


def _write_lock(directory: Path, verifiers: dict[str, dict[str, str]]) -> None:
    path = Path(directory) / LOCK_FILE
    tmp = path.with_suffix(".lock.tmp")
    tmp.write_text(json.dumps({"format": LOCK_FORMAT, "verifiers": dict(sorted(verifiers.items()))}, indent=2)
                   + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _changed(entry: Entry, published: str, when: str) -> str:
    return (f"{entry.path}: {entry.ref} changed after {when} (published sha256 {published[:HASH_CHARS]}, the file "
            f"now {entry.sha256[:HASH_CHARS]}): a published version is immutable; publish the change as a new "
            "version")


@dataclass(frozen=True)
class Reference:
    name: str
    version: str
    hash: str = ""

    @property
    def namespace(self) -> str:
        return self.name.split("/", 1)[0]

    @classmethod
    def parse(cls, text: str) -> Reference:
        match = REF_RE.match(text)
        if match is None:
            raise InvalidSpec(f"verifier {text!r} is not a catalog reference: use team/name@version or "
                              f"team/name@version+hash (ListVerifiers lists the catalog)")
        return cls(match["name"], match["version"], match["hash"] or "")


class Catalog:
    """The loaded, published entries, by ``team/name@version``."""

    def __init__(self, entries: list[Entry] | None = None, directory: Path | None = None):
        self.directory = directory
        self.entries = {e.ref: e for e in entries or ()}

    @classmethod
    def load(cls, directory: str | Path, check=None, previous: Catalog | None = None) -> Catalog:
        """Loads ``directory``, refusing unpublished entries and content changed under a published version
        (in the lock, or since ``previous`` was loaded)."""
        directory = Path(directory)
        entries = read_entries(directory, check)
        lock = read_lock(directory)
        problems = []
        for entry in entries:
            published = lock.get(entry.ref)
            if published is None:
                problems.append(f"{entry.path}: {entry.ref} is not published; publish it with "
                                f"`verifier-service catalog publish {directory}`")
            elif published["sha256"] != entry.sha256:
                problems.append(_changed(entry, published["sha256"], "it was published"))
            before = previous.entries.get(entry.ref) if previous is not None else None
            if before is not None and before.sha256 != entry.sha256:
                problems.append(_changed(entry, before.sha256, "this service loaded it"))
        if problems:
            raise CatalogError(f"catalog {directory}: " + "; ".join(problems))
        return cls(entries, directory)

    def __len__(self) -> int:
        return len(self.entries)

    def visible_to(self, tenant) -> list[Entry]:
        return sorted((e for e in self.entries.values() if tenant.may_use(e.namespace)),
                      key=lambda e: (e.name, e.version))

    def resolve(self, text: str, tenant) -> Entry:
        ref = Reference.parse(text)
        if not tenant.may_use(ref.namespace):
            raise PermissionDenied(f"tenant {tenant.name!r} may not use verifiers of namespace {ref.namespace!r} "
                                   f"(asked for {text!r}); its namespaces: {', '.join(tenant.namespaces) or 'none'}")
        entry = self.entries.get(f"{ref.name}@{ref.version}")
        if entry is None:
            versions = sorted(e.version for e in self.entries.values() if e.name == ref.name)
            known = f"versions of {ref.name}: {', '.join(versions)}" if versions else f"no entry named {ref.name}"
            raise UnknownVerifier(f"catalog verifier {text!r} not found ({known}; ListVerifiers lists the catalog)")
        if ref.hash and not entry.sha256.startswith(ref.hash):
            raise VersionMismatch(f"catalog verifier {text!r}: this service has {entry.id}, whose content hash "
                                  f"differs; a reward under another hash is not reproducible here")
        return entry

    def expand(self, request: pb.VerifyRequest, tenant) -> tuple[pb.VerifyRequest, Entry]:
        """The request with its catalog entry's template and its per-sample fields merged into one spec."""
        if request.HasField("spec"):
            raise InvalidSpec("send either spec or verifier, not both")
        entry = self.resolve(request.verifier, tenant)
        if request.fields.kind:
            raise InvalidSpec(f"fields.kind: catalog verifier {entry.id} fixes the kind ({entry.template.kind})")
        sample = spec_from_proto(request.fields)
        given = sample.set_fields()
        allowed = ", ".join(entry.per_request) or "none"
        for name in given:
            if entry.template.is_set(name):
                raise InvalidSpec(f"field {name!r} is fixed by catalog verifier {entry.id}; its per-request "
                                  f"fields: {allowed}")
            if name not in entry.per_request:
                raise InvalidSpec(f"field {name!r} is not a per-request field of catalog verifier {entry.id}; its "
                                  f"per-request fields: {allowed}")
        missing = [name for name in entry.required if name not in given]
        if missing:
            raise InvalidSpec(f"catalog verifier {entry.id} needs the per-request field(s) {', '.join(missing)}")
        merged = replace(entry.template, **{name: getattr(sample, name) for name in given})
        return pb.VerifyRequest(id=request.id, completion=request.completion, spec=spec_to_proto(merged)), entry


def publish(directory: str | Path, check=None, publisher=None) -> list[tuple[Entry, str]]:
    """Records every new entry of ``directory`` in its lock; returns (entry, "published" | "unchanged" |
    "skipped") per entry. ``publisher`` (a tenant, when a tenants file is in use) publishes only into its
    namespaces; others' new entries are skipped. Refuses (nothing written) when a published version's
    content changed."""
    directory = Path(directory)
    entries = read_entries(directory, check)
    lock = read_lock(directory)
    problems = [_changed(e, lock[e.ref]["sha256"], "it was published") for e in entries
                if e.ref in lock and lock[e.ref]["sha256"] != e.sha256]
    if problems:
        raise CatalogError(f"catalog {directory}: nothing published: " + "; ".join(problems))
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    states = []
    for entry in entries:
        if entry.ref in lock:
            states.append((entry, "unchanged"))
        elif publisher is not None and not publisher.may_publish(entry.namespace):
            states.append((entry, "skipped"))
        else:
            lock[entry.ref] = {"sha256": entry.sha256, "published_at": now,
                               "published_by": publisher.name if publisher is not None else ""}
            states.append((entry, "published"))
    if any(state == "published" for _, state in states):
        _write_lock(directory, lock)
    return states
