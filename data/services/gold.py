"""Gold units and qualification for the CLI and the pages: known answers (attached from a file),
a campaign's gold settings, per-annotator gold accuracy, and annotators' standing (hold,
release, retire).

Every function that changes something writes an audit event in the same transaction; the ``_as``
variants check the acting user's role on the server first (admins only), as
:mod:`data.services.admin` does. Serving gold units and deciding qualification is the queue's
(:mod:`data.queue.gold`).

The gold file (FORMATS.md §6) is JSON Lines, one object per gold unit::

    {"unit": "r:item-7/model-a", "score": 4, "explanation": "counts 3 cats, there are 3"}
    {"unit": "p:item-2/m0|item-2/m1", "preference": "tie"}

``unit`` is the unit key that ``critiquelab campaign status C --units`` lists; ``score`` (on the
campaign's scale) or ``preference`` (A, B or tie, A being the pair's first response), never
both; ``explanation`` optional. A bad line is reported with its file, line and field, every
problem of the file together, and nothing is written.
"""

from __future__ import annotations

import math
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from sqlmodel import Session, col, func, select

from data.io.importers.errors import InvalidFile, InvalidRecord, Problems
from data.io.importers.sources import read_json_lines
from data.queue import gold as queue_gold
from data.services.admin import apply_campaign_changes
from data.services.roles import PermissionDenied, require_actor_role
from data.storage.audit import record_event
from data.storage.campaign_lookup import CampaignError, campaign_protocol, get_campaign, unit_keys
from schemas.core import stored_id
from schemas.intervals import wilson_interval
from schemas.tables import (
    AnnotatorStanding,
    Assignment,
    Campaign,
    GoldAnswer,
    Unit,
    User,
)

GOLD_FIELDS = frozenset({"unit", "score", "preference", "explanation"})
MAX_EXPLANATION = 4000
"""Characters of an explanation (shown in the feedback panel)."""
MIN_GOLD_RATE, MAX_GOLD_RATE = 0.01, 0.5


class GoldError(CampaignError):
    """A gold setting or a standing change that cannot be made, with what to do instead."""


@dataclass(frozen=True)
class GoldEntry:
    """One known answer to attach: a unit key and a score or a (canonical) preference."""

    unit: str
    score: float | None = None
    preference: str | None = None
    explanation: str = ""


@dataclass(frozen=True)
class GoldImport:
    """What an import did."""

    campaign: str
    added: int
    replaced: int
    gold_units: int
    """gold units of the campaign after the import"""


def read_gold_file(
    session: Session, path: Path, campaign: str | int
) -> tuple[Campaign, list[GoldEntry]]:
    """The entries of a gold file, checked against the campaign; :class:`InvalidFile` naming
    every bad line and field (nothing is read into the database)."""
    found = get_campaign(session, campaign)
    protocol = campaign_protocol(found)
    source = str(path)
    problems = Problems()
    units = _units_by_key(session, stored_id(found))
    served = _served_units(session, stored_id(found))
    entries: list[GoldEntry] = []
    seen: dict[str, int] = {}
    for line, record in read_json_lines(path, problems):
        try:
            entry = _entry(record, source, line, protocol)
            unit_id = units.get(entry.unit)
            if unit_id is None:
                raise InvalidRecord(
                    source,
                    line,
                    "unit",
                    f"`unit` {entry.unit!r} is no unit of campaign {found.name!r}: use a unit "
                    "key of the campaign's status (its list of units)",
                )
            if unit_id in served:
                raise InvalidRecord(
                    source,
                    line,
                    "unit",
                    f"`unit` {entry.unit!r} was already served to an annotator: its answers "
                    "would become gold answers after the fact; choose a unit nobody has had",
                )
            if entry.unit in seen:
                raise InvalidRecord(
                    source,
                    line,
                    "unit",
                    f"`unit` {entry.unit!r} is given twice (also on line {seen[entry.unit]}): "
                    "keep one line per unit",
                )
            seen[entry.unit] = line
            entries.append(entry)
        except InvalidRecord as error:
            problems.add(error)
    if not entries and not problems:
        problems.add(InvalidRecord(source, None, None, "the file has no gold answer: add lines"))
    problems.check()
    return found, entries


def import_gold(
    session: Session, path: Path, campaign: str | int, *, actor_id: int | None = None
) -> GoldImport:
    """Attach the known answers of a gold file to the campaign's units (see the module
    docstring); all or nothing. A unit already gold gets the new answer (audited before/after)."""
    found, entries = read_gold_file(session, path, campaign)
    return attach_gold(session, found, entries, actor_id=actor_id, source=str(path))


def attach_gold(
    session: Session,
    campaign: Campaign,
    entries: list[GoldEntry],
    *,
    actor_id: int | None = None,
    source: str = "",
) -> GoldImport:
    """Make the entries' units gold with their known answers (checked as the file reader
    checks them); audited as one ``gold.import`` event."""
    campaign_id = stored_id(campaign)
    protocol = campaign_protocol(campaign)
    units = _units_by_key(session, campaign_id)
    served = _served_units(session, campaign_id)
    existing = {
        row.unit_id: row
        for row in session.exec(select(GoldAnswer).where(GoldAnswer.campaign_id == campaign_id))
    }
    added = replaced = 0
    changes: list[dict[str, Any]] = []
    for entry in entries:
        checked = _entry(entry.__dict__, source or "gold", entry.unit, protocol)
        unit_id = units.get(checked.unit)
        if unit_id is None:
            raise GoldError(f"{checked.unit!r} is no unit of campaign {campaign.name!r}")
        if unit_id in served:
            raise GoldError(f"{checked.unit!r} was already served to an annotator")
        row = existing.get(unit_id)
        before = None if row is None else _answer_text(row.score, row.preference)
        if row is None:
            row = GoldAnswer(campaign_id=campaign_id, unit_id=unit_id, created_by=actor_id)
            added += 1
        else:
            replaced += 1
        row.score, row.preference, row.explanation = (
            checked.score,
            checked.preference,
            checked.explanation,
        )
        session.add(row)
        unit = session.get(Unit, unit_id)
        assert unit is not None
        unit.gold = True
        session.add(unit)
        changes.append(
            {
                "unit": checked.unit,
                "before": before,
                "after": _answer_text(checked.score, checked.preference),
            }
        )
    session.flush()
    total = session.exec(
        select(func.count()).where(Unit.campaign_id == campaign_id, col(Unit.gold).is_(True))
    ).one()
    record_event(
        session,
        actor_id=actor_id,
        action="gold.import",
        entity="campaign",
        entity_id=campaign_id,
        detail={"campaign": campaign.name, "source": source, "answers": changes},
    )
    return GoldImport(campaign.name, added, replaced, int(total))


def import_gold_as(
    session: Session, actor_id: int | None, path: Path, campaign: str | int
) -> GoldImport:
    """:func:`import_gold` for an admin."""
    require_actor_role(session, actor_id, "admin")
    return import_gold(session, path, campaign, actor_id=actor_id)


def import_gold_upload_as(
    session: Session, actor_id: int | None, campaign: str | int, filename: str, data: bytes
) -> GoldImport:
    """:func:`import_gold_as` of an uploaded gold file (the Campaigns page): the same reader,
    all or nothing; problems name the uploaded file's name, its line and field."""
    require_actor_role(session, actor_id, "admin")
    name = PurePath(filename.replace("\\", "/")).name or "gold.jsonl"
    with tempfile.TemporaryDirectory(prefix="critiquelab-gold-") as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        try:
            return import_gold(session, path, campaign, actor_id=actor_id)
        except InvalidFile as error:
            renamed = [
                InvalidRecord(
                    name if p.source == str(path) else p.source, p.location, p.field, p.text
                )
                for p in error.problems
            ]
            raise InvalidFile(renamed, stopped=error.stopped) from None


def _entry(record: Any, source: str, line: int | str, protocol: Any) -> GoldEntry:
    def fail(field: str | None, message: str) -> InvalidRecord:
        return InvalidRecord(source, line, field, message)

    if not isinstance(record, dict):
        raise fail(None, 'a gold line is a JSON object: {"unit": ..., "score"|"preference"}')
    unknown = sorted(set(record) - GOLD_FIELDS)
    if unknown:
        raise fail(
            unknown[0],
            f"`{unknown[0]}` is not a gold field; the fields are: "
            + ", ".join(sorted(GOLD_FIELDS)),
        )
    unit = record.get("unit")
    if not isinstance(unit, str) or not unit.strip():
        raise fail(
            "unit", "`unit` is missing: give the unit key (as the campaign's status lists it)"
        )
    score, preference = record.get("score"), record.get("preference")
    if protocol.is_pointwise:
        if preference is not None:
            raise fail(
                "preference",
                f"`preference` is for pairwise campaigns; this one is "
                f"{protocol.name}: give `score` ({protocol.describe_scale()})",
            )
        if score is None:
            raise fail("score", f"`score` is missing ({protocol.describe_scale()})")
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise fail(
                "score", f"`score` is {score!r}: give a number ({protocol.describe_scale()})"
            )
        try:
            score = protocol.validate_score(score)
        except ValueError as error:
            raise fail("score", str(error)) from None
    else:
        if score is not None:
            raise fail("score", "`score` is for pointwise campaigns: give `preference` A, B or tie")
        if preference not in ("A", "B", "tie"):
            raise fail(
                "preference",
                f"`preference` is {preference!r}: give A, B or tie (A = the pair's first response)",
            )
    explanation = record.get("explanation", "")
    if explanation is None:
        explanation = ""
    if not isinstance(explanation, str):
        raise fail(
            "explanation",
            f"`explanation` is {explanation!r} ({type(explanation).__name__}), but it must be "
            "text: quote it",
        )
    if len(explanation) > MAX_EXPLANATION:
        raise fail(
            "explanation",
            f"`explanation` has {len(explanation)} characters; at most {MAX_EXPLANATION}",
        )
    return GoldEntry(unit.strip(), score, preference, explanation.strip())


def _units_by_key(session: Session, campaign_id: int) -> dict[str, int]:
    return {key: unit_id for unit_id, key, _, _ in unit_keys(session, campaign_id)}


def _served_units(session: Session, campaign_id: int) -> set[int]:
    return set(
        session.exec(
            select(Assignment.unit_id).where(Assignment.campaign_id == campaign_id).distinct()
        )
    )


def _answer_text(score: float | None, preference: str | None) -> str:
    return preference if preference is not None else f"{score:g}"


# --- settings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class GoldSettings:
    """A campaign's gold settings."""

    gold_rate: float
    """share of the units served that are gold, after qualification (0 = none; 0.01–0.5)"""
    gold_feedback: bool
    """after a gold unit, show the expected answer and its explanation (training campaigns)"""
    qualification_gold: int
    """N: gold units to answer before any real unit (0 = no qualification)"""
    qualification_accuracy: float
    """T: the share of the N answers that must be right (0–1)"""


def gold_settings(campaign: Campaign) -> GoldSettings:
    return GoldSettings(
        campaign.gold_rate,
        campaign.gold_feedback,
        campaign.qualification_gold,
        campaign.qualification_accuracy,
    )


def set_gold_settings(
    session: Session,
    campaign: str | int,
    *,
    gold_rate: float | None = None,
    gold_feedback: bool | None = None,
    qualification_gold: int | None = None,
    qualification_accuracy: float | None = None,
    actor_id: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Change the given gold settings (None = keep); the changes as before/after, audited as one
    ``campaign.update`` event. Bounds: rate 0 or 0.01–0.5, N 0–the campaign's gold units
    (at most 1000), T 0–1."""
    found = get_campaign(session, campaign)
    if found.status == "closed":
        raise GoldError(f"campaign {found.name!r} is closed: its settings are final")
    before = gold_settings(found)
    wanted = GoldSettings(
        before.gold_rate if gold_rate is None else float(gold_rate),
        before.gold_feedback if gold_feedback is None else bool(gold_feedback),
        before.qualification_gold if qualification_gold is None else qualification_gold,
        before.qualification_accuracy
        if qualification_accuracy is None
        else float(qualification_accuracy),
    )
    gold_units = session.exec(
        select(func.count()).where(Unit.campaign_id == found.id, col(Unit.gold).is_(True))
    ).one()
    check_gold_settings(wanted, int(gold_units))
    return apply_campaign_changes(
        session, actor_id, found, before, wanted, GoldSettings.__dataclass_fields__
    )


def set_gold_settings_as(
    session: Session, actor_id: int | None, campaign: str | int, settings: GoldSettings
) -> dict[str, dict[str, Any]]:
    """:func:`set_gold_settings` for an admin (all four settings at once, as a form sends)."""
    require_actor_role(session, actor_id, "admin")
    return set_gold_settings(
        session,
        campaign,
        gold_rate=settings.gold_rate,
        gold_feedback=settings.gold_feedback,
        qualification_gold=settings.qualification_gold,
        qualification_accuracy=settings.qualification_accuracy,
        actor_id=actor_id,
    )


def check_gold_settings(settings: GoldSettings, gold_units: int) -> None:
    """:class:`GoldError` naming the first setting out of its bounds."""
    rate = settings.gold_rate
    if not (rate == 0 or MIN_GOLD_RATE <= rate <= MAX_GOLD_RATE):
        raise GoldError(
            f"the gold rate is {rate:g}: give 0 (no gold units mixed in) or a share from "
            f"{MIN_GOLD_RATE:g} to {MAX_GOLD_RATE:g} (0.1 = one unit in 10)"
        )
    count = settings.qualification_gold
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise GoldError(f"the qualification size is {count!r}: give a whole number ≥ 0")
    if count > gold_units:
        raise GoldError(
            f"qualification asks for {count} gold units but the campaign has {gold_units}: "
            "attach more known answers (a gold file, FORMATS.md §6), or ask for fewer"
        )
    if not 0 <= settings.qualification_accuracy <= 1:
        raise GoldError(
            f"the qualification accuracy is {settings.qualification_accuracy:g}: give a share "
            "from 0 to 1 (0.8 = 80% right)"
        )
    if rate > 0 and gold_units == 0:
        raise GoldError("the campaign has no gold unit to mix in: import some first")


# --- accuracy -------------------------------------------------------------------------------


@dataclass(frozen=True)
class GoldAccuracy:
    """One annotator's answers to gold units: the first answer to each counts.

    Pointwise: ``exact`` (the expected score) and ``within_one`` (at most one scale step off).
    Pairwise: ``exact`` = ``within_one`` = agreement with the expected A / B / tie (a tie
    expected and given agrees; a tie against A or B does not). Intervals: 95% Wilson.
    """

    annotator: str
    answered: int
    exact: int
    exact_share: float
    exact_low: float
    exact_high: float
    within_one: int
    within_one_share: float
    within_one_low: float
    within_one_high: float
    standing: str
    """qualifying | qualified | held | released | retired, or ``-`` (no standing: free)"""

    @property
    def exact_text(self) -> str:
        """``exact_share`` with its interval as the Campaigns page and ``gold accuracy`` show it."""
        return _share_text(self.exact_share, self.exact_low, self.exact_high)

    @property
    def within_one_text(self) -> str:
        """``within_one_share`` with its interval, as :attr:`exact_text`."""
        return _share_text(self.within_one_share, self.within_one_low, self.within_one_high)


def _share_text(share: float, low: float, high: float) -> str:
    """A share and its interval in whole percents; "—" when there is no answer to count."""
    return "—" if math.isnan(share) else f"{share:.0%} [{low:.0%}, {high:.0%}]"


def gold_accuracy(session: Session, campaign: str | int) -> list[GoldAccuracy]:
    """Per annotator who answered a gold unit (or holds a standing), by name."""
    found = get_campaign(session, campaign)
    graded = queue_gold.graded_gold_answers(session, found)
    by_annotator: dict[int, list[queue_gold.GoldAnswerRow]] = defaultdict(list)
    for row in graded:
        by_annotator[row.annotator_id].append(row)
    standings = dict(
        session.exec(
            select(AnnotatorStanding.annotator_id, AnnotatorStanding.status).where(
                AnnotatorStanding.campaign_id == found.id
            )
        ).all()
    )
    ids = set(by_annotator) | set(standings)
    names = dict(session.exec(select(User.id, User.name).where(col(User.id).in_(ids))).all())
    default = "qualifying" if found.qualification_gold > 0 else "-"
    result = []
    for annotator_id in ids:
        rows = by_annotator.get(annotator_id, [])
        n = len(rows)
        exact = sum(row.exact for row in rows)
        within = sum(row.within_one for row in rows)
        result.append(
            GoldAccuracy(
                names[annotator_id],
                n,
                exact,
                exact / n if n else float("nan"),
                *wilson_interval(exact, n),
                within,
                within / n if n else float("nan"),
                *wilson_interval(within, n),
                standings.get(annotator_id, default),
            )
        )
    return sorted(result, key=lambda row: row.annotator)


# --- standing -------------------------------------------------------------------------------

STANDING_ACTIONS: dict[str, tuple[str, tuple[str | None, ...]]] = {
    "hold": ("held", (None, "qualifying", "qualified", "released")),
    "release": ("released", ("held", "retired")),
    "retire": ("retired", (None, "qualifying", "qualified", "held", "released")),
}
"""action → (status after, statuses it applies to; None = no standing yet)."""


MAX_REASON_CHARS = 500
"""An admin's reason for a standing is a sentence or two for the annotator, not a file."""


@dataclass(frozen=True)
class StandingRow:
    """An annotator's standing in a campaign, for the admin."""

    annotator: str
    status: str
    accuracy: float | None
    by_queue: bool
    """decided by the queue (qualification), not by an admin"""
    decided_by: str | None
    """the admin's account, or None (the queue, or an admin on the command line without --by)"""
    decided_at: Any
    reason: str | None
    """the admin's reason, as the annotator is shown it; None: none given"""

    @property
    def why(self) -> str:
        """Who decided and why, in words: "failed qualification (40% right)", or "held by an
        admin (ada): <reason>"."""
        if self.by_queue:
            verdict = "passed" if self.status == "qualified" else "failed"
            right = "" if self.accuracy is None else f" ({self.accuracy:.0%} right)"
            said = f"{verdict} qualification{right}"
        else:
            said = f"{self.status} by an admin ({self.decided_by or 'command line'})"
        return said if not self.reason else f"{said}: {self.reason}"


def admin_id(session: Session, name: str | None) -> int | None:
    """The id of the admin called ``name`` (the CLI's ``--by``); None for none."""
    if name is None:
        return None
    user = session.exec(select(User).where(User.name == name)).first()
    if user is None:
        raise GoldError(f"no account called {name!r}: see critiquelab users list")
    try:
        require_actor_role(session, user.id, "admin")
    except PermissionDenied as refusal:  # bad input on the command line: exit 2
        raise GoldError(str(refusal)) from None
    return user.id


def change_standing(
    session: Session,
    campaign: str | int,
    annotator: str,
    action: str,
    *,
    actor_id: int | None = None,
    reason: str | None = None,
) -> str:
    """``hold``, ``release`` or ``retire`` an annotator in a campaign, as an admin (``actor_id``;
    None: the command line) for ``reason`` (shown to the annotator; None or blank: none given);
    the status after.

    Released: served real units again (their qualification is not asked again). Held, retired:
    served nothing; their open leases go back to the pool. Audited as ``standing.<status>``.
    """
    if action not in STANDING_ACTIONS:
        raise GoldError(f"{action!r} is not one of: " + ", ".join(STANDING_ACTIONS))
    reason = (reason or "").strip() or None
    if reason is not None and len(reason) > MAX_REASON_CHARS:
        raise GoldError(
            f"the reason is {len(reason)} characters long: say it in at most {MAX_REASON_CHARS}"
        )
    found = get_campaign(session, campaign)
    user = session.exec(select(User).where(User.name == annotator)).first()
    if user is None:
        raise GoldError(f"no account called {annotator!r}: see critiquelab users list")
    after, allowed = STANDING_ACTIONS[action]
    row = queue_gold.standing(session, stored_id(found), stored_id(user))
    status = None if row is None else row.status
    if status not in allowed:
        raise GoldError(
            f"{annotator} is {status or 'not decided yet'} in {found.name!r}: "
            f"they cannot be {after}"
        )
    queue_gold.set_standing(
        session, stored_id(found), stored_id(user), after, actor_id=actor_id, reason=reason
    )
    return after


def change_standing_as(
    session: Session,
    actor_id: int | None,
    campaign: str | int,
    annotator: str,
    action: str,
    *,
    reason: str | None = None,
) -> str:
    """:func:`change_standing` for an admin."""
    require_actor_role(session, actor_id, "admin")
    return change_standing(session, campaign, annotator, action, actor_id=actor_id, reason=reason)


def standings(
    session: Session, campaign: str | int, *, statuses: tuple[str, ...] | None = None
) -> list[StandingRow]:
    """The campaign's decided standings (only ``statuses`` if given), by annotator name."""
    found = get_campaign(session, campaign)
    query = select(AnnotatorStanding, User.name).join(
        User, col(User.id) == col(AnnotatorStanding.annotator_id)
    )
    query = query.where(AnnotatorStanding.campaign_id == found.id)
    if statuses:
        query = query.where(col(AnnotatorStanding.status).in_(statuses))
    rows = session.exec(query.order_by(col(User.name))).all()
    deciders = {row.decided_by for row, _ in rows if row.decided_by is not None}
    names = dict(session.exec(select(User.id, User.name).where(col(User.id).in_(deciders))).all())
    return [
        StandingRow(
            name,
            row.status,
            row.accuracy,
            row.by_queue,
            names.get(row.decided_by) if row.decided_by is not None else None,
            row.decided_at,
            row.reason,
        )
        for row, name in rows
    ]


def standings_as(
    session: Session, actor_id: int | None, campaign: str | int, statuses: tuple[str, ...]
) -> list[StandingRow]:
    """:func:`standings` for an admin or reviewer."""
    require_actor_role(session, actor_id, "admin", "reviewer")
    return standings(session, campaign, statuses=statuses)


def gold_accuracy_as(
    session: Session, actor_id: int | None, campaign: str | int
) -> list[GoldAccuracy]:
    """:func:`gold_accuracy` for an admin or reviewer."""
    require_actor_role(session, actor_id, "admin", "reviewer")
    return gold_accuracy(session, campaign)
