import numpy as np
import pytest

from bench.chameleon import paper_values
from bench.chameleon.system import priority_queue as pq


def test_binomial_model_reproduces_the_authors_lengths():
    for m, length in paper_values.L1_LENGTHS.items():
        assert pq.analytic_l1_length(pq.units_for_m(m), 100) == length


def test_pmf_and_cdf():
    p = pq.binomial_pmf(100, 16)
    assert p.sum() == pytest.approx(1.0)
    assert p.argmax() == 6                     # mean 100/16 = 6.25
    assert pq.binomial_cdf(100, 16)[20] > 0.999  # "highly unlikely more than 20" (section 4.2.2)


def test_systolic_queue_keeps_the_smallest():
    q = []
    for x in [5, 3, 9, 1, 7, 2]:
        pq.systolic_replace(q, x, 3)
    assert q == [1, 2, 3]


def test_hierarchical_queue_exact_when_long_enough_and_99pct_at_analytic_length():
    d = pq.random_distances(300, 3000, seed=3)
    assert pq.identical_fraction(d, 8, 100, 100) == 1.0
    assert pq.identical_fraction(d, 8, pq.analytic_l1_length(8), 100) >= 0.99
    assert pq.identical_fraction(d, 8, 3, 100) < 0.5
    assert pq.simulated_l1_length(d, 8, 100) <= pq.analytic_l1_length(8)
