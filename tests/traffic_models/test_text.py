from __future__ import annotations

import numpy as np
import pytest

from rushhour.traffic_models import text_for


@pytest.mark.parametrize("chars", [0, 1, 2, 5, 80, 999, 20_000])
def test_text_for_has_exactly_the_requested_length(chars: int) -> None:
    assert len(text_for(7, chars)) == chars


def test_text_for_is_deterministic_per_id_and_differs_between_ids() -> None:
    assert text_for(123, 500) == text_for(123, 500)
    assert text_for(123, 500) != text_for(124, 500)
    assert text_for(2**52 + 5, 64) == text_for(2**52 + 5, 64)


def test_text_for_reads_as_words_and_sentences() -> None:
    text = text_for(99, 3000)
    sentences = [s for s in text.split(".") if s.strip()]
    assert text.endswith(".")
    assert len(sentences) > 10
    words = text.replace(".", " ").split()
    assert 2 <= np.mean([len(w) for w in words]) <= 9
    assert "  " not in text


def test_text_for_rejects_negative_length() -> None:
    with pytest.raises(ValueError, match="chars"):
        text_for(1, -1)
