"""The critic: judge prompts, output parsing, SFT data, fine-tuning, local and remote judging.

Modules (import what you need; only the training and judging ones load torch):

* :mod:`critic.prompts` — judge prompt templates (TOML) and the answer format they define;
  :mod:`critic.judge_prompt` — a judge input rendered from one, with the protocols' facts;
* :mod:`critic.parsing` — judge output → value, rationale, parse status;
* :mod:`critic.sft` — ``export sft``: human judgements as chat training records;
* :mod:`critic.collate`, :mod:`critic.modeling`, :mod:`critic.training` — fine-tuning with
  transformers' Trainer (full or LoRA), checkpoints, and the eval split's calibration report
  (:mod:`critic.evaluation`); :mod:`critic.train_config` — what shapes a run (no torch);
* :mod:`critic.local`, :mod:`critic.score` — ``critic score``: batched local judging, expected
  scores; :mod:`critic.probabilities` — its pairwise probability read-outs;
* :mod:`critic.remote` — ``judge run``: OpenAI-compatible endpoints with retries and a cache;
* :mod:`critic.gguf` — ``critic convert-gguf``.
"""
