#!/usr/bin/env python3
"""Writes the GGUF test fixtures of tests/io/gguf_test.cpp into tests/data/gguf (committed; CI
has no Python packages, this script is the source of truth).

    python3 -m venv /tmp/ggufenv && /tmp/ggufenv/bin/pip install gguf numpy
    /tmp/ggufenv/bin/python scripts/gguf/make_fixtures.py [OUT]

Files:
  all_types.gguf    (v3, alignment 32) one or more tensors of every type luminal dequantises:
                    F32/F16/BF16 raw bit patterns (NaN, signalling NaN, Inf, -0, subnormals);
                    for Q8_0/Q4_0/Q4_1/Q5_0/Q5_1 data quantised with gguf.quants.quantize
                    ("<type>.quantized": a zero row, a row of tiny values whose f16 scale is
                    subnormal, a row of large values) and random block bytes ("<type>.random");
                    Q4_K/Q5_K/Q6_K as random block bytes only (gguf-py cannot quantise them).
                    Random blocks get extreme but finite f16 scales (max, -max, the smallest and
                    largest subnormals, zero, -0, the smallest normal) and one block of all zero
                    bytes. Odd row counts throughout, one 3-d tensor.
                    Metadata: a key of every value type, arrays of each, nested arrays, and the
                    llama / tokenizer keys `luminal inspect` prints.
  expected/<tensor>.f32   gguf.quants.dequantize of each tensor: raw little-endian f32.
  align64_v2.gguf   version 2, general.alignment = 64, two tensors.
  errors/           broken files (also seeds of the fuzz corpus), each a small valid file with
                    one thing wrong, written by gguf-py and then patched:
                    row-not-block.gguf  a Q4_0 tensor whose row length (ne[0]) is 48, not a
                                        multiple of the 32-value block
                    truncated-data.gguf the file cut 10 bytes before the end of its last tensor
                    unknown-type.gguf   a tensor of type id 99, which ggml does not define
                    removed-type.gguf   a tensor of type id 31 (Q4_0_4_4, removed from ggml)
"""
import os
import struct
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf import GGUFValueType as V

here = os.path.dirname(os.path.abspath(__file__))
out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "tests", "data", "gguf")
os.makedirs(os.path.join(out_dir, "expected"), exist_ok=True)

rng = np.random.default_rng(20240612)

# Finite f16 scales at the edges: max, -max, smallest subnormal, largest subnormal, +0, -0,
# smallest normal, -smallest subnormal, 1.0.
EXTREME_F16 = [0x7BFF, 0xFBFF, 0x0001, 0x03FF, 0x0000, 0x8000, 0x0400, 0x8001, 0x3C00]

# Byte offsets of the f16 scale fields in one block.
SCALE_FIELDS = {
    T.Q8_0: [0],
    T.Q4_0: [0],
    T.Q4_1: [0, 2],
    T.Q5_0: [0],
    T.Q5_1: [0, 2],
    T.Q4_K: [0, 2],
    T.Q5_K: [0, 2],
    T.Q6_K: [208],
}


def random_finite_f16(n):
    """n random f16 bit patterns that are finite (exponent field not all ones)."""
    bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint32).astype(np.uint16)
    bad = (bits & 0x7C00) == 0x7C00
    bits[bad] &= 0xBFFF  # clear the top exponent bit
    return bits


def random_blocks(qtype, n_blocks):
    """Random bytes for n_blocks blocks, with finite scales; the first scales are the extreme
    values, and the last block is all zero bytes."""
    _, type_size = gguf.GGML_QUANT_SIZES[qtype]
    b = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint16).astype(np.uint8)
    fields = SCALE_FIELDS[qtype]
    scales = random_finite_f16(n_blocks * len(fields)).reshape(n_blocks, len(fields))
    k = 0
    for i in range(n_blocks - 1):
        for j in range(len(fields)):
            if k < len(EXTREME_F16):
                scales[i, j] = EXTREME_F16[(k + j) % len(EXTREME_F16)]
        k += 1
    for i in range(n_blocks):
        for j, off in enumerate(fields):
            b[i, off:off + 2] = np.frombuffer(struct.pack("<H", int(scales[i, j])), dtype=np.uint8)
    b[-1, :] = 0
    return b


# name -> (ggml type, shape outermost first, raw bytes as uint8 (rows, row bytes))
tensors = {}


def add(name, qtype, raw, shape):
    raw = np.ascontiguousarray(raw, dtype=np.uint8).reshape(*shape[:-1], -1)
    tensors[name] = (qtype, tuple(shape), raw)


# ---- F32: raw bits with specials ----
f32_special = np.array([
    0x7FC00000,  # quiet NaN
    0x7FA00001,  # signalling NaN with payload
    0xFFC00001,  # negative NaN with payload
    0x7F800000, 0xFF800000,  # +-Inf
    0x80000000,  # -0
    0x00000001, 0x807FFFFF,  # subnormals
    0x7F7FFFFF, 0xFF7FFFFF,  # +-max
    0x00800000,  # smallest normal
], dtype=np.uint32)
f32 = rng.standard_normal(5 * 7).astype(np.float32).view(np.uint32)
f32[:len(f32_special)] = f32_special
add("f32", T.F32, f32.view(np.uint8).reshape(5, 28), (5, 7))
f32_3d = rng.standard_normal(2 * 3 * 4).astype(np.float32)
add("f32.3d", T.F32, f32_3d.view(np.uint8).reshape(6, 16), (2, 3, 4))

# ---- F16: random bit patterns plus specials ----
f16_special = np.array([0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE01, 0x7D55, 0x0001, 0x8001, 0x03FF,
                        0x8000, 0x7BFF, 0xFBFF, 0x0400], dtype=np.uint16)
f16 = rng.integers(0, 1 << 16, size=7 * 9, dtype=np.uint32).astype(np.uint16)
f16[:len(f16_special)] = f16_special
add("f16", T.F16, f16.view(np.uint8).reshape(7, 18), (7, 9))

# ---- BF16: random bit patterns plus specials ----
bf16_special = np.array([0x7FC0, 0x7F81, 0xFF80, 0x7F80, 0x0001, 0x8000, 0x7F7F, 0xFFC1],
                        dtype=np.uint16)
bf16 = rng.integers(0, 1 << 16, size=3 * 11, dtype=np.uint32).astype(np.uint16)
bf16[:len(bf16_special)] = bf16_special
add("bf16", T.BF16, bf16.view(np.uint8).reshape(3, 22), (3, 11))

# ---- legacy quants: gguf-py's quantiser, and random blocks ----
for qtype in [T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1]:
    name = qtype.name.lower()
    x = rng.standard_normal((5, 64)).astype(np.float32)
    x[1, :] = 0.0                      # all-zero row: scale 0
    x[2, :] *= np.float32(3e-5)       # tiny values: subnormal f16 scales
    x[3, :] *= np.float32(3e3)         # large values
    x[4, :32] = -np.abs(x[4, :32])     # a block of only negative values
    q = gguf.quants.quantize(x, qtype)
    add(name + ".quantized", qtype, q, (5, 64))
    blocks = random_blocks(qtype, 9 * 2)
    add(name + ".random", qtype, blocks.reshape(9, -1), (9, 64))

# A 3-d quantised tensor: shape [2, 3, 32].
q3 = random_blocks(T.Q8_0, 6)
add("q8_0.3d", T.Q8_0, q3.reshape(6, -1), (2, 3, 32))

# ---- k-quants: random blocks only (gguf-py has no quantiser for them) ----
for qtype in [T.Q4_K, T.Q5_K, T.Q6_K]:
    name = qtype.name.lower()
    blocks = random_blocks(qtype, 7 * 2)
    add(name + ".random", qtype, blocks.reshape(7, -1), (7, 512))

# ---- the file ----
path = os.path.join(out_dir, "all_types.gguf")
w = gguf.GGUFWriter(path, arch="llama")
w.add_uint8("test.u8", 200)
w.add_int8("test.i8", -100)
w.add_uint16("test.u16", 60000)
w.add_int16("test.i16", -30000)
w.add_uint32("test.u32", 4000000000)
w.add_int32("test.i32", -2000000000)
w.add_float32("test.f32", 3.14159)
w.add_bool("test.bool", True)
w.add_string("test.string", "h\u00e9llo w\u00f6rld")
w.add_uint64("test.u64", 2**63 + 5)
w.add_int64("test.i64", -(2**62))
w.add_float64("test.f64", 2.718281828459045)
w.add_key_value("test.array.u8", [1, 2, 255], V.ARRAY, sub_type=V.UINT8)
w.add_key_value("test.array.i64", [-(2**40), 0, 2**40], V.ARRAY, sub_type=V.INT64)
w.add_key_value("test.array.u64", [2**64 - 1], V.ARRAY, sub_type=V.UINT64)
w.add_key_value("test.array.f64", [0.5, -1e300], V.ARRAY, sub_type=V.FLOAT64)
w.add_array("test.array.f32", [1.5, -2.25])
w.add_array("test.array.string", ["a", "bc", ""])
w.add_array("test.array.bool", [True, False])
w.add_array("test.array.nested", [[1, 2], [3]])
w.add_array("test.array.nested_strings", [["x"], ["y", "z"]])
w.add_array("test.array.deep", [[[7]]])
# What `luminal inspect` prints.
w.add_block_count(2)
w.add_embedding_length(64)
w.add_head_count(4)
w.add_head_count_kv(2)
w.add_context_length(128)
w.add_rope_freq_base(10000.0)
w.add_tokenizer_model("gpt2")
w.add_token_list(["<s>", "</s>", "a", "b", "c", "ab", "bc", "abc", "\u0120a", "\n"])
w.add_chat_template("{% for m in messages %}{{ m.content }}{% endfor %}")
for name, (qtype, shape, raw) in tensors.items():
    w.add_tensor(name, raw, raw_dtype=qtype)
    assert tuple(w.tensors[-1][name].shape) == shape, (name, w.tensors[-1][name].shape, shape)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

# Expected values, and a round trip through gguf-py's own reader.
reader = gguf.GGUFReader(path)
by_name = {t.name: t for t in reader.tensors}
total = 0
for name, (qtype, shape, raw) in tensors.items():
    expected = gguf.quants.dequantize(raw, qtype).astype(np.float32, copy=False)
    assert expected.size == int(np.prod(shape)), name
    t = by_name[name]
    assert bytes(np.asarray(t.data).view(np.uint8).ravel()) == raw.tobytes(), name
    assert [int(d) for d in t.shape] == list(reversed(shape)), (name, t.shape)
    data = expected.reshape(-1).astype("<f4").tobytes()
    with open(os.path.join(out_dir, "expected", name + ".f32"), "wb") as f:
        f.write(data)
    total += len(data)

# ---- version 2, alignment 64 ----
path2 = os.path.join(out_dir, "align64_v2.gguf")
w = gguf.GGUFWriter(path2, arch="test")
w.add_custom_alignment(64)
w.add_tensor("a", np.arange(3, dtype=np.float32))
w.add_tensor("b", np.array([[1, 2], [3, 4]], dtype=np.float16))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
with open(path2, "r+b") as f:  # v2 and v3 differ only in the version field
    f.seek(4)
    f.write(struct.pack("<I", 2))


# ---- broken files ----
def write_base(path):
    """A small valid file: a Q8_0 embedding, a Q4_0 projection and an F32 norm."""
    w = gguf.GGUFWriter(path, arch="llama")
    w.add_block_count(1)
    w.add_embedding_length(64)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    w.add_tensor("token_embd.weight", gguf.quants.quantize(x, T.Q8_0), raw_dtype=T.Q8_0)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    w.add_tensor("blk.0.attn_q.weight", gguf.quants.quantize(x, T.Q4_0), raw_dtype=T.Q4_0)
    w.add_tensor("output_norm.weight", rng.standard_normal(64).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with open(path, "rb") as f:
        return bytearray(f.read())


def tensor_info_at(data, name):
    """Offset of the tensor info of `name`: its u64 name length, then the name."""
    key = struct.pack("<Q", len(name)) + name.encode()
    at = bytes(data).find(key)
    assert at >= 0 and bytes(data).find(key, at + 1) < 0, name
    return at


def patch_info(data, name, ne0=None, type_id=None):
    """Sets ne[0] or the type id of a tensor's info in place."""
    at = tensor_info_at(data, name) + 8 + len(name)
    n_dims = struct.unpack_from("<I", data, at)[0]
    if ne0 is not None:
        struct.pack_into("<Q", data, at + 4, ne0)
    if type_id is not None:
        struct.pack_into("<I", data, at + 4 + 8 * n_dims, type_id)


err_dir = os.path.join(out_dir, "errors")
os.makedirs(err_dir, exist_ok=True)
base_path = os.path.join(err_dir, "base.tmp")
base = write_base(base_path)
last = gguf.GGUFReader(base_path).tensors[-1]
os.remove(base_path)
broken = {}
b = bytearray(base)
patch_info(b, "blk.0.attn_q.weight", ne0=48)
broken["row-not-block"] = b
broken["truncated-data"] = base[:int(last.data_offset) + int(last.n_bytes) - 10]
b = bytearray(base)
patch_info(b, "blk.0.attn_q.weight", type_id=99)
broken["unknown-type"] = b
b = bytearray(base)
patch_info(b, "blk.0.attn_q.weight", type_id=31)
broken["removed-type"] = b
for name, data in broken.items():
    with open(os.path.join(err_dir, name + ".gguf"), "wb") as f:
        f.write(bytes(data))

size = os.path.getsize(path) + os.path.getsize(path2) + total
print(f"wrote {len(tensors)} tensors, {size} bytes in {os.path.abspath(out_dir)}")
