"""The regression gate of `rushhour compare`: who is compared (`population`), the judgement of each
group (`judge`), the failure share on its own (`failshare`), run-to-run noise of stored baselines
(`runnoise`, `baselines`) and of one baseline run from its time sections (`sections`), the decision
that explains itself (`decision`), and comparison.* (`compare`).
"""
