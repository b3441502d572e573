"""Every Python code block in README.md and docs/*.md runs (in a fresh temporary directory).

A block that cannot run here says so in the line before it, with its reason, as
``<!-- docs-test: skip (REASON) -->``; the reason is shown in the test report. Each block runs
as its own ``python -c`` process, so ``if __name__ == "__main__":`` guards work as in a script.
"""

from __future__ import annotations

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


@pytest.mark.parametrize("code", _blocks())
def test_the_code_block_runs(code: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
