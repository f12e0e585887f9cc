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
# Read as any other picture: an 8-bit TIFF (its resolution tags once tripped the decoder's strict mode).
Image.open("lanczos_40x27.png").save("tiff_40x27.tif")
# Refused: an animated WebP, and a PNG whose compressed pixels are damaged under checksums that still match.
frames[0].save("refused_animated.webp", save_all=True, append_images=frames[1:], duration=100, loop=0)
import struct, zlib
png = bytearray(open("lanczos_40x27.png", "rb").read())
at = png.index(b"IDAT") + 4 + 2  # past the zlib header: flip the deflate stream's bits
png[at : at + 16] = bytes(b ^ 0xFF for b in png[at : at + 16])
length = struct.unpack(">I", png[at - 6 - 4 : at - 6])[0]
png[at - 6 + 4 + length : at - 6 + 8 + length] = struct.pack(">I", zlib.crc32(bytes(png[at - 6 : at - 2 + length])))
open("refused_damaged_pixels.png", "wb").write(png)
# A JPEG for each EXIF orientation (phones keep portraits sideways and say so), and what diffusers' load_image
# makes of it (ImageOps.exif_transpose, then RGB).
from PIL import ImageOps
small = src
for tag in range(1, 9):
    exif = Image.Exif()
    exif[0x0112] = tag
    small.save("exif_%d.jpg" % tag, quality=95, exif=exif)
    ImageOps.exif_transpose(Image.open("exif_%d.jpg" % tag)).convert("RGB").save("exif_%d_as_rgb.png" % tag)
