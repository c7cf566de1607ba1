"""What calibration and the critic read from the database, shaped for them (docs/ARCHITECTURE.md).

:mod:`~data.readmodels.frames` (a campaign as the long judgement frame) and
:mod:`~data.readmodels.campaign_input` (the frame with its adjudications, protocol and judges)
feed calibration; :mod:`~data.readmodels.judge_facts` the judge audits;
:mod:`~data.readmodels.critic_io` the critic (its units and labels, and its judgements and cache
written back).
"""
