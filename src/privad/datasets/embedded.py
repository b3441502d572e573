"""The data files shipped inside privad, checked against their SHA-256 on first use.

The files live in ``privad/datasets/data/`` (package data); ``data/NOTICE.md`` names the
source and licence of each and ``data/SHA256SUMS`` (the format of ``sha256sum -c``) their
checksums. :func:`embedded_path` verifies a file once per process (the largest is ~0.25 MB,
so this costs about a millisecond) and refuses a file whose bytes changed.

External data (files privad may not or does not redistribute, such as Gas Sensor Array
Drift, Kaggle's credit-card file or Yahoo S5) is never downloaded: :func:`find_external`
looks where the user said, then under ``$PRIVAD_DATA``, and, only as a convenience for a
checkout next to the shared data folder, in ``./shared/datasets`` and ``../shared/datasets``
relative to the working directory.
"""

from __future__ import annotations

import hashlib
import os
from importlib import resources
from pathlib import Path

from privad.errors import DataError, DatasetNotFoundError

__all__ = [
    "DATA_ENV",
    "data_root",
    "embedded_path",
    "embedded_files",
    "expected_sha256",
    "find_external",
    "sha256_file",
]

#: Environment variable naming a folder that holds external data files.
DATA_ENV = "PRIVAD_DATA"

_MANIFEST = "SHA256SUMS"
_verified: set[str] = set()


def data_root() -> Path:
    """The folder of the embedded data files."""
    return Path(str(resources.files("privad.datasets").joinpath("data")))


def _read_manifest() -> dict[str, str]:
    manifest = data_root() / _MANIFEST
    try:
        text = manifest.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(
            f"the embedded data manifest {manifest} cannot be read ({exc}); reinstall privad"
        ) from None
    sums: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        digest, _, rel = line.partition("  ")
        sums[rel.strip().removeprefix("./")] = digest.strip().lower()
    return sums


def embedded_files() -> dict[str, str]:
    """Every embedded file (path relative to the data folder) with its expected SHA-256."""
    return _read_manifest()


def expected_sha256(relative: str) -> str:
    """The recorded SHA-256 of one embedded file."""
    sums = _read_manifest()
    if relative not in sums:
        raise DatasetNotFoundError(f"{relative!r} is not an embedded data file")
    return sums[relative]


def sha256_file(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file, as lower-case hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def embedded_path(relative: str, *, verify: bool = True) -> Path:
    """The path of an embedded file, after checking its SHA-256 (once per process).

    Raises
    ------
    DatasetNotFoundError
        the file is not part of the embedded data or is missing.
    DataError
        its bytes do not match the recorded checksum (a damaged installation).
    """
    path = data_root() / relative
    if not path.is_file():
        raise DatasetNotFoundError(
            f"embedded data file {relative!r} is missing from {data_root()}; reinstall privad"
        )
    if verify and relative not in _verified:
        expected = expected_sha256(relative)
        actual = sha256_file(path)
        if actual != expected:
            raise DataError(
                f"embedded data file {path} is damaged: SHA-256 {actual} does not match the"
                f" recorded {expected}; reinstall privad"
            )
        _verified.add(relative)
    return path


def find_external(
    filename: str,
    *,
    subfolder: str,
    path: str | os.PathLike[str] | None,
    what: str,
    how_to_get: str,
) -> Path:
    """Locate an external data file.

    ``path`` (a file, or a folder holding ``filename``) wins when given and must exist.
    Otherwise the candidates are ``$PRIVAD_DATA/<subfolder>/<filename>``,
    ``$PRIVAD_DATA/<filename>``, then ``shared/datasets/<subfolder>/<filename>`` and
    ``../shared/datasets/<subfolder>/<filename>`` relative to the working directory.

    Raises
    ------
    DatasetNotFoundError
        naming every place looked at and where to put the file.
    """
    if path is not None:
        candidate = Path(path).expanduser()
        if candidate.is_dir():
            candidate = candidate / filename
        if candidate.is_file():
            return candidate
        raise DatasetNotFoundError(f"{what}: no such file {str(candidate)!r}")
    candidates: list[Path] = []
    env = os.environ.get(DATA_ENV)
    if env:
        root = Path(env).expanduser()
        candidates += [root / subfolder / filename, root / filename]
    for base in (Path("shared/datasets"), Path("../shared/datasets")):
        candidates.append(base / subfolder / filename)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    env_hint = "" if env else f" (${DATA_ENV} is not set)"
    raise DatasetNotFoundError(
        f"{what} is not shipped with privad and was not found{env_hint}; looked in: {looked}."
        f" Pass path=... (command line: --path), or put {filename} in"
        f" ${DATA_ENV}/{subfolder}/. {how_to_get}"
    )
