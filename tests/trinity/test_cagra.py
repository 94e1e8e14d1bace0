"""cuVS CAGRA, the reference curve of Trinity's recall/QPS figure (steps/_cagra.py, section 3.2)."""
import pytest


@pytest.mark.gpu
def test_cuvs_cagra_reference_curve(small):
    """cuVS CAGRA on the same vectors and degrees: the reference curve of the recall/QPS figure."""
    pytest.importorskip("cuvs")
    from bench.trinity.steps import _cagra

    rows, prov = _cagra.rows(small["base"], small["queries"], small["gt"], degree=16, knn_degree=32, itopk=(32, 64), k=10, p=1,
                             repeats=2, warmup=1)
    m = [r for r in rows if r["phase"] == "measured"]
    assert len(m) == 4 and all(r["qps"] > 0 for r in m) and prov["cagra_build_s"] > 0
    assert max(r["recall_at_10"] for r in m) >= 0.9


def test_cuvs_cagra_says_why_it_did_not_run():
    from bench.core.machine import devices
    from bench.trinity.steps import _cagra

    why = _cagra.why_not()
    if not devices.cuda_available():
        assert "needs CUDA" in why
    else:
        assert why is None or "not installed" in why
