"""Load a traffic model from a YAML file, a bundled name, or a "constant:RPS" spec string."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from rushhour.kernel.validation import format_validation_errors
from rushhour.kernel.yamlfile import DuplicateKeyError, StrictLoader, TooDeepError, yaml_problem
from rushhour.traffic_models.errors import TrafficModelError
from rushhour.traffic_models.events import EVENT_TYPES
from rushhour.traffic_models.model import ReplaySpec, TrafficModel
from rushhour.traffic_models.replay import load_trace

BUNDLED_DIR = Path(__file__).resolve().parent
CONSTANT_PREFIX = "constant:"


class _ModelYamlLoader(StrictLoader):
    """StrictLoader (no key twice) that keeps "19:30" a string: YAML 1.1 would read it as base-60
    integer 1170."""


def _int_or_clock(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | str:
    if ":" in node.value:
        return str(node.value)
    return yaml.SafeLoader.construct_yaml_int(loader, node)


def _float_or_clock(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float | str:
    if ":" in node.value:
        return str(node.value)
    return yaml.SafeLoader.construct_yaml_float(loader, node)


_ModelYamlLoader.add_constructor("tag:yaml.org,2002:int", _int_or_clock)
_ModelYamlLoader.add_constructor("tag:yaml.org,2002:float", _float_or_clock)


def bundled_models() -> list[str]:
    """Names of the models shipped beside this module (usable as a spec)."""
    return sorted(path.stem for path in BUNDLED_DIR.glob("*.yaml"))


def load_traffic_model(spec: str | Path) -> TrafficModel:
    """A validated model from a path, a bundled model name, or "constant:RPS"."""
    if isinstance(spec, str) and spec.startswith(CONSTANT_PREFIX):
        return constant_model(spec)
    path = _resolve(spec)
    data = _read_yaml(path)
    if isinstance(data, dict):
        data.setdefault("name", path.stem)
    model = validate_model(data, source=path.name)
    if model.replay is not None:
        _attach_replay(model, model.replay, path)
    return model


def constant_model(spec: str) -> TrafficModel:
    """An open-ended model with a flat rate: "constant:20" is 20 requests per second."""
    text = spec[len(CONSTANT_PREFIX) :]
    try:
        rps = float(text)
    except ValueError:
        rps = -1.0
    if not rps > 0 or rps == float("inf"):
        raise TrafficModelError(f'The traffic spec "{spec}" needs a positive rate, e.g. "constant:20".')
    return TrafficModel(name=f"constant-{text}", duration=None, base_rps=rps, curve="flat")


def validate_model(data: Any, *, source: str) -> TrafficModel:
    """TrafficModel from parsed YAML, with pydantic's errors rewritten as `file: field: problem`."""
    if not isinstance(data, dict):
        raise TrafficModelError(f"{source}: the file must hold a mapping of fields, not {type(data).__name__}.")
    try:
        return TrafficModel.model_validate(data)
    except ValidationError as exc:
        message = format_validation_errors(source, exc, special=_special, skip=frozenset(EVENT_TYPES))
        raise TrafficModelError(message) from exc


def _resolve(spec: str | Path) -> Path:
    path = Path(spec)
    if path.suffix in {".yaml", ".yml"} or path.exists():
        if not path.is_file():
            raise TrafficModelError(f"{path}: the traffic model file does not exist.")
        return path
    bundled = BUNDLED_DIR / f"{spec}.yaml"
    if bundled.is_file():
        return bundled
    known = ", ".join(bundled_models())
    raise TrafficModelError(
        f'"{spec}" is neither a traffic model file nor a bundled model ({known}) nor "constant:RPS".'
    )


def _read_yaml(path: Path) -> Any:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_ModelYamlLoader)
    except (DuplicateKeyError, TooDeepError) as exc:
        raise TrafficModelError(f"{path.name}: {yaml_problem(exc)}.") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise TrafficModelError(f"{path.name}: the file is not valid YAML{where}.") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise TrafficModelError(f"{path.name}: the file could not be read ({exc}).") from exc
    if data is None:
        raise TrafficModelError(f"{path.name}: the file is empty.")
    return data


def _attach_replay(model: TrafficModel, replay: ReplaySpec, path: Path) -> None:
    """Resolve the log path beside the model file and take the model's length from the log."""
    if not replay.path.is_absolute():
        replay.path = (path.parent / replay.path).resolve()
    try:
        trace = load_trace(replay.path, replay.format, replay.chars_per_token)
    except TrafficModelError as exc:
        raise TrafficModelError(f"{path.name}: replay.path: {exc}") from exc
    model.duration = trace.span_s


def _special(err: dict[str, Any]) -> str | None:
    """Traffic-model wording for the errors a person meets in event lists and inputs."""
    kind = err["type"]
    if kind == "union_tag_not_found":
        return f"needs a type, one of {', '.join(EVENT_TYPES)}"
    if kind == "union_tag_invalid":
        return f"type must be one of {', '.join(EVENT_TYPES)} (got {(err.get('ctx') or {}).get('tag')!r})"
    if kind == "finite_number":
        return f"must be a finite number (got {err['input']!r})"
    if kind == "literal_error" and err["loc"][-1] == "input":
        return f"must be 'text' (got {err['input']!r}); image and speech inputs are planned, not supported yet"
    return None
