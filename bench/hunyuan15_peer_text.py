#!/usr/bin/env python3
# transformers' Qwen2_5_VLTextModel and T5EncoderModel on the same weights as our encode, called as
# HunyuanVideo15Pipeline (diffusers 0.42.1) calls them: each prompt alone, its chat padded to 1108 tokens with a
# mask and every hidden state asked for (the pipeline reads hidden_states[-3]); ByT5 on 256 bytes for the prompt
# that quotes text. The ids are random (the time does not depend on them); the mask has the chat's real length.
# Prints the best of REPEATS, seconds for both prompts.
# Usage: hunyuan15_peer_text.py FOLDER PROMPT_TOKENS NEGATIVE_TOKENS QUOTED_BYTES [REPEATS]
import sys, time, torch
from safetensors.torch import load_file
from transformers import Qwen2_5_VLTextConfig, Qwen2_5_VLTextModel, T5Config, T5EncoderModel
torch.set_num_threads(2)
folder, prompt_tokens, negative_tokens, quoted = sys.argv[1], *map(int, sys.argv[2:5])
repeats = int(sys.argv[5]) if len(sys.argv) > 5 else 3

def load(model, file):  # built from its config, given the file's weights (from_pretrained wants accelerate)
    missing, unexpected = model.load_state_dict(load_file(file), strict=False)
    assert not unexpected and set(missing) <= {"encoder.embed_tokens.weight"}, (missing, unexpected)
    return model.float().eval()

qwen = load(Qwen2_5_VLTextModel(Qwen2_5_VLTextConfig.from_pretrained(folder + "/text_encoder")),
            folder + "/text_encoder/model.safetensors")
byt5 = load(T5EncoderModel(T5Config.from_pretrained(folder + "/text_encoder_2")), folder + "/text_encoder_2/model.safetensors")
byt5.encoder.embed_tokens = byt5.shared
g = torch.Generator().manual_seed(0)

def inputs(real, length, vocab):
    mask = torch.zeros(1, length, dtype=torch.long)
    mask[:, :real] = 1
    return torch.randint(0, vocab, (1, length), generator=g), mask

calls = [inputs(prompt_tokens, 1108, 900), inputs(negative_tokens, 1108, 900)]
glyph = inputs(quoted, 256, 300) if quoted else None
best = float("inf")
with torch.no_grad():
    for _ in range(repeats):
        t0 = time.perf_counter()
        for ids, mask in calls:
            qwen(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states[-3]
        if glyph:
            byt5(input_ids=glyph[0], attention_mask=glyph[1])
        best = min(best, time.perf_counter() - t0)
import transformers
print(f"transformers {transformers.__version__}, torch {torch.__version__}: both prompts {best:.2f} s")
