"""``annotations import``: human labels made elsewhere, as a finished campaign (FORMATS.md §3).

The file is a judgements file (JSONL, CSV or Parquet, read by :mod:`data.io.importers.reader`) whose
lines all have ``judge_kind: human``. It becomes a **closed** campaign of the dataset that holds
its units, written exactly as the app would have left it had the labels been collected there:

* one *external* annotator account per distinct annotator (``annotator``, else ``judge`` without
  its ``annotator:`` prefix): role annotator, marked external and disabled, no password, so it
  can never log in; an external account of that name from an earlier import is reused;
* one unit per response (pointwise) or stored pair (pairwise) in the file, and the campaign's
  overlap K = the most annotators any unit has;
* per annotator and unit a ``submitted`` assignment in its own overlap slot, the annotation
  (``revision`` numbers in the file give its revisions: the highest is live, each later one
  ``meta.revises`` the one before and is audited as ``annotation.revise``, as an edit in *My work*
  is), and the unit's ``slots_taken`` / ``n_submitted`` counters;
* audit events ``user.create`` (external accounts), ``campaign.create``, ``annotation.import``
  and ``campaign.close``.

Every line is checked before anything is written (the database read in a snapshot that holds no
write lock). The campaign is then written in short transactions
(:func:`data.io.importers.annotation_rows.write_campaign`), so annotators working on the same
database wait for one of them at most, never for the whole import. Until the last one it is
in the importing state (:mod:`data.storage.campaign_imports`), which every look-up, listing and
reader skips; an import that fails half-way deletes what it wrote, and one killed half-way is
rolled back by the next command (or the next import of that name). The caller's session is
committed on the way.

Importing the same labels again under the same campaign name changes nothing; different labels
under that name (a label, its rationale, ``seconds``, ``created_at`` or ``meta``: the first
difference is named), a campaign of that name collected in the app, or one another import is
still writing, are refused.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from data.io.importers.annotation_labels import (
    AnnotationImportError,
    Label,
    Revisions,
    label_of,
    revisions_of,
)
from data.io.importers.annotation_rows import (
    LabelKey,
    existing_labels,
    label_fields,
    write_campaign,
)
from data.io.importers.annotation_units import ImportedUnit, resolve_units
from data.io.importers.errors import InvalidRecord, Problems
from data.io.importers.judgement_files import import_protocol
from data.io.importers.reader import JudgementLine, files_sha256, iter_judgements
from data.services.users import case_twins
from data.storage.audit import record_event
from data.storage.campaign_imports import importing, is_abandoned, roll_back_abandoned
from data.storage.engine import outside_turn, read_scope
from schemas.core import stored_id
from schemas.ids import id_problem
from schemas.protocols import Protocol
from schemas.tables import Campaign, User, utcnow

EXTERNAL_PASSWORD_HASH = "!external: imported labels, no login"
"""Stored instead of a password hash: no password verifies against it."""
DEFAULT_RATIONALE_MIN = 20


@dataclass(frozen=True)
class AnnotationImportSummary:
    """What an annotations import created (nothing when the same labels were there already)."""

    campaign: str
    dataset: str
    protocol: str
    created: bool
    units: int
    annotators: int
    accounts_added: int
    annotations: int
    overlap: int

    def describe(self) -> str:
        if not self.created:
            return (
                f"campaign {self.campaign!r} already holds these {self.annotations} labels: "
                "nothing changed"
            )
        return (
            f"campaign {self.campaign!r} (closed) of dataset {self.dataset!r}: {self.units} "
            f"units, {self.annotations} labels by {self.annotators} annotators "
            f"({self.accounts_added} external accounts added), overlap {self.overlap}"
        )


def import_annotations(
    session: Session,
    path: Path,
    *,
    campaign: str,
    dataset: str | None = None,
    protocol: str | None = None,
    scale: tuple[float, float, float | None] | None = None,
    actor_id: int | None = None,
    on_progress: Callable[[int], None] | None = None,
    now: datetime | None = None,
    read: Callable[[Path, Problems], Iterable[JudgementLine]] = iter_judgements,
) -> AnnotationImportSummary:
    """Import the human labels of ``path`` as the closed campaign ``campaign``.

    ``dataset`` (a dataset name) is checked against the units' dataset when given;
    ``protocol`` (with ``scale`` for ``score``) replaces the protocol named on the lines;
    ``read`` turns the file into judgement lines (another format's reader, such as
    :func:`data.io.importers.label_studio.read_label_studio`, gets every rule of this import).
    """
    source = str(path)
    now = now or utcnow()
    problem = id_problem(campaign)
    if problem is not None:
        raise AnnotationImportError(f"the campaign name {campaign!r} {problem}")
    problems = Problems()
    chosen = import_protocol(protocol, scale, source, None) if protocol else None
    labels: list[Label] = []
    for line in read(path, problems):
        try:
            chosen = chosen or import_protocol(line.record.protocol, scale, source, line.location)
            labels.append(label_of(line, chosen, forced=protocol is not None))
        except InvalidRecord as error:
            problems.add(error)
        if on_progress is not None:
            on_progress(1)
    problems.check()
    assert chosen is not None  # the reader refuses a file without lines
    revisions = revisions_of(labels, problems)
    engine = session.get_bind()
    assert isinstance(engine, Engine)
    _roll_back_if_abandoned(session, engine, campaign)
    # the checks read a snapshot: no write lock, no session turn, however long they take (in
    # the caller's transaction when it has one: what it wrote is not in a snapshot)
    snapshot = nullcontext(session) if session.in_transaction() else read_scope(engine)
    with outside_turn(session), snapshot as reader:
        units = resolve_units(reader, labels, dataset, problems)
        problems.check()
        dataset_name = next(iter(units.values())).dataset_name
        existing = reader.exec(select(Campaign).where(Campaign.name == campaign)).first()
        if existing is not None and importing(reader, stored_id(existing)) is not None:
            raise AnnotationImportError(
                f"campaign {campaign!r} is being written by another import: wait for it to "
                "finish, or import under another campaign name"
            )
        if existing is not None:
            return _same_campaign(reader, existing, chosen, revisions, units, dataset_name)
        accounts = _accounts(reader, revisions, problems)
        problems.check()
        account_ids = {name: user.id for name, user in accounts.items() if user.id is not None}
        new_accounts = [user for user in accounts.values() if user.id is None]
    annotations = write_campaign(
        session,
        accounts=account_ids,
        new_accounts=new_accounts,
        audit_accounts=lambda: _audit_accounts(session, new_accounts, actor_id, source),
        name=campaign,
        protocol=chosen,
        revisions=revisions,
        units=units,
        rationale_min=_rationale_min(labels),
        imported={"source": source, "sha256": files_sha256([Path(path)])},
        actor_id=actor_id,
        now=now,
    )
    return AnnotationImportSummary(
        campaign=campaign,
        dataset=dataset_name,
        protocol=chosen.name,
        created=True,
        units=len(units),
        annotators=len(accounts),
        accounts_added=len(new_accounts),
        annotations=annotations,
        overlap=_overlap(revisions),
    )


def _roll_back_if_abandoned(session: Session, engine: Engine, name: str) -> None:
    """Delete campaign ``name`` if an import that died left it half-written (committed), so that
    these labels can take its place. Looked for in a snapshot: ``session`` begins no
    transaction (on SQLite, a write lock held through the checks) unless there is one to undo."""
    with read_scope(engine) as reader:
        found = reader.exec(select(Campaign.id).where(Campaign.name == name)).first()
        state = importing(reader, found) if found is not None else None
        dead = state is not None and is_abandoned(state)
    if dead and found is not None and roll_back_abandoned(session, found) is not None:
        session.commit()


def _accounts(
    session: Session,
    revisions: Revisions,
    problems: Problems,
) -> dict[str, User]:
    """Existing external accounts by name, and new unsaved ones; a login account is refused."""
    first_line: dict[str, Label] = {}
    for (annotator, _unit), labels in revisions.items():
        first_line.setdefault(annotator, labels[0])
    names = sorted(first_line)
    found = {u.name: u for u in session.exec(select(User).where(col(User.name).in_(names)))}
    twins = case_twins(session, names)
    first_spelling: dict[str, str] = {}
    for name in names:  # two names of the file that differ only in case
        spelling = first_spelling.setdefault(name.lower(), name)
        if spelling != name:
            twins.setdefault(name, spelling)
    accounts: dict[str, User] = {}
    for name in names:
        if name in twins:
            problems.add(
                first_line[name].error(
                    "judge",
                    f"annotator {name!r} differs from the account {twins[name]!r} only in case, "
                    "which reads as the same person: use one spelling, or rename the annotator",
                )
            )
            continue
        user = found.get(name)
        if user is not None and not user.external:
            problems.add(
                first_line[name].error(
                    "judge",
                    f"annotator {name!r} is the name of an account that logs in here: imported "
                    "labels get external accounts of their own; rename the annotator in the file "
                    f"(e.g. 'ext-{name}')",
                )
            )
            continue
        accounts[name] = user or User(
            name=name,
            password_hash=EXTERNAL_PASSWORD_HASH,
            role="annotator",
            active=False,
            external=True,
            synthetic=all(
                label.synthetic
                for (who, _), labels in revisions.items()
                if who == name
                for label in labels
            ),
        )
    return accounts


def _audit_accounts(session: Session, added: list[User], actor_id: int | None, source: str) -> None:
    for user in added:
        record_event(
            session,
            actor_id=actor_id,
            action="user.create",
            entity="user_account",
            entity_id=stored_id(user),
            detail={"name": user.name, "role": user.role, "external": True, "source": source},
        )


def _same_campaign(
    session: Session,
    campaign: Campaign,
    protocol: Protocol,
    revisions: Revisions,
    units: dict[tuple[str, ...], ImportedUnit],
    dataset_name: str,
) -> AnnotationImportSummary:
    """A re-import: the same labels under the same name change nothing; anything else is refused."""
    if not (campaign.options or {}).get("imported"):
        raise AnnotationImportError(
            f"campaign {campaign.name!r} already exists and was collected in the app: import "
            "the labels under another campaign name"
        )
    wanted = {
        (annotator, units[unit].unit_key, label.revision or 1): label_fields(label)
        for (annotator, unit), labels in revisions.items()
        for label in labels
    }
    refused = (
        f"campaign {campaign.name!r} already holds different imported labels: "
        "{difference}; import these under another campaign name"
    )
    if campaign.protocol != protocol.name:
        raise AnnotationImportError(
            refused.format(difference=f"its protocol is {campaign.protocol}")
        )
    difference = _difference(existing_labels(session, campaign), wanted)
    if difference is not None:
        raise AnnotationImportError(refused.format(difference=difference))
    return AnnotationImportSummary(
        campaign=campaign.name,
        dataset=dataset_name,
        protocol=protocol.name,
        created=False,
        units=len(units),
        annotators=len({annotator for annotator, _ in revisions}),
        accounts_added=0,
        annotations=len(wanted),
        overlap=campaign.overlap,
    )


def _difference(
    stored: dict[LabelKey, dict[str, Any]], wanted: dict[LabelKey, dict[str, Any]]
) -> str | None:
    """The first difference between the stored answers and the file's (None: the same); a
    ``created_at`` the file leaves out matches any stored time."""
    for key in sorted(set(stored) | set(wanted)):
        annotator, unit_key, revision = key
        where = f"annotator {annotator!r} on {unit_key}, revision {revision}"
        if key not in wanted:
            return f"{where} is stored but not in the file"
        if key not in stored:
            return f"{where} is in the file but not stored"
        for field, value in wanted[key].items():
            if field == "created_at" and value is None:
                continue
            if stored[key][field] != value:
                return f"{where} differs in `{field}`"
    return None


def _overlap(revisions: Revisions) -> int:
    per_unit: dict[tuple[str, ...], int] = defaultdict(int)
    for _annotator, unit in revisions:
        per_unit[unit] += 1
    return max(per_unit.values())


def _rationale_min(labels: list[Label]) -> int:
    """The campaign's minimum rationale: the default, or less when the labels have less."""
    return min(DEFAULT_RATIONALE_MIN, min(len(label.rationale.strip()) for label in labels))
