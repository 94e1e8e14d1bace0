"""The request and response shapes of the WindVE service's HTTP layer (Figure 3 B's service framework), as
pydantic models named and shaped after text-embeddings-inference's (TEI's ``router/src/http/types.rs`` and
``router/src/lib.rs``), so the OpenAPI document (:mod:`.openapi`) and the requests' validation come from one
declaration and cannot drift apart.

Request models are strict, as TEI's serde deserialiser is: a number is not a string, ``"yes"`` is not a
boolean, ``16.0`` is not an integer; unknown fields are ignored, as TEI ignores them. :func:`describe` puts a
validation failure in words naming the field (``missing field `inputs```, as serde words it); the HTTP layer
answers it with TEI's 422 ``validation``. Responses are built by the handlers without these models (an
embedding batch is not serialised twice); the tests check the answers against the document's schemas.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, RootModel, ValidationError, ValidationInfo
from pydantic_core import PydanticCustomError

ErrorType = Literal["unhealthy", "backend", "overloaded", "validation", "tokenizer", "empty", "busy"]
_JSON_TYPE = {"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean",
              "list": "a list", "dict": "an object", "NoneType": "null"}


def _got(v: Any) -> str:
    return _JSON_TYPE.get(type(v).__name__, type(v).__name__)


def _texts(v: Any, info: ValidationInfo) -> Any:
    """A string or a list of strings, refused with the field's name otherwise (TEI's `Input`)."""
    if isinstance(v, str):
        return v
    if not isinstance(v, list):
        raise PydanticCustomError("texts", "`{f}` must be a string or a list of strings, got {g}",
                                  {"f": info.field_name, "g": _got(v)})
    for i, t in enumerate(v):
        if not isinstance(t, str):
            raise PydanticCustomError("texts", "`{f}[{i}]` must be a string, got {g}",
                                      {"f": info.field_name, "i": i, "g": _got(t)})
    return v


def _is_id(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _ids(v: Any, info: ValidationInfo) -> Any:
    """Token ids: one list of ids or a batch of lists (TEI's `InputIds`), refused with the position of
    the first that is not an integer >= 0."""
    shape = "`ids` must be a list of token ids or a list of lists of token ids, got {g}"
    if not isinstance(v, list):
        raise PydanticCustomError("ids", shape, {"g": _got(v)})
    batch = bool(v) and isinstance(v[0], list)
    for i, row in enumerate(v):
        if isinstance(row, list) != batch:
            raise PydanticCustomError("ids", shape, {"g": "a list mixing ids and lists"})
        for j, x in enumerate(row if batch else [row]):
            if not _is_id(x):
                where = f"[{i}][{j}]" if batch else f"[{i}]"
                raise PydanticCustomError("ids", "`ids{w}` must be a token id (an integer >= 0), got {x}",
                                          {"w": where, "x": repr(x)})
    return v


Texts = Annotated[str | list[str], BeforeValidator(_texts),
                  Field(description="A string or a batch of strings", examples=["What is Deep Learning?"])]
TokenId = Annotated[int, Field(ge=0)]
Dimensions = Annotated[int | None, Field(
    ge=1, description="Keep the first `dimensions` values of each embedding, then normalise. Honoured for a "
                      "model trained for truncation (Matryoshka); the model's own dimension is always accepted; "
                      "any other value is refused (422) for a model not so trained. Null: the full embedding.")]


class _Request(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class EmbedRequest(_Request):
    """`POST /embed` (and `POST /`)."""

    inputs: Texts
    truncate: bool = Field(False, description="cut a text beyond the model's max tokens instead of refusing it")
    normalize: bool = True
    dimensions: Dimensions = None


class EmbedResponse(RootModel[list[list[float]]]):
    """One embedding per input."""


class OpenAICompatRequest(_Request):
    """`POST /v1/embeddings` (and `/embeddings`): OpenAI's embeddings request."""

    input: Texts
    model: str | None = Field(None, description="ignored: the service serves one model (TEI warns likewise)")
    user: str | None = None
    encoding_format: Literal["float", "base64"] = Field(
        "float", description="base64: the little-endian float32 bytes of each embedding")
    dimensions: Dimensions = None


class OpenAICompatEmbedding(BaseModel):
    object: Literal["embedding"]
    embedding: list[float] | str = Field(description="floats, or a base64 string with encoding_format base64")
    index: int


class OpenAICompatUsage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class OpenAICompatResponse(BaseModel):
    object: Literal["list"]
    data: list[OpenAICompatEmbedding]
    model: str = Field(description="the served model name (the model's hub id unless the service was given one)")
    usage: OpenAICompatUsage


class TokenizeRequest(_Request):
    inputs: Texts
    add_special_tokens: bool = True


class SimpleToken(BaseModel):
    id: int
    text: str
    special: bool
    start: int | None = Field(description="character offset in the text; null for a special token")
    stop: int | None


class TokenizeResponse(RootModel[list[list[SimpleToken]]]):
    """Per input text, its tokens."""


class DecodeRequest(_Request):
    """`POST /decode`: the inverse of `/tokenize`."""

    ids: Annotated[list[TokenId] | list[list[TokenId]], BeforeValidator(_ids),
                   Field(description="the ids of one text, or a batch of them", examples=[[101, 7592, 2088, 102]])]
    skip_special_tokens: bool = True


class DecodeResponse(RootModel[list[str]]):
    """One text per list of ids."""


class ErrorResponse(BaseModel):
    """TEI's error body."""

    error: str
    error_type: ErrorType


class OpenAICompatErrorResponse(BaseModel):
    """TEI's error body on the OpenAI routes."""

    message: str
    code: int
    type: ErrorType


class HealthResponse(BaseModel):
    status: Literal["ok"]


class UnhealthyResponse(ErrorResponse):
    """503 while warming, after a failed warm-up, or when an instance stopped."""

    status: Literal["warming", "failed", "unhealthy"]


class EmbeddingModel(BaseModel):
    pooling: str


class ModelType(BaseModel):
    embedding: EmbeddingModel


class Info(BaseModel):
    """`GET /info`: TEI's `Info` fields, the service's own configuration under `windve`."""

    model_id: str = Field(description="the model's hub id where known (else its local path, as TEI gives it)",
                          examples=["sentence-transformers/all-MiniLM-L6-v2"])
    model_sha: str | None
    model_dtype: str
    served_model_name: str
    model_type: ModelType
    max_concurrent_requests: int
    max_input_length: int
    max_batch_tokens: int
    max_batch_requests: int | None
    max_client_batch_size: int
    auto_truncate: bool
    tokenization_workers: int
    version: str
    sha: str | None
    docker_label: str | None
    windve: dict[str, Any] = Field(description="the WindVE service's configuration (as POST /admin/config answers)")


class EmulatedLaw(_Request):
    alpha: float = Field(ge=0, description="seconds per query")
    beta: float = Field(ge=0, description="seconds")


class AdminConfig(_Request):
    """`POST /admin/config`: the benchmark control, applied while no request is in flight."""

    model_config = ConfigDict(strict=True, extra="forbid")
    depths: dict[str, int] | None = Field(None, description="queue depth C_max per device")
    offload: bool | None = None
    active: list[str] | None = None
    emulated_law: EmulatedLaw | None = None
    cpu_threads: int | None = Field(None, ge=1)
    reverse_cores: bool | None = None
    batch_delay_ms: float | None = Field(None, ge=0)
    slo_s: float | None = Field(None, description="deadline admission's SLO (s); null: depth admission only")


class Decisions(BaseModel):
    """Every request's Algorithm 1 decision time (microseconds) since the start or the last clear."""

    dispatch_us: list[float]
    dispatch_cpu_us: list[float]


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def describe(exc: ValidationError) -> str:
    """The first error of `exc` in words naming the field (a missing one in serde's words, as TEI answers)."""
    err = exc.errors(include_url=False)[0]
    where = _where(err["loc"])
    if err["type"] == "missing":
        return f"missing field `{where}`"
    if err["type"] == "extra_forbidden":
        return f"unknown field `{where}`"
    if err["type"] in ("texts", "ids"):
        return err["msg"]
    return f"`{where}`: {err['msg']}, got {err['input']!r}"

