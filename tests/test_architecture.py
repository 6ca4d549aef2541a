"""The package's layering: rooms in one order, data flowing one way, no import circles.

Every import in ``simulator/`` is read from the source (at module level and inside functions
alike, since a deferred import is still a dependency). A module may import its own room or a
room in a lower tier; two rooms of the same tier stay independent. The order is written down
once, here, and docs/concepts/architecture.md describes the same rooms.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "simulator"

#: Lowest first. "shared" is the package's few top-level leaf modules; "face" the package
#: itself (its lazy public names) and ``python -m simulator``.
TIERS: tuple[tuple[str, ...], ...] = (
    ("shared",),
    ("scenario",),
    ("demand", "economics", "serving"),
    ("path",),
    ("report",),
    ("runs",),
    ("decisions",),
    ("cli",),
    ("face",),
)
SHARED_MODULES = {"units", "errors", "output", "group_sums", "compiled_cache", "cache_dirs"}
FACE_MODULES = {"simulator", "simulator.__main__"}


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: Iterable[str]) -> set[str]:
    """The package's modules that module ``name`` imports (a name imported from a package
    counts as its submodule when there is one)."""
    known = set(known)
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                candidate = f"{module}.{alias.name}"
                found.add(candidate if candidate in known else module)
    return {m for m in found if m in known and m != name}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    files = module_files(package)
    return {name: imports_of(name, path, files) for name, path in files.items()}


def room_of(module: str) -> str:
    if module in FACE_MODULES:
        return "face"
    room = module.split(".")[1]
    return "shared" if room in SHARED_MODULES else room


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def layering_violations(graph: dict[str, set[str]], tiers=TIERS) -> list[str]:
    """Imports of a room in a higher tier, or of another room of the same tier."""
    tier = {room: level for level, rooms in enumerate(tiers) for room in rooms}
    out = []
    for module, targets in sorted(graph.items()):
        source = room_of(module)
        for target in sorted(targets):
            room = room_of(target)
            if room == source:
                continue
            if source not in tier or room not in tier or tier[room] >= tier[source]:
                out.append(f"{module} ({source}) imports {target} ({room})")
    return out


def test_the_package_has_no_import_circles():
    assert circles(import_graph()) == []


def test_no_room_imports_a_room_above_it_or_beside_it():
    assert layering_violations(import_graph()) == []


def test_every_module_sits_in_a_named_room():
    rooms = {room for rooms in TIERS for room in rooms}
    unplaced = sorted(m for m in module_files() if room_of(m) not in rooms)
    assert unplaced == [], "place new rooms in TIERS (tests/test_architecture.py) and docs/concepts/architecture.md"


def test_the_top_level_holds_only_the_face_and_the_shared_leaves():
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top == {"__init__", "__main__"} | SHARED_MODULES
    graph = import_graph()
    for leaf in SHARED_MODULES:
        assert all(room_of(m) == "shared" for m in graph[f"simulator.{leaf}"]), leaf


def test_the_path_engine_knows_nothing_of_runs_decisions_report_or_cli():
    # The rule the layering exists for, spelled out: one path is a function of its inputs.
    graph = import_graph()
    above = {"runs", "decisions", "report", "cli", "face"}
    offenders = [(m, t) for m, targets in graph.items() if room_of(m) == "path"
                 for t in targets if room_of(t) in above]
    assert offenders == []


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "simulator" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "simulator"


def test_the_checks_find_a_circle_and_an_upward_import(tmp_path):
    # Negative control on a made-up package: the walker sees deferred and relative imports.
    package = _write(tmp_path, {
        "__init__.py": "",
        "units.py": "",
        "path/__init__.py": "",
        "path/engine.py": "def f():\n    from simulator.runs.results import Results\n",
        "runs/__init__.py": "",
        "runs/results.py": "from .digest import x\n",
        "runs/digest.py": "from simulator.runs import results\n",
        "serving/__init__.py": "",
        "serving/a.py": "from simulator.economics import b\n",
        "economics/__init__.py": "",
        "economics/b.py": "import simulator.units\n",
    })
    graph = import_graph(package)
    assert graph["simulator.path.engine"] == {"simulator.runs.results"}
    assert graph["simulator.runs.results"] == {"simulator.runs.digest"}
    assert circles(graph) == [["simulator.runs.digest", "simulator.runs.results"]]
    assert layering_violations(graph) == [
        "simulator.path.engine (path) imports simulator.runs.results (runs)",
        "simulator.serving.a (serving) imports simulator.economics.b (economics)",
    ]


@pytest.mark.parametrize("module, room", [
    ("simulator", "face"), ("simulator.__main__", "face"), ("simulator.units", "shared"),
    ("simulator.path", "path"), ("simulator.path.fleet.state", "path"), ("simulator.cli.app", "cli"),
    ("simulator.api", "api"),
])
def test_room_of(module, room):
    assert room_of(module) == room


def test_the_command_group_loads_without_the_numerical_libraries():
    # `fleetcast --help` (and the group every command starts from) must not pay for numpy,
    # pandas, numba, matplotlib, scipy or simpy: each command imports what it needs when it runs.
    import subprocess
    import sys

    heavy = ("numpy", "pandas", "numba", "matplotlib", "scipy", "simpy", "pydantic")
    code = ("import sys; import simulator.cli as cli; cli.main; "
            f"print(','.join(m for m in {heavy!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=Path(__file__).parents[1]).stdout.strip()
    assert loaded == ""


def test_the_license_is_an_spdx_expression_so_installing_warns_nothing_about_it():
    # A `license = {text = ...}` table made setuptools print a screenful of deprecation
    # warnings at every `make install`; an SPDX string needs setuptools 77 or later.
    import re
    import tomllib

    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "Apache-2.0"
    setuptools = next(r for r in project["build-system"]["requires"] if r.startswith("setuptools"))
    assert tuple(int(x) for x in re.search(r">=\s*([\d.]+)", setuptools).group(1).split(".")[:1]) >= (77,)
