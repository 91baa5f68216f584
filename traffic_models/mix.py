"""Draw the request mix for a batch of arrivals: kind, text, size, priority, tenant, mode."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rushhour.traffic_models.catalog import (
    KIND_ID_STRIDE,
    REPLAY_ID_BASE,
    UNIQUE_ID_BASE,
    catalog_sizes,
    text_lengths,
    zipf_ranks,
)
from rushhour.traffic_models.errors import TrafficModelError
from rushhour.traffic_models.mixspec import MixSpec

OUTPUT_SALT = 7919


def pick(fractions: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """Category codes drawn with the given probabilities."""
    cdf = np.cumsum(fractions) / np.sum(fractions)
    return np.minimum(np.searchsorted(cdf, rng.random(count), side="right"), len(cdf) - 1)


def tenant_names(mix: MixSpec) -> list[str]:
    """Every tenant, e.g. paid-0..paid-3, free-0..free-15, in priority order."""
    return [f"{name}-{i}" for name, spec in mix.priorities.items() for i in range(spec.tenants)]


def draw_texts(mix: MixSpec, count: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Kind codes, text ids and their fixed lengths for generated traffic."""
    kinds = list(mix.kinds.values())
    fractions = np.array([k.fraction for k in kinds])
    kind = pick(fractions, count, rng)
    text_id = np.empty(count, dtype=np.int64)
    chars = np.empty(count, dtype=np.int32)
    rep = mix.repetition
    sizes = catalog_sizes(rep.catalog_size, fractions) if rep else None
    salt = rep.seed if rep else 0
    for code, spec in enumerate(kinds):
        rows = np.flatnonzero(kind == code)
        if rep is not None and sizes is not None:
            ranks = zipf_ranks(int(sizes[code]), rep.exponent, rows.size, rng)
            text_id[rows] = code * KIND_ID_STRIDE + ranks
        else:
            text_id[rows] = rng.integers(UNIQUE_ID_BASE, 2 * UNIQUE_ID_BASE, rows.size)
        chars[rows] = text_lengths(text_id[rows], spec.chars, salt)
    return {"kind": kind, "text_id": text_id, "chars": chars, "max_tokens": output_lengths(mix, kind, text_id)}


def output_lengths(mix: MixSpec, kind: np.ndarray, text_id: np.ndarray) -> np.ndarray:
    """Each request's `max_tokens` from its kind's distribution (0 where the kind has none).

    Drawn from the text id, not the run's random stream, so adding a distribution never moves
    the arrivals or texts of a seed: the same text always asks for the same length.
    """
    out = np.zeros(kind.size, dtype=np.int32)
    for code, spec in enumerate(mix.kinds.values()):
        rows = np.flatnonzero(kind == code)
        if spec.max_tokens is not None and rows.size:
            out[rows] = text_lengths(text_id[rows], spec.max_tokens, OUTPUT_SALT)
    return out


def replayed_texts(mix: MixSpec, chars: np.ndarray, rows: np.ndarray,
                   generated: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Kinds from logged sizes (the smallest kind whose max fits), one text id per log row; the
    logged output length (the Azure trace's GeneratedTokens) as `max_tokens` when there is one."""
    maxima = np.array([k.chars.max for k in mix.kinds.values()])
    by_max = np.argsort(maxima, kind="stable")
    slot = np.minimum(np.searchsorted(maxima[by_max], chars, side="left"), maxima.size - 1)
    kind = by_max[slot]
    text_id = REPLAY_ID_BASE + rows.astype(np.int64)
    max_tokens = generated.astype(np.int32) if generated is not None else output_lengths(mix, kind, text_id)
    return {"kind": kind, "text_id": text_id, "chars": chars.astype(np.int32), "max_tokens": max_tokens}


def priority_codes(mix: MixSpec, logged: np.ndarray, source: str) -> np.ndarray:
    """Codes of logged priority names; a name the model does not define is an error."""
    names = list(mix.priorities)
    codes = pd.Categorical(logged, categories=names).codes
    if (codes < 0).any():
        unknown = sorted(set(logged[codes < 0]))[:3]
        raise TrafficModelError(
            f"{source}: column priority has {unknown}, which mix.priorities ({names}) does not define."
        )
    return codes.astype(np.int64)


def draw_people(
    mix: MixSpec, count: int, rng: np.random.Generator, priority: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Priority, tenant, mode and deadline codes; priorities come from the log when it has them."""
    specs = list(mix.priorities.values())
    if priority is None:
        priority = pick(np.array([p.fraction for p in specs]), count, rng)
    tenants = np.array([p.tenants for p in specs])
    first_tenant = np.concatenate([[0], np.cumsum(tenants)[:-1]])
    tenant = first_tenant[priority] + np.floor(rng.random(count) * tenants[priority]).astype(np.int64)
    mode = pick(np.array(list(mix.modes.values())), count, rng)
    deadline = np.array([p.deadline_ms for p in specs], dtype=np.int32)[priority]
    return {"priority": priority, "tenant": tenant, "mode": mode, "deadline_ms": deadline}


def mix_frame(mix: MixSpec, texts: dict[str, np.ndarray], people: dict[str, np.ndarray]) -> pd.DataFrame:
    """The schedule's mix columns, with string columns as categoricals (cheap for a million rows)."""
    return pd.DataFrame(
        {
            "kind": pd.Categorical.from_codes(texts["kind"], categories=pd.Index(list(mix.kinds))),
            "chars": texts["chars"],
            "priority": pd.Categorical.from_codes(people["priority"], categories=pd.Index(list(mix.priorities))),
            "mode": pd.Categorical.from_codes(people["mode"], categories=pd.Index(list(mix.modes))),
            "text_id": texts["text_id"],
            "tenant": pd.Categorical.from_codes(people["tenant"], categories=pd.Index(tenant_names(mix))),
            "deadline_ms": _deadlines(mix, texts["kind"], people["deadline_ms"]),
            "max_tokens": texts["max_tokens"],
        }
    )


def _deadlines(mix: MixSpec, kind: np.ndarray, deadline_ms: np.ndarray) -> np.ndarray:
    """The priority class's deadline, stretched by the kind's `deadline_factor`."""
    factor = np.array([k.deadline_factor for k in mix.kinds.values()], dtype=np.float64)[kind]
    return np.rint(deadline_ms * factor).astype(np.int32)
