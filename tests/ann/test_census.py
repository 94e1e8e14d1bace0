"""The structural census (bench.ann.census): what it counts as a launch, a host synchronisation, a
host-to-device copy and bytes written, and a dry run's zeroed kernel outputs."""
import numpy as np
import torch

from bench.ann import census, kernels


def test_reads_of_device_data_are_syncs_and_views_launch_nothing():
    t = torch.arange(12.0)
    with census.Census() as c:
        v = t.view(3, 4).t()                     # views: nothing
        s = (v * 2).sum()                        # two launches
        float(s)                                 # a scalar read: one sync
        t.cpu().numpy()                          # .cpu(): one sync (.numpy() after it is no second)
        torch.nonzero(t > 3)                     # data-dependent size: one sync (and two launches)
        torch.from_numpy(np.zeros(4))            # a host array handed over: one host-to-device copy
    assert (c.counts.syncs, c.counts.h2d) == (3, 1), c.counts.sync_sites
    assert c.counts.ops.get("mul") == 1 and "view" not in c.counts.ops and "t" not in c.counts.ops
    assert c.counts.launches == 4 and c.counts.bytes >= 12 * 4


def test_a_dry_census_counts_a_kernel_launch_and_zeroes_its_outputs():
    out = torch.full((5,), 7.0)

    class Kernel:
        __name__ = "k"

        def __getitem__(self, grid):
            raise AssertionError("a dry census must not run the kernel")

    with census.Census(dry=True) as c:
        kernels.launch(Kernel(), (1,), out, outputs=(out,))
    assert c.counts.triton_launches == 1 and c.counts.ops == {"triton:k": 1} and out.sum() == 0
