# Makes the Gemma tokenizer test_llm_text reads, with Hugging Face's tokenizers: a small tokenizer.json laid out as
# transformers' GemmaConverter lays out Gemma 3's (<pad> <eos> <bos> <unk> first; spaces written "▁" by the
# normalizer, a Split on " " that finds none after it; BPE over the whole stretch with byte fallback to <0xXX>
# tokens and unknowns fused; <bos> added first by the post-processor; <start_of_turn> and <end_of_turn> special),
# its vocabulary and merges trained here on a few sentences; then the ids tokenizers gives for prompts that need
# each of those rules, and with the byte token <0xF0> taken out, in expected.json. Run from the repository root:
#   python tests/data/gemma3_tokenizer/make_gemma3_tokenizer.py
import json
import os

import tokenizers
from tokenizers import AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import BPE
from tokenizers.trainers import BpeTrainer

here = os.path.dirname(os.path.abspath(__file__))
corpus = ["A paper boat drifts on a quiet pond at dawn.", "The lighthouse beam sweeps over the waves at night.",
          "A cat sits on a red mat, then turns its head.", "Neon signs flicker above a rainy street.",
          "    indented code, and\ttabs\tbetween words", "Numbers 2024 and 3.14 and 1,000,000."] * 20
specials = ["<pad>", "<eos>", "<bos>", "<unk>"]
bytes_ = [f"<0x{b:02X}>" for b in range(256)]

trainer_side = Tokenizer(BPE(unk_token="<unk>"))
trainer_side.normalizer = normalizers.Replace(" ", "▁")
trainer_side.train_from_iterator(corpus, BpeTrainer(vocab_size=400, special_tokens=specials, show_progress=False))
trained = json.loads(trainer_side.to_str())["model"]
vocab = dict(trained["vocab"])
for b in bytes_:  # the byte tokens, in the vocabulary as SentencePiece's byte pieces are
    vocab.setdefault(b, len(vocab))
merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in trained["merges"]]

tok = Tokenizer(BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
tok.normalizer = normalizers.Replace(" ", "▁")
tok.pre_tokenizer = pre_tokenizers.Split(" ", "merged_with_previous")
tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in specials])
tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in ["<start_of_turn>", "<end_of_turn>"]])
tok.post_processor = processors.TemplateProcessing(single="<bos> $A", pair="<bos> $A <bos> $B",
                                                   special_tokens=[("<bos>", vocab["<bos>"])])
tok.save(os.path.join(here, "tokenizer.json"))

prompts = ["A paper boat drifts on a quiet pond at dawn.", "", " ", "  two  spaces  ", "the lighthouse",
           "<start_of_turn>user\nA cat on a mat<end_of_turn>\n<start_of_turn>model\n",
           "Ünïcödé, 日本語 and 🦊 emoji fall back to bytes", "tabs\tand\nnew\nlines", "zzzz qqqq xxxx"]
expected = [{"text": p, "ids": tok.encode(p).ids} for p in prompts]
# The same tokenizer without the byte token <0xF0> (which starts every 4-byte character): an emoji becomes <unk>, and
# a run of them one <unk> (fuse_unk).
spare = json.loads(tok.to_str())
del spare["model"]["vocab"]["<0xF0>"]
unknown_prompts = ["a 🦊🦊🦊 b", "🦊 and 🐈"]
unknowns = [{"text": p, "ids": Tokenizer.from_str(json.dumps(spare)).encode(p).ids} for p in unknown_prompts]
json.dump({"tokenizers": tokenizers.__version__, "cases": expected, "without_0xF0": unknowns},
          open(os.path.join(here, "expected.json"), "w"), ensure_ascii=False, indent=1)
