// Op semantics against PyTorch and IEEE 754, bit for bit (NaN as NaN), on the ReferenceRuntime
// and on the CPU backend (each HLIR node run as one kernel, testing::run_backend):
//   - the tables tests/data/op_semantics/{pow,div,matmul}.json, recorded from torch by
//     scripts/op_semantics/record.py: pow with +-inf/+-0/NaN/negative bases and integral
//     (incl. 17, 33, -3) and fractional exponents; division with subnormal, zero, inf and NaN
//     operands in f32 and f64; f16/bf16 matmuls whose products round in the 16-bit type;
//   - division against the C++ `/` on many random pairs (random bit patterns: every exponent,
//     subnormals, zeros, infinities, NaN; and subnormal ties), for f32, f16, bf16 and f64, and
//     with scalar divisors on either side.
// The tables are read from LUMINAL_SOURCE_DIR (a compile definition set in tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/runtime/reference.hpp"
#include "support/llir_direct.hpp"

#ifndef LUMINAL_SOURCE_DIR
#error "LUMINAL_SOURCE_DIR must name the source tree (see tests/CMakeLists.txt)"
#endif

namespace luminal {
namespace {

// ---------------------------------------------------------------- a tiny JSON reader
// Objects, arrays, strings without escapes and integers: what record.py writes.

struct Json {
  enum class Kind { Object, Array, String, Number } kind = Kind::Number;
  std::map<std::string, Json> object;
  std::vector<Json> array;
  std::string text;
  int64_t number = 0;

  const Json& at(const std::string& key) const {
    auto it = object.find(key);
    if (it == object.end()) throw Error("op_semantics: no key '" + key + "' in a case");
    return it->second;
  }
};

class JsonReader {
 public:
  explicit JsonReader(std::string s) : s_(std::move(s)) {}

  Json parse() {
    Json j = value();
    skip();
    if (i_ != s_.size()) fail("trailing text");
    return j;
  }

 private:
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])))
      ++i_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("op_semantics: JSON " + what + " at offset " + std::to_string(i_));
  }
  void expect(char c) {
    skip();
    if (i_ >= s_.size() || s_[i_] != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string() {
    expect('"');
    size_t end = s_.find('"', i_);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(i_, end - i_);
    if (out.find('\\') != std::string::npos) fail("escape in a string (not supported)");
    i_ = end + 1;
    return out;
  }
  Json value() {
    skip();
    if (i_ >= s_.size()) fail("unexpected end");
    Json j;
    const char c = s_[i_];
    if (c == '{') {
      j.kind = Json::Kind::Object;
      ++i_;
      skip();
      if (s_[i_] == '}') {
        ++i_;
        return j;
      }
      for (;;) {
        std::string key = string();
        expect(':');
        j.object[key] = value();
        skip();
        if (s_[i_] == ',') {
          ++i_;
          continue;
        }
        expect('}');
        return j;
      }
    }
    if (c == '[') {
      j.kind = Json::Kind::Array;
      ++i_;
      skip();
      if (s_[i_] == ']') {
        ++i_;
        return j;
      }
      for (;;) {
        j.array.push_back(value());
        skip();
        if (s_[i_] == ',') {
          ++i_;
          continue;
        }
        expect(']');
        return j;
      }
    }
    if (c == '"') {
      j.kind = Json::Kind::String;
      j.text = string();
      return j;
    }
    size_t used = 0;
    j.number = std::stoll(s_.substr(i_, 24), &used);
    if (used == 0) fail("expected a value");
    i_ += used;
    return j;
  }

  std::string s_;
  size_t i_ = 0;
};

Json load_table(const std::string& name) {
  const std::string path = std::string(LUMINAL_SOURCE_DIR) + "/tests/data/op_semantics/" + name;
  std::ifstream f(path);
  if (!f) throw Error("op_semantics: cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return JsonReader(ss.str()).parse();
}

// ---------------------------------------------------------------- bits

// Element i of a buffer as its raw bits.
uint64_t bits_at(const HostBuffer& b, int64_t i) {
  uint64_t v = 0;
  const int s = size_bytes(b.dtype);
  std::memcpy(&v, b.bytes.data() + i * s, s);
  return v;
}

bool is_nan_bits(DType t, uint64_t v) {
  switch (t) {
    case DType::F32: return (v & 0x7fffffffu) > 0x7f800000u;
    case DType::F64: return (v & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    case DType::F16: return (v & 0x7fffu) > 0x7c00u;
    case DType::BF16: return (v & 0x7fffu) > 0x7f80u;
    default: return false;
  }
}

// A buffer of dtype t from hex strings of the element bits.
HostBuffer from_hex(DType t, const Json& list) {
  HostBuffer b{t, std::vector<uint8_t>(list.array.size() * size_bytes(t))};
  for (size_t i = 0; i < list.array.size(); ++i) {
    uint64_t v = std::stoull(list.array[i].text, nullptr, 16);
    std::memcpy(b.bytes.data() + i * size_bytes(t), &v, size_bytes(t));
  }
  return b;
}

template <class T>
HostBuffer from_values(DType t, const std::vector<T>& v) {
  HostBuffer b{t, std::vector<uint8_t>(v.size() * sizeof(T))};
  std::memcpy(b.bytes.data(), v.data(), b.bytes.size());
  return b;
}

std::string hex(uint64_t v) {
  std::ostringstream o;
  o << "0x" << std::hex << v;
  return o.str();
}

using Inputs = std::map<std::string, HostBuffer, std::less<>>;

// Runs g (inputs by label, output "y") on the ReferenceRuntime and on the CPU backend.
struct Results {
  HostBuffer reference, cpu;
};

Results run_both(const Graph& g, const Tensor& y, const Inputs& inputs) {
  ReferenceRuntime rt(g);
  for (const auto& [label, buf] : inputs)
    rt.set_bytes(label, buf.bytes.data(), buf.bytes.size());
  rt.execute();
  std::vector<uint8_t> ref = rt.get_bytes(y);
  cpu::CpuBackend cpu(2);
  testing::BufferMap outs =
      testing::run_backend(cpu, g, testing::BufferMap(inputs.begin(), inputs.end()));
  return {HostBuffer{y.dtype(), std::move(ref)}, outs.at("y")};
}

// An f64 subnormal (nonzero, exponent field 0).
bool is_f64_subnormal_bits(uint64_t v) {
  return (v & 0x7ff0000000000000ull) == 0 && (v & 0x000fffffffffffffull) != 0;
}

// Expects `got` to equal `want` bit for bit (any NaN for a NaN); `describe(i)` names element i.
// With f64_subnormal_ulp, an f64 subnormal `want` may also be met by a neighbour (the documented
// accuracy of f64 division: subnormal quotients round twice).
void expect_bits(const HostBuffer& got, const HostBuffer& want, const std::string& what,
                 const std::function<std::string(int64_t)>& describe,
                 bool f64_subnormal_ulp = false) {
  ASSERT_EQ(got.dtype, want.dtype) << what;
  ASSERT_EQ(got.numel(), want.numel()) << what;
  int reported = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const uint64_t g = bits_at(got, i), w = bits_at(want, i);
    bool ok = is_nan_bits(want.dtype, w) ? is_nan_bits(got.dtype, g) : g == w;
    if (!ok && f64_subnormal_ulp && want.dtype == DType::F64 && is_f64_subnormal_bits(w) &&
        (g == w + 1 || g == w - 1))
      ok = true;
    if (!ok && reported++ < 10) {
      ADD_FAILURE() << what << ": element " << i << " (" << describe(i) << ") is " << hex(g)
                    << ", want " << hex(w);
    }
  }
  EXPECT_EQ(reported, 0) << what << ": " << reported << " of " << want.numel() << " differ";
}

// ---------------------------------------------------------------- the torch tables

TEST(OpSemantics, PowMatchesTorch) {
  Json table = load_table("pow.json");
  int checked = 0;
  for (const Json& c : table.at("cases").array) {
    const DType t = parse_dtype(c.at("dtype").text);
    uint64_t pbits = std::stoull(c.at("exponent").text, nullptr, 16);
    double p = 0;
    std::memcpy(&p, &pbits, 8);
    HostBuffer x = from_hex(t, c.at("x")), want = from_hex(t, c.at("out"));
    Graph g;
    Tensor in = g.tensor("x", {x.numel()}, t);
    Tensor y = in.pow(p).output("y");
    Results r = run_both(g, y, {{"x", x}});
    auto describe = [&](int64_t i) { return "x = " + hex(bits_at(x, i)); };
    const std::string what = "pow(x, " + std::to_string(p) + ") " + std::string(name(t));
    expect_bits(r.reference, want, "reference " + what, describe);
    expect_bits(r.cpu, want, "cpu " + what, describe);
    checked += static_cast<int>(x.numel());
  }
  EXPECT_GT(checked, 800);  // the table has ~900 (base, exponent) pairs
}

TEST(OpSemantics, PowEdgeValues) {
  // The cases the torch table pins down, spelled out.
  Graph g;
  Tensor x = g.tensor("x", {4});
  Tensor a = x.pow(1.5).output("a");
  Tensor b = x.pow(17.0).output("b");
  Tensor c = x.pow(-3.0).output("c");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{-INFINITY, -2.0f, -0.0f, -1.0f});
  rt.execute();
  std::vector<float> ra = rt.get<float>(a), rb = rt.get<float>(b), rc = rt.get<float>(c);
  EXPECT_EQ(ra[0], INFINITY);  // pow(-inf, 1.5)
  EXPECT_TRUE(std::isnan(ra[1]));
  EXPECT_EQ(ra[2], 0.0f);
  EXPECT_FALSE(std::signbit(ra[2]));
  EXPECT_EQ(rb, (std::vector<float>{-INFINITY, -131072.0f, -0.0f, -1.0f}));
  EXPECT_TRUE(std::signbit(rb[2]));
  EXPECT_EQ(rc, (std::vector<float>{-0.0f, -0.125f, -INFINITY, -1.0f}));
}

TEST(OpSemantics, DivisionMatchesTorch) {
  Json table = load_table("div.json");
  int checked = 0;
  for (const Json& c : table.at("cases").array) {
    const DType t = parse_dtype(c.at("dtype").text);
    HostBuffer x = from_hex(t, c.at("x")), yv = from_hex(t, c.at("y"));
    HostBuffer want = from_hex(t, c.at("out"));
    Graph g;
    Tensor a = g.tensor("x", {x.numel()}, t), b = g.tensor("d", {x.numel()}, t);
    Tensor y = (a / b).output("y");
    Results r = run_both(g, y, {{"x", x}, {"d", yv}});
    auto describe = [&](int64_t i) { return hex(bits_at(x, i)) + " / " + hex(bits_at(yv, i)); };
    // f64: bit for bit but for subnormal quotients (1 ulp; see F64DivisionIsIeeeForNormalResults).
    expect_bits(r.reference, want, "reference div " + std::string(name(t)), describe, true);
    expect_bits(r.cpu, want, "cpu div " + std::string(name(t)), describe, true);
    checked += static_cast<int>(x.numel());
  }
  EXPECT_GT(checked, 1000);
}

TEST(OpSemantics, MatmulMatchesTorch) {
  Json table = load_table("matmul.json");
  int checked = 0;
  for (const Json& c : table.at("cases").array) {
    const DType t = parse_dtype(c.at("dtype").text);
    std::vector<Dim> sa, sb;
    for (const Json& d : c.at("a_shape").array)
      sa.push_back(d.number);
    for (const Json& d : c.at("b_shape").array)
      sb.push_back(d.number);
    HostBuffer a = from_hex(t, c.at("a")), b = from_hex(t, c.at("b"));
    HostBuffer want = from_hex(t, c.at("out"));
    Graph g;
    Tensor ta = g.tensor("a", sa, t), tb = g.tensor("b", sb, t);
    Tensor y = ta.matmul(tb).output("y");
    Results r = run_both(g, y, {{"a", a}, {"b", b}});
    auto describe = [&](int64_t i) { return "out[" + std::to_string(i) + "]"; };
    const std::string what = "matmul " + std::string(name(t));
    expect_bits(r.reference, want, "reference " + what, describe);
    expect_bits(r.cpu, want, "cpu " + what, describe);
    checked += static_cast<int>(want.numel());
  }
  EXPECT_GT(checked, 50);
}

TEST(OpSemantics, SixteenBitMatmulMultipliesExactly) {
  // bf16: 17*17 = 289 rounds to 288 in bf16, but the products are exact in f32: 289 - 288 = 1.
  for (DType t : {DType::BF16, DType::F16}) {
    Graph g;
    Tensor a = g.tensor("a", {1, 2}, t), b = g.tensor("b", {2, 1}, t);
    Tensor y = a.matmul(b).output("y");
    ReferenceRuntime rt(g);
    rt.set(a, std::vector<float>{17, 16});
    rt.set(b, std::vector<float>{17, -18});
    rt.execute();
    EXPECT_EQ(rt.get<float>(y), std::vector<float>{1.0f}) << name(t);
    EXPECT_EQ(y.dtype(), t);
  }
}

TEST(OpSemantics, DeliberateDifferencesFromTorch) {
  // Listed in the README: sign(NaN) is NaN (torch: 0); float-to-int casts truncate, saturate to
  // i64 and wrap (torch: INT_MIN for int32(1e10) and NaN); topk ties lowest index first (torch
  // returns indices 2, 4 here).
  Graph g;
  Tensor x = g.tensor("x", {5});
  Tensor s = x.sign().output("s");
  Tensor c = x.cast(DType::I32).output("c");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{NAN, 1e10f, 2, -1.5f, 2});
  rt.execute();
  std::vector<float> sign = rt.get<float>(s);
  EXPECT_TRUE(std::isnan(sign[0]));
  EXPECT_EQ(sign[1], 1.0f);
  EXPECT_EQ(rt.get<int64_t>(c), (std::vector<int64_t>{0, 1410065408, 2, -1, 2}));
  Graph g2;
  Tensor y = g2.tensor("y", {5});
  auto [tv, ti] = y.topk(2);
  tv.output("v");
  ti.output("i");
  ReferenceRuntime rt2(g2);
  rt2.set(y, std::vector<float>{1, 2, 2, 1, 2});
  rt2.execute();
  EXPECT_EQ(rt2.get<float>("v"), (std::vector<float>{2, 2}));
  EXPECT_EQ(rt2.get<int64_t>("i"), (std::vector<int64_t>{1, 2}));
}

// ---------------------------------------------------------------- division vs IEEE

// Random f32 values: bit patterns (every exponent, subnormals, now and then inf/NaN), moderate
// values, and specials.
std::vector<float> random_f32(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v;
  const float specials[] = {0.0f,  -0.0f,  INFINITY, -INFINITY,       NAN,           1.0f,
                            -1.0f, 1e-45f, -1e-45f,  1.17549435e-38f, 3.4028235e38f, 1.1754942e-38f,
                            2.0f,  0.5f,   3.0f,     1e-40f};
  for (float s : specials)
    v.push_back(s);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-160, 130), pick(0, 3);
  while (v.size() < n) {
    switch (pick(rng)) {
      case 0: {
        uint32_t b = static_cast<uint32_t>(rng());
        float f;
        std::memcpy(&f, &b, 4);
        v.push_back(f);
        break;
      }
      case 1: {  // subnormal
        uint32_t b = static_cast<uint32_t>(rng()) & 0x807fffffu;
        float f;
        std::memcpy(&f, &b, 4);
        v.push_back(f);
        break;
      }
      default: v.push_back(std::ldexp(mant(rng), ex(rng)) * (rng() & 1 ? -1.0f : 1.0f)); break;
    }
  }
  return v;
}

// Subnormal ties and near ties: odd multiples of the smallest subnormal over small integers.
void add_subnormal_ties(std::vector<float>& x, std::vector<float>& y) {
  for (int k : {1, 3, 5, 7, 9, 11, 13, 1001, 8388607})
    for (float d : {2.0f, -2.0f, 6.0f, 10.0f, 14.0f, 3.0f, 7.0f, 0.5f, 1.5f, 4.0f}) {
      x.push_back(std::ldexp(static_cast<float>(k), -149));
      y.push_back(d);
    }
  // Ties where x * (1/y) in f64 is not the tie itself, so rounding it alone to f32 picks the odd
  // neighbour (147 * 2^-149 / 98 = 1.5 * 2^-149 rounds to 2^-148, x * (1/98) rounds to 2^-149).
  for (auto [k, d] : {std::pair{147, 98.0f},
                      {343, 98.0f},
                      {2175, 150.0f},
                      {1183, 182.0f},
                      {1209, 186.0f},
                      {294, 196.0f},
                      {1287, 198.0f},
                      {4697, 154.0f}})
    for (float sign : {1.0f, -1.0f}) {
      x.push_back(sign * std::ldexp(static_cast<float>(k), -149));
      y.push_back(d);
    }
}

TEST(OpSemantics, F32DivisionIsIeee) {
  const size_t n = 1 << 16;
  std::vector<float> x = random_f32(n, 1), y = random_f32(n, 2);
  std::shuffle(y.begin(), y.end(), std::mt19937_64(3));
  add_subnormal_ties(x, y);
  HostBuffer want{DType::F32, std::vector<uint8_t>(x.size() * 4)};
  for (size_t i = 0; i < x.size(); ++i) {
    float q = x[i] / y[i];
    std::memcpy(want.bytes.data() + i * 4, &q, 4);
  }
  Graph g;
  const int64_t len = static_cast<int64_t>(x.size());
  Tensor a = g.tensor("x", {len}), b = g.tensor("d", {len});
  Tensor q = (a / b).output("y");
  Results r =
      run_both(g, q, {{"x", from_values(DType::F32, x)}, {"d", from_values(DType::F32, y)}});
  auto describe = [&](int64_t i) {
    std::ostringstream o;
    o.precision(9);
    o << x[i] << " / " << y[i];
    return o.str();
  };
  expect_bits(r.reference, want, "reference f32 div", describe);
  expect_bits(r.cpu, want, "cpu f32 div", describe);
}

TEST(OpSemantics, SixteenBitDivisionIsIeee) {
  // The correctly rounded 16-bit quotient is the f32 quotient rounded once more (double rounding
  // is innocuous for division when 2p + 2 <= 24).
  for (DType t : {DType::F16, DType::BF16}) {
    std::vector<float> xs = random_f32(1 << 14, 4), ys = random_f32(1 << 14, 5);
    add_subnormal_ties(xs, ys);
    HostBuffer x{t, std::vector<uint8_t>(xs.size() * 2)}, y = x, want = x;
    for (size_t i = 0; i < xs.size(); ++i) {
      store_from_double(t, x.bytes.data(), static_cast<int64_t>(i), xs[i]);
      store_from_double(t, y.bytes.data(), static_cast<int64_t>(i), ys[i]);
      const float a = static_cast<float>(load_as_double(t, x.bytes.data(), i));
      const float b = static_cast<float>(load_as_double(t, y.bytes.data(), i));
      store_from_double(t, want.bytes.data(), static_cast<int64_t>(i), a / b);
    }
    Graph g;
    const int64_t len = static_cast<int64_t>(xs.size());
    Tensor a = g.tensor("x", {len}, t), b = g.tensor("d", {len}, t);
    Tensor q = (a / b).output("y");
    Results r = run_both(g, q, {{"x", x}, {"d", y}});
    auto describe = [&](int64_t i) { return hex(bits_at(x, i)) + " / " + hex(bits_at(y, i)); };
    expect_bits(r.reference, want, "reference div " + std::string(name(t)), describe);
    expect_bits(r.cpu, want, "cpu div " + std::string(name(t)), describe);
  }
}

TEST(OpSemantics, ScalarDivisionIsIeee) {
  // x / s (an exact reciprocal for powers of two, else a true division) and s / x in f32.
  std::vector<float> x = random_f32(4096, 6);
  for (double s : {3.0, 0.1, 0.25, -8.0, 0x1p127, 0x1p-126, 0x1p-130, 1e-45, 0.0, -0.0,
                   static_cast<double>(INFINITY), 7e38}) {
    Graph g;
    Tensor a = g.tensor("x", {static_cast<int64_t>(x.size())});
    Tensor y = (a / s).output("y");
    Tensor z = (s / a).output("z");
    ReferenceRuntime rt(g);
    rt.set(a, x);
    rt.execute();
    cpu::CpuBackend cpu(2);
    testing::BufferMap outs = testing::run_backend(cpu, g, {{"x", from_values(DType::F32, x)}});
    const float sf = static_cast<float>(s);  // the scalar takes the dtype (7e38 becomes inf)
    HostBuffer wy{DType::F32, std::vector<uint8_t>(x.size() * 4)}, wz = wy;
    for (size_t i = 0; i < x.size(); ++i) {
      float qy = x[i] / sf, qz = sf / x[i];
      std::memcpy(wy.bytes.data() + i * 4, &qy, 4);
      std::memcpy(wz.bytes.data() + i * 4, &qz, 4);
    }
    auto describe = [&](int64_t i) { return "x = " + hex(bits_at(from_values(DType::F32, x), i)); };
    const std::string ss = std::to_string(s);
    expect_bits(HostBuffer{DType::F32, rt.get_bytes(y)}, wy, "reference x / " + ss, describe);
    expect_bits(HostBuffer{DType::F32, rt.get_bytes(z)}, wz, "reference " + ss + " / x", describe);
    expect_bits(outs.at("y"), wy, "cpu x / " + ss, describe);
    expect_bits(outs.at("z"), wz, "cpu " + ss + " / x", describe);
  }
}

// Random f64 values: bit patterns, values with exponents over the whole range (so operands and
// quotients cross the scaling thresholds), significands next to powers of two (quotients close
// to rounding midpoints), subnormals, specials.
std::vector<double> random_f64(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v = {0.0,
                           -0.0,
                           INFINITY,
                           -INFINITY,
                           NAN,
                           1.0,
                           -1.0,
                           5e-324,
                           -5e-324,
                           2.2250738585072014e-308,
                           1.7976931348623157e308,
                           2.225073858507201e-308,
                           3.0,
                           0x1p-480,
                           0x1p480,
                           0x1p-481,
                           0x1p479};
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> ex(-1100, 1030), mid(-600, 600), pick(0, 5), few(0, 15);
  while (v.size() < n) {
    switch (pick(rng)) {
      case 0: {
        uint64_t b = rng();
        double f;
        std::memcpy(&f, &b, 8);
        v.push_back(f);
        break;
      }
      case 1: {
        uint64_t b = rng() & 0x800fffffffffffffull;
        double f;
        std::memcpy(&f, &b, 8);
        v.push_back(f);
        break;
      }
      case 2: v.push_back(std::ldexp(mant(rng), mid(rng)) * (rng() & 1 ? -1.0 : 1.0)); break;
      case 3: {  // significands next to powers of two (1 + k ulp, 2 - k ulp): hard cases
        const double k = few(rng);
        v.push_back(std::ldexp(rng() & 1 ? 1.0 + k * 0x1p-52 : 2.0 - k * 0x1p-52, mid(rng)));
        break;
      }
      default: v.push_back(std::ldexp(mant(rng), ex(rng)) * (rng() & 1 ? -1.0 : 1.0)); break;
    }
  }
  return v;
}

TEST(OpSemantics, F64DivisionIsIeeeForNormalResults) {
  // Documented accuracy (luminal/ir/division.cpp): bit-identical to IEEE division for zero,
  // infinite, NaN and normal results; subnormal results within 1 ulp.
  const size_t n = 1 << 16;
  std::vector<double> x = random_f64(n, 7), y = random_f64(n, 8);
  std::shuffle(y.begin(), y.end(), std::mt19937_64(9));
  for (int k : {1, 3, 5, 7, 1001})
    for (double d : {2.0, -2.0, 6.0, 10.0, 3.0, 0.5}) {
      x.push_back(std::ldexp(static_cast<double>(k), -1074));
      y.push_back(d);
    }
  Graph g;
  const int64_t len = static_cast<int64_t>(x.size());
  Tensor a = g.tensor("x", {len}, DType::F64), b = g.tensor("d", {len}, DType::F64);
  Tensor q = (a / b).output("y");
  Results r =
      run_both(g, q, {{"x", from_values(DType::F64, x)}, {"d", from_values(DType::F64, y)}});
  for (const HostBuffer* got : {&r.reference, &r.cpu}) {
    int wrong = 0, subnormal_off = 0, normal = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double w = x[i] / y[i];
      double v;
      std::memcpy(&v, got->bytes.data() + i * 8, 8);
      if (std::isnan(w)) {
        wrong += !std::isnan(v);
        continue;
      }
      if (std::fpclassify(w) == FP_SUBNORMAL) {
        if (v != w) {
          ++subnormal_off;
          if (v != std::nextafter(w, -INFINITY) && v != std::nextafter(w, INFINITY)) ++wrong;
        }
        continue;
      }
      normal += std::fpclassify(w) == FP_NORMAL;
      uint64_t bv, bw;
      std::memcpy(&bv, &v, 8);
      std::memcpy(&bw, &w, 8);
      if (bv != bw && wrong++ < 10) {
        ADD_FAILURE() << (got == &r.reference ? "reference" : "cpu") << ": " << x[i] << " / "
                      << y[i] << " = " << v << ", want " << w;
      }
    }
    EXPECT_EQ(wrong, 0);
    EXPECT_GT(normal, static_cast<int>(n / 4));
    EXPECT_LT(subnormal_off, 40) << "subnormal results 1 ulp off";
    std::printf("%s: %d normal results exact; %d of the subnormal results 1 ulp off\n",
                got == &r.reference ? "reference" : "cpu", normal, subnormal_off);
  }
}

}  // namespace
}  // namespace luminal
