"""Build a tier's ONNX files once into a cache directory and reuse them afterwards.

The directory name carries the spec hash, so a changed spec (or onnx/onnxruntime upgrade) lands
in a fresh directory instead of silently reusing stale files. A build is written to a private
temporary directory and renamed into place; rename is atomic, so two processes building at once
both end up with one complete directory and neither ever sees a half-written one.

A GPU tier also has an fp16 build (its own directory, `-fp16`), made from the fp32 graphs with
ONNX Runtime's converter; graph inputs and outputs stay fp32, so callers feed the same arrays.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from .spec import ModelSpec, get_spec, spec_hash

__all__ = [
    "CACHE_ENV",
    "DECODER_FILE",
    "DEFAULT_CACHE_DIR",
    "ENCODER_FILE",
    "PREFILL_ATTEND_FILE",
    "PREFILL_PROJECT_FILE",
    "SPEC_FILE",
    "build_model",
    "model_dir",
    "resolve_cache_dir",
]

CACHE_ENV = "RUSHHOUR_MODEL_CACHE"
DEFAULT_CACHE_DIR = Path("~/.cache/rushhour/models")
ENCODER_FILE = "encoder.onnx"
DECODER_FILE = "decoder_step.onnx"
PREFILL_PROJECT_FILE = "encoder_project.onnx"
PREFILL_ATTEND_FILE = "encoder_attend.onnx"
SPEC_FILE = "spec.json"

if TYPE_CHECKING:
    import onnx


def resolve_cache_dir(cache_dir: Path | None = None) -> Path:
    """The argument if given, else $RUSHHOUR_MODEL_CACHE, else ~/.cache/rushhour/models."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR).expanduser()


def model_dir(spec: ModelSpec, cache_dir: Path | None = None, *, fp16: bool = False) -> Path:
    """Where the build of `spec` (its fp16 build with `fp16`) lives, whether or not it exists yet."""
    return resolve_cache_dir(cache_dir) / f"{spec.name}{'-fp16' if fp16 else ''}-{spec_hash(spec)}"


def build_model(tier: str, *, cache_dir: Path | None = None, fp16: bool = False) -> Path:
    """Return the directory holding encoder.onnx and decoder_step.onnx, building it if absent."""
    return ensure_built(get_spec(tier), cache_dir, fp16=fp16)


def ensure_built(spec: ModelSpec, cache_dir: Path | None = None, *, fp16: bool = False) -> Path:
    """Build `spec` unless a complete build is already in place; safe under concurrency."""
    if fp16 and spec.int8:
        raise ValueError(f"The {spec.tier} tier is INT8; it has no fp16 build.")
    target = model_dir(spec, cache_dir, fp16=fp16)
    if (target / SPEC_FILE).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        _write_build(spec, staging, fp16=fp16)
        os.rename(staging, target)
    except OSError as exc:
        if not (target / SPEC_FILE).is_file():  # not simply another process winning the race
            raise OSError(
                f"Could not install the model build into {str(target)!r}; if that directory "
                "exists without spec.json, remove it and retry."
            ) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _write_build(spec: ModelSpec, out: Path, *, fp16: bool) -> None:
    """Write the graphs (quantized for INT8 tiers, halved for fp16) and, last, the spec stamp: the
    encoder, the decoder step, and the encoder's two chunked-prefill stages. The onnx package is
    imported here, not with the module: a server that finds its build in place never loads it."""
    import onnx

    from .graphs import build_decoder_step, build_encoder, build_prefill_stages

    project, attend = build_prefill_stages(spec)
    graphs = ((build_encoder(spec), ENCODER_FILE), (build_decoder_step(spec), DECODER_FILE),
              (project, PREFILL_PROJECT_FILE), (attend, PREFILL_ATTEND_FILE))
    for graph, filename in graphs:
        if spec.int8:
            _quantize(graph, out / filename)
        else:
            onnx.save_model(_to_fp16(graph) if fp16 else graph, str(out / filename))
    stamp = {"spec": dataclasses.asdict(spec), "hash": spec_hash(spec), "precision": "fp16" if fp16 else ("int8" if spec.int8 else "fp32")}
    (out / SPEC_FILE).write_text(json.dumps(stamp, indent=2, sort_keys=True))


def _to_fp16(graph: onnx.ModelProto) -> onnx.ModelProto:
    """fp16 weights and arithmetic, fp32 at the graph's inputs and outputs. Constants are clamped
    to fp16's range, so the -1e9 attention mask becomes -1e4, whose softmax weight is still 0."""
    from onnxruntime.transformers.float16 import convert_float_to_float16

    return convert_float_to_float16(graph, keep_io_types=True)


class _DropPreprocessHint(logging.Filter):
    """quantize_dynamic logs a pre-processing suggestion on every call; it is noise here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def _quantize(graph: onnx.ModelProto, path: Path) -> None:
    """INT8 dynamic quantization of the MatMuls whose B is a weight (activation x activation
    MatMuls stay fp32, so no per-batch scale couples rows)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    hint = _DropPreprocessHint()
    root = logging.getLogger()
    root.addFilter(hint)
    try:
        quantize_dynamic(
            graph,
            path,
            op_types_to_quantize=["MatMul"],
            weight_type=QuantType.QInt8,
            extra_options={"MatMulConstBOnly": True},
        )
    finally:
        root.removeFilter(hint)
