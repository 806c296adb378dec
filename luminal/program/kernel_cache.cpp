#include "luminal/program/kernel_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "luminal/core/hash.hpp"

namespace luminal {

namespace {

constexpr const char* kMagic = "luminal-kernel-cache 1";

std::string hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string kernel_key(const LlirNode& node, const Facts& facts, const std::string& arch) {
  std::string k(node.op->name);
  k += "\n" + node.attrs.key_text(false) + "\nfacts";
  std::set<std::string> vars;
  auto add = [&](const Expr& e) {
    for (const std::string& v : e.vars())
      if (v != "z") vars.insert(v);
  };
  for (const Expr& e : node.attrs.shape)
    add(e);
  for (const View& v : node.attrs.views) {
    for (const Expr& e : v.dims)
      add(e);
    for (const Expr& e : v.strides)
      add(e);
    add(v.base);
  }
  add(node.attrs.iota_expr);
  add(node.attrs.iota_len);
  for (const std::string& v : vars) {
    auto it = facts.find(v);
    k += " " + v +
         (it == facts.end()
              ? "[?]"
              : "[" + std::to_string(it->second.lo) + "," + std::to_string(it->second.hi) + "]");
  }
  for (DType t : node.input_dtypes)
    k += " " + std::string(name(t));
  return k + "\narch " + arch;
}

KernelCache::KernelCache(std::filesystem::path disk_dir) : dir_(std::move(disk_dir)) {}

std::filesystem::path KernelCache::file_of(const std::string& key) const {
  return dir_ / (hex(hash_string(key)) + ".kernel");
}

// Entry: magic line, checksum line (of what follows), key length line, key, bytes.
std::optional<std::vector<uint8_t>> KernelCache::load(const std::string& key) const {
  if (dir_.empty()) return std::nullopt;
  std::ifstream in(file_of(key), std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str();
  const size_t l1 = all.find('\n');
  if (l1 == std::string::npos || all.compare(0, l1, kMagic) != 0) return std::nullopt;
  const size_t l2 = all.find('\n', l1 + 1);
  if (l2 == std::string::npos) return std::nullopt;
  const std::string body = all.substr(l2 + 1);
  if (all.substr(l1 + 1, l2 - l1 - 1) != hex(hash_string(body))) return std::nullopt;
  const size_t l3 = body.find('\n');
  if (l3 == std::string::npos) return std::nullopt;
  size_t n = 0;
  try {
    n = std::stoull(body.substr(0, l3));
  } catch (...) {
    return std::nullopt;
  }
  if (body.size() < l3 + 1 + n || body.compare(l3 + 1, n, key) != 0) return std::nullopt;
  return std::vector<uint8_t>(body.begin() + static_cast<std::ptrdiff_t>(l3 + 1 + n), body.end());
}

void KernelCache::store(const std::string& key, const std::vector<uint8_t>& bytes) const {
  if (dir_.empty()) return;
  static std::atomic<uint64_t> counter{0};
  std::string body = std::to_string(key.size()) + "\n" + key;
  body.append(bytes.begin(), bytes.end());
  const std::string all = std::string(kMagic) + "\n" + hex(hash_string(body)) + "\n" + body;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const std::filesystem::path file = file_of(key);
  const std::filesystem::path tmp =
      file.string() + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary);
    out << all;
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace luminal
