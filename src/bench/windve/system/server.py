"""``bench windve serve``: the WindVE embedding service (Figure 3 B) as a process. Its command line
(:func:`verbs`, the study's internal verb), then: check the configuration and the port, load the model
copies, listen (``/health`` says 503 while the instances warm up), print one ``ready`` line once every
instance is warm (``/health`` 200), serve until SIGTERM/SIGINT, then stop every instance. A failed
warm-up ends the process with status 1 and the reason (the measuring steps see it at once rather than
waiting out their timeout).

Light on import (the study's command line is built from it): aiohttp, the service and the model load
only when the verb runs.
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import signal
import sys

from .emulation import PAIRS
from .service_config import ServiceConfig, check_port_free


def add_serve_args(p: argparse.ArgumentParser) -> None:
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
    p.add_argument("--served-model-name", help="the model's name on the OpenAI route and in /info, as TEI's flag "
                                               "(default: the model's hub id)")
    p.add_argument("--matryoshka", action="store_true",
                   help="the model was trained for truncation (Matryoshka): honour `dimensions` below its width (a "
                        "model's config.json may say so itself with is_matryoshka, as vLLM reads it)")
    p.add_argument("--slo", dest="slo_s", type=float,
                   help="SLO (s): checks equation 11 at start, and admits a request only where its predicted "
                        "completion (running batch + queued + it, by the device's law) meets the SLO")


def verbs(sub: argparse._SubParsersAction) -> None:
    """``bench windve serve``: the embedding service (TEI/OpenAI endpoints, /health, /metrics)."""
    sv = sub.add_parser("serve", help="run the embedding service (TEI/OpenAI endpoints, /health, /metrics)")
    add_serve_args(sv)
    sv.set_defaults(func=lambda a: run(ServiceConfig(**{f.name: getattr(a, f.name)
                                                        for f in dataclasses.fields(ServiceConfig) if hasattr(a, f.name)})))


async def _serve(cfg: ServiceConfig, svc) -> int:
    from aiohttp import web

    from .app import make_app

    runner = web.AppRunner(make_app(svc), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, cfg.host, cfg.port, backlog=4096, reuse_address=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await site.start()
        print(f"windve listening on http://{cfg.host}:{cfg.port} (warming up)", flush=True)
        stopped = asyncio.ensure_future(stop.wait())
        done, _ = await asyncio.wait({svc.warm_task, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if svc.warm_task in done:
            if svc.warm_task.exception() is not None:
                print(f"windve: {svc.warm_error}", file=sys.stderr, flush=True)
                return 1
            print(f"windve ready on http://{cfg.host}:{cfg.port} devices={','.join(svc.active)}", flush=True)
            await stopped
        return 0
    finally:
        await runner.cleanup()


def run(cfg: ServiceConfig) -> None:
    """Serve ``cfg`` in this process until a signal; bad configuration fails before the model loads."""
    from .service import EmbeddingService

    cfg.check()
    check_port_free(cfg.host, cfg.port)
    svc = EmbeddingService(cfg)
    rc = asyncio.run(_serve(cfg, svc))
    if rc:
        raise SystemExit(rc)
