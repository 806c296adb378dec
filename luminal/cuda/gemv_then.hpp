#pragma once
// The payload of cuda.GemvMatmul / cuda.GemvCastMatmul (gemv.cpp) and their store-into-scatter
// forms (scatter_store.cpp): how the short product after the GEMV reads the GEMV's values, a view
// over the product's dims with its k axis last. It is no input's view (the GEMV's values never
// reach memory), so it travels as the node's payload and the node's views stay one per input.
#include <memory>
#include <string>
#include <string_view>

#include "luminal/core/shape.hpp"
#include "luminal/egraph/attrs.hpp"

namespace luminal::cuda {

struct GemvThenView final : Payload {
  View a;

  explicit GemvThenView(View v) : a(std::move(v)) {}
  std::string_view kind() const override { return "gemv_then"; }
  /// The rank, then each dim, stride and the base as write_expr forms, space-separated.
  std::string serialize() const override;
  /// Throws luminal::Error on malformed text.
  static std::shared_ptr<const GemvThenView> deserialize(std::string_view text);
  size_t hash() const override;
  bool equals(const Payload& o) const override;
  std::string to_string() const override;
};

}  // namespace luminal::cuda
