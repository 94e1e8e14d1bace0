"""Figure 1 of Trinity (section 2): utilisation against batch size, u(X) = min(u_max, (X / X_sat)^alpha),
for vector search (X = concurrent queries Q), prefill and decode (X = batch size B).

No GPU utilisation counter exists on this CPU machine, so utilisation is the achieved FLOP rate of a stage
divided by the machine's measured peak (a large float32 GEMM): the same quantity the paper's roofline
bounds (u_max = AI * B_mem / P_peak). FLOP counts: 2 FLOP per weight per token for the language model (a
Llama-architecture model from transformers, :mod:`bench.serving.lm`; attention scores and values added per
context token); 3 d FLOP per squared-L2 distance (subtract,
multiply, add) for the search.
"""
from __future__ import annotations

import numpy as np

from ...core.base.errors import ConfigError


def u_model(x, u_max: float, x_sat: float, alpha: float):
    return np.minimum(u_max, (np.asarray(x, dtype=float) / x_sat) ** alpha)


def fit(x, u) -> dict[str, float]:
    """Least squares in log space; alpha in (0, 1], X_sat > 0, u_max > 0. Returns the fit and its RMSE."""
    x, u = np.asarray(x, dtype=float), np.asarray(u, dtype=float)
    ok = (x > 0) & (u > 0)
    if ok.sum() < 3:
        raise ConfigError(f"a roofline fit needs >= 3 positive points, got {int(ok.sum())}")
    x, u = x[ok], u[ok]
    lx, lu = np.log(x), np.log(u)

    def resid(p):
        lum, lxs, a = p
        return np.minimum(lum, a * (lx - lxs)) - lu

    # coarse grid (vectorised), then one local least-squares refinement from the best grid point
    al = np.linspace(0.05, 1.0, 20)[:, None, None]
    lxs_g = np.linspace(lx.min() - 3, lx.max() + 3, 40)[None, :, None]
    lum_g = np.linspace(lu.min() - 0.5, lu.max() + 0.5, 30)
    err = [((np.minimum(m, al[..., None] * (lx - lxs_g[..., None])) - lu) ** 2).sum(-1) for m in lum_g]
    err = np.stack(err, axis=-1)[:, :, 0, :]                      # (alpha, x_sat, u_max)
    i, j, k_ = np.unravel_index(err.argmin(), err.shape)
    start = [lum_g[k_], float(lxs_g[0, j, 0]), float(al[i, 0, 0])]
    from scipy.optimize import least_squares   # here: importing scipy.optimize costs ~0.5 s on every CLI start

    best = least_squares(resid, start, bounds=([-np.inf, lx.min() - 5, 1e-3], [np.inf, lx.max() + 5, 1.0]))
    lum, lxs, a = best.x
    # the paper's X_sat is the scale in (X / X_sat)^alpha; the knee (where u reaches u_max) is
    # X_sat * u_max^(1 / alpha): the batch size at which the stage saturates
    return {"u_max": float(np.exp(lum)), "x_sat": float(np.exp(lxs)),
            "x_knee": float(np.exp(lum / a + lxs)), "alpha": float(a),
            "rmse_log": float(np.sqrt(np.mean(best.fun ** 2)))}


def lm_flops_prefill(layer_weights: int, layers: int, d_model: int, vocab: int, batch: int, tokens: int) -> float:
    """FLOPs of one prefill pass of ``batch`` prompts of ``tokens`` tokens: 2 per weight per token
    (``layer_weights`` per layer, :func:`bench.serving.lm.layer_weights`), causal attention, and the head on the
    last position. Useful FLOPs: the static cache's masked positions are not counted."""
    attn = 2 * layers * 2 * d_model * tokens * (tokens + 1) / 2
    return float(batch * (tokens * 2 * layers * layer_weights + attn + 2 * d_model * vocab))


def lm_flops_decode(layer_weights: int, layers: int, d_model: int, vocab: int, batch: int, context: int) -> float:
    """FLOPs of one decode step of ``batch`` sequences with ``context`` cached tokens (useful FLOPs, as above)."""
    attn = 2 * layers * 2 * d_model * (context + 1)
    return float(batch * (2 * layers * layer_weights + attn + 2 * d_model * vocab))


def search_flops(tasks: float, dim: int) -> float:
    return float(3 * dim * tasks)
