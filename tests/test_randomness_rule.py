"""The project rule: all randomness goes through :mod:`privad.noise`."""

from __future__ import annotations

import ast
from pathlib import Path

import privad

PACKAGE = Path(privad.__file__).parent


def _draws_randomness_itself(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "random":
            if isinstance(node.value, ast.Name) and node.value.id in {"np", "numpy"}:
                return True
        if isinstance(node, ast.Import) and any(
            a.name == "random" or a.name.startswith("numpy.random") for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module == "random" or node.module.startswith("numpy.random"):
                return True
            if node.module == "numpy" and any(a.name == "random" for a in node.names):
                return True
    return False


def test_no_module_outside_privad_noise_draws_randomness_itself():
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "noise" not in path.relative_to(PACKAGE).parts
        and _draws_randomness_itself(ast.parse(path.read_text()))
    ]
    assert offenders == []


def test_the_check_catches_each_form():
    for source in (
        "np.random.default_rng()",
        "import random",
        "from numpy.random import x",
        "from numpy import random",
        "import numpy.random",
    ):
        assert _draws_randomness_itself(ast.parse(source)), source
    assert not _draws_randomness_itself(ast.parse('"""numpy.random in a docstring"""'))
