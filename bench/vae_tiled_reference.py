"""Reference tensors for *tiled* VAE encode and decode, made by diffusers itself (AutoencoderKLWan,
AutoencoderKLCogVideoX, AutoencoderKLHunyuanVideo15; whichever release the python has: 0.35.2 for the goldens' rules, 0.42.1 for the Wan2.2
VAE, whose tiling 0.35.2 cannot run), float32 on CPU, so that the engine's tiled encode/decode can be compared with
it (tests/data/vae_tiles/make_vae_tiles.sh keeps what tests/test_vae_tiles.cpp reads).

Run (torch from the project's unpacked wheel, diffusers 0.35.2 + safetensors + numpy in a venv):
    python3 -m venv /tmp/peer35 && /tmp/peer35/bin/pip install diffusers==0.35.2 safetensors numpy
    PYTHONPATH=.deps/libtorch-2.15.0 /tmp/peer35/bin/python bench/vae_tiled_reference.py \\
        ../shared/goldens/wan21_i2v_tiny/vae /tmp/tiled_ref/wan21.safetensors \\
        --height 64 --width 96 --frames 5 --tile_h 32 --tile_w 32 --stride_h 16 --stride_w 16

Arguments: CASE_VAE_DIR (a diffusers VAE folder; the class is config.json's `_class_name`), OUT.safetensors,
--height H --width W --frames F (pixels / frames of the input video), --tile_h TH --tile_w TW (tile size in pixels),
[--stride_h SH --stride_w SW] (tile stride in pixels), [--overlap_h FH --overlap_w FW] (CogVideoX only), [--seed S].
  * AutoencoderKLWan:       vae.enable_tiling(tile_sample_min_height=TH, tile_sample_min_width=TW,
                                              tile_sample_stride_height=SH, tile_sample_stride_width=SW)
                            (a stride left out keeps diffusers' default 192, which enable_tiling keeps via `or`).
  * AutoencoderKLHunyuanVideo15 (0.42.1): vae.enable_tiling(tile_sample_min_height=TH, tile_sample_min_width=TW,
                            tile_latent_min_height=TH // 16, tile_latent_min_width=TW // 16); a quarter overlaps.
  * AutoencoderKLCogVideoX: vae.enable_tiling(tile_sample_min_height=TH, tile_sample_min_width=TW,
                                              tile_overlap_factor_height=FH, tile_overlap_factor_width=FW)
                            where FH, FW are --overlap_h/--overlap_w, or else 1 - SH/TH and 1 - SW/TW (so that
                            diffusers' sample stride int(TH * (1 - FH)) is SH), or else diffusers' defaults 1/6, 1/5.

Input (exactly): g = torch.Generator().manual_seed(S);
    x = torch.randn((1, C, F, H, W), generator=g, dtype=torch.float32).clamp(-1, 1)
with C = 3 (config in_channels // patch_size**2 for the Wan2.2 VAE, whose encoder patchifies internally).

Tensors written to OUT (float32):
    x                 [1, C, F, H, W]   the input above
    moments_untiled   [1, 2z, f, h, w]  vae.encode(x).latent_dist.parameters with tiling off (= vae._encode(x):
                                        mean then logvar along dim 1, before the Gaussian and its logvar clamp)
    moments_tiled     same, tiling on   (absent when diffusers raised; the exception text is in the metadata)
    z                 [1, z, f, h, w]   the mean half of moments_untiled
    decoded_untiled   vae.decode(z).sample, tiling off
    decoded_tiled     vae.decode(z).sample, tiling on (absent when diffusers raised). NOTE: Wan's tiled_decode
                      does not clamp to [-1, 1] (the untiled _decode does) and, in 0.35.2, ignores patch_size.
The safetensors metadata (strings) holds the arguments, the tiling settings as diffusers ended up with them,
whether tiled_encode / tiled_decode really ran (`tiled_encode_calls`, `tiled_decode_calls`), any exception text
(`encode_tiled_error`, `decode_tiled_error`) and the max |tiled - untiled| diffs, which are also printed.
"""
import argparse
import json
import os
import sys
import traceback

import torch
from safetensors.torch import save_file


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("vae_dir")
    p.add_argument("out")
    p.add_argument("--height", type=int, required=True)
    p.add_argument("--width", type=int, required=True)
    p.add_argument("--frames", type=int, required=True)
    p.add_argument("--tile_h", type=int, required=True)
    p.add_argument("--tile_w", type=int, required=True)
    p.add_argument("--stride_h", type=int, default=None)
    p.add_argument("--stride_w", type=int, default=None)
    p.add_argument("--overlap_h", type=float, default=None, help="CogVideoX tile_overlap_factor_height")
    p.add_argument("--overlap_w", type=float, default=None, help="CogVideoX tile_overlap_factor_width")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)

    import diffusers

    with open(os.path.join(a.vae_dir, "config.json")) as f:
        config = json.load(f)
    class_name = config["_class_name"]
    if class_name not in ("AutoencoderKLWan", "AutoencoderKLCogVideoX", "AutoencoderKLHunyuanVideo15"):
        sys.exit(f"unsupported VAE class {class_name}")
    vae = getattr(diffusers, class_name).from_pretrained(a.vae_dir, torch_dtype=torch.float32).eval()

    in_channels = config.get("in_channels", 3)
    if class_name == "AutoencoderKLWan" and config.get("patch_size"):
        in_channels //= config["patch_size"] ** 2
    g = torch.Generator().manual_seed(a.seed)
    x = torch.randn((1, in_channels, a.frames, a.height, a.width), generator=g, dtype=torch.float32).clamp(-1, 1)

    # Count the calls of the tiled paths so that the file says whether tiling really happened.
    calls = {"tiled_encode": 0, "tiled_decode": 0}
    for name in calls:
        original = getattr(vae, name)

        def counted(*args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(*args, **kwargs)

        setattr(vae, name, counted)

    def tiling_on():
        if class_name == "AutoencoderKLWan":
            vae.enable_tiling(tile_sample_min_height=a.tile_h, tile_sample_min_width=a.tile_w,
                              tile_sample_stride_height=a.stride_h, tile_sample_stride_width=a.stride_w)
        elif class_name == "AutoencoderKLHunyuanVideo15":  # its latent tile is not derived: given with the sample's
            r = vae.spatial_compression_ratio
            vae.enable_tiling(tile_sample_min_height=a.tile_h, tile_sample_min_width=a.tile_w,
                              tile_latent_min_height=a.tile_h // r, tile_latent_min_width=a.tile_w // r)
        else:
            fh, fw = a.overlap_h, a.overlap_w
            if fh is None and a.stride_h is not None:
                fh = 1 - a.stride_h / a.tile_h
            if fw is None and a.stride_w is not None:
                fw = 1 - a.stride_w / a.tile_w
            vae.enable_tiling(tile_sample_min_height=a.tile_h, tile_sample_min_width=a.tile_w,
                              tile_overlap_factor_height=fh, tile_overlap_factor_width=fw)

    meta = {"class": class_name, "diffusers": diffusers.__version__, "torch": torch.__version__,
            "args": json.dumps(vars(a)),
            "input": f"torch.randn((1,{in_channels},{a.frames},{a.height},{a.width}), "
                     f"generator=torch.Generator().manual_seed({a.seed}), dtype=torch.float32).clamp(-1,1)"}
    out = {"x": x}
    with torch.no_grad():
        vae.disable_tiling()
        out["moments_untiled"] = vae.encode(x).latent_dist.parameters.clone()
        tiling_on()
        if class_name == "AutoencoderKLWan":
            settings = {k: getattr(vae, k) for k in ("tile_sample_min_height", "tile_sample_min_width",
                                                     "tile_sample_stride_height", "tile_sample_stride_width",
                                                     "spatial_compression_ratio")}
        elif class_name == "AutoencoderKLHunyuanVideo15":
            settings = {k: getattr(vae, k) for k in ("tile_sample_min_height", "tile_sample_min_width",
                                                     "tile_latent_min_height", "tile_latent_min_width",
                                                     "tile_overlap_factor", "spatial_compression_ratio")}
        else:
            settings = {k: getattr(vae, k) for k in ("tile_sample_min_height", "tile_sample_min_width",
                                                     "tile_latent_min_height", "tile_latent_min_width",
                                                     "tile_overlap_factor_height", "tile_overlap_factor_width",
                                                     "num_sample_frames_batch_size", "num_latent_frames_batch_size")}
            settings["sample_stride_height"] = int(vae.tile_sample_min_height * (1 - vae.tile_overlap_factor_height))
            settings["sample_stride_width"] = int(vae.tile_sample_min_width * (1 - vae.tile_overlap_factor_width))
            settings["latent_stride_height"] = int(vae.tile_latent_min_height * (1 - vae.tile_overlap_factor_height))
            settings["latent_stride_width"] = int(vae.tile_latent_min_width * (1 - vae.tile_overlap_factor_width))
        meta["tiling"] = json.dumps(settings)
        print("tiling settings:", settings)
        try:
            out["moments_tiled"] = vae.encode(x).latent_dist.parameters.clone()
        except Exception as e:  # noqa: BLE001 - the text is the result
            meta["encode_tiled_error"] = f"{type(e).__name__}: {e}"
            traceback.print_exc()
        meta["tiled_encode_calls"] = str(calls["tiled_encode"])

        z = out["moments_untiled"].chunk(2, dim=1)[0].clone()
        out["z"] = z
        vae.disable_tiling()
        out["decoded_untiled"] = vae.decode(z).sample.clone()
        tiling_on()
        try:
            out["decoded_tiled"] = vae.decode(z).sample.clone()
        except Exception as e:  # noqa: BLE001
            meta["decode_tiled_error"] = f"{type(e).__name__}: {e}"
            traceback.print_exc()
        meta["tiled_decode_calls"] = str(calls["tiled_decode"])

    for kind in ("moments", "decoded"):
        t, u = out.get(f"{kind}_tiled"), out[f"{kind}_untiled"]
        if t is None:
            meta[f"{kind}_max_diff"] = "n/a: " + meta.get(f"{'encode' if kind == 'moments' else 'decode'}_tiled_error", "")
        elif t.shape != u.shape:
            meta[f"{kind}_max_diff"] = f"n/a: shapes differ, tiled {list(t.shape)} vs untiled {list(u.shape)}"
        else:
            meta[f"{kind}_max_diff"] = f"{(t - u).abs().max().item():.6g}"
            if kind == "decoded" and class_name == "AutoencoderKLWan":  # untiled Wan decode clamps, tiled does not
                meta["decoded_max_diff_tiled_clamped"] = f"{(t.clamp(-1, 1) - u).abs().max().item():.6g}"
    for k, v in out.items():
        print(f"{k}: {list(v.shape)}")
    for k in ("tiled_encode_calls", "tiled_decode_calls", "moments_max_diff", "decoded_max_diff",
              "decoded_max_diff_tiled_clamped", "encode_tiled_error", "decode_tiled_error"):
        if k in meta:
            print(f"{k}: {meta[k]}")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    save_file({k: v.contiguous() for k, v in out.items()}, a.out, metadata=meta)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
