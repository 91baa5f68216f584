"""Server-policy variants: one scenario replayed against several server configurations.

A variant's `server` is a partial reference-server config. It is deep-merged onto the
scenario's embedded config (the `config` file, then the inline `server`, then the `nodes` and
`max_batch_size` shorthands), and the result is validated as a whole `ServerConfig` before
anything boots, so a typo in the third variant fails in the first second, not after two drills.
A `null` in a patch removes that key (`pools: {fast: null}` drops the default fast pool).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rushhour.kernel.validation import format_validation_errors
from rushhour.reference_server.config import ConfigError, ServerConfig, merge_pools_onto_defaults, read_config_file
from rushhour.scenarios.spec.model import EmbeddedTarget, Scenario, ScenarioError, TargetSpec, Variant

BASE_FIELD = "target.embedded.server"


@dataclass(frozen=True)
class VariantRun:
    """One variant, resolved: the scenario to run and the server config it boots."""

    name: str
    description: str
    scenario: Scenario
    server: ServerConfig


def deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """`patch` laid over `base`: mappings merge key by key, anything else replaces, None deletes."""
    merged = dict(base)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def config_file_data(target: EmbeddedTarget, base_dir: Path, source: str) -> dict[str, Any]:
    """The YAML mapping of the embedded target's `config` file ({} when there is none)."""
    if target.config is None:
        return {}
    try:
        return read_config_file((base_dir / target.config).resolve())
    except ConfigError as exc:
        raise ScenarioError(f"{source}: target.embedded.config: {exc}") from exc


def validate_server(data: dict[str, Any], *, source: str, where: str) -> ServerConfig:
    """Validate merged data the way the server will load it; errors name `where` and the field."""
    try:
        return ServerConfig.model_validate(merge_pools_onto_defaults(data))
    except ValidationError as exc:
        raise ScenarioError(format_validation_errors(source, exc, prefix=where)) from exc


def embedded_server_data(target: EmbeddedTarget, *, source: str, base_dir: Path) -> dict[str, Any]:
    """The embedded server's partial config with the `nodes`/`max_batch_size` shorthands folded in."""
    data = deep_merge(config_file_data(target, base_dir, source), target.server or {})
    config = validate_server(data, source=source, where=BASE_FIELD)
    pools: dict[str, Any] = {}
    if target.max_batch_size is not None:
        pools = {name: {"max_batch_size": target.max_batch_size} for name in config.pools}
    if target.nodes is not None:
        quality = config.pool_for_tier("quality") or next(iter(config.pools))
        pools = deep_merge(pools, {quality: {"nodes": target.nodes}})
    return deep_merge(data, {"pools": pools}) if pools else data


def check_embedded(scenario: Scenario, *, source: str, base_dir: Path) -> None:
    """Validate the inline server config of an embedded target that has no variants."""
    embedded = scenario.target.embedded
    if embedded is not None and embedded.server is not None:
        embedded_server_data(embedded, source=source, base_dir=base_dir)


def expand_variants(scenario: Scenario, *, source: str, base_dir: Path,
                    only: str | None = None) -> list[VariantRun]:
    """Every variant (or just `only`) as its own scenario; raise ScenarioError on any bad one."""
    if not scenario.variants:
        if only is not None:
            raise ScenarioError(f'{source}: variants: --variant "{only}" given, but the scenario has no variants.')
        return []
    embedded = scenario.target.embedded
    if embedded is None:
        raise ScenarioError(f"{source}: variants: variants change the embedded server's config, "
                            f'so they need target: embedded, not url "{scenario.target.url}".')
    names = [variant.name for variant in scenario.variants]
    if only is not None and only not in names:
        raise ScenarioError(f'{source}: variants: no variant named "{only}"; the variants are {", ".join(names)}.')
    base = embedded_server_data(embedded, source=source, base_dir=base_dir)
    runs = [_resolve(scenario, base, variant, i, source) for i, variant in enumerate(scenario.variants)]
    return [run for run in runs if only is None or run.name == only]


def _resolve(scenario: Scenario, base: dict[str, Any], variant: Variant, index: int, source: str) -> VariantRun:
    data = deep_merge(base, variant.server)
    config = validate_server(data, source=source, where=f"variants[{index}].server")
    described = f"{scenario.description} [variant {variant.name}: {variant.description}]".strip()
    target = TargetSpec(embedded=EmbeddedTarget(server=data))
    single = scenario.model_copy(update={"target": target, "variants": [], "description": described})
    return VariantRun(name=variant.name, description=variant.description, scenario=single, server=config)


def pool_line(config: ServerConfig) -> str:
    """One line per server config: each pool's size, batch size and autoscaling."""
    parts = []
    for name, pool in config.pools.items():
        text = f"{name} {pool.nodes} node(s) x batch {pool.max_batch_size}"
        scale = pool.autoscale
        if scale is not None:
            text += f", autoscale {scale.min_nodes}-{scale.max_nodes}"
            if scale.schedule:
                steps = ", ".join(f"{p.nodes} at {p.at_s if p.at_s is not None else p.at_clock}"
                                  f"{'s' if p.at_s is not None else ''} (warm {p.warm_ahead_s:g} s ahead)"
                                  for p in scale.schedule)
                text += f", schedule [{steps}]"
        parts.append(text)
    routing = f"; routing {config.routing.policy}" if config.routing.policy != "by_mode" else ""
    return "; ".join(parts) + routing


def describe_variants(runs: list[VariantRun]) -> str:
    """The dry-run listing: one entry per variant with the pools it boots."""
    lines = [f"variants   {len(runs)}, run one after another with the same seed and schedule"]
    for run in runs:
        lines.append(f"  {run.name}: {run.description}".rstrip(": "))
        lines.append(f"      {pool_line(run.server)}")
    return "\n".join(lines)
