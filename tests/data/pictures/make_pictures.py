# Makes the pictures test_pictures reads, with Pillow (13.0), from the goldens' wan21_i2v_tiny/image.png:
# PIL's own resizes (what the engine must equal to the bit), the same picture in other modes with what
# PIL's convert("RGB") makes of them, and files the engine must refuse. Run from this folder:
#   python make_pictures.py ../../../../shared/goldens/wan21_i2v_tiny/image.png
import sys
from PIL import Image

src = Image.open(sys.argv[1]).convert("RGB")
for (w, h), f, name in [((40, 27), Image.LANCZOS, "lanczos_40x27"), ((150, 101), Image.LANCZOS, "lanczos_150x101"),
                        ((96, 50), Image.LANCZOS, "lanczos_96x50"), ((37, 80), Image.BICUBIC, "bicubic_37x80"),
                        ((336, 224), Image.BICUBIC, "bicubic_336x224")]:
    src.resize((w, h), f).save(name + ".png")
for mode in ["L", "P", "RGBA"]:
    m = src.convert(mode)
    m.save("mode_" + mode + ".png")
    m.convert("RGB").save("mode_" + mode + "_as_rgb.png")
# Refused: 16 bits a channel, CMYK, animated, truncated, not a picture, enormous (a header only).
src.convert("I;16").save("refused_16bit.png")
src.convert("CMYK").save("refused_cmyk.jpg", quality=95)
frames = [src, src.transpose(Image.FLIP_LEFT_RIGHT)]
frames[0].save("refused_animated.gif", save_all=True, append_images=frames[1:], duration=100, loop=0)
data = open("lanczos_150x101.png", "rb").read()
open("refused_truncated.png", "wb").write(data[: len(data) // 2])
open("refused_not_a_picture.png", "wb").write(b"this is a text file, not a PNG\n" * 20)
Image.new("RGB", (9000, 120), (10, 20, 30)).save("refused_9000_wide.png")
# A JPEG (YUV 4:2:0), and PIL's decode of it: decoders may differ by a few levels in the chroma upsampling.
src.save("jpeg_q95.jpg", quality=95)
Image.open("jpeg_q95.jpg").convert("RGB").save("jpeg_q95_as_rgb.png")
