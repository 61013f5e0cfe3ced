"""No module outside the standard library is imported anywhere in clients/python (nor in the
Python sync example): the package must install and run with nothing but Python itself."""

from __future__ import annotations

import ast
import pathlib
import sys
import sysconfig
import unittest
from typing import Iterator, Set, Tuple

HERE = pathlib.Path(__file__).resolve().parent
CLIENT = HERE.parent
EXAMPLE = CLIENT.parent.parent / "examples" / "python-sync"
OWN = {"workspace_api", "support", "sync"} | {path.stem for path in HERE.glob("*.py")}


def stdlib_names() -> Set[str]:
    names = getattr(sys, "stdlib_module_names", None)  # Python >= 3.10
    if names is not None:
        return set(names) | set(sys.builtin_module_names)
    # Python 3.9: the names of the standard library directory (no site-packages under it counted).
    stdlib = pathlib.Path(sysconfig.get_paths()["stdlib"])
    found = set(sys.builtin_module_names)
    for entry in stdlib.iterdir():
        if entry.name == "site-packages":
            continue
        found.add(entry.name.split(".")[0])
    dynload = stdlib / "lib-dynload"
    if dynload.is_dir():
        found |= {entry.name.split(".")[0] for entry in dynload.iterdir()}
    return found


def imports(path: pathlib.Path) -> Iterator[Tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split(".")[0]


class StdlibOnlyTest(unittest.TestCase):
    def test_every_import_is_standard_library_or_our_own(self) -> None:
        allowed = stdlib_names() | OWN
        files = sorted(CLIENT.rglob("*.py")) + sorted(EXAMPLE.rglob("*.py"))
        self.assertTrue(any(f.parent.name == "workspace_api" for f in files))
        offenders = [
            f"{path.relative_to(CLIENT.parent.parent)}:{line}: {name}"
            for path in files
            if "build" not in path.parts
            for line, name in imports(path)
            if name not in allowed
        ]
        self.assertEqual(offenders, [], "third-party imports")

    def test_the_check_catches_a_third_party_import(self) -> None:
        self.assertNotIn("requests", stdlib_names())
        self.assertIn("urllib", stdlib_names())

    def test_no_runtime_dependency_is_declared(self) -> None:
        text = (CLIENT / "pyproject.toml").read_text(encoding="utf-8")
        self.assertIn("dependencies = []", text)


if __name__ == "__main__":
    unittest.main()
