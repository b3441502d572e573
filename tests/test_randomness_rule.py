"""The project rule: all randomness goes through :mod:`privad.noise`."""

from __future__ import annotations

import ast
import doctest
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


def _draws_randomness(source: str) -> bool:
    """The module's code or any ``>>>`` example in its docstrings draws randomness itself
    (an example is what users copy, so it follows the rule too)."""
    tree = ast.parse(source)
    docs = [
        ast.get_docstring(node) or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    examples = "".join(e.source for doc in docs for e in doctest.DocTestParser().get_examples(doc))
    return _draws_randomness_itself(tree) or _draws_randomness_itself(ast.parse(examples))


def test_no_module_outside_privad_noise_draws_randomness_itself():
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "noise" not in path.relative_to(PACKAGE).parts and _draws_randomness(path.read_text())
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
    assert not _draws_randomness('"""numpy.random in prose"""')
    assert _draws_randomness('def f():\n    """>>> np.random.default_rng(0)"""\n')
