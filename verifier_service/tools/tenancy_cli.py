"""``verifier-service tenants ...`` and ``verifier-service catalog ...``: keys and published verifiers.

    tenants hash-key [--stdin]               a new random key and its hash line (or the hash of a key on stdin)
    tenants add-key TENANT --tenants FILE    a new key for TENANT, its hash written into FILE; the key shown once
    tenants list --tenants FILE              the tenants, their quotas and namespaces (never keys)
    catalog publish DIR [--tenants FILE]     records new entries' hashes in DIR/catalog.lock
    catalog list DIR                         the entries, their ids and whether they are published
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from verifier_service.errors import CatalogError, VerifierError


def table_console():
    """stdout for tables: the terminal's width, or (piped, redirected) wide enough that no column is cut."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=400)


def add_parsers(sub) -> None:
    from verifier_service.credentials import add_client_flags

    tenants = sub.add_parser("tenants", help="API keys and tenants (the tenants file)")
    tsub = tenants.add_subparsers(dest="action", required=True)
    hash_key = tsub.add_parser("hash-key", help="print a new random API key and the hash line the tenants file holds")
    hash_key.add_argument("--stdin", action="store_true", help="hash the key read from stdin instead")
    add_key = tsub.add_parser("add-key", help="create a key for TENANT and add its hash to the tenants file")
    add_key.add_argument("tenant", help="tenant name (created with default settings when new)")
    add_key.add_argument("--tenants", type=Path, required=True, help="the tenants YAML file (created when absent)")
    listing = tsub.add_parser("list", help="the tenants of a tenants file")
    listing.add_argument("--tenants", type=Path, required=True, help="the tenants YAML file")

    catalog = sub.add_parser("catalog", help="the verifier catalog: publish and list entries")
    csub = catalog.add_subparsers(dest="action", required=True)
    publish = csub.add_parser("publish", help="record new entries' content hashes in DIR/catalog.lock (immutable)")
    publish.add_argument("directory", type=Path, help="the catalog directory")
    publish.add_argument("--tenants", type=Path,
                         help="tenants file: the API key (RLVR_VERIFIER_API_KEY or --api-key-file) must belong to a "
                              "tenant that may publish into each new entry's namespace")
    add_client_flags(publish)
    clist = csub.add_parser("list", help="the entries of a catalog directory and their published ids")
    clist.add_argument("directory", type=Path, help="the catalog directory")


def run(args: argparse.Namespace) -> int:
    handler = {("tenants", "hash-key"): _hash_key, ("tenants", "add-key"): _add_key,
               ("tenants", "list"): _list_tenants, ("catalog", "publish"): _publish,
               ("catalog", "list"): _list_catalog}[(args.command, args.action)]
    return handler(args)


# ---- tenants ----------------------------------------------------------------------

def _hash_key(args) -> int:
    from verifier_service.tenancy.auth import hash_key, new_key

    if args.stdin:
        key = sys.stdin.readline().strip()
        if not key:
            raise VerifierError("no key on stdin")
        print(hash_key(key))
        return 0
    key = new_key()
    print(key)
    print(hash_key(key))
    print("line 1: the key, shown once (give it to the team; clients read RLVR_VERIFIER_API_KEY); line 2: what "
          "goes into the tenant's `keys` list in the tenants file", file=sys.stderr)
    return 0


def _add_key(args) -> int:
    import yaml

    from verifier_service.tenancy.auth import Tenants, hash_key, new_key

    path: Path = args.tenants
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"cannot read tenants file {path}: {exc}") from exc
    data = data or {"tenants": {}}
    if not isinstance(data, dict) or not isinstance(data.get("tenants"), dict):
        raise CatalogError(f"{path}: expected a mapping 'tenants: {{NAME: {{keys: [...], ...}}}}'")
    key = new_key()
    entry = data["tenants"].setdefault(args.tenant, {}) or {}
    data["tenants"][args.tenant] = entry
    entry["keys"] = [*(entry.get("keys") or []), hash_key(key)]
    Tenants.from_dict(data, str(path))  # the file stays valid, or nothing is written
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    tmp.replace(path)
    print(key)
    print(f"added a key for tenant {args.tenant!r} to {path} ({hash_key(key)[:19]}...). The key above is shown "
          "once: hand it to the team (clients read RLVR_VERIFIER_API_KEY). A running service loads it on SIGHUP "
          "or restart.", file=sys.stderr)
    return 0


def _list_tenants(args) -> int:
    from rich.table import Table

    from verifier_service.tenancy.auth import Tenants

    tenants = Tenants.load(args.tenants)
    table = Table(title=f"tenants of {args.tenants}", title_justify="left")
    table.add_column("tenant", no_wrap=True)
    for column in ("keys", "identities", "max_concurrency", "rate/s", "burst", "use", "publish",
                   "inline specs", "audit content"):
        table.add_column(column)
    for t in tenants.tenants.values():
        table.add_row(t.name, str(len(t.key_hashes)), ", ".join(sorted(t.identities)),
                      str(t.max_concurrency or "-"), f"{t.rate:g}" if t.rate else "-",
                      str(t.bucket_size or "-"), ", ".join(t.use), ", ".join(t.publish),
                      "yes" if t.inline_specs else "no", "yes" if t.audit_content else "no")
    table_console().print(table)
    return 0


# ---- catalog ----------------------------------------------------------------------

def _check():
    """Full validation of templates that need no per-request field (the engine's own checks)."""
    from verifier_service.config import ServiceConfig
    from verifier_service.engine.engine import Engine

    return Engine(ServiceConfig(), None, None).prepare


def _publish(args) -> int:
    from verifier_service.credentials import credentials_from_args
    from verifier_service.tenancy.catalog import publish

    publisher = None
    if args.tenants:
        from verifier_service.tenancy.auth import Tenants

        key = credentials_from_args(args).api_key
        if not key:
            raise VerifierError("publishing with --tenants needs your API key (RLVR_VERIFIER_API_KEY or "
                                "--api-key-file): it names the tenant that publishes")
        publisher = Tenants.load(args.tenants).for_key(key)
        if publisher is None:
            raise VerifierError(f"the API key belongs to no tenant of {args.tenants}")
    for entry, state in publish(args.directory, check=_check(), publisher=publisher):
        why = f" (tenant {publisher.name!r} may not publish into {entry.namespace!r})" if state == "skipped" else ""
        print(f"{state} {entry.id}{why}")
    return 0


def _list_catalog(args) -> int:

    from verifier_service.tenancy.catalog import read_entries, read_lock

    entries = read_entries(args.directory, check=_check())
    lock = read_lock(args.directory)
    state = {}
    for e in entries:
        published = lock.get(e.ref)
        state[e.id] = ("published" if published and published["sha256"] == e.sha256
                       else "CHANGED after publishing" if published else "not published")
    table_console().print(catalog_table([e.to_proto() for e in entries], state))
    return 0


def catalog_table(entries, state: dict[str, str] | None = None):
    from rich.table import Table

    table = Table(title="catalog verifiers", title_justify="left")
    table.add_column("id", no_wrap=True)
    for column in ("kind", "per-request fields", *(("state",) if state is not None else ()), "description"):
        table.add_column(column)
    for e in entries:
        fields = ", ".join([*e.required_fields, *(f"{f} (optional)" for f in e.optional_fields)])
        table.add_row(e.id, e.kind, fields or "-", *((state[e.id],) if state is not None else ()), e.description)
    return table
