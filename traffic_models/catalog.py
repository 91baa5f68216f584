"""The text catalog: ids drawn Zipf-style, and per-id lengths that never change.

A text id fixes its kind and its length (both derived from the id by hashing, not by the
run's random stream), so a cache in front of the service sees the same text every time
the same id comes round, whatever the schedule's seed.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from rushhour.traffic_models.mixspec import LengthSpec

KIND_ID_STRIDE = 1 << 40
UNIQUE_ID_BASE = 1 << 50
REPLAY_ID_BASE = 1 << 52
_U64 = np.uint64


def splitmix64(values: np.ndarray) -> np.ndarray:
    """A well-mixed 64-bit hash of each value (wrapping uint64 arithmetic on purpose)."""
    x = values.astype(_U64) + _U64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> _U64(27))) * _U64(0x94D049BB133111EB)
    return x ^ (x >> _U64(31))


def unit_uniform(ids: np.ndarray, salt: int) -> np.ndarray:
    """A uniform number in (0, 1) per id, the same for the same (id, salt)."""
    mixed = splitmix64(np.asarray(ids, dtype=np.int64).astype(_U64) ^ _U64(salt & (2**64 - 1)))
    return ((mixed >> _U64(11)).astype(np.float64) + 0.5) * 2.0**-53


def text_lengths(ids: np.ndarray, spec: LengthSpec, salt: int) -> np.ndarray:
    """Lognormal length of each text id, clipped to the kind's [min, max] characters."""
    # imported here: scipy.special costs 0.14 s of CPU to import, and every load-generator
    # process imports this module for the catalog's hashing alone
    from scipy.special import ndtri

    z = ndtri(unit_uniform(ids, salt))
    raw = np.rint(spec.median * np.exp(spec.sigma * z))
    return np.clip(raw, spec.min, spec.max).astype(np.int32)


@lru_cache(maxsize=16)
def _zipf_cdf(size: int, exponent: float) -> np.ndarray:
    weights = np.arange(1, size + 1, dtype=np.float64) ** -exponent
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


def zipf_ranks(size: int, exponent: float, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` catalog ranks in [0, size): rank k drawn with probability proportional to 1/(k+1)^s."""
    ranks = np.searchsorted(_zipf_cdf(size, exponent), rng.random(count), side="right")
    return np.minimum(ranks, size - 1).astype(np.int64)


def catalog_sizes(total: int, fractions: np.ndarray) -> np.ndarray:
    """Split the catalog between kinds in proportion to their traffic share (at least one each)."""
    return np.maximum(np.rint(total * fractions), 1).astype(np.int64)
