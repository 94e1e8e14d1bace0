"""``bench windve ...``: the standard verbs (measure, figure, claims) and ``serve`` (the embedding service)."""
from __future__ import annotations

import argparse

NAME = "windve"


def add_serve_args(p: argparse.ArgumentParser) -> None:
    from .emulation import PAIRS

    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--model", dest="model_path", help="local Hugging Face encoder folder (default: MiniLM)")
    p.add_argument("--no-offload", dest="heterogeneous", action="store_false",
                   help="heterogeneous computing off: accelerator queue only")
    p.add_argument("--emulate", choices=list(PAIRS), help="emulate an accelerator with this pair's ratios")
    p.add_argument("--prefer-emulated", action="store_true",
                   help="the explicit request for the emulated accelerator even where a CUDA GPU or NPU is found "
                        "(default: a real accelerator when there is one, measured)")
    p.add_argument("--emulated-alpha", type=float, help="emulated law alpha (s/query); default: calibrated")
    p.add_argument("--emulated-beta", type=float, help="emulated law beta (s)")
    p.add_argument("--calibration-tokens", type=int, default=75)
    p.add_argument("--acc-depth", type=int, default=64, help="accelerator queue depth C_acc^max")
    p.add_argument("--cpu-depth", type=int, default=8, help="CPU queue depth C_CPU^max")
    p.add_argument("--cpu-threads", type=int, help="threads of the CPU instance (default: cores - 1)")
    p.add_argument("--forward-cores", dest="reverse_cores", action="store_false",
                   help="CPU instance on the lowest core indices (default: highest, Section IV-D)")
    p.add_argument("--batch-delay-ms", type=float, default=5.0)
    p.add_argument("--max-batch", type=int)
    p.add_argument("--max-client-batch-size", type=int, default=32)
    p.add_argument("--slo", dest="slo_s", type=float,
                   help="SLO (s): checks equation 11 at start, and admits a request only where its predicted "
                        "completion (running batch + queued + it, by the device's law) meets the SLO")


def _serve(a: argparse.Namespace) -> None:
    from . import serve
    from .settings import ServiceConfig

    keys = [f.name for f in __import__("dataclasses").fields(ServiceConfig)]
    serve.run(ServiceConfig(**{k: getattr(a, k) for k in keys if hasattr(a, k)}))


def _serving_only() -> bool:
    """``bench windve serve ...``: the service process skips importing the figure and claims modules
    (matplotlib, seaborn: seconds of start-up on every measurement's service)."""
    import sys

    return sys.argv[1:3] == [NAME, "serve"]


def register(sub: argparse._SubParsersAction) -> None:
    from ..core import studycli

    help_ = "WindVE: embedding service with CPU offload of peak queries"
    if _serving_only():
        s = sub.add_parser(NAME, help=help_).add_subparsers(dest="verb", required=True)
    else:
        from . import claims, runner

        s = studycli.register_study(sub, NAME, help_, steps=runner.STEPS, figures=f"{__package__}.figures", claims=claims)
    sv = s.add_parser("serve", help="run the embedding service (TEI/OpenAI endpoints, /health, /metrics)")
    add_serve_args(sv)
    sv.set_defaults(func=_serve)
