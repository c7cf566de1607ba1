"""What the critic reads and writes, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from campaign_factory import build_annotated_campaigns
from sqlalchemy.engine import Engine

from data.io.critic_io import (
    annotated_units,
    cached_outputs,
    campaign_info,
    campaign_units,
    judged_keys,
    store_cached_output,
    store_judgements,
)
from data.storage.engine import session_scope
from schemas.tables import Judgement


def test_units_labels_judgements_and_cache(any_engine: Engine) -> None:
    build_annotated_campaigns(any_engine)
    with session_scope(any_engine) as session:
        info = campaign_info(session, "pairs")
        units = campaign_units(session, info.id)
        annotated = annotated_units(session, campaign_info(session, "amb").id)
    assert info.protocol.name == "pairwise" and len(units) == 6
    first = units[0]
    assert first.unit_key == "p:item-0/model-x|item-0/model-y"
    assert [r.response_id for r in first.responses] == ["item-0/model-x", "item-0/model-y"]
    assert first.item.question[0] == {"type": "image", "image": "images/red.png"}
    assert len(annotated) == 12
    assert [label.annotator for label in annotated[0].labels] == ["alice", "bob", "carol"]
    assert [a.adjudicated for a in annotated].count(9) == 1
    row = Judgement(judge="j", protocol="pairwise", unit_key=first.unit_key, pair_pk=first.pair_pk,
                    shown_order="BA", raw_output="[[A]]", prompt_id="t@1")  # fmt: skip
    with session_scope(any_engine) as session:
        assert store_judgements(session, [row]) == 1
        store_cached_output(session, "m", "t@1", "abc", "[[A]]", {"total_tokens": 3})
        store_cached_output(session, "m", "t@1", "abc", "other", {})  # already cached: kept
    with session_scope(any_engine) as session:
        duplicate = Judgement(**row.model_dump(exclude={"id"}))
        assert store_judgements(session, [duplicate]) == 0
        assert judged_keys(session, "j", "t@1") == {(first.unit_key, "BA", 0)}
        assert judged_keys(session, "j", "t@2") == set()
        cached = cached_outputs(session, "m", "t@1", ["abc", "zzz"])
    assert list(cached) == ["abc"] and cached["abc"].output == "[[A]]"
    assert cached["abc"].usage == {"total_tokens": 3}
