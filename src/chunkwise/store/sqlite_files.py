"""What a knowledge base's SQLite files say before SQLite opens them.

SQLite trusts its files. Pointed at a directory it fails with "unable to open database file", at a named
pipe it blocks; a 0-byte file is taken for a new database and silently given an empty schema; a write-ahead
log (``-wal``) whose frames do not check out is ignored from the first bad frame on, and deleted when the
last connection closes, so the commits after that frame are lost without a word. So a store looks at its
files first: :func:`check_usable` refuses files that cannot be opened at all, and :func:`damage` says
what is wrong with files that can (a database shorter than its header says, a log that would lose
commits).

The write-ahead log is read as SQLite's file format describes it: a 32-byte header (magic, version, page
size, checkpoint sequence, two salts, a checksum of the first 24 bytes) and frames of a 24-byte header
(page number, database size after a commit or 0, the two salts, a running checksum) and one page. SQLite
keeps frames while their salts match the header's and the running checksum agrees; a later frame that
carries the header's salts and commits a transaction was written after the bad one, so its commit would
be lost. The checksum (two 32-bit sums over 32-bit words, in the byte order the magic names) is a linear
recurrence, computed here with numpy for a block of frames at a time.
"""

from __future__ import annotations

import os
import stat
import struct
import time
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from chunkwise.errors import CorruptStoreError, StoreError

SQLITE_MAGIC = b"SQLite format 3\x00"
#: SQLite's database header: the first 100 bytes of the file.
DB_HEADER = 100
WAL_HEADER = 32
FRAME_HEADER = 24
#: Magic numbers of a write-ahead log: checksums over little-endian (…82) or big-endian (…83) words.
WAL_MAGIC = (0x377F0682, 0x377F0683)
WAL_VERSION = 3007000
#: Bytes of frames checksummed per numpy block (bounds memory for a large log).
BLOCK_BYTES = 1 << 22
MASK = (1 << 32) - 1

Words = npt.NDArray[np.uint64]


def wal_path(db: Path) -> Path:
    """The write-ahead log beside ``db``."""
    return db.with_name(db.name + "-wal")


def shm_path(db: Path) -> Path:
    """The shared-memory index beside ``db``."""
    return db.with_name(db.name + "-shm")


def check_usable(db: Path, location: str) -> None:
    """Raise when the database file ``db`` (absent is fine) cannot be opened at all:
    :class:`~chunkwise.errors.StoreError` for a file that is not a regular file or cannot be read,
    :class:`~chunkwise.errors.CorruptStoreError` for an empty or overwritten one."""
    for path in (db, wal_path(db), shm_path(db)):
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StoreError(location, f"cannot read {path.name}: {exc.strerror}") from None
        if not stat.S_ISREG(mode):
            raise StoreError(location, f"{path.name} is not a regular file")
    if not db.exists():
        return
    try:
        with db.open("rb") as file:
            header = file.read(DB_HEADER)
    except OSError as exc:
        raise StoreError(location, f"cannot read {db.name}: {exc.strerror}") from None
    if not header:
        raise CorruptStoreError(
            location,
            f"{db.name} is empty (0 bytes): the knowledge base it held is lost; to start over, delete "
            f"{db.name} and ingest the documents again",
        )
    if not header.startswith(SQLITE_MAGIC) or len(header) < DB_HEADER:
        raise CorruptStoreError(
            location,
            f"{db.name} is not a SQLite database (its header is overwritten, or it is another file) and "
            f"nothing in it can be read; to start over, delete {db.name} and ingest the documents again",
        )


#: Reads of a database's files that show damage while another process changes them, before the
#: files are taken to be in use (see :func:`damage`), and the pause between two reads.
_SCANS = 5
_SCAN_PAUSE_S = 0.05


def damage(db: Path) -> list[str]:
    """What is wrong with a database that can be opened: a file shorter than its header says (when the
    log holds no commit that would explain it), a write-ahead log that would lose commits.

    Damage is reported only when the files did not change while they were read. Another process may be
    writing: its frames, half written or beyond a log it has just begun again (new salts over old
    frames), look like damage to a reader that takes no lock, and a checkpoint grows the database
    before its header says so. So a verdict of damage is read again until the files hold still between
    reading them and their verdict (``_SCANS`` times at most, ``_SCAN_PAUSE_S`` apart); files that keep
    changing are in use by a live writer, which SQLite's own locks protect, and are reported healthy."""
    for attempt in range(_SCANS):
        if attempt:
            time.sleep(_SCAN_PAUSE_S)
        before = _state(db)
        problems = _damage(db)
        if not problems or _state(db) == before:
            return problems
    return []


def _state(db: Path) -> list[tuple[int, int, bytes] | None]:
    """Size, modification time and header of the database and of its write-ahead log (``None`` for a
    missing file): what any write to them changes."""
    found: list[tuple[int, int, bytes] | None] = []
    for path, header in ((db, DB_HEADER), (wal_path(db), WAL_HEADER)):
        try:
            with path.open("rb") as file:
                info = os.fstat(file.fileno())
                found.append((info.st_size, info.st_mtime_ns, file.read(header)))
        except FileNotFoundError:
            found.append(None)
    return found


def _damage(db: Path) -> list[str]:
    """:func:`damage` as the files read now, whether or not another process is writing them."""
    problems = []
    committed, wal_problem = wal_frames(wal_path(db))
    if wal_problem:
        problems.append(f"{wal_path(db).name} is damaged: {wal_problem}")
    if not committed:
        with db.open("rb") as file:
            header = file.read(DB_HEADER)
        (field,) = struct.unpack(">H", header[16:18])
        page_size = 65536 if field == 1 else field  # 1 stands for 65536
        changes, pages = struct.unpack(">II", header[24:32])
        (valid_for,) = struct.unpack(">I", header[92:96])
        size, declared = db.stat().st_size, pages * page_size
        # the page count is trusted only when it was written with the last change (``valid_for``)
        if size % page_size or (changes == valid_for and size < declared):
            problems.append(f"{db.name} is truncated: {size} bytes of the {declared} its header declares")
    return problems


def wal_frames(wal: Path) -> tuple[int, str | None]:
    """``(frames SQLite will read back, why commits after them would be lost or None)`` for ``wal``."""
    try:
        size = wal.stat().st_size
    except FileNotFoundError:
        return 0, None
    if size < WAL_HEADER + FRAME_HEADER:
        return 0, None  # SQLite ignores a log without a whole frame: nothing was committed to it
    try:
        file = wal.open("rb")
    except FileNotFoundError:  # another process's last connection closed and removed it meanwhile
        return 0, None
    with file:
        header = file.read(WAL_HEADER)
        magic, version, page_size, _, salt1, salt2, sum1, sum2 = struct.unpack(">8I", header)
        if magic not in WAL_MAGIC or version != WAL_VERSION or not _valid_page_size(page_size):
            return 0, "its header is not a write-ahead log header, so SQLite would discard every commit in it"
        order = ">u4" if magic & 1 else "<u4"
        words = np.frombuffer(header[:24], dtype=order).astype(np.uint64)[None, :]
        if _checksums(words, (0, 0)) != [(sum1, sum2)]:
            return 0, "its header checksum is wrong, so SQLite would discard every commit in it"
        frame_size = FRAME_HEADER + page_size
        count = (size - WAL_HEADER) // frame_size
        per_block = max(1, BLOCK_BYTES // frame_size)
        valid, last_commit, state = 0, 0, (sum1, sum2)
        for first in range(0, count, per_block):
            raw = np.frombuffer(file.read(frame_size * min(per_block, count - first)), dtype=np.uint8)
            frames = raw.reshape(-1, frame_size)
            fields = frames[:, :FRAME_HEADER].copy().view(">u4").astype(np.uint64)
            body = np.ascontiguousarray(np.concatenate([frames[:, :8], frames[:, FRAME_HEADER:]], axis=1))
            for row, sums in enumerate(_checksums(body.view(order).astype(np.uint64), state)):
                pgno, commit, s1, s2, c1, c2 = (int(v) for v in fields[row])
                if pgno == 0 or (s1, s2) != (salt1, salt2) or sums != (c1, c2):
                    lost = _later_commits(file, first + row, count, frame_size, (salt1, salt2))
                    if not lost:
                        return last_commit, None
                    return last_commit, (
                        f"frame {first + row + 1} of {count} does not check out, so SQLite would drop the "
                        f"{lost} commit(s) from there on"
                    )
                valid += 1
                last_commit = valid if commit else last_commit
            state = sums
    return last_commit, None


def _valid_page_size(size: int) -> bool:
    return 512 <= size <= 65536 and size & (size - 1) == 0


def _later_commits(file: BinaryIO, start: int, count: int, frame_size: int, salts: tuple[int, int]) -> int:
    """Commit frames from frame ``start`` (0-based) on that carry the log's current salts."""
    commits = 0
    for index in range(start, count):
        file.seek(WAL_HEADER + index * frame_size)
        _, commit, s1, s2 = struct.unpack(">4I", file.read(16))
        commits += bool(commit) and (s1, s2) == salts
    return commits


def _checksums(rows: Words, state: tuple[int, int]) -> list[tuple[int, int]]:
    """SQLite's running WAL checksum after each row of ``rows`` (32-bit words, an even number a row),
    starting from ``state``.

    One step over the word pair ``(x, y)`` is ``s1 += x + s2; s2 += y + s1``, that is ``S' = M S + v``
    with ``M = [[1, 1], [1, 2]]`` and ``v = (x, x + y)``, all modulo 2**32. Over a row of ``n`` pairs,
    ``S_n = M**n S_0 + sum(M**(n - k) v_k)``: the sum is one vectorised dot product per row, and only the
    2x2 step from row to row is left to Python."""
    pairs = rows.reshape(rows.shape[0], -1, 2)
    n = pairs.shape[1]
    reverse = _powers(n)[::-1]  # reverse[k - 1] = M**(n - k)
    x, y = pairs[:, :, 0], (pairs[:, :, 0] + pairs[:, :, 1]) & MASK
    c1 = ((reverse[:, 0] * x & MASK) + (reverse[:, 1] * y & MASK)).sum(axis=1) & MASK
    c2 = ((reverse[:, 2] * x & MASK) + (reverse[:, 3] * y & MASK)).sum(axis=1) & MASK
    a, b, c, d = _matrix_power(n)
    s1, s2 = state
    out = []
    for k1, k2 in zip(c1.tolist(), c2.tolist(), strict=True):
        s1, s2 = (a * s1 + b * s2 + k1) & MASK, (c * s1 + d * s2 + k2) & MASK
        out.append((s1, s2))
    return out


_POWERS: dict[int, npt.NDArray[np.uint64]] = {}


def _powers(n: int) -> npt.NDArray[np.uint64]:
    """``M**j`` modulo 2**32 for ``j`` in ``0..n-1``, one row ``(m11, m12, m21, m22)`` each (cached:
    every frame of a log has the same length)."""
    if n not in _POWERS:
        rows = np.empty((n, 4), dtype=np.uint64)
        a, b, c, d = 1, 0, 0, 1
        for j in range(n):
            rows[j] = (a, b, c, d)
            a, b, c, d = (a + c) & MASK, (b + d) & MASK, (a + 2 * c) & MASK, (b + 2 * d) & MASK
        _POWERS[n] = rows
    return _POWERS[n]


def _matrix_power(n: int) -> tuple[int, int, int, int]:
    """``M**n`` modulo 2**32 as ``(m11, m12, m21, m22)``."""
    a, b, c, d = (int(v) for v in _powers(n)[n - 1])
    return (a + c) & MASK, (b + d) & MASK, (a + 2 * c) & MASK, (b + 2 * d) & MASK
