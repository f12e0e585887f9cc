# Makes the Gemma 3 reference that test_hunyuan15_text's Gemma 3 case reads, with transformers' Gemma3TextModel
# (float32, CPU, eager attention): a tiny Gemma 3 language model of random weights with what sets it apart from
# Qwen: embeddings scaled by sqrt(hidden), norms that multiply by 1 + weight, four norms a layer, q/k norms, a
# tanh-GELU gated MLP, scores scaled by query_pre_attn_scalar^-1/2 (24, not head_dim 16), and layers alternating a
# sliding window of 4 tokens (RoPE base 10000) with global attention (base 1e6, scaled linearly by 8), saved as
# transformers saves it (config.json, model.safetensors); then three rows of 9 ids, the second padded on the right
# and the third on the left, and every hidden state. The norms' weights are moved off 0 so that a norm left out shows. Run from the
# repository root:
#   PYTHONPATH=.deps/libtorch-2.15.0 python tests/data/gemma3_tiny/make_gemma3_tiny.py
import os
import sys

import torch
from transformers import Gemma3TextConfig, Gemma3TextModel

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(here))
from llm_reference import write_reference  # noqa: E402

torch.manual_seed(0)
config = Gemma3TextConfig(vocab_size=96, hidden_size=48, intermediate_size=64, num_hidden_layers=4,
                          num_attention_heads=4, num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=24,
                          sliding_window=4, rope_theta=1e6, rope_local_base_freq=10000.0,
                          rope_scaling={"rope_type": "linear", "factor": 8.0},
                          layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
                          max_position_embeddings=64, rms_norm_eps=1e-6, attn_implementation="eager")
model = Gemma3TextModel(config).eval()
with torch.no_grad():
    for name, p in model.named_parameters():
        if "norm" in name:
            p.copy_(0.3 * torch.randn_like(p))
write_reference(model, here)
