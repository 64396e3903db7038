"""examples/e2e/offline_setup.py: wheels and .debs installed without pip or network (what gpu_run.sh does)."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import zipfile

import pytest

from examples.e2e import offline_setup


def _wheel(path, files: dict[str, str]):
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def test_wheels_unpack_once_into_the_site_dir_with_data_schemes_moved(tmp_path):
    folder = tmp_path / ".whl"
    folder.mkdir()
    _wheel(folder / "alpha-1.0-py3-none-any.whl", {"alpha/__init__.py": "VALUE = 41\n",
                                                    "alpha-1.0.dist-info/METADATA": "Name: alpha\n"})
    _wheel(folder / "beta-2.0-cp312-cp312-manylinux_2_17_x86_64.whl",
           {"beta-2.0.data/platlib/beta.py": "VALUE = 1\n", "beta-2.0.dist-info/METADATA": "Name: beta\n"})
    site = tmp_path / "site"
    assert offline_setup.install_wheels([str(folder)], site) == sorted(p.name for p in folder.glob("*.whl"))
    assert (site / "beta.py").exists() and not list(site.glob("*.data"))
    assert offline_setup.install_wheels([str(folder)], site) == []  # a second call unpacks nothing
    out = subprocess.run([sys.executable, "-c", "import alpha, beta; print(alpha.VALUE + beta.VALUE)"],
                         capture_output=True, text=True, env={"PYTHONPATH": str(site)}, check=True)
    assert out.stdout.strip() == "42"


def test_a_folder_for_a_module_already_importable_is_left_alone(tmp_path):
    folder = tmp_path / ".whl-json"
    folder.mkdir()
    _wheel(folder / "json-9.9-py3-none-any.whl", {"json/__init__.py": "raise ImportError('shadowed')\n"})
    site = tmp_path / "site"
    assert offline_setup.install_wheels([f"{folder}:json", str(tmp_path / "absent")], site) == []
    assert not (site / "json").exists()


def _ar(members: dict[str, bytes]) -> bytes:
    out = bytearray(b"!<arch>\n")
    for name, data in members.items():
        header = f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode()
        assert len(header) == 60
        out += header + data + (b"\n" if len(data) % 2 else b"")
    return bytes(out)


def test_a_deb_is_unpacked_without_dpkg(tmp_path, monkeypatch):
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w:xz") as archive:
        data = b"#!/bin/sh\necho bwrap\n"
        info = tarfile.TarInfo("./usr/bin/bwrap")
        info.size, info.mode = len(data), 0o755
        archive.addfile(info, io.BytesIO(data))
    deb = tmp_path / "bubblewrap_0.8.0_amd64.deb"
    deb.write_bytes(_ar({"debian-binary": b"2.0\n", "control.tar.xz": b"", "data.tar.xz": payload.getvalue()}))
    monkeypatch.setattr(offline_setup.shutil, "which", lambda name: None)  # as on a machine without dpkg
    root = tmp_path / "root"
    offline_setup.unpack_deb(deb, root)
    assert (root / "usr" / "bin" / "bwrap").read_bytes().startswith(b"#!/bin/sh")
    with pytest.raises(ValueError, match="not an ar archive"):
        offline_setup.unpack_deb(tmp_path / "root" / "usr" / "bin" / "bwrap", root)
