# What make_qwen3_tiny.py and make_gemma3_tiny.py share: the model saved as transformers saves it, then three rows
# of 9 ids (whole, padded on the right, padded on the left) and every hidden state transformers gives for them,
# written to reference.safetensors beside the model.
import os

import torch
import transformers
from safetensors.torch import save_file


def write_reference(model, folder):
    model.save_pretrained(folder, safe_serialization=True)
    ids = torch.randint(0, model.config.vocab_size, (3, 9))
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[1, 6:] = 0  # padded on the right
    ids[1, 6:] = 0
    mask[2, :4] = 0  # on the left: positions still count from the first column, as no position_ids are given
    ids[2, :4] = 0
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    save_file({"input_ids": ids, "attention_mask": mask, "hidden_states": torch.stack(out.hidden_states).contiguous()},
              os.path.join(folder, "reference.safetensors"),
              metadata={"transformers": transformers.__version__, "torch": torch.__version__})
