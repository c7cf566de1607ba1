"""Pairwise verdict probabilities of a local critic, as read-outs stored beside its verdicts.

``critic score --preference-probs`` reads p(A), p(B), p(tie) from one forward pass after the
verdict prefix ``[[`` and stores their argmax per shown order as the judge ``<judge>-probs``;
with ``--both-orders`` the canonical probabilities of the two shown orders are averaged into one
position-debiased verdict per pair, the judge ``<judge>-debiased`` (names:
:mod:`schemas.readouts`). Each read-out is a judge of its own, so that calibration compares them.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import select as core_select
from sqlmodel import Session, col, select

from critic.prompts import SHOWN_VERDICTS
from schemas.protocols import Protocol, to_canonical
from schemas.tables import Judgement


def canonical_probs(shown: dict[str, float], shown_order: str) -> dict[str, float]:
    """Probabilities of A / B / tie in the canonical order (``_mass`` kept as is)."""
    swapped = shown_order == "BA"
    return {
        (to_canonical(label, swapped=swapped) if label in SHOWN_VERDICTS else label): value
        for label, value in shown.items()
    }


def verdict_text(canonical: dict[str, float], shown_order: str) -> str:
    """``[[X]]`` for the most probable verdict in the order shown, then the probabilities."""
    labels = [label for label in SHOWN_VERDICTS if label in canonical]
    best = max(labels, key=canonical.__getitem__)
    shown_best = to_canonical(best, swapped=shown_order == "BA")  # the swap is its own inverse
    figures = " ".join(f"p({label})={canonical[label]:.4f}" for label in labels)
    return f"[[{SHOWN_VERDICTS[shown_best]}]]\n{figures} (canonical order)"


def debiased_rows(
    session: Session, judge: str, name: str, prompt_id: str, protocol: Protocol
) -> list[Judgement]:
    """One judgement per pair that ``judge`` answered with probabilities in both shown orders
    and ``name`` has not judged yet: the mean of the two canonical probability vectors."""
    # SQLAlchemy's own select: SQLModel's is typed for at most four columns.
    found = session.execute(
        core_select(
            col(Judgement.unit_key),
            col(Judgement.pair_pk),
            col(Judgement.shown_order),
            col(Judgement.meta),
            col(Judgement.input_sha256),
        ).where(
            col(Judgement.judge) == judge,
            col(Judgement.prompt_id) == prompt_id,
            col(Judgement.sample) == 0,
        )
    ).all()
    done = set(
        session.exec(
            select(Judgement.unit_key).where(
                Judgement.judge == name, Judgement.prompt_id == prompt_id
            )
        ).all()
    )
    orders: dict[str, dict[str, tuple]] = {}
    for unit_key, pair_pk, shown_order, meta, sha in found:
        if (meta or {}).get("probs") and unit_key not in done:
            orders.setdefault(unit_key, {})[shown_order] = (pair_pk, meta["probs"], sha)
    rows = []
    for unit_key, both in sorted(orders.items()):
        if set(both) != {"AB", "BA"}:
            continue
        labels = [label for label in SHOWN_VERDICTS if label in both["AB"][1]]
        mean = {label: (both["AB"][1][label] + both["BA"][1][label]) / 2 for label in labels}
        best = max(labels, key=mean.__getitem__)
        figures = " ".join(f"p({label})={mean[label]:.4f}" for label in labels)
        rows.append(
            Judgement(
                judge=name,
                protocol=protocol.name,
                unit_key=unit_key,
                pair_pk=both["AB"][0],
                shown_order="AB",
                sample=0,
                preference=best,
                rationale="",
                raw_output=f"{figures} (mean of both shown orders, canonical order)",
                parse_status="ok",
                prompt_id=prompt_id,
                input_sha256=hashlib.sha256((both["AB"][2] + both["BA"][2]).encode()).hexdigest(),
                meta={"probs": mean, "orders": {o: both[o][1] for o in ("AB", "BA")}},
            )
        )
    return rows
