"""The fused IVF-PQ scan (bench.ann.ivfpq_fused, kernel bench.ann.ivfpq_kernel) under Triton's interpreter,
at tens of programs: its ids and distances equal the plain torch reference's bit for bit, ties included
(duplicate vectors inside a list, across a tile boundary, and two lists with the same centroid and
contents); the torch path without a way to run the kernel, said so; and the structure of a search: one
kernel launch, no host synchronisation, no host-to-device copy, bytes of intermediates per code."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bench.ann import census, ivfpq_fused as F
from bench.core.base.errors import ConfigError


def _index(seed=3, nlist=6, m=3, dsub=4, per_list=(40, 21, 40, 7, 33, 18)):
    """A small IVF-PQ index given by its parts: list 2 is a copy of list 0 under the same centroid, and
    list 0 repeats vectors (one repeat 16 rows after its original: across a tile of 16)."""
    rng = np.random.default_rng(seed)
    d = m * dsub
    coarse = rng.standard_normal((nlist, d)).astype(np.float32)
    coarse[2] = coarse[0]
    cents = rng.standard_normal((m, 256, dsub)).astype(np.float32)
    sizes = np.array(per_list)
    codes = [rng.integers(0, 256, (s, m)).astype(np.uint8) for s in sizes]
    norm = [rng.standard_normal(s).astype(np.float32) for s in sizes]
    for a, b in ((3, 4), (5, 21), (9, 10)):
        codes[0][b], norm[0][b] = codes[0][a], norm[0][a]
    codes[2], norm[2] = codes[0].copy(), norm[0].copy()
    ids = rng.permutation(sizes.sum())
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    return coarse, cents, np.concatenate(codes), ids, np.concatenate(norm), offsets


@pytest.fixture(scope="module")
def lists():
    return F.InterleavedLists.build(*_index(), block=8)


def test_the_layout_interleaves_codes_per_list_in_blocks(lists):
    coarse, cents, codes, ids, norm, offsets = _index()
    assert lists.mp == 4 and tuple(lists.codes.shape[1:]) == (4, 8)
    assert lists.block_start.tolist() == [0, 5, 8, 13, 14, 19]      # 40, 21, 40, 7, 33, 18 vectors in blocks of 8
    row = int(lists.block_start[1]) * 8 + 17                         # list 1, vector 17: block 2, slot 1
    assert lists.codes[5 + 2, :3, 1].tolist() == codes[offsets[1] + 17].tolist()
    assert lists.codes[5 + 2, 3, 1] == 0 and lists.ids[row] == ids[offsets[1] + 17]
    assert torch.isinf(lists.norm[int(lists.block_start[3]) * 8 + 7:int(lists.block_start[4]) * 8]).all()
    assert (lists.ids >= 0).sum() == len(ids)


@pytest.mark.parametrize("on_chip", [True, False], ids=["lut-on-chip", "lut-in-cache"])
def test_the_kernel_equals_the_torch_reference_ties_included(lists, interpreter, on_chip):
    rng = np.random.default_rng(0)
    xq = rng.standard_normal((4, lists.dim)).astype(np.float32)
    xq[0] = lists.coarse[0].numpy()                                  # lists 0 and 2 tie for query 0
    r = F.search(lists, xq, 3, 12, lut_on_chip=on_chip)             # 4 x 3 = 12 programs
    assert r.mode == "triton-interpreter"
    Dr, Ir = F.reference(lists, xq, 3, 12)
    np.testing.assert_array_equal(r.D.numpy(), Dr)
    np.testing.assert_array_equal(r.I.numpy(), Ir)
    assert len(np.unique(Dr[0])) < 12                                # ties were there to break
    assert r.probed.tolist() == [int(lists.sizes[c].sum()) for c in F.coarse(lists, torch.from_numpy(xq), 3)[1]]


def test_without_cuda_or_interpreter_the_torch_path_runs_and_says_so(lists, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    xq = np.random.default_rng(1).standard_normal((5, lists.dim)).astype(np.float32)
    r = F.search(lists, xq, 2, 10)
    assert r.mode.startswith("torch (") and "no CUDA and no Triton interpreter" in r.mode
    Dr, Ir = F.reference(lists, xq, 2, 10)
    np.testing.assert_array_equal(r.D.numpy(), Dr)
    np.testing.assert_array_equal(r.I.numpy(), Ir)


def test_bad_parameters_are_refused_before_work(lists):
    xq = np.zeros((2, lists.dim), np.float32)
    with pytest.raises(ConfigError, match="nprobe=7"):
        F.search(lists, xq, 7, 5)
    with pytest.raises(ConfigError, match="dimension 3"):
        F.search(lists, np.zeros((2, 3), np.float32), 2, 5)
    with pytest.raises(ConfigError, match="power of two"):
        F.InterleavedLists.build(*_index(), block=12)


def test_a_search_is_one_launch_with_no_host_sync_and_few_bytes_per_code(lists, interpreter):
    """Queries on the device to (D, I) on the device: the coarse step, the tables, one kernel, the merge;
    nothing read back by the host, nothing planned there."""
    x = torch.from_numpy(np.random.default_rng(2).standard_normal((2, lists.dim)).astype(np.float32))
    with census.Census() as c:
        r = F.search(lists, x, 2, 8)
    assert c.counts.triton_launches == 1 and c.counts.syncs == 0 and c.counts.h2d == 0, c.counts
    assert c.counts.launches <= 16, c.counts.ops
    assert c.counts.bytes == sum(F.intermediate_bytes(2, 2, 8, lists.m, lists.nlist, lists.dim).values())
    at_1m = F.intermediate_bytes(1024, 32, 100, 16, 1000, 128)      # 1M vectors, 1,000 per list: 32.8M codes
    per_code = sum(v for key, v in at_1m.items() if key != "result") / (1024 * 32 * 1000)
    assert per_code < 5.0, at_1m                                      # bytes written per 16-byte code scanned


@pytest.mark.gpu
@pytest.mark.parametrize("on_chip", [True, False], ids=["lut-on-chip", "lut-in-cache"])
def test_the_compiled_kernel_equals_the_reference_on_cuda(on_chip):
    """On a CUDA host: the kernel compiled by Triton, the same bits as the reference (ties included)."""
    pytest.importorskip("triton")
    lists = F.InterleavedLists.build(*_index(), block=8, device="cuda")
    xq = np.random.default_rng(0).standard_normal((64, lists.dim)).astype(np.float32)
    r = F.search(lists, xq, 4, 20, lut_on_chip=on_chip)
    assert r.mode == "triton-cuda"
    Dr, Ir = F.reference(lists, xq, 4, 20)
    np.testing.assert_array_equal(r.D.cpu().numpy(), Dr)
    np.testing.assert_array_equal(r.I.cpu().numpy(), Ir)
