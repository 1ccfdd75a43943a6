"""The durability gate measured on a labelled corpus: it must catch run-state and pass durable facts.

tests/data/durability/ holds run-state sentences (an episode's material) and durable facts, most
of them near misses of run-state wording. Targets from issue 15: at least 95 % of run-state
caught, at most 2 % of durable facts flagged; both are asserted on the main files.

The holdout files check over-fitting; their figures are printed, never asserted. All were written
by the same author as the rules, so none is an independent sample.
- holdout_*: written after the rules were tuned on the main files, measured once (41/55 caught,
  2/79 flagged), then rules were generalised from its misses: no longer blind.
- holdout2_*: written after that, measured once (17/35 caught, 1/46 flagged), then rules were
  generalised from its misses (status phrases without time words: "in review", "merged but not
  rolled out", "until the rewrite lands", journal-style "Moved the tests ..."): no longer blind.
- holdout3_*: written before that last change, measured once after it: 25/30 caught, 0/40 flagged.
Run-state with no tell-tale wording ("prod is on 2.8.1", "the backlog has 230 tickets") passes the
gate: it is a phrase gate, not an understanding of the sentence.

Print the figures: ``python tests/test_durability_corpus.py``.
"""

from __future__ import annotations

from pathlib import Path

from kenning.memory.gates import durability

DATA = Path(__file__).parent / "data" / "durability"


def sentences(name: str) -> list[str]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def missed(run_state: list[str]) -> list[str]:
    return [s for s in run_state if durability.check(s) is None]


def flagged(durable: list[str]) -> list[tuple[str, list[str]]]:
    return [(s, r.matched) for s in durable if (r := durability.check(s)) is not None]


def test_the_corpus_is_big_enough_and_has_no_duplicates():
    run_state, durable = sentences("run_state.txt"), sentences("durable.txt")
    assert len(run_state) >= 150 and len(durable) >= 300
    everything = [s for f in sorted(DATA.glob("*.txt")) for s in sentences(f.name)]
    assert len(set(everything)) == len(everything), "a sentence appears twice"


def test_at_least_95_percent_of_run_state_is_caught():
    run_state = sentences("run_state.txt")
    misses = missed(run_state)
    assert 1 - len(misses) / len(run_state) >= 0.95, "\n".join(misses)


def test_at_most_2_percent_of_durable_facts_are_flagged():
    durable = sentences("durable.txt")
    wrong = flagged(durable)
    assert len(wrong) / len(durable) <= 0.02, "\n".join(f"{s}  <- {m}" for s, m in wrong)


def test_every_refusal_names_what_it_matched():
    for sentence in sentences("run_state.txt"):
        refusal = durability.check(sentence)
        if refusal is not None:
            assert refusal.matched and refusal.override == "acknowledge_transient"
            assert durability.check(sentence, acknowledge_transient=True) is None


def report() -> str:
    lines = []
    for run_file, durable_file in (("run_state.txt", "durable.txt"),
                                   ("holdout_run_state.txt", "holdout_durable.txt"),
                                   ("holdout2_run_state.txt", "holdout2_durable.txt"),
                                   ("holdout3_run_state.txt", "holdout3_durable.txt")):
        run_state, durable = sentences(run_file), sentences(durable_file)
        caught = len(run_state) - len(missed(run_state))
        wrong = len(flagged(durable))
        lines.append(f"{run_file}: {caught}/{len(run_state)} run-state caught ({caught / len(run_state):.1%}); "
                     f"{durable_file}: {wrong}/{len(durable)} durable flagged ({wrong / len(durable):.1%})")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
