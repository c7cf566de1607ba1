"""The critic: judge prompts, output parsing, SFT data, fine-tuning, local and remote judging.

Modules (import what you need; only the training and judging ones load torch):

* :mod:`critic.prompts` — judge prompt templates (TOML) and the answer format they define;
  :mod:`critic.judge_prompt` — a judge input rendered from one, with the protocols' facts;
* :mod:`critic.parsing` — judge output → value, rationale, parse status;
* :mod:`critic.sft` — ``export sft``: human judgements as chat training records;
* :mod:`critic.training` — ``critic train``: :func:`~critic.training.train_critic` runs the
  options of :mod:`critic.train_config` by one of two objectives, with the result of
  :mod:`critic.train_result`: :mod:`critic.fine_tune`, fine-tuning with transformers' Trainer
  (full or LoRA; data from :mod:`critic.collate`), checkpoints, and the eval split's calibration
  report (:mod:`critic.evaluation`); or :mod:`critic.head`, a classifier head on the frozen base
  model (:mod:`critic.head_features`);
* :mod:`critic.modeling` — base models and trained critics loaded from local folders (a head
  critic's classifier from :mod:`critic.classifier_head`);
* :mod:`critic.local`, :mod:`critic.score` — ``critic score``: batched local judging, expected
  scores; :mod:`critic.probabilities` — its pairwise probability read-outs;
* :mod:`critic.remote` — ``judge run``: OpenAI-compatible endpoints with retries and a cache;
* :mod:`critic.gguf` — ``critic convert-gguf``.
"""
