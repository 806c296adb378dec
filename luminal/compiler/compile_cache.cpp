#include "luminal/compiler/compile_cache.hpp"

#include "luminal/compiler/core_rules.hpp"
#include "luminal/compiler/hfuse_rule.hpp"
#include "luminal/compiler/short_sum_rule.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "luminal/compiler/lower.hpp"
#include "luminal/core/error.hpp"
#include "luminal/core/expr_serial.hpp"
#include "luminal/core/hash.hpp"
#include "luminal/program/llir_serial.hpp"

#ifndef LUMINAL_VERSION_STRING
#define LUMINAL_VERSION_STRING "unknown"
#endif

namespace luminal {

namespace {

constexpr const char* kMagic = "luminal-program-cache";
constexpr int kFormat = 2;

bool env_off(const char* var) {
  const char* v = std::getenv(var);
  if (!v) return false;
  const std::string s(v);
  return s == "off" || s == "0" || s == "false" || s == "no";
}

std::string hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The graph as exact text: one line per node, in the LLIR text format.
std::string graph_text(const Graph& g) {
  LlirGraph all;
  for (const Node& n : g.nodes()) {
    LlirNode l;
    l.op = hlir_op(n.op);
    l.attrs = attrs_of(n);
    for (const Operand& in : n.inputs)
      l.inputs.push_back(static_cast<int>(in.node));
    all.nodes.push_back(std::move(l));
  }
  return write_llir(all);
}

std::string version_line() {
  return std::string(kMagic) + " format " + std::to_string(kFormat) + " luminal-cpp " +
         LUMINAL_VERSION_STRING;
}

}  // namespace

std::filesystem::path cache_root(const CompileOptions& opts) {
  if (!opts.cache_dir().empty()) return opts.cache_dir();
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::path(x) / "luminal";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::filesystem::path(h) / ".cache" / "luminal";
  return std::filesystem::temp_directory_path() / "luminal-cache";
}

bool kernel_cache_enabled() { return !env_off("LUMINAL_KERNEL_CACHE"); }

std::string program_key(const Graph& g, const CompileOptions& o, const Backend& backend,
                        const BucketRanges& ranges, const std::vector<std::string>& dim_names) {
  std::ostringstream k;
  k << version_line() << "\n";
  k << "backend " << backend.name() << "\n";
  k << "device " << backend.device_key() << "\n";
  // The rules in force (a build with other rules, or an environment switch such as
  // LUMINAL_CPU_ROWS=off that leaves some out, searched a different space).
  k << "rules";
  std::vector<RuleSet> sets{core_rules(), short_sum_rules()};
  for (RuleSet& rs : backend.rulesets())
    sets.push_back(std::move(rs));
  for (const RuleSet& rs : sets) {
    k << " " << rs.name << ":";
    for (const Rule& r : rs.rules)
      k << r.name << ",";
  }
  k << " hfuse:" << (horizontal_fusion_enabled() ? "on" : "off");
  // The seed's prices (LUMINAL_CPU_SEED_BYTES=off searches from another seed).
  k << " seed_bytes:" << backend.seed_byte_cost();
  if (backend.seed_path_weight() > 0) k << " seed_path:" << backend.seed_path_weight();
  k << "\n";
  k << "search limit=" << o.search_graph_limit() << " trials=" << o.trials()
    << " keep_best=" << o.keep_best() << " generation=" << o.generation_size()
    << " mutations=" << o.mutations() << " seed=" << o.seed()
    << " time_budget=" << (o.time_budget() ? std::to_string(*o.time_budget()) : "none")
    << " max_memory=" << (o.max_memory() ? std::to_string(*o.max_memory()) : "none")
    << " saturation=" << o.saturation_limits().node_limit << "/" << o.saturation_limits().iter_limit
    << "/" << o.saturation_limits().time_limit_s << " folding=" << o.folding()
    << " fold_limit=" << o.fold_limit() << " fold_min_bytes=" << o.fold_min_bytes() << "\n";
  k << "bucket";
  for (const auto& [d, b] : ranges)
    k << " " << d << "=" << b.to_string();
  k << "\ndims";
  const Facts facts = g.dim_facts();
  for (const std::string& d : dim_names) {
    const Interval r = facts.at(d);
    auto set = g.dims().find(d);
    k << " " << d << "[" << r.lo << "," << r.hi << "]"
      << (set != g.dims().end() ? "=" + std::to_string(set->second) : "");
  }
  k << "\ncarry";
  for (auto [o_id, i_id] : g.carried())
    k << " " << o_id << "->" << i_id;
  k << "\nalternatives";
  for (const Graph::Alternative& x : g.alternatives()) {
    k << " " << x.primary << "=" << x.alt;
    if (x.at_most) k << "@" << x.at_most->first.to_string() << "<=" << x.at_most->second;
  }
  k << "\ngraph\n" << graph_text(g);
  return k.str();
}

ProgramCache::ProgramCache(const CompileOptions& opts) {
  enabled_ = !env_off("LUMINAL_CACHE");
  dir_ = cache_root(opts) / "programs";
}

std::filesystem::path ProgramCache::file_of(const std::string& key) const {
  return dir_ / (hex(hash_string(key)) + ".llir");
}

// Entry layout:
//   luminal-program-cache format 2 luminal-cpp <version>
//   <checksum of everything after this line, 16 hex digits>
//   <key length in bytes>
//   <key><best seconds>\n<number of folds>\n
//   per fold: <bytes of its llir text>\n<llir text>
//   <llir text of the step>
std::optional<CachedProgram> ProgramCache::load(const std::string& key, const Backend& backend,
                                                std::string* warning) const {
  if (!enabled_) return std::nullopt;
  const std::filesystem::path file = file_of(key);
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str();
  auto unusable = [&](const std::string& why) -> std::optional<CachedProgram> {
    if (warning)
      *warning = "compile cache: ignoring " + file.string() + " (" + why + "); searching again";
    return std::nullopt;
  };
  const size_t l1 = all.find('\n');
  if (l1 == std::string::npos) return unusable("truncated");
  if (all.compare(0, l1, version_line()) != 0) return unusable("written by another version");
  const size_t l2 = all.find('\n', l1 + 1);
  if (l2 == std::string::npos) return unusable("truncated");
  const std::string body = all.substr(l2 + 1);
  if (all.substr(l1 + 1, l2 - l1 - 1) != hex(hash_string(body)))
    return unusable("checksum mismatch: truncated or corrupt");
  const size_t l3 = body.find('\n');
  if (l3 == std::string::npos) return unusable("truncated");
  size_t key_len = 0;
  try {
    key_len = std::stoull(body.substr(0, l3));
  } catch (...) {
    return unusable("malformed");
  }
  if (body.size() < l3 + 1 + key_len) return unusable("truncated");
  if (body.compare(l3 + 1, key_len, key) != 0) return unusable("stale: another graph or options");
  const std::string rest = body.substr(l3 + 1 + key_len);
  const size_t l4 = rest.find('\n');
  if (l4 == std::string::npos) return unusable("truncated");
  CachedProgram c;
  c.file = file;
  try {
    c.best_seconds = std::stod(rest.substr(0, l4));
    size_t at = l4 + 1;
    auto line = [&]() {
      const size_t end = rest.find('\n', at);
      if (end == std::string::npos) throw Error("truncated");
      const std::string l = rest.substr(at, end - at);
      at = end + 1;
      return std::stoull(l);
    };
    const uint64_t n_folds = line();
    for (uint64_t f = 0; f < n_folds; ++f) {
      const uint64_t len = line();
      if (at + len > rest.size()) throw Error("truncated");
      const std::string text = rest.substr(at, len);
      at += len;
      LlirGraph fl = read_llir(text, backend);
      if (write_llir(fl) != text) throw Error("a fold program does not read back exactly");
      std::string stored;
      for (const LlirNode& n : fl.nodes)
        if (is_op(n.op, OpKind::Output)) stored = n.attrs.label;
      c.folds.push_back(FoldProgram::from_llir(std::move(fl)));
      if (c.folds.back().label != stored)
        throw Error("fold " + stored + " does not match its program");
    }
    const std::string step = rest.substr(at);
    c.llir = read_llir(step, backend);
    if (write_llir(c.llir) != step) return unusable("does not read back exactly");
  } catch (const std::exception& e) {
    return unusable(std::string("unreadable: ") + e.what());
  }
  return c;
}

void ProgramCache::store(const std::string& key, const LlirGraph& llir,
                         const std::vector<FoldProgram>& folds, double best_seconds,
                         std::string* warning) const {
  if (!enabled_) return;
  static std::atomic<uint64_t> counter{0};
  const std::filesystem::path file = file_of(key);
  char secs[64];
  std::snprintf(secs, sizeof secs, "%.9g", best_seconds);
  std::string body =
      std::to_string(key.size()) + "\n" + key + secs + "\n" + std::to_string(folds.size()) + "\n";
  for (const FoldProgram& f : folds) {
    const std::string text = write_llir(f.llir);
    body += std::to_string(text.size()) + "\n" + text;
  }
  body += write_llir(llir);
  const std::string all = version_line() + "\n" + hex(hash_string(body)) + "\n" + body;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const std::filesystem::path tmp =
      file.string() + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary);
    out << all;
    if (!out) {
      if (warning) *warning = "compile cache: cannot write " + tmp.string() + "; not cached";
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    if (warning)
      *warning = "compile cache: cannot rename into " + file.string() + ": " + ec.message() +
                 "; not cached";
    std::filesystem::remove(tmp, ec);
  }
}

}  // namespace luminal
