// Safetensors reader, writer, conversion and binding, against files written by the Python
// `safetensors` package (scripts/fixtures/gen_safetensors.py; manifest.json holds the raw bytes
// the reference reader sees, as hex).
#include "luminal/io/safetensors.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/runtime/reference.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using luminal::DType;
using luminal::Error;
namespace io = luminal::io;

namespace {

fs::path fixtures() {
  const char* env = std::getenv("LUMINAL_FIXTURES");
  if (!env || !*env) {
    ADD_FAILURE() << "LUMINAL_FIXTURES is not set: run through ctest (the generate_fixtures test "
                     "writes them), or run scripts/fixtures/generate.sh OUT and set "
                     "LUMINAL_FIXTURES=OUT";
    throw std::runtime_error("LUMINAL_FIXTURES unset");
  }
  return fs::path(env) / "safetensors";
}

const json& manifest() {
  static json m = [] {
    std::ifstream in(fixtures() / "manifest.json");
    if (!in) throw std::runtime_error("no manifest.json in " + fixtures().string());
    return json::parse(in);
  }();
  return m;
}

std::string hex(std::span<const uint8_t> b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b) {
    s += d[x >> 4];
    s += d[x & 15];
  }
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

template <class T>
std::span<const uint8_t> as_bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

std::vector<uint8_t> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expect_matches(const io::TensorView& t, const json& want) {
  SCOPED_TRACE(t.file + " : " + t.name);
  EXPECT_EQ(io::safetensors_dtype_name(t.dtype), want["dtype"].get<std::string>());
  EXPECT_EQ(t.shape, want["shape"].get<std::vector<int64_t>>());
  EXPECT_EQ(hex(t.bytes), want["hex"].get<std::string>());
  EXPECT_EQ(static_cast<size_t>(t.numel() * luminal::size_bytes(t.dtype)), t.bytes.size());
}

}  // namespace

TEST(Safetensors, ReadsEveryDtypeBitExact) {
  std::set<std::string> seen;
  for (const auto& [rel, want] : manifest()["files"].items()) {
    io::SafeTensors f = io::SafeTensors::open(fixtures() / rel);
    EXPECT_EQ(f.metadata(), (want["metadata"].get<std::map<std::string, std::string>>()));
    ASSERT_EQ(f.tensors().size(), want["tensors"].size()) << rel;
    for (const auto& [name, t] : want["tensors"].items()) {
      ASSERT_TRUE(f.contains(name)) << rel << " " << name;
      expect_matches(f.get(name), t);
      seen.insert(t["dtype"].get<std::string>());
    }
    // tensors() is sorted by name; 0-d and empty tensors are present.
    for (size_t i = 1; i < f.tensors().size(); ++i)
      EXPECT_LT(f.tensors()[i - 1].name, f.tensors()[i].name);
    EXPECT_TRUE(f.get("scalar").shape.empty());
    EXPECT_EQ(f.get("scalar").numel(), 1);
    EXPECT_EQ(f.get("empty").numel(), 0);
    EXPECT_TRUE(f.get("empty").bytes.empty());
  }
  for (const char* d :
       {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2"})
    EXPECT_TRUE(seen.count(d)) << d;
}

TEST(Safetensors, DtypeNamesMapBothWays) {
  for (DType t : luminal::kAllDTypes) {
    auto back = io::dtype_from_safetensors(io::safetensors_dtype_name(t));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, t == DType::TF32 ? DType::F32 : t);
  }
  EXPECT_FALSE(io::dtype_from_safetensors("U32").has_value());
  EXPECT_FALSE(io::dtype_from_safetensors("f32").has_value());
}

TEST(Safetensors, ViewsAreZeroCopyIntoTheMapping) {
  io::SafeTensors f = io::SafeTensors::open(fixtures() / "dtypes/F32.safetensors");
  auto buf = f.buffer();
  EXPECT_EQ(buf.size(), fs::file_size(fixtures() / "dtypes/F32.safetensors"));
  const uint8_t* before = f.get("values").bytes.data();
  for (const auto& t : f.tensors()) {
    if (t.bytes.empty()) continue;
    EXPECT_GE(t.bytes.data(), buf.data());
    EXPECT_LE(t.bytes.data() + t.bytes.size(), buf.data() + buf.size());
  }
  // Data section starts 8-byte aligned, as the reference writes it.
  uint64_t n = 0;
  std::memcpy(&n, buf.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  // Moving the file keeps the views valid.
  io::SafeTensors moved = std::move(f);
  EXPECT_EQ(moved.get("values").bytes.data(), before);
  io::Weights w(std::move(moved));
  EXPECT_EQ(w.get("values").bytes.data(), before);
  EXPECT_EQ(w.get("values").file, (fixtures() / "dtypes/F32.safetensors").string());
}

TEST(Safetensors, ShardedFolderAndIndexFile) {
  const json& want = manifest()["sharded"];
  const fs::path folder = fixtures() / want["folder"].get<std::string>();
  for (const fs::path& p : {folder, folder / "model.safetensors.index.json"}) {
    io::Weights w = io::Weights::open(p);
    EXPECT_EQ(w.files().size(), 3u);
    ASSERT_EQ(w.size(), want["tensors"].size());
    for (const auto& [name, t] : want["tensors"].items()) {
      const io::TensorView& v = w.get(name);
      expect_matches(v, t);
      EXPECT_EQ(fs::path(v.file).filename(), t["file"].get<std::string>());
    }
  }
  // A single file and a folder of loose files open too.
  EXPECT_EQ(io::Weights::open(folder / "model-00003-of-00003.safetensors").size(), 1u);
  std::string err = error_of([&] { io::Weights::open(folder).get("nope"); });
  EXPECT_NE(err.find("'nope'"), std::string::npos) << err;
  EXPECT_NE(err.find("model-00001-of-00003.safetensors"), std::string::npos) << err;
}

TEST(Safetensors, MalformedFilesGiveClearErrors) {
  // What each error must say, beyond the file and the tensor.
  const std::map<std::string, std::string> problem = {
      {"too_short", "shorter than the 8-byte header length"},
      {"header_past_file", "header length 1000 runs past the end of the file"},
      {"bad_json", "not valid JSON"},
      {"not_json_object", "does not start with '{'"},
      {"offsets_outside", "lie outside the data section (4 bytes)"},
      {"offsets_reversed", "end before begin"},
      {"overlap", "overlap tensor 'a'"},
      {"size_mismatch",
       "size mismatch: data_offsets [0, 12] hold 12 bytes but F32 x [2, 2] needs 16"},
      {"unknown_dtype", "unknown dtype 'Q7'"},
      {"unsupported_dtype", "unsupported dtype 'U32'"},
      {"duplicate_names", "duplicate tensor name"},
      {"negative_shape", "shape entries must be non-negative integers"},
      {"missing_offsets", "\"data_offsets\" must be two non-negative integers"},
      {"bad_metadata", "__metadata__ value of 'k' is number, not a string"},
      {"shape_overflow", "element count overflows"},
  };
  size_t n = 0;
  for (const auto& c : manifest()["malformed"]) {
    const std::string cs = c["case"].get<std::string>();
    const fs::path file = fixtures() / c["file"].get<std::string>();
    SCOPED_TRACE(cs);
    std::string err = error_of([&] { io::SafeTensors::open(file); });
    EXPECT_NE(err.find("safetensors '" + file.string() + "'"), std::string::npos) << err;
    if (!c["tensor"].is_null()) {
      EXPECT_NE(err.find("tensor '" + c["tensor"].get<std::string>() + "'"), std::string::npos)
          << err;
    }
    ASSERT_TRUE(problem.count(cs)) << "no expectation for case " << cs;
    EXPECT_NE(err.find(problem.at(cs)), std::string::npos) << err;
    // The in-memory parser gives the same error for the same bytes.
    std::string mem = error_of([&] { io::parse_safetensors(read_file(file), file.string()); });
    EXPECT_EQ(mem, err);
    ++n;
  }
  EXPECT_EQ(n, problem.size());
}

TEST(Safetensors, MalformedFoldersNameIndexShardAndTensor) {
  for (const auto& c : manifest()["malformed_folders"]) {
    const fs::path folder = fixtures() / c["folder"].get<std::string>();
    std::string err = error_of([&] { io::Weights::open(folder); });
    SCOPED_TRACE(err);
    EXPECT_NE(err.find((folder / "model.safetensors.index.json").string()), std::string::npos);
    EXPECT_NE(err.find(c["shard"].get<std::string>()), std::string::npos);
    EXPECT_NE(err.find("'" + c["tensor"].get<std::string>() + "'"), std::string::npos);
  }
  std::string err = error_of([&] { io::Weights::open(fixtures() / "sharded_missing"); });
  EXPECT_NE(err.find("is missing"), std::string::npos) << err;
  err = error_of([&] { io::Weights::open(fixtures() / "no_such_folder"); });
  EXPECT_NE(err.find("no such file or folder"), std::string::npos) << err;
  err = error_of([&] { io::Weights::open(fixtures() / "corpus"); });  // two files, same names
  EXPECT_NE(err.find("duplicate"), std::string::npos) << err;
}

TEST(Safetensors, ConvertsBf16AndFp8ToF32Exactly) {
  io::SafeTensors bf = io::SafeTensors::open(fixtures() / "dtypes/BF16.safetensors");
  const io::TensorView& t = bf.get("values");
  luminal::HostBuffer b = io::convert(t, DType::F32);
  ASSERT_EQ(b.numel(), t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint16_t h;
    uint32_t f;
    std::memcpy(&h, t.bytes.data() + 2 * i, 2);
    std::memcpy(&f, b.bytes.data() + 4 * i, 4);
    EXPECT_EQ(f, static_cast<uint32_t>(h) << 16) << i;  // bf16 -> f32 is a shift, NaN included
  }
  auto e4 = io::to_vector<float>(
      io::SafeTensors::open(fixtures() / "dtypes/F8_E4M3.safetensors").get("values"));
  EXPECT_EQ(e4[2], 1.0f);
  EXPECT_EQ(e4[3], -1.0f);
  EXPECT_TRUE(std::isnan(e4[4]));
  EXPECT_EQ(e4[6], 448.0f);
  EXPECT_EQ(e4[8], std::ldexp(1.0f, -9));  // smallest subnormal
  auto e5 = io::to_vector<double>(
      io::SafeTensors::open(fixtures() / "dtypes/F8_E5M2.safetensors").get("values"));
  EXPECT_EQ(e5[4], INFINITY);
  EXPECT_EQ(e5[5], -INFINITY);
  EXPECT_TRUE(std::isnan(e5[6]));
  EXPECT_EQ(e5[7], 57344.0);
  EXPECT_EQ(e5[9], std::ldexp(1.0, -16));
}

TEST(Safetensors, ConvertsF32ToF16RoundToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and the next f16: ties to even (1.0); 1 + 3*2^-11 rounds up
  // to the even 1 + 2^-9; 65520 overflows to inf; f32 smallest subnormal flushes to +0.
  std::vector<float> v = {1.0f + std::ldexp(1.0f, -11),
                          1.0f + 3 * std::ldexp(1.0f, -11),
                          65520.0f,
                          -65504.0f,
                          std::ldexp(1.0f, -149),
                          NAN};
  io::TensorView t{"x", DType::F32, {6}, as_bytes(v), "mem"};
  luminal::HostBuffer h = io::convert(t, DType::F16);
  std::vector<uint16_t> bits(6);
  std::memcpy(bits.data(), h.bytes.data(), 12);
  EXPECT_EQ(bits[0], 0x3C00);
  EXPECT_EQ(bits[1], 0x3C02);
  EXPECT_EQ(bits[2], 0x7C00);
  EXPECT_EQ(bits[3], 0xFBFF);
  EXPECT_EQ(bits[4], 0x0000);
  EXPECT_EQ(bits[5] & 0x7C00, 0x7C00);
  EXPECT_NE(bits[5] & 0x03FF, 0);
  // Every value of the fixture agrees with the core conversion.
  io::SafeTensors f = io::SafeTensors::open(fixtures() / "dtypes/F32.safetensors");
  const io::TensorView& fv = f.get("values");
  luminal::HostBuffer fh = io::convert(fv, DType::F16);
  for (int64_t i = 0; i < fv.numel(); ++i) {
    float x;
    uint16_t y;
    std::memcpy(&x, fv.bytes.data() + 4 * i, 4);
    std::memcpy(&y, fh.bytes.data() + 2 * i, 2);
    EXPECT_EQ(y, luminal::f32_to_f16_bits(x)) << i;
  }
}

TEST(Safetensors, IntegerConversionsAreChecked) {
  io::SafeTensors f = io::SafeTensors::open(fixtures() / "dtypes/I32.safetensors");
  const io::TensorView& t = f.get("values");
  auto i64 = io::to_vector<int64_t>(t);
  EXPECT_EQ(i64[2], INT32_MAX);
  EXPECT_EQ(i64[3], INT32_MIN);
  luminal::HostBuffer b = io::convert(t, DType::I64);
  EXPECT_EQ(std::memcmp(b.bytes.data(), i64.data(), b.bytes.size()), 0);
  std::string err = error_of([&] { io::convert(t, DType::I8); });
  EXPECT_NE(err.find("tensor 'values'"), std::string::npos) << err;
  EXPECT_NE(err.find("I32.safetensors"), std::string::npos) << err;
  EXPECT_NE(err.find("does not fit i8"), std::string::npos) << err;
  err = error_of([&] {
    io::convert(io::SafeTensors::open(fixtures() / "dtypes/F32.safetensors").get("values"),
                DType::I32);
  });
  EXPECT_NE(err.find("floats convert only to float dtypes"), std::string::npos) << err;
  auto bools = io::to_vector<int>(
      io::SafeTensors::open(fixtures() / "dtypes/BOOL.safetensors").get("values"));
  EXPECT_EQ(bools, (std::vector<int>{1, 0, 1, 1, 0}));
  err = error_of([&] { io::to_vector<int8_t>(t); });
  EXPECT_NE(err.find("I32.safetensors"), std::string::npos) << err;
}

TEST(Safetensors, WriterRoundTripsEveryFile) {
  const fs::path tmp = fs::temp_directory_path() / ("luminal_st_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  for (const auto& [rel, want] : manifest()["files"].items()) {
    io::SafeTensors f = io::SafeTensors::open(fixtures() / rel);
    const fs::path out = tmp / fs::path(rel).filename();
    io::write_safetensors(out, f.tensors(), f.metadata());
    io::SafeTensors g = io::SafeTensors::open(out);
    EXPECT_EQ(g.metadata(), f.metadata());
    ASSERT_EQ(g.tensors().size(), f.tensors().size());
    for (const auto& [name, t] : want["tensors"].items())
      expect_matches(g.get(name), t);
    // Same layout as the reference writer for single-dtype files: byte-identical.
    EXPECT_EQ(read_file(out), read_file(fixtures() / rel)) << rel;
  }
  // Writer errors name the file and the tensor.
  std::vector<float> v(3);
  io::TensorView bad{"w", DType::F32, {2, 2}, as_bytes(v), ""};
  std::string err = error_of([&] { io::write_safetensors(tmp / "bad.safetensors", {&bad, 1}); });
  EXPECT_NE(err.find("bad.safetensors"), std::string::npos) << err;
  EXPECT_NE(err.find("tensor 'w'"), std::string::npos) << err;
  EXPECT_NE(err.find("holds 12 bytes"), std::string::npos) << err;
  io::TensorView dup[2] = {{"a", DType::F32, {3}, as_bytes(v), ""},
                           {"a", DType::F32, {3}, as_bytes(v), ""}};
  err = error_of([&] { io::serialize_safetensors(dup); });
  EXPECT_NE(err.find("duplicate tensor name"), std::string::npos) << err;
  // In-memory round trip, TF32 written as F32.
  io::TensorView tf{"t", DType::TF32, {3}, as_bytes(v), ""};
  io::SafeTensors m = io::SafeTensors::from_bytes(io::serialize_safetensors({&tf, 1}), "mem");
  EXPECT_EQ(m.get("t").dtype, DType::F32);
  fs::remove_all(tmp);
}

TEST(Safetensors, BindsGraphInputsByName) {
  io::Weights w = io::Weights::open(fixtures() / "sharded");
  const json& want = manifest()["sharded"]["tensors"];
  auto file_f32 = [&](const char* n) {  // the file's values, as f32 (F16 converts exactly)
    io::TensorView v = w.get(n);
    return io::to_vector<float>(v);
  };
  luminal::Graph g;
  auto embed = g.tensor("embed.weight", {4, 3});
  auto ids = g.tensor("layers.0.ids", {3}, DType::I64);
  auto w0 = g.tensor("layers.0.w", {3, 3}, DType::F32);  // file: F16 -> converted
  auto w1 = g.tensor("layers.1.w", {3, "n"});            // dynamic dim, unset: not checked
  auto norm = g.tensor("norm.weight", {3});
  auto extra = g.tensor("unbound", {2});
  auto o_embed = (embed * 1.0).output("o_embed");
  auto o_ids = (ids + ids).output("o_ids");
  auto o_w0 = (w0 * 1.0).output("o_w0");
  auto o_w1 = (w1 * 1.0).output("o_w1");
  auto o_norm = (norm * 2.0).output("o_norm");
  (extra * 1.0).output("o_extra");

  luminal::ReferenceRuntime rt(g);
  io::BindReport r = io::bind(rt, w);
  EXPECT_EQ(r.bound.size(), 5u);
  EXPECT_EQ(r.unset_inputs, std::vector<std::string>{"unbound"});
  EXPECT_TRUE(r.unused_tensors.empty());

  rt.set(extra, std::vector<float>{1, 2});
  rt.execute({{"n", 3}});
  EXPECT_EQ(hex(rt.get_bytes(o_embed)), want["embed.weight"]["hex"].get<std::string>());
  EXPECT_EQ(hex(rt.get_bytes(o_w1)), want["layers.1.w"]["hex"].get<std::string>());
  EXPECT_EQ(rt.get<float>(o_w0), file_f32("layers.0.w"));
  EXPECT_EQ(rt.get<int64_t>(o_ids), (std::vector<int64_t>{6, -2, 14}));
  EXPECT_EQ(rt.get<float>(o_norm), (std::vector<float>{2.0f, 1.0f, -4.0f}));

  // A name-mapping function; tensors it maps to no input are reported unused.
  luminal::Graph g2;
  auto pn = g2.tensor("p.norm", {3});
  auto o2 = (pn + 1.0).output("o");
  luminal::ReferenceRuntime rt2(g2);
  io::BindOptions opt;
  opt.rename = [](std::string_view n) {
    return n == "norm.weight" ? std::string("p.norm") : std::string();
  };
  opt.require_all_inputs = true;
  r = io::bind(rt2, w, opt);
  EXPECT_EQ(r.bound, std::vector<std::string>{"p.norm"});
  EXPECT_EQ(r.unused_tensors.size(), 4u);
  rt2.execute();
  EXPECT_EQ(rt2.get<float>(o2), (std::vector<float>{2.0f, 1.5f, -1.0f}));
}

TEST(Safetensors, BindChecksShapeAndDtype) {
  io::Weights w = io::Weights::open(fixtures() / "sharded");
  auto bind_err = [&](const std::function<void(luminal::Graph&)>& build, io::BindOptions opt = {}) {
    luminal::Graph g;
    build(g);
    luminal::ReferenceRuntime rt(g);
    return error_of([&] { io::bind(rt, w, opt); });
  };
  std::string err = bind_err([](luminal::Graph& g) { g.tensor("norm.weight", {4}); });
  EXPECT_NE(err.find("tensor 'norm.weight'"), std::string::npos) << err;
  EXPECT_NE(err.find("model-00003-of-00003.safetensors"), std::string::npos) << err;
  EXPECT_NE(err.find("input expects [4], file has [3]"), std::string::npos) << err;

  err = bind_err([](luminal::Graph& g) {
    g.set_dim("n", 5);
    g.tensor("embed.weight", {"n", 3});
  });
  EXPECT_NE(err.find("shape mismatch"), std::string::npos) << err;

  err = bind_err([](luminal::Graph& g) { g.tensor("layers.0.ids", {3}, DType::I32); });
  EXPECT_NE(err.find("tensor 'layers.0.ids'"), std::string::npos) << err;
  EXPECT_NE(err.find("dtype mismatch: input expects i32, file has i64"), std::string::npos) << err;

  io::BindOptions strict;
  strict.convert_floats = false;
  err = bind_err([](luminal::Graph& g) { g.tensor("layers.0.w", {3, 3}); }, strict);
  EXPECT_NE(err.find("input expects f32, file has f16"), std::string::npos) << err;

  io::BindOptions all;
  all.require_all_inputs = true;
  err = bind_err([](luminal::Graph& g) { g.tensor("missing.weight", {3}); }, all);
  EXPECT_NE(err.find("'missing.weight'"), std::string::npos) << err;
}
