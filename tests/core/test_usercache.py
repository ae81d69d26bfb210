"""The per-user secret and safe reads every cache uses (``budgetlens.usercache``)."""

from __future__ import annotations

import logging
import os
import shutil
import stat
from pathlib import Path

import pytest

from budgetlens import usercache


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(usercache, "NOTE", None)
    usercache.forget_notes()
    return tmp_path / "xdg" / "budgetlens"


def test_the_secret_is_made_private_whole_and_once(root: Path) -> None:
    key = usercache.user_key()
    secret = root / usercache.SECRET_NAME
    st = secret.lstat()
    assert key is not None and len(key) == 32
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_size == 32 and st.st_nlink == 1
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert usercache.user_key() == key  # read again, not made again
    assert [p.name for p in root.iterdir()] == ["secret"]  # no temporary name left


def test_a_copy_of_the_secret_is_another_key(root: Path) -> None:
    key = usercache.user_key()
    secret = root / usercache.SECRET_NAME
    shutil.copy2(secret, root / "copy")
    os.replace(root / "copy", secret)  # the same bytes and mode, another file
    assert secret.read_bytes() and usercache.user_key() not in (None, key)


@pytest.mark.parametrize("planted", ["mode 644", "a link", "a FIFO", "31 bytes", "a folder"])
def test_a_secret_that_is_not_private_is_not_used(
        root: Path, planted: str, caplog: pytest.LogCaptureFixture) -> None:
    root.mkdir(parents=True)
    secret = root / usercache.SECRET_NAME
    real = root.parent / "elsewhere"
    real.write_bytes(b"k" * 32)
    real.chmod(0o600)
    if planted == "mode 644":
        shutil.copy(real, secret)
        secret.chmod(0o644)
    elif planted == "a link":
        os.symlink(real, secret)
    elif planted == "a FIFO":
        os.mkfifo(secret, 0o600)
    elif planted == "31 bytes":
        secret.write_bytes(b"k" * 31)
        secret.chmod(0o600)
    else:
        secret.mkdir()
    with caplog.at_level(logging.WARNING):
        assert usercache.user_key() is None
        assert usercache.user_key() is None
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 1 and "the caches are off" in notes[0], notes


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="only root can give a file to another user")
def test_another_users_secret_is_not_used(root: Path) -> None:
    assert usercache.user_key() is not None
    os.chown(root / usercache.SECRET_NAME, 12345, 12345)
    assert usercache.user_key() is None


def test_read_file_reads_only_regular_files_under_the_cap(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"12345")
    os.symlink(tmp_path / "f", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    assert usercache.read_file(str(tmp_path / "f"), 5) == b"12345"
    assert usercache.read_file(str(tmp_path / "f"), 4) is None
    assert usercache.read_file(str(tmp_path / "link"), 5) is None
    assert usercache.read_file(str(tmp_path / "fifo"), 5) is None  # returns: no writer
    assert usercache.read_file(str(tmp_path / "missing"), 5) is None
    os.symlink("/dev/zero", tmp_path / "zero")
    assert usercache.read_file(str(tmp_path / "zero"), 5) is None


def test_a_seal_holds_only_for_its_key_purpose_and_header(root: Path) -> None:
    key = usercache.user_key()
    assert key is not None
    data = usercache.sealed(key, b"counts", b"head\n", b"payload")
    assert usercache.unseal(data, key, b"counts", b"head\n") == b"payload"
    assert usercache.unseal(data, key, b"ranks", b"head\n") is None
    assert usercache.unseal(data, b"x" * 32, b"counts", b"head\n") is None
    assert usercache.unseal(data.replace(b"payload", b"paylOad"), key, b"counts",
                            b"head\n") is None
