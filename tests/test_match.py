"""The kernel's one message matcher (csrc/common/match.c) against a brute-force oracle.

The n-th send on a channel matches the n-th receive on it.  The matcher
sorts the keys by (channel, order): by a counting sort over the distinct
channels when the order ascends within each channel and the channels are
few (a location's records), by comparison otherwise.  Both paths must give
the pairs the oracle gives, in the oracle's order (by channel, then order).
"""
from __future__ import annotations

import random
from collections import defaultdict

import numpy as np
import pytest

from waitscope import _core


def oracle(sends, recvs):
    """Pairs by channel, the n-th send with the n-th receive, ordered by (channel, order)."""
    by_channel = defaultdict(lambda: ([], []))
    for channel, order in sends:
        by_channel[channel][0].append(order)
    for channel, order in recvs:
        by_channel[channel][1].append(order)
    pairs = []
    for channel in sorted(by_channel):
        s, r = by_channel[channel]
        pairs += list(zip(sorted(s), sorted(r)))
    return [p[0] for p in pairs], [p[1] for p in pairs]


def match(sends, recvs):
    def arrays(keys):
        channels = np.array([k[0] for k in keys], dtype=np.uint32).reshape(len(keys), 4)
        order = np.array([k[1] for k in keys], dtype=np.int64)
        return channels, order
    s, r = _core.match_messages(*arrays(sends), *arrays(recvs))
    return s.tolist(), r.tolist()


def keys(rng, n, n_channels, shuffled):
    channels = [(rng.randrange(4), rng.randrange(2), rng.randrange(1000), 0) for _ in range(n_channels)]
    out = [(rng.choice(channels), order) for order in range(n)]
    if shuffled:
        rng.shuffle(out)
    return out


@pytest.mark.parametrize("n_channels", [1, 3, 40, 5000])
@pytest.mark.parametrize("shuffled", [False, True])
def test_matches_like_the_oracle(n_channels, shuffled):
    rng = random.Random(n_channels * 2 + shuffled)
    for n_sends, n_recvs in [(0, 5), (7, 0), (1, 1), (200, 180), (5000, 5000)]:
        sends = keys(rng, n_sends, n_channels, shuffled)
        recvs = keys(rng, n_recvs, n_channels, shuffled)
        assert match(sends, recvs) == oracle(sends, recvs), (n_sends, n_recvs)


def test_order_that_does_not_ascend_within_a_channel():
    """Two channels, the keys of one in falling order: sorted by comparison, same pairs."""
    sends = [((1, 0, 5, 0), o) for o in (9, 7, 3)] + [((0, 0, 5, 0), o) for o in (1, 2)]
    recvs = [((1, 0, 5, 0), o) for o in (4, 8, 6)] + [((0, 0, 5, 0), o) for o in (12, 10)]
    assert match(sends, recvs) == ([1, 2, 3, 7, 9], [10, 12, 4, 6, 8])
    assert match(sends, recvs) == oracle(sends, recvs)
