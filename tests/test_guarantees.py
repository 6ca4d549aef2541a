"""Promises checked on the source itself: no user input reaches eval, exec, pickle or an
unsafe YAML loader anywhere in the package."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "simulator"
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__"}
FORBIDDEN_ATTRIBUTES = {("pickle", "load"), ("pickle", "loads"), ("yaml", "load"), ("yaml", "unsafe_load"),
                        ("yaml", "full_load"), ("marshal", "loads"), ("shelve", "open")}


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in FORBIDDEN_CALLS:
                found.append(f"{path.name}:{node.lineno}: {func.id}()")
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                    (func.value.id, func.attr) in FORBIDDEN_ATTRIBUTES:
                found.append(f"{path.name}:{node.lineno}: {func.value.id}.{func.attr}()")
            for keyword in node.keywords:
                if keyword.arg == "allow_pickle" and not (isinstance(keyword.value, ast.Constant)
                                                          and keyword.value.value is False):
                    found.append(f"{path.name}:{node.lineno}: allow_pickle")
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [alias.name for alias in node.names]
            module = getattr(node, "module", None) or ""
            if "pickle" in names or module == "pickle" or "marshal" in names:
                found.append(f"{path.name}:{node.lineno}: imports {module or names}")
    return found


def test_no_eval_pickle_or_unsafe_yaml_in_the_package():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 40
    assert [v for path in files for v in _violations(path)] == []


def test_the_checker_catches_what_it_looks_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import pickle\nimport yaml\nx = eval('1')\ny = yaml.load('a')\nz = pickle.loads(b'')\n"
                   "import numpy as np\nnp.load('f', allow_pickle=True)\n")
    assert len(_violations(bad)) == 5
