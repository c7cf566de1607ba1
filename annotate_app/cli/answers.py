"""``critiquelab answers``: reviewers' accept / reject of single answers, undoing either, and one
annotator's answers with where each stands (PROTOCOLS.md, *Review of answers*).

The library modules are imported inside the commands, so that ``critiquelab --help`` does not
load them.
"""

from __future__ import annotations

import typer

from annotate_app.cli.context import bounded, state
from schemas.bounds import LIMIT, ROW_ID

answers_app = typer.Typer(
    help="Review single answers: reject (with a comment), accept, reopen; list an annotator's."
)

_ID = typer.Argument(
    ..., help="The answer's id (as `critiquelab answers list` shows it).", **bounded(ROW_ID)
)
_BY = typer.Option(
    None,
    "--by",
    help="The reviewer or admin account to record as the decider (default: none, the command "
    "line).",
)


@answers_app.command("reject")
def reject_command(
    ctx: typer.Context,
    annotation_id: int = _ID,
    comment: str = typer.Option(
        ..., "--comment", help="Why, for the annotator (shown in their My work)."
    ),
    by: str = _BY,
) -> None:
    """Reject an answer: it leaves the reference, the SFT export and the judge metrics, and its
    unit goes back to the queue for another annotator. Audited; undo with `answers reopen`."""
    from data.queue.review import reject_answer
    from data.services.answer_review import reviewer_id
    from data.storage.engine import session_scope

    cli = state(ctx)
    with session_scope(cli.engine()) as session:
        done = reject_answer(
            session, annotation_id, comment=comment, actor_id=reviewer_id(session, by)
        )
    cli.emit(done, text=_said(done))


@answers_app.command("accept")
def accept_command(ctx: typer.Context, annotation_id: int = _ID, by: str = _BY) -> None:
    """Accept an answer. A rejected (or revised after rejection) answer counts again if its unit
    has a free slot; if the slot was taken meanwhile, it is refused (exit 2). Audited."""
    from data.queue.review import accept_answer
    from data.services.answer_review import reviewer_id
    from data.storage.engine import session_scope

    cli = state(ctx)
    with session_scope(cli.engine()) as session:
        done = accept_answer(session, annotation_id, actor_id=reviewer_id(session, by))
    cli.emit(done, text=_said(done))


@answers_app.command("reopen")
def reopen_command(ctx: typer.Context, annotation_id: int = _ID, by: str = _BY) -> None:
    """Undo the answer's accept or reject (back to pending). Undoing a rejection needs a free
    slot on its unit, as accepting does. Audited."""
    from data.queue.review import reopen_answer
    from data.services.answer_review import reviewer_id
    from data.storage.engine import session_scope

    cli = state(ctx)
    with session_scope(cli.engine()) as session:
        done = reopen_answer(session, annotation_id, actor_id=reviewer_id(session, by))
    cli.emit(done, text=_said(done))


@answers_app.command("list")
def list_command(
    ctx: typer.Context,
    campaign: str = typer.Option(..., "--campaign", "-c", help="Campaign name."),
    annotator: str = typer.Option(..., "--annotator", "-a", help="The annotator's login name."),
    review_state: list[str] = typer.Option(
        None,
        "--state",
        help="Only answers in this state: pending, accepted, rejected, resubmitted (repeatable).",
    ),
    limit: int = typer.Option(200, "--limit", help="At most this many answers.", **bounded(LIMIT)),
) -> None:
    """One annotator's current answers in a campaign, newest first, with their review state and
    the rejection's comment."""
    from data.services.answer_review import annotator_answers
    from data.storage.engine import session_scope

    cli = state(ctx)
    with session_scope(cli.engine()) as session:
        rows = annotator_answers(
            session,
            campaign,
            annotator,
            states=tuple(review_state) if review_state else None,
            limit=limit,
        )
    lines = ["id\tunit\tanswer\trevision\tstate\tcomment"]
    lines += [
        f"{r.annotation_id}\t{r.unit_key}\t{r.value}\t{r.revision}\t{r.state}\t"
        f"{' '.join(r.comment.split())}"
        for r in rows
    ]
    if not rows:
        lines.append("(no answer)")
    cli.emit(rows, text="\n".join(lines))


def _said(done: object) -> str:
    from data.queue.review import ReviewOutcome

    assert isinstance(done, ReviewOutcome)
    counts = "counts in the reference" if done.in_reference else "is out of the reference"
    return (
        f"answer {done.annotation_id} ({done.annotator}, revision {done.revision}, campaign "
        f"{done.campaign!r}) is {done.state}; it {counts}"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(answers_app, name="answers")
