"""``privad.io``: staged outputs, and the leftovers of runs killed while staging.

A staging entry (``.NAME.XXXX.part``) is locked by its writer for as long as it exists;
:func:`check_output_path` removes the target's entries whose lock it can take, leaves (or,
for a folder, refuses) those of a live writer, and refuses, naming the entry and the command
that removes it, where the lock cannot be tried.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import privad.io
from privad.errors import OutputError, ParameterError, PrivadWarning
from privad.io import atomic_folder, atomic_write, check_output_path, remove_leftovers

# A process that stages a folder and a file, says so, and waits to be killed.
STAGE_AND_WAIT = """
import sys, time
from privad.io import atomic_folder, atomic_write
with atomic_folder(sys.argv[1]) as tmp, atomic_write(sys.argv[2]) as handle:
    (tmp / "part-00000.parquet").write_text("noisy labels")
    handle.write("index,label")
    handle.flush()
    print("STAGED", tmp, flush=True)
    time.sleep(600)
"""


def _names(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def test_staging_is_private_and_locked_until_renamed(tmp_path: Path) -> None:
    with atomic_folder(tmp_path / "out") as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".out.")
        assert (tmp.stat().st_mode & 0o777) == 0o700
        fd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        (tmp / "a").write_text("x")
        assert remove_leftovers(tmp_path / "out") == []  # its own staging: left alone
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o700  # private once published too
    assert _names(tmp_path) == ["out"]
    with atomic_write(tmp_path / "f.csv") as handle:
        (staged,) = tmp_path.glob(".f.csv.*.part")
        assert (staged.stat().st_mode & 0o777) == 0o600
        handle.write("a")
    assert (tmp_path / "f.csv").stat().st_mode & 0o777 == 0o600
    assert _names(tmp_path) == ["f.csv", "out"]


def test_a_killed_writers_staging_is_removed_by_the_next_check(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", STAGE_AND_WAIT, "out", "f.csv"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("STAGED"), line
        folder = tmp_path / Path(line.split()[1]).name
        (file,) = tmp_path.glob(".f.csv.*.part")
        # while the writer lives: a folder is refused, a file left alone
        with pytest.raises(
            ParameterError, match=r"being written by another privad run .*" + folder.name
        ):
            check_output_path(tmp_path / "out", "--out", kind="folder")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_output_path(tmp_path / "f.csv", "--out")
        assert folder.exists() and file.exists()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert (folder / "part-00000.parquet").read_text() == "noisy labels"  # left by the kill
    with pytest.warns(PrivadWarning, match=f"removed '.*{folder.name}'.* was killed") as w:
        check_output_path(tmp_path / "out", "--out", kind="folder")
    assert "privad budget cancel ID" in str(w[0].message)
    with pytest.warns(PrivadWarning, match=file.name):
        check_output_path(tmp_path / "f.csv", "--out")
    assert _names(tmp_path) == []


def test_only_the_targets_own_staging_entries_are_touched(tmp_path: Path) -> None:
    others = [
        ".labels.csv.abcd1234.part",
        ".labels.abcd1234.probe",
        ".labels..part",
        "labels.abcd1234.part",
        ".labels2.abcd1234.part",
    ]
    for name in others:
        (tmp_path / name).mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / ".labels.link1234.part")
    (tmp_path / ".labels.abcd1234.part").mkdir()
    with pytest.warns(PrivadWarning):
        assert remove_leftovers(tmp_path / "labels") == [tmp_path / ".labels.abcd1234.part"]
    assert _names(tmp_path) == sorted([*others, "elsewhere", ".labels.link1234.part"])


def test_without_locks_a_leftover_is_refused_with_the_command_to_remove_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    leftover = tmp_path / "my dir" / ".out.abcd1234.part"
    leftover.mkdir(parents=True)

    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(privad.io.fcntl, "flock", no_locks)
    with pytest.raises(ParameterError) as info:
        check_output_path(tmp_path / "my dir" / "out", "--out", kind="folder")
    message = str(info.value)
    assert "cannot tell whether that run is still going" in message
    assert message.endswith(f"rm -r -- '{leftover}'")
    assert leftover.exists()


def _enospc(*args: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("where", ["file", "folder"])
def test_an_error_at_the_fsync_is_one_output_error_and_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Issue 26, item 4: most write errors surface at the flush or the fsync, before the
    rename; they are an OutputError (a PrivadError and an OSError) and nothing appears."""
    monkeypatch.setattr(privad.io.os, "fsync", _enospc)
    target = tmp_path / "out"
    with pytest.raises(OutputError, match=r"cannot write '.*out': No space left on device"):
        if where == "file":
            with atomic_write(target) as handle:
                handle.write("index,label\n")
        else:
            with atomic_folder(target) as tmp:
                (tmp / "part-00000.parquet").write_text("noisy labels")
    assert _names(tmp_path) == []


def test_a_real_full_file_system_publishes_nothing(full_disk) -> None:
    folder = full_disk(8192)
    with pytest.raises(OutputError, match="No space left on device") as info:
        with atomic_write(folder / "labels.csv") as handle:
            handle.write("0,1\n" * 5000)  # 20 kB: more than is free
    assert isinstance(info.value, OSError)
    assert _names(folder) == ["filler"]
    with atomic_write(folder / "small.csv") as handle:  # what fits is written
        handle.write("0,1\n")
    assert (folder / "small.csv").read_text() == "0,1\n"


def test_an_error_after_the_rename_is_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once renamed, the output is published: a failing fsync of its folder must not turn
    into an error that would cancel the spend of what was released."""
    real = os.fsync

    def folder_fails(fd: int) -> None:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(privad.io.os, "fsync", folder_fails)
    with atomic_write(tmp_path / "f.csv") as handle:
        handle.write("a")
    assert (tmp_path / "f.csv").read_text() == "a"
