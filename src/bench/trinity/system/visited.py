"""Per-request visited sets of the extend engine (Trinity paper section 3.2: "a visited table used to admit
only first-seen candidates to computation"), with static shapes and no host synchronisation.

:class:`HashVisited` is the bounded table CAGRA keeps per query (Ootomo et al., ICDE 2024, the "small
hash"): a set-associative hash table of ``size`` entries per slot (``size / ways`` buckets of ``ways``
entries), sized from top-M and the degree, never from N, so its bytes per slot do not depend on N. Like
CAGRA it is reset when it would pass half full (CAGRA's maximum fill rate, 0.5); the reset is one epoch
bump (stale entries never match a key of the new epoch) and clears the bucket counters.

Overflow: an insert into a full bucket is dropped and a reset forgets every entry, so a node visited before
may be seen as new again. The engine also drops candidates that are in the request's own top-M list, so
such a revisit costs one distance (counted in the request's tasks) and never a wrong or different result:
a node that left the list (or never entered it) did so because the list held top-M entries that sort
before it, and the list only improves, so it cannot re-enter. Without overflow (``overflow == 0``) the
table is exact and the search is identical to the exact bitmap, distance tasks included (tested).

:class:`BitmapVisited` is the exact visited set, bit-packed (N / 8 bytes per slot; the engine used an
N-byte bitmap before). The engine's "auto" choice takes it where it is no larger than the hash table.
"""
from __future__ import annotations


def hash_bytes_per_slot(size: int, ways: int) -> int:
    """Device bytes of one slot of a :class:`HashVisited` (keys, bucket counters, four counters)."""
    return 8 * (size + 1) + 8 * (size // ways + 1) + 32


def default_size(top_m: int, degree: int, lanes: int) -> int:
    """Entries per slot: the next power of two >= 2 x top-M x D (a search visits well under top-M x D
    nodes: about top-M / p extends of at most p x D new nodes), at least 4 x the lanes of one extend,
    at most 2^16."""
    want = max(2 * top_m * degree, 4 * lanes, 256)
    return min(1 << (want - 1).bit_length(), 1 << 16)


class HashVisited:
    """A bounded set per slot: ``size`` int64 keys ((epoch << 32) | id) in buckets of ``ways``."""

    exact = False
    MULT = 2654435761            # Knuth's multiplicative hash (ids < 2^31: the product fits in int64)

    def __init__(self, torch, slots: int, top_m: int, lanes: int, size: int, ways: int, device):
        if size & (size - 1) or size < ways or ways < 1 or ways & (ways - 1):
            raise ValueError(f"visited table size {size} and ways {ways} must be powers of two, size >= ways")
        t, self.torch = torch, torch
        self.size, self.ways, self.nb, self.limit = size, ways, size // ways, size // 2
        self.shift = 32 - (self.nb.bit_length() - 1)
        self.lanes = lanes
        self.keys = t.full((slots, size + 1), -1, dtype=t.int64, device=device)   # column size: dump
        self.fill = t.zeros(slots, self.nb + 1, dtype=t.int64, device=device)     # column nb: dump
        self.count = t.zeros(slots, dtype=t.int64, device=device)
        self.epoch = t.zeros(slots, dtype=t.int64, device=device)
        self.overflow = t.zeros(slots, dtype=t.int64, device=device)  # entries dropped or forgotten
        self.ar_w = t.arange(ways, device=device)
        self.row0 = t.arange(slots, device=device)[:, None] * (size + 1)   # flat offset of each slot's row
        # insert-sort constants per position of [top-M list, lanes]: the lane flag, and distinct
        # sentinels sorting after every bucket for empty list entries and masked lanes
        self.is_lane = (t.arange(top_m + lanes, device=device) >= top_m).long()
        self.sentinel = (self.nb << 33) | (t.arange(top_m + lanes, device=device) << 1)

    def bytes_per_slot(self) -> int:
        per = (self.keys, self.fill, self.count, self.epoch, self.overflow)
        return sum(x.element_size() * x.numel() for x in per) // self.keys.shape[0] + 8   # + row0

    def clear(self, sl) -> None:
        """Empty the tables of slots ``sl`` (a device index tensor): a new request starts there."""
        self.epoch[sl] += 1
        self.fill[sl] = 0
        self.count[sl] = 0
        self.overflow[sl] = 0

    def admit(self, nbr, ok, listed):
        """``ok`` without lanes already visited, in the request's top-M ``listed`` (ids, -1 = empty) or
        repeated within the row; records the survivors."""
        self._reset_full()
        b = self._bucket(nbr)
        ok = ok & ~self._seen(nbr, b)
        return self._insert(nbr, b, ok, listed)

    def _bucket(self, ids):
        return ((ids * self.MULT) & 0xFFFFFFFF) >> self.shift

    def _reset_full(self) -> None:
        """CAGRA's reset: a table that could pass half full in this extend starts a new epoch."""
        r = self.count + self.lanes > self.limit
        self.overflow += self.count * r
        self.epoch += r.long()
        self.count.masked_fill_(r, 0)
        self.fill.masked_fill_(r[:, None], 0)

    def _seen(self, nbr, b):
        """Lanes whose key is in one of the ``ways`` entries of their bucket."""
        s, p = nbr.shape
        idx = (b * self.ways + self.row0)[:, :, None] + self.ar_w
        got = self.keys.view(-1).index_select(0, idx.view(-1)).view(s, p, self.ways)
        return (got == ((self.epoch[:, None] << 32) | nbr)[:, :, None]).sum(2) > 0

    def _insert(self, nbr, b, ok, listed):
        """One sort of the row's top-M ids and lanes by (bucket, id, lane after list): a lane equal to the
        entry before it (in the list, or an earlier lane) is dropped; each new id takes the next free way
        of its bucket; a full bucket drops it (counted in ``overflow``)."""
        t, m = self.torch, listed.shape[1]
        ids = t.cat([listed, nbr], 1)
        real = t.cat([listed >= 0, ok], 1)
        key = (t.cat([self._bucket(listed), b], 1) << 33) | (ids << 1) | self.is_lane
        srt, order = t.sort(t.where(real, key, self.sentinel), dim=1, stable=True)
        same = t.zeros_like(real)
        same[:, 1:] = (srt[:, 1:] >> 1) == (srt[:, :-1] >> 1)
        bs = srt >> 33                                    # bucket; nb for masked entries
        new = (bs < self.nb) & ((srt & 1) == 1) & ~same
        way = self.fill.gather(1, bs) + _rank_in_run(t, bs, new)
        put = new & (way < self.ways)
        pos = t.where(put, bs * self.ways + way, self.size)
        self.keys.scatter_(1, pos, (self.epoch[:, None] << 32) | ((srt >> 1) & 0x7FFFFFFF))
        self.fill.scatter_add_(1, t.where(new, bs, self.nb), put.long())
        self.count += put.sum(1)
        self.overflow += (new & ~put).sum(1)
        return ok & ~t.zeros_like(real).scatter_(1, order, same)[:, m:]


def _rank_in_run(t, runs, flag):
    """For rows of sorted run labels: how many ``flag`` lanes precede each lane within its run."""
    v = flag.long()
    before = v.cumsum(1) - v
    start = t.ones_like(flag)
    start[:, 1:] = runs[:, 1:] != runs[:, :-1]
    return before - t.where(start, before, 0).cummax(1).values


class BitmapVisited:
    """The exact visited set, bit-packed: N / 8 bytes per slot (one int64 word per 64 nodes; the last word
    is a dump for masked lanes). Marking adds each new node's bit to its word: within a step the ids are
    distinct (repeats are dropped first) and not yet marked, so the add is an OR (deterministic)."""

    exact = True

    def __init__(self, torch, slots: int, lanes: int, n: int, dedupe: bool, device):
        self.torch, self.n, self.dedupe = torch, n, dedupe
        self.words = (n + 63) // 64
        self.bits = torch.zeros(slots, self.words + 1, dtype=torch.int64, device=device)
        self.ar_p = torch.arange(lanes, device=device)
        self.overflow = torch.zeros(slots, dtype=torch.int64, device=device)   # never overflows

    def bytes_per_slot(self) -> int:
        return 8 * (self.words + 1)

    def clear(self, sl) -> None:
        self.bits[sl] = 0

    def admit(self, nbr, ok, listed=None):
        """``ok`` without visited lanes (and repeats when needed); marks the survivors. The top-M list is
        always marked here, so ``listed`` is not needed."""
        t = self.torch
        word, bit = nbr >> 6, t.ones_like(nbr) << (nbr & 63)
        ok = ok & ((self.bits.gather(1, word) & bit) == 0)
        if self.dedupe:
            ok = self._drop_repeats(nbr, ok)
        self.bits.scatter_add_(1, t.where(ok, word, self.words), t.where(ok, bit, 0))
        return ok

    def _drop_repeats(self, nbr, ok):
        """Keep the first lane of each id within a row (only needed when p > 1 or rows repeat ids)."""
        t = self.torch
        uniq = t.where(ok, nbr, self.n + self.ar_p[None])          # masked lanes get distinct sentinels
        srt, order = t.sort(uniq, dim=1, stable=True)
        dup = t.zeros_like(ok)
        dup[:, 1:] = srt[:, 1:] == srt[:, :-1]
        return ok & ~t.zeros_like(ok).scatter_(1, order, dup)
