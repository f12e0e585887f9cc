# Makes the Qwen3 reference that test_hunyuan15_text's Qwen3 case reads, with transformers' Qwen3Model (float32,
# CPU): a tiny Qwen3 of random weights whose heads have their own width (head_dim 16, hidden 48, 4 heads, 2 key /
# value heads), q/k norms, and attention_bias on (a bias on q, k, v and o), saved as transformers saves it
# (config.json, model.safetensors); then three rows of ids, the second padded on the right and the third on the
# left, and every hidden state.
# The norms' weights are moved off 1 so that a norm left out shows. Run from the repository root:
#   PYTHONPATH=.deps/libtorch-2.15.0 python tests/data/qwen3_tiny/make_qwen3_tiny.py
import os

import torch
import transformers
from safetensors.torch import save_file
from transformers import Qwen3Config, Qwen3Model

here = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)
config = Qwen3Config(vocab_size=96, hidden_size=48, intermediate_size=64, num_hidden_layers=3,
                     num_attention_heads=4, num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6,
                     rope_theta=10000.0, attention_bias=True, max_position_embeddings=64)
model = Qwen3Model(config).eval()
with torch.no_grad():
    for name, p in model.named_parameters():
        if "norm" in name or name.endswith("bias"):
            p.copy_(1.0 + 0.3 * torch.randn_like(p) if "norm" in name else 0.2 * torch.randn_like(p))
model.save_pretrained(here, safe_serialization=True)

ids = torch.randint(0, config.vocab_size, (3, 9))
mask = torch.ones(3, 9, dtype=torch.long)
mask[1, 6:] = 0  # padded on the right
ids[1, 6:] = 0
mask[2, :4] = 0  # on the left: positions still count from the first column, as no position_ids are given
ids[2, :4] = 0
with torch.no_grad():
    out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
save_file({"input_ids": ids, "attention_mask": mask, "hidden_states": torch.stack(out.hidden_states).contiguous()},
          os.path.join(here, "reference.safetensors"),
          metadata={"transformers": transformers.__version__, "torch": torch.__version__})
