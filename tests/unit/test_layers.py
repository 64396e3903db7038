"""The package's layers (docs/architecture.md): no module imports a layer above its own, and no import circle.

Every import counts: at module level, inside functions and under ``TYPE_CHECKING``, because each one is a
dependency a reader has to follow. The trainer may use the client, the contract and the offline tools, never
the server, engine, tenancy, kinds or sandboxes directly.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "verifier_service"

CONTRACT = {"verifier_service._generated", "verifier_service.errors", "verifier_service.wire",
            "verifier_service.verdict", "verifier_service.spec", "verifier_service.config",
            "verifier_service.credentials", "verifier_service.codegen", "verifier_service.messages",
            "verifier_service.special_tokens", "verifier_service.ray_wire"}
# layer -> the layers its modules may import (besides their own)
_BELOW_SERVICE = {"contract", "runner", "sandbox", "kinds", "engine", "tenancy"}
ALLOWED = {
    "contract": set(),
    # the runner runs inside the sandbox (another trust domain): standard library only, nothing of the package
    "runner": set(),
    "client": {"contract"},
    "sandbox": {"contract", "runner"},
    "kinds": {"contract", "runner", "sandbox"},
    "engine": {"contract", "runner", "sandbox", "kinds"},
    "tenancy": {"contract", "kinds"},
    "service": _BELOW_SERVICE,                        # the application: no transport
    "doors": _BELOW_SERVICE | {"service"},            # gRPC and HTTP, each on the service
    "serve": _BELOW_SERVICE | {"service", "doors"},   # the process: the app with its doors
    "tools": _BELOW_SERVICE | {"client", "service", "doors", "serve"},
    # the fleet on Ray: replicas and session hosts run the core (fleet_ray/core.py); its gRPC ingress forwards
    # with the client's router
    "fleet_ray": _BELOW_SERVICE | {"client", "service", "doors"},
    "testing": _BELOW_SERVICE | {"client", "service", "doors", "serve", "tools"},
    # the package itself: ``verifier_service.verify`` (the synchronous API) imports tools.sync when called
    "facade": _BELOW_SERVICE | {"client", "service", "doors", "serve", "tools"},
    "trainer": {"contract", "client", "tools"},
}
# transports: the service core and the HTTP door never touch a gRPC object
TRANSPORT = ("grpc", "grpc_health", "grpc_reflection", "verifier_service._generated.verifier_pb2_grpc")


RUNNER = PACKAGE / "runner"


def layer(module: str) -> str | None:
    """The layer of a module name, None for modules outside the two packages."""
    if module.startswith("trainer.") or module == "trainer":
        return "trainer"
    if module != "verifier_service" and not module.startswith("verifier_service."):
        return None
    parts = module.split(".")
    if module == "verifier_service":
        return "facade"
    if any(module == c or module.startswith(c + ".") for c in CONTRACT):
        return "contract"
    return parts[1]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """Every module that ``path`` imports by absolute name (names imported from a package count as modules
    when they are submodules, as ``from verifier_service.tools import cli``)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(_runner_name(path, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(_runner_name(path, node.module))
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                base = ROOT / Path(*candidate.split("."))
                if base.with_suffix(".py").exists() or (base / "__init__.py").exists():
                    out.add(candidate)
    return out


def _runner_name(path: Path, module: str) -> str:
    """The runner's modules import each other by bare name (the sandbox runs them from one directory)."""
    if path.parent == RUNNER and (RUNNER / f"{module}.py").exists():
        return f"verifier_service.runner.{module}"
    return module


def sources() -> list[Path]:
    paths = [p for p in PACKAGE.rglob("*.py") if "_generated" not in p.parts]
    return paths + sorted((ROOT / "trainer").rglob("*.py"))


def graph() -> dict[str, set[str]]:
    return {module_name(p): {m for m in imports(p) if layer(m) is not None} for p in sources()}


def test_every_module_has_a_layer():
    unknown = sorted(m for m in graph() if layer(m) not in ALLOWED)
    assert not unknown, f"modules outside the layers of docs/architecture.md: {unknown}"


def test_no_layer_imports_one_above_it():
    upward = []
    for module, deps in sorted(graph().items()):
        mine = layer(module)
        for dep in sorted(deps):
            theirs = layer(dep)
            if theirs != mine and theirs not in ALLOWED[mine]:
                upward.append(f"{module} ({mine}) imports {dep} ({theirs})")
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def test_no_import_circle_between_layers():
    edges = {(layer(m), layer(d)) for m, deps in graph().items() for d in deps if layer(m) != layer(d)}
    circles = sorted((a, b) for a, b in edges if (b, a) in edges)
    assert not circles, f"layers that import each other: {circles}"


def test_no_import_circle_between_modules():
    g = graph()
    modules = set(g)

    def resolve(dep: str) -> str | None:
        while dep and dep not in modules:
            dep = dep.rpartition(".")[0]
        return dep or None

    # (a module importing its own package, as a kind importing the registry's ``register``, is not counted:
    # the package imports its kinds by name at run time, after it is complete)
    edges = {m: {r for d in deps if (r := resolve(d)) and r != m and not m.startswith(r + ".")}
             for m, deps in g.items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_checks_see_an_upward_import(tmp_path):
    """The walker finds imports inside functions and under TYPE_CHECKING (so the tests above can fail)."""
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from verifier_service.engine.pool import PurePool\n"
                      "def f():\n    import verifier_service.doors.grpc.server\n")
    found = imports(source)
    assert {"verifier_service.engine.pool", "verifier_service.doors.grpc.server"} <= found
    assert layer("verifier_service.engine.pool") not in ALLOWED["kinds"]


def test_the_runner_imports_only_the_standard_library():
    """The runner runs on whatever Python the sandbox has: its own modules, the standard library (and pytest, which
    the images have, for the pytest kind's judge); and the host side imports only its vocabulary, ``wire``."""
    import sys

    outside = []
    for path in sorted(RUNNER.glob("*.py")):
        for dep in sorted(imports(path)):
            top = dep.split(".")[0]
            allowed = sys.stdlib_module_names | {"pytest", "_pytest"}
            if not dep.startswith("verifier_service.runner.") and top not in allowed:
                outside.append(f"{module_name(path)} imports {dep}")
    assert not outside, "the runner imports beyond the standard library:\n" + "\n".join(outside)
    host = sorted(f"{m} imports {d}" for m, deps in graph().items() if layer(m) != "runner"
                  for d in deps if layer(d) == "runner" and d != "verifier_service.runner.wire"
                  and d != "verifier_service.runner")
    assert not host, "the host side imports the runner beyond runner/wire.py:\n" + "\n".join(host)


def test_the_core_and_the_http_door_import_no_grpc():
    """The service core (and so the in-process ``verifier_service.verify``), everything below it and the HTTP
    door know no gRPC: authentication, the call log and the refusal -> status table are the gRPC door's."""
    no_grpc = ("verifier_service.service", "verifier_service.doors.http", "verifier_service.doors.logs",
               "verifier_service.tenancy", "verifier_service.engine", "verifier_service.kinds",
               "verifier_service.sandbox", "verifier_service.runner", "verifier_service.tools.sync")
    found = sorted(f"{module_name(p)} imports {dep}" for p in sources()
                   if module_name(p).startswith(no_grpc)
                   for dep in imports(p) if dep == "grpc" or dep.startswith(tuple(t + "." for t in TRANSPORT))
                   or dep in TRANSPORT)
    assert not found, "gRPC below the gRPC door:\n" + "\n".join(found)


def test_no_grpc_object_is_reached_from_the_core_or_the_http_door():
    """Followed through every import, not only the direct ones: the core (what the in-process API runs) and the
    HTTP door reach no module that imports gRPC (a refusal's status is a name in ``errors.STATUS``, mapped to a
    gRPC code only by the gRPC door)."""
    raw = {module_name(p): imports(p) for p in sources()}

    def resolve(name: str) -> str | None:  # the module a name is in (the generated modules are not followed)
        module = name
        while module and module not in raw:
            module = module.rpartition(".")[0]
        return module if module and (module != "verifier_service" or name == module) else None

    roots = [m for m in raw if m.startswith(("verifier_service.service", "verifier_service.doors.http",
                                              "verifier_service.doors.logs"))]
    reached_from: dict[str, str] = {m: "" for m in roots}
    todo = list(roots)
    while todo:
        module = todo.pop()
        for dep in raw[module]:
            target = resolve(dep)
            if target and target not in reached_from:
                reached_from[target] = module
                todo.append(target)

    def chain(module: str) -> str:
        links = [module]
        while reached_from[links[-1]]:
            links.append(reached_from[links[-1]])
        return " <- ".join(links)

    found = sorted(chain(m) for m in reached_from
                   if any(d.split(".")[0] in TRANSPORT or d in TRANSPORT for d in raw[m]))
    assert not found, "gRPC reached from the core or the HTTP door:\n" + "\n".join(found)


def test_the_trainer_imports_no_generated_module_and_not_the_service_cli():
    """The trainer names the service's messages through ``verifier_service.messages``, never ``_generated``, and
    runs the service's commands as programs, never by importing its command line (``tools/cli.py``)."""
    found = sorted(f"{m} imports {d}" for m, deps in graph().items() if layer(m) == "trainer"
                   for d in deps if d.startswith("verifier_service._generated") or d == "verifier_service.tools.cli")
    assert not found, "\n".join(found)
