"""The top level of a profile (experiments/<profile>.yaml) as typed keys: the harness's own settings and
the named datasets the studies refer to, declared once with :func:`bench.core.declaring.keys.key` like every study's
section (no hand-written schema). Each study's section is added to the schema by
:func:`bench.core.declaring.config.validate_profile`, from the study's own ``Params``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .keys import key

_FORMATS = Literal["png", "pdf", "svg"]


@dataclass(frozen=True)
class Dataset:
    """A named dataset: a registered source (`bench data list`) cropped or generated, or `user` files."""

    source: str = key(description="a registered source id (see `bench data list`), or `user` for files declared here")
    n_base: int | None = key(minimum=1, description="prefix crop of the base set (ground truth recomputed)")
    n_query: int | None = key(minimum=1, description="number of queries (prefix of the query set)")
    gt_k: int = key(100, minimum=1, description="neighbours kept in the ground truth")
    seed: int | None = key(minimum=0)
    n_clusters: int | None = key(minimum=1, description="synthetic vectors: clusters")
    dim: int | None = key(minimum=1, description="synthetic vectors: dimension")
    n_passages: int | None = key(minimum=1, description="synthetic text: passages")
    n_topics: int | None = key(minimum=1, description="synthetic text: topics")
    vocab_size: int | None = key(minimum=10, description="synthetic text: vocabulary")
    empty_passages: int | None = key(minimum=0, description="synthetic text: empty passages")
    format: Literal["fvecs", "bvecs", "ivecs", "u8bin", "fbin", "ibin", "i8bin"] | None = key(
        description="user vector datasets: the files' format")
    base: str | None = key(description="user vector datasets: the base vectors")
    queries: str | None = key(description="user vector datasets: the queries")
    groundtruth: str | None = key(description="user vector datasets: the ground truth")
    groundtruth_format: Literal["ivecs", "ibin", "biganngt"] | None = key()
    metric: Literal["l2", "ip"] = key("l2")
    collection: str | None = key(description="user text datasets: the passages")
    qrels: str | None = key(description="user text datasets: the relevance judgements")


@dataclass(frozen=True)
class Profile:
    """A profile of the benchmark harness (experiments/<profile>.yaml): the top-level keys; each study's
    section is validated by the schema generated from its typed parameters. Unknown keys fail."""

    profile: str = key(pattern="^[A-Za-z0-9_-]+$",
                       description="name of the profile; outputs go to results/<profile>/ and figures/<profile>/")
    seed: int = key(20240601, minimum=0,
                    description="base seed for every generator and sampler (recorded in provenance)")
    threads: int = key(2, minimum=1,
                       description="thread count for measured CPU code (faiss, torch, BLAS), set explicitly")
    processes: int = key(1, minimum=1, description=(
        "fresh processes, run one after another, over which a step that can repeat cheaply (declared "
        "processes=True) splits its measured repeats, so its intervals cover the noise between runs, not only "
        "within one"))
    data_dir: str = key("data", description="downloads go to <data_dir>/raw/, prepared datasets and indexes to "
                                            "<data_dir>/<profile>/")
    results_dir: str = key("results")
    figures_dir: str = key("figures")
    figure_formats: tuple[_FORMATS, ...] = key(
        ["png", "pdf"], min_items=1, unique_items=True, contains={"const": "png"},
        description="formats each figure is saved in (png always, for the report); pdf/svg for papers")
    mirror: str | None = key(None, description="a directory or base URL that replaces the host part of every "
                                               "download URL (air-gapped clusters)")
    datasets: dict[str, Dataset] = key({}, description="named datasets the studies refer to")
