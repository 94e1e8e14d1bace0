"""Synthetic generators: deterministic from the seed, the right shapes, planted relevance."""
from __future__ import annotations

import collections
import math

import ir_measures
import numpy as np

from bench.data import synthetic


def test_vectors_are_deterministic_and_shaped():
    a, qa = synthetic.sift_like(500, seed=3, n_queries=20)
    b, qb = synthetic.sift_like(500, seed=3, n_queries=20)
    c, _ = synthetic.sift_like(500, seed=4)
    assert a.dtype == np.uint8 and a.shape == (500, 128) and qa.shape == (20, 128)
    assert (a == b).all() and (qa == qb).all() and not (a == c).all()
    d, dq = synthetic.deep_like(300, seed=1, n_queries=10)
    assert d.dtype == np.float32 and d.shape == (300, 96)
    np.testing.assert_allclose(np.linalg.norm(d, axis=1), 1.0, rtol=1e-5)


def test_syn_replicate():
    x, _ = synthetic.sift_like(10, seed=0)
    y = synthetic.syn_replicate(x, 512)
    assert y.shape == (10, 512) and y.dtype == np.float32
    assert (y[:, 128:256] == x).all() and (y[:, 384:] == x).all()
    assert synthetic.syn_replicate(x, 1024).shape == (10, 1024)


def _bm25_run(ds, k1=0.9, b=0.4):
    docs = [d.split() for d in ds.docs]
    df = collections.Counter(w for d in docs for w in set(d))
    n, avg = len(docs), sum(map(len, docs)) / len(docs)
    tfs = [collections.Counter(d) for d in docs]
    run = []
    for qid, q in zip(ds.query_ids, ds.queries):
        scores = []
        for did, tf, d in zip(ds.doc_ids, tfs, docs):
            s = sum(math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) * tf[w] * (k1 + 1)
                    / (tf[w] + k1 * (1 - b + b * len(d) / avg)) for w in q.split() if w in tf)
            scores.append((s, did))
        for s, did in sorted(scores, reverse=True)[:100]:
            run.append(ir_measures.ScoredDoc(qid, did, s))
    return run


def test_text_has_planted_relevance_a_better_retriever_scores_higher():
    ds = synthetic.msmarco_like(600, 25, seed=7, n_topics=20, vocab_size=2000, empty_passages=3)
    assert len(ds.empty_doc_ids) == 3 and len(ds.docs) == 600
    assert set(ds.qrels.relevance) <= {1, 2} and ds.qrels.query_id.nunique() == 25
    lengths = [len(d.split()) for d in ds.docs if d]
    assert 35 <= np.median(lengths) <= 70
    qrels = [ir_measures.Qrel(q, d, int(r)) for q, d, r in ds.qrels.itertuples(index=False)]
    rng = np.random.default_rng(0)
    rand = [ir_measures.ScoredDoc(q, d, float(s)) for q in ds.query_ids
            for d, s in zip(rng.choice(ds.doc_ids, 100, replace=False), rng.random(100))]
    measure = ir_measures.nDCG @ 10
    bm25 = ir_measures.calc_aggregate([measure], qrels, _bm25_run(ds))[measure]
    random = ir_measures.calc_aggregate([measure], qrels, rand)[measure]
    assert bm25 > 0.5 > 0.1 > random
    again = synthetic.msmarco_like(600, 25, seed=7, n_topics=20, vocab_size=2000, empty_passages=3)
    assert again.docs == ds.docs and again.queries == ds.queries
