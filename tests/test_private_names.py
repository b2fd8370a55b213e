"""No module of the package imports another module's private names (`from x import _name`, or `x._name` through an
imported module): what a module shares is its public names. A test of its own because ruff has no such rule."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "infinipot_cli"


def _module(path: Path) -> tuple[list[str], bool]:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return (parts[:-1], True) if parts[-1] == "__init__" else (parts, False)


def _target(node: ast.ImportFrom, parts: list[str], is_pkg: bool) -> str:
    """The dotted module a `from ... import` reads from."""
    if not node.level:
        return node.module or ""
    base = parts if is_pkg else parts[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_module(dotted: str) -> bool:
    path = PKG.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(path: Path) -> list[str]:
    parts, is_pkg = _module(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found, modules = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _target(node, parts, is_pkg)
            if not target.startswith(PKG.name):
                continue
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{path.relative_to(PKG.parent)}:{node.lineno} imports {target}.{alias.name}")
                elif _is_module(f"{target}.{alias.name}"):
                    modules.add(alias.asname or alias.name)  # its private attributes are checked below
        elif isinstance(node, ast.Import):
            modules.update(a.asname for a in node.names if a.name.startswith(PKG.name) and a.asname)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and _private(node.attr)):
            found.append(f"{path.relative_to(PKG.parent)}:{node.lineno} reads {node.value.id}.{node.attr}")
    return found


def test_no_module_imports_another_modules_private_names():
    found = [hit for path in sorted(PKG.rglob("*.py")) for hit in private_imports(path)]
    assert not found, "\n".join(found)


def test_the_check_sees_both_forms(tmp_path, monkeypatch):
    pkg = tmp_path / PKG.name
    (pkg / "sub").mkdir(parents=True)
    (pkg / "b.py").write_text("")
    (pkg / "sub" / "a.py").write_text("from ..b import _hidden, shown\nfrom .. import b\nb._other()\nshown._fine = 1\n")
    monkeypatch.setattr(__import__(__name__), "PKG", pkg)
    assert [h.split(" ", 1)[1] for h in private_imports(pkg / "sub" / "a.py")] == [
        f"imports {PKG.name}.b._hidden", "reads b._other"]
