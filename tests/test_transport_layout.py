"""The transport's mailboxes indexed by message (its layout), which serve
the analysis's first replay and go after it.

Between processes, a process that finished a replay may already send
payloads of the next one while another process is still finishing: those
arrive in the receiver's mailboxes before the receiver drops the layout.
Dropping it must move them to the maps by message id, or the next replay
waits for a message that never arrives ("the backward replay cannot
continue", seen with three analysis processes under mpiexec).  The C
check posts payloads of every kind the in-process transport stores
(inline, on the heap, in the bulk arena of a join's first phase), drops
the layout and takes each of them back unchanged.
"""
from __future__ import annotations

from c_checks import run_c_check


def test_dropping_the_layout_keeps_the_payloads_held(tmp_path):
    out = run_c_check(tmp_path, "layout_drop_check",
                      ["replay/transport_local.c", "common/util.c", "common/alloc.c", "common/error.c"])
    assert out.strip() == "ok"
