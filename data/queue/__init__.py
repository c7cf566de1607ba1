"""The annotation queue: who annotates which unit next, drafts, submits, skips, flags, edits.

Assignment is least-annotated-first: an annotator gets the unit of the campaign with the fewest
live assignments (leased or submitted) that they have never been given, ties in a seeded random
order (:func:`~data.queue.priority.plan_routing`: a part-labelled campaign's labelled units are a
random sample, as prediction-powered estimates need). A lease occupies one of
the unit's ``overlap`` slots; the database guarantees the rules under concurrency (see
:mod:`schemas.tables`): ``uq_assignment_unit_annotator`` (never twice to one annotator),
``uq_assignment_live_slot`` + ``ck_assignment_slot_in_overlap`` (never more than K live). A
lease is ``INSERT ... ON CONFLICT DO NOTHING``: one the constraints refuse inserts nothing, and
the next unit is tried. On PostgreSQL candidate units are locked with
``FOR NO KEY UPDATE SKIP LOCKED`` so concurrent annotators spread over different units; when every
unit left is held by another transaction, the lease waits for one (in a savepoint, bounded by
``lock_timeout``: :mod:`~data.queue.candidates`) instead of answering "nothing", and
:func:`submit_and_next` orders its waits so that they form no cycle
(:func:`data.queue.leases._lease_then_count`). On SQLite every transaction is
``BEGIN IMMEDIATE`` and so already serial.

Gold units (known answers) are served apart, blind, at the campaign's gold rate, and only they
until an annotator has passed the campaign's qualification; a held or retired annotator gets
none (:class:`AnnotatorHeld`): :mod:`~data.queue.gold`. A gold lease takes no K slot.

A reviewer may reject an answer (:mod:`~data.queue.review`): its assignment becomes
``rejected``, its slot goes back to the pool and the answer leaves the human reference; accepting
it again, or undoing the rejection, needs a free slot (the same constraints refuse a K+1-th).

Leases expire after ``Campaign.lease_seconds``; expired slots go back to the pool. What an
annotator may see is exactly a :class:`UnitView`: the item, the response(s) in their shown order,
the rubric settings and their own draft — never another human's answer or a judge's output, and
nothing that tells a gold unit from a real one.

The modules, one concern each:

- :mod:`~data.queue.leases`: the next unit, lease expiry, retaking an expired lease;
  :mod:`~data.queue.candidates` (which unit a lease tries, and the wait on PostgreSQL) and
  :mod:`~data.queue.unit_view` (what a lease shows) beneath it;
- :mod:`~data.queue.gold`: gold units, qualification, grading and feedback;
- :mod:`~data.queue.guidelines`: whether an annotator has read a campaign's guidelines (stored
  as an audit event, so a reload or another device does not show them again);
- :mod:`~data.queue.drafts`: drafts saved while typing;
- :mod:`~data.queue.answers`: submits, alone or with the next unit;
- :mod:`~data.queue.give_back`: skips and flags (giving a unit back);
- :mod:`~data.queue.revisions`: editing a submitted answer;
- :mod:`~data.queue.review`: reviewers' accept / reject and undoing either;
- :mod:`~data.queue.priority`: the judge-guided serving order's pure rules (the stored routing
  setting that leases follow is :mod:`data.services.routing`'s);
- :mod:`~data.queue.routing_lock`: the per-campaign lock that orders routing changes before
  annotators' steps on PostgreSQL (shared by each step, exclusive for a routing change);
- :mod:`~data.queue.views` (read-only views for the pages, the unit a page already shows among
  them) and :mod:`~data.queue.progress` (the annotation page's header);
- :mod:`~data.queue.records` (what they return and raise) and :mod:`~data.queue.common` (shared
  pieces, not public).
"""

from data.queue.answers import submit, submit_and_next, submit_step
from data.queue.drafts import save_draft
from data.queue.give_back import flag, skip
from data.queue.guidelines import guidelines_read, mark_guidelines_read
from data.queue.leases import expire_leases, next_unit
from data.queue.progress import unit_progress
from data.queue.records import (
    AccountDisabled,
    AnnotatorHeld,
    AnnotatorProgress,
    AnswerInvalid,
    AssignmentNotFound,
    CampaignNotOpen,
    DraftView,
    GoldFeedback,
    LeaseLost,
    MyAnnotation,
    OtherAnswer,
    QueueError,
    ResponseView,
    SubmitStep,
    UnitProgress,
    UnitView,
)
from data.queue.review import (
    REVIEW_STATES,
    ReviewConflict,
    ReviewError,
    ReviewInfo,
    ReviewOutcome,
    accept_answer,
    reject_answer,
    reopen_answer,
    review_info,
)
from data.queue.revisions import revise
from data.queue.views import (
    annotator_progress,
    answer_history,
    assignment_view,
    last_worked_campaign_id,
    my_annotation_view,
    my_annotations,
    my_campaigns,
    open_campaigns,
    others_answers,
    previous_answer,
    submitted_count,
)

__all__ = [
    "REVIEW_STATES",
    "AccountDisabled",
    "AnnotatorHeld",
    "AnnotatorProgress",
    "AnswerInvalid",
    "AssignmentNotFound",
    "CampaignNotOpen",
    "DraftView",
    "GoldFeedback",
    "LeaseLost",
    "MyAnnotation",
    "OtherAnswer",
    "QueueError",
    "ResponseView",
    "ReviewConflict",
    "ReviewError",
    "ReviewInfo",
    "ReviewOutcome",
    "SubmitStep",
    "UnitProgress",
    "UnitView",
    "accept_answer",
    "annotator_progress",
    "answer_history",
    "assignment_view",
    "expire_leases",
    "flag",
    "guidelines_read",
    "last_worked_campaign_id",
    "mark_guidelines_read",
    "my_annotation_view",
    "my_annotations",
    "my_campaigns",
    "next_unit",
    "open_campaigns",
    "others_answers",
    "previous_answer",
    "reject_answer",
    "reopen_answer",
    "review_info",
    "revise",
    "save_draft",
    "skip",
    "submit",
    "submit_and_next",
    "submit_step",
    "submitted_count",
    "unit_progress",
]
