"""The completion's module as the pytest judge sees it (``run_pytest.py``): its names asked of the candidate
process on first use.

Standard library only.
"""

import os
import sys


class SolutionModule(type(sys)):
    """The completion's module as the pytest judge sees it: each attribute a ``LazyName``.

    Nothing of the completion runs until a test first uses one of its names, so by then
    pytest has imported every test module: the completion cannot rewrite a test file
    before it is read.
    """

    def __init__(self, name, candidate, path):
        super().__init__(name)
        self.__file__ = os.path.abspath(path)
        self._rlvr = {"candidate": candidate, "path": path, "loaded": None, "names": {}}

    def __getattr__(self, name):
        if name == "__all__":  # ``from solution import *``: the public names its source defines, not run
            return _public_names(self.__dict__["_rlvr"]["path"])
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        names = self.__dict__["_rlvr"]["names"]
        if name not in names:
            names[name] = LazyName(self, name)
        return names[name]

    def _rlvr_value(self, name):
        state = self.__dict__["_rlvr"]
        candidate = state["candidate"]
        if state["loaded"] is None:
            with open(state["path"], encoding="utf-8") as fh:
                source = fh.read()
            _, error = candidate.load("", source, (), module=self.__name__, file=state["path"])
            state["loaded"] = error or ""
        if state["loaded"]:
            raise ImportError(f"the completion does not compile: {state['loaded']}")
        return candidate.call("name", name=name)


def _public_names(path):
    """What ``from solution import *`` takes, read from the completion's source without running it: its literal
    ``__all__``, else the top-level names it defines, assigns or imports that do not start with ``_``."""
    import ast

    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return []
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
                if isinstance(target, ast.Name) and target.id == "__all__":
                    try:
                        declared = ast.literal_eval(node.value)
                        if all(isinstance(n, str) for n in declared):
                            return list(declared)
                    except (ValueError, TypeError, SyntaxError):
                        pass
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
    return sorted({n for n in names if not n.startswith("_")})


class LazyName:
    """A name of the completion's module, asked of the candidate process on first use."""

    __slots__ = ("_done", "_module", "_name", "_value")

    def __init__(self, module, name):
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_done", False)

    def _rlvr_resolve(self):
        if not object.__getattribute__(self, "_done"):
            value = object.__getattribute__(self, "_module")._rlvr_value(object.__getattribute__(self, "_name"))
            object.__setattr__(self, "_value", value)
            object.__setattr__(self, "_done", True)
        return object.__getattribute__(self, "_value")

    def __getattr__(self, name):
        return getattr(self._rlvr_resolve(), name)

    def __setattr__(self, name, value):
        setattr(self._rlvr_resolve(), name, value)

    def __call__(self, *args, **kwargs):
        return self._rlvr_resolve()(*args, **kwargs)

    def __len__(self):
        return len(self._rlvr_resolve())

    def __iter__(self):
        return iter(self._rlvr_resolve())

    def __getitem__(self, key):
        return self._rlvr_resolve()[key]

    def __contains__(self, item):
        return item in self._rlvr_resolve()

    def __eq__(self, other):
        return self._rlvr_resolve() == (other._rlvr_resolve() if isinstance(other, LazyName) else other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self._rlvr_resolve())

    def __bool__(self):
        return bool(self._rlvr_resolve())

    def __repr__(self):
        return repr(self._rlvr_resolve())
