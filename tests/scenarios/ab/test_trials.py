"""The interleaving design: balanced ABBA blocks, reproducible from the seed, the scenario's rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rushhour.scenarios.ab.trials import DesignError, TrialDesign, assign_rows, assigned_chunks, default_trials
from rushhour.scenarios.cli.run import prepare
from rushhour.scenarios.spec.plan import Overrides

URLS = {"baseline": "http://127.0.0.1:1", "candidate": "http://127.0.0.1:2"}


def test_trial_design_blocks_are_balanced() -> None:
    design = TrialDesign.build(60.0, 24, seed=3)
    blocks = np.asarray(design.arms).reshape(-1, 4)
    assert all(list(b) in (["baseline", "candidate", "candidate", "baseline"],
                           ["candidate", "baseline", "baseline", "candidate"]) for b in blocks)
    pairs = np.asarray(design.arms).reshape(-1, 2)
    assert all(sorted(p) == ["baseline", "candidate"] for p in pairs)  # every pair holds both arms


def test_trial_design_is_reproducible_from_the_seed() -> None:
    assert TrialDesign.build(60.0, 48, seed=7) == TrialDesign.build(60.0, 48, seed=7)
    orders = {TrialDesign.build(60.0, 48, seed=s).arms for s in range(10)}
    assert len(orders) > 5  # the order is drawn, not fixed
    first = [TrialDesign.build(60.0, 400, seed=s).arms[0] for s in range(200)]
    assert 0.35 < first.count("baseline") / 200 < 0.65


def test_trial_design_refuses_trials_that_do_not_form_blocks() -> None:
    with pytest.raises(DesignError, match="--trials 6"):
        TrialDesign.build(60.0, 6, seed=1)


def test_default_trials_are_a_few_seconds_long() -> None:
    assert default_trials(60.0) == 24 and default_trials(3.0) == 4 and default_trials(600.0) % 4 == 0


def test_each_trial_holds_the_scenarios_rows_for_its_slice(tmp_path: pytest.TempPathFactory) -> None:
    plan = prepare("scenarios/smoke.yaml", Overrides(traffic="constant:20", duration="20s", seed=5),
                   allow_remote=False)
    design = TrialDesign.build(plan.duration_s, 8, seed=5)
    rows = assign_rows(plan.schedule, design, URLS)
    pd.testing.assert_frame_equal(rows[plan.schedule.columns], plan.schedule)  # nothing moved or dropped
    for k in range(design.trials):
        start, end = design.bounds(k)
        inside = (plan.schedule["offset_s"] >= start) & (plan.schedule["offset_s"] < end)
        assert (rows.index[rows["trial"] == k] == plan.schedule.index[inside]).all()
        assert set(rows.loc[rows["trial"] == k, "arm"]) == {design.arms[k]}
        assert set(rows.loc[rows["trial"] == k, "base_url"]) == {URLS[design.arms[k]]}


def test_per_request_design_pairs_both_arms_of_each_slice() -> None:
    plan = prepare("scenarios/smoke.yaml", Overrides(traffic="constant:20", duration="20s", seed=5),
                   allow_remote=False)
    design = TrialDesign.build(plan.duration_s, 8, seed=5, interleave="requests")
    rows = assign_rows(plan.schedule, design, URLS)
    slot = np.floor(plan.schedule["offset_s"].to_numpy() / 5.0).astype(int)
    assert (rows["trial"].to_numpy() // 2 == slot).all()  # pair k is the k-th 5 s slice
    arm = rows["arm"].to_numpy()
    assert (arm == np.where(rows["trial"] % 2, "candidate", "baseline")).all()
    assert 0.4 < (arm == "candidate").mean() < 0.6
    request = [c for c in plan.schedule.columns if c not in ("offset_s", "phase")]
    twos = rows.iloc[: len(rows) // 2 * 2]
    assert (twos["arm"].to_numpy()[0::2] != twos["arm"].to_numpy()[1::2]).all()  # the same request to each arm
    assert (twos[request].iloc[0::2].to_numpy() == twos[request].iloc[1::2].to_numpy()).all()
    pd.testing.assert_frame_equal(rows, assign_rows(plan.schedule, design, URLS))  # the seed fixes it


@pytest.mark.parametrize("interleave", ["requests", "trials"])
@pytest.mark.parametrize("chunk_rows", [7, 100, 100_000])
def test_assigned_chunks_equal_the_whole_assignment(interleave: str, chunk_rows: int) -> None:
    plan = prepare("scenarios/smoke.yaml", Overrides(traffic="constant:20", duration="20s", seed=5),
                   allow_remote=False)
    design = TrialDesign.build(plan.duration_s, 8, seed=5, interleave=interleave)
    chunks = list(assigned_chunks(plan.draw.chunks(chunk_rows), design, URLS))
    assert all(len(chunk) <= chunk_rows for chunk in chunks)
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), assign_rows(plan.draw.whole(), design, URLS))


def test_fresh_texts_salt_every_text_id_and_keep_the_nights_repeats() -> None:
    plan = prepare("scenarios/smoke.yaml", Overrides(traffic="constant:20", duration="20s", seed=5),
                   allow_remote=True)
    plain = assign_rows(plan.schedule, TrialDesign.build(plan.duration_s, 8, seed=5, interleave="requests"), URLS)
    design = TrialDesign.build(plan.duration_s, 8, seed=5, interleave="requests", fresh_texts=True, warmup=True)
    salted = assign_rows(plan.schedule, design, URLS)
    assert design.text_salt != 0 and design.warmup_pairs == 0  # a tenth of four pairs: none
    assert not set(salted["text_id"]) & set(plain["text_id"])  # no text of the plain schedule
    same = plain["text_id"].to_numpy()[:, None] == plain["text_id"].to_numpy()[None, :]
    assert (same == (salted["text_id"].to_numpy()[:, None] == salted["text_id"].to_numpy()[None, :])).all()
    assert TrialDesign.build(60.0, 40, seed=6, fresh_texts=True).text_salt != design.text_salt
    assert TrialDesign.build(60.0, 40, seed=5, warmup=True).warmup_pairs == 2


@pytest.mark.parametrize("interleave", ["requests", "trials"])
@pytest.mark.parametrize("chunk_rows", [7, 100_000])
def test_both_arms_are_warmed_with_the_same_requests_in_the_same_order(interleave: str, chunk_rows: int) -> None:
    from rushhour.traffic_models import text_for

    plan = prepare("scenarios/nightly.yaml", Overrides(duration="40s", seed=5), allow_remote=False)
    design = TrialDesign.build(plan.duration_s, 40, seed=5, interleave=interleave, warmup=True, fresh_texts=True)
    rows = pd.concat(list(assigned_chunks(plan.draw.chunks(chunk_rows), design, URLS)), ignore_index=True)
    warm = rows[rows["trial"].to_numpy() // 2 < design.warmup_pairs]
    arm = warm["arm"].to_numpy()
    assert design.warmup_pairs == 2 and len(warm) > 20
    warm = warm.iloc[: len(warm) // 2 * 2]
    arm = warm["arm"].to_numpy()
    assert (arm[0::2] != arm[1::2]).all()  # interleaved in twos, one to each arm
    assert (warm["base_url"].to_numpy() == np.where(arm == "baseline", URLS["baseline"], URLS["candidate"])).all()
    request = [c for c in warm.columns if c not in ("offset_s", "phase", "trial", "arm", "base_url")]
    base, cand = (warm[arm == a] for a in ("baseline", "candidate"))
    pd.testing.assert_frame_equal(base[request].reset_index(drop=True), cand[request].reset_index(drop=True))
    texts = [[text_for(int(t), int(c)).encode() for t, c in zip(side["text_id"], side["chars"], strict=True)]
             for side in (base, cand)]
    assert texts[0] == texts[1] and len(set(texts[0])) > 10  # byte for byte, and not one text repeated
    assert 0.3 < (arm[0::2] == "baseline").mean() < 0.7  # which arm goes first is drawn
    assert len(rows) == len(plan.draw.whole())  # nothing added or dropped
