"""The files of the local stack's data directory: whole records or none, atomic replacement, one owner."""

import errno
import os
import threading
from pathlib import Path

import pytest

from local_stack.__main__ import _parse_args
from local_stack.journal import (
    DirectoryLock,
    Journal,
    StateError,
    encode,
    header,
    read,
    write_atomically,
)
from local_stack.paths import DEFAULT_DATA_DIR

RECORDS = [{"n": n, "text": "é\n" * n, "body": bytes(range(n))} for n in range(5)]


def _journal(path: Path, records: list[dict]) -> Path:
    write_atomically(path, header("journal"), records)
    return path


def test_records_round_trip_with_bytes_and_newlines(tmp_path: Path) -> None:
    contents = read(_journal(tmp_path / "journal", RECORDS), "journal")
    assert contents is not None
    assert list(contents.records()) == RECORDS
    assert contents.torn_bytes == 0
    assert read(tmp_path / "absent", "journal") is None


def test_a_torn_last_record_is_dropped_wherever_the_write_stopped(tmp_path: Path) -> None:
    path = _journal(tmp_path / "journal", RECORDS[:3])
    whole = path.read_bytes()
    last = encode({"n": "last", "body": b"\x00" * 40})
    for cut in range(len(last)):  # every length a killed write could have left (a whole one ends "\n")
        path.write_bytes(whole + last[:cut])
        contents = read(path, "journal")
        assert contents is not None
        assert (list(contents.records()), contents.torn_bytes) == (RECORDS[:3], cut)
    path.write_bytes(whole + last)
    contents = read(path, "journal")
    assert contents is not None and list(contents.records())[-1]["n"] == "last"


def test_a_damaged_record_before_intact_ones_stops_the_start(tmp_path: Path) -> None:
    path = _journal(tmp_path / "journal", RECORDS)
    data = bytearray(path.read_bytes())
    second = data.index(b"\n") + 1
    data[second + 12] ^= 0x01  # one flipped bit: the CRC no longer matches
    path.write_bytes(bytes(data))
    with pytest.raises(StateError, match="damaged"):
        read(path, "journal")


def test_a_file_that_is_not_ours_is_refused(tmp_path: Path) -> None:
    (tmp_path / "journal").write_text("hello\n")
    with pytest.raises(StateError, match="not a journal"):
        read(tmp_path / "journal", "journal")
    write_atomically(tmp_path / "snapshot", header("snapshot"), [])
    with pytest.raises(StateError, match="not a journal"):
        read(tmp_path / "snapshot", "journal")
    write_atomically(tmp_path / "future", header("journal") | {"version": 99}, [])
    with pytest.raises(StateError, match="version 99"):
        read(tmp_path / "future", "journal")


def test_a_replacement_cut_short_leaves_the_old_file(tmp_path: Path) -> None:
    path = _journal(tmp_path / "snapshot", RECORDS)
    before = path.read_bytes()

    def records_then_failure():
        yield {"n": "new"}
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomically(path, header("journal"), records_then_failure())
    assert path.read_bytes() == before


def test_concurrent_appends_stay_whole_and_sync_covers_them(tmp_path: Path) -> None:
    journal = Journal(_journal(tmp_path / "journal", []))
    tickets: list[int] = []

    def writer(number: int) -> None:
        for n in range(50):
            ticket = journal.append([{"writer": number, "n": n, "pad": "x" * 3000}])
            journal.sync(ticket)
            tickets.append(ticket)

    threads = [threading.Thread(target=writer, args=(number,)) for number in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert journal.append([]) == 0  # nothing to write, nothing to sync
    journal.close()
    contents = read(tmp_path / "journal", "journal")
    assert contents is not None and contents.torn_bytes == 0
    for number in range(6):  # each writer's records in its own order
        assert [r["n"] for r in list(contents.records()) if r["writer"] == number] == list(range(50))
    assert sorted(tickets) == list(range(1, 301))


def test_a_write_failing_half_way_leaves_no_partial_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = Journal(_journal(tmp_path / "journal", []))
    journal.append([{"n": 1}])
    real_write = os.write

    def disk_full(fd: int, data: memoryview) -> int:
        monkeypatch.setattr(os, "write", real_write)
        real_write(fd, data[:5])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", disk_full)
    with pytest.raises(OSError, match="No space"):
        journal.append([{"n": 2}])
    journal.sync(journal.append([{"n": 3}]))
    journal.close()
    contents = read(tmp_path / "journal", "journal")
    assert contents is not None and contents.torn_bytes == 0
    assert list(contents.records()) == [{"n": 1}, {"n": 3}]


def test_one_stack_per_data_directory(tmp_path: Path) -> None:
    first, second = DirectoryLock(tmp_path), DirectoryLock(tmp_path)
    first.acquire()
    with pytest.raises(StateError, match="another local stack"):
        second.acquire()
    first.release()
    second.acquire()
    second.release()


def test_the_data_directory_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORY_LOCAL_DATA_DIR", raising=False)
    assert _parse_args([]).data_dir == DEFAULT_DATA_DIR
    assert _parse_args(["--in-memory"]).data_dir is None
    assert _parse_args(["--data-dir", str(tmp_path)]).data_dir == tmp_path
    assert _parse_args(["--data-dir", ":memory:"]).data_dir is None
    monkeypatch.setenv("MEMORY_LOCAL_DATA_DIR", ":memory:")
    assert _parse_args([]).data_dir is None
    assert _parse_args(["--data-dir", str(tmp_path)]).data_dir == tmp_path  # the option wins
    monkeypatch.setenv("MEMORY_LOCAL_DATA_DIR", str(tmp_path / "state"))
    assert _parse_args([]).data_dir == tmp_path / "state"
    with pytest.raises(SystemExit):
        _parse_args(["--in-memory", "--data-dir", str(tmp_path)])
