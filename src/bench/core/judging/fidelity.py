"""What a claim may be judged on: the numbers our emulations and models take from the paper, the hardware
a claim's mechanism needs, and the paper's own definition of the quantity it states.

A verdict follows from the claim's own terms, never from a number we took from the paper. Three
declarations make that checkable, for every study alike:

- **What the paper fixed.** Every emulated device and every model declares the numbers it takes from the
  paper as :class:`PaperInput` (name, value, where in the paper) in a module-level ``PAPER_INPUTS`` and reads
  them through :func:`value`. :func:`sensitivity` rebuilds a study's rows with each input scaled (x0.8 and
  x1.25 by default, :func:`scaled`) on the study's synthetic records; a row whose value moves in step with an
  input is set by it, so it must say so (``fixed_by=`` of :func:`bench.core.judging.claims.claim`: a sanity
  check, never judged). :func:`circular_rows` lists the rows that move yet are judged. Vector widths, power
  figures and speed ratios all count.
- **The hardware a claim needs** (:data:`HARDWARE`): a GPU, several GPUs, an NPU, an SSD that serves many
  reads at once, an FPGA, disaggregated memory nodes, GPUDirect Storage. A claim declares ``needs=``; the
  records say where they ran (:func:`ran_on`); core, not the study, gives "needs hardware we lack" when they
  did not run there (:func:`missing`). A CPU stand-in may be drawn beside the claim; it never judges it.
- **The quantity the paper defines** (:class:`Definition`): the paper's words and where they stand, beside
  ours; where the two differ the row is not judged.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from typing import Callable, Iterable, Iterator, Mapping, Sequence

import pandas as pd


@dataclasses.dataclass(frozen=True)
class PaperInput:
    """A number an emulation or model takes from the paper: ``name`` (unique within the study), ``value``,
    ``where`` (section, table or figure, with the paper's words), ``unit``."""

    name: str
    value: float
    where: str
    unit: str = ""

    def text(self) -> str:
        return f"{self.name} = {self.value:g}{(' ' + self.unit) if self.unit else ''} ({self.where})"


_FACTORS: contextvars.ContextVar[Mapping[str, float]] = contextvars.ContextVar("paper_input_factors", default={})


def value(inp: PaperInput) -> float:
    """The value an emulation uses for ``inp``: the paper's, times its factor inside :func:`scaled`."""
    return inp.value * _FACTORS.get().get(inp.name, 1.0)


@contextlib.contextmanager
def scaled(factors: Mapping[str, float]) -> Iterator[None]:
    """Inside the block, :func:`value` scales each named input by its factor (the sensitivity test)."""
    token = _FACTORS.set({**_FACTORS.get(), **factors})
    try:
        yield
    finally:
        _FACTORS.reset(token)


FACTORS = (0.8, 1.25)
MOVES = 0.01   # a relative change of a row's value above this, for a 20-25% change of an input, is "in step"


def sensitivity(build: Callable[[], Sequence], inputs: Sequence[PaperInput], factors: Sequence[float] = FACTORS,
                tolerance: float = MOVES) -> dict[str, dict[str, float]]:
    """``{claim_id: {input name: elasticity}}`` for every row whose value moves with an input: ``build()``
    returns the study's rows from its synthetic records (deterministic: the same records on every call);
    each input is scaled by each factor in turn, the others held at the paper's value. The elasticity is
    d log(ours) / d log(input), the largest over the factors."""
    base = {r.claim_id: r.ours for r in build()}
    moves: dict[str, dict[str, float]] = {}
    for inp in inputs:
        for f in factors:
            with scaled({inp.name: f}):
                rows = build()
            for r in rows:
                b = base.get(r.claim_id)
                if not _finite(b) or not _finite(r.ours):
                    continue
                rel = abs(r.ours - b) / max(abs(b), 1e-12)
                if rel > tolerance:
                    e = abs(math.log(max(abs(r.ours), 1e-300) / max(abs(b), 1e-300)) / math.log(f))
                    moves.setdefault(r.claim_id, {})[inp.name] = max(e, moves.get(r.claim_id, {}).get(inp.name, 0))
    return moves


def _finite(x) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


JUDGED = ("reproduced", "not reproduced", "inconclusive")


def circular_rows(rows: Sequence, moves: Mapping[str, Mapping[str, float]]) -> list[str]:
    """Rows judged (reproduced, not reproduced or inconclusive) although their value moves with a paper
    input they do not name in ``fixed_by``: each as "claim id moves with input (elasticity)"."""
    bad = []
    for r in rows:
        named = set(filter(None, str(getattr(r, "fixed_by", "") or "").split(",")))
        for name, e in moves.get(r.claim_id, {}).items():
            if name not in named and r.verdict in JUDGED:
                bad.append(f"{r.claim_id} moves with {name} (elasticity {e:.2f}) yet is judged")
    return bad


def inputs_of(modules: Iterable) -> tuple[PaperInput, ...]:
    """Every ``PAPER_INPUTS`` the given modules declare; a name declared twice is an error."""
    seen: dict[str, PaperInput] = {}
    for m in modules:
        for inp in getattr(m, "PAPER_INPUTS", ()):
            if inp.name in seen and seen[inp.name] != inp:
                raise ValueError(f"paper input {inp.name!r} declared twice with different values")
            seen[inp.name] = inp
    return tuple(seen.values())


HARDWARE = {
    "gpu": "a CUDA GPU",
    "gpus": "several GPUs in one machine",
    "npu": "an NPU (Ascend)",
    "parallel-ssd": "an NVMe SSD (the papers' class: some 100K to 1M random 4 KiB reads a second, many at once)",
    "fpga": "an FPGA",
    "memory-nodes": "disaggregated memory nodes over a network",
    "gds": "GPUDirect Storage",
}


def _key(need: str) -> tuple[str, int]:
    name, _, n = need.partition(":")
    if name not in HARDWARE:
        raise ValueError(f"unknown hardware {need!r}; one of {', '.join(HARDWARE)} (with ':N' for a count)")
    return name, int(n) if n else 1


def words(needs: Iterable[str]) -> str:
    """The hardware in words: ``gpus:4`` -> "4 x several GPUs in one machine" reads badly, so counts lead."""
    out = []
    for need in needs:
        name, n = _key(need)
        out.append(f"{n} GPUs in one machine" if name == "gpus" else HARDWARE[name] if n == 1 else
                   f"{n} x {HARDWARE[name]}")
    return ", ".join(out)


def ran_on(rows: pd.DataFrame, extra: Iterable[str] = ()) -> frozenset[str]:
    """The hardware the measured rows ran on, from the columns every record has: ``source`` (an emulated,
    modelled or not-run row ran on no real hardware of its kind), ``device`` or ``accelerator`` (``cuda...``
    or ``gpu...`` is a GPU, ``npu...``/``ascend...`` an NPU) and ``gpus`` (how many). ``extra``: hardware the study established itself (a premise measured from these
    records, e.g. an SSD's parallelism). Rows that did not all run on a piece of hardware do not count."""
    if rows is None or len(rows) == 0:
        return frozenset()
    src = rows["source"] if "source" in rows else pd.Series("measured", index=rows.index)
    if not (src == "measured").all():
        return frozenset()   # something was emulated or modelled: no real hardware of its kind ran it
    have = set(extra)
    for col in ("device", "accelerator"):
        if col not in rows:
            continue
        dev = rows[col].astype(str).str.lower()
        if dev.str.startswith(("cuda", "gpu")).all():
            have.add("gpu")
            n = int(rows["gpus"].min()) if "gpus" in rows and rows["gpus"].notna().all() else 1
            if n > 1:
                have.add(f"gpus:{n}")
        elif dev.str.startswith(("npu", "ascend")).all():
            have.add("npu")
    return frozenset(have)


def missing(needs: Iterable[str], have: Iterable[str]) -> list[str]:
    """The needed hardware the records did not run on (``gpus:4`` is met by ``gpus:N`` with N >= 4)."""
    got: dict[str, int] = {}
    for h in have:
        name, n = _key(h)
        got[name] = max(got.get(name, 0), n)
    return [need for need in needs if got.get(_key(need)[0], 0) < _key(need)[1]]


@dataclasses.dataclass(frozen=True)
class Definition:
    """The quantity a claim states, as the paper defines it (``paper``: its words, quoted; ``where``:
    section, table or figure) beside ours (``ours``: what we compute, in words). ``same=False``: they
    differ, so the row is not judged (the reason says how they differ)."""

    paper: str
    where: str
    ours: str
    same: bool = True

    def text(self) -> str:
        tag = "" if self.same else " (not the paper's quantity: not judged)"
        return f"paper, {self.where}: \"{self.paper}\"; ours: {self.ours}{tag}"
