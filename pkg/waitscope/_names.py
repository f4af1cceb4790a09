"""Readable names for the OTF2 enumerations the store keeps as numbers.

The numbers and names are declared once, in the C kernel (event kinds in
csrc/trace/trace.h, OTF2's numbering from OTF2's own headers, the names in
csrc/analysis/names.c); waitscope._core exports them and this module only
shapes them for Python.
"""

from __future__ import annotations

from . import _core


def _table(name: str) -> tuple[str, ...]:
    names = _core.names[name]
    assert all(n is not None for n in names), name  # dense OTF2 enumerations
    return names


def _by_value(name: str) -> dict[int, str]:
    return {value: n for value, n in enumerate(_core.names[name]) if n is not None}


REGION_ROLES = _table("region_roles")
PARADIGMS = _table("paradigms")
COLLECTIVE_OPS = _table("collective_ops")
LOCATION_TYPES = _table("location_types")

# Event kinds as stored in the `kind` column (see csrc/trace/trace.h).
EVENT_KINDS = _by_value("event_kinds")

# The OTF2 record name of each kind, as otf2-print spells it.
OTF2_RECORD_NAMES = _by_value("otf2_records")

# The kinds whose events carry a message record (ref: row of the message table).
MESSAGE_KINDS: tuple[int, ...] = _core.MESSAGE_KINDS

# Wait-state (and delay-cost) classes, by number (see csrc/analysis/analysis.h).
WAIT_CLASSES = _table("wait_classes")


def name_of(table: tuple[str, ...], value: int) -> str:
    """Name of an enumeration value, or 'unknown(N)' past the table."""
    return table[value] if 0 <= value < len(table) else f"unknown({value})"
