"""Prometheus metrics of the WindVE service (``GET /metrics``), in the spirit of text-embeddings-
inference's ``te_*`` metrics: per-device queue sizes and depths, accepted / offloaded / rejected
counts, per-device latency and batch-size histograms, and the queue manager's own decision time."""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, float("inf"))
DISPATCH_BUCKETS = (1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, float("inf"))


class Metrics:
    """One registry per service (tests run several services in one process)."""

    def __init__(self):
        r = self.registry = CollectorRegistry()
        self.queue_size = Gauge("windve_queue_size", "Queries a device holds (waiting or computing)", ["device"], registry=r)
        self.queue_depth = Gauge("windve_queue_depth", "Configured queue depth C_max per device", ["device"], registry=r)
        self.device_info = Gauge("windve_device_info", "Device instances (source: measured or emulated)",
                                 ["device", "kind", "source"], registry=r)
        self.accepted = Counter("windve_accepted", "Requests accepted, per device", ["device"], registry=r)
        self.offloaded = Counter("windve_offloaded", "Requests offloaded to the CPU (accelerator queue full)", registry=r)
        self.rejected = Counter("windve_rejected", "Requests refused with 429 (all queues full)", registry=r)
        self.errors = Counter("windve_request_errors", "Requests refused as invalid", ["status"], registry=r)
        self.latency = Histogram("windve_request_duration_seconds", "Time in the service per request, per device",
                                 ["device"], buckets=LATENCY_BUCKETS, registry=r)
        self.batch = Histogram("windve_batch_size", "Queries per computed batch", ["device"],
                               buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, float("inf")), registry=r)
        self.dispatch = Histogram("windve_dispatch_seconds", "Queue manager decision time per request",
                                  buckets=DISPATCH_BUCKETS, registry=r)
        self.overruns = Gauge("windve_emulated_overruns", "Emulated batches whose cache misses outran the latency law",
                              ["device"], registry=r)

    def render(self) -> bytes:
        return generate_latest(self.registry)
