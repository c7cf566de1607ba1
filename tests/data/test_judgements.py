"""insert_judgements: bulk and idempotent on the judgement key, on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import select

from data.services.judgements import count_judgements, insert_judgements
from data.storage.engine import session_scope
from schemas.ids import response_unit_key
from schemas.tables import Dataset, Item, Judgement, Response


def _responses(engine: Engine, count: int) -> list[tuple[int, str]]:
    with session_scope(engine) as session:
        dataset = Dataset(name="d", benchmark="generic")
        session.add(dataset)
        session.flush()
        item = Item(dataset_id=dataset.id, item_id="i", benchmark="generic", question="q",
                    content_sha256="x")  # fmt: skip
        session.add(item)
        session.flush()
        rows = [
            Response(
                response_id=f"i/m{n}",
                item_pk=item.id,
                model=f"m{n}",
                content="a",
                content_sha256="x",
            )  # fmt: skip
            for n in range(count)
        ]
        session.add_all(rows)
        session.flush()
        return [(r.id, r.response_id) for r in rows]


def _judgement(pk: int, response_id: str, judge: str = "gpt-4", score: float = 7) -> Judgement:
    return Judgement(
        judge=judge, protocol="alignmmbench", unit_key=response_unit_key(response_id),
        response_pk=pk, score=score, rationale="fine", raw_output='{"Rating": 7}',
        prompt_id="alignmmbench-zh@1", meta={"k": [1, 2]},
    )  # fmt: skip


def test_insert_is_idempotent_and_skips_duplicates_within_a_batch(any_engine: Engine) -> None:
    responses = _responses(any_engine, 300)
    batch = [_judgement(pk, rid) for pk, rid in responses]
    with session_scope(any_engine) as session:
        assert insert_judgements(session, batch + batch[:5]) == 300
    with session_scope(any_engine) as session:
        # the same keys again (even with another score) add nothing; a new judge adds rows
        again = [_judgement(pk, rid, score=2) for pk, rid in responses]
        assert insert_judgements(session, again) == 0
        other = [_judgement(pk, rid, judge="critic") for pk, rid in responses[:10]]
        assert insert_judgements(session, other) == 10
        assert insert_judgements(session, []) == 0
    with session_scope(any_engine) as session:
        assert count_judgements(session) == 310
        assert count_judgements(session, "critic") == 10
        stored = session.exec(select(Judgement).where(Judgement.judge == "gpt-4")).first()
        assert stored is not None
        assert (stored.score, stored.meta, stored.parse_status) == (7, {"k": [1, 2]}, "ok")
