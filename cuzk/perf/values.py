"""What a number read from a file may be, for every reader of gate.json, the noise records and the gate's config:
a bool is not a number, and an integer past a float's range (JSON and TOML allow any) is not a finite one."""
from __future__ import annotations

import math


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v) -> bool:
    """A finite real: an int or a float, never a bool, an infinity, a NaN or an int too large for a float."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def numbers(xs) -> list:
    """The finite numbers of a list (None or anything else left out)."""
    return [x for x in xs or [] if is_number(x)]
