// GemvThenView (see gemv_then.hpp).
#include "luminal/cuda/gemv_then.hpp"

#include "luminal/core/error.hpp"
#include "luminal/core/expr_serial.hpp"
#include "luminal/core/hash.hpp"

namespace luminal::cuda {

std::string GemvThenView::serialize() const {
  std::string s = std::to_string(a.rank());
  for (const Expr& d : a.dims)
    s += " " + write_expr(d);
  for (const Expr& st : a.strides)
    s += " " + write_expr(st);
  return s + " " + write_expr(a.base);
}

std::shared_ptr<const GemvThenView> GemvThenView::deserialize(std::string_view text) {
  const std::string_view all = text;
  size_t used = 0;
  int rank = -1;
  try {
    rank = std::stoi(std::string(text), &used);
  } catch (const std::exception&) {
  }
  if (rank < 1 || rank > 16)
    throw Error("gemv_then payload: expected a rank from 1 to 16, got '" + std::string(all) + "'");
  text.remove_prefix(used);
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  View v;
  for (int i = 0; i < rank; ++i)
    v.dims.push_back(read_expr_prefix(text));
  for (int i = 0; i < rank; ++i)
    v.strides.push_back(read_expr_prefix(text));
  v.base = read_expr_prefix(text);
  if (!text.empty())
    throw Error("gemv_then payload: text left after the view in '" + std::string(all) + "'");
  return std::make_shared<const GemvThenView>(std::move(v));
}

size_t GemvThenView::hash() const { return hash_combined(0x47656d76ULL, hash_string(serialize())); }

bool GemvThenView::equals(const Payload& o) const {
  return a == static_cast<const GemvThenView&>(o).a;
}

std::string GemvThenView::to_string() const { return "then_a=" + a.to_string(); }

}  // namespace luminal::cuda
