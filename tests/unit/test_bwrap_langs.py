"""The bubblewrap backend's builds for the host's Go and Rust (verifier_service/sandbox/bwrap_langs.py), with a
script of the test's own in place of prepare-go.sh: one directory per toolchain identity, made before the build
(sandboxes bind it from their start), filled once with what a compile reads first moved in last, and a failed
build or a missing toolchain answered as a reason (the probe's INFRA_ERROR), never as files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from verifier_service.sandbox import bwrap_langs


def _helpers(tmp_path: Path, body: str) -> Path:
    helpers = tmp_path / "langs"
    helpers.mkdir()
    for name in ("prepare-go.sh", "rust-crates.sh"):
        (helpers / name).write_text(body)
    return helpers


def _fake_toolchain(tmp_path: Path, monkeypatch, tools=("go", "rustc", "cargo")) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        path = bin_dir / tool
        path.write_text("#!/bin/sh\necho fake 1.0\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    for tool in ("sh", "mkdir"):  # (only these: the host's own go, rustc or cargo must not count here)
        (bin_dir / tool).symlink_to(f"/bin/{tool}")
    monkeypatch.setattr(bwrap_langs, "HOST_PATH", str(bin_dir))


def test_a_build_fills_the_bound_directory_once(tmp_path, monkeypatch):
    _fake_toolchain(tmp_path, monkeypatch)
    log = tmp_path / "runs"
    body = (f'set -eu\necho run >> {log}\nmkdir -p "$1/deps"\necho "$2" > "$1/importcfg"\necho a > "$1/deps/x.a"\n'
            'echo built\n')
    builds = bwrap_langs.plan(_helpers(tmp_path, body), tmp_path / "cache")
    go = builds["go"]
    assert go.directory is not None and go.directory.is_dir() and not any(go.directory.iterdir())
    inode = go.directory.stat().st_ino
    assert go.ensure() is None and go.ensure() is None
    assert (go.directory / "importcfg").read_text() == "/opt/rlvr-langs/go\n"
    assert (go.directory / "deps" / "x.a").is_file() and (go.directory / bwrap_langs.READY).is_file()
    assert go.directory.stat().st_ino == inode  # the directory the sandboxes bound, not a new one
    again = bwrap_langs.plan(go.script.parent, tmp_path / "cache")
    assert again["go"].directory == go.directory and again["go"].ensure() is None
    assert log.read_text() == "run\n"  # once per host: a second service finds it built
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(".build-")]


def test_a_failed_build_or_a_missing_toolchain_is_a_reason(tmp_path, monkeypatch):
    _fake_toolchain(tmp_path, monkeypatch, tools=("rustc",))
    builds = bwrap_langs.plan(_helpers(tmp_path, "echo broken >&2\nexit 3\n"), tmp_path / "cache")
    assert builds["go"].directory is None and "the host has no go" in builds["go"].ensure()
    assert "cargo" in builds["rust-crates"].missing
    (tmp_path / "more").mkdir()
    _fake_toolchain(tmp_path / "more", monkeypatch)
    builds = bwrap_langs.plan(tmp_path / "langs", tmp_path / "cache")
    reason = builds["go"].ensure()
    assert reason is not None and "exit 3" in reason and "broken" in reason
    assert not (builds["go"].directory / bwrap_langs.READY).exists()
    assert not any(builds["go"].directory.iterdir())
    assert "not here" in bwrap_langs.plan(None, tmp_path / "cache")["go"].ensure()


def test_the_cache_is_reachable_by_other_uids(tmp_path, monkeypatch):
    _fake_toolchain(tmp_path, monkeypatch)
    old = os.umask(0o077)
    try:
        builds = bwrap_langs.plan(_helpers(tmp_path, 'mkdir -p "$1"; echo x > "$1/importcfg"\n'), tmp_path / "c")
        assert builds["go"].ensure() is None
    finally:
        os.umask(old)
    for path in (tmp_path / "c", builds["go"].directory, builds["go"].directory / "importcfg"):
        assert path.stat().st_mode & 0o005 == (0o005 if path.is_dir() else 0o004), path
