"""load_config: defaults, CLI overrides, and errors that name the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from rushhour.reference_server.config import ConfigError, load_config


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "server.yaml"
    path.write_text(text)
    return path


def test_load_config_defaults_without_a_file() -> None:
    config = load_config()
    assert config.pools["quality"].model == "quality" and config.pools["quality"].nodes == 2
    assert config.pools["fast"].model == "fast" and config.pools["fast"].nodes == 1
    assert config.admission.default_priority == "free"
    assert config.pool_for_tier("fast") == "fast"


def test_load_config_empty_file_means_defaults(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, ""))
    assert config.pools["quality"].nodes == 2


def test_load_config_reads_values_from_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "port: 9123\ncache:\n  ttl_s: 5\nbreaker:\n  open_s: 0.5\n")
    config = load_config(path)
    assert config.port == 9123
    assert config.cache.ttl_s == 5.0
    assert config.cache.max_entries == 50_000  # the rest of the section keeps its defaults
    assert config.breaker.open_s == 0.5


def test_load_config_nodes_override_sizes_the_quality_pool() -> None:
    config = load_config(nodes=5)
    assert config.pools["quality"].nodes == 5
    assert config.pools["fast"].nodes == 1


def test_load_config_nodes_override_finds_the_quality_pool_by_model(tmp_path: Path) -> None:
    path = _write(tmp_path, "pools:\n  quality: null\n  fast: null\n  cpu:\n    model: fast\n  gpu:\n    model: quality\n    nodes: 1\n")
    config = load_config(path, nodes=3)
    assert config.pools["gpu"].nodes == 3
    assert config.pools["cpu"].nodes == 1


def test_load_config_max_batch_size_override_applies_to_every_pool() -> None:
    config = load_config(max_batch_size=32)
    assert {name: pool.max_batch_size for name, pool in config.pools.items()} == {"quality": 32, "fast": 32}


def test_load_config_host_and_port_overrides(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, "port: 9000\n"), host="0.0.0.0", port=9001)
    assert (config.host, config.port) == ("0.0.0.0", 9001)


def test_load_config_invalid_yaml_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "pools: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML") as info:
        load_config(path)
    assert str(path) in str(info.value)


def test_load_config_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = _write(tmp_path, "- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping") as info:
        load_config(path)
    assert str(path) in str(info.value)


def test_load_config_missing_file_names_it(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    with pytest.raises(ConfigError, match="cannot read") as info:
        load_config(path)
    assert str(path) in str(info.value)


def test_load_config_unknown_field_names_the_file_and_the_path(tmp_path: Path) -> None:
    path = _write(tmp_path, "pools:\n  quality:\n    model: quality\n    max_batch: 4\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message
    assert "pools.quality.max_batch" in message


def test_load_config_bad_value_names_the_file_and_the_path(tmp_path: Path) -> None:
    path = _write(tmp_path, "pools:\n  quality:\n    model: quality\n    max_batch_size: 0\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: pools.quality.max_batch_size:")


def test_load_config_bad_model_names_the_field(tmp_path: Path) -> None:
    path = _write(tmp_path, "pools:\n  quality:\n    model: huge\n")
    with pytest.raises(ConfigError, match=r"pools\.quality\.model"):
        load_config(path)


def test_load_config_unknown_default_priority_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "admission:\n  default_priority: vip\n")
    with pytest.raises(ConfigError, match="vip") as info:
        load_config(path)
    assert "admission" in str(info.value)


def test_load_config_no_pools_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="at least one pool"):
        load_config(_write(tmp_path, "pools:\n  quality: null\n  fast: null\n"))


def test_load_config_pool_override_keeps_the_other_defaults(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, "pools:\n  quality:\n    max_batch_size: 4\n"))
    assert config.pools["quality"].max_batch_size == 4 and config.pools["quality"].nodes == 2
    assert config.pools["fast"].nodes == 1


def test_load_config_reports_every_bad_field(tmp_path: Path) -> None:
    path = _write(tmp_path, "port: -1\ncache:\n  ttl_s: 0\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "port" in str(info.value) and "cache.ttl_s" in str(info.value)


def test_load_config_bad_override_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="max_batch_size"):
        load_config(max_batch_size=0)


def test_load_config_remote_pool_from_a_static_list_or_a_service(tmp_path: Path) -> None:
    path = tmp_path / "server.yaml"
    path.write_text("pools:\n  quality: {model: quality, remote: ['http://node-a.rushhour.invalid:9000', 'http://node-b.rushhour.invalid:9000']}\n"
                    "  fast: {model: fast, kubernetes: {service: rushhour-fast}}\n")
    config = load_config(path)
    assert config.pools["quality"].is_remote and config.pools["quality"].remote == ["http://node-a.rushhour.invalid:9000", "http://node-b.rushhour.invalid:9000"]
    assert config.pools["fast"].is_remote and config.pools["fast"].kubernetes is not None
    assert config.pools["fast"].kubernetes.port == "http" and config.pools["fast"].kubernetes.namespace is None


@pytest.mark.parametrize(("pool", "message"), [
    ("{model: fast, remote: ['10.0.0.1:9000']}", 'remote node "10.0.0.1:9000" is not an http:// or https:// URL'),
    ("{model: fast, remote: ['http://a:1', 'http://a:1']}", "remote lists a node twice"),
    ("{model: fast, remote: ['http://a:1'], kubernetes: {service: s}}", "not both"),
    ("{model: fast, kubernetes: {service: s}, autoscale: {min_nodes: 1}}", "autoscale sizes local pools only"),
])
def test_load_config_remote_pool_errors_name_the_pool(tmp_path: Path, pool: str, message: str) -> None:
    path = tmp_path / "server.yaml"
    path.write_text(f"pools:\n  fast: {pool}\n")
    with pytest.raises(ConfigError, match="pools.fast") as caught:
        load_config(path)
    assert message in str(caught.value)


def test_load_config_redis_url_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "server.yaml"
    path.write_text("cache: {redis_url: 'redis://file:6379/0', ttl_s: 30}\n")
    monkeypatch.setenv("RUSHHOUR_REDIS_URL", "redis://env:6379/1")
    config = load_config(path)
    assert config.cache.redis_url == "redis://env:6379/1" and config.cache.ttl_s == 30
    monkeypatch.setenv("RUSHHOUR_REDIS_URL", "")
    assert load_config(path).cache.redis_url is None
    monkeypatch.delenv("RUSHHOUR_REDIS_URL")
    assert load_config(path).cache.redis_url == "redis://file:6379/0"


def test_load_config_default_quality_pool_batches_continuously_with_chunked_prefill(tmp_path: Path) -> None:
    config = load_config()
    quality, fast = config.pools["quality"], config.pools["fast"]
    assert (quality.batching, quality.max_prefill_tokens) == ("continuous", 128)
    assert (fast.batching, fast.max_prefill_tokens) == ("continuous", 128)
    custom = load_config(_write(tmp_path, "pools:\n  quality: {batching: dynamic}\n  extra: {model: quality}\n"))
    assert custom.pools["quality"].batching == "dynamic" and custom.pools["extra"].batching == "continuous"


@pytest.mark.parametrize("tokens", [1, 3])
def test_load_config_prefill_budget_too_small_names_the_field(tmp_path: Path, tokens: int) -> None:
    with pytest.raises(ConfigError, match=rf"pools\.quality.*max_prefill_tokens is {tokens}; give 0"):
        load_config(_write(tmp_path, f"pools:\n  quality: {{max_prefill_tokens: {tokens}}}\n"))
