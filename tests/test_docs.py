"""Every Python code block in README.md and docs/*.md runs (in a fresh temporary directory),
and so does every shell example marked runnable.

A block that cannot run here says so in the line before it, with its reason, as
``<!-- docs-test: skip (REASON) -->``; the reason is shown in the test report. Each block runs
as its own ``python -c`` process, so ``if __name__ == "__main__":`` guards work as in a script.

A ``bash`` block preceded by ``<!-- docs-test: run -->`` is a complete example a reader runs
as written (servers on port 0, its own temporary folder, its background jobs stopped on
exit): it runs with ``bash`` in a temporary folder that is also its ``$TMPDIR`` and
``$HOME``, with this Python's ``privad`` and ``python`` first on the ``PATH``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP = r"(?:<!-- docs-test: skip \((?P<skip>[^)]*)\) -->\n)?"
BLOCK = re.compile(SKIP + r"```python\n(?P<code>.*?)```", re.S)


def _blocks() -> list:
    params = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for i, m in enumerate(BLOCK.finditer(path.read_text(encoding="utf-8"))):
            marks = [pytest.mark.skip(reason=m["skip"])] if m["skip"] else []
            params.append(pytest.param(m["code"], id=f"{path.name}#{i}", marks=marks))
    return params


SHELL = re.compile(r"<!-- docs-test: run -->\n```bash\n(?P<code>.*?)```", re.S)


def _shell_blocks() -> list:
    return [
        pytest.param(m["code"], id=f"{path.name}#sh{i}")
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        for i, m in enumerate(SHELL.finditer(path.read_text(encoding="utf-8")))
    ]


def test_the_runnable_shell_examples_are_found() -> None:
    names = {param.id.split("#")[0] for param in _shell_blocks()}
    assert {"rmp_service.md", "relaxed.md", "search.md"} <= names


@pytest.mark.slow  # each starts servers and runs a whole example (tens of seconds)
@pytest.mark.parametrize("code", _shell_blocks())
def test_the_shell_example_runs(code: str, tmp_path: Path) -> None:
    tools = str(Path(sys.executable).parent)  # privad and python of this environment
    env = {
        **os.environ,
        "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "COLUMNS": "120",
    }
    for name in [k for k in env if k.startswith("PRIVAD_")]:  # the example sets its own
        del env[name]
    proc = subprocess.run(
        ["bash", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("code", _blocks())
def test_the_code_block_runs(code: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
