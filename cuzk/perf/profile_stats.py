"""cProfile stats files (`cuzk micro --profile`): read and judged before pyperf's workers add to one, and merged as
pyperf merges them (pstats' own sums), so the manager writes the result by the output rule, never a worker in place.

A stats file is marshal data: {(file, line, function): (primitive calls, calls, own time, cumulative time,
{caller: (calls, primitive calls, own time, cumulative time)})}. A file of another shape is refused, never handed
to pstats, whose sums fail on it part way. marshal makes a tuple or list of the length its data declares before
reading the items (a 5-byte file: 2^31 slots), so the lengths are read first (_lengths_fit).
"""
from __future__ import annotations

import marshal
import pstats

from ..files import read_input
from .values import is_number

MAX_PROFILE_BYTES = 256 << 20     # a whole program's profile is a few MB
MAX_DEPTH = 16                    # a stats file nests five deep: dict, tuple, callers' dict, tuple, number


def _u32(data: bytes, pos: int) -> int:
    if pos + 4 > len(data):
        raise IndexError(pos)
    return int.from_bytes(data[pos:pos + 4], "little", signed=True)


def _lengths_fit(data: bytes) -> bool:
    """The marshal data holds only what a stats file does (dicts, tuples, strings, numbers, references), and every
    tuple's declared length fits in the bytes left, so marshal.loads allocates no more than the data's size."""
    pos, end = 0, len(data)
    todo: list = [1]          # objects still to read in each open container; None: a dict's, read up to its '0'
    try:
        while todo:
            if todo[-1] == 0:
                todo.pop()
                continue
            code = data[pos] & 0x7F           # 0x80: FLAG_REF, the object may be referred back to
            pos += 1
            if todo[-1] is None:
                if code == ord("0"):
                    todo.pop()
                    continue
            else:
                todo[-1] -= 1
            if code in b"NFT":
                pass
            elif code in b"ir":
                pos += 4
            elif code == ord("g"):
                pos += 8
            elif code in b"zZf":
                pos += 1 + data[pos]
            elif code in b"uatA":
                pos += 4 + max(_u32(data, pos), 0)
            elif code == ord("l"):
                pos += 4 + 2 * abs(_u32(data, pos))
            elif code in b"()":
                n = data[pos] if code == ord(")") else _u32(data, pos)
                pos += 1 if code == ord(")") else 4
                if not 0 <= n <= end - pos:
                    return False
                todo.append(n)
            elif code == ord("{"):
                todo.append(None)
            else:
                return False
            if pos > end or len(todo) > MAX_DEPTH:
                return False
    except IndexError:
        return False
    return pos == end


def _is_func(k) -> bool:
    return (isinstance(k, tuple) and len(k) == 3 and isinstance(k[0], str) and type(k[1]) is int
            and isinstance(k[2], str))


def _is_numbers(v, n: int) -> bool:
    return isinstance(v, tuple) and len(v) == n and all(is_number(x) for x in v)


def _is_stats(stats) -> bool:
    if not isinstance(stats, dict):
        return False
    for func, v in stats.items():
        if not (_is_func(func) and isinstance(v, tuple) and len(v) == 5 and _is_numbers(v[:4], 4)
                and isinstance(v[4], dict)):
            return False
        # a caller's entry: four numbers (cProfile) or one call count (the older profile module)
        if not all(_is_func(c) and (_is_numbers(n, 4) or is_number(n)) for c, n in v[4].items()):
            return False
    return True


def read_stats(path: str) -> dict | str:
    """The stats in the regular file `path`, or a line naming it and saying what is wrong (str)."""
    try:
        data = read_input(path, MAX_PROFILE_BYTES, mode="rb")
    except OSError as e:
        return f"{path}: {e.strerror or e}"
    try:
        stats = marshal.loads(data) if _lengths_fit(data) else None
    except (ValueError, EOFError, TypeError) as e:     # marshal's: bad data, cut short, nested too deep
        stats = e
    if not _is_stats(stats):
        return f"{path}: not a cProfile stats file (--profile adds to one, or makes a new path)"
    return stats


def merged(old: dict | None, new: dict) -> bytes:
    """`new` added to `old`, as pstats.Stats.add sums them, in the file format pstats reads."""
    total = pstats.Stats()
    for stats in (old or {}, new):
        part = pstats.Stats()
        part.stats = stats
        total.add(part)
    return marshal.dumps(total.stats)
