// GGUF reading and dequantisation. tests/data/gguf is written by scripts/gguf/make_fixtures.py
// with the gguf Python package: all_types.gguf holds a tensor of every type we dequantise and
// expected/<tensor>.f32 its gguf.quants.dequantize values, compared bit for bit (NaNs too).
// The error tests build small files by hand (and corrupt copies of the fixture on disk).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "luminal/io/gguf.hpp"
#include "luminal/io/gguf_dequant.hpp"
#include "support/test_data.hpp"

namespace {

namespace fs = std::filesystem;
using luminal::Error;
using namespace luminal::io;

fs::path data_dir() { return luminal::testing::gguf_data_dir("all_types.gguf"); }

std::vector<uint8_t> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<uint32_t> bits_of(std::span<const float> v) {
  std::vector<uint32_t> out(v.size());
  if (!v.empty()) std::memcpy(out.data(), v.data(), v.size() * 4);
  return out;
}

// Expects `f` to throw a luminal::Error whose message contains every one of `parts`.
void expect_error(const std::function<void()>& f, std::initializer_list<std::string> parts) {
  try {
    f();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
    return;
  }
  ADD_FAILURE() << "no luminal::Error thrown";
}

// ---- a little GGUF writer for hand-made (and broken) files ----

struct Bytes {
  std::vector<uint8_t> b;
  template <class T>
  Bytes& put(T v) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));
    b.insert(b.end(), tmp, tmp + sizeof(T));
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& raw(const std::vector<uint8_t>& v) {
    b.insert(b.end(), v.begin(), v.end());
    return *this;
  }
};

// A value: its u32 type then its encoding.
std::vector<uint8_t> v_u32(uint32_t x) { return Bytes().put<uint32_t>(4).put(x).b; }
std::vector<uint8_t> v_str(const std::string& s) { return Bytes().put<uint32_t>(8).str(s).b; }
std::vector<uint8_t> v_typed(uint32_t type, std::vector<uint8_t> payload) {
  return Bytes().put(type).raw(payload).b;
}

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> ne;  // innermost first, as stored
  uint32_t type = 0;
  uint64_t offset = 0;
};

struct Gguf {
  uint32_t version = 3;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> kv;
  std::vector<TensorInfo> tensors;
  std::vector<uint8_t> data;
  uint64_t alignment = 32;
  bool pad = true;

  std::vector<uint8_t> bytes() const {
    Bytes o;
    o.raw({'G', 'G', 'U', 'F'}).put(version).put<uint64_t>(tensors.size()).put<uint64_t>(kv.size());
    for (const auto& [k, v] : kv)
      o.str(k).raw(v);
    for (const auto& t : tensors) {
      o.str(t.name).put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
      for (uint64_t d : t.ne)
        o.put(d);
      o.put(t.type).put(t.offset);
    }
    while (pad && o.b.size() % alignment)
      o.b.push_back(0);
    return o.raw(data).b;
  }
};

// One F32 tensor "w" of 4 values (the base the error tests break).
Gguf one_tensor() {
  Gguf g;
  g.kv.push_back({"general.architecture", v_str("llama")});
  g.tensors.push_back({"w", {4}, 0, 0});
  for (float x : {1.0f, -2.0f, 0.5f, 8.0f}) {
    uint8_t tmp[4];
    std::memcpy(tmp, &x, 4);
    g.data.insert(g.data.end(), tmp, tmp + 4);
  }
  return g;
}

GgufFile parse(const Gguf& g) { return GgufFile::from_bytes(g.bytes(), "hand.gguf"); }

// ---- the fixture: every type bit-exact ----

struct Expect {
  std::string name;
  GgmlType type;
  std::vector<int64_t> shape;
};
const std::vector<Expect> kTensors = {
    {"f32", GgmlType::F32, {5, 7}},
    {"f32.3d", GgmlType::F32, {2, 3, 4}},
    {"f16", GgmlType::F16, {7, 9}},
    {"bf16", GgmlType::BF16, {3, 11}},
    {"q8_0.quantized", GgmlType::Q8_0, {5, 64}},
    {"q8_0.random", GgmlType::Q8_0, {9, 64}},
    {"q4_0.quantized", GgmlType::Q4_0, {5, 64}},
    {"q4_0.random", GgmlType::Q4_0, {9, 64}},
    {"q4_1.quantized", GgmlType::Q4_1, {5, 64}},
    {"q4_1.random", GgmlType::Q4_1, {9, 64}},
    {"q5_0.quantized", GgmlType::Q5_0, {5, 64}},
    {"q5_0.random", GgmlType::Q5_0, {9, 64}},
    {"q5_1.quantized", GgmlType::Q5_1, {5, 64}},
    {"q5_1.random", GgmlType::Q5_1, {9, 64}},
    {"q8_0.3d", GgmlType::Q8_0, {2, 3, 32}},
    {"q4_k.random", GgmlType::Q4_K, {7, 512}},
    {"q5_k.random", GgmlType::Q5_K, {7, 512}},
    {"q6_k.random", GgmlType::Q6_K, {7, 512}},
};

TEST(Gguf, TensorTable) {
  auto f = GgufFile::open(data_dir() / "all_types.gguf");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  ASSERT_EQ(f.tensors().size(), kTensors.size());
  for (size_t i = 0; i < kTensors.size(); ++i) {
    const GgufTensor& t = f.tensors()[i];
    const Expect& e = kTensors[i];
    EXPECT_EQ(t.name, e.name);
    EXPECT_EQ(t.type, e.type) << t.name;
    EXPECT_EQ(t.shape, e.shape) << t.name;
    EXPECT_EQ(t.offset % 32, 0u) << t.name;
    const auto info = ggml_type_info(t.type);
    EXPECT_EQ(t.size_bytes, static_cast<uint64_t>(t.numel() / info.block_size * info.type_size));
    EXPECT_EQ(t.data.size(), t.size_bytes);
    // Zero-copy: the span points into the mapping, where the offset says.
    EXPECT_EQ(t.data.data(), f.buffer().data() + f.data_offset() + t.offset) << t.name;
    EXPECT_EQ(&f.tensor(e.name), &t);
  }
  EXPECT_EQ(ggml_type_name(GgmlType::Q4_K), "Q4_K");
  EXPECT_EQ(ggml_type_info(GgmlType::Q6_K).type_size, 210);
  EXPECT_FALSE(ggml_type_info(4u).has_value());  // Q4_2, removed from ggml
  EXPECT_TRUE(f.contains_tensor("q6_k.random"));
  EXPECT_FALSE(f.contains_tensor("nope"));
  expect_error([&] { f.tensor("nope"); }, {"all_types.gguf", "no tensor 'nope'", "18 tensors"});
}

TEST(Gguf, DequantiseBitExact) {
  auto f = GgufFile::open(data_dir() / "all_types.gguf");
  for (const GgufTensor& t : f.tensors()) {
    SCOPED_TRACE(t.name);
    const auto raw = read_file(data_dir() / "expected" / (t.name + ".f32"));
    ASSERT_EQ(raw.size(), static_cast<size_t>(t.numel()) * 4);
    std::vector<uint32_t> want(raw.size() / 4);
    std::memcpy(want.data(), raw.data(), raw.size());
    const std::vector<uint32_t> got = bits_of(dequantize(t));
    ASSERT_EQ(got.size(), want.size());
    size_t bad = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      if (got[i] != want[i] && ++bad <= 5)
        ADD_FAILURE() << "value " << i << ": got 0x" << std::hex << got[i] << ", want 0x" << want[i]
                      << std::dec;
    }
    EXPECT_EQ(bad, 0u);
    // Into a caller buffer: the same bits.
    std::vector<float> buf(static_cast<size_t>(t.numel()));
    dequantize_into(t, buf);
    EXPECT_EQ(bits_of(buf), got);
  }
}

TEST(Gguf, DequantiseSpecialValues) {
  auto f = GgufFile::open(data_dir() / "all_types.gguf");
  // F16: the signalling NaN 0x7c01 keeps its payload and stays signalling; subnormals are exact.
  const auto h = bits_of(dequantize(f.tensor("f16")));
  EXPECT_EQ(h[0], 0x7f800000u);  // +Inf
  EXPECT_EQ(h[1], 0xff800000u);  // -Inf
  EXPECT_EQ(h[2], 0x7fc00000u);  // quiet NaN
  EXPECT_EQ(h[3], 0x7f802000u);  // signalling NaN
  EXPECT_EQ(h[6], 0x33800000u);  // 2^-24
  EXPECT_EQ(h[9], 0x80000000u);  // -0
  const auto s = bits_of(dequantize(f.tensor("f32")));
  EXPECT_EQ(s[1], 0x7fa00001u);
  const auto b = bits_of(dequantize(f.tensor("bf16")));
  EXPECT_EQ(b[1], 0x7f810000u);
  // The first Q8_0 random block has scale 65504 (f16 max).
  const auto q = dequantize(f.tensor("q8_0.random"));
  const auto& blk = f.tensor("q8_0.random").data;
  EXPECT_EQ(q[0], static_cast<float>(static_cast<int8_t>(blk[2])) * 65504.0f);
  // The all-zero last block dequantises to +0.
  EXPECT_EQ(bits_of(q).back(), 0u);
}

TEST(Gguf, DequantiseErrors) {
  auto f = GgufFile::open(data_dir() / "all_types.gguf");
  std::vector<float> small(3);
  expect_error([&] { dequantize_into(f.tensor("f16"), small); },
               {"tensor 'f16'", "output buffer has 3 floats", "63 values"});
  Gguf g;
  g.tensors.push_back({"blk.0.q2", {256}, 10, 0});  // Q2_K
  g.data.assign(84, 0);
  auto q2 = parse(g);
  expect_error([&] { dequantize(q2.tensor("blk.0.q2")); },
               {"hand.gguf", "tensor 'blk.0.q2'", "dequantising Q2_K is not supported", "Q6_K"});
  EXPECT_FALSE(can_dequantize(GgmlType::Q2_K));
  std::vector<uint8_t> q2_block(84);
  std::vector<float> q2_out(256);
  expect_error([&] { dequantize_blocks(GgmlType::Q2_K, q2_block, q2_out); },
               {"dequantising ggml type Q2_K is not supported"});
  expect_error([&] { dequantize_blocks(static_cast<GgmlType>(4), q2_block, q2_out); },
               {"dequantising ggml type 4 is not supported"});
  expect_error([&] { ggml_type_info(static_cast<GgmlType>(4)); }, {"ggml type 4 is unknown"});
  EXPECT_TRUE(can_dequantize(GgmlType::Q5_K));
  std::vector<uint8_t> bytes(18);
  std::vector<float> out(31);
  expect_error([&] { dequantize_blocks(GgmlType::Q4_0, bytes, out); },
               {"Q4_0", "31 values need a multiple of 32"});
  out.resize(64);
  expect_error([&] { dequantize_blocks(GgmlType::Q4_0, bytes, out); },
               {"64 values need 36 bytes", "got 18"});
}

// ---- metadata ----

TEST(Gguf, MetadataEveryType) {
  auto f = GgufFile::open(data_dir() / "all_types.gguf");
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get("test.u8").type(), GgufValueType::U8);
  EXPECT_EQ(f.get_uint("test.u8"), 200u);
  EXPECT_EQ(f.get("test.i8").type(), GgufValueType::I8);
  EXPECT_EQ(f.get_int("test.i8"), -100);
  EXPECT_EQ(f.get("test.u16").type(), GgufValueType::U16);
  EXPECT_EQ(f.get_uint("test.u16"), 60000u);
  EXPECT_EQ(f.get("test.i16").type(), GgufValueType::I16);
  EXPECT_EQ(f.get_int("test.i16"), -30000);
  EXPECT_EQ(f.get("test.u32").type(), GgufValueType::U32);
  EXPECT_EQ(f.get_uint("test.u32"), 4000000000u);
  EXPECT_EQ(f.get("test.i32").type(), GgufValueType::I32);
  EXPECT_EQ(f.get_int("test.i32"), -2000000000);
  EXPECT_EQ(f.get("test.f32").type(), GgufValueType::F32);
  EXPECT_EQ(f.get_float("test.f32"), static_cast<double>(3.14159f));
  EXPECT_EQ(f.get("test.bool").type(), GgufValueType::Bool);
  EXPECT_TRUE(f.get_bool("test.bool"));
  EXPECT_EQ(f.get_string("test.string"), "h\xc3\xa9llo w\xc3\xb6rld");
  EXPECT_EQ(f.get("test.u64").type(), GgufValueType::U64);
  EXPECT_EQ(f.get_uint("test.u64"), (uint64_t{1} << 63) + 5);
  EXPECT_EQ(f.get("test.i64").type(), GgufValueType::I64);
  EXPECT_EQ(f.get_int("test.i64"), -(int64_t{1} << 62));
  EXPECT_EQ(f.get("test.f64").type(), GgufValueType::F64);
  EXPECT_EQ(f.get_float("test.f64"), 2.718281828459045);

  EXPECT_EQ(f.get_array("test.array.u8").element_type, GgufValueType::U8);
  EXPECT_EQ(f.get_int_array("test.array.u8"), (std::vector<int64_t>{1, 2, 255}));
  EXPECT_EQ(f.get_array("test.array.i64").element_type, GgufValueType::I64);
  EXPECT_EQ(f.get_int_array("test.array.i64"),
            (std::vector<int64_t>{-(int64_t{1} << 40), 0, int64_t{1} << 40}));
  EXPECT_EQ(f.get_array("test.array.u64").items.at(0).as_uint(), UINT64_MAX);
  EXPECT_EQ(f.get_float_array("test.array.f64"), (std::vector<double>{0.5, -1e300}));
  EXPECT_EQ(f.get_array("test.array.f32").element_type, GgufValueType::F32);
  EXPECT_EQ(f.get_float_array("test.array.f32"), (std::vector<double>{1.5, -2.25}));
  EXPECT_EQ(f.get_string_array("test.array.string"), (std::vector<std::string>{"a", "bc", ""}));
  const auto& bools = f.get_array("test.array.bool");
  ASSERT_EQ(bools.items.size(), 2u);
  EXPECT_TRUE(bools.items[0].as_bool());
  EXPECT_FALSE(bools.items[1].as_bool());

  const GgufArray& nested = f.get_array("test.array.nested");
  EXPECT_EQ(nested.element_type, GgufValueType::Array);
  ASSERT_EQ(nested.items.size(), 2u);
  EXPECT_EQ(nested.items[0].as_array().element_type, GgufValueType::I32);
  EXPECT_EQ(nested.items[0].as_array().items.at(1).as_int(), 2);
  EXPECT_EQ(nested.items[1].as_array().items.size(), 1u);
  EXPECT_EQ(nested.items[1].as_array().items[0].as_int(), 3);
  const GgufArray& ns = f.get_array("test.array.nested_strings");
  EXPECT_EQ(ns.items.at(1).as_array().items.at(1).as_string(), "z");
  const GgufArray& deep = f.get_array("test.array.deep");
  EXPECT_EQ(deep.items.at(0).as_array().items.at(0).as_array().items.at(0).as_int(), 7);
  EXPECT_EQ(f.get("test.array.nested").describe(), "array of 2 array");

  EXPECT_EQ(f.get_uint("llama.block_count"), 2u);
  EXPECT_EQ(f.get_float("llama.rope.freq_base"), 10000.0);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens").size(), 10u);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens")[8],
            "\xc4\xa0"
            "a");
  EXPECT_TRUE(f.contains("tokenizer.chat_template"));
  ASSERT_EQ(f.metadata().size(), 32u);  // in file order
  EXPECT_EQ(f.metadata()[0].first, "general.architecture");
  EXPECT_EQ(f.metadata()[1].first, "test.u8");
  EXPECT_EQ(f.find_int("no.such.key"), std::nullopt);
  EXPECT_EQ(f.find_uint("llama.context_length"), 128u);
  EXPECT_EQ(f.find_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.find("no.such.key"), nullptr);
}

TEST(Gguf, MetadataTypeErrors) {
  auto f = GgufFile::open(data_dir() / "all_types.gguf");
  expect_error([&] { f.get_int("test.string"); },
               {"all_types.gguf", "key 'test.string'", "expected an integer", "got string"});
  expect_error([&] { f.get_string("test.u32"); },
               {"key 'test.u32'", "expected string", "got u32 4000000000"});
  expect_error([&] { f.get_float("test.i32"); }, {"key 'test.i32'", "expected f32 or f64", "i32"});
  expect_error([&] { f.get_bool("test.u8"); }, {"expected bool", "got u8 200"});
  expect_error([&] { f.get_array("test.f64"); }, {"expected array", "got f64 2.71828"});
  expect_error([&] { f.get_uint("test.i8"); }, {"expected a non-negative integer", "i8 -100"});
  expect_error([&] { f.get_int("test.u64"); }, {"key 'test.u64'", "does not fit in an i64"});
  expect_error([&] { f.get_uint("test.string"); },
               {"key 'test.string'", "expected an unsigned integer", "got string"});
  expect_error([&] { f.get_string_array("test.array.nested"); },
               {"key 'test.array.nested'", "element 0", "expected string", "array of 2 i32"});
  expect_error([&] { f.get("no.such.key"); }, {"all_types.gguf", "no metadata key 'no.such.key'"});
  expect_error([&] { f.find_int("test.string"); }, {"key 'test.string'", "expected an integer"});
}

TEST(Gguf, Version2Alignment64) {
  auto f = GgufFile::open(data_dir() / "align64_v2.gguf");
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.get_uint("general.alignment"), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[1].offset, 64u);
  EXPECT_EQ(dequantize(f.tensor("a")), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(f.tensor("b").shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(dequantize(f.tensor("b")), (std::vector<float>{1, 2, 3, 4}));
}

TEST(Gguf, HandMadeFiles) {
  // The base file parses; shapes are reversed.
  Gguf g = one_tensor();
  g.tensors[0].ne = {2, 2};
  auto f = parse(g);
  EXPECT_EQ(f.tensor("w").shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(dequantize(f.tensor("w")), (std::vector<float>{1, -2, 0.5, 8}));
  // ne = (2, 1, 3): three rows of 2 stored innermost first -> [3, 1, 2]; a 0-d tensor.
  Gguf g3;
  g3.tensors.push_back({"t", {2, 1, 3}, 1, 0});
  g3.tensors.push_back({"scalar", {}, 0, 32});
  g3.data.assign(36, 0);
  auto f3 = parse(g3);
  EXPECT_EQ(f3.tensor("t").shape, (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(f3.tensor("t").size_bytes, 12u);
  EXPECT_TRUE(f3.tensor("scalar").shape.empty());
  EXPECT_EQ(f3.tensor("scalar").numel(), 1);
  // No tensors, no padding; an empty array keeps its element type.
  Gguf e;
  e.pad = false;
  e.kv.push_back({"a", v_typed(9, Bytes().put<uint32_t>(8).put<uint64_t>(0).b)});
  e.kv.push_back({"b", v_typed(7, {0})});
  e.kv.push_back({"c", v_str("")});
  auto fe = parse(e);
  EXPECT_TRUE(fe.tensors().empty());
  EXPECT_EQ(fe.get_array("a").element_type, GgufValueType::String);
  EXPECT_TRUE(fe.get_array("a").items.empty());
  EXPECT_FALSE(fe.get_bool("b"));
  EXPECT_EQ(fe.get_string("c"), "");
  // Version 2 and 3 are the same format.
  Gguf v2 = one_tensor();
  v2.version = 2;
  EXPECT_EQ(parse(v2).version(), 2u);
}

// Each validation error, on hand-made files.
TEST(Gguf, ValidationErrors) {
  auto err = [](const Gguf& g, std::initializer_list<std::string> parts) {
    expect_error([&] { parse(g); }, parts);
  };
  auto with = [](const std::function<void(Gguf&)>& edit) {
    Gguf g = one_tensor();
    edit(g);
    return g;
  };
  err(with([](Gguf& g) { g.version = 1; }),
      {"hand.gguf", "unsupported version 1", "supported: 2 and 3"});
  err(with([](Gguf& g) { g.version = 7; }), {"unsupported version 7"});
  err(with([](Gguf& g) { g.version = 0x03000000; }), {"big-endian GGUF files are not supported"});
  err(with([](Gguf& g) { g.tensors[0].offset = 1024; }),
      {"tensor 'w'", "data [1024, 1040) of the data section (16 bytes of F32, shape [4])",
       "runs past the end of the file", "The file is truncated", "download or copy it again"});
  err(with([](Gguf& g) { g.tensors[0].type = 4; }),
      {"tensor 'w'", "unknown ggml type 4 (Q4_2, which ggml has removed)"});
  err(with([](Gguf& g) { g.tensors[0].type = 1000; }),
      {"unknown ggml type 1000 (the known ids are 0-3, 6-30, 34, 35, 39-41)",
       "the file is corrupt, or a newer ggml wrote it"});
  err(with([](Gguf& g) {
        g.tensors.push_back({"w", {4}, 0, 32});
      }),
      {"tensor 'w'", "duplicate tensor name"});
  err(with([](Gguf& g) {
        g.kv.push_back({"general.architecture", v_str("x")});
      }),
      {"key 'general.architecture'", "duplicate key"});
  err(with([](Gguf& g) { g.tensors[0].offset = 8; }),
      {"tensor 'w'", "offset 8 is not a multiple of the alignment 32"});
  err(with([](Gguf& g) {
        g.tensors[0].ne = {uint64_t{1} << 62, 4};
      }),
      {"tensor 'w'", "shape overflow", "more than 2^63 elements"});
  err(with([](Gguf& g) { g.tensors[0].ne = {uint64_t{1} << 63}; }), {"shape overflow"});
  err(with([](Gguf& g) {
        g.tensors[0].type = 28;  // F64: 2^62 values fit, their 2^65 bytes do not
        g.tensors[0].ne = {uint64_t{1} << 62};
      }),
      {"shape overflow", "F64", "more than 2^64 bytes"});
  err(with([](Gguf& g) {
        g.tensors[0].ne = {1, 1, 1, 1, 4};
      }),
      {"tensor 'w'", "5 dims (GGUF allows at most 4)"});
  err(with([](Gguf& g) {
        g.tensors[0].type = 2;
        g.tensors[0].ne = {48};
      }),
      {"row length 48 (ne[0]; ne = (48)) is not a multiple of the Q4_0 block size 32",
       "whole blocks of 32 values (18 bytes each)"});
  err(with([](Gguf& g) {
        g.tensors[0].ne = {2};
        g.tensors.push_back({"v", {4}, 0, 0});
      }),
      {"overlaps tensor"});
  err(with([](Gguf& g) {
        g.kv.push_back({"k", v_typed(13, {0})});
      }),
      {"key 'k'", "unknown value type 13"});
  err(with([](Gguf& g) {
        g.kv.push_back({"k", v_typed(9, Bytes().put<uint32_t>(17).b)});
      }),
      {"key 'k'", "unknown array element type 17"});
  err(with([](Gguf& g) {
        g.kv.push_back({"k", v_typed(7, {2})});
      }),
      {"key 'k'", "bool value 2 (must be 0 or 1)"});
  err(with([](Gguf& g) {
        g.kv.push_back({"general.alignment", v_u32(48)});
      }),
      {"key 'general.alignment'", "must be a power of two, got 48"});
  err(with([](Gguf& g) {
        g.kv.push_back({"general.alignment", v_str("64")});
      }),
      {"key 'general.alignment'", "expected u32, got string '64'"});
  err(with([](Gguf& g) {  // arrays nested 9 deep
        Bytes b;
        for (int i = 0; i < 9; ++i)
          b.put<uint32_t>(9).put<uint64_t>(1);
        b.put<uint32_t>(0).put<uint64_t>(0);
        g.kv.push_back({"k", v_typed(9, b.b)});
      }),
      {"key 'k'", "arrays nested deeper than 8"});
  err(with([](Gguf& g) {  // an array claiming 2^40 elements
        g.kv.push_back(
            {"k", v_typed(9, Bytes().put<uint32_t>(5).put<uint64_t>(uint64_t{1} << 40).b)});
      }),
      {"key 'k'", "truncated: an array of 1099511627776 i32", "does not fit"});
  err(with([](Gguf& g) {  // a string longer than the file
        g.kv.push_back({"k", v_typed(8, Bytes().put<uint64_t>(1000).b)});
      }),
      {"key 'k'", "truncated: the string value needs 1000 bytes"});
}

TEST(Gguf, TruncatedAndCountErrors) {
  const auto full = one_tensor().bytes();
  auto cut = [&](size_t n) { return std::vector<uint8_t>(full.begin(), full.begin() + n); };
  expect_error([&] { GgufFile::from_bytes(cut(3), "t.gguf"); },
               {"t.gguf", "truncated: the file has 3 bytes"});
  expect_error([&] { GgufFile::from_bytes(cut(6), "t.gguf"); },
               {"header", "truncated: the version needs 4 bytes at offset 4"});
  expect_error([&] { GgufFile::from_bytes(cut(40), "t.gguf"); },
               {"metadata entry 0", "truncated: the key needs 20 bytes at offset 32",
                "the file ends at 40"});
  expect_error([&] { GgufFile::from_bytes(cut(60), "t.gguf"); },
               {"key 'general.architecture'", "truncated: the string value"});
  expect_error([&] { GgufFile::from_bytes(cut(full.size() - 20), "t.gguf"); },
               {"truncated: the data section starts at offset"});
  expect_error(
      [&] { GgufFile::from_bytes(cut(full.size() - 1), "t.gguf"); },
      {"tensor 'w'", "ends at file byte 144", "the file has 143 bytes. The file is truncated"});
  // Two tensors past the end: the first is named, with the size every tensor needs.
  Gguf two = one_tensor();
  two.tensors.push_back({"v", {4}, 0, 32});
  two.data.resize(8);
  expect_error([&] { parse(two); },
               {"tensor 'w'",
                "ends at file byte 176, the file has 168 bytes (its tensors need 208 "
                "bytes). The file is truncated"});
  // Counts that cannot fit are refused before anything is allocated.
  auto counts = full;
  counts[16] = 0xff;
  counts[23] = 0x0f;
  expect_error([&] { GgufFile::from_bytes(counts, "t.gguf"); },
               {"truncated:", "metadata entries cannot fit"});
  counts = full;
  counts[8] = 0xff;
  counts[15] = 0x0f;
  expect_error([&] { GgufFile::from_bytes(counts, "t.gguf"); },
               {"truncated:", "tensor infos cannot fit"});
  std::vector<uint8_t> bad = full;
  bad[0] = 'X';
  expect_error([&] { GgufFile::from_bytes(bad, "t.gguf"); },
               {"t.gguf", "bad magic 'XGUF' (expected 'GGUF')", "not a GGUF file"});
}

// Corrupted copies of the fixture, written to a temp folder and opened from disk.
TEST(Gguf, CorruptedFilesOnDisk) {
  const auto good = read_file(data_dir() / "all_types.gguf");
  const fs::path dir =
      fs::temp_directory_path() / ("luminal_gguf_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
    std::ofstream out(dir / name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    return dir / name;
  };
  // Truncated in the middle of the data section: the last tensor lies past the end.
  auto p = write("truncated.gguf", std::vector<uint8_t>(good.begin(), good.end() - 100));
  expect_error([&] { GgufFile::open(p); },
               {"truncated.gguf", "tensor 'q6_k.random'", "runs past the end of the file"});
  auto bad = good;
  std::memcpy(bad.data(), "GGML", 4);
  p = write("magic.gguf", bad);
  expect_error([&] { GgufFile::open(p); }, {"magic.gguf", "bad magic 'GGML'"});
  bad = good;
  bad[4] = 4;
  p = write("version.gguf", bad);
  expect_error([&] { GgufFile::open(p); }, {"version.gguf", "unsupported version 4"});
  // The first tensor info follows the metadata: find it by its name ("f32", then n_dims 2).
  const std::string marker = std::string("\x03\0\0\0\0\0\0\0f32\x02\0\0\0", 15);
  auto it = std::search(good.begin(), good.end(), marker.begin(), marker.end());
  ASSERT_NE(it, good.end());
  const size_t info = static_cast<size_t>(it - good.begin());
  const size_t type_at = info + 15 + 16, offset_at = type_at + 4;
  bad = good;
  bad[type_at] = 5;  // Q4_3, removed from ggml
  p = write("type.gguf", bad);
  expect_error([&] { GgufFile::open(p); }, {"type.gguf", "tensor 'f32'", "unknown ggml type 5"});
  bad = good;
  bad[offset_at + 3] = 0x10;  // offset + 256 MiB
  p = write("offset.gguf", bad);
  expect_error([&] { GgufFile::open(p); },
               {"offset.gguf", "tensor 'f32'", "runs past the end of the file",
                "or its offsets are corrupt"});
  // A duplicate name: "q4_1.random" renamed to "q4_0.random" (same length).
  bad = good;
  const std::string q41 = "q4_1.random";
  auto it3 = std::search(bad.begin(), bad.end(), q41.begin(), q41.end());
  ASSERT_NE(it3, bad.end());
  *(it3 + 3) = '0';
  p = write("duplicate.gguf", bad);
  expect_error([&] { GgufFile::open(p); },
               {"duplicate.gguf", "tensor 'q4_0.random'", "duplicate tensor name"});
  expect_error([&] { GgufFile::open(dir / "missing.gguf"); }, {"missing.gguf", "cannot open"});
  expect_error([&] { GgufFile::open(dir); }, {"not a regular file"});
  fs::remove_all(dir);
}

// The broken files of tests/data/gguf/errors (scripts/gguf/make_fixtures.py; seeds of the fuzz
// corpus too): each message names the file, the tensor, what was expected and the fix.
TEST(Gguf, ErrorCorpus) {
  const fs::path dir = data_dir() / "errors";
  expect_error([&] { GgufFile::open(dir / "row-not-block.gguf"); },
               {"row-not-block.gguf", "tensor 'blk.0.attn_q.weight'",
                "row length 48 (ne[0]; ne = (48, 2)) is not a multiple of the Q4_0 block size 32",
                "Q4_0 stores each row as whole blocks of 32 values (18 bytes each)",
                "convert or quantize the model again"});
  // The last tensor (output_norm, 64 f32) lacks its last 10 bytes.
  const uint64_t size = fs::file_size(dir / "truncated-data.gguf");
  expect_error([&] { GgufFile::open(dir / "truncated-data.gguf"); },
               {"truncated-data.gguf", "tensor 'output_norm.weight'",
                "(256 bytes of F32, shape [64]) runs past the end of the file",
                "ends at file byte " + std::to_string(size + 10),
                "the file has " + std::to_string(size) + " bytes. The file is truncated",
                "The file is truncated", "download or copy it again"});
  expect_error([&] { GgufFile::open(dir / "unknown-type.gguf"); },
               {"unknown-type.gguf", "tensor 'blk.0.attn_q.weight'",
                "unknown ggml type 99 (the known ids are 0-3, 6-30, 34, 35, 39-41)",
                "check the download, or convert the model to one of the known types"});
  expect_error([&] { GgufFile::open(dir / "removed-type.gguf"); },
               {"removed-type.gguf", "tensor 'blk.0.attn_q.weight'",
                "unknown ggml type 31 (Q4_0_4_4, which ggml has removed)",
                "quantize the model to Q4_0 instead"});
}

TEST(Gguf, MoveKeepsSpans) {
  auto f = GgufFile::open(data_dir() / "all_types.gguf");
  const uint8_t* before = f.tensor("f32").data.data();
  GgufFile g = std::move(f);
  EXPECT_EQ(g.tensor("f32").data.data(), before);
  EXPECT_EQ(dequantize(g.tensor("f32.3d")).size(), 24u);
}

}  // namespace
