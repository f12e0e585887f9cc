# Makes the Qwen3 reference that test_hunyuan15_text's Qwen3 case reads, with transformers' Qwen3Model (float32,
# CPU): a tiny Qwen3 of random weights whose heads have their own width (head_dim 16, hidden 48, 4 heads, 2 key /
# value heads), q/k norms, and attention_bias on (a bias on q, k, v and o), saved as transformers saves it
# (config.json, model.safetensors); then three rows of ids, the second padded on the right and the third on the
# left, and every hidden state.
# The norms' weights are moved off 1 so that a norm left out shows. Run from the repository root:
#   PYTHONPATH=.deps/libtorch-2.15.0 python tests/data/qwen3_tiny/make_qwen3_tiny.py
import os
import sys

import torch
from transformers import Qwen3Config, Qwen3Model

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(here))
from llm_reference import write_reference  # noqa: E402

torch.manual_seed(0)
config = Qwen3Config(vocab_size=96, hidden_size=48, intermediate_size=64, num_hidden_layers=3,
                     num_attention_heads=4, num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6,
                     rope_theta=10000.0, attention_bias=True, max_position_embeddings=64)
model = Qwen3Model(config).eval()
with torch.no_grad():
    for name, p in model.named_parameters():
        if "norm" in name or name.endswith("bias"):
            p.copy_(1.0 + 0.3 * torch.randn_like(p) if "norm" in name else 0.2 * torch.randn_like(p))
write_reference(model, here)
