"""Run every ``>>>`` example in the package's docstrings as a test.

The numpydoc Examples sections are part of the public contract: each one runs here, on
every run of the README's test command, so an example that stops matching the code fails
the suite. Modules are found by walking the package, so a new module's examples are picked
up without editing this file.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import privad

#: The least number of examples the package must carry (issue 30's floor).
MINIMUM_EXAMPLES = 60


def _modules() -> list[str]:
    names = [privad.__name__]
    for info in pkgutil.walk_packages(privad.__path__, prefix=f"{privad.__name__}."):
        names.append(info.name)
    return sorted(names)


def _tests(module_name: str) -> list[doctest.DocTest]:
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    # only the docstrings written in this module, not those of names it imports
    return [t for t in finder.find(module) if t.examples and _defined_in(t, module)]


def _defined_in(test: doctest.DocTest, module) -> bool:
    return test.filename is None or test.filename == getattr(module, "__file__", None)


_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.mark.parametrize("module_name", _modules())
def test_examples_run(module_name: str, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    runner = doctest.DocTestRunner(optionflags=_FLAGS)
    report: list[str] = []
    for test in _tests(module_name):
        runner.run(test, out=report.append)
    if runner.summarize(verbose=False).failed:
        pytest.fail("".join(report)[:6000])


def test_enough_examples() -> None:
    count = sum(len(t.examples) for name in _modules() for t in _tests(name))
    assert count >= MINIMUM_EXAMPLES, f"{count} doctest examples, want >= {MINIMUM_EXAMPLES}"


#: The packages a user imports; each exports what a user needs, and each export shows how.
PUBLIC_PACKAGES = [
    "privad.sensitive",
    "privad.relaxed",
    "privad.search",
    "privad.rmp",
    "privad.accounting",
]

#: The most names a scheme package exports (issue 30; sklearn.neighbors has 18).
MAXIMUM_EXPORTS = 25


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_public_surface_is_small_and_shown(package: str) -> None:
    module = importlib.import_module(package)
    exported = list(module.__all__)
    assert len(exported) <= MAXIMUM_EXPORTS, f"{package} exports {len(exported)} names"
    finder = doctest.DocTestFinder(recurse=False)
    missing = []
    for name in exported:
        obj = getattr(module, name)
        if not callable(obj):
            continue  # constants are documented where they are defined
        doc = obj.__doc__ or ""
        examples = [e for t in finder.find(obj, name) for e in t.examples]
        if "Examples" not in doc or not examples:
            missing.append(name)
    assert not missing, f"{package}: no runnable Examples section on {missing}"
