"""Prometheus metrics of the WindVE service (``GET /metrics``), named after text-embeddings-inference's
``te_*`` metrics where one exists (``windve_`` for ``te_``), so TEI dashboards map over.

Requests (``/embed`` and ``/v1/embeddings``; ``method`` is ``embed`` or ``openai``); every request counts
once in ``windve_request_count`` and once in either ``..._success`` or ``..._failure``:

- ``windve_request_count_total{method}`` (TEI ``te_request_count``);
- ``windve_request_success_total{method}`` (``te_request_success``);
- ``windve_request_failure_total{err,status}`` (``te_request_failure{err}``, with the HTTP status): ``err``
  is ``overloaded`` for a 429 (the queue manager said BUSY; counted here once, never as invalid),
  ``validation`` for 400/413/422 (bad JSON or an empty input, a batch over the client limit or a text beyond
  the model's tokens, a body of the wrong shape), ``unhealthy`` for 503 (not ready: still warming up),
  ``backend`` for 424 (TEI's status of a failed inference) and 500;
- ``windve_request_duration_seconds{device}`` (``te_request_duration``), ``..._queue_duration_seconds``
  (``te_request_queue_duration``: waiting for a batch), ``..._inference_duration_seconds``
  (``te_request_inference_duration``: the batch's compute), per device of accepted requests.

The queue manager (Algorithm 1, Section IV-B1) and the instances:

- ``windve_queue_size{device}`` (``te_queue_size``): queries a device holds, waiting or computing;
- ``windve_queue_depth{device}``: its depth C_max (no TEI equivalent; TEI has one ``max_concurrent_requests``);
- ``windve_queue_refused_total{reason}``: the manager's refusals by rule, ``depth`` (every usable queue at
  C_max) or ``deadline`` (predicted completion beyond the SLO); the same requests as
  ``windve_request_failure_total{err="overloaded"}``, broken down, not more of them;
- ``windve_accepted_total{device}``, ``windve_offloaded_total`` (sent to the CPU: the paper's offload);
- ``windve_predicted_latency_seconds{device}``: the predicted latency of accepted requests (made with or
  without an SLO; only with one does it decide);
- ``windve_dispatch_seconds``: the manager's own decision time (the paper: < 0.1 ms);
- ``windve_batch_next_size{device}`` (``te_batch_next_size``): queries per computed batch, one count a batch;
- ``windve_batch_inference_duration_seconds{device}`` (``te_batch_inference_duration``);
- ``windve_device_info{device,kind,source}`` (source ``measured`` or ``emulated``), ``windve_ready`` (1 once
  every instance is warm), ``windve_slo_seconds`` (0: depth-only admission),
  ``windve_emulated_overruns{device}``.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, float("inf"))
DISPATCH_BUCKETS = (1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, float("inf"))
BATCH_BUCKETS = tuple(float(2 ** i) for i in range(13)) + (float("inf"),)   # TEI's: powers of two to 4096

ERR_OF_STATUS = {429: "overloaded", 503: "unhealthy", 424: "backend", 500: "backend"}     # any other 4xx: validation


class Metrics:
    """One registry per service (tests run several services in one process)."""

    def __init__(self):
        r = self.registry = CollectorRegistry()
        self.requests = Counter("windve_request_count", "Embedding requests received", ["method"], registry=r)
        self.success = Counter("windve_request_success", "Embedding requests answered with embeddings", ["method"],
                               registry=r)
        self.failure = Counter("windve_request_failure", "Embedding requests answered with an error, once each: "
                               "err=overloaded (429), validation (4xx), unhealthy (503), backend (424, 500)",
                               ["err", "status"], registry=r)
        self.queue_size = Gauge("windve_queue_size", "Queries a device holds (waiting or computing)", ["device"], registry=r)
        self.queue_depth = Gauge("windve_queue_depth", "Configured queue depth C_max per device", ["device"], registry=r)
        self.refused = Counter("windve_queue_refused", "Queue manager refusals by rule (depth or deadline); the "
                               "requests of windve_request_failure{err=\"overloaded\"}", ["reason"], registry=r)
        self.device_info = Gauge("windve_device_info", "Device instances (source: measured or emulated)",
                                 ["device", "kind", "source"], registry=r)
        self.accepted = Counter("windve_accepted", "Requests accepted, per device", ["device"], registry=r)
        self.offloaded = Counter("windve_offloaded", "Requests offloaded to the CPU (accelerator refused)", registry=r)
        self.latency = Histogram("windve_request_duration_seconds", "Time in the service per accepted request",
                                 ["device"], buckets=LATENCY_BUCKETS, registry=r)
        self.queue_time = Histogram("windve_request_queue_duration_seconds", "Time waiting for a batch per request",
                                    ["device"], buckets=LATENCY_BUCKETS, registry=r)
        self.inference_time = Histogram("windve_request_inference_duration_seconds",
                                        "Compute time of the batch a request ran in", ["device"],
                                        buckets=LATENCY_BUCKETS, registry=r)
        self.predicted = Histogram("windve_predicted_latency_seconds", "Predicted latency of accepted requests "
                                   "(law + running batch + queue)", ["device"], buckets=LATENCY_BUCKETS, registry=r)
        self.batch = Histogram("windve_batch_next_size", "Queries per computed batch", ["device"],
                               buckets=BATCH_BUCKETS, registry=r)
        self.batch_time = Histogram("windve_batch_inference_duration_seconds", "Compute time per batch", ["device"],
                                    buckets=LATENCY_BUCKETS, registry=r)
        self.dispatch = Histogram("windve_dispatch_seconds", "Queue manager decision time per request",
                                  buckets=DISPATCH_BUCKETS, registry=r)
        self.ready = Gauge("windve_ready", "1 once every instance is warm (/health 200)", registry=r)
        self.slo = Gauge("windve_slo_seconds", "SLO of the deadline admission (0: depth only)", registry=r)
        self.overruns = Gauge("windve_emulated_overruns", "Emulated batches whose cache misses outran the latency law",
                              ["device"], registry=r)

    def request(self, method: str) -> None:
        self.requests.labels(method).inc()

    def failed(self, status: int) -> None:
        """One failed request: a 429 is ``overloaded`` (once), other 4xx ``validation`` by status."""
        err = ERR_OF_STATUS.get(status, "validation" if 400 <= status < 500 else "backend")
        self.failure.labels(err, str(status)).inc()

    def batch_done(self, device: str, n: int, seconds: float) -> None:
        self.batch.labels(device).observe(n)
        self.batch_time.labels(device).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
