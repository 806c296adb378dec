#include "luminal/runtime/folds.hpp"

#include <algorithm>
#include <memory>

#include "luminal/core/error.hpp"

namespace luminal {

void FoldStore::adopt(const std::vector<FoldProgram>& folds, const Graph& g, const Residency& res) {
  readers_.resize(res.in.size());
  for (const FoldProgram& p : folds) {
    if (index_of(p.label) >= 0) continue;
    Fold f;
    f.program = p;
    for (const std::string& l : p.inputs) {
      const int k = res.in_of_node[g.find(l)];
      if (k < 0) throw Error("fold " + p.label + ": '" + l + "' is not an input of the graph");
      f.inputs.push_back(k);
      readers_[static_cast<size_t>(k)].push_back(static_cast<int>(folds_.size()));
    }
    folds_.push_back(std::move(f));
  }
}

int FoldStore::index_of(std::string_view label) const {
  for (size_t i = 0; i < folds_.size(); ++i)
    if (folds_[i].program.label == label) return static_cast<int>(i);
  return -1;
}

void FoldStore::allocate(Residency& res) {
  for (Fold& f : folds_)
    if (!f.buf) f.buf = res.allocate(f.program.bytes);
}

uint64_t FoldStore::bytes() const {
  uint64_t total = 0;
  for (const Fold& f : folds_)
    total += f.program.bytes;
  return total;
}

void FoldStore::input_changed(int k) {
  if (static_cast<size_t>(k) >= readers_.size()) return;
  for (int f : readers_[static_cast<size_t>(k)]) {
    folds_[static_cast<size_t>(f)].stale = true;
    dirty_ = true;
  }
}

void FoldStore::mark_all_stale() {
  for (Fold& f : folds_)
    f.stale = true;
  dirty_ = !folds_.empty();
}

uint64_t FoldStore::run(Residency& res) {
  Backend& be = res.backend();
  uint64_t bytes = 0;
  for (Fold& f : folds_) {
    if (!f.stale) continue;
    run_fold(be, f.program, f.buf,
             {.input =
                  [&](const std::string& l) {
                    auto at = std::find(f.program.inputs.begin(), f.program.inputs.end(), l);
                    LUMINAL_ASSERT(at != f.program.inputs.end(),
                                   "fold program reads an unknown input");
                    const Residency::In& in =
                        res.in[static_cast<size_t>(f.inputs[at - f.program.inputs.begin()])];
                    if (in.released || !in.buf)
                      throw Error("fold " + f.program.label + ": input '" + in.label +
                                  "' was released; set it again before executing");
                    return in.buf;
                  },
              .allocate = [&](uint64_t bytes) { return res.allocate(bytes); },
              .release = [&](Buffer b) { res.release(b); },
              .queue = res.queue()});
    f.stale = false;
    bytes += f.program.bytes;
    ++runs_;
  }
  dirty_ = false;
  return bytes;
}

std::vector<int> FoldStore::inputs() const {
  std::vector<int> out;
  for (const Fold& f : folds_)
    for (int k : f.inputs)
      if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  return out;
}

std::string FoldStore::report() const {
  std::string r;
  for (const Fold& f : folds_) {
    r += f.program.label + " " + std::string(name(f.program.dtype)) +
         shape_to_string(f.program.shape) + " " + std::to_string(f.program.bytes) + " bytes from";
    for (const std::string& l : f.program.inputs)
      r += " " + l;
    r += "\n";
  }
  return r;
}

}  // namespace luminal
