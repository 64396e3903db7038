"""The work dir as it was before the completion ran, for the judge: its Python sources and data files
snapshotted, the judge's imports sealed off from every place the completion can write, and its reads of the
spec's files served from the snapshot.

Standard library only.
"""

import builtins
import os
import sys

# Where a step's processes may write (the root is read-only in every backend): the scratch tmpfs and the work dir.
WRITABLE_ROOTS = ("/tmp", "/dev/shm", "/var/tmp")


class SealedImports:
    """The judge's imports, once the completion can have written files: never from a place it can write.

    The first finder of ``sys.meta_path``: it asks the others, and refuses a module (or package) found in a
    writable place (the work dir, the scratch dirs), so a module the completion plants there (``pprint.py``,
    imported later by pytest's assertion messages, or a standard module the tests use) never runs in the
    judge. Modules of the work dir that existed before the completion ran (the spec's own helpers) are served
    from the copy ``snapshot`` took then (``{real path: source}``), never from the disk. ``sys.path`` loses
    its writable entries too (``seal_imports``)."""

    def __init__(self, roots, snapshot, dirs):
        import importlib.util  # now: an import inside find_spec would come back to find_spec

        self.spec_from_loader = importlib.util.spec_from_loader
        self.roots = tuple(roots)
        self.snapshot = snapshot or {}
        self.dirs = tuple(dirs)  # the writable sys.path entries taken out: where the snapshot's modules were

    def writable(self, path):
        real = os.path.realpath(path or ".")
        return any(real == root or real.startswith(root + os.sep) for root in self.roots)

    def find_spec(self, name, path=None, target=None):
        last = name.rpartition(".")[2]
        for folder in (path if path is not None else self.dirs):
            if not self.writable(folder):
                continue
            for file, package in ((os.path.join(folder, last + ".py"), False),
                                  (os.path.join(folder, last, "__init__.py"), True)):
                real = os.path.realpath(file)
                if real in self.snapshot:
                    spec = self.spec_from_loader(name, _SnapshotLoader(self.snapshot[real], real),
                                                           origin=real, is_package=package)
                    if package:
                        spec.submodule_search_locations = [os.path.dirname(real)]
                    spec.has_location = True
                    return spec
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is None:
                continue
            places = [spec.origin] if spec.origin and spec.has_location else []
            places += list(spec.submodule_search_locations or ())
            for place in places:
                if self.writable(place):
                    raise ImportError(f"module {name!r} is not imported from {place}: a place the completion "
                                      "can write", name=name)
            return spec
        return None


class _SnapshotLoader:
    def __init__(self, source, path):
        self.source, self.path = source, path

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__file__ = self.path
        exec(compile(self.source, self.path, "exec"), module.__dict__)


def _snapshot(take, skip_dir, skip, max_files, max_bytes):
    """``{real path: bytes}`` of the files under the work dir that ``take(name)`` keeps, in folders that
    ``skip_dir(name)`` does not leave out; at most ``max_files`` files and ``max_bytes`` bytes in all."""
    out, total = {}, 0
    skip = {os.path.realpath(p) for p in skip}
    for folder, dirs, files in os.walk(os.getcwd()):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not skip_dir(d)]
        for file in files:
            real = os.path.realpath(os.path.join(folder, file))
            if not take(file) or real in skip or len(out) >= max_files:
                continue
            try:
                with open(real, "rb") as fh:
                    data = fh.read(max_bytes - total + 1)
            except OSError:
                continue
            total += len(data)
            if total > max_bytes:
                return out
            out[real] = data
    return out


def snapshot_workdir(skip=(), max_files=2000, max_bytes=32 << 20):
    """The Python sources under the work dir now, before the completion runs: ``{real path: source}``."""
    return _snapshot(lambda name: name.endswith(".py"), lambda name: False, skip, max_files, max_bytes)


def snapshot_files(skip=(), max_files=2000, max_bytes=32 << 20):
    """The spec's files under the work dir now, before the completion runs, other than Python sources (those
    are ``snapshot_workdir``'s): ``{real path: bytes}``. Dot-files and dot-dirs (the report) are left out."""
    return _snapshot(lambda name: not name.endswith((".py", ".pyc")) and not name.startswith("."),
                     lambda name: name.startswith("."), skip, max_files, max_bytes)


def serve_files(snapshot):
    """From now on the judge reads the spec's files (``snapshot_files``) as they were before the completion ran:
    ``open`` (built-in, ``io.open``, and so ``pathlib``) for reading one of them gives its snapshot, so a
    completion that rewrote a data file the tests read (in a call, or from a thread of its process) changes
    nothing the tests see. A file the tests themselves write is theirs from then on (it leaves the snapshot)."""
    import io

    real_open = io.open
    realpath = os.path.realpath
    fspath = os.fspath

    def judged_open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True,
                    opener=None):
        if isinstance(file, int) or not snapshot:
            return real_open(file, mode, buffering, encoding, errors, newline, closefd, opener)
        try:
            path = realpath(fspath(file))
        except (TypeError, ValueError):
            return real_open(file, mode, buffering, encoding, errors, newline, closefd, opener)
        if path in snapshot:
            if any(c in mode for c in "wax+"):
                snapshot.pop(path, None)
                try:
                    os.chmod(path, 0o644)  # restore_files left it read-only
                except OSError:
                    pass
            else:
                data = io.BytesIO(snapshot[path])
                data.name = fspath(file)
                if "b" in mode:
                    return data
                text = io.TextIOWrapper(data, encoding=encoding or "utf-8", errors=errors, newline=newline)
                text.mode = mode
                return text
        return real_open(file, mode, buffering, encoding, errors, newline, closefd, opener)

    builtins.open = judged_open
    io.open = judged_open


def restore_files(snapshot):
    """Writes the snapshot's files back to disk (for readers that do not go through ``open``: C extensions);
    read-only where the file system lets it be."""
    for path, data in list(snapshot.items()):
        try:
            try:
                os.chmod(path, 0o644)
            except OSError:
                pass
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o444)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.chmod(path, 0o444)
        except OSError:
            pass


def seal_imports(snapshot=None):
    """From now on the judge imports nothing from a place the completion can write (``SealedImports``)."""
    roots = {os.path.realpath(r) for r in (*WRITABLE_ROOTS, os.getcwd())}
    roots.discard("/")
    sealed = SealedImports(sorted(roots), snapshot, ())
    taken = [p for p in sys.path if sealed.writable(p)]
    sys.path[:] = [p for p in sys.path if not sealed.writable(p)]
    sealed.dirs = tuple(taken)
    sys.path_importer_cache.clear()
    sys.meta_path.insert(0, sealed)
    return sealed
