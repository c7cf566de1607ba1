"""What the critic reads and writes, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from campaign_factory import build_annotated_campaigns
from sqlalchemy import event
from sqlalchemy.engine import Engine

from data.readmodels.critic_io import (
    annotated_units,
    cached_outputs,
    campaign_units,
    judged_keys,
    store_cached_output,
    store_judgements,
)
from data.storage.campaign_lookup import campaign_protocol, get_campaign
from data.storage.engine import session_scope
from schemas.core import stored_id
from schemas.tables import Judgement


def test_units_labels_judgements_and_cache(any_engine: Engine) -> None:
    build_annotated_campaigns(any_engine)
    with session_scope(any_engine) as session:
        pairs = get_campaign(session, "pairs")
        units = campaign_units(session, stored_id(pairs))
        annotated = annotated_units(session, stored_id(get_campaign(session, "amb")))
        assert campaign_protocol(pairs).name == "pairwise" and len(units) == 6
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


def test_a_campaign_is_read_without_a_parameter_per_unit(engine: Engine) -> None:
    """SQLite refuses a statement with more parameters than its limit (250,000 here), so a
    campaign of that many units once failed ``export sft``, ``critic score`` and ``judge run``.
    With the limit lowered to 8, fewer than the campaigns' units, responses and items, both reads
    still work."""
    import sqlite3

    build_annotated_campaigns(engine)

    def few_parameters(connection: sqlite3.Connection, _record: object) -> None:
        connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 8)

    event.listen(engine, "connect", few_parameters)
    engine.dispose()  # new connections, each with the lowered limit
    with session_scope(engine) as session:
        pairs = campaign_units(session, stored_id(get_campaign(session, "pairs")))
        annotated = annotated_units(session, stored_id(get_campaign(session, "amb")))
    assert len(pairs) == 6 and len(annotated) == 12
    assert [r.response_id for r in pairs[0].responses] == ["item-0/model-x", "item-0/model-y"]
    assert [label.annotator for label in annotated[0].labels] == ["alice", "bob", "carol"]
