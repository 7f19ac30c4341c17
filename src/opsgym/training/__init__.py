"""Training agents on the environments' own reward: PPO (``ppo``), SFT and GRPO on LLMs.

Each trainer is an extra (``train``: torch, Stable-Baselines3, sb3-contrib; ``grpo``: TRL,
Transformers, PEFT); importing this package imports none of them.
"""
