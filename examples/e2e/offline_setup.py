"""Installs carried wheels and Debian packages on a machine without network and without pip (stdlib only).

    python examples/e2e/offline_setup.py wheels --site /tmp/e2e-env/site .whl [.whl-pandas:pandas ...]
    python examples/e2e/offline_setup.py debs --into /tmp/e2e-env/root .deb

A wheel is a zip archive: installing one without its scripts is unpacking it into a directory on ``PYTHONPATH``
(``*.data/purelib`` and ``*.data/platlib`` moved to the top). ``FOLDER:MODULE`` installs the folder's wheels only
when ``MODULE`` cannot be imported here already. Each wheel is unpacked once (a marker per wheel), so a second
call costs nothing. A ``.deb`` is an ``ar`` archive whose ``data.tar.*`` is unpacked with ``dpkg -x`` when there is
one, else here (xz, gz, bz2 or uncompressed).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path


def install_wheel(wheel: Path, site: Path) -> bool:
    """Unpacks one wheel into ``site``; False when it was unpacked before."""
    marker = site / ".installed" / wheel.name
    if marker.exists():
        return False
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    for data in site.glob("*.data"):
        for scheme in ("purelib", "platlib"):
            part = data / scheme
            if part.is_dir():
                for item in part.iterdir():
                    target = site / item.name
                    if target.exists():
                        shutil.rmtree(target) if target.is_dir() else target.unlink()
                    shutil.move(str(item), target)
        shutil.rmtree(data)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("")
    return True


def install_wheels(folders: list[str], site: Path) -> list[str]:
    site.mkdir(parents=True, exist_ok=True)
    done = []
    for entry in folders:
        folder, _, module = entry.partition(":")
        path = Path(folder)
        if not path.is_dir():
            continue
        if module and importlib.util.find_spec(module) is not None:
            print(f"{folder}: {module} is importable already, not installed")
            continue
        for wheel in sorted(path.glob("*.whl")):
            if install_wheel(wheel, site):
                done.append(wheel.name)
    return done


def _read_ar(path: Path) -> dict[str, bytes]:
    data = path.read_bytes()
    if not data.startswith(b"!<arch>\n"):
        raise ValueError(f"{path} is not an ar archive")
    members, pos = {}, 8
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        members[name] = data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size % 2)
    return members


def unpack_deb(deb: Path, root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    if shutil.which("dpkg"):
        subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
        return
    members = _read_ar(deb)
    name = next((n for n in members if n.startswith("data.tar")), None)
    if name is None:
        raise ValueError(f"{deb} has no data.tar member")
    if name.endswith(".zst"):
        raise ValueError(f"{deb}: a zstd data.tar needs dpkg (or the zstandard module)")
    with tarfile.open(fileobj=io.BytesIO(members[name])) as archive:
        archive.extractall(root, filter="tar") if hasattr(tarfile, "data_filter") else archive.extractall(root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    wheels = sub.add_parser("wheels")
    wheels.add_argument("--site", type=Path, required=True)
    wheels.add_argument("folders", nargs="+", help="FOLDER or FOLDER:MODULE (only when MODULE is missing)")
    debs = sub.add_parser("debs")
    debs.add_argument("--into", type=Path, required=True)
    debs.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    if args.command == "wheels":
        done = install_wheels(args.folders, args.site)
        print(f"unpacked {len(done)} wheel(s) into {args.site}" + (f": {', '.join(done)}" if done else ""))
    else:
        for deb in sorted(args.folder.glob("*.deb")):
            unpack_deb(deb, args.into)
            print(f"unpacked {deb.name} into {args.into}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
