"""Whether ours is ahead of another column beyond noise, round by round.

Both columns run in every round, back to back (A B, then B A), so a round's
two ratios share whatever the host was doing then. The paired difference
of a round (ours less the other) cancels that; over the rounds, the sign
test asks whether ours came out ahead more often than chance allows. It
assumes nothing about the differences' distribution, which under TCG has
outliers both ways. With 7 rounds only 7 of 7 is significant at 5%
(p = 0.016); BENCH_ROUNDS=21 resolves 16 of 21.
"""

from math import comb
from statistics import median

ALPHA = 0.05
CLOSE = 0.01  # rows whose medians are this close carry the verdict


def sign_test(ahead: int, behind: int) -> float:
    """Two-sided p-value of ahead wins against behind losses (ties dropped)
    under the hypothesis that either is as likely."""
    n = ahead + behind
    if n == 0:
        return 1.0
    k = min(ahead, behind)
    return min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2 ** n)


def paired(ours: list[float], other: list[float]) -> dict[str, object]:
    """The paired comparison of two columns' per-round ratios."""
    if len(ours) != len(other) or not ours:
        raise ValueError(f"paired rounds differ in number: {len(ours)} and {len(other)}")
    diffs = [a - b for a, b in zip(ours, other)]
    ahead, behind = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    p = sign_test(ahead, behind)
    verdict = "level" if p >= ALPHA else "ahead" if ahead > behind else "behind"
    return {"median_diff": median(diffs), "ahead": ahead, "behind": behind,
            "p": p, "verdict": verdict}


def describe(name: str, other: str, r: dict[str, object]) -> str:
    """One line of the report: the verdict and what it rests on."""
    beyond = "beyond noise" if r["verdict"] != "level" else "within noise"
    return (f"{name}: module against {other}: {r['verdict']} ({beyond}): median paired "
            f"difference {r['median_diff']:+.4f}; ahead {r['ahead']}, behind {r['behind']} "
            f"(rounds, ties dropped); sign test p = {r['p']:.3f}")


def close_rows(result: dict[str, object], ours: str = "module") -> list[str]:
    """The verdict for every (row, column) whose median ratio is within
    CLOSE of ours's."""
    out = []
    for w in result["workloads"]:
        mine = w["ratio"].get(ours)
        if not mine or "rounds" not in mine:
            continue
        for col, r in w["ratio"].items():
            if col == ours or "rounds" not in r or abs(r["median"] - mine["median"]) > CLOSE:
                continue
            out.append(describe(w["name"], col, paired(mine["rounds"], r["rounds"])))
    return out
